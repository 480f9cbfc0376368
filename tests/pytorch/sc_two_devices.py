"""Model parallel on two devices: the parameters (8 GiB) on device 0, each
step's activations on both devices, and a history kept on device 1 (64 MiB
a step), until device 1 runs out. vramtrace's growth must be projected per
device: the step where device 1 fills, not where the two devices' bytes
summed meet one device's room.    sc_two_devices.py STEPS"""
import sys

import torch
import torchscen


def body(st):
    steps = int(sys.argv[1])
    params = torch.empty(8 << 30, dtype=torch.uint8, device="cuda:0")
    history = []
    for step in range(steps):
        with torch.cuda.nvtx.range("step"):
            a0 = torch.empty(256 << 20, dtype=torch.uint8, device="cuda:0")
            a1 = torch.empty(256 << 20, dtype=torch.uint8, device="cuda:1")
            history.append(torch.empty(64 << 20, dtype=torch.uint8, device="cuda:1"))
            del a0, a1
        print(f"step {step} kept {len(history)}")
    st.d["device_peak_reserved"] = [torch.cuda.max_memory_reserved(d) for d in (0, 1)]
    del params


torchscen.main(body)
