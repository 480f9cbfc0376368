"""ctypes_leak.py: cudaMalloc/cudaFree through ctypes on libcudart.

upload() keeps 5 arrays (a leak), scratch() frees its 5: the report must
name this file, the function and the line of each cudaMalloc call. Prints
"site: FUNCTION LINE" for each, so the test compares against the script's
own line numbers instead of hard-coding them."""
import ctypes
import sys

rt = ctypes.CDLL("libcudart.so.13")
kept = []


def malloc(size):
    p = ctypes.c_void_p()
    rc = rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(size))
    assert rc == 0, rc
    return p


def upload():
    for _ in range(5):
        kept.append(malloc(1 << 20))  # LEAK_LINE


def scratch():
    bufs = [malloc(3 << 20) for _ in range(5)]  # FREED_LINE
    for b in bufs:
        rt.cudaFree(b)


def lines():
    src = open(__file__).read().splitlines()
    for tag in ("LEAK_LINE", "FREED_LINE"):
        n = next(i + 1 for i, l in enumerate(src) if l.rstrip().endswith("# " + tag))
        print("site:", tag, n)


upload()
scratch()
lines()
sys.exit(3 if "--exit3" in sys.argv else 0)
