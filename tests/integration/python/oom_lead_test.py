"""oom_lead_test.py: the preload's out-of-memory diagnosis on stderr names a
Python stack by the program's own line (interpose/diagnose.c, py_lead; the
rule of trace/vtrace.h, vt_py_library_file): oom_lead.py's failing
cudaMalloc is made by vtfakelib.alloc. Installed under site-packages, the
library is not the program's code, so "requested at" names step (oom_lead.py);
from a plain folder it is, so alloc (__init__.py) is named instead: the check
tells the two apart.
    oom_lead_test.py PRELOAD SIMDIR OUTDIR PYTHON"""
import os
import re
import shutil
import subprocess
import sys

LIB = '''import ctypes

LINE = 6
def alloc(rt, size):
    p = ctypes.c_void_p()
    return rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(size))  # line 6
'''


def run(preload, simdir, out, py, libdir):
    pkg = os.path.join(libdir, "vtfakelib")
    os.makedirs(pkg)
    with open(os.path.join(pkg, "__init__.py"), "w") as f:
        f.write(LIB)
    env = dict(os.environ, LD_PRELOAD=preload, LD_LIBRARY_PATH=simdir, PYTHONPATH=libdir,
               VRAMTRACE_OUTPUT=os.path.join(out, os.path.basename(libdir) + ".vtrace"),
               PYTHONDONTWRITEBYTECODE="1")
    env.pop("VRAMTRACE_QUIET", None)
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "oom_lead.py")
    p = subprocess.run([py, script], env=env, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        sys.exit(f"FAIL: oom_lead.py exited {p.returncode}: {p.stderr[-600:]}")
    lines = dict(re.findall(r"^site: (\w+) (\d+)$", p.stdout, re.M))
    m = re.search(r"^vramtrace:   requested at (.*)$", p.stderr, re.M)
    return lines, (m.group(1) if m else None), p.stderr


def main():
    preload, simdir, out, py = sys.argv[1:5]
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    ok = True
    for folder, want in (("lib/python3.11/site-packages", "step (oom_lead.py:{STEP_LINE}) <- "
                          "<module> (oom_lead.py:"),
                         ("plain", "alloc (__init__.py:{LIB_LINE}) <- step (oom_lead.py:{STEP_LINE})")):
        lines, got, err = run(preload, simdir, out, py, os.path.join(out, folder))
        want = want.format(**lines)
        print(f"{folder}: requested at {got!r}; want it to start with {want!r}")
        if not got or not got.startswith(want):
            print(err)
            ok = False
    print("PASS" if ok else "FAIL")
    sys.exit(0 if ok else 1)


main()
