"""The catalog of human text: every kind and cause the tool reports has a page."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from spikelens.model.finding import Cause, Finding
from spikelens.detect.registry import DETECTORS
from spikelens.errors import UsageError
from spikelens.explain import catalog

KINDS = ("spike", "divergence", "nan", "oscillation", "level_shift", "noise", "outliers", "grad_norm_outlier", "overfitting",
         "loss_scale_collapse", "lr_discontinuity", "plateau", "sudden_drop", "resume_overlap", "step_reset",
         "repeated_data", "step_gap", "wallclock_gap", "ended_early", "empty_launch", "settings",
         "throughput_drop", "step_time_rise", "stall", "memory_growth", "rank_outlier")
CAUSES = ("grad_explosion", "lr_jump", "warmup_end", "fp16_overflow", "bad_batch", "data", "resume",
          "out_of_memory", "slowdown", "hardware", "setting", "policy_update")


def test_every_named_kind_and_cause_has_a_page():
    assert set(KINDS) <= set(catalog.names("kind"))
    assert set(CAUSES) == set(catalog.names("cause"))


@pytest.mark.parametrize("name", list(catalog.ENTRIES))
def test_pages_are_complete(name):
    e = catalog.ENTRIES[name]
    assert e.title and len(e.what) > 40 and len(e.why) > 40
    assert len(e.tries) >= 2 and all(t.strip() == t and len(t) > 20 for t in e.tries)
    assert all(r in catalog.ENTRIES for r in e.related), e.related
    assert name not in e.related


def test_registered_detector_kinds_and_cause_rules_have_pages():
    for cls in DETECTORS:
        assert catalog.get(cls.kind) is not None, cls.kind
    package = Path(catalog.__file__).parent.parent
    emitted = set()
    for path in [*package.joinpath("detect").glob("*.py"), package / "stitching.py"]:
        # class attributes `kind = "..."` and `Finding(kind="...")`, not numpy's argsort(kind=...)
        text = path.read_text(encoding="utf-8")
        emitted |= set(re.findall(r'(?:^\s*kind\s*=\s*|Finding\(\s*kind\s*=\s*)"([a-z_0-9]+)"', text, re.M))
    assert {"spike", "nan"} <= emitted
    assert emitted <= set(catalog.names("kind")), emitted - set(catalog.names("kind"))
    source = Path(catalog.__file__).with_name("causes.py")
    if source.exists():
        named = set(re.findall(r'Cause\(\s*"([a-z_0-9]+)"', source.read_text()))
        assert named and named <= set(catalog.names("cause")), named - set(catalog.names("cause"))


def test_the_fixes_engineers_use_are_there():
    text = " ".join(t for e in catalog.ENTRIES.values() for t in e.tries).lower()
    for fix in ("lower the learning rate", "warm-up", "clip the gradient norm", "bf16", "skip the batches",
                "data at that position", "optimizer state", "data-loader"):
        assert fix in text, fix


def test_lookup_by_name_alias_and_code():
    assert catalog.lookup("spike").name == "spike"
    assert catalog.lookup("FP16-overflow").name == "fp16_overflow"
    assert catalog.lookup("noise_summary").name == "noise"
    if any(c.code == "SL101" for c in DETECTORS):
        assert catalog.lookup("sl101").name == "spike"


def test_unknown_name_is_one_line_listing_the_known_ones():
    with pytest.raises(UsageError) as exc:
        catalog.lookup("wobble")
    msg = str(exc.value)
    assert "\n" not in msg and "'wobble'" in msg
    assert all(n in msg for n in (*KINDS, *CAUSES))


def _finding(kind="spike", causes=(), **ev):
    return Finding(kind=kind, code="SL101", run="r", metric="loss", severity="warning", message="m",
                   causes=list(causes), evidence=ev)


def test_next_steps_put_the_likely_cause_first():
    tips = catalog.next_steps(_finding(causes=[Cause("fp16_overflow", 0.9, "e")]))
    assert tips == [catalog.advice(t) for t in catalog.ENTRIES["fp16_overflow"].tries[:3]]
    plain = catalog.next_steps(_finding())
    assert plain == [catalog.advice(t) for t in catalog.ENTRIES["spike"].tries[:3]]


def test_a_weak_cause_comes_after_the_kind():
    tips = catalog.next_steps(_finding(causes=[Cause("bad_batch", 0.2, "e")]), limit=10)
    spike = [catalog.advice(t) for t in catalog.ENTRIES["spike"].tries]  # no steps: the words in their place
    assert tips[: len(spike)] == spike
    assert tips[len(spike)] == catalog.advice(catalog.ENTRIES["bad_batch"].tries[0])


def test_nan_from_the_first_point_gets_setup_tips():
    tips = catalog.next_steps(_finding("nan", first_nonfinite_step=1, nonfinite_points=100))
    assert tips[0] == catalog.NAN_FROM_START[0]
    later = catalog.next_steps(_finding("nan", first_nonfinite_step=500, last_finite=3.2))
    assert later[0] == catalog.advice(catalog.ENTRIES["nan"].tries[0])


@pytest.mark.parametrize("reading, wanted, unwanted", [
    ("breakthrough", "Stuck, then a breakthrough", "At chance"),
    ("chance", "At chance", "Stuck, then a breakthrough"),
    ("never", "Never moved", "Stuck, then a breakthrough"),
])
def test_a_plateau_gets_the_tips_of_its_own_reading(reading, wanted, unwanted):
    tips = catalog.next_steps(_finding("plateau", reading=reading), limit=10)
    assert any(t.startswith(wanted) for t in tips), tips
    assert not any(t.startswith(unwanted) for t in tips), tips
