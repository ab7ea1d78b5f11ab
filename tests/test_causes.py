"""Cause rules: each planted precursor gives its cause first, with numbers in the evidence."""
from __future__ import annotations

import numpy as np
import pytest

import detector_cases as cases
from spikelens.detect import engine
from spikelens.detect.reconcile import reconcile
from spikelens.explain.engine import explain


def causes_of(metrics, segment_starts=()):
    ctx = cases.context(metrics, segment_starts=segment_starts)
    found = explain(reconcile(engine.run_detectors(ctx, engine.build_detectors()), ctx), ctx)
    spikes = [f for f in found if f.kind in ("spike", "nan")]
    assert spikes, [f.message for f in found]
    return [c.cause for c in spikes[0].causes], spikes[0]


def test_grad_explosion_precursor():
    got, f = causes_of(cases.spike(at=1500, precursor=True))
    assert got[0] == "grad_explosion"
    assert "train/grad_norm rose" in f.causes[0].evidence


def test_lr_jump():
    m = cases.spike(at=1500)
    s, lr = m["train/lr"]
    m["train/lr"] = (s, np.where(s >= 1499, lr * 10, lr))
    got, f = causes_of(m)
    assert got[0] == "lr_jump" and "10.0x" in f.causes[0].evidence


def test_warmup_end():
    got, _ = causes_of(cases.spike(at=105))
    assert got[0] == "warmup_end"


def test_fp16_overflow():
    m = cases.spike(at=1500)
    s = m["train/loss"][0]
    scale = np.full(s.size, 65536.0)
    for k in range(5):
        scale[s >= 1498 + k] /= 2
    m["loss_scale"] = (s, scale)
    got, f = causes_of(m)
    assert got[0] == "fp16_overflow" and "halved 5 times" in f.causes[0].evidence


def test_bad_batch_one_point():
    m = cases.clean(8)
    s, v = m["train/loss"]
    v = v.copy()
    v[1600] *= 2.5
    m["train/loss"] = (s, v)
    got, _ = causes_of(m)
    assert got[0] == "bad_batch"


def test_data_one_source():
    base = cases.spike(at=1500, seed=9)
    s, total = base["train/loss"]
    calm = cases.clean(10)["train/loss"][1]
    m = {"train/loss": (s, total), "train/loss_books": (s, total * 1.1), "train/loss_wiki": (s, calm),
         "train/grad_norm": base["train/grad_norm"], "train/lr": base["train/lr"]}
    ctx = cases.context(m)
    found = explain(reconcile(engine.run_detectors(ctx, engine.build_detectors()), ctx), ctx)
    for metric in ("train/loss", "train/loss_books"):
        f = next(f for f in found if f.kind == "spike" and f.metric == metric)
        assert f.causes[0].cause == "data" and "train/loss_wiki" in f.causes[0].evidence


def test_resume_boundary():
    got, _ = causes_of(cases.spike(at=1500), segment_starts=[1498])
    assert got[0] == "resume"


@pytest.mark.parametrize("planted", ["none"])
def test_no_precursor_no_invented_cause(planted):
    m = cases.spike(at=1500, recover=300)
    got, _ = causes_of(m)
    assert "grad_explosion" not in got and "lr_jump" not in got and "fp16_overflow" not in got


def _outlier_run(name, steps):
    from spikelens.model.finding import Finding
    from spikelens.model.report import RunReport

    f = Finding(kind="outliers", code="SL101", run=name, metric="train_loss", severity="info", message="m",
                evidence={"largest": [{"step": s, "ratio": 1.4} for s in steps], "steps": list(steps)})
    return RunReport(run=name, sources=[], segments=[], metrics={}, findings=[f])


def test_outlier_shared_by_runs_becomes_a_data_spike():
    from spikelens.explain.crossrun import link_runs
    from spikelens.model.report import Report

    report = Report(command="analyze", runs=[_outlier_run("a", [918, 946, 100]), _outlier_run("b", [918, 946, 200]),
                                             _outlier_run("c", [946, 300])])
    link_runs(report)
    for run in report.runs:
        spikes = {f.peak_step: f for f in run.findings if f.kind == "spike"}
        assert 946 in spikes and spikes[946].causes[0].cause == "data"
        assert not ({100, 200, 300} & set(spikes))
    # 918 is shared by 2 of 3 runs: a quorum, so a spike where it was an outlier
    assert 918 in {f.peak_step for f in report.runs[0].findings if f.kind == "spike"}


def test_a_lone_run_keeps_its_outliers():
    from spikelens.explain.crossrun import link_runs
    from spikelens.model.report import Report

    report = Report(command="analyze", runs=[_outlier_run("a", [918])])
    link_runs(report)
    assert [f.kind for f in report.runs[0].findings] == ["outliers"]


def test_data_one_source_when_the_peaks_wander_apart():
    """Noise moves a multi-point spike's peak: the per-source spikes start together but
    peak 8 steps apart; still one event in two sources, not in the third."""
    base = cases.spike(at=1500, seed=9)
    s, total = base["train/loss"]
    books = total * 1.1 * np.where((s >= 1506) & (s <= 1510), 1.8, 1.0)
    calm = cases.clean(10)["train/loss"][1]
    m = {"train/loss": (s, total), "train/loss_books": (s, books), "train/loss_wiki": (s, calm),
         "train/grad_norm": base["train/grad_norm"], "train/lr": base["train/lr"]}
    ctx = cases.context(m)
    found = explain(reconcile(engine.run_detectors(ctx, engine.build_detectors()), ctx), ctx)
    spikes = {f.metric: f for f in found if f.kind == "spike"}
    assert abs(spikes["train/loss_books"].peak_step - spikes["train/loss"].peak_step) > 5
    for metric in ("train/loss", "train/loss_books"):
        assert spikes[metric].causes[0].cause == "data", spikes[metric].causes


def test_a_fleet_spiking_at_one_step_names_a_few_runs_and_counts_them_all():
    """A bad shard seen by 60 runs: each run's spike gets the data cause with the count of
    the others and at most RUNS_NAMED names (every run naming every other is quadratic);
    a peak two steps off is the same batch, three steps off is not."""
    from spikelens.explain.crossrun import RUNS_NAMED, link_runs
    from spikelens.model.finding import Finding
    from spikelens.model.report import Report, RunReport

    def run(name: str, step: int) -> RunReport:
        f = Finding(kind="spike", code="SPK001", run=name, metric="loss", severity="warning", message="spike",
                    start_step=step, peak_step=step, end_step=step + 3)
        return RunReport(run=name, sources=[], segments=[], metrics={}, findings=[f])

    runs = [run(f"r{i:02d}", 700 + (2 if i == 7 else 0)) for i in range(60)] + [run("far", 703 + 3)]
    report = Report(command="analyze", runs=runs)
    link_runs(report)
    cause = report.runs[0].findings[0].causes[0]
    assert cause.cause == "data" and cause.numbers["n_runs"] == 59
    assert len(cause.numbers["runs"]) == RUNS_NAMED < 59 and "r00" not in cause.numbers["runs"]
    assert "59 other run(s)" in cause.evidence and "and 54 more" in cause.evidence
    assert report.runs[7].findings[0].causes[0].numbers["n_runs"] == 59  # 2 steps off: same batch
    assert not [c for c in report.runs[-1].findings[0].causes if c.cause == "data"]  # 706: 4 steps from 702
