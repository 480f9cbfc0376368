#!/usr/bin/env python3
"""Native call stacks of random C and C++ programs against their source.

For each seed and build, writes a random C program whose cudaMalloc calls
(all kept, sizes unique) end random call chains: plain calls, calls through
a volatile function pointer, recursion, loops and branches, each function
static or not, inline, always_inline or noinline (so that compilers inline
some and not others). The truth is the source itself: each allocation's
logical call chain, (function, line of the call) from the cudaMalloc up to
main, whatever the compiler inlined. C++ programs (--lang c++) chain
C++'s constructs instead: functions in named and anonymous namespaces,
member, const and static member functions, templates, lambdas (called
directly, through std::function and converted to function pointers),
virtual calls, constructors, function objects, try blocks; there a frame's
name must hold the names the source gives it (its class, namespace,
template argument, "lambda" or clang's "$_N" for a closure), and the
closure's static invoker (GCC's _FUN, clang's __invoke, which the source
does not write) is left out. The program is built with gcc or clang
at a random -O level and debug flavour (DWARF 5 or 4, -g1, frame pointers,
-flto, -gsplit-dwarf), run under `vramtrace run --sim=t4`, and the frames
of the program's own file that `vramtrace report --memory-viz` gives each
allocation (inlined frames included) must be exactly the chain.

    native_frames_random.py --vramtrace BIN --work DIR --seeds A-B[,C...]
        [--cc gcc,clang] [--lang c|c++] [--deep N] [--wrong]

--deep N (C): recursion N to N + 40 deep, so that stacks pass
  VRAMTRACE_STACK_DEPTH (64 frames): a cut stack must be the innermost frames
  of the chain and then the marker "[outer frames not recorded: more than
  64]", an uncut one the whole chain; at least one must be cut.
--wrong: one frame's line of each program's truth moved by one: exit 0 only
  if every seed catches it.

Exit: 0 all held, 1 a check failed, 77 no compiler or no CUDA header, 3 the
harness could not run. Standard library only.
"""
import argparse
import os
import pickle
import random
import shutil
import subprocess
import sys

SKIP = 77
# interpose/pyframes.c: the marker at the root of a native stack cut at
# VRAMTRACE_STACK_DEPTH (trace/vtrace.h, VT_CUT_FRAME_PREFIX)
CUT_PREFIX = "[outer "
CUT = "[outer frames not recorded: more than 64]"
ATTRS = ["", "static ", "static inline ", "__attribute__((noinline)) ",
         "static inline __attribute__((always_inline)) ", "__attribute__((noinline)) static "]
OPTS = ["-O0", "-O1", "-O2", "-O3", "-Os"]
FLAVOURS = ["", "", "-gdwarf-4", "-g1", "-fno-omit-frame-pointer", "-flto", "-gsplit-dwarf"]
# the toolkit's runtime, linked by soname without RPATH: `vramtrace run --sim`
# puts the simulated one first on the library path
CUDA_INCLUDE, CUDA_LIB = "/usr/local/cuda/include", "/usr/local/cuda/lib64"


class Source:
    """The program's lines, with the number the next line will have."""

    def __init__(self):
        self.lines = ["#include <cuda_runtime.h>", "#include <stdio.h>", "#include <stdlib.h>", "",
                      "volatile int sink;", "static void *keep[4096];", "static int nkeep;", ""]

    def next_line(self):
        return len(self.lines) + 1

    def add(self, text):
        self.lines += text.split("\n")


def leaf(src, name, attr, size):
    """The allocating function; its frames (innermost first)."""
    src.add(f"{attr}int {name}(int x)\n{{\n    void *d = NULL;\n    sink = x;")
    frames = [(name, src.next_line())]
    src.add(f"    if (cudaMalloc(&d, {size}) != cudaSuccess)\n        exit(3);\n"
            f"    keep[nkeep++] = d;\n    sink = x + 1;\n    return x + 1;\n}}\n")
    return frames


def caller(src, rnd, name, attr, kind, callee, deep=0):
    """A function calling callee in the way kind says; the frames it adds
    (deep: recursion deep to deep + 40 levels instead of 1 to 6)."""
    if kind == "call":
        src.add(f"{attr}int {name}(int x)\n{{\n    int r = x * 3;\n    if (x > 100000)\n"
                "        sink = r;")
        frames = [(name, src.next_line())]
        src.add(f"    r += {callee}(x + 1);\n    sink = r;\n    return r;\n}}\n")
    elif kind == "fnptr":
        src.add(f"{attr}int {name}(int x)\n{{\n    int (*volatile fp)(int) = {callee};\n    int r;")
        frames = [(name, src.next_line())]
        src.add("    r = fp(x + 2);\n    sink = r;\n    return r + 1;\n}\n")
    elif kind == "recursion":
        depth = rnd.randint(deep, deep + 40) if deep else rnd.randint(1, 6)
        src.add(f"static int {name}_rec(int n, int x)\n{{\n    int r;\n    if (n == 0) {{")
        base = src.next_line()
        src.add(f"        r = {callee}(x);\n        sink = r;\n        return r;\n    }}")
        rec = src.next_line()
        src.add(f"    r = {name}_rec(n - 1, x + 1);\n    sink = r;\n    return r + 1;\n}}\n")
        src.add(f"{attr}int {name}(int x)\n{{\n    int r;")
        top = src.next_line()
        src.add(f"    r = {name}_rec({depth}, x);\n    sink = r;\n    return r;\n}}\n")
        frames = [(f"{name}_rec", base)] + [(f"{name}_rec", rec)] * depth + [(name, top)]
    elif kind == "loop":
        src.add(f"{attr}int {name}(int x)\n{{\n    int r = 0;\n"
                "    for (int j = 0; j < 3; j++) {\n        if (j == 1) {")
        frames = [(name, src.next_line())]
        src.add(f"            r += {callee}(x + j);\n        }}\n        sink = j;\n    }}\n"
                "    return r;\n}\n")
    else:  # branch
        src.add(f"{attr}int {name}(int x)\n{{\n    int r;\n    if (sink == 12345)\n"
                "        r = x;\n    else")
        frames = [(name, src.next_line())]
        src.add(f"        r = {callee}(x) * 2;\n    sink = r;\n    return r;\n}}\n")
    return frames


def program(seed, deep=0):
    """(source text, truth: one {size, frames} per allocation); deep: more
    and deeper recursion (stacks past VRAMTRACE_STACK_DEPTH)."""
    rnd = random.Random(seed)
    src, truth, sizes = Source(), [], set()
    for p in range(rnd.randint(3, 8)):
        n = rnd.randint(1, 8)
        kinds = [rnd.choice(["call", "call", "call", "fnptr", "recursion", "loop", "branch"]
                            + ["recursion"] * (3 if deep else 0))
                 for _ in range(n)]
        attrs = [rnd.choice(ATTRS) for _ in range(n)]
        frames, size = [], 0
        while not size or size in sizes:
            size = rnd.randint(1, 4096) * 256
        sizes.add(size)
        for i in reversed(range(n)):  # callees first: each is defined before its use
            name = f"p{p}_{i}"
            if i + 1 == n:
                frames += leaf(src, name, attrs[i], size)
            else:
                frames += caller(src, rnd, name, attrs[i], kinds[i], f"p{p}_{i + 1}", deep)
        truth.append({"chain": p, "size": size, "frames": frames})
    src.add("int main(void)\n{")
    for t in truth:
        t["frames"].append(("main", src.next_line()))
        src.add(f"    sink = p{t['chain']}_0({t['chain']});")
    src.add("    printf(\"%d\\n\", nkeep);\n    return 0;\n}")
    return "\n".join(src.lines) + "\n", truth


# ---- C++ ---------------------------------------------------------------------

CXX_ATTRS = ["", "static ", "inline ", "__attribute__((noinline)) ",
             "inline __attribute__((always_inline)) "]
CXX_KINDS = ["plain", "namespace", "anon", "member", "const_member", "static_member", "template",
             "lambda", "std_function", "virtual", "ctor", "functor", "try", "recursion", "fnptr"]
LAMBDAS = {"lambda": "auto f", "std_function": "std::function<int(int)> f",
           "fnptr": "int (*volatile f)(int)"}
# a lambda's body keeps its result (no tail call: -O2 would drop its frame)
KEEP = "int r = {call};\n        sink = r;\n        return r;"


def cxx_step(src, rnd, p, i, kind, attr, call):
    """Function i of chain p, calling call (an expression of x); returns
    (its frames innermost first as (name tokens, line), how to call it)."""
    nm = f"p{p}_{i}"
    if kind in ("plain", "namespace", "anon"):
        ns = {"plain": "", "namespace": f"ns{p}_{i}", "anon": "anon"}[kind]
        src.add(("" if kind == "plain" else f"namespace {'' if ns == 'anon' else ns + ' '}{{\n")
                + f"{attr}int {nm}(int x)\n{{\n    int r = x * 3;")
        frames = [([nm] + ([ns] if kind == "namespace" else []), src.next_line())]
        src.add(f"    r += {call};\n    sink = r;\n    return r;\n}}" + ("" if kind == "plain" else "\n}"))
        src.add("")
        return frames, f"{ns}::{nm}(x)" if kind == "namespace" else f"{nm}(x)"
    if kind in ("member", "const_member", "static_member"):
        cls, const = f"K{p}_{i}", " const" if kind == "const_member" else ""
        st = "static " if kind == "static_member" else ""
        src.add(f"struct {cls} {{\n    {st}int m(int x){const};\n}};\n"
                f"{attr.replace('static ', '')}int {cls}::m(int x){const}\n{{\n    int r = x;")
        frames = [([cls, "::m"], src.next_line())]
        src.add(f"    r += {call};\n    sink = r;\n    return r;\n}}\n")
        return frames, f"{cls}::m(x)" if st else f"{cls}().m(x)"
    if kind == "template":
        src.add(f"template <typename T>\n{attr}T {nm}(T x)\n{{\n    T r = x;")
        frames = [([nm, "<int>"], src.next_line())]
        src.add(f"    r += {call};\n    sink = r;\n    return r;\n}}\n")
        return frames, f"{nm}<int>(x)"
    if kind in LAMBDAS:  # a closure held as itself, as std::function, as a function pointer
        src.add(f"{attr}int {nm}(int x)\n{{\n    {LAMBDAS[kind]} = [](int x) {{")
        frames = [([nm, "lambda"], src.next_line())]
        src.add("        " + KEEP.format(call=call) + "\n    };")
        frames.append(([nm], src.next_line()))
        src.add("    int r = f(x + 2);\n    sink = r;\n    return r + 1;\n}\n")
        return frames, f"{nm}(x)"
    if kind == "virtual":
        b, d = f"B{p}_{i}", f"D{p}_{i}"
        src.add(f"struct {b} {{\n    virtual ~{b}() {{}}\n    virtual int m(int x) = 0;\n}};\n"
                f"struct {d} : {b} {{\n    int m(int x) override\n    {{\n        int r = x;")
        frames = [([d, "::m"], src.next_line())]
        src.add(f"        r += {call};\n        sink = r;\n        return r;\n    }}\n}};\n"
                f"{attr}int {nm}(int x)\n{{\n    {d} d;\n    {b} *volatile pb = &d;")
        frames.append(([nm], src.next_line()))
        src.add("    int r = pb->m(x);\n    sink = r;\n    return r;\n}\n")
        return frames, f"{nm}(x)"
    if kind == "ctor":
        cls = f"S{p}_{i}"
        src.add(f"struct {cls} {{\n    int v;\n    {cls}(int x)")
        frames = [([f"{cls}::{cls}"], src.next_line())]
        src.add(f"        : v({call})\n    {{\n        sink = v;\n    }}\n}};\n")
        return frames, f"{cls}(x).v"
    if kind == "functor":
        cls = f"F{p}_{i}"
        src.add(f"struct {cls} {{\n    int operator()(int x) const\n    {{\n        int r = x;")
        frames = [([cls, "operator()"], src.next_line())]
        src.add(f"        r += {call};\n        sink = r;\n        return r;\n    }}\n}};\n")
        return frames, f"{cls}()(x)"
    if kind == "try":
        src.add(f"{attr}int {nm}(int x)\n{{\n    int r = 0;\n    try {{\n        if (x == 123456)\n"
                "            throw std::runtime_error(\"no\");")
        frames = [([nm], src.next_line())]
        src.add(f"        r = {call};\n    }} catch (const std::exception &) {{\n        r = -1;\n"
                "    }\n    sink = r;\n    return r;\n}\n")
        return frames, f"{nm}(x)"
    depth = rnd.randint(1, 5)  # recursion
    src.add(f"static int {nm}_rec(int n, int x)\n{{\n    int r;\n    if (n == 0) {{")
    base = src.next_line()
    src.add(f"        r = {call};\n        sink = r;\n        return r;\n    }}")
    rec = src.next_line()
    src.add(f"    r = {nm}_rec(n - 1, x + 1);\n    sink = r;\n    return r + 1;\n}}\n"
            f"{attr}int {nm}(int x)\n{{\n    int r;")
    top = src.next_line()
    src.add(f"    r = {nm}_rec({depth}, x);\n    sink = r;\n    return r;\n}}\n")
    frames = [([f"{nm}_rec"], base)] + [([f"{nm}_rec"], rec)] * depth + [([nm], top)]
    return frames, f"{nm}(x)"


def program_cxx(seed):
    """(C++ source text, truth: one {size, frames} per allocation, frames as
    (name tokens, line))."""
    rnd = random.Random(seed)
    src, truth, sizes = Source(), [], set()
    src.lines[1:3] = ["#include <cstdio>", "#include <cstdlib>", "#include <functional>",
                      "#include <stdexcept>"]
    for p in range(rnd.randint(3, 7)):
        n = rnd.randint(1, 7)
        kinds = [rnd.choice(CXX_KINDS) for _ in range(n)]
        size = 0
        while not size or size in sizes:
            size = rnd.randint(1, 4096) * 256
        sizes.add(size)
        attr = rnd.choice(CXX_ATTRS)
        src.add(f"{attr}int p{p}_{n - 1}(int x)\n{{\n    void *d = nullptr;\n    sink = x;")
        frames = [([f"p{p}_{n - 1}"], src.next_line())]
        src.add(f"    if (cudaMalloc(&d, {size}) != cudaSuccess)\n        std::exit(3);\n"
                "    keep[nkeep++] = d;\n    sink = x + 1;\n    return x + 1;\n}\n")
        call = f"p{p}_{n - 1}(x)"
        for i in reversed(range(n - 1)):
            more, call = cxx_step(src, rnd, p, i, kinds[i], rnd.choice(CXX_ATTRS),
                                  call.replace("(x)", "(x + 1)", 1))
            frames += more
        truth.append({"size": size, "frames": frames, "call": call})
    src.add("int main()\n{")
    for t in truth:
        t["frames"].append((["main"], src.next_line()))
        src.add(f"    sink = {t['call'].replace('(x)', '(1)', 1)};")
    src.add("    std::printf(\"%d\\n\", nkeep);\n    return 0;\n}")
    return "\n".join(src.lines) + "\n", truth


def recorded(memviz, source):
    """size -> list of the frames of source in each allocation's stack, but
    a closure's static invoker (GCC's _FUN, clang's __invoke: not in the
    source)."""
    out = {}
    for e in (e for tr in memviz["device_traces"] for e in tr):
        if e["action"] == "alloc":
            out.setdefault(e["size"], []).append(
                [(f["name"], f["line"]) for f in e["frames"]
                 if f["name"].startswith(CUT_PREFIX)
                 or (os.path.basename(f["filename"]) == os.path.basename(source)
                     and "::_FUN" not in f["name"] and "::__invoke" not in f["name"])])
    return out


def same(got, want):
    """A recorded (name, line) is the source's frame: C, the same name; C++
    (name tokens), a name holding every token ("lambda": GCC's
    "{lambda(int)#1}" or "{lambda}", clang's "$_0")."""
    (name, line), (w, wline) = got, want
    if line != wline:
        return False
    if isinstance(w, str):
        return name == w
    return all(t in name or (t == "lambda" and "$_" in name) for t in w)


def check(truth, got, cuts=None):
    """What differs; cuts (a list): the sizes of the allocations whose stack
    ends in the cut marker, which is right only where the frames before it
    are the innermost of the source's chain (as many as the walk kept:
    inlining decides how many logical frames the kept ones hold)."""
    errors = []
    for t in truth:
        g = got.get(t["size"], [])
        want = [tuple(f) for f in t["frames"]]
        if len(g) == 1 and g[0] and g[0][-1][0] == CUT and cuts is not None:
            cuts.append(t["size"])
            if len(g[0]) - 1 < len(want) and all(same(a, b) for a, b in zip(g[0][:-1], want)):
                continue
            errors.append(f"allocation of {t['size']} B: the cut marker after {len(g[0]) - 1} "
                          f"frames, not the innermost of the source's {len(want)}: "
                          f"{g[0][:3]} ... {g[0][-3:]}")
        elif len(g) != 1:
            errors.append(f"allocation of {t['size']} B: {len(g)} in the export, 1 made")
        elif len(g[0]) != len(want) or not all(same(a, b) for a, b in zip(g[0], want)):
            i = next((i for i, (a, b) in enumerate(zip(g[0], want)) if not same(a, b)),
                     min(len(want), len(g[0])))
            errors.append(f"allocation of {t['size']} B: {len(want)} frames in the source, "
                          f"{len(g[0])} recorded; from frame {i}: source {want[i:i + 3]}, "
                          f"recorded {g[0][i:i + 3]}")
    return errors


def run_seed(o, seed, cc):
    rnd = random.Random(f"{seed}/{cc}" + ("/c++" if o.lang == "c++" else ""))
    # -g1 writes no namespaces, classes nor linkage names: an inlined C++
    # frame is then its bare name ("m", "operator()"), all a report can say
    flavours = [f for f in FLAVOURS if o.lang == "c" or f != "-g1"]
    opt, flavour = rnd.choice(OPTS), rnd.choice(flavours)
    d = os.path.join(o.work, f"{o.lang}_{seed}_{cc}")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    cxx = o.lang == "c++"
    text, truth = program_cxx(seed) if cxx else program(seed, o.deep)
    if cxx:
        cc = {"gcc": "g++", "clang": "clang++"}[cc]
    source, exe = os.path.join(d, "prog.cpp" if cxx else "prog.c"), os.path.join(d, "prog")
    with open(source, "w") as f:
        f.write(text)
    build = [cc, "-g", *flavour.split(), opt, "-o", exe, source, f"-I{CUDA_INCLUDE}",
             f"-L{CUDA_LIB}", "-lcudart"]
    p = subprocess.run(build, cwd=d, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(build)}: {p.stderr[-400:]}")
    trace, pkl = os.path.join(d, "prog.vtrace"), os.path.join(d, "prog.pkl")
    for cmd in ([o.vramtrace, "run", "--sim=t4", "-o", trace, "--", exe],
                [o.vramtrace, "report", "-q", "--memory-viz", pkl, trace]):
        p = subprocess.run(cmd, cwd=d, capture_output=True, text=True, errors="replace")
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}: {p.stderr[-400:]}")
    if o.wrong:  # the innermost frame's line moved by one
        frames = max(truth, key=lambda t: len(t["frames"]))["frames"]
        frames[0] = (frames[0][0], frames[0][1] + 1)
    cuts = []
    with open(pkl, "rb") as f:
        errors = check(truth, recorded(pickle.load(f), source), cuts)
    return f"{cc} {opt} {flavour or '-g'}".rstrip(), len(truth), errors, len(cuts)


def seed_range(part):
    lo, _, hi = part.partition("-")
    return range(int(lo), int(hi or lo) + 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vramtrace", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--seeds", required=True, help="A-B[,C[-D]...]")
    ap.add_argument("--cc", default="gcc,clang")
    ap.add_argument("--lang", choices=["c", "c++"], default="c")
    ap.add_argument("--wrong", action="store_true")
    ap.add_argument("--deep", type=int, default=0)
    o = ap.parse_args()
    plus = {"gcc": "g++", "clang": "clang++"}
    ccs = [c for c in o.cc.split(",") if shutil.which(plus[c] if o.lang == "c++" else c)]
    if not ccs or not os.path.exists(os.path.join(CUDA_INCLUDE, "cuda_runtime.h")):
        print(f"SKIP: no compiler of {o.cc} or no {CUDA_INCLUDE}/cuda_runtime.h")
        return SKIP
    seeds = [s for part in o.seeds.split(",") for s in seed_range(part)]
    failed = checked = runs = cut = 0
    try:
        for seed in seeds:
            for cc in ccs:
                build, n, errors, c = run_seed(o, seed, cc)
                runs += 1
                checked += n
                cut += c
                failed += bool(errors)
                print(f"seed {seed} ({build}): {n} allocations, {c} cut, {len(errors)} wrong")
                for e in errors:
                    print("  " + e)
    except (RuntimeError, OSError, KeyError, ValueError) as e:
        print(f"harness: {e}")
        return 3
    if o.deep and not cut:
        print("no stack was cut: the marker was not exercised")
        return 1
    if o.wrong:
        print("wrong truth " + ("caught in every run" if failed == runs else "NOT caught"))
        return 0 if failed == runs else 1
    print(f"{checked} allocations in {runs} programs checked, {failed} wrong")
    return 1 if failed or not checked else 0


if __name__ == "__main__":
    sys.exit(main())
