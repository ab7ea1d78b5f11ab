"""Training-log writers for the watch tests, run as subprocesses while `watch` runs.

    python tests/watch_writers.py KIND OUT --steps N --spike S --nan T --batch B --delay D --mark FILE

KIND is `tb` (TensorBoard's EventFileWriter, the writer PyTorch's SummaryWriter wraps),
`text` (a nanoGPT log written line by line) or `wandb` (`wandb.init(mode="offline")`).
A healthy decaying loss (the fixtures' curve) is logged B steps at a time, flushed, then
D seconds of sleep; a spike is planted at step S (x4, back within a few steps), a NaN at
step T. `--mark FILE` gets `<step> <unix time>` lines: when each planted event and the
points after it were on disk (the tests measure the watch's latency from them).
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fixtures"))
from writers._curves import clean_run  # noqa: E402


def curve(steps: int, spike: int | None, nan: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    run = clean_run(n_steps=steps, seed=3, noise=0.02)
    loss = run["loss"].copy()
    if spike is not None and spike < steps:
        loss[spike] *= 4.0
        loss[spike + 1:spike + 4] *= np.array([2.5, 1.6, 1.2])[: max(0, min(3, steps - spike - 1))]
    if nan is not None and nan < steps:
        loss[nan] = math.nan
    return run["step"], loss, run["grad_norm"]


class Marks:
    def __init__(self, path: str | None, events: list[int]):
        self.path = Path(path) if path else None
        self.events = sorted(e for e in events if e is not None)

    def flushed(self, last_step: int) -> None:
        """Say when each planted event (and 3 points after it) reached the disk."""
        if self.path is None:
            return
        while self.events and self.events[0] + 3 <= last_step:
            with open(self.path, "a") as fh:
                fh.write(f"{self.events.pop(0)} {time.time():.3f}\n")


def write_tb(out: Path, a) -> None:
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    step, loss, grad = curve(a.steps, a.spike, a.nan)
    marks = Marks(a.mark, [a.spike, a.nan])
    writer = EventFileWriter(str(out), max_queue_size=10_000, flush_secs=3600)
    for i, s in enumerate(step.tolist()):
        for tag, v in (("train/loss", loss[i]), ("train/grad_norm", grad[i])):
            writer.add_event(Event(wall_time=time.time(), step=s,
                                   summary=Summary(value=[Summary.Value(tag=tag, simple_value=float(v))])))
        if (i + 1) % a.batch == 0 or i == len(step) - 1:
            writer.flush()
            marks.flushed(s)
            time.sleep(a.delay)
    writer.close()


def write_text(out: Path, a) -> None:
    step, loss, _ = curve(a.steps, a.spike, a.nan)
    marks = Marks(a.mark, [a.spike, a.nan])
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "train_stdout.log", "w") as fh:
        fh.write("Overriding config with config/train_gpt2.py:\ntokens per iteration will be: 491,520\n")
        for i, s in enumerate(step.tolist()):
            fh.write(f"iter {s}: loss {loss[i]:.4f}, time {120 + i % 7:.2f}ms, mfu 31.20%\n")
            if (i + 1) % a.batch == 0 or i == len(step) - 1:
                fh.flush()
                marks.flushed(s)
                time.sleep(a.delay)


def write_wandb(out: Path, a) -> None:
    import wandb

    step, loss, grad = curve(a.steps, a.spike, a.nan)
    marks = Marks(a.mark, [a.spike, a.nan])
    run = wandb.init(mode="offline", dir=str(out), project="watch-test", name="watched", settings=wandb.Settings(
        silent=True, console="off", x_disable_stats=True) if hasattr(wandb, "Settings") else None)
    for i, s in enumerate(step.tolist()):
        run.log({"train/loss": float(loss[i]), "train/grad_norm": float(grad[i])}, step=s)
        if (i + 1) % a.batch == 0 or i == len(step) - 1:
            marks.flushed(s)
            time.sleep(a.delay)
    run.finish()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("kind", choices=("tb", "text", "wandb"))
    p.add_argument("out")
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--spike", type=int, default=None)
    p.add_argument("--nan", type=int, default=None)
    p.add_argument("--batch", type=int, default=20)
    p.add_argument("--delay", type=float, default=0.1)
    p.add_argument("--mark", default=None)
    a = p.parse_args()
    {"tb": write_tb, "text": write_text, "wandb": write_wandb}[a.kind](Path(a.out), a)


if __name__ == "__main__":
    main()
