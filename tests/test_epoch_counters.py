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


def _hf_dicts(epochs: int, per_epoch: int, loss0: float, seed: int) -> list[str]:
    """What HF Trainer prints to the console: `{'loss': ..., 'learning_rate': ..., 'epoch': ...}`
    (no step), an eval dict at each epoch's end, the train summary at the end."""
    rng = np.random.default_rng(seed)
    out, n = [], epochs * per_epoch
    for k in range(1, n + 1):
        loss = loss0 * np.exp(-3 * k / n) * (1 + 0.05 * rng.standard_normal())
        out.append(f"{{'loss': {loss:.4f}, 'learning_rate': {2e-5 * (1 - k / n):.3e}, 'epoch': {k / per_epoch:.2f}}}\n")
        if k % per_epoch == 0:
            out.append(f"{{'eval_loss': {loss * 1.1:.4f}, 'eval_runtime': 16.8, 'epoch': {k / per_epoch:.1f}}}\n")
    out.append(f"{{'train_runtime': 2331.9, 'train_loss': {loss0 / 5:.4f}, 'epoch': {float(epochs):.1f}}}\n")
    return out


def test_a_second_hf_training_appended_to_a_console_log_is_a_new_run(tmp_path, no_workers):
    path = tmp_path / "train_log.txt"  # the dicts carry no step: the step is their order
    path.write_text("".join(["Starting training\n", *_hf_dicts(3, 5, 1.6, 1), "Starting training\n",
                             *_hf_dicts(4, 5, 0.9, 2)]))
    run = _run(path)
    (f,) = [f for f in _kinds(run, "step_reset") if f.evidence.get("appended_runs")]
    assert f.severity == "info" and f.evidence["appended_runs"] == 2 and f.start_step == 0
    assert not [f for f in run.findings if f.kind == "spike" and f.severity != "info"]  # the new run's start


def test_one_hf_training_whose_epoch_only_rises_is_one_launch(tmp_path, no_workers):
    path = tmp_path / "train_log.txt"
    path.write_text("".join(_hf_dicts(4, 6, 1.6, 3)))
    run = _run(path)
    assert len(run.segments) == 1 and not _kinds(run, "step_reset", "resume_overlap")
