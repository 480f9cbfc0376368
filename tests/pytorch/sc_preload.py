"""The seed's preloaded dataset: the whole training set copied to the GPU with
.cuda() before training (preload), against copying each batch (stream).
    sc_preload.py preload|stream"""
import sys

import torch
import torchscen

IMAGES, BATCH, STEPS = 5000, 256, 3


def body(st):
    mode = sys.argv[1]
    host = torch.zeros((IMAGES, 3, 64, 64))  # the dataset in host memory
    data = host.cuda() if mode == "preload" else host
    print(f"{mode}: dataset of {IMAGES} images")
    for step in range(STEPS):
        batch = data[step * BATCH:(step + 1) * BATCH]  # a view, no copy
        x = batch if mode == "preload" else batch.pin_memory().to("cuda", non_blocking=True)  # as DataLoader(pin_memory=True)
        torchscen.train_step(BATCH, 64)
        del x
        print(f"step {step}")
    st.snapshot()


torchscen.main(body)
