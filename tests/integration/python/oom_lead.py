"""oom_lead.py: an out-of-memory cudaMalloc made inside a library (vtfakelib,
which oom_lead_test.py writes into a site-packages folder or a plain one) on
behalf of step(). The preload's OOM diagnosis must name step's line when
the library is installed code, the library's line when it is not.
Prints "site: TAG LINE" for both lines."""
import ctypes

import vtfakelib

rt = ctypes.CDLL("libcudart.so.13")


def step():
    return vtfakelib.alloc(rt, 1 << 44)  # STEP_LINE


rc = step()
print("cudaMalloc:", rc)
src = open(__file__).read().splitlines()
print("site: STEP_LINE", next(i + 1 for i, l in enumerate(src) if l.rstrip().endswith("# STEP_LINE")))
print("site: LIB_LINE", vtfakelib.LINE)
