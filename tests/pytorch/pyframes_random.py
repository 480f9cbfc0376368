#!/usr/bin/env python3
"""Python frames of random programs against CPython's own frames.

For each seed, writes a random Python program whose allocations
(torch.empty, all kept) sit at the end of random chains of Python
constructs (generators, comprehensions, lambdas, methods, properties,
context managers, decorators, exception handlers, recursion, exec'd code,
coroutines, asyncio, C code calling back: sorted(key=), map, partial;
multi-line calls; some chains in threads, some of them running at once).
The program records each allocation's Python stack as CPython has it
(sys._getframe: co_filename, co_qualname, f_lineno of every frame), runs
under `vramtrace run --sim=t4`, and the Python frames vramtrace recorded for
that allocation (its --memory-viz export, which lists every allocation with
its stack) must be exactly those: [alloc's own line] + CPython's stack. A
stack of more than 128 Python frames must hold the innermost 128 and then
the marker "[outer Python frames not recorded: more than 128]".

    pyframes_random.py --vramtrace BIN --python PY --work DIR --seeds A-B
        [--max-len N] [--recursion N] [--segments | --ctypes [--fork] [--native-deep LIB]]
        [--wrong]

--ctypes: no PyTorch: each allocation a cudaMalloc through ctypes on
  libcudart, so that any CPython (3.8 and later) runs the programs
  (co_name for the frame's name before 3.11; no match statement before 3.10).

--segments: PyTorch's default allocator instead of --torch-tensors: the k-th
  segment allocation (cudaMalloc) must have the stack of the k-th
  torch.empty that raised torch.cuda.memory_reserved(), and that rise as
  its size (chains run one at a time).
--fork (with --ctypes): some chains run in a child forked without exec (after
  the parent recorded, and while other threads may run). CUDA cannot be
  used in a child of a process that initialised it: each of the child's
  allocations fails with the initialisation error (3), and its own trace of
  the run (interpose/README.md "Fork") must hold each failure with the
  stack CPython gives (the JSON report's ooms[].stack).
--native-deep LIB (with --ctypes): each allocation through LIB's
  vt_deep_alloc (tests/integration/python/native_deep.c) 0, 3, 30, 45, 70 or 95
  native frames below the Python call, which counts the stack's native
  frames with glibc's backtrace(): with more than 64
  (VRAMTRACE_STACK_DEPTH), the recorded stack must hold the marker
  "[outer native frames not recorded: more than 64]" once (before all its
  Python frames when the recursion alone passes 64), with fewer none; the
  Python frames are held as always.
--wrong: one frame's line of the truth moved by one: exit 0 only if caught.
--need-cut: at least one allocation's stack must be cut (its truth longer
  than 128 Python frames), so that the marker is exercised; where one is,
  the text and HTML reports (which fold long stacks) must still show the
  marker.

Exit: 0 all held, 1 a check failed, 77 PY cannot import torch, 3 the
harness could not run. Standard library only (PY needs torch).
"""
import argparse
import glob
import json
import os
import pickle
import random
import subprocess
import sys

SKIP = 77
MAX_PY = 128  # interpose/pyframes.c, MAX_PY
CUT = "[outer Python frames not recorded: more than 128]"
NATIVE_CUT = "[outer native frames not recorded: more than 64]"
NATIVE_DEPTH = 64  # VRAMTRACE_STACK_DEPTH's default
NATIVE_MARGIN = 3  # frames the two unwinders may count differently at the root
DEEP = [0, 3, 30, 45, 70, 95]  # native_deep.c recursion, by allocation size

HEAD = '''import asyncio, contextlib, functools, json, os, sys, threading, torch
RDEPTH = {rdepth}
keep = []
truth = []
lock = threading.Lock()


def alloc(n):
    fr = sys._getframe(1)
    st = []
    while fr is not None:
        st.append([fr.f_code.co_filename, fr.f_code.co_qualname, fr.f_lineno])
        fr = fr.f_back
    with lock:
        before = torch.cuda.memory_reserved()
        t = torch.empty(n, dtype=torch.uint8, device="cuda")  # ALLOC_LINE
        truth.append({{"size": n, "stack": st, "segment": torch.cuda.memory_reserved() - before}})
        keep.append(t)
    return 0


def deco(f):
    @functools.wraps(f)
    def wrapper(*a, **k):
        return f(*a, **k)
    return wrapper


'''

# --ctypes: the allocation through libcudart, no PyTorch
ALLOC_CTYPES = (
    "rt = ctypes.CDLL('libcudart.so.13')\n",
    "        p = ctypes.c_void_p()\n"
    "        rc = rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(n))  # ALLOC_LINE\n"
    "        truth.append({\"size\": n, \"stack\": st, \"segment\": 0, \"error\": rc})\n"
    "        keep.append(p)\n",
)


# --native-deep: the allocation through native_deep.c, which counts the native frames
ALLOC_DEEP = (
    "rt = ctypes.CDLL('libcudart.so.13')\nnat = ctypes.CDLL(os.environ['VT_NATIVE_DEEP'])\n"
    f"DEEP = {DEEP!r}\n",
    "        p, fr = ctypes.c_void_p(), ctypes.c_int(0)\n"
    "        depth = DEEP[(n // 512) % len(DEEP)]\n"
    "        rc = nat.vt_deep_alloc(ctypes.byref(p), ctypes.c_size_t(n), depth, ctypes.byref(fr))  # ALLOC_LINE\n"
    "        truth.append({\"size\": n, \"stack\": st, \"segment\": 0, \"error\": rc,\n"
    "                      \"native_frames\": fr.value, \"native_depth\": depth})\n"
    "        keep.append(p)\n",
)


def head(rdepth, ctypes, deep=False):
    """The program's first part: imports, alloc() (which writes the truth)."""
    text = HEAD.format(rdepth=rdepth)
    if not ctypes:
        return text
    alloc = ALLOC_DEEP if deep else ALLOC_CTYPES
    text = text.replace("threading, torch\n", "threading, ctypes\n" + alloc[0])
    text = text.replace("fr.f_code.co_qualname", "getattr(fr.f_code, 'co_qualname', fr.f_code.co_name)")
    start = text.index("        before = torch.cuda.memory_reserved()")
    end = text.index("        keep.append(t)\n") + len("        keep.append(t)\n")
    return text[:start] + alloc[1] + text[end:]


# construct: (module-level definitions, body of the step function); {C} is
# the call of the next step (or the allocation), {N} a unique stem. A body of
# None: the step function itself decorated.
CONSTRUCTS = {
    "plain": ("", "    return {C}\n"),
    "multiline": ("", "    x = (\n        1\n        + len(\n            [{C}]\n        )\n    )\n"
                  "    return x\n"),
    "generator": ("", "    def g():\n        yield {C}\n    return next(g())\n"),
    "genexpr": ("", "    return list({C} for _ in range(1))[0]\n"),
    "listcomp": ("", "    return [{C} for _ in range(1)][0]\n"),
    "dictcomp": ("", "    return {{k: {C} for k in range(1)}}[0]\n"),
    "lambda": ("", "    f = lambda: {C}\n    return f()\n"),
    "sorted_key": ("", "    return sorted([0], key=lambda _: {C})[0]\n"),
    "map": ("", "    return list(map(lambda _: {C}, [0]))[0]\n"),
    "method": ("class K{N}:\n    def m(self):\n        return {C}\n\n\n", "    return K{N}().m()\n"),
    "classmethod": ("class K{N}:\n    @classmethod\n    def m(cls):\n        return {C}\n\n\n",
                    "    return K{N}.m()\n"),
    "staticmethod": ("class K{N}:\n    @staticmethod\n    def m():\n        return {C}\n\n\n",
                     "    return K{N}.m()\n"),
    "property": ("class K{N}:\n    @property\n    def p(self):\n        return {C}\n\n\n",
                 "    return K{N}().p\n"),
    "init": ("class K{N}:\n    def __init__(self):\n        self.v = {C}\n\n\n",
             "    return K{N}().v\n"),
    "getitem": ("class K{N}:\n    def __getitem__(self, i):\n        return {C}\n\n\n",
                "    return K{N}()[0]\n"),
    "getattr": ("class K{N}:\n    def __getattr__(self, name):\n        return {C}\n\n\n",
                "    return K{N}().missing\n"),
    "enter": ("class K{N}:\n    def __enter__(self):\n        self.v = {C}\n        return self\n\n"
              "    def __exit__(self, *a):\n        return False\n\n\n",
              "    with K{N}() as k:\n        return k.v\n"),
    "exit": ("class K{N}:\n    def __enter__(self):\n        return self\n\n"
             "    def __exit__(self, *a):\n        self.v = {C}\n        return False\n\n\n",
             "    k = K{N}()\n    with k:\n        pass\n    return k.v\n"),
    "contextmanager": ("@contextlib.contextmanager\ndef cm{N}():\n    v = {C}\n    yield v\n\n\n",
                       "    with cm{N}() as v:\n        return v\n"),
    "decorated": ("", None),
    "except": ("", "    try:\n        raise ValueError(1)\n    except ValueError:\n        return {C}\n"),
    "finally": ("", "    try:\n        r = 1\n    finally:\n        r = {C}\n    return r\n"),
    "recursion": ("", "    def r(n):\n        if n == 0:\n            return {C}\n"
                  "        return r(n - 1)\n    return r(RDEPTH)\n"),
    "exec": ("", "    ns = {{'f': lambda: {C}}}\n    exec(compile('r = f()', '<gen-{N}>', 'exec'), ns)\n"
             "    return ns['r']\n"),
    "coroutine": ("", "    async def c():\n        return {C}\n    co = c()\n    try:\n"
                  "        co.send(None)\n    except StopIteration as e:\n        return e.value\n"),
    "asyncio": ("", "    async def c():\n        await asyncio.sleep(0)\n        return {C}\n"
                "    return asyncio.run(c())\n"),
    "partial": ("", "    return functools.partial(lambda a: {C}, 1)()\n"),
    "loop": ("", "    for i in range(3):\n        if i == 2:\n            return {C}\n"),
    "while": ("", "    i = 0\n    while True:\n        i += 1\n        if i > 2:\n            break\n"
              "    return {C}\n"),
    "match": ("", "    match [1, 2]:\n        case [1, x]:\n            return {C}\n"),
    "kwargs": ("def kw{N}(*, a, b=2):\n    return {C}\n\n\n", "    return kw{N}(\n        a=1,\n    )\n"),
}


def chain_kinds(rnd, max_len, old):
    names = sorted(k for k in CONSTRUCTS if not (old and k == "match"))
    kinds = [rnd.choice(names) for _ in range(rnd.randint(1, max_len))]
    if kinds.count("asyncio") > 1:  # asyncio.run() cannot run inside a running loop
        first = kinds.index("asyncio")
        kinds = kinds[:first + 1] + [k if k != "asyncio" else "coroutine" for k in kinds[first + 1:]]
    return kinds


def program(seed, max_len, rdepth, segments, ctypes=False, old=False, fork=False, deep=False):
    """The program's source for seed (old: a Python before 3.10; fork: some
    chains run in a child forked without exec, which writes its own truth)."""
    rnd = random.Random(seed)
    out, runs, sizes = [head(rdepth, ctypes, deep)], [], set()
    for p in range(rnd.randint(3, 8)):
        kinds = chain_kinds(rnd, max_len, old)
        for i in reversed(range(len(kinds))):
            nxt = f"s{p}_{i + 1}()"
            if i + 1 == len(kinds):
                size = 0
                while not size or size in sizes:  # unique: the allocation's name
                    size = rnd.randint(1, 128) * 512 * 1024 if segments else rnd.randint(1, 4096) * 512
                sizes.add(size)
                nxt = f"alloc({size})"
            defs, body = CONSTRUCTS[kinds[i]]
            if body is None:
                out.append(f"@deco\ndef s{p}_{i}():\n    return {nxt}\n\n\n")
                continue
            out.append(defs.format(C=nxt, N=f"{p}_{i}"))
            out.append(f"def s{p}_{i}():\n" + body.format(C=nxt, N=f"{p}_{i}") + "\n\n")
        hows = ["call", "call", "thread"] + ([] if segments else ["together"])
        runs.append((p, rnd.choice(hows + (["fork"] * 2 if fork else [])), kinds))
    out.append("def main():\n    together = []\n")
    for p, how, kinds in runs:
        out.append(f"    # chain {p}: {' '.join(kinds)}\n")
        if how == "call":
            out.append(f"    s{p}_0()\n")
        elif how == "fork":  # the child's allocations are in its own trace and truth file
            # the threads running now first (the program's lock may be held
            # by one of them, and a fork child would wait for it forever)
            out.append("    for t in together:\n        t.join()\n"
                       "    n = len(truth)\n    pid = os.fork()\n    if pid == 0:\n"
                       f"        s{p}_0()\n"
                       "        json.dump([dict(t, parent_init=n > 0) for t in truth[n:]],\n"
                       "                  open(f'{sys.argv[1]}.{os.getpid()}', 'w'))\n"
                       "        os._exit(0)\n    os.waitpid(pid, 0)\n")
        elif how == "thread":
            out.append(f"    t = threading.Thread(target=s{p}_0)\n    t.start()\n    t.join()\n")
        else:
            out.append(f"    together.append(threading.Thread(target=s{p}_0))\n"
                       "    together[-1].start()\n")
    out.append("    for t in together:\n        t.join()\n\n\n"
               "main()\njson.dump(truth, open(sys.argv[1], 'w'))\n")
    return "".join(out)


def python_frames(frames):
    """The Python frames of a stack and the cut markers; a marker has no file
    (the snapshot names it "python", the JSON report "")."""
    return [("python", f["name"], 0) if f["name"] in (CUT, NATIVE_CUT)
            else (f["filename"], f["name"], f["line"]) for f in frames
            if f["filename"].endswith(".py") or f["filename"].startswith("<")
            or f["name"] in (CUT, NATIVE_CUT)]


def native_cut_errors(what, t, got):
    """--native-deep: the marker of native frames cut by the depth, held to
    the native frames glibc's backtrace() counted; got loses it (also where
    nothing counted them: PyTorch's own native frames may pass the depth)."""
    at = [i for i, f in enumerate(got) if f[1] == NATIVE_CUT]
    got[:] = [f for f in got if f[1] != NATIVE_CUT]
    n = t.get("native_frames")
    if n is None:
        return []
    if n > NATIVE_DEPTH + NATIVE_MARGIN and len(at) != 1:
        return [f"{what}: {n} native frames, {len(at)} markers {NATIVE_CUT!r} (1 expected)"]
    if n < NATIVE_DEPTH - NATIVE_MARGIN and at:
        return [f"{what}: {n} native frames, marked {NATIVE_CUT!r}"]
    if at and t["native_depth"] + 1 >= NATIVE_DEPTH and at[0] != 0:
        return [f"{what}: the recursion alone passed {NATIVE_DEPTH} native frames, but "
                f"{at[0]} Python frames are inside the marker"]
    return []


def expected(prog, alloc_line, stack):
    want = [(prog, "alloc", alloc_line)] + [tuple(s) for s in stack]
    return want[:MAX_PY] + [("python", CUT, 0)] if len(want) > MAX_PY else want


def compare(label, want, got):
    if want == got:
        return []
    i = next((i for i, (a, b) in enumerate(zip(want, got)) if a != b), min(len(want), len(got)))
    short = lambda fs: [(f[1], f[2], os.path.basename(f[0])) for f in fs[i:i + 3]]
    return [f"{label}: {len(want)} Python frames expected, {len(got)} recorded; from frame {i}: "
            f"expected {short(want)}, recorded {short(got)}"]


def check(prog, truth, memviz, segments, failures=None):
    alloc_line = next(i + 1 for i, l in enumerate(open(prog)) if l.rstrip().endswith("# ALLOC_LINE"))
    events = [e for tr in memviz["device_traces"] for e in tr]
    errors = []
    if segments:
        truth = [t for t in truth if t["segment"] > 0]
        segs = [e for e in events if e["action"] == "segment_alloc"]
        if len(segs) != len(truth):
            errors.append(f"{len(segs)} segment allocations, {len(truth)} rises of memory_reserved()")
        for k, (t, e) in enumerate(zip(truth, segs)):
            if e["size"] != t["segment"]:
                errors.append(f"segment {k}: {e['size']} B, memory_reserved() rose {t['segment']} B")
            frames = python_frames(e["frames"])
            native_cut_errors(f"segment {k}", t, frames)
            errors += compare(f"segment {k} ({e['size']} B)", expected(prog, alloc_line, t["stack"]),
                              frames)
        return errors, len(truth)
    allocs = {}
    for e in events:
        if e["action"] == "alloc":
            allocs.setdefault(e["size"], []).append(e)
    for t in truth:
        failed = t.get("error", 0) != 0
        got = (failures or {}).get(t["size"], []) if failed else allocs.get(t["size"], [])
        what = f"{'failed ' if failed else ''}allocation of {t['size']} B"
        if len(got) != 1:
            errors.append(f"{what}: {len(got)} in the {'JSON reports' if failed else 'export'}, 1 made")
            continue
        frames = python_frames(got[0]["frames"])
        errors += native_cut_errors(what, t, frames)
        errors += compare(what, expected(prog, alloc_line, t["stack"]), frames)
    return errors, len(truth)


def json_failures(path):
    """A JSON report's failed allocations, by size: [{"frames": [...]}] in
    the memory snapshot's frame form."""
    with open(path) as f:
        ooms = json.load(f)["ooms"]
    out = {}
    for o in ooms:
        frames = [{"filename": f["file"], "name": f["function"], "line": f["line"]} for f in o["stack"]]
        out.setdefault(o["requested_bytes"], []).append({"frames": frames})
    return out


def run_seed(o, seed):
    d = os.path.join(o.work, f"{'seg' if o.segments else 'tensors'}_{o.recursion}_{seed}")
    subprocess.run(["rm", "-rf", d], check=True)  # an earlier run's child traces and truths
    os.makedirs(d)
    prog, truth_f = os.path.join(d, "prog.py"), os.path.join(d, "truth.json")
    trace, pkl = os.path.join(d, "prog.vtrace"), os.path.join(d, "prog.pkl")
    with open(prog, "w") as f:
        f.write(program(seed, o.max_len, o.recursion, o.segments, o.ctypes, o.old, o.fork,
                        bool(o.native_deep)))
    opts = [] if o.segments or o.ctypes else ["--torch-tensors"]
    cmd = [o.vramtrace, "run", "--sim=t4", *opts, "--force", "-o", trace, "--", o.python, prog, truth_f]
    env = dict(os.environ, VT_NATIVE_DEEP=os.path.abspath(o.native_deep)) if o.native_deep else None
    p = subprocess.run(cmd, capture_output=True, text=True, errors="replace", env=env)
    if p.returncode != 0:
        raise RuntimeError(f"seed {seed}: {' '.join(cmd)} exited {p.returncode}: {p.stderr[-600:]}")
    memviz, failures = {"device_traces": []}, {}
    for k, tr in enumerate(sorted(glob.glob(os.path.join(d, "prog*.vtrace")))):
        # one export per process (the run's own trace and each fork child's),
        # each trace alone in a folder: given the run's name, the report
        # reads its siblings too
        one, alone = f"{pkl}.{k}", os.path.join(d, f"process{k}")
        subprocess.run(["rm", "-rf", alone], check=True)
        os.makedirs(alone)
        os.link(tr, os.path.join(alone, "prog.vtrace"))
        p = subprocess.run([o.vramtrace, "report", "-q", "--memory-viz", one, "--json", one + ".json",
                            os.path.join(alone, "prog.vtrace")],
                           capture_output=True, text=True, errors="replace")
        if p.returncode != 0:
            raise RuntimeError(f"seed {seed}: report exited {p.returncode}: {p.stderr[-600:]}")
        with open(one, "rb") as f:
            memviz["device_traces"] += pickle.load(f)["device_traces"]
        for size, got in json_failures(one + ".json").items():
            failures.setdefault(size, []).extend(got)
    truth = []
    for tf in [truth_f] + sorted(glob.glob(truth_f + ".*")):
        with open(tf) as f:
            part = json.load(f)
        # a fork child's allocations fail when its parent had initialised CUDA (allocated), and
        # only then (cudaErrorInitializationError)
        for t in part:
            if t.get("error", 0) != (3 if t.get("parent_init") else 0):
                raise RuntimeError(f"seed {seed}: {tf}: cudaMalloc of {t['size']} B returned "
                                   f"{t.get('error', 0)} in a {'child' if tf != truth_f else 'parent'}"
                                   f"{' of an initialised parent' if t.get('parent_init') else ''}")
        truth += part
    if o.wrong:  # one frame's line moved: a right report must now differ
        t = max(truth, key=lambda t: len(t["stack"]))
        t["stack"][min(1, len(t["stack"]) - 1)][2] += 1
    errors, n = check(prog, truth, memviz, o.segments, failures)
    cut = sum(1 for t in truth if len(t["stack"]) + 1 > MAX_PY)
    if cut:  # the text and HTML reports fold long stacks: the marker must still show
        html = os.path.join(d, "prog.html")
        p = subprocess.run([o.vramtrace, "report", "--html", html, trace], capture_output=True,
                           text=True, errors="replace")
        if CUT not in p.stdout:
            errors.append(f"the text report does not say {CUT}")
        with open(html) as f:
            if f"including {CUT}</summary>" not in f.read():
                errors.append(f"the HTML report's folded stacks do not say {CUT}")
    return errors, n, cut


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vramtrace", required=True)
    ap.add_argument("--python", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--seeds", required=True, help="A-B")
    ap.add_argument("--max-len", type=int, default=7)
    ap.add_argument("--recursion", type=int, default=3)
    ap.add_argument("--segments", action="store_true")
    ap.add_argument("--ctypes", action="store_true")
    ap.add_argument("--wrong", action="store_true")
    ap.add_argument("--need-cut", action="store_true")
    ap.add_argument("--fork", action="store_true")
    ap.add_argument("--native-deep", metavar="LIB", help="native_deep.c's library (with --ctypes)")
    o = ap.parse_args()
    need = "import sys; assert sys.version_info >= (3, 8)" if o.ctypes else "import torch"
    if subprocess.run([o.python, "-c", need], capture_output=True).returncode != 0:
        print(f"SKIP: {o.python} cannot run: {need}")
        return SKIP
    o.old = subprocess.run([o.python, "-c", "import sys; print(sys.version_info < (3, 10))"],
                           capture_output=True, text=True).stdout.strip() == "True"
    lo, hi = (int(x) for x in o.seeds.split("-"))
    os.makedirs(o.work, exist_ok=True)
    failed = checked = cut = 0
    try:
        for seed in range(lo, hi + 1):
            errors, n, c = run_seed(o, seed)
            checked += n
            cut += c
            print(f"seed {seed}: {n} {'segments' if o.segments else 'allocations'}, "
                  f"{c} stacks over {MAX_PY} Python frames, {len(errors)} wrong")
            for e in errors:
                print("  " + e)
            failed += bool(errors)
    except (RuntimeError, OSError, ValueError, KeyError) as e:
        print(f"harness: {e}")
        return 3
    if o.need_cut and not cut:
        print(f"no stack over {MAX_PY} Python frames: the marker was not exercised")
        return 1
    if o.wrong:
        print("wrong truth " + ("caught" if failed == hi - lo + 1 else "NOT caught in every seed"))
        return 0 if failed == hi - lo + 1 else 1
    print(f"{checked} checked, {failed} seeds wrong")
    return 1 if failed or not checked else 0


if __name__ == "__main__":
    sys.exit(main())
