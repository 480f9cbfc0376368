"""The seed's varying batch shapes: every step's batch is a little larger than
the last. A step allocates its activations (2 blocks of the batch's size) in
one go, frees them, then allocates the input and the output blocks, keeps the
output (an evaluation buffer) and frees the input. With PyTorch's default
segments each step leaves a hole the next, larger step cannot use: memory
reserved but unallocated grows until an allocation fails although the holes
add up to far more than it asks. expandable_segments:True maps and unmaps
pages of one segment, so the holes go back to the device.
    sc_vary.py"""
import torch
import torchscen

BASE_MIB, GROW_MIB, STEPS = 40, 20, 10


def body(st):
    kept = []
    for step in range(STEPS):
        n = ((BASE_MIB + GROW_MIB * step) << 20) // 4  # floats per batch block
        acts = torch.empty(2 * n, device="cuda")
        del acts
        x = torch.empty(n, device="cuda")
        kept.append(torch.empty(n, device="cuda"))
        del x
        print(f"step {step} block {n * 4 >> 20} MiB kept {len(kept)}")
    st.snapshot()


torchscen.main(body)
