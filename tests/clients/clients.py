#!/usr/bin/env python3
"""Real third-party CUDA programs on the simulated device (issue 12).

Each check runs a Debian client (ffmpeg's CUDA hwupload, numba) or a
cuda-samples-style program on the plain simulated device, then under
`vramtrace run`, and holds it to exact expectations derived from the
program: exit code and stdout identical with and without the preload, the
sim's ledger (VRAMTRACE_SIM_LEDGER) showing the allocations the program must
make, the same ledger with the preload, and the report's "accounting" held
against the ledger (tests/ledger/check_ledger.py). Exit 0 when everything
holds, 1 on a mismatch (each printed), 2 when the client is missing.
"""
import argparse
import ctypes
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # imports below come from the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CHECK_LEDGER = os.path.join(ROOT, "tests", "ledger", "check_ledger.py")
sys.path.insert(0, os.path.join(ROOT, "sim", "tools"))
import gen_entry_points  # noqa: E402  (the toolkit's entry points, one parser)

CUDA_VERSION = 13000
problems = []


def expect(what, got, want):
    if got != want:
        problems.append(f"{what}: got {got!r}, want {want!r}")


def run(argv, env_extra, cwd):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env.update(env_extra)
    p = subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120)
    return p.returncode, p.stdout, p.stderr.decode(errors="replace")


def accounting_file(path, want):
    """Write `want` ({(device, kind): fields}) as a report's "accounting"."""
    acc = [dict(device=d, kind=k, **f) for (d, k), f in sorted(want.items())]
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"accounting": acc}, f)
    return path


def ledger_check(what, ledger, report, extra=()):
    """tests/ledger/check_ledger.py (contract C): the ledger's accounting
    against a report's (extra: its --devices and --trace, for a report
    vramtrace wrote); its mismatch lines become problems."""
    p = subprocess.run([sys.executable, CHECK_LEDGER, "--ledger", ledger, "--report", report,
                        *extra], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if p.returncode != 0:
        problems.append(f"{what}: check_ledger exit {p.returncode}")
        problems.extend("  " + line for line in p.stdout.decode().splitlines())


class Session:
    """Runs one program plainly and under vramtrace with the same sim setup."""

    def __init__(self, args, name, sim_env):
        self.args = args
        self.work = tempfile.mkdtemp(prefix=f"clients-{name}-", dir=args.work)
        self.sim_env = dict(sim_env)

    def plain(self, argv):
        led = os.path.join(self.work, "plain.ledger")
        env = dict(self.sim_env, LD_LIBRARY_PATH=self.args.sim_lib, VRAMTRACE_SIM_LEDGER=led)
        rc, out, err = run(argv, env, self.work)
        return rc, out, err, led

    def traced(self, argv):
        led = os.path.join(self.work, "traced.ledger")
        trace = os.path.join(self.work, "run.vtrace")
        env = dict(self.sim_env, VRAMTRACE_SIM_LEDGER=led, VRAMTRACE_QUIET="1")
        device = self.sim_env.get("VRAMTRACE_SIM_DEVICE", "t4")
        rc, out, err = run([self.args.vramtrace, "run", f"--sim={device}", "-o", trace, "--"]
                           + argv, env, self.work)
        rjson = os.path.join(self.work, "report.json")
        rrc, _, rerr = run([self.args.vramtrace, "report", trace, "--json", rjson, "--quiet"],
                           {}, self.work)
        if rrc != 0:
            problems.append(f"vramtrace report failed ({rrc}): {rerr.strip()}")
        return rc, out, err, led, rjson, trace

    def compare(self, argv, want):
        """Plain and traced runs; `want` is the exact accounting the program
        must make, {(device, kind): every field of the report's "accounting"},
        held against the sim's ledger of both runs, and the report held
        against the traced run's ledger. --wrong-expectation adds 1 to every
        expected allocation count: the check must then fail."""
        if self.args.wrong_expectation:
            want = {k: dict(v, allocations=v["allocations"] + 1) for k, v in want.items()}
        expected = accounting_file(os.path.join(self.work, "expected.json"), want)
        prc, pout, perr, pled = self.plain(argv)
        trc, tout, terr, tled, rjson, trace = self.traced(argv)
        expect("exit code with the preload", trc, prc)
        expect("stdout with the preload", tout, pout)
        ledger_check("expected accounting vs the plain run's ledger", pled, expected)
        ledger_check("expected accounting vs the traced run's ledger", tled, expected)
        if os.path.exists(rjson):
            ledger_check("vramtrace's report vs the traced run's ledger", tled, rjson,
                         ("--devices", "--trace", trace))
        return prc, pout, perr


def nv12_frame_bytes(w, h):
    """hwcontext_cuda's pool buffer: av_image_get_buffer_size(NV12, w, h,
    CUDA_FRAME_ALIGNMENT = 256): a luma plane and an interleaved chroma plane
    of ceil(h/2) rows, each row's linesize (w bytes) aligned to 256."""
    line = (w + 255) // 256 * 256
    return line * h + line * ((h + 1) // 2)


def ffmpeg_argv(args, w, h, frames, hw):
    vf = "format=nv12,hwupload_cuda,hwdownload,format=nv12" if hw else "format=nv12"
    hwopt = ["-init_hw_device", "cuda=cu", "-filter_hw_device", "cu"] if hw else []
    return ([args.ffmpeg, "-hide_banner", "-nostdin", "-loglevel", "error"] + hwopt +
            ["-f", "lavfi", "-i", f"testsrc=size={w}x{h}:rate=5", "-frames:v", str(frames),
             "-vf", vf, "-f", "framemd5", "-"])


def check_ffmpeg(args):
    """hwupload_cuda's frame pool grows on demand (vf_hwupload_cuda sets no
    initial_pool_size) and this linear graph holds one frame at a time: one
    cuMemAlloc of one frame's bytes, freed when the pool is torn down."""
    w, h = 320, 240
    s = Session(args, "ffmpeg", {"VRAMTRACE_SIM_DEVICE": "t4"})
    rc, cpu, err = run(ffmpeg_argv(args, w, h, 5, False), {}, s.work)
    expect("CPU pipeline exit", rc, 0)
    frame = nv12_frame_bytes(w, h)
    want = {(0, "device"): {"allocations": 1, "frees": 1, "failed": 0, "peak_live_bytes": frame,
                            "live_bytes_at_failures": [], "leaked_bytes": 0,
                            "leaked_allocations": 0}}
    prc, pout, perr = s.compare(ffmpeg_argv(args, w, h, 5, True), want)
    expect("hwupload pipeline exit", prc, 0)
    expect("hwupload output equals the CPU pipeline's", pout, cpu)
    if prc:
        print(perr, file=sys.stderr)


def check_ffmpeg_oom(args):
    """A 1920x1080 frame (3317760 bytes) on a 3 MiB device without context
    reserve: the pool's first cuMemAlloc fails, ffmpeg exits non-zero."""
    w, h = 1920, 1080
    frame = nv12_frame_bytes(w, h)
    s = Session(args, "ffmpeg-oom", {"VRAMTRACE_SIM_DEVICE": "t4", "VRAMTRACE_SIM_MEMORY": "3MiB",
                                     "VRAMTRACE_SIM_CONTEXT_RESERVE": "0"})
    want = {(0, "device"): {"allocations": 0, "frees": 0, "failed": 1, "peak_live_bytes": 0,
                            "live_bytes_at_failures": [0], "leaked_bytes": 0,
                            "leaked_allocations": 0}}
    prc, _, _ = s.compare(ffmpeg_argv(args, w, h, 1, True), want)
    expect("ffmpeg exits non-zero when the frame does not fit", prc != 0, True)
    led = os.path.join(s.work, "plain.ledger")
    with open(led, encoding="utf-8") as f:
        fails = [o for o in map(json.loads, f) if o.get("op") == "fail"]
    expect("failed request size", [f.get("size") for f in fails], [frame])


NUMBA_SCRIPT = """
import sys
import numpy as np
from numba import cuda
n = int(sys.argv[1])
keep = [cuda.to_device(np.full(n, i + 1, dtype=np.float32)) for i in range(3)]
back = keep[1].copy_to_host()
freed = keep.pop(0)
del freed
cuda.current_context().memory_manager.deallocations.clear()
print(int(back.sum()), len(keep))
"""


def check_numba(args):
    """Three float32 arrays of n elements copied to the device (cuMemAlloc of
    4n bytes each), one freed (numba defers frees; the flush makes it now),
    two leaked; the second array comes back with sum 2n."""
    n = 100000
    s = Session(args, "numba", {"VRAMTRACE_SIM_DEVICE": "t4"})
    script = os.path.join(s.work, "arrays.py")
    with open(script, "w", encoding="utf-8") as f:
        f.write(NUMBA_SCRIPT)
    want = {(0, "device"): {"allocations": 3, "frees": 1, "failed": 0,
                            "peak_live_bytes": 3 * 4 * n, "live_bytes_at_failures": [],
                            "leaked_bytes": 2 * 4 * n, "leaked_allocations": 2}}
    prc, pout, perr = s.compare([args.python, script, str(n)], want)
    expect("numba exit", prc, 0)
    expect("numba output", pout.decode(), f"{2 * n} 2\n")
    if prc:
        print(perr, file=sys.stderr)


NUMBA_RANDOM = os.path.join(HERE, "numba_random.py")
# numba's calls that make each kind (cuda.pinned and cuda.mapped register a
# host array: cuMemHostRegister)
NUMBA_CALLS = {"device": r"cuda\.(to_device|device_array)\(", "managed": r"cuda\.managed_array\(",
               "host_pinned": r"cuda\.(pinned|mapped)_array\(",
               "host_registered": r"cuda\.(pinned|mapped)\b(?!_)"}


def numba_random_lines(report, shift=0):
    """Each call site the report names leads (its program frame, "lead")
    with a line of numba_random.py that makes an array of that kind, as its
    source says (threads included: the lead is found below numba's frames
    and above threading's); each failure's with the 1 TiB request's line.
    shift moves every expected line (--wrong-lines: the check must fail)."""
    with open(NUMBA_RANDOM, encoding="utf-8") as f:
        src = f.read().splitlines()
    lines = {k: {i + 1 + shift for i, text in enumerate(src)
                 if re.search(calls, text) and "1 << 40" not in text}
             for k, calls in NUMBA_CALLS.items()}
    failing = {i + 1 + shift for i, text in enumerate(src) if "1 << 40" in text}

    def lead(stack):
        leads = [fr for fr in stack if fr.get("lead")]
        if len(leads) != 1 or not leads[0]["file"].endswith("/numba_random.py"):
            return None
        return leads[0]["line"]

    any_kind = set().union(*lines.values())
    for where, entries in (("peak site", report["sites"]), ("leak", report["leaks"])):
        for e in entries:
            want = lines.get(e.get("kind"), any_kind)
            got = lead(e["stack"])
            if got not in want:  # one of them
                expect(f"{where} ({e.get('kind', 'any kind')}) lead line", got, sorted(want))
    for o in report["ooms"]:
        expect("failure led by the 1 TiB request's line", lead(o["stack"]), min(failing))


def check_numba_random(args):
    """numba_random.py (a random numba program, seed --seed): the same exit
    code and stdout with and without the preload; its allocations per kind
    and its failed device allocations, as its own source counts them, in
    the sim's ledger of both runs and in vramtrace's report; the report's
    every number held against the traced run's ledger."""
    s = Session(args, f"numba_random_{args.seed}", {"VRAMTRACE_SIM_DEVICE": "t4"})
    argv = [args.python, NUMBA_RANDOM, str(args.seed), "300", str(args.threads)]
    prc, pout, perr, pled = s.plain(argv)
    trc, tout, terr, tled, rjson, trace = s.traced(argv)
    expect("numba_random exit", prc, 0)
    expect("exit code with the preload", trc, prc)
    expect("stdout with the preload", tout, pout)
    if prc or trc or tout != pout:
        print(f"plain run's stderr:\n{perr}\ntraced run's stderr:\n{terr}", file=sys.stderr)
    if prc:
        return
    truth = json.loads(pout.decode().splitlines()[-1])
    want = {(0, "device"): {"allocations": truth["allocations"]["device"],
                            "failed": truth["failed_device"]},
            (0, "managed"): {"allocations": truth["allocations"]["managed"], "failed": 0},
            (-1, "host_pinned"): {"allocations": truth["allocations"]["host_pinned"],
                                  "failed": 0},
            (-1, "host_registered"): {"allocations": truth["allocations"]["host_registered"],
                                      "failed": 0}}
    if args.wrong_expectation:
        want = {k: dict(v, allocations=v["allocations"] + 1) for k, v in want.items()}
    with open(rjson, encoding="utf-8") as f:
        report = json.load(f)
    got = {(a["device"], a["kind"]): a for a in report["accounting"]}
    # numba allocates with cuMemAlloc, never from a stream-ordered pool: no
    # failure has a pool of its own (the device's empty pool sampled at each
    # was taken for one until session 44)
    expect("failed calls", sorted({o["api"] for o in report["ooms"]}),
           ["cuMemAlloc"] if truth["failed_device"] else [])
    expect("failures with a pool of their own", sum(o["pool"] is not None for o in report["ooms"]),
           0)
    numba_random_lines(report, 1 if args.wrong_lines else 0)
    for key, fields in sorted(want.items()):
        for name, value in fields.items():
            expect(f"report's {key[1]} on device {key[0]}: {name}",
                   got.get(key, {}).get(name, 0), value)
    expected = accounting_file(os.path.join(s.work, "expected.json"),
                               {k: v for k, v in want.items() if v["allocations"]})
    for what, led in (("plain", pled), ("traced", tled)):
        ledger_check(f"the program's counts vs the {what} run's ledger", led, expected,
                     ("--fields", "allocations,failed"))
    ledger_check("vramtrace's report vs the traced run's ledger", tled, rjson,
                 ("--devices", "--trace", trace))


STATIC_LINE = ("vramtrace-sim: this program links the CUDA runtime statically "
               "(cuGetExportTable), which cannot reach the simulated device; "
               "rebuild it with nvcc -cudart shared")
STATIC_NOTE = "the program's CUDA runtime could not reach the device"


def check_static(args):
    """nvcc's default static libcudart: exactly one stderr line naming the
    cause and the fix; under vramtrace the same exit code and stdout, and the
    report notes that the runtime could not reach the device."""
    s = Session(args, "static", {"VRAMTRACE_SIM_DEVICE": "t4"})
    prc, pout, perr, _ = s.plain([args.program])
    expect("stderr of the static-cudart program", perr.splitlines(), [STATIC_LINE])
    expect("exit code of the static-cudart program", prc, 1)
    trc, tout, _, _, rjson, _ = s.traced([args.program])
    expect("exit code with the preload", trc, prc)
    expect("stdout with the preload", tout, pout)
    with open(rjson, encoding="utf-8") as f:
        notes = json.load(f).get("notes", [])
    expect("report notes the unreachable runtime",
           any(STATIC_NOTE in (n if isinstance(n, str) else json.dumps(n)) for n in notes), True)


def avutil_names(ffmpeg):
    """The driver entry points ffmpeg's CUDA loader (nv-codec-headers'
    dynlink) resolves: the cu* names in libavutil's read-only data."""
    ldd = subprocess.run(["ldd", ffmpeg], stdout=subprocess.PIPE, check=True).stdout.decode()
    lib = re.search(r"libavutil\.so\.\d+ => (\S+)", ldd).group(1)
    with open(lib, "rb") as f:
        data = f.read()
    return sorted({m.decode() for m in re.findall(rb"(?<![\w])(cu[A-Z]\w{2,})\0", data)})


def numba_names(python):
    """Numba's ctypes binding: API_PROTOTYPES, each resolved as name_v2 or name."""
    code = ("from numba.cuda.cudadrv import drvapi; print('\\n'.join(drvapi.API_PROTOTYPES))")
    out = subprocess.run([python, "-c", code], stdout=subprocess.PIPE, check=True).stdout
    return out.decode().split()


def weak_symbols(lib):
    out = subprocess.run(["nm", "-D", "--defined-only", lib], stdout=subprocess.PIPE,
                         check=True).stdout.decode()
    return {parts[2] for parts in (l.split() for l in out.splitlines()) if parts[1] == "W"}


def dynamic_names(lib):
    out = subprocess.run(["nm", "-D", "--defined-only", lib], stdout=subprocess.PIPE,
                         check=True).stdout.decode()
    return {l.split()[2].split("@")[0] for l in out.splitlines() if len(l.split()) == 3}


def runtime_exports(args):
    """The simulated libcudart.so.13 exports every function NVIDIA's does
    (the per-thread-default-stream forms NAME_ptds, NAME_ptsz among them:
    a program built with --default-stream per-thread loads), but internal
    __cuda* ones no header declares; (exported, per-thread) counts."""
    real = os.path.join(args.cuda_include, "..", "lib64", "libcudart.so.13")
    sim = dynamic_names(os.path.join(args.sim_lib, "libcudart.so.13"))
    want = {n for n in dynamic_names(real) if n.startswith("cuda")}
    for name in sorted(want - sim):
        problems.append(f"libcudart.so.13 does not export {name}")
    return len(want), len([n for n in want if re.search(r"_pt(ds|sz)$", n)])


def check_symbols(args):
    """Every name the loaders ask for is exported; cuGetProcAddress answers
    every base name of the toolkit's cudaTypedefs.h; no base name hands out a
    fallback where the sim implements an older variant; with the per-thread
    flag, a name's _ptsz/_ptds variant where it has one; the runtime exports
    what the real one does (runtime_exports)."""
    path = os.path.join(args.sim_lib, "libcuda.so.1")
    lib = ctypes.CDLL(path)
    with open(args.entry_points, encoding="utf-8") as f:
        listed = f.read().split()
    for name in listed + args.require:
        if not hasattr(lib, name):
            problems.append(f"libcuda.so.1 does not export {name}")
    for name in avutil_names(args.ffmpeg):
        if not hasattr(lib, name):
            problems.append(f"ffmpeg's loader needs {name}")
    for name in numba_names(args.python):
        if not (hasattr(lib, name + "_v2") or hasattr(lib, name)):
            problems.append(f"numba's binding needs {name}")
    gpa = lib.cuGetProcAddress_v2
    gpa.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_int,
                    ctypes.c_uint64, ctypes.POINTER(ctypes.c_int)]
    weak = weak_symbols(path)
    by_addr = {ctypes.cast(getattr(lib, n), ctypes.c_void_p).value: n for n in listed}
    entries = gen_entry_points.read_typedefs(args.cuda_include)
    bases = {b for b, v, suf, params, legacy in entries if params is not None and not legacy}
    for base in sorted(bases):
        fn, st = ctypes.c_void_p(), ctypes.c_int(-1)
        r = gpa(base.encode(), ctypes.byref(fn), CUDA_VERSION, 0, ctypes.byref(st))
        if r != 0 or not fn.value:
            problems.append(f"cuGetProcAddress({base}, {CUDA_VERSION}): {r}, status {st.value}")
            continue
        sym = by_addr.get(fn.value, "?")
        variants = [n for n in listed if n == base or re.fullmatch(re.escape(base) + r"_v\d+", n)]
        if sym in weak and any(v not in weak for v in variants):
            problems.append(f"cuGetProcAddress({base}) hands out the fallback {sym} although "
                            f"{[v for v in variants if v not in weak]} is implemented")
        pt, st2 = ctypes.c_void_p(), ctypes.c_int(-1)
        gpa(base.encode(), ctypes.byref(pt), CUDA_VERSION, 2, ctypes.byref(st2))
        want = next((by_sym for by_sym in (sym + "_ptsz", sym + "_ptds") if by_sym in listed), sym)
        if by_addr.get(pt.value, "?") != want:
            problems.append(f"cuGetProcAddress({base}, PER_THREAD_DEFAULT_STREAM) hands out "
                            f"{by_addr.get(pt.value, '?')}, not {want}")
    runtime, per_thread = runtime_exports(args)
    print(f"symbols: {len(listed)} exported, {len(bases)} base names, "
          f"runtime {runtime} ({per_thread} per-thread), "
          f"{len(avutil_names(args.ffmpeg))} ffmpeg names, {len(numba_names(args.python))} numba")


def attr_lines(out):
    return {int(a): v for a, v in re.findall(r"^attr (\d+) (.+)$", out, re.M)}


# Facts of the real cards (data sheets, CUDA Programming Guide compute
# capability tables): SMs, compute capability, attribute 102 (VMM), 107
# (generic compression: Ampere and later), 120 (thread-block clusters: 9.0).
CARDS = {"t4": {16: "40", 75: "7", 76: "5", 102: "1", 107: "0", 120: "0", 15: "1", 21: "131072"},
         "a100-40gb": {16: "108", 75: "8", 76: "0", 102: "1", 107: "1", 120: "0"},
         "h100-80gb": {16: "132", 75: "9", 76: "0", 102: "1", 107: "1", 120: "1"}}


# L2 sizes from the data sheets: T4 4 MiB, A100 40 MiB, H100 SXM5 50 MiB.
L2 = {"t4": 4 << 20, "a100-40gb": 40 << 20, "h100-80gb": 50 << 20}


def cuda_h_attributes(incdir):
    with open(os.path.join(incdir, "cuda.h"), encoding="utf-8") as f:
        text = f.read()
    body = re.search(r"typedef enum CUdevice_attribute_enum \{(.*?)\} CUdevice_attribute;",
                     text, re.S).group(1)
    vals = {int(v) for v in re.findall(r"CU_DEVICE_ATTRIBUTE_\w+\s*=\s*(\d+)", body)}
    return vals


def check_attributes(args):
    """deviceQuery (runtime) and deviceQueryDrv (driver) programs on each
    profile: exit 0, every CUdevice_attribute of cuda.h answered (and nothing
    else), the cards' known values."""
    known = cuda_h_attributes(args.cuda_include)
    for prof, facts in CARDS.items():
        env = {"LD_LIBRARY_PATH": args.sim_lib, "VRAMTRACE_SIM_DEVICE": prof,
               "VRAMTRACE_SIM_DEVICES": "2"}
        for prog in (args.device_query, args.device_query_drv):
            rc, out, err = run([prog], env, args.work)
            out = out.decode()
            tag = f"{os.path.basename(prog)} on {prof}"
            expect(f"{tag} exit", rc, 0)
            attrs = attr_lines(out)
            answered = {a for a, v in attrs.items() if not v.startswith("error")}
            expect(f"{tag} attributes answered", sorted(answered), sorted(known))
            for a, v in facts.items():
                expect(f"{tag} attribute {a}", attrs.get(a), v)
            if prog == args.device_query:
                # cudaDeviceProp texture/surface limits of compute capability
                # >= 7.5 (Programming Guide, technical specifications) and the
                # board's PCI device id (10de:1eb8 T4, 20b0 A100, 2330 H100).
                pci = {"t4": "0x1eb810de", "a100-40gb": "0x20b010de", "h100-80gb": "0x233010de"}
                expect(f"{tag} props", re.findall(r"^props (.*)$", out, re.M)[:1],
                       ["tex1d 131072 tex2d 131072x65536 tex3d 16384x16384x16384 "
                        f"surf2d 131072x65536 l2 {L2[prof]} pci {pci[prof]}"])
                expect(f"{tag} peer access 0->1", re.findall(r"^peer 0 1 (\d+)$", out, re.M),
                       ["0"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sim-lib", required=True)
    ap.add_argument("--vramtrace")
    ap.add_argument("--ffmpeg", default="ffmpeg")
    ap.add_argument("--python", default="/usr/bin/python3", help="Debian's python3 with numba")
    ap.add_argument("--cuda-include", default="/usr/local/cuda/include")
    ap.add_argument("--entry-points")
    ap.add_argument("--require", action="append", default=[],
                    help="a further name libcuda.so.1 must export (shows the check failing)")
    ap.add_argument("--wrong-expectation", action="store_true",
                    help="expect one allocation too many (shows the check failing)")
    ap.add_argument("--wrong-lines", action="store_true",
                    help="numba_random: expect every source line one lower (shows the check failing)")
    ap.add_argument("--program", help="the static-cudart program")
    ap.add_argument("--device-query")
    ap.add_argument("--device-query-drv")
    ap.add_argument("--work", default=tempfile.gettempdir())
    ap.add_argument("--seed", type=int, default=1, help="numba_random's seed")
    ap.add_argument("--threads", type=int, default=1, help="numba_random's Python threads")
    ap.add_argument("check", choices=["ffmpeg", "ffmpeg-oom", "numba", "numba_random", "symbols",
                                          "attributes", "static"])
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    needs = [args.ffmpeg] if args.check.startswith("ffmpeg") or args.check == "symbols" else []
    needs += [args.python] if args.check in ("numba", "numba_random", "symbols") else []
    for i, tool in enumerate(needs):
        if not shutil.which(tool):
            print(f"clients: {tool} is not installed (README's install command)", file=sys.stderr)
            return 2
    args.ffmpeg = shutil.which(args.ffmpeg) or args.ffmpeg
    {"ffmpeg": check_ffmpeg, "ffmpeg-oom": check_ffmpeg_oom, "numba": check_numba,
     "numba_random": check_numba_random, "symbols": check_symbols, "attributes": check_attributes,
     "static": check_static}[args.check](args)
    for p in problems:
        print(f"clients: {args.check}: {p}")
    if not problems:
        print(f"clients: {args.check}: all expectations hold")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
