"""The seed's DCGAN on Colab: per-step activations of the DCGAN's layer shapes
at a given batch and image size (torch.empty, forward then backward order).
    sc_dcgan.py IMAGE BATCH STEPS"""
import sys

import torch
import torchscen


def body(st):
    image, batch, steps = (int(a) for a in sys.argv[1:4])
    params = [torch.empty((64 * 8, 128, 4, 4), device="cuda") for _ in range(6)]
    for step in range(steps):
        torchscen.train_step(batch, image)
        print(f"step {step} batch {batch} image {image}x{image}")
    st.snapshot()
    del params


torchscen.main(body)
