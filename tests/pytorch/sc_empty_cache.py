"""The seed's torch.cuda.empty_cache() after every step of the DCGAN.
    sc_empty_cache.py IMAGE BATCH STEPS"""
import sys

import torch
import torchscen


def body(st):
    image, batch, steps = (int(a) for a in sys.argv[1:4])
    for step in range(steps):
        torchscen.train_step(batch, image)
        torch.cuda.empty_cache()
        print(f"step {step} reserved after empty_cache: {torch.cuda.memory_reserved()}")


torchscen.main(body)
