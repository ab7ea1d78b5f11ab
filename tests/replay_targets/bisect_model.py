"""A model factory and a small training loop for the `--bisect` tests (plain state dict path).

`make()` builds a net whose `rare` head only some batches use (a new-token embedding, a
rarely sampled task) and an SGD optimizer with that head in its own param group. The loop
`train()` writes, as a user's own loop would, a checkpoint (`torch.save` of the state dicts)
and a capture of every step with the learning rate each group used.

Plants: `nan_lr_at` gives the rare group a NaN learning rate at one step (a schedule that
divides by zero there): its update leaves NaN in `rare` only, and since later batches never
use `rare`, every later loss stays finite: only the state shows it. `jump_at` scales one
batch so that its loss jumps without any NaN.
"""
from __future__ import annotations

from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F

from spikelens.replay import capture

LR = 0.05


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
        self.rare = nn.Linear(4, 1)

    def forward(self, x, y, use_rare):
        out = self.body(x)
        if bool(use_rare):
            out = out + self.rare(x)
        return F.mse_loss(out, y)


def make():
    torch.manual_seed(0)
    model = Net()
    opt = torch.optim.SGD([{"params": model.body.parameters()}, {"params": model.rare.parameters()}],
                          lr=LR, momentum=0.9)
    return model, opt


def batch(step: int, *, scale: float = 1.0, use_rare: bool = False) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(step)
    x = torch.randn(16, 4, generator=g) * scale
    return {"x": x, "y": x.sum(dim=1, keepdim=True), "use_rare": torch.tensor(use_rare)}


def train(out: Path, *, steps: int, nan_lr_at: int | None = None, jump_at: int | None = None,
          rare_at: tuple[int, ...] = ()) -> tuple[Path, Path, dict[int, float]]:
    """Steps 1..STEPS after a checkpoint at step 0; returns (checkpoint, captures, losses)."""
    model, opt = make()
    ckpt = out / "step0.pt"
    out.mkdir(parents=True, exist_ok=True)
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "step": 0}, ckpt)
    caps, losses = out / "captures", {}
    for step in range(1, steps + 1):
        b = batch(step, scale=30.0 if step == jump_at else 1.0, use_rare=step in rare_at or step == nan_lr_at)
        lrs = [LR, float("nan") if step == nan_lr_at else LR]
        for group, lr in zip(opt.param_groups, lrs):
            group["lr"] = lr
        opt.zero_grad()
        loss = model(**b)
        loss.backward()
        opt.step()
        losses[step] = loss.item()
        capture(step, b, caps, loss=losses[step], meta={"lr": lrs})
    return ckpt, caps, losses
