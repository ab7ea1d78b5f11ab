"""One answer to "did this run log any training?" (`detect.trained.logged_training`), asked by the
slowdown notes (`throughput.untrained_slowdowns`) and by the plan of a run's counter (`ended`). They
used to ask it two ways and disagreed on two kinds of run, both written here as their tools print them:
- a training bar that shows a learning rate beside its speed (`100%|... 3.1it/s, lr=0.0003`): its main
  curve is the speed, so `ended` took the bar's total for no plan and called the error the run printed
  after reaching it a crash, though the bar trained to its end;
- a curve of no known role beside a speed (`energy`, `value`): `throughput` found nothing of training in
  it, `ended` judged it by that curve as a training.
What stays as it was: a data-preparation bar's speed alone is no training (its slowdown a note, its
error after the bar's total a crash)."""
from __future__ import annotations

import numpy as np

from conftest import analyzed_run
from spikelens.detect.trained import logged_training

TRACEBACK = ('Traceback (most recent call last):\n  File "train.py", line 88, in <module>\n    save(model)\n'
             "OSError: [Errno 28] No space left on device\n")


def _bar(total: int = 400, every: int = 8, slow_from: int | None = None) -> str:
    """A tqdm training bar as a log file keeps it (one redraw a line), with its postfix; its speed
    falls to a third from `slow_from` on."""
    rng = np.random.default_rng(3)
    lines = []
    for i in range(every, total + 1, every):
        rate = (1.0 if slow_from is not None and i >= slow_from else 3.1) + 0.05 * rng.standard_normal()
        lr = 3e-4 * (1 - i / (total + 1))
        lines.append(f"Training: {100 * i // total:3d}%|#####     | {i}/{total} [01:{i % 60:02d}<00:10, "
                     f"{rate:.2f}it/s, lr={lr:.6f}]")
    return "\n".join(lines) + "\n"


def _ended(run) -> list:
    return [f for f in run.findings if f.kind == "ended_early" and not f.evidence.get("launch_crashed")]


def test_the_roles_that_say_training():
    assert logged_training({"it/s": "throughput", "lr": "lr"})
    assert logged_training({"energy": "other", "it/s": "throughput"})
    assert not logged_training({"sample/s": "throughput"})
    assert not logged_training({"it/s": "throughput", "epoch": "other", "elapsed": "other", "%": "other"})
    assert not logged_training({"step_time": "step_time", "max_mem_gib": "memory"})


def test_SL306_a_training_bar_with_a_learning_rate_finished_its_plan(tmp_path):
    path = tmp_path / "train.log"
    path.write_text("Loading model...\n" + _bar() + TRACEBACK)
    (f,) = _ended(analyzed_run(path))
    assert f.severity == "info" and f.evidence.get("finished_plan") and f.evidence.get("planned_steps") == 400


def test_the_same_bar_whose_speed_fell_is_a_training_slowdown(tmp_path):
    """Both questions get the one answer: the bar that trained to its plan slowed down in training."""
    path = tmp_path / "train.log"
    path.write_text("Loading model...\n" + _bar(total=2400, slow_from=1700) + TRACEBACK)
    run = analyzed_run(path)
    (f,) = _ended(run)
    assert f.severity == "info" and f.evidence.get("finished_plan")
    drops = [f for f in run.findings if f.kind in ("throughput_drop", "step_time_rise")]
    assert drops and any(f.severity == "warning" for f in drops)
    assert not any(f.evidence.get("no_training_logged") for f in drops)


def test_a_data_preparation_bar_alone_still_crashed(tmp_path):
    path = tmp_path / "prep.log"
    bars = "".join(f"Tokenizing: {100 * i // 5000}%| | {i}/5000 [00:{k:02d}<00:10, 45{k}.1ex/s]\n"
                   for k, i in enumerate(range(500, 5001, 500)))
    path.write_text(bars + TRACEBACK)
    (f,) = _ended(analyzed_run(path))
    assert f.severity == "error" and "planned_steps" not in f.evidence
    # the bar's count is no training step: the crash came before training, at the log's start
    assert f.start_step == 500 and "before training logged any value" in f.message
