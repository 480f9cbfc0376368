"""numba_leak.py: device arrays through Debian's numba (numba.cuda, which
calls the driver API through ctypes). upload() keeps 5 arrays, scratch()
drops its 5 (numba frees them: deallocations are flushed before exit).
Prints "site: TAG LINE" for the lines of the two allocations."""
import sys

import numpy as np
from numba import cuda

kept = []


def upload():
    for _ in range(5):
        kept.append(cuda.device_array(1 << 18, dtype=np.float32))  # LEAK_LINE


def scratch():
    bufs = [cuda.device_array(3 << 18, dtype=np.float32) for _ in range(5)]  # FREED_LINE
    del bufs
    cuda.current_context().memory_manager.deallocations.clear()  # free now


def lines():
    src = open(__file__).read().splitlines()
    for tag in ("LEAK_LINE", "FREED_LINE"):
        n = next(i + 1 for i, l in enumerate(src) if l.rstrip().endswith("# " + tag))
        print("site:", tag, n)


upload()
scratch()
lines()
sys.exit(0)
