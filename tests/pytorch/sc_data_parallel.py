"""Data parallel on two devices, as torch.nn.DataParallel lays it out: the
model replicated on both, the optimizer's state, the gathered outputs and
the reduced gradients on device 0, each device's half of the batch and its
activations on that device. Device 0 fills first. The largest batch that
fits is a property of device 0 alone: vramtrace's advice across runs must
not weigh both devices' bytes against one device's room.
    sc_data_parallel.py --batch N STEPS  (--batch as vramtrace's advice names it)"""
import sys

import torch
import torchscen

MIB = 1 << 20
IMAGE = 3 * 128 * 128 * 4  # one input sample, float32
LAYERS = (64, 128, 256, 512)  # channels of the four conv stages, 64x64 down to 8x8


def activations(n, device):
    """A half-batch's forward activations on device: per stage the conv
    output and the BatchNorm output autograd keeps."""
    acts = []
    for i, ch in enumerate(LAYERS):
        side = 64 >> i
        for _ in range(2):
            acts.append(torch.empty((n, ch, side, side), device=device))
    return acts


def step(batch, nparams):
    x = torch.empty((batch, IMAGE // 4), device="cuda:0")  # the batch, loaded on device 0
    halves = ((batch + 1) // 2, batch // 2)
    xs = [x[: halves[0]], torch.empty((halves[1], IMAGE // 4), device="cuda:1")]  # scatter
    acts = [activations(n, f"cuda:{d}") for d, n in enumerate(halves)]
    outs = torch.empty((batch, 1), device="cuda:0")  # gathered outputs
    grads = []
    for d in (1, 0):  # backward: activations freed in reverse, gradients made
        while acts[d]:
            a = acts[d].pop()
            acts[d].pop()
            g = torch.empty(a.shape, device=a.device)
            del a, g
        grads.append(torch.empty(nparams, device=f"cuda:{d}"))
    reduced = torch.empty(nparams, device="cuda:0")  # device 1's gradients copied over
    del x, xs, outs, grads, reduced


def body(st):
    batch, steps = int(sys.argv[2]), int(sys.argv[3])
    nparams = 128 * MIB  # 512 MiB of float32 parameters
    replicas = [torch.empty(nparams, device=f"cuda:{d}") for d in (0, 1)]
    adam = [torch.empty(nparams, device="cuda:0") for _ in range(2)]  # exp_avg, exp_avg_sq
    for i in range(steps):
        with torch.cuda.nvtx.range("train_step"):
            step(batch, nparams)
        print(f"step {i} batch {batch}")
    st.d["device_peak_reserved"] = [torch.cuda.max_memory_reserved(d) for d in (0, 1)]
    del replicas, adam


torchscen.main(body)
