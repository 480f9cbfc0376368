"""numba_random.py SEED OPS: a random numba program (clients.py numba_random).

Device, pinned, mapped and managed arrays of random sizes and dtypes,
deleted in random order (numba defers the frees: some flushed at once, the
rest left to its queue and the interpreter's exit), copies both ways,
streams, deferred-cleanup blocks and 1 TiB requests that must fail. Its
last line is what its source says the trace must hold, as JSON:
allocations per kind (one per array made) and failed device allocations
(numba's _attempt_allocation retries an out-of-memory cuMemAlloc once,
after flushing its pending frees: two per failed request)."""
import json
import random
import sys

import numpy as np
from numba import cuda
from numba.cuda.cudadrv.driver import CudaAPIError

seed, ops = int(sys.argv[1]), int(sys.argv[2])
rng = random.Random(seed)
made = {"device": 0, "managed": 0, "host_pinned": 0}
failed_requests = 0
live = []
stream = cuda.stream()
check = 0.0


def keep(array, kind):
    live.append(array)
    made[kind] += 1


for _ in range(ops):
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
    elif r < 0.80 and live:
        del live[rng.randrange(len(live))]
        if rng.random() < 0.5:
            cuda.current_context().deallocations.clear()
    elif r < 0.88 and live:
        a = live[rng.randrange(len(live))]
        # DeviceNDArray only: numba's managed and mapped arrays cannot copy_to_device
        if type(a).__name__ == "DeviceNDArray" and a.dtype == np.float32:
            a.copy_to_device(np.full(a.size, 3.0, dtype=np.float32))
            check += float(a.copy_to_host()[0])
    elif r < 0.92:
        try:
            cuda.device_array(1 << 40, dtype=np.uint8)  # 1 TiB on a 15 GiB device
        except CudaAPIError:
            failed_requests += 1
    elif r < 0.95:
        cuda.synchronize()
    else:
        with cuda.defer_cleanup():
            count = rng.randint(1, 4)
            tmp = [cuda.device_array(rng.choice([64, 5000, 1 << 16])) for _ in range(count)]
            made["device"] += count
            del tmp
print(json.dumps({"allocations": made, "failed_device": 2 * failed_requests, "check": check}))
