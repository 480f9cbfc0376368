"""behaviour.py: what the application sees must not change under the
preload. Allocates through ctypes, prints, takes one SIGINT as a caught
KeyboardInterrupt, then a second one uncaught (the interpreter then dies by
SIGINT), or exits with argv[1] as its status."""
import ctypes
import os
import signal
import sys

rt = ctypes.CDLL("libcudart.so.13")
p = ctypes.c_void_p()
print("cudaMalloc:", rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(1 << 20)))
print("cudaFree:", rt.cudaFree(p))
print("cudaFree again:", rt.cudaFree(p))
try:
    os.kill(os.getpid(), signal.SIGINT)
    signal.pause()  # not reached: the handler raises first
except KeyboardInterrupt:
    print("caught KeyboardInterrupt")
sys.stdout.flush()
if sys.argv[1] == "sigint":
    os.kill(os.getpid(), signal.SIGINT)
    signal.pause()
sys.exit(int(sys.argv[1]))
