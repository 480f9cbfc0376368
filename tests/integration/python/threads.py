"""threads.py: a Python thread (threading) that allocates through ctypes,
and a native thread started by a C extension (native_thread.c, argv[1])
that allocates outside Python. Both leak. Prints "site: TAG LINE"."""
import ctypes
import sys
import threading

rt = ctypes.CDLL("libcudart.so.13")
ext = ctypes.CDLL(sys.argv[1])
ext.start_native_alloc.argtypes = [ctypes.c_size_t]
kept = []


def py_worker():
    p = ctypes.c_void_p()
    assert rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(2 << 20)) == 0  # THREAD_LINE
    kept.append(p)


def main():
    t = threading.Thread(target=py_worker, name="py-alloc")
    t.start()
    t.join()
    assert ext.start_native_alloc(7 << 20) == 0
    src = open(__file__).read().splitlines()
    n = next(i + 1 for i, l in enumerate(src) if l.rstrip().endswith("# THREAD_LINE"))
    print("site: THREAD_LINE", n)


main()
