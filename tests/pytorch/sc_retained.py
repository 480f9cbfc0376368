"""The seed's retained tensors: every step's generator output is appended to
a Python list (a history kept on the GPU), so memory grows each step until
the allocator runs out.    sc_retained.py BATCH STEPS [emit_nvtx]

With emit_nvtx the loop runs inside torch.autograd.profiler.emit_nvtx(), as
for Nsight Systems: an NVTX range around every operator ("aten::empty,
op_id = 12"), and no range of the script's own. The bytes the history holds
at each step's end go to the stats ("step_kept")."""
import contextlib
import sys

import torch
import torchscen


def body(st):
    batch, steps = int(sys.argv[1]), int(sys.argv[2])
    ops = len(sys.argv) > 3 and sys.argv[3] == "emit_nvtx"
    history = []
    st.d["step_kept"] = []
    ranges = contextlib.nullcontext if ops else torch.cuda.nvtx.range
    with torch.autograd.profiler.emit_nvtx() if ops else contextlib.nullcontext():
        for step in range(steps):
            with ranges("step"):
                torchscen.train_step(batch, 64)
                with ranges(torchscen.here("history.append(")):
                    history.append(torch.empty((batch, 3, 64, 64), device="cuda"))  # retained
            st.d["step_kept"].append(sum(t.nbytes for t in history))
            print(f"step {step} kept {len(history)}")


torchscen.main(body)
