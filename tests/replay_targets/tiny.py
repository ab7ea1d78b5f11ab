"""Tiny replay targets for the tests: a 2-block MLP with planted NaN/Inf sources.

Each `build_*` follows the replay contract `build(step, checkpoint) -> ReplayTarget`.
Plants (all in named submodules, so the report must name them):
- forward NaN: `torch.log` of a negative number in `blocks.1.mlp`;
- backward NaN: `sqrt` of exactly zero in `blocks.0.mlp` (forward finite, d sqrt/dx = 1/0);
- fp16 overflow: `(|h| + 1) * 70000` in `blocks.1.mlp` (inf in float16, finite in float32).
"""
from __future__ import annotations

import os

import torch
from torch import nn
from torch.nn import functional as F

from spikelens.replay import ReplayTarget

WIDTH = 8


class Mlp(nn.Module):
    def __init__(self, plant: str | None = None):
        super().__init__()
        self.fc1 = nn.Linear(WIDTH, WIDTH)
        self.fc2 = nn.Linear(WIDTH, WIDTH)
        self.plant = plant

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        if self.plant == "log":
            h = torch.log(h - 1000.0)  # log of a negative number: NaN in forward
        elif self.plant == "sqrt":
            h = h + 0.0 * torch.sqrt(h - h)  # sqrt(0) = 0 forward; its gradient 0/0 = NaN
        elif self.plant == "overflow":
            h = (h.abs() + 1.0) * 70000.0 / 70000.0  # > 65504: inf under float16 autocast only
        return self.fc2(h)


class Block(nn.Module):
    def __init__(self, plant: str | None = None):
        super().__init__()
        self.mlp = Mlp(plant)
        self.norm = nn.LayerNorm(WIDTH)

    def forward(self, x):
        return x + self.mlp(self.norm(x))


class Tiny(nn.Module):
    def __init__(self, plants: tuple[str | None, str | None] = (None, None)):
        super().__init__()
        self.embed = nn.Linear(4, WIDTH)
        self.blocks = nn.ModuleList(Block(p) for p in plants)
        self.head = nn.Linear(WIDTH, 1)

    def forward(self, x):
        h = self.embed(x)
        for block in self.blocks:
            h = block(h)
        return self.head(h)


def batch_for_step(step: int, *, scale: float = 1.0) -> dict[str, torch.Tensor]:
    """A deterministic batch per step (the data loader stand-in)."""
    g = torch.Generator().manual_seed(1000 + step)
    x = torch.randn(16, 4, generator=g) * scale
    return {"x": x, "y": x.sum(dim=1, keepdim=True)}


def mse(model, batch):
    return F.mse_loss(model(batch["x"]), batch["y"])


def make(plants=(None, None), checkpoint: str | None = None, lr: float = 0.05):
    torch.manual_seed(0)
    model = Tiny(plants)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    if checkpoint:
        state = torch.load(checkpoint, weights_only=True)
        model.load_state_dict(state["model"] if "model" in state else state)
        if "optimizer" in state:
            optimizer.load_state_dict(state["optimizer"])
    return model, optimizer


def build(step: int, checkpoint: str | None) -> ReplayTarget:
    """Healthy step with an SGD optimizer."""
    model, opt = make(checkpoint=checkpoint)
    return ReplayTarget(model=model, batch=batch_for_step(step), loss_fn=mse, optimizer=opt)


def build_no_optimizer(step: int, checkpoint: str | None) -> ReplayTarget:
    model, _ = make(checkpoint=checkpoint)
    return ReplayTarget(model=model, batch=batch_for_step(step), loss_fn=mse)


def build_forward_nan(step: int, checkpoint: str | None) -> ReplayTarget:
    model, opt = make((None, "log"), checkpoint)
    return ReplayTarget(model=model, batch=batch_for_step(step), loss_fn=mse, optimizer=opt)


def build_backward_nan(step: int, checkpoint: str | None) -> ReplayTarget:
    model, opt = make(("sqrt", None), checkpoint)
    return ReplayTarget(model=model, batch=batch_for_step(step), loss_fn=mse, optimizer=opt)


def build_fp16_overflow(step: int, checkpoint: str | None) -> ReplayTarget:
    model, opt = make((None, "overflow"), checkpoint)
    return ReplayTarget(model=model, batch=batch_for_step(step), loss_fn=mse, optimizer=opt)


def build_nan_batch(step: int, checkpoint: str | None) -> ReplayTarget:
    model, opt = make(checkpoint=checkpoint)
    batch = batch_for_step(step)
    batch["x"][3, 1] = float("nan")
    return ReplayTarget(model=model, batch=batch, loss_fn=mse, optimizer=opt)


def build_diverging(step: int, checkpoint: str | None) -> ReplayTarget:
    """A learning rate so large that the weights blow up within a few optimizer steps."""
    model, opt = make(checkpoint=checkpoint, lr=float(os.environ.get("TINY_LR", "1e6")))
    return ReplayTarget(model=model, batch=batch_for_step(step, scale=100.0), loss_fn=mse, optimizer=opt)


def build_raises(step: int, checkpoint: str | None) -> ReplayTarget:
    raise ValueError(f"no data for step {step}")


def build_not_a_target(step: int, checkpoint: str | None):
    return {"model": None}


NOT_CALLABLE = 3
