"""Seed 004's first example, the model its batch-1024 warning was written
about: nn.Linear(10, 50), ReLU, nn.Linear(50, 2), Adam, batch 1024, 10,000
samples (10 steps an epoch). Parameters, Adam's two moments, the batch, each
layer's output and the gradients, allocated with torch.empty in a training
step's order (no kernel runs on the simulated device).
    sc_linear.py BATCH STEPS"""
import sys

import torch
import torchscen

IN, HIDDEN, OUT = 10, 50, 2  # the seed's input_size, hidden_size, output_size


def body(st):
    batch, steps = int(sys.argv[1]), int(sys.argv[2])
    shapes = [(HIDDEN, IN), (HIDDEN,), (OUT, HIDDEN), (OUT,)]
    params = [torch.empty(s, device="cuda") for s in shapes]
    adam = [torch.empty(s, device="cuda") for s in shapes for _ in range(2)]
    for step in range(steps):
        x = torch.empty((batch, IN), device="cuda")
        y = torch.empty((batch,), dtype=torch.long, device="cuda")
        acts = [torch.empty((batch, HIDDEN), device="cuda"),  # fc1
                torch.empty((batch, HIDDEN), device="cuda"),  # relu
                torch.empty((batch, OUT), device="cuda")]  # fc2 = outputs
        grads = [torch.empty(s, device="cuda") for s in shapes]
        del acts, x, y, grads
        print(f"step {step}")
    del params, adam
    st.snapshot()


torchscen.main(body)
