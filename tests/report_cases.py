"""Reports built by hand for the renderer tests: stitched long frames made from
seeded synthetic curves, with findings placed where the curves have them.

The renderers only read the Report model, so these cover every branch (clean run,
spikes with causes, NaN after a blow-up, a resumed run with superseded points)
without depending on detectors or importers.
"""
from __future__ import annotations

import numpy as np
import polars as pl

from spikelens.model.finding import Cause, Finding
from spikelens.frame import SCHEMA
from spikelens.model.report import Report, RunReport


def curves(n: int, seed: int, warmup: int = 200, peak_lr: float = 3e-4) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    step = np.arange(n, dtype=np.int64)
    loss = (2.2 + 8.0 * np.exp(-step / (0.08 * n)) + 0.6 * (1 - step / n)) * np.exp(0.02 * rng.standard_t(4, n))
    lr = np.where(step < warmup, peak_lr * (step + 1) / warmup,
                  peak_lr * 0.5 * (1 + np.cos(np.pi * np.clip((step - warmup) / (n - warmup), 0, 1))))
    grad = 0.4 + 1.5 * np.exp(-step / (0.05 * n)) + 0.05 * np.abs(rng.standard_t(4, n))
    return {"step": step, "loss": loss, "grad_norm": grad, "lr": lr}


def spike(c: dict[str, np.ndarray], at: int, height: float, recover: int) -> None:
    s = c["step"]
    bump = np.where(s >= at, (height - 1) * np.exp(-(s - at) / max(recover / 4, 1)), 0.0)
    c["loss"] = c["loss"] * (1 + bump)
    before = (s >= at - 10) & (s <= at)
    c["grad_norm"] = np.where(before, c["grad_norm"] * (1 + 3.0 * (s - (at - 10)) / 10), c["grad_norm"])


def frame(run: str, source: str, metrics: dict[str, tuple[np.ndarray, np.ndarray]],
          segment: np.ndarray | None = None, superseded: dict[str, np.ndarray] | None = None) -> pl.DataFrame:
    """A stitched long frame: one row per (metric, step), `superseded` as given."""
    parts = []
    for m, (step, value) in metrics.items():
        parts.append(pl.DataFrame({
            "run": run, "source": source,
            "segment": np.zeros(step.size, np.uint32) if segment is None else segment[: step.size],
            "seq": np.zeros(step.size, np.uint64), "step": step, "wall_time": 1.7e9 + step.astype(float),
            "metric": m, "value": value,
            "superseded": np.zeros(step.size, bool) if not superseded or m not in superseded else superseded[m],
        }))
    f = pl.concat(parts).with_columns(seq=pl.int_range(pl.len(), dtype=pl.UInt64))
    return f.select([pl.col(c).cast(t) for c, t in {**SCHEMA, "superseded": pl.Boolean}.items()])


def stats(metric: str, step: np.ndarray, value: np.ndarray) -> dict:
    return {"main_metric": metric, "first_step": int(step[0]), "last_step": int(step[-1]),
            "first_value": float(value[0]), "last_value": float(value[-1]), "points": int(step.size)}


def clean_run() -> RunReport:
    c = curves(3000, seed=1)
    metrics = {"train/loss": (c["step"], c["loss"]), "train/grad_norm": (c["step"], c["grad_norm"]),
               "train/lr": (c["step"], c["lr"])}
    f = frame("clean-baseline", "runs/clean-baseline/metrics.csv", metrics)
    return RunReport(
        run="clean-baseline", sources=["runs/clean-baseline/metrics.csv"], formats=["csv"], points=f.height,
        segments=[{"segment": 0, "source": "runs/clean-baseline/metrics.csv", "first_step": 0, "last_step": 2999}],
        metrics={"train/loss": "loss", "train/grad_norm": "grad_norm", "train/lr": "lr"},
        findings=[Finding(kind="noise", code="SL150", run="clean-baseline", metric="train/loss", severity="info",
                          message="train/loss point-to-point noise is 2.1% (robust), typical for this batch size",
                          evidence={"noise": 0.021})],
        stats=stats("train/loss", c["step"], c["loss"]), frame=f)


def spiky_run() -> RunReport:
    c = curves(6000, seed=2)
    spike(c, 3204, 2.4, 40)
    spike(c, 5100, 1.8, 900)
    metrics = {"train/loss": (c["step"], c["loss"]), "train/grad_norm": (c["step"], c["grad_norm"]),
               "lr-AdamW": (c["step"], c["lr"])}
    src = "runs/gpt-small-3/events.out.tfevents.1700000000.host.1.0"
    f = frame("gpt-small-3", src, metrics)
    base = float(np.median(c["loss"][3150:3200]))
    findings = [
        Finding(kind="spike", code="SL101", run="gpt-small-3", metric="train/loss", severity="warning",
                message=f"train/loss spiked 2.40x at step 3204 ({c['loss'][3204]:.4g} vs {base:.4g} before) "
                        "and recovered in 56 steps",
                start_step=3203, peak_step=3204, end_step=3260, recovery="fast", magnitude=2.4,
                evidence={"peak_value": float(c["loss"][3204]), "baseline": base, "recovery_steps": 56},
                causes=[Cause("grad_explosion", 0.8, "train/grad_norm rose 4.0x over the 10 logged steps before "
                                                     "the spike"),
                        Cause("bad_batch", 0.2, "the spike is one logged point wide")]),
        Finding(kind="spike", code="SL101", run="gpt-small-3", metric="train/loss", severity="warning",
                message="train/loss spiked 1.80x at step 5100 and recovered in 712 steps",
                start_step=5099, peak_step=5100, end_step=5812, recovery="slow", magnitude=1.8,
                evidence={"recovery_steps": 712}),
        Finding(kind="grad_norm_outlier", code="SL160", run="gpt-small-3", metric="train/grad_norm",
                severity="info", message="train/grad_norm reached 4.1x its median at step 3204",
                peak_step=3204, start_step=3194, end_step=3205),
    ]
    return RunReport(
        run="gpt-small-3", sources=[src], formats=["tensorboard"], points=f.height,
        segments=[{"segment": 0, "source": src, "first_step": 0, "last_step": 5999}],
        metrics={"train/loss": "loss", "train/grad_norm": "grad_norm", "lr-AdamW": "lr"},
        findings=findings, stats=stats("train/loss", c["step"], c["loss"]), frame=f)


def nan_run() -> RunReport:
    c = curves(4000, seed=3)
    s = c["step"]
    blow = s >= 3500
    c["loss"] = np.where(blow, c["loss"] * np.exp((s - 3500) / 25.0), c["loss"])
    c["loss"][s >= 3610] = np.nan
    c["grad_norm"][s >= 3610] = np.inf
    scale_steps = np.arange(0, 4000, 10)
    scale = np.full(scale_steps.size, 65536.0)
    scale[scale_steps >= 3480] = 65536.0 / 2.0 ** np.minimum((scale_steps[scale_steps >= 3480] - 3470) // 10, 16)
    metrics = {"loss": (s, c["loss"]), "grad_norm": (s, c["grad_norm"]), "learning_rate": (s, c["lr"]),
               "loss_scale": (scale_steps, scale)}
    src = "runs/llama-fp16/trainer_state.json"
    f = frame("llama-fp16", src, metrics)
    findings = [
        Finding(kind="divergence", code="SL201", run="llama-fp16", metric="loss", severity="error",
                message="loss turned at step 3500 and rose 82x over 109 steps before going NaN",
                start_step=3500, magnitude=82.0,
                causes=[Cause("fp16_overflow", 0.7, "loss_scale halved 12 times between steps 3480 and 3600 "
                                                    "(65536 → 16)")]),
        Finding(kind="nan", code="SL210", run="llama-fp16", metric="loss", severity="error",
                message="loss became NaN at step 3610 and stayed NaN for the remaining 390 logged steps",
                start_step=3610, causes=[Cause("fp16_overflow", 0.7, "loss_scale halved 12 times before the NaN")]),
        Finding(kind="nan", code="SL210", run="llama-fp16", metric="grad_norm", severity="error",
                message="grad_norm became inf at step 3610", start_step=3610),
    ]
    return RunReport(
        run="llama-fp16", sources=[src], formats=["hf_trainer_state"], points=f.height,
        segments=[{"segment": 0, "source": src, "first_step": 0, "last_step": 3999}],
        metrics={"loss": "loss", "grad_norm": "grad_norm", "learning_rate": "lr", "loss_scale": "loss_scale"},
        findings=findings, stats=stats("loss", s, c["loss"]), frame=f)


def resumed_run() -> RunReport:
    """Two launches: the second restarted from step 2000 after the first logged up to 2199."""
    c = curves(4000, seed=4)
    # the second launch re-logs 2000..2199 and goes on to 3999
    steps = np.concatenate([c["step"][:2200], c["step"][2000:]])
    loss = np.concatenate([c["loss"][:2200], c["loss"][2000:] * 1.01])
    loss[2200 + 5: 2200 + 40] *= np.linspace(1.9, 1.02, 35)
    segment = np.concatenate([np.zeros(2200, np.uint32), np.ones(2000, np.uint32)])
    superseded = np.concatenate([np.arange(2200) >= 2000, np.zeros(2000, bool)])
    src = ["runs/bert-resume/version_0/metrics.csv", "runs/bert-resume/version_1/metrics.csv"]
    f = frame("bert-resume", src[0], {"loss": (steps, loss)}, segment=segment, superseded={"loss": superseded})
    findings = [
        Finding(kind="resume_overlap", code="SL301", run="bert-resume", metric=None, severity="info",
                message="launch 2 resumed at step 2000 after launch 1 had logged up to step 2199 "
                        "(200 steps re-logged; the old points are superseded)",
                extra={"resume_step": 2000, "rolled_back_from": 2199}),
        Finding(kind="spike", code="SL101", run="bert-resume", metric="loss", severity="warning",
                message="loss spiked 1.88x at step 2005 and recovered in 38 steps",
                start_step=2005, peak_step=2005, end_step=2043, recovery="fast", magnitude=1.88,
                evidence={"recovery_steps": 38},
                causes=[Cause("resume", 0.75, "the spike starts 5 steps after the resume at step 2000")]),
    ]
    return RunReport(
        run="bert-resume", sources=src, formats=["csv"], points=f.height,
        segments=[{"segment": 0, "source": src[0], "first_step": 0, "last_step": 2199},
                  {"segment": 1, "source": src[1], "first_step": 2000, "last_step": 3999}],
        metrics={"loss": "loss"}, findings=findings,
        stats=stats("loss", c["step"], np.concatenate([loss[:2000], loss[2200:]])), frame=f)


def sample_report() -> Report:
    return Report(command="analyze", runs=[spiky_run(), nan_run(), clean_run(), resumed_run()],
                  warnings=["runs/broken/events.out.tfevents.1: truncated record at byte 4120 skipped"])


def metrics_run(layers: int = 24) -> RunReport:
    """A run that logs more than the panels draw (HF Trainer and Megatron style): accuracy,
    MFU, tokens/s, a reward and one grad norm per layer, and a loss that never fell, whose
    info plateau heads the verdict ('never learned')."""
    c = curves(5000, seed=5)
    step = c["step"]
    rng = np.random.default_rng(5)
    flat = 0.6931 + 0.01 * rng.standard_normal(step.size)
    metrics = {"train/loss": (step, flat), "train/grad_norm": (step, c["grad_norm"]), "train/lr": (step, c["lr"]),
               "eval/accuracy": (step[::50], 0.5 + 0.01 * rng.standard_normal(step[::50].size)),
               "perf/mfu": (step, 0.41 + 0.01 * rng.standard_normal(step.size)),
               "perf/tokens_per_sec": (step, 1.2e5 + 900 * rng.standard_normal(step.size)),
               "rl/reward": (step, np.cumsum(rng.standard_normal(step.size)) * 0.01)}
    for i in range(layers):
        metrics[f"layers/{i}/grad_norm"] = (step, c["grad_norm"] * (1 + i / layers))
    roles = {"train/loss": "loss", "train/grad_norm": "grad_norm", "train/lr": "lr", "eval/accuracy": "accuracy",
             "perf/mfu": "other", "perf/tokens_per_sec": "throughput", "rl/reward": "reward"}
    roles.update({f"layers/{i}/grad_norm": "other" for i in range(layers)})
    f = frame("never-learned", "runs/never-learned/trainer_state.json", metrics)
    plateau = Finding(kind="plateau", code="SL401", run="never-learned", metric="train/loss", severity="info",
                      message="train/loss stayed at 0.6931 (ln 2, chance for 2 classes) from its first step",
                      start_step=10, end_step=4990, evidence={"never_learned": True, "level": 0.6931,
                                                              "chance_classes": 2})
    return RunReport(
        run="never-learned", sources=["runs/never-learned/trainer_state.json"], formats=["hf_trainer_state"],
        points=f.height, segments=[{"segment": 0, "source": "runs/never-learned/trainer_state.json",
                                    "first_step": 0, "last_step": 4999}],
        metrics=roles, findings=[plateau], stats=stats("train/loss", step, flat), frame=f)
