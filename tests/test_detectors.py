"""Detectors: the registry, the class-definition checks, the contract over every case,
and per-detector cases that must fire and must stay silent (ids carry the code)."""
from __future__ import annotations

import copy
import json
from dataclasses import dataclass

import numpy as np
import pytest

import detector_cases as cases
from spikelens.detect import engine
from spikelens.detect.base import Detector
from spikelens.detect.reconcile import reconcile
from spikelens.detect.registry import DETECTORS
from spikelens.diagnostics import collecting

SCORED = {"spike", "divergence", "nan", "oscillation"}
CLEAN = {f"clean-{seed}-{interval}": (lambda seed=seed, interval=interval: cases.clean(seed, interval=interval))
         for seed in range(3) for interval in (1, 10)}
EVENTS = {"spike": cases.spike, "nan": cases.nan_at, "divergence": cases.diverge, "oscillation": cases.oscillate,
          "level_shift": cases.level_shift, "plateau": cases.plateau, "excursion": cases.excursion}
ALL_CASES = {**CLEAN, **EVENTS}


def _all_subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _all_subclasses(sub)


def run_all(metrics, detectors=None):
    ctx = cases.context(metrics)
    dets = detectors if detectors is not None else engine.build_detectors()
    return reconcile(engine.run_detectors(ctx, dets), ctx)


def test_every_detector_is_registered():
    defined = {c for c in _all_subclasses(Detector) if c.__module__.startswith("spikelens.")}
    assert defined <= set(DETECTORS), f"not in DETECTORS: {defined - set(DETECTORS)}"


def test_codes_are_unique_and_well_formed():
    codes = [d.code for d in DETECTORS]
    assert len(codes) == len(set(codes))
    assert all(c.startswith("SL") and len(c) == 5 for c in codes)


def test_bad_code_fails_at_definition():
    with pytest.raises(TypeError, match="code"):
        @dataclass(frozen=True, kw_only=True)
        class Bad(Detector):
            """Detects: x. Why it matters: x. Likely causes: x. Evidence: x."""
            code = "X1"
            kind = "bad"


def test_missing_doc_section_fails_at_definition():
    with pytest.raises(TypeError, match="sections"):
        class NoDoc(Detector):
            """Detects: only this."""
            code = "SL999"
            kind = "nodoc"


@pytest.mark.parametrize("det_cls", DETECTORS, ids=lambda d: d.code)
@pytest.mark.parametrize("case", sorted(ALL_CASES))
def test_contract(det_cls, case):
    """Pure, deterministic, default-constructible, JSON-serialisable; silent on clean runs."""
    metrics = ALL_CASES[case]()
    before = copy.deepcopy(metrics)
    det = det_cls()
    ctx = cases.context(metrics)
    first = engine.run_detectors(ctx, [det])
    second = engine.run_detectors(cases.context(metrics), [det])
    for m, (s, v) in metrics.items():
        np.testing.assert_array_equal(s, before[m][0])
        np.testing.assert_array_equal(v, before[m][1])
    assert [f.to_json() for f in first] == [f.to_json() for f in second]
    json.dumps([f.to_json() for f in first], allow_nan=False)
    for f in first:
        assert f.code == det.code and f.message and f.run == "case"
    if case.startswith("clean"):
        loud = [f.message for f in first if f.kind in SCORED or f.severity != "info"]
        assert not loud, loud


FIRE = [
    ("SL101", "spike", lambda: cases.spike(at=1500), 1500),
    ("SL101", "spike", lambda: cases.spike(at=2200, interval=10, height=3.0, recover=200), 2200),
    ("SL201", "nan", lambda: cases.nan_at(2000), 2000),
    ("SL202", "divergence", lambda: cases.diverge(1800), 1800),
    ("SL203", "oscillation", lambda: cases.oscillate(1200, 2000), 1200),
    ("SL204", "level_shift", lambda: cases.level_shift(2000), 2000),
    ("SL205", "plateau", cases.plateau, None),
    ("SL207", "excursion", lambda: cases.excursion(1800), 1950),
    ("SL207", "excursion", lambda: cases.excursion(1500, length=500, interval=10, noise=0.1), 1750),
]


@pytest.mark.parametrize("code,kind,make,at", FIRE, ids=[f"{c}-fires-{k}" for c, k, *_ in FIRE])
def test_fires(code, kind, make, at):
    found = [f for f in run_all(make()) if f.kind == kind and f.code == code]
    assert len(found) == 1, [f.message for f in run_all(make())]
    if at is not None:
        assert abs(found[0].anchor_step - at) <= max(0.05 * 3000, 30)


@pytest.mark.parametrize("code", [d.code for d in DETECTORS])
def test_silent_on_clean_heavy_tailed_noise(code):
    """Heavy-tailed per-batch noise is not an event for any scored kind."""
    rng = np.random.default_rng(11)
    m = cases.clean(7)
    s, v = m["train/loss"]
    m["train/loss"] = (s, v * np.exp(0.01 * rng.standard_t(3, size=s.size)))
    det = next(d for d in DETECTORS if d.code == code)()
    found = [f for f in engine.run_detectors(cases.context(m), [det]) if f.kind in SCORED]
    assert not found, [f.message for f in found]


@pytest.mark.parametrize("seed", range(3))
def test_no_level_shift_where_the_early_fall_bends(seed):
    """A loss still falling fast (here its decay speeds up at step 300, as when warm-up
    ends) bends faster than a window median can follow: not a level shift. The same
    3% step later in the run is one."""
    s = np.arange(3000, dtype=float)
    rng = np.random.default_rng(seed)
    bent = 2 + 9 * np.exp(-np.where(s < 300, s / 300, 1 + (s - 300) / 150))
    v = bent * np.exp(0.01 * rng.standard_normal(s.size))
    assert not [f for f in run_all({"train/loss": (s, v)}) if f.kind == "level_shift"]
    later = [f for f in run_all({"train/loss": (s, v * np.where(s >= 2000, 1.03, 1.0))}) if f.kind == "level_shift"]
    assert [abs(f.start_step - 2000) <= 25 for f in later] == [True]


def test_a_slow_spike_is_the_spike_detectors_not_an_excursion():
    """A bump that the spike detector sees (a fast enough rise) is reported once, as a spike; a
    bump that came back below 2x its level is only a note (significance.RECOVERED_LOUD)."""
    found = run_all(cases.excursion(1500, length=1000, interval=10, height=3.0))
    assert [f.kind for f in found if f.severity != "info"] == ["spike"]
    small = run_all(cases.excursion(1500, length=1000, interval=10, height=1.8))
    assert [f.kind for f in small if f.severity != "info"] == []
    assert "spike" in [f.kind for f in small]


def test_spike_recovery_classes():
    fast = [f for f in run_all(cases.spike(at=1500, recover=40)) if f.kind == "spike"]
    slow = [f for f in run_all(cases.spike(at=1000, recover=2000, height=3.0)) if f.kind == "spike"]
    assert [f.recovery for f in fast] == ["fast"]
    assert [f.recovery for f in slow] == ["slow"]
    m = cases.clean(3)
    s, v = m["train/loss"]
    m["train/loss"] = (s, v * np.where(s >= 2000, 1.6, 1.0))
    none = [f for f in run_all(m) if f.kind == "spike"]
    assert [f.recovery for f in none] == ["none"] and none[0].end_step is None


def test_one_point_blip_is_a_spike_with_info_severity():
    m = cases.clean(4)
    s, v = m["train/loss"]
    v = v.copy()
    v[1700] *= 2.5
    m["train/loss"] = (s, v)
    found = [f for f in run_all(m) if f.kind == "spike"]
    assert len(found) == 1 and found[0].peak_step == 1700 and found[0].severity == "info"
    assert found[0].evidence["one_point"] is True


def test_flood_of_blips_is_summarised():
    m = cases.clean(5)
    s, v = m["train/loss"]
    v = v.copy()
    v[200::200] *= 2.5
    m["train/loss"] = (s, v)
    found = run_all(m)
    assert sum(f.kind == "spike" for f in found) <= 3
    summary = [f for f in found if f.kind == "outliers"]
    assert summary and summary[0].evidence["count"] >= 5
    largest = [item["ratio"] for item in summary[0].evidence["largest"]]
    assert largest == sorted(largest, reverse=True) and largest[0] > 2.0
    assert f"{summary[0].evidence['largest'][0]['step']} (" in summary[0].message
    # the summary is anchored at its largest outlier (where a reader, or a plot, looks first)
    assert summary[0].peak_step == summary[0].evidence["largest"][0]["step"]
    assert summary[0].magnitude == pytest.approx(largest[0])


def test_blip_inside_a_heavy_tail_is_summarised_even_when_the_next_point_is_still_high():
    """Heavy-tailed noise raises the bar for one-point spikes; a blip under that bar whose
    next point is still somewhat high (not calm) must still be counted and named in the
    outliers summary, not fall between the two."""
    rng = np.random.default_rng(21)
    m = cases.clean(8, n=6000)
    s, v = m["train/loss"]
    v = v * np.exp(0.02 * rng.standard_t(2, size=s.size))
    v[3000] = np.median(v[2990:3000]) * 1.9
    v[3001] = np.median(v[2990:3000]) * 1.2  # still high: not a calm neighbour
    m["train/loss"] = (s, v)
    found = run_all(m)
    spikes = [f.peak_step for f in found if f.kind == "spike"]
    summary = [f for f in found if f.kind == "outliers"]
    assert 3000 in spikes or (summary and 3000 in summary[0].evidence["steps"] + [
        item["step"] for item in summary[0].evidence["largest"]]), [f.message for f in found]


def test_spike_before_nan_belongs_to_the_nan():
    m = cases.nan_at(2000)
    s, v = m["train/loss"]
    v = v.copy()
    v[(s >= 1990) & (s < 2000)] *= np.linspace(1.5, 6, 10)
    m["train/loss"] = (s, v)
    kinds = [f.kind for f in run_all(m) if f.metric == "train/loss"]
    assert "nan" in kinds and "spike" not in kinds


def test_oscillation_is_reported_once_not_as_spikes():
    found = [f for f in run_all(cases.oscillate()) if f.metric == "train/loss" and f.kind in SCORED]
    assert [f.kind for f in found] == ["oscillation"]


def test_parameters_override_and_unknown_parameter_is_an_error():
    from spikelens.errors import ConfigError

    dets = engine.build_detectors({"spike": {"recovery_fast_steps": 10}})
    assert next(d for d in dets if d.kind == "spike").recovery_fast_steps == 10
    with pytest.raises(ConfigError, match="no parameter"):
        engine.build_detectors({"SL101": {"nope": 1}})


def test_crashing_detector_becomes_a_warning():
    @dataclass(frozen=True, kw_only=True)
    class Boom(Detector):
        """Detects: nothing. Why it matters: tests. Likely causes: none. Evidence: none."""
        code = "SL998"
        kind = "boom"

        def detect(self, series, ctx):
            raise RuntimeError("kaput")

    with collecting() as diag:
        out = engine.run_detectors(cases.context(cases.clean(0)), [Boom(), engine.build_detectors()[0]])
    assert out == [] or all(f.kind != "boom" for f in out)
    assert any("SL998" in line and "kaput" in line and "'case'" in line for line in diag.lines)


def test_a_flat_continuation_is_not_a_plateau_unless_it_sits_at_chance():
    """A log that starts late and is flat may be a converged loss; at ln(2) it is not."""
    s, v = cases.plateau()["train/loss"]
    fresh = [f for f in run_all({"train/loss": (s, v)}) if f.kind == "plateau"]
    late = [f for f in run_all({"train/loss": (s + 140_000, v)}) if f.kind == "plateau"]
    converged = [f for f in run_all({"train/loss": (s + 140_000, 1.7 * v)}) if f.kind == "plateau"]
    assert "the model is not learning" in fresh[0].message
    assert late[0].evidence["chance_classes"] == 2 and late[0].severity == "warning"
    assert converged == []


@pytest.mark.parametrize("ratio,kind", [(1.28, "outliers"), (1.6, "spike")])
def test_a_small_one_point_blip_is_summarised_even_in_a_quiet_run(ratio, kind):
    """In a quiet run a 1.28x single batch is far outside the noise (z ~ 32, over the
    tail bar), but one batch under 30% high is per-batch noise to a reader: summarised;
    a 1.6x one is a spike."""
    m = cases.clean(4, noise=0.005)
    s, v = m["train/loss"]
    v = v.copy()
    v[2000] *= ratio
    m["train/loss"] = (s, v)
    found = {f.kind: f for f in run_all(m) if f.kind in ("spike", "outliers")}
    assert list(found) == [kind]
    f = found[kind]
    assert (f.peak_step if kind == "spike" else f.evidence["largest"][0]["step"]) == 2000


def test_points_logged_twice_at_a_step_are_one_point():
    """Two writers logging the same metric (ranks, a copied log stitched as a parallel
    launch) give each step twice; detectors see one point a step, the mean."""
    step, value, wall = engine.one_per_step(np.array([1, 1, 2, 3, 3]), np.array([1.0, 3.0, 5.0, np.nan, 1.0]),
                                            np.array([10.0, 11.0, 12.0, 13.0, 14.0]))
    assert step.tolist() == [1, 2, 3] and value[:2].tolist() == [2.0, 5.0] and np.isnan(value[2])
    assert wall.tolist() == [10.0, 12.0, 13.0]


def test_a_log_stitched_with_its_own_copy_reads_as_the_log():
    """Identical copies (same wall times: a parallel launch) must not halve the point noise
    and turn a clean curve into level shifts."""
    import spikelens
    from conftest import FIXTURES

    alone = spikelens.analyze(FIXTURES / "jsonl" / "custom" / "metrics.jsonl").runs[0]
    both, _ = spikelens.stitch(FIXTURES / "jsonl" / "custom" / "metrics.jsonl",
                               FIXTURES / "jsonl" / "damaged" / "metrics.jsonl")
    assert [f.kind for f in both.runs[0].findings] == [f.kind for f in alone.findings] == ["nan"]
    assert both.runs[0].findings[0].message == alone.findings[0].message


def test_outliers_of_a_loss_that_goes_negative_are_excesses_not_ratios():
    """An RL actor loss crosses zero: its outliers are judged on its own scale, so the
    summary names the excess over the trend, not an 'x' ratio it never computed."""
    m = cases.clean(5)
    s, v = m["train/loss"]
    v = v - 3.0  # around zero, partly negative
    v[200::200] += 2.5
    m["train/loss"] = (s, v)
    summary = [f for f in run_all(m) if f.kind == "outliers"]
    assert summary and "above its trend" in summary[0].message
    assert "x)" not in summary[0].message
