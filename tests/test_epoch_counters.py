"""A counter that starts again every epoch by design is no relaunch: the epoch carries the
step on (no resume_overlap, no step_reset), even where the script prints a wrong total for
it. A log whose step really goes back is still told as one. Fixtures: console lines written
here as a custom script prints them (`epoch=E i=I/N total loss=...`)."""
from __future__ import annotations

import numpy as np

from spikelens import api, diagnostics


def _run(path):
    with diagnostics.collecting():
        (run,) = api.analyze(path).runs
    return run


def _kinds(run, *kinds):
    return [f for f in run.findings if f.kind in kinds]


def _lines(epochs: int, per_epoch: int, stated: int, seed: int = 3) -> str:
    rng = np.random.default_rng(seed)
    out, k = ["Beginning training 500 epochs, logging every 1, saving every 50.\n"], 0
    for e in range(epochs):
        for i in range(per_epoch):
            loss = 2.0 * np.exp(-k / 400) + 0.3 + 0.02 * rng.standard_normal()
            out.append(f"epoch={e} i={i}/{stated} total loss={loss:.5f} spectro loss={loss * 0.6:.5f}\n")
            k += 1
    return "".join(out)


def test_a_per_epoch_counter_that_runs_past_its_stated_total_is_no_rollback(tmp_path, no_workers):
    path = tmp_path / "overnight.log"
    path.write_text(_lines(epochs=3, per_epoch=700, stated=530))  # `i=699/530`: the total printed is wrong
    run = _run(path)
    assert not _kinds(run, "resume_overlap", "step_reset")
    steps = run.frame.filter(run.frame["metric"] == "total_loss").get_column("step")
    assert steps.is_sorted() and steps.n_unique() == 3 * 700


def test_a_per_epoch_counter_within_its_total_keeps_the_stated_width(tmp_path, no_workers):
    path = tmp_path / "train.log"
    path.write_text(_lines(epochs=3, per_epoch=530, stated=530))
    run = _run(path)
    steps = run.frame.filter(run.frame["metric"] == "total_loss").get_column("step")
    assert not _kinds(run, "resume_overlap", "step_reset") and int(steps.max()) == 2 * 530 + 529
