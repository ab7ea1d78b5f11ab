"""Replays that walk a trajectory: a checkpoint replayed without user code, and `--bisect`.

From the checkpoint's step to the step asked for, the steps between are replayed plain
from their captures (the state of step N is the checkpoint plus every update since);
then step N (or N-K..N) is replayed with every check, or FROM..TO is searched.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from .. import diagnostics
from ..errors import ReplayError, UsageError
from .bisect import bisect as run_bisect
from .restored import Restored, import_object
from .run import place, resolve_device
from .outcome import ReplayReport, load_logged_for, walk_window
from .trajectory import BuildInputs, CaptureInputs, Trajectory

DEFAULT_CAPTURES = "spikelens-captures"
"""Where the docs put the callback's folder: beside the checkpoints (`out/spikelens-captures`)."""


def load_restored(kind: str, path: Path, *, module: str | None, loss: str | None, dtype: str) -> Restored:
    if kind == "transformers":
        from .checkpoint_hf import load_hf_checkpoint

        restored = load_hf_checkpoint(path)
    elif kind == "lightning":
        from .checkpoint_lightning import load_lightning_checkpoint

        restored = load_lightning_checkpoint(path, module)
    else:
        from .checkpoint_plain import load_plain_checkpoint

        restored = load_plain_checkpoint(path, module)
    if loss:
        restored.target.loss_fn = import_object(loss, "--loss")
        restored.loss_for = None
    return restored


def captures_folder(path: Path, captures: str | Path | None) -> Path:
    """--captures, else `spikelens-captures` beside the checkpoint when it is there."""
    if captures is not None:
        return Path(captures)
    guess = path.parent / DEFAULT_CAPTURES
    if guess.is_dir():
        return guess
    raise UsageError(f"{path}: where are the batches? --captures DIR (the folder hf_callback / "
                     f"lightning_callback / capture() wrote; {guess} does not exist)")


def replay_trajectory(target, kind: str | None, step: int | None, *, span: tuple[int, int] | None,
                      checkpoint, device: str, dtype: str, window: int, logdir, metric, captures, module, loss,
                      factor: float, thorough: bool, torch) -> ReplayReport:
    dev = resolve_device(device, torch)
    first_needed = span[0] if span is not None else (step or 0) - window
    with diagnostics.collecting() as diag:
        if kind is None:  # bisect over a build function: build(FROM) gives the state, later builds their batch
            traj, source = _build_trajectory(target, first_needed, checkpoint, dev, dtype, torch, thorough)
        else:
            traj, source = _checkpoint_trajectory(Path(target), kind, first_needed, captures, module, loss,
                                                  dev, dtype, torch, thorough)
        last = span[1] if span is not None else step
        skipped = _approximate_start(traj, first_needed, last) if span is None else 0
        if skipped and first_needed <= traj.at:
            first_needed = traj.at + 1
            window = step - first_needed
        if hasattr(traj.inputs, "require"):
            traj.inputs.require(range(traj.at + 1, last + 1),
                                why=f"replaying step {last} from the state of step {traj.at}")
        before = traj.advance_to(first_needed - 1)
        if before:
            diagnostics.warn(f"steps {', '.join(map(str, before[:8]))} before {first_needed} already had a "
                             f"non-finite loss or gradient (replayed as the trainer ran them)")
        report = _bisect(traj, span, factor, source, dev, dtype, torch) if span is not None else \
            _steps(traj, step, window, logdir, metric, source, dev, dtype, torch)
        if (line := traj.drift_warning()) is not None:
            diagnostics.warn(line)
    report.warnings = diag.lines
    report.replayed = {**(report.replayed or {}), "approximate": bool(skipped), "skipped_updates": skipped}
    return report


def _approximate_start(traj: Trajectory, first_needed: int, last: int) -> int:
    """When captures do not reach back to the checkpoint but the asked steps are captured, start
    on the checkpoint's weights as if they were those of the step before the first captured one
    of the unbroken run ending at `last`, and say so plainly. Returns the updates skipped (0: exact)."""
    missing = getattr(traj.inputs, "missing", None)
    if missing is None or not missing(range(traj.at + 1, first_needed)):
        return 0
    start = last
    while start - 1 > traj.at and not missing(range(start - 1, start)):
        start -= 1
    if start > first_needed and missing(range(first_needed, last + 1)) != list(range(first_needed, start)):
        return 0  # a hole inside the asked steps: require() names it
    if missing(range(start, last + 1)):
        return 0  # the asked step itself is not captured: require() names it
    gap = missing(range(traj.at + 1, start))
    shown = f"{gap[0]}" if len(gap) == 1 else f"{gap[0]}-{gap[-1]}" if gap == list(range(gap[0], gap[-1] + 1)) \
        else ", ".join(map(str, gap[:8]))
    skipped = start - 1 - traj.at
    diagnostics.warn(f"approximate replay: step{'s' if len(gap) > 1 else ''} {shown} after the checkpoint "
                     f"(step {traj.at}) {'were' if len(gap) > 1 else 'was'} not captured, so step {start} is "
                     f"replayed on the checkpoint's weights, {skipped} update{'s' if skipped != 1 else ''} older "
                     f"than the trainer's: losses and gradients are near the run's, not equal (capture every "
                     f"step since the checkpoint for an exact replay: the callbacks' default)")
    traj.at = start - 1
    return skipped


def _checkpoint_trajectory(path: Path, kind: str, first_needed: int, captures, module, loss, dev, dtype, torch,
                           thorough):
    restored = load_restored(kind, path, module=module, loss=loss, dtype=dtype)
    for line in restored.warnings:
        diagnostics.warn(line)
    folder = captures_folder(path, captures)
    inputs = CaptureInputs(folder)
    at = restored.at_step if restored.at_step is not None else first_needed - 1
    if first_needed <= at:
        raise ReplayError(f"{path}: the checkpoint holds the updates up to step {at}; step {first_needed} is "
                          f"before it (replay a later step, or from an earlier checkpoint)")
    place(restored.target, dev, torch)
    traj = Trajectory(target=restored.target, at=at, inputs=inputs, device=dev, dtype=dtype, torch=torch,
                      thorough=thorough, start_rng=restored.rng, learning_rate=restored.learning_rate,
                      loss_for=restored.loss_for)
    source = {"kind": restored.kind, "path": restored.path, "at_step": at, "restored": restored.restored,
              "captures": str(folder)}
    return traj, source


def _build_trajectory(target, first: int, checkpoint, dev, dtype, torch, thorough):
    from .target import call_build, load_build

    spec = target if isinstance(target, str) else getattr(target, "__qualname__", repr(target))
    build = load_build(target) if isinstance(target, str) else target
    ckpt = None if checkpoint is None else str(checkpoint)
    start = place(call_build(build, first, ckpt, spec), dev, torch)
    traj = Trajectory(target=start, at=first - 1, inputs=BuildInputs(build, ckpt, spec), device=dev,
                      dtype=dtype, torch=torch, thorough=thorough)
    return traj, {"kind": "build", "path": spec, "at_step": first - 1, "restored": [], "captures": None}


def _steps(traj: Trajectory, step: int, window: int, logdir, metric, source, dev, dtype, torch) -> ReplayReport:
    steps = list(range(step - window, step + 1))
    logged = load_logged_for(logdir, metric, steps)
    trajectory, result = walk_window(steps, traj.checked, logged)
    from .logged import compare

    if logged is not None:
        comparison = compare(result.loss, logged.at(result.step), metric=logged.metric, step=result.step)
    elif result.step in traj.captured:
        comparison = compare(result.loss, traj.captured[result.step], metric="captured loss", step=result.step)
    else:
        comparison = None
    return _report(traj, source, step, result, dev, dtype, torch, window=trajectory if window else [],
                   logged=comparison)


def _bisect(traj: Trajectory, span: tuple[int, int], factor: float, source, dev, dtype, torch) -> ReplayReport:
    first, last = span
    prior = [v for s, v in sorted(_captured_before(traj, first).items())]
    found = run_bisect(traj, first, last, factor=factor, prior_losses=prior)
    result = found.result or traj.last_result  # nothing bad: the last probe's step is shown
    bis = found.to_json()
    return _report(traj, source, found.first_bad if found.first_bad is not None else last, result, dev, dtype,
                   torch, bisect=bis)


def _captured_before(traj: Trajectory, first: int) -> dict[int, float]:
    """The losses the trainer saw shortly before FROM, when captured: the jump threshold's history."""
    inputs = traj.inputs
    if not isinstance(inputs, CaptureInputs):
        return {}
    from .capture import captured_steps, load_capture

    out = {}
    for s in [s for s in captured_steps(inputs.dir) if s < first][-50:]:
        loss = load_capture(inputs.dir, s).get("loss")
        if loss is not None:
            out[s] = float(loss)
    return out


def _report(traj: Trajectory, source: dict[str, Any], step: int, result, dev, dtype, torch, *, window=None,
            logged=None, bisect=None) -> ReplayReport:
    opt = traj.target.optimizer
    d = traj.drift
    replayed = {"plain_steps": traj.plain_steps, "checked_steps": traj.checked_steps,
                "compared_losses": d.compared, "max_rel_diff": d.max_rel_diff if d.compared else None,
                "drift_step": d.first_step}
    return ReplayReport(target=str(source["path"]), step=step, checkpoint=source["path"] if source["kind"] != "build"
                        else None, device=str(dev), dtype=dtype, torch_version=str(torch.__version__),
                        result=result, optimizer=type(opt).__name__ if opt is not None else None,
                        window=window or [], logged=logged, source=source, bisect=bisect, replayed=replayed)
