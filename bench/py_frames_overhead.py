"""py_frames_overhead.py: cudaMalloc/cudaFree pairs issued from PY_DEPTH
Python frames and NATIVE_DEPTH native frames (py_native_helper.c, loaded
with ctypes), timed inside the helper.
usage: py_frames_overhead.py HELPER N PY_DEPTH NATIVE_DEPTH
Prints "ns_per_pair=<float>"."""
import ctypes
import sys

helper = ctypes.CDLL(sys.argv[1])
helper.vt_bench_pairs.restype = ctypes.c_double
helper.vt_bench_pairs.argtypes = [ctypes.c_long, ctypes.c_int]
n, py_depth, native_depth = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])


def at_depth(d):
    if d > 1:
        return at_depth(d - 1)
    return helper.vt_bench_pairs(n, native_depth)


r = at_depth(py_depth)
if r < 0:
    sys.exit("py_frames_overhead: a CUDA call failed")
print(f"ns_per_pair={r:.1f}")
