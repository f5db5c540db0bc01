# Ground truth for the GPU checks (same sizes as test/fixtures/profiler/linear_adam.py), on the device given by
# MEMHINT_DEVICE (cuda or cpu). Linear(1000, 1000) + Adam, batch 64, float32:
#   parameters 4,004,000 B, gradients 4,004,000 B, Adam moments 8,008,000 B, out/act 256,000 B each.
import os
import sys

import torch
import torch.nn as nn

device = os.environ.get("MEMHINT_DEVICE", "cuda")
mode = sys.argv[1] if len(sys.argv) > 1 else "train"
torch.manual_seed(0)
model = nn.Linear(1000, 1000).to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
x = torch.randn(64, 1000, device=device)


def train_step(x):
    opt.zero_grad(set_to_none=True)
    out = model(x)
    act = out.relu()
    loss = act.sum()
    loss.backward()
    opt.step()
    return loss


def oom_step(x):
    free, total = torch.cuda.mem_get_info()
    huge = torch.empty(int(total) * 2 // 4, device=device)  # twice the device memory, in float32
    return huge


step = oom_step if mode == "oom" else train_step
total = 0
grads = []
for i in range(10):
    loss = step(x)
    total += loss
    grads.append(model.weight.grad)
