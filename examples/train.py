"""A small classifier trained on synthetic data: memhint's example (CPU-friendly, a few seconds).

    python3 examples/train.py                                    # train, printing per-step time
    memhint profile examples/train.py::train_step                # memory per line of one step
    memhint profile examples/train.py::train_step --setup make_inputs

It contains two deliberate memory mistakes, marked MISTAKE below: `memhint lint` flags the first (MH002),
`memhint profile` measures both (the retained graph, and 16 MiB of gradients kept per step).
"""
import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    def __init__(self, d_in, hidden, classes):
        super().__init__()
        self.fc1 = nn.Linear(d_in, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        h = F.gelu(self.fc1(x))
        h = F.gelu(self.fc2(h))
        return self.head(h)


def make_batch(batch, d_in, classes, generator):
    x = torch.randn(batch, d_in, generator=generator)
    y = torch.randint(0, classes, (batch,), generator=generator)
    return x, y


def train_step(model, optimizer, x, y):
    optimizer.zero_grad(set_to_none=True)
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    loss.backward()
    optimizer.step()
    return loss


def make_inputs(batch=256, d_in=512, hidden=2048, classes=10):
    """Arguments of one train_step, for `memhint profile ...::train_step --setup make_inputs`."""
    torch.manual_seed(0)
    model = MLP(d_in, hidden, classes)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = make_batch(batch, d_in, classes, torch.Generator().manual_seed(1))
    return model, optimizer, x, y


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--hidden", type=int, default=2048)
    args = parser.parse_args()

    torch.manual_seed(0)
    d_in, classes = 512, 10
    model = MLP(d_in, args.hidden, classes)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    generator = torch.Generator().manual_seed(1)

    running_loss = 0.0
    grad_snapshots = []
    for step in range(args.steps):
        x, y = make_batch(args.batch, d_in, classes, generator)
        started, started_cpu = time.perf_counter(), time.process_time()
        loss = train_step(model, optimizer, x, y)
        elapsed_ms = (time.perf_counter() - started) * 1000
        cpu_ms = (time.process_time() - started_cpu) * 1000
        running_loss += loss  # MISTAKE: keeps every step's autograd graph alive (use loss.item())
        grad_snapshots.append(model.fc2.weight.grad)  # MISTAKE: keeps every step's 16 MiB gradient alive
        print(f"step {step} loss {loss.item():.4f} time {elapsed_ms:.1f} ms cpu {cpu_ms:.1f} ms", flush=True)
    print(f"mean loss {running_loss.item() / args.steps:.4f}")


if __name__ == "__main__":
    main()
