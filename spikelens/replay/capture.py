"""Save the batch (and RNG state, optionally the weights) of a training step, to replay it later.

One file per step, `DIR/step_00001200.pt`, written with `torch.save` and read back
with `torch.load(..., weights_only=True)`: only tensors, numbers, strings and
containers go in, so nothing is unpickled on the way back. Tensors are moved to the
CPU first, so a capture from a GPU run replays anywhere.
"""
from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any, Callable

from ..errors import ReplayError
from ._torch import require_torch
from .target import ReplayTarget

FORMAT = "spikelens.capture/1"
_NAME = re.compile(r"^step_(\d+)\.pt$")


def capture_path(dir: str | Path, step: int) -> Path:
    return Path(dir) / f"step_{int(step):08d}.pt"


def capture(step: int, batch: Any, dir: str | Path, *, model=None, optimizer=None,
            loss: float | None = None, reason: str | None = None, rng: dict[str, Any] | None = None,
            meta: dict[str, Any] | None = None) -> Path:
    """Write the batch of `step` (on the CPU) with the RNG states of torch, CUDA, NumPy and
    `random` (`rng`: states taken earlier, when the step began; default: now); with
    `model`/`optimizer`, also their state_dicts (the weights at capture time). `meta` holds
    plain numbers of the step's recipe (`lr` per param group, `max_grad_norm`)."""
    torch = require_torch()
    from .tensors import move_to

    out = Path(dir)
    out.mkdir(parents=True, exist_ok=True)
    record = {
        "format": FORMAT,
        "step": int(step),
        "batch": _detach(move_to(batch, "cpu", torch), torch),
        "rng": rng if rng is not None else rng_state(torch),
        "loss": None if loss is None else float(loss),
        "reason": reason,
        "meta": dict(meta or {}),
        "model": None if model is None else _detach(move_to(model.state_dict(), "cpu", torch), torch),
        "optimizer": None if optimizer is None else move_to(optimizer.state_dict(), "cpu", torch),
    }
    path = capture_path(out, step)
    tmp = path.with_suffix(".pt.tmp")
    torch.save(record, tmp)
    tmp.replace(path)  # a crash mid-write never leaves a half file under the real name
    return path


def _detach(obj: Any, torch) -> Any:
    if isinstance(obj, torch.Tensor):
        return obj.detach()
    if isinstance(obj, dict):
        return {k: _detach(v, torch) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)) and not hasattr(obj, "_fields"):
        return type(obj)(_detach(v, torch) for v in obj)
    if isinstance(obj, tuple):  # named tuples are not loadable with weights_only: keep a plain tuple
        return tuple(_detach(v, torch) for v in obj)
    return obj


def rng_state(torch) -> dict[str, Any]:
    """Every RNG a training step may draw from, in types `weights_only` loading accepts."""
    state: dict[str, Any] = {"torch": torch.get_rng_state(), "cuda": None, "numpy": None,
                             "python": _python_state()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = list(torch.cuda.get_rng_state_all())
    try:
        import numpy as np

        kind, keys, pos, has_gauss, cached = np.random.get_state()
        state["numpy"] = {"kind": str(kind), "keys": torch.from_numpy(keys.astype("int64")), "pos": int(pos),
                          "has_gauss": int(has_gauss), "cached_gaussian": float(cached)}
    except ImportError:
        pass
    return state


def _python_state() -> list[Any]:
    version, internal, gauss = random.getstate()
    return [version, list(internal), gauss]


def restore_rng(record: dict[str, Any]) -> None:
    """Put back the RNG states saved by `capture` (dropout and sampling then replay exactly)."""
    torch = require_torch()
    rng = record.get("rng") or {}
    if rng.get("torch") is not None:
        torch.set_rng_state(rng["torch"])
    if rng.get("cuda") and torch.cuda.is_available():
        states = rng["cuda"][: torch.cuda.device_count()]
        torch.cuda.set_rng_state_all(states)
    if rng.get("numpy"):
        import numpy as np

        n = rng["numpy"]
        np.random.set_state((n["kind"], n["keys"].numpy().astype("uint32"), n["pos"], n["has_gauss"],
                             n["cached_gaussian"]))
    if rng.get("python"):
        version, internal, gauss = rng["python"]
        random.setstate((version, tuple(internal), gauss))


def load_capture(dir: str | Path, step: int) -> dict[str, Any]:
    """The record `capture` wrote for `step` (loaded with weights_only=True)."""
    path = capture_path(dir, step)
    if not path.is_file():
        have = captured_steps(dir) if Path(dir).is_dir() else []
        near = f" (captured steps: {', '.join(map(str, have[:20]))})" if have else ""
        raise ReplayError(f"{path}: no capture of step {step}{near}")
    return load_file(path)


def load_file(path: str | Path) -> dict[str, Any]:
    torch = require_torch()
    try:
        record = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ReplayError(f"{path}: not a readable capture ({first})") from None
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        raise ReplayError(f"{path}: not a spikelens capture (no format {FORMAT!r})")
    return record


def captured_steps(dir: str | Path) -> list[int]:
    """The steps captured in a folder, ascending."""
    return sorted(int(m.group(1)) for p in Path(dir).iterdir() if (m := _NAME.match(p.name)))


def captured_batch(dir: str | Path, step: int, *, rng: bool = True) -> Any:
    """The batch captured at `step` (RNG states restored too unless rng=False): what a build
    function returns as `ReplayTarget.batch`."""
    record = load_capture(dir, step)
    if rng:
        restore_rng(record)
    return record["batch"]


def build_from_captures(dir: str | Path, make_model: Callable[[], Any], loss_fn: Callable[[Any, Any], Any],
                        make_optimizer: Callable[[Any], Any] | None = None) -> Callable[[int, str | None], ReplayTarget]:
    """A ready `build(step, checkpoint)` over a capture folder.

    The weights come from the checkpoint when one is given (a state_dict, or a dict with a
    `model` entry), else from the capture itself when it holds them."""

    def build(step: int, checkpoint: str | None) -> ReplayTarget:
        require_torch()
        record = load_capture(dir, step)
        restore_rng(record)
        model = make_model()
        optimizer = make_optimizer(model) if make_optimizer is not None else None
        state = load_checkpoint(checkpoint) if checkpoint else record
        weights = state.get("model", state) if isinstance(state, dict) else None
        if checkpoint or record.get("model") is not None:
            try:
                model.load_state_dict(weights)
            except (RuntimeError, TypeError, KeyError) as exc:
                raise ReplayError(f"{checkpoint or capture_path(dir, step)}: weights do not fit the model: "
                                  f"{str(exc).splitlines()[0]}") from None
        if optimizer is not None and isinstance(state, dict) and state.get("optimizer"):
            optimizer.load_state_dict(state["optimizer"])
        return ReplayTarget(model=model, batch=record["batch"], loss_fn=loss_fn, optimizer=optimizer)

    return build


def load_checkpoint(path: str | Path) -> Any:
    """A checkpoint loaded safely (weights_only=True), with a one-line error naming the file."""
    torch = require_torch()
    if not Path(path).is_file():
        raise ReplayError(f"{path}: no such checkpoint")
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ReplayError(f"{path}: cannot be loaded with weights_only=True ({first})") from None
