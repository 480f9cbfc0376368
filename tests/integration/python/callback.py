"""callback.py: Python code called back from C (the builtin map calling a
lambda): the leak's stack, with --native, must have the C frames between
outer() and the lambda, at the second eval-loop call. Prints "site: TAG
LINE"."""
import ctypes

rt = ctypes.CDLL("libcudart.so.13")
kept = []


def inner():
    p = ctypes.c_void_p()
    assert rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(1 << 20)) == 0  # INNER_LINE
    kept.append(p)


def outer():
    list(map(lambda _: inner(), [0]))  # OUTER_LINE


outer()
src = open(__file__).read().splitlines()
for tag in ("INNER_LINE", "OUTER_LINE"):
    print("site:", tag, next(i + 1 for i, l in enumerate(src) if l.rstrip().endswith("# " + tag)))
