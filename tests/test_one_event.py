"""One event, one finding: a spike in a total and its components, a NaN in the loss, the
grad norm and the eval loss, an fp16 collapse behind a spike, an oscillation from where its
swings start; and metrics whose names mislead (`lr_scale`, `grad_norm_square`, normal fp16
loss scaling). Fixtures: `fixtures/writers/events.py`."""
from __future__ import annotations

import math
import re
import sys

import numpy as np
import pytest

import detector_cases as cases
import spikelens
from spikelens.detect import engine
from spikelens.detect.reconcile import reconcile
from spikelens.frame import infer_role, is_squared_norm
from spikelens.importers.base import TABLE_SCHEMA

from conftest import FIXTURES, loud as _loud

sys.path.insert(0, str(FIXTURES))
from writers import events as ev  # noqa: E402

EVENTS = FIXTURES / "events"


def _findings(path):
    (run,) = spikelens.analyze(path, jobs=1).runs
    return run


def test_spike_in_a_total_and_its_components_is_one_finding_on_the_total():
    run = _findings(EVENTS / "detectron2_spike" / "metrics.json")
    loud = _loud(run)
    assert [(f.kind, f.metric) for f in loud] == [("spike", "total_loss")], [f.message for f in loud]
    spike = loud[0]
    assert spike.peak_step == ev.SPIKE_ITER
    moved = {m["metric"]: m["ratio"] for m in spike.evidence["components_moved"]}
    assert set(ev.SPIKED) <= set(moved) and all(r > 1.5 for r in moved.values())
    assert not set(moved) & (set(ev.COMPONENTS) - set(ev.SPIKED))
    assert {a["metric"] for a in spike.evidence["also_on"]} <= set(ev.SPIKED)
    assert "moved with it" in spike.message
    assert all(c.cause != "data" for c in spike.causes)  # the whole model jumped, not one source


def test_a_component_that_spikes_alone_is_its_own_finding_with_cause_data():
    run = _findings(EVENTS / "detectron2_component" / "metrics.json")
    spikes = [f for f in run.findings if f.kind == "spike"]
    assert [(f.metric, f.peak_step) for f in spikes] == [(ev.ALONE, ev.SPIKE_ITER)]
    assert spikes[0].severity == "info" and spikes[0].evidence["note_because"] == "not_main"  # the total did not feel it
    assert spikes[0].causes and spikes[0].causes[0].cause == "data"
    assert spikes[0].causes[0].numbers["spiked"] == [ev.ALONE]


def test_main_loss_is_the_total_among_components_logged_as_often():
    run = _findings(EVENTS / "detectron2_component" / "metrics.json")
    assert run.stats["main_metric"] == "total_loss"


def test_nan_in_loss_grad_norm_and_val_loss_is_one_finding_on_the_loss():
    run = _findings(EVENTS / "nan_everywhere")
    loud = _loud(run)
    assert [(f.kind, f.metric, f.start_step) for f in loud] == [("nan", "train/loss", ev.NAN_STEP)]
    also = {a["metric"]: a["step"] for a in loud[0].evidence["also_on"]}
    assert also["train/grad_norm"] == ev.NAN_STEP
    assert also["val/loss"] == (ev.NAN_STEP // ev.VAL_EVERY + 1) * ev.VAL_EVERY - 1
    assert "went non-finite too" in loud[0].message


def test_an_oscillation_is_one_finding_from_where_its_swings_start():
    run = _findings(EVENTS / "oscillation_early.csv")
    assert not _loud(run), [f.message for f in _loud(run)]  # the trend kept falling through it: a note (#25)
    events = [f for f in run.findings if f.kind in ("oscillation", "spike", "excursion")]
    assert [f.kind for f in events] == ["oscillation"], [f.message for f in events]
    osc = events[0]
    assert abs(osc.start_step - ev.OSC_START) <= 0.01 * ev.OSC_STEPS, osc.message
    assert abs(osc.end_step - ev.OSC_END) <= 0.01 * ev.OSC_STEPS, osc.message


def test_normal_fp16_loss_scaling_is_silent():
    run = _findings(EVENTS / "fp16_normal")
    assert run.metrics["train/loss_scale"] == "loss_scale"
    assert _loud(run) == [], [f.message for f in _loud(run)]


def test_lr_scale_is_an_lr_multiplier_and_a_squared_norm_is_judged_by_its_root():
    assert infer_role("train/lr_scale") == "lr" and infer_role("loss_scale") == "loss_scale"
    assert is_squared_norm("train/grad_norm_square") and not is_squared_norm("train/grad_norm")
    run = _findings(EVENTS / "roles")
    assert run.metrics["train/lr_scale"] == "lr"
    assert run.metrics["train/grad_norm_square"] == "grad_norm"
    # the outlier is 6.25x as a square, 2.5x as a norm: under the 4x bar
    assert not [f for f in run.findings if f.kind in ("loss_scale_collapse", "grad_norm_outlier")], \
        [f.message for f in run.findings]
    assert _loud(run) == []


def test_squared_norm_series_hold_the_root():
    import polars as pl

    frame = spikelens.load(EVENTS / "roles")
    roles = spikelens.api.roles_of(frame)
    series = engine.series_of(frame, roles)
    raw = frame.filter(pl.col("metric") == "train/grad_norm_square").sort("step")["value"].to_numpy()
    assert np.allclose(series["train/grad_norm_square"].value, np.sqrt(raw))


def test_a_perplexity_judged_as_its_log_says_so_beside_its_numbers():
    """The detectors judge a perplexity that stands for the loss by its log; a message's
    numbers are on that scale, and the message says which scale they are on."""
    import polars as pl

    rng = np.random.default_rng(5)
    step = np.arange(2000)
    loss = 2 + 3 * np.exp(-step / 300) + 0.02 * rng.standard_normal(step.size)
    loss[1200:1210] += 2.0
    frame = pl.DataFrame({"step": step, "wall_time": None, "metric": "train/perplexity", "value": np.exp(loss)},
                         schema=TABLE_SCHEMA).with_columns(run=pl.lit("gpt"))
    (run,) = spikelens.analyze(frame).runs
    (spike,) = [f for f in run.findings if f.kind == "spike"]
    assert spike.metric == "train/perplexity" and "train/perplexity (as its log) spiked" in spike.message
    assert spike.evidence["peak_value"] == pytest.approx(float(np.max(loss[1200:1210])), abs=0.05)
    assert f"{spike.evidence['peak_value']:.4g}" in spike.message


def test_a_one_point_blip_in_a_short_run_is_one_note_not_a_loud_spike():
    """A run too short for a noise tail names its one blip as a one-point spike, a note
    (test_spike_shapes), once: never loud, never also an outliers summary."""
    run = _findings(EVENTS / "keras_blip" / "training.log")
    on_loss = [f for f in run.findings if f.metric == "loss" and f.kind in ("spike", "outliers")]
    assert [(f.kind, f.severity, f.peak_step) for f in on_loss] == [("spike", "info", ev.BLIP_EPOCH)]
    assert on_loss[0].evidence["one_point"]


def _collapse_around_spike():
    m = cases.spike(at=1500, height=3.0)
    s = m["train/loss"][0]
    scale = np.full(s.size, 65536.0)
    for k in range(7):  # halving again and again around the spike, each one a skipped step
        scale[s >= 1497 + k] /= 2
    m["train/loss_scale"] = (s, scale)
    return m


def test_a_loss_scale_collapse_around_a_spike_is_its_cause_not_a_second_alarm():
    ctx = cases.context(_collapse_around_spike())
    found = reconcile(engine.run_detectors(ctx, engine.build_detectors()), ctx)
    loud = [f for f in found if f.severity in ("warning", "error")]
    assert [(f.kind, f.metric) for f in loud] == [("spike", "train/loss")]
    collapse = [f for f in found if f.kind == "loss_scale_collapse"]
    assert collapse and collapse[0].severity == "info" and collapse[0].evidence["during"]["kind"] == "spike"
    assert loud[0].evidence["loss_scale_halvings"] == 7


def test_a_loss_scale_collapse_with_no_event_stays_loud():
    m = cases.clean(seed=3)
    s = m["train/loss"][0]
    scale = np.full(s.size, 65536.0)
    for k in range(8):
        scale[s >= 1500 + k] /= 2
    m["train/loss_scale"] = (s, scale)
    ctx = cases.context(m)
    found = reconcile(engine.run_detectors(ctx, engine.build_detectors()), ctx)
    assert [f.severity for f in found if f.kind == "loss_scale_collapse"] == ["warning"]


_NUMBER = re.compile(rb"-?\d+\.\d+(?:[eE][-+]?\d+)?")


def _same_but_last_bits(written: bytes, kept: bytes) -> bool:
    """The same text, each decimal number equal to 12 digits: NumPy's `exp` and sums may round a last
    bit otherwise on another CPU's SIMD path (AVX-512 or not), which the fixtures do not depend on."""
    if _NUMBER.sub(b"#", written) != _NUMBER.sub(b"#", kept):
        return False
    return all(math.isclose(float(a), float(b), rel_tol=1e-12, abs_tol=1e-300)
               for a, b in zip(_NUMBER.findall(written), _NUMBER.findall(kept)))


@pytest.mark.parametrize("name", ["detectron2_spike", "nan_everywhere", "fp16_normal", "keras_blip", "roles"])
def test_fixtures_are_what_the_writer_writes(tmp_path, name):
    ev.make(tmp_path)
    for p in (tmp_path / "events" / name).rglob("*"):
        if p.is_file():
            kept = (EVENTS / name / p.relative_to(tmp_path / "events" / name)).read_bytes()
            assert p.read_bytes() == kept or _same_but_last_bits(p.read_bytes(), kept), p.name


def test_the_early_fall_of_a_run_that_diverges_later_is_no_excursion():
    from spikelens.detect.excursions import ExcursionDetector

    rng = np.random.default_rng(0)
    s = np.arange(1, 5919)
    loss = (3.7 + 5.5 * np.exp(-s / 250.0)) * np.exp(0.02 * rng.standard_normal(s.size))
    loss = loss * np.exp(0.85 * (np.clip(s - 2000, 0, None) / 3918.0) ** 1.5)  # ends above where it began
    ctx = cases.context({"train_loss": (s, loss)})
    assert ExcursionDetector().detect(ctx.series["train_loss"], ctx) == []
    found = reconcile(engine.run_detectors(ctx, engine.build_detectors()), ctx)
    assert [f.kind for f in found if f.severity != "info"] == ["divergence"], [f.message for f in found]


def test_overfitting_on_several_eval_sets_is_one_finding():
    from spikelens.detect.grouping import group_events
    from spikelens.model.finding import Finding

    s = np.arange(0, 12_000, 400)
    falling = (s, 2.0 - s / 12_000)
    ctx = cases.context({"loss": falling, **{f"eval_g{k}_loss": falling for k in range(4)}})
    found = [Finding(kind="overfitting", code="SL206", run="case", metric=f"eval_g{k}_loss", severity="warning",
                     message=f"eval_g{k}_loss turned up", start_step=400 * (1 + k % 2), end_step=11_600)
             for k in range(4)]
    (one,) = group_events(found, ctx)
    assert {a["metric"] for a in one.evidence["also_on"]} == {f"eval_g{k}_loss" for k in range(4)} - {one.metric}
    assert "3 other metrics showed the same overfitting" in one.message


def test_a_component_that_steps_up_while_the_total_falls_is_a_note():
    rng = np.random.default_rng(5)
    s = np.arange(19, 4000, 20)
    noise = lambda: np.exp(0.02 * rng.standard_normal(s.size))  # noqa: E731
    cls = (0.3 + 2.6 * np.exp(-s / 600.0)) * noise()
    box = np.where(s >= 819, 0.7, 0.5) * noise()  # more foreground proposals: the box loss grows
    ctx = cases.context({"loss_cls": (s, cls), "loss_box_reg": (s, box), "total_loss": (s, cls + box)})
    found = reconcile(engine.run_detectors(ctx, engine.build_detectors()), ctx)
    spikes = [f for f in found if f.kind == "spike" and f.metric == "loss_box_reg"]
    assert spikes and spikes[0].recovery == "none"
    assert spikes[0].severity == "info" and "total_loss did not move" in spikes[0].message
    assert [f for f in found if f.severity != "info"] == []


def test_halvings_the_scaler_doubles_back_between_are_no_collapse():
    m = cases.clean(seed=4)
    s = m["train/loss"][0]
    scale = np.full(s.size, 32768.0)
    for k in range(6):  # halve, then double back two points later: six overflows, net 2x
        scale[s >= 1500 + 3 * k] /= 2
        scale[s >= 1502 + 3 * k] *= 2 if k < 5 else 1
    m["train/loss_scale"] = (s, scale)
    ctx = cases.context(m)
    found = reconcile(engine.run_detectors(ctx, engine.build_detectors()), ctx)
    (collapse,) = [f for f in found if f.kind == "loss_scale_collapse"]
    assert collapse.evidence["halvings"] == 6 and collapse.severity == "info", collapse.message
    assert "dynamic loss scaling at work" in collapse.message
