"""A job relaunched dozens of times is summed up, not listed launch by launch: more than
`LISTED_MAX` launches that crashed and were started again are one SL306 note (`ended._launch_crashes`:
how many, the steps they died after, the error they printed), and more than `LISTED_MAX` resumes that
each rolled back are one SL301 finding (`resume.rollbacks_finding`) that lists them in its evidence
(deblurgan's loss log held 121 launches, told as 103 findings one after another). A few are still
told one by one. Fixtures: nanoGPT console logs of a job that kept dying and being resumed, written here
as nanoGPT prints them."""
from __future__ import annotations

import pytest

from spikelens import api, diagnostics

PREAMBLE = "Using device cuda:0\nnumber of parameters: 123.59M\n"
SEGV = "Segmentation fault (core dumped) python train.py\n"


def _iters(start: int, stop: int) -> str:
    return "".join(f"iter {s}: loss {10.0 - 0.004 * s:.4f}, time 310.00ms, mfu 38.00%\n" for s in range(start, stop + 1))


def _relaunched(path, launches: int, died: str = SEGV):
    """Each launch resumes 50 steps before where the last one died (its last checkpoint) and goes 200 on."""
    text, start = PREAMBLE + _iters(0, 200), 150
    for _ in range(launches - 1):
        text += died + PREAMBLE + _iters(start, start + 200)
        start += 150
    path.write_text(text)
    with diagnostics.collecting():
        (run,) = api.analyze(path).runs
    return run


def test_SL306_eight_launch_crashes_are_one_note_listing_them(tmp_path):
    run = _relaunched(tmp_path / "train.log", 9)
    crashes = [f for f in run.findings if f.kind == "ended_early" and f.evidence.get("launch_crashed")]
    (f,) = crashes
    assert f.severity == "info" and len(f.evidence["launch_crashes"]) == 8
    assert f.message.startswith("8 launches crashed and were started again (after steps 200, 350, 500")
    assert "each printed: Segmentation fault" in f.message


def test_SL301_eight_rollbacks_are_one_finding_listing_them(tmp_path):
    run = _relaunched(tmp_path / "train.log", 9, died="")
    (f,) = [f for f in run.findings if f.kind == "resume_overlap"]
    assert len(f.evidence["rollbacks"]) == 8 and f.evidence["rolled_back_steps"] == 8 * 50
    assert f.message.startswith("8 launches resumed before the step the launch before them had reached")


@pytest.mark.parametrize("died", [SEGV, ""], ids=["crashes", "rollbacks"])
def test_three_launches_are_still_told_one_by_one(tmp_path, died):
    run = _relaunched(tmp_path / "train.log", 4, died=died)
    kind = "ended_early" if died else "resume_overlap"
    told = [f for f in run.findings if f.kind == kind and (f.evidence.get("launch_crashed") or not died)]
    assert len(told) == 3
