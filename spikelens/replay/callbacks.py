"""Training callbacks that capture the batches around a loss jump, for a later replay.

`hf_callback()` returns a `transformers.TrainerCallback` and `lightning_callback()` a
Lightning `Callback` when those libraries are importable; otherwise the same object
without the base class (duck-typed: the trainers only call its methods). Neither
library is imported by spikelens itself.

A step is captured when its loss is non-finite or exceeds `factor` × the running
median of the last `window` losses, or every `every` steps; the `after` steps following
it are saved with it, and so are the steps before it back to the last checkpoint save
(`since_checkpoint`, the default), since a replay starts from the checkpoint a user has
and needs every batch after it. Those batches are held in memory up to `keep_mib`; past
that the oldest go (with one warning) and at least `before` steps stay, so a replay from
that checkpoint is then approximate.

Each capture holds what a zero-code replay needs to redo the step exactly as the
trainer did: the RNG states taken when the step began (dropout), the learning rate
of each parameter group used by its update (the schedule is code, not state), and
the gradient clipping the trainer applied.
"""
from __future__ import annotations

import math
import statistics
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import diagnostics


@dataclass
class CaptureTrigger:
    """Which steps deserve a capture, decided from the loss alone."""

    factor: float = 3.0
    window: int = 50
    min_history: int = 5
    every: int | None = None
    history: deque = field(default_factory=deque, repr=False)

    def reason(self, step: int, loss: float | None) -> str | None:
        """Why `step` should be captured (and remember its loss), or None."""
        why = None
        if loss is not None and not math.isfinite(loss):
            why = f"loss is {loss}"
        elif loss is not None and len(self.history) >= self.min_history:
            median = statistics.median(self.history)
            if median > 0 and loss > self.factor * median:
                why = f"loss {loss:.4g} > {self.factor:g} × running median {median:.4g}"
        if why is None and self.every and step % self.every == 0:
            why = f"every {self.every} steps"
        if loss is not None and math.isfinite(loss):
            self.history.append(loss)
            while len(self.history) > self.window:
                self.history.popleft()
        return why


class _Capturer:
    """Keeps the last few batches and writes them out when the trigger fires."""

    def __init__(self, dir: str | Path, *, factor: float = 3.0, window: int = 50, every: int | None = None,
                 before: int = 1, after: int = 1, min_history: int = 5, since_checkpoint: bool = True,
                 keep_mib: float = 256.0, watch: str | None = None, fail_on: str = "warning", judge_every: int = 10):
        self.dir = Path(dir)
        self.online = None if watch is None else online_judge(watch, fail_on, judge_every)
        self.stop_requested = False
        self.trigger = CaptureTrigger(factor=factor, window=window, every=every, min_history=min_history)
        self.before, self.after = before, after
        self.since_checkpoint, self.keep_bytes = since_checkpoint, keep_mib * 2**20
        self.recent: deque = deque(maxlen=None if since_checkpoint else before + 1)
        self._held = 0  # bytes of the batches in `recent`
        self._over_warned = False
        self._checkpoint: int | None = None  # the step of the last checkpoint (None: none yet)
        self.pending_after = 0
        self.captured: list[tuple[int, str]] = []
        self._saved: set[int] = set()
        self._rng: dict[str, Any] | None = None
        self._meta: dict[str, Any] | None = None

    def observe(self, step: int, batch: Any, loss: float | None) -> list[int]:
        """Record one finished step; returns the steps written now."""
        if self.online is not None:
            self.stop_requested |= self.online.observe(step, loss)
        self._hold((step, batch, loss, self._rng, self._meta))
        self._rng, self._meta = None, None
        why = self.trigger.reason(step, loss)
        written: list[int] = []
        if why is not None:
            for s, b, l, rng, meta in list(self.recent):
                written += self._write(s, b, l, why if s == step else f"before step {step}: {why}", rng, meta)
            self.pending_after = self.after
        elif self.pending_after > 0:
            self.pending_after -= 1
            written += self._write(step, batch, loss, "after a captured step", *self.recent[-1][3:])
        return written

    def checkpoint_saved(self, step: int) -> None:
        """A checkpoint of the state after `step` exists: a replay starts there, so the batches of
        `step` and before are no longer needed (the last `before` stay for the trigger's context)."""
        if not self.since_checkpoint:
            return
        self._checkpoint = step
        while len(self.recent) > self.before and self.recent[0][0] <= step:
            self._held -= _nbytes(self.recent.popleft()[1])

    def _hold(self, entry: tuple) -> None:
        self.recent.append(entry)
        if not self.since_checkpoint:
            return
        self._held += _nbytes(entry[1])
        if self._checkpoint is None:  # no checkpoint to replay from yet: keep the trigger's context only
            while len(self.recent) > self.before + 1:
                self._held -= _nbytes(self.recent.popleft()[1])
        while self._held > self.keep_bytes and len(self.recent) > self.before + 1:
            self._held -= _nbytes(self.recent.popleft()[1])
            if not self._over_warned:
                self._over_warned = True
                diagnostics.warn(f"spikelens capture: the batches since the last checkpoint pass keep_mib="
                                 f"{self.keep_bytes / 2**20:g}; the oldest are dropped, so a replay from that "
                                 f"checkpoint will be approximate (save checkpoints more often or raise keep_mib)")

    def begin_step(self, optimizer=None, **meta: Any) -> None:
        """At the start of a step, before its forward: the RNG states and the learning rates
        its update will use (taken for every step, as the trigger only decides at its end)."""
        from ._torch import require_torch
        from .capture import rng_state

        try:
            self._rng = rng_state(require_torch())
        except Exception:  # never let a capture helper break training
            self._rng = None
        groups = getattr(optimizer, "param_groups", None)
        lrs = [float(g["lr"]) for g in groups if "lr" in g] if groups else None
        self._meta = {**meta, "lr": lrs or None}

    def _write(self, step: int, batch: Any, loss: float | None, why: str, rng=None, meta=None) -> list[int]:
        if step in self._saved:
            return []
        from .capture import capture

        try:
            capture(step, batch, self.dir, loss=loss, reason=why, rng=rng, meta=meta)
        except Exception as exc:  # a capture must never kill the training run
            diagnostics.warn(f"spikelens capture of step {step} into {self.dir} failed: {exc}")
            return []
        self._saved.add(step)
        self.captured.append((step, why))
        return [step]


def _nbytes(obj: Any) -> int:
    """Bytes held by the tensors of a batch (nested dicts, lists, tuples)."""
    if hasattr(obj, "element_size") and hasattr(obj, "nelement"):
        return int(obj.element_size() * obj.nelement())
    if isinstance(obj, dict):
        return sum(_nbytes(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(_nbytes(v) for v in obj)
    return 0


def _loss_value(out: Any) -> float | None:
    """A float loss from a tensor, `.loss`, `["loss"]`, or a plain number."""
    loss = out
    if isinstance(out, dict):
        loss = out.get("loss")
    elif not isinstance(out, (int, float)) and not hasattr(out, "item") and hasattr(out, "loss"):
        loss = out.loss
    if loss is None:
        return None
    try:
        if hasattr(loss, "detach"):
            loss = loss.detach()
            if getattr(loss, "numel", lambda: 1)() != 1:
                return None
        return float(loss.item() if hasattr(loss, "item") else loss)
    except (TypeError, ValueError, RuntimeError):
        return None


def _detached(obj: Any) -> Any:
    if hasattr(obj, "detach") and callable(obj.detach):
        return obj.detach()
    if isinstance(obj, dict):
        return {k: _detached(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_detached(v) for v in obj]
    return obj


class _HFCapture(_Capturer):
    """HF Trainer side. The Trainer never hands batches to callbacks, so a forward hook on
    the model records each micro-batch's inputs (args, kwargs) and output loss; at step end
    they are one step's batch: a list of {"args", "kwargs"} (gradient accumulation kept).
    Steps are numbered like the Trainer's logs (state.global_step after the step)."""

    def __init__(self, dir, **kw):
        super().__init__(dir, **kw)
        self._hook = None
        self._micro: list[dict[str, Any]] = []
        self._losses: list[float] = []
        self._in_step = False

    def on_train_begin(self, args=None, state=None, control=None, model=None, **kwargs):
        if model is None:
            diagnostics.warn("spikelens capture: the Trainer gave no model to the callback; nothing is captured")
            return control
        if self._hook is None:
            self._hook = model.register_forward_hook(self._forward_hook, with_kwargs=True)
        if getattr(state, "global_step", 0):  # resumed: the checkpoint it resumed from is the start
            self.checkpoint_saved(int(state.global_step))
        return control

    def _forward_hook(self, module, args, kwargs, output):
        if not self._in_step or not getattr(module, "training", True):
            return None
        self._micro.append({"args": _detached(list(args)), "kwargs": _detached(dict(kwargs))})
        loss = _loss_value(output)
        if loss is not None:
            self._losses.append(loss)
        return None

    def on_step_begin(self, args=None, state=None, control=None, **kwargs):
        self._in_step = True  # micro-batches are collected until on_step_end, whatever calls this
        clip = getattr(args, "max_grad_norm", None)
        self.begin_step(kwargs.get("optimizer"), trainer="transformers",
                        max_grad_norm=float(clip) if clip and clip > 0 else None)
        return control

    def on_step_end(self, args=None, state=None, control=None, **kwargs):
        self._in_step = False
        step = int(getattr(state, "global_step", 0))
        loss = combine_micro_losses(self._losses, self._micro) if self._losses else None
        if self._micro:
            self.observe(step, self._micro, loss)
        self._micro, self._losses = [], []
        if self.stop_requested and control is not None:
            control.should_training_stop = True
        return control

    def on_save(self, args=None, state=None, control=None, **kwargs):
        self.checkpoint_saved(int(getattr(state, "global_step", 0)))
        return control

    def on_train_end(self, args=None, state=None, control=None, **kwargs):
        if self._hook is not None:
            self._hook.remove()
            self._hook = None
        return control


class _LightningCapture(_Capturer):
    """Lightning side: the batch and the training_step output come with the hooks. Steps are
    `trainer.global_step` at the start of the batch (the step `self.log` records); with
    `accumulate_grad_batches` > 1 only the first micro-batch of a step is written."""

    def __init__(self, dir, **kw):
        super().__init__(dir, **kw)
        self._step: int | None = None

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx, *args, **kwargs):
        self._step = int(getattr(trainer, "global_step", batch_idx))
        optimizers = getattr(trainer, "optimizers", None) or [None]
        clip = getattr(trainer, "gradient_clip_val", None)
        algorithm = str(getattr(trainer, "gradient_clip_algorithm", None) or "norm")
        self.begin_step(optimizers[0], trainer="lightning", batch_idx=int(batch_idx),
                        max_grad_norm=float(clip) if clip and algorithm.endswith("norm") else None,
                        clip_value=float(clip) if clip and algorithm.endswith("value") else None)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, *args, **kwargs):
        step = self._step if self._step is not None else int(getattr(trainer, "global_step", batch_idx))
        self.observe(step, _detached(batch), _loss_value(outputs))
        self._step = None
        if self.stop_requested:
            trainer.should_stop = True

    def on_train_start(self, trainer, pl_module, *args, **kwargs):
        if getattr(trainer, "global_step", 0):  # resumed from a checkpoint of the steps before it
            self.checkpoint_saved(int(trainer.global_step) - 1)

    def on_save_checkpoint(self, trainer, pl_module, checkpoint, *args, **kwargs):
        # the checkpoint holds the updates of the steps before trainer.global_step
        self.checkpoint_saved(int(getattr(trainer, "global_step", 0)) - 1)


def online_judge(watch: str, fail_on: str, every: int):
    """The watch's judge in the loop (`spikelens.live.watcher.OnlineJudge`): `watch` says what
    a finding at or above `fail_on` does: "raise" (`spikelens.live.judge.FindingAlert`),
    "stop" (the trainer stops at the end of the step) or "capture" (only recorded in
    `callback.online.events`, and the batches captured as usual)."""
    from ..live.watcher import LoopJudge

    if watch not in ("raise", "stop", "capture"):
        raise ValueError(f"watch={watch!r}: expected 'raise', 'stop' or 'capture'")
    return LoopJudge(watch, fail_on, every)


def combine_micro_losses(losses: list, micro: list[dict[str, Any]]) -> Any:
    """One step's loss from its micro-batches' losses, as the Trainer combines them: summed when
    the model normalised each by the step's token count (`num_items_in_batch` passed), else
    averaged (the Trainer divides each by the accumulation steps)."""
    if any("num_items_in_batch" in mb.get("kwargs", {}) for mb in micro):
        return sum(losses[1:], losses[0])
    return sum(losses[1:], losses[0]) / len(losses)


def hf_loss_fn(model, batch) -> Any:
    """The loss_fn for batches captured by `hf_callback`: the step's loss over its micro-batches
    (a plain dict batch, as `capture()` may hold, is one call `model(**batch)`)."""
    if isinstance(batch, dict):
        return model(**batch).loss
    losses = [model(*mb["args"], **mb["kwargs"]).loss for mb in batch]
    return combine_micro_losses(losses, batch)


def _base(*candidates: tuple[str, str]) -> type:
    import importlib

    for module, name in candidates:
        try:
            return getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            continue
    return object


def hf_callback(dir: str | Path, *, factor: float = 3.0, window: int = 50, every: int | None = None,
                before: int = 1, after: int = 1, since_checkpoint: bool = True, keep_mib: float = 256.0,
                watch: str | None = None, fail_on: str = "warning", judge_every: int = 10):
    """A `transformers.TrainerCallback` capturing batches around loss jumps into `dir`, with every
    step since the last checkpoint save (so `spikelens replay out/checkpoint-N` can walk from it).

        trainer.add_callback(hf_callback("captures/", factor=3.0))

    `watch` ("raise", "stop" or "capture") also runs the watch's judge on the loss every
    `judge_every` steps (`online_judge`): `watch="stop"` sets `control.should_training_stop`.
    """
    base = _base(("transformers", "TrainerCallback"))
    cls = type("SpikelensCaptureCallback", (_HFCapture,) if base is object else (_HFCapture, base), {})
    return cls(dir, factor=factor, window=window, every=every, before=before, after=after,
               since_checkpoint=since_checkpoint, keep_mib=keep_mib, watch=watch, fail_on=fail_on,
               judge_every=judge_every)


def lightning_callback(dir: str | Path, *, factor: float = 3.0, window: int = 50, every: int | None = None,
                       before: int = 1, after: int = 1, since_checkpoint: bool = True, keep_mib: float = 256.0,
                       watch: str | None = None, fail_on: str = "warning", judge_every: int = 10):
    """A Lightning `Callback` capturing batches around loss jumps into `dir`, with every step since
    the last checkpoint save.

        Trainer(callbacks=[lightning_callback("captures/")])

    `watch` ("raise", "stop" or "capture") also runs the watch's judge on the loss every
    `judge_every` steps (`online_judge`): `watch="stop"` sets `trainer.should_stop`.
    """
    base = _base(("lightning.pytorch", "Callback"), ("pytorch_lightning", "Callback"))
    cls = type("SpikelensCaptureCallback", (_LightningCapture,) if base is object else (_LightningCapture, base), {})
    return cls(dir, factor=factor, window=window, every=every, before=before, after=after,
               since_checkpoint=since_checkpoint, keep_mib=keep_mib, watch=watch, fail_on=fail_on,
               judge_every=judge_every)


class SkipBatches:
    """A batch sampler that leaves out the batches a remedy names (`spikelens analyze
    --remedy FILE`): wrap the loader's batch sampler and the batches at those global indices
    are never drawn, every other batch comes in its order.

        loader = DataLoader(ds, batch_sampler=SkipBatches.from_file(BatchSampler(...), "remedy.json"))

    Indices count batches across epochs from `start` (the step the run resumes at, when the
    sampler is rebuilt after a rollback to a checkpoint). Works with any iterable of batches
    (PyTorch, Lightning, a plain loop); nothing here imports torch."""

    def __init__(self, batch_sampler: Any, skip: Any, start: int = 0) -> None:
        self.batch_sampler = batch_sampler
        self.skip = frozenset(int(i) for i in skip)
        self.position = int(start)
        self.skipped: list[int] = []

    @classmethod
    def from_file(cls, batch_sampler: Any, path: str | Path, run: str | None = None, start: int = 0) -> "SkipBatches":
        return cls(batch_sampler, read_skip_batches(path, run), start)

    def __iter__(self):
        for batch in self.batch_sampler:
            i = self.position
            self.position += 1
            if i in self.skip:
                self.skipped.append(i)
                continue
            yield batch

    def __len__(self) -> int:
        n = len(self.batch_sampler)
        return n - sum(1 for i in self.skip if self.position <= i < self.position + n)


def read_skip_batches(path: str | Path, run: str | None = None) -> list[int]:
    """The batch indices to skip from a remedy file (`spikelens.remedy/1`: one run's, or
    every run's when `run` is None) or a plain `{"skip_batches": [...]}` /
    `[[first, last], ...]` file. Raises `ValueError` naming the file when it holds neither."""
    import json

    p = Path(path)
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{p}: not a readable skip-batches JSON file ({exc})") from None
    if isinstance(doc, dict) and "runs" in doc:
        runs = [r for r in doc["runs"] if run is None or r.get("run") == run]
        if run is not None and not runs:
            raise ValueError(f"{p}: no remedy for run {run!r} (runs: {', '.join(r.get('run', '?') for r in doc['runs'])})")
        return sorted({i for r in runs for i in r.get("lightning", {}).get("skip_batches", [])})
    items = doc.get("skip_batches") if isinstance(doc, dict) else doc
    if not isinstance(items, list):
        raise ValueError(f"{p}: expected a remedy file or a skip_batches list")
    out: set[int] = set()
    for it in items:
        if isinstance(it, list) and len(it) == 2:
            out.update(range(int(it[0]), int(it[1]) + 1))
        else:
            out.add(int(it))
    return sorted(out)
