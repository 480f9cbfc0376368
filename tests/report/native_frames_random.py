#!/usr/bin/env python3
"""Native call stacks of random C programs against their source.

For each seed and build, writes a random C program whose cudaMalloc calls
(all kept, sizes unique) end random call chains: plain calls, calls through
a volatile function pointer, recursion, loops and branches, each function
static or not, inline, always_inline or noinline (so that compilers inline
some and not others). The truth is the source itself: each allocation's
logical call chain, (function, line of the call) from the cudaMalloc up to
main, whatever the compiler inlined. The program is built with gcc or clang
at a random -O level and debug flavour (DWARF 5 or 4, -g1, frame pointers,
-flto, -gsplit-dwarf), run under `vramtrace run --sim=t4`, and the frames
of the program's own file that `vramtrace report --memory-viz` gives each
allocation (inlined frames included) must be exactly the chain.

    native_frames_random.py --vramtrace BIN --work DIR --seeds A-B[,C...]
        [--cc gcc,clang] [--wrong]

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


def caller(src, rnd, name, attr, kind, callee):
    """A function calling callee in the way kind says; the frames it adds."""
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
        depth = rnd.randint(1, 6)
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


def program(seed):
    """(source text, truth: one {size, frames} per allocation)."""
    rnd = random.Random(seed)
    src, truth, sizes = Source(), [], set()
    for p in range(rnd.randint(3, 8)):
        n = rnd.randint(1, 8)
        kinds = [rnd.choice(["call", "call", "call", "fnptr", "recursion", "loop", "branch"])
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
                frames += caller(src, rnd, name, attrs[i], kinds[i], f"p{p}_{i + 1}")
        truth.append({"chain": p, "size": size, "frames": frames})
    src.add("int main(void)\n{")
    for t in truth:
        t["frames"].append(("main", src.next_line()))
        src.add(f"    sink = p{t['chain']}_0({t['chain']});")
    src.add("    printf(\"%d\\n\", nkeep);\n    return 0;\n}")
    return "\n".join(src.lines) + "\n", truth


def recorded(memviz, source):
    """size -> list of the frames of source in each allocation's stack."""
    out = {}
    for e in (e for tr in memviz["device_traces"] for e in tr):
        if e["action"] == "alloc":
            out.setdefault(e["size"], []).append(
                [(f["name"], f["line"]) for f in e["frames"]
                 if os.path.basename(f["filename"]) == os.path.basename(source)])
    return out


def check(truth, got):
    errors = []
    for t in truth:
        g = got.get(t["size"], [])
        want = [tuple(f) for f in t["frames"]]
        if len(g) != 1:
            errors.append(f"allocation of {t['size']} B: {len(g)} in the export, 1 made")
        elif g[0] != want:
            i = next((i for i, (a, b) in enumerate(zip(want, g[0])) if a != b),
                     min(len(want), len(g[0])))
            errors.append(f"allocation of {t['size']} B: {len(want)} frames in the source, "
                          f"{len(g[0])} recorded; from frame {i}: source {want[i:i + 3]}, "
                          f"recorded {g[0][i:i + 3]}")
    return errors


def run_seed(o, seed, cc):
    rnd = random.Random(f"{seed}/{cc}")
    opt, flavour = rnd.choice(OPTS), rnd.choice(FLAVOURS)
    d = os.path.join(o.work, f"{seed}_{cc}")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    text, truth = program(seed)
    source, exe = os.path.join(d, "prog.c"), os.path.join(d, "prog")
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
    if o.wrong:
        frames = max(truth, key=lambda t: len(t["frames"]))["frames"]
        frames[0] = (frames[0][0], frames[0][1] + 1)
    with open(pkl, "rb") as f:
        errors = check(truth, recorded(pickle.load(f), source))
    return f"{cc} {opt} {flavour or '-g'}".rstrip(), len(truth), errors


def seed_range(part):
    lo, _, hi = part.partition("-")
    return range(int(lo), int(hi or lo) + 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vramtrace", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--seeds", required=True, help="A-B[,C[-D]...]")
    ap.add_argument("--cc", default="gcc,clang")
    ap.add_argument("--wrong", action="store_true")
    o = ap.parse_args()
    ccs = [c for c in o.cc.split(",") if shutil.which(c)]
    if not ccs or not os.path.exists(os.path.join(CUDA_INCLUDE, "cuda_runtime.h")):
        print(f"SKIP: no compiler of {o.cc} or no {CUDA_INCLUDE}/cuda_runtime.h")
        return SKIP
    seeds = [s for part in o.seeds.split(",") for s in seed_range(part)]
    failed = checked = runs = 0
    try:
        for seed in seeds:
            for cc in ccs:
                build, n, errors = run_seed(o, seed, cc)
                runs += 1
                checked += n
                failed += bool(errors)
                print(f"seed {seed} ({build}): {n} allocations, {len(errors)} wrong")
                for e in errors:
                    print("  " + e)
    except (RuntimeError, OSError, KeyError, ValueError) as e:
        print(f"harness: {e}")
        return 3
    if o.wrong:
        print("wrong truth " + ("caught in every run" if failed == runs else "NOT caught"))
        return 0 if failed == runs else 1
    print(f"{checked} allocations in {runs} programs checked, {failed} wrong")
    return 1 if failed or not checked else 0


if __name__ == "__main__":
    sys.exit(main())
