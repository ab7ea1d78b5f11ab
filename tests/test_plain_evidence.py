"""A finding's evidence holds Python numbers (`detect/reconcile.plain_numbers`, issue 25): a
library user compares, prints and `json.dumps` it as any dict. Detectors compute with NumPy, so
the overfitting's robust z, a divergence's largest-jump share and repeated data's drop came back
as `np.float64`; every finding is made plain where the judging ends.
Fixtures: an HF `trainer_state.json` (the overfitting suite's writer), the divergence fixture
that an LR cut ends, and a TensorBoard loss that dips and jumps back (repeated data)."""
from __future__ import annotations

import json

import numpy as np

from spikelens.detect.reconcile import plain_numbers
from spikelens.model.finding import Finding

from conftest import FIXTURES, only_run
from test_overfitting_judged import NOISY_RISE, TRAIN, _write

import sys

sys.path.insert(0, str(FIXTURES))
from writers import loudness as lw  # noqa: E402


def _numpy_leaves(x, path="") -> list[str]:
    if isinstance(x, dict):
        return [p for k, v in x.items() for p in _numpy_leaves(v, f"{path}/{k}")]
    if isinstance(x, (list, tuple)):
        return [p for v in x for p in _numpy_leaves(v, f"{path}[]")]
    return [path] if isinstance(x, (np.generic, np.ndarray)) else []


def _assert_plain(run, kind: str) -> None:
    found = [f for f in run.findings if f.kind == kind]
    assert found, f"no {kind} finding to check"
    for f in run.findings:
        assert _numpy_leaves(f.evidence) == [] and _numpy_leaves(f.extra) == [], (f.kind, f.evidence)
        assert f.magnitude is None or type(f.magnitude) is float
        json.dumps(f.evidence)  # no default= needed


def test_overfitting_divergence_and_repeated_data_evidence_is_plain_python(tmp_path):
    over = only_run(_write(tmp_path / "hf", TRAIN, NOISY_RISE).parent)
    _assert_plain(over, "overfitting")
    assert type(next(f for f in over.findings if f.kind == "overfitting").evidence["robust_z"]) is float
    _assert_plain(only_run(FIXTURES / "learning" / "lr_cut_rise.csv"), "divergence")
    _assert_plain(only_run(lw.undone_dip(tmp_path / "dip")), "repeated_data")


def test_plain_numbers_turns_nested_numpy_values_into_python_ones():
    f = Finding(kind="spike", code="SL101", run="r", metric="loss", severity="warning", message="m",
                magnitude=np.float32(2.5),
                evidence={"z": np.float64(3.5), "flag": np.bool_(True), "steps": np.array([1, 2]),
                          "also_on": [{"ratio": np.float64(1.5), "step": np.int64(7)}], "name": "x"},
                extra={"resume_step": np.int64(40)})
    plain_numbers(f)
    assert _numpy_leaves(f.evidence) == [] and _numpy_leaves(f.extra) == []
    assert f.evidence == {"z": 3.5, "flag": True, "steps": [1, 2], "also_on": [{"ratio": 1.5, "step": 7}], "name": "x"}
    assert type(f.evidence["flag"]) is bool and type(f.magnitude) is float and f.extra == {"resume_step": 40}
