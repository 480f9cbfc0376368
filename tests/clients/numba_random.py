"""numba_random.py SEED OPS [THREADS]: a random numba program (clients.py numba_random).

Device, pinned, mapped and managed arrays of random sizes and dtypes, host
arrays registered for a copy (numba's pinned and mapped contexts),
deleted in random order (numba defers the frees: some flushed at once, the
rest left to its queue and the interpreter's exit), copies both ways,
streams, deferred-cleanup blocks and 1 TiB requests that must fail, on
THREADS Python threads (default 1) that share the live arrays, so that an
array made on one is freed on another (each thread's random draws, and so
its allocations, do not depend on the others). Its
last line is what its source says the trace must hold, as JSON:
allocations per kind (one per array made) and failed device allocations
(numba's _attempt_allocation retries an out-of-memory cuMemAlloc once,
after flushing its pending frees: two per failed request)."""
import json
import random
import sys
import threading

import numpy as np
from numba import cuda
from numba.cuda.cudadrv.driver import CudaAPIError

seed, ops = int(sys.argv[1]), int(sys.argv[2])
threads = int(sys.argv[3]) if len(sys.argv) > 3 else 1
lock = threading.Lock()  # the counts and the list of live arrays, shared
made = {"device": 0, "managed": 0, "host_pinned": 0, "host_registered": 0}
failed_requests = 0
live = []
check = 0.0


def count(kind, n=1):
    with lock:
        made[kind] += n


def keep(array, kind):
    with lock:
        live.append(array)
        made[kind] += 1


def drop(u):
    """Delete one live array (u in [0, 1) picks it), any thread's: numba
    queues its free here."""
    with lock:
        if live:
            del live[int(u * len(live))]


def step(rng, stream):
    global failed_requests, check
    r = rng.random()
    n = rng.choice([1, 7, 256, 1000, 4096, 65536, 1 << 18, 3 << 20])
    if r < 0.30:
        on = stream if rng.random() < 0.5 else 0
        keep(cuda.to_device(np.full(n, 2.0, dtype=np.float32), stream=on), "device")
    elif r < 0.40:
        dtype = rng.choice([np.float32, np.float64, np.int8])
        keep(cuda.device_array(n, dtype=dtype), "device")
    elif r < 0.47:
        keep(cuda.pinned_array(n, dtype=np.float32), "host_pinned")
    elif r < 0.52:
        keep(cuda.mapped_array(n, dtype=np.float32), "host_pinned")
    elif r < 0.58:
        keep(cuda.managed_array(n, dtype=np.float32), "managed")
    elif r < 0.80:  # the same draws whatever the other threads left in live
        drop(rng.random())
        if rng.random() < 0.5:
            cuda.current_context().deallocations.clear()
    elif r < 0.88:
        u = rng.random()
        with lock:
            a = live[int(u * len(live))] if live else None
        # DeviceNDArray only: numba's managed and mapped arrays cannot copy_to_device
        if a is not None and type(a).__name__ == "DeviceNDArray" and a.dtype == np.float32:
            a.copy_to_device(np.full(a.size, 3.0, dtype=np.float32))
            value = float(a.copy_to_host()[0])
            with lock:
                check += value
    elif r < 0.92:
        try:
            cuda.device_array(1 << 40, dtype=np.uint8)  # 1 TiB on a 15 GiB device
        except CudaAPIError:
            with lock:
                failed_requests += 1
    elif r < 0.935:
        cuda.synchronize()
    elif r < 0.95:  # a host array registered for a copy (cuMemHostRegister), then let go
        host = np.full(n, 1.0, dtype=np.float32)
        with (cuda.pinned if rng.random() < 0.5 else cuda.mapped)(host):
            count("host_registered")
            cuda.to_device(host, stream=stream).copy_to_host(host, stream=stream)
            stream.synchronize()
        count("device")
    else:
        with cuda.defer_cleanup():
            k = rng.randint(1, 4)
            tmp = [cuda.device_array(rng.choice([64, 5000, 1 << 16])) for _ in range(k)]
            count("device", k)
            del tmp


def worker(i):
    rng = random.Random(seed * 1000 + i)
    stream = cuda.stream()
    for _ in range(ops):
        step(rng, stream)


if threads == 1:
    worker(0)
else:
    # numba's Driver.ensure_initialized marks the driver initialized before
    # its cuInit returns: threads that start it at once can call
    # cuCtxGetCurrent first (CUDA_ERROR_NOT_INITIALIZED, seen here without
    # the preload); the main thread initializes it, as a program should
    cuda.current_context()
    pool = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
# the copies' values only where one thread makes them the same every run
print(json.dumps({"allocations": made, "failed_device": 2 * failed_requests,
                  "check": check if threads == 1 else None}))
