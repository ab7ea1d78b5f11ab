"""A Hugging Face `Trainer` checkpoint folder (`checkpoint-N/`) rebuilt with transformers' own classes.

The model comes from `config.json` and the weights (`model.safetensors`, sharded or
`pytorch_model.bin`) through `from_pretrained(local_files_only=True)`: never a hub
download, never remote code. `optimizer.pt`, `scheduler.pt` and `rng_state.pth` are read
with `torch.load(weights_only=True)`. The optimizer is regrouped the way `Trainer.create_optimizer`
groups parameters (decayed, then not decayed) and its class read from the saved options.
`training_args.bin` is a pickle and is never loaded.
"""
from __future__ import annotations

import contextlib
import json
import re
from pathlib import Path
from typing import Any

from ..errors import ReplayError
from ._torch import require_torch
from .callbacks import hf_loss_fn
from .capture import load_checkpoint
from .optimizers import rebuild_optimizer
from .restored import Restored
from .target import ReplayTarget

_STEP = re.compile(r"checkpoint-(\d+)$")
_WEIGHTS = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "pytorch_model.bin.index.json")


def load_hf_checkpoint(path: str | Path, *, dtype: str = "auto") -> Restored:
    """Model, optimizer, learning rate and RNG of a Trainer checkpoint folder."""
    torch = require_torch()
    folder = Path(path)
    if not (folder / "config.json").is_file():
        raise ReplayError(f"{folder}: not a Hugging Face checkpoint folder (no config.json); a Lightning .ckpt, "
                          f"a state dict file or FILE.py:build is replayed too")
    if (folder / "adapter_config.json").is_file():
        raise ReplayError(f"{folder}: a PEFT adapter checkpoint; replay it through the build() contract "
                          f"(load the base model, then the adapter)")
    if not any((folder / w).is_file() for w in _WEIGHTS):
        raise ReplayError(f"{folder}: no weights (none of {', '.join(_WEIGHTS)})")
    transformers = _transformers()
    model = _model(folder, transformers, dtype)
    model.train()  # from_pretrained returns eval mode; the step ran with dropout on
    restored = ["weights"]
    warnings: list[str] = []
    optimizer = None
    if (folder / "optimizer.pt").is_file():
        try:
            optimizer = _optimizer(folder / "optimizer.pt", model, transformers, torch)
            restored.append(f"optimizer ({type(optimizer).__name__})")
        except ReplayError as exc:
            warnings.append(f"{exc}: replaying without the optimizer update")
    else:
        warnings.append(f"{folder}: no optimizer.pt: replaying without the optimizer update")
    if optimizer is not None and (folder / "scheduler.pt").is_file():
        last = _scheduler_lr(folder / "scheduler.pt")
        if last and len(last) == len(optimizer.param_groups):
            for group, lr in zip(optimizer.param_groups, last):
                group["lr"] = float(lr)
            restored.append("scheduler (learning rate)")
    rng = _rng(folder / "rng_state.pth", torch) if (folder / "rng_state.pth").is_file() else None
    if rng is not None:
        restored.append("RNG")
    state = _trainer_state(folder)
    step = state.get("global_step") if isinstance(state.get("global_step"), int) else None
    if step is None and (m := _STEP.search(folder.name)):
        step = int(m.group(1))
    lrs = {int(e["step"]): float(e["learning_rate"]) for e in state.get("log_history", [])
           if isinstance(e, dict) and "learning_rate" in e and "step" in e}
    # the clipping (max_grad_norm) lives in the pickled training_args.bin: the captures carry it
    target = ReplayTarget(model=model, batch=None, loss_fn=hf_loss_fn, optimizer=optimizer)
    return Restored(kind="transformers", path=str(folder), target=target, at_step=step, restored=restored,
                    rng=rng, learning_rate=lrs.get, warnings=warnings)


def _transformers():
    try:
        import transformers
    except ImportError as exc:
        raise ReplayError(f"replaying a Hugging Face checkpoint needs transformers ({exc}): "
                          f"pip install 'spikelens[replay-hf]'") from None
    return transformers


def _model(folder: Path, transformers, dtype: str):
    try:
        config = transformers.AutoConfig.from_pretrained(folder, local_files_only=True)
    except Exception as exc:
        raise ReplayError(f"{folder / 'config.json'}: transformers cannot read it: {_first(exc)}") from None
    archs = getattr(config, "architectures", None) or []
    cls = next((getattr(transformers, a) for a in archs if hasattr(transformers, a)), None)
    if cls is None and archs:
        raise ReplayError(f"{folder / 'config.json'}: architecture {archs[0]} is not a transformers class "
                          f"(custom code is never run): replay it through the build() contract")
    if cls is None:
        cls = transformers.AutoModelForCausalLM
    try:
        with _quiet(transformers):
            return cls.from_pretrained(folder, local_files_only=True, dtype=dtype)
    except Exception as exc:
        raise ReplayError(f"{folder}: {cls.__name__}.from_pretrained failed: {_first(exc)}") from None


@contextlib.contextmanager
def _quiet(transformers):
    """No progress bar and no info chatter from transformers while loading: stderr is ours."""
    log = transformers.utils.logging
    level, bars = log.get_verbosity(), log.is_progress_bar_enabled()
    log.set_verbosity_error()
    log.disable_progress_bar()
    try:
        yield
    finally:
        log.set_verbosity(level)
        if bars:
            log.enable_progress_bar()


def _optimizer(path: Path, model, transformers, torch):
    """The Trainer's two groups (weight decay, then none) with the saved state loaded."""
    state = load_checkpoint(path)
    decay = set(transformers.Trainer.get_decay_parameter_names(None, model))
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    saved = state.get("param_groups", []) if isinstance(state, dict) else []
    if len(saved) == 2:
        groups = [[p for n, p in named if n in decay], [p for n, p in named if n not in decay]]
    else:  # a user-built optimizer with one group over every trainable parameter
        groups = [[p for _, p in named]]
    return rebuild_optimizer(groups, state, torch, source=str(path))


def _scheduler_lr(path: Path) -> list[float] | None:
    """The learning rates the scheduler set for the next step (`_last_lr`)."""
    try:
        state = load_checkpoint(path)
    except ReplayError:
        return None
    last = state.get("_last_lr") if isinstance(state, dict) else None
    return [float(x) for x in last] if isinstance(last, (list, tuple)) else None


def _rng(path: Path, torch) -> dict[str, Any] | None:
    """rng_state.pth in the capture's RNG layout (the NumPy state needs NumPy's allowlist,
    as transformers loads it)."""
    import numpy as np

    np_core = getattr(np, "_core", None) or np.core
    allow = [np_core.multiarray._reconstruct, np.ndarray, np.dtype, type(np.dtype(np.uint32))]
    try:
        with torch.serialization.safe_globals(allow):
            saved = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:
        raise ReplayError(f"{path}: cannot be loaded with weights_only=True ({_first(exc)})") from None
    if not isinstance(saved, dict):
        return None
    rng: dict[str, Any] = {"torch": saved.get("cpu"), "cuda": None, "numpy": None, "python": None}
    cuda = saved.get("cuda")
    if cuda is not None:
        rng["cuda"] = list(cuda) if isinstance(cuda, (list, tuple)) else [cuda]
    if isinstance(saved.get("numpy"), tuple) and len(saved["numpy"]) == 5:
        kind, keys, pos, has_gauss, cached = saved["numpy"]
        rng["numpy"] = {"kind": str(kind), "keys": torch.from_numpy(np.asarray(keys).astype("int64")),
                        "pos": int(pos), "has_gauss": int(has_gauss), "cached_gaussian": float(cached)}
    python = saved.get("python")
    if isinstance(python, tuple) and len(python) == 3:
        rng["python"] = [python[0], list(python[1]), python[2]]
    return rng


def _trainer_state(folder: Path) -> dict[str, Any]:
    try:
        state = json.loads((folder / "trainer_state.json").read_text())
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) else {}


def _first(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
