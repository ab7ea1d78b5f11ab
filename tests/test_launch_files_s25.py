"""Sibling log files of one resumed run, one file per launch in one folder (`spikelens/launchfiles.py`, #24):
read as one run's launches when the names share a stem, the later ones name their launch (resume, continue,
attempt, from N, final) and their counter carries on or goes back into the first's; several runs in one
folder (names that differ by a setting, counters that start again) stay several runs.

The logs are nanoGPT's `train.py` stdout, printed with its own format strings
(`print(f"iter {iter_num}: loss {lossf:.4f}, time {dt*1000:.2f}ms, mfu {running_mfu*100:.2f}%")`) and the
traceback Python prints when a launch dies."""
from __future__ import annotations

from pathlib import Path

from spikelens import api, diagnostics
from spikelens.launchfiles import family

TRACEBACK = ("Traceback (most recent call last):\n  File \"train.py\", line 301, in <module>\n"
             "    torch.save(checkpoint, os.path.join(out_dir, 'ckpt.pt'))\n"
             "RuntimeError: [enforce fail at inline_container.cc:595] . unexpected pos 4746991936 vs 4746991836\n")


def _iters(start: int, stop: int, every: int = 10, level: float = 0.0) -> str:
    lines = []
    for s in range(start, stop + 1, every):
        loss = 2.0 + 8.0 / (1.0 + s / 50.0) + level + 0.02 * ((s * 7919) % 13 - 6) / 6
        lines.append(f"iter {s}: loss {loss:.4f}, time {310.0 + (s % 7):.2f}ms, mfu {38.0 + (s % 3) / 10:.2f}%\n")
    return "".join(lines)


def _runs(folder: Path):
    with diagnostics.collecting():
        return api.analyze(folder).runs


def _sources(run) -> list[str]:
    return [Path(s["source"]).name for s in run.segments]


def test_a_resume_logged_to_a_new_file_is_the_same_runs_next_launch(tmp_path, no_workers):
    (tmp_path / "train.log").write_text(_iters(0, 600))  # killed after iter 600; the checkpoint was at 500
    (tmp_path / "train_resume.log").write_text(_iters(500, 1000))
    (run,) = _runs(tmp_path)
    assert _sources(run) == ["train.log", "train_resume.log"]
    (overlap,) = [f for f in run.findings if f.kind == "resume_overlap"]
    assert overlap.start_step == 500


def test_an_earlier_launchs_error_is_a_launch_that_died_not_the_runs_end(tmp_path, no_workers):
    (tmp_path / "train_pd_30.log").write_text(_iters(0, 300) + TRACEBACK)
    (tmp_path / "train_pd_resume_from_30.log").write_text(_iters(300, 500))
    (run,) = _runs(tmp_path)
    assert _sources(run) == ["train_pd_30.log", "train_pd_resume_from_30.log"]
    ended = [f for f in run.findings if f.kind == "ended_early"]
    died = [f for f in ended if f.evidence.get("launch_crashed")]
    assert len(died) == 1 and "unexpected pos" in died[0].evidence["error_line"] and died[0].start_step == 300
    assert not any(f.severity == "error" for f in ended)  # the last launch ended without an error


def test_launches_are_ordered_by_their_counter_whatever_their_names_say(tmp_path, no_workers):
    (tmp_path / "train_original_1000.log").write_text(_iters(1, 1000))
    (tmp_path / "train_resume_attempt2.log").write_text(_iters(810, 1500))
    (tmp_path / "train_resume_attempt1_killed.log").write_text(_iters(810, 850))  # killed early, same checkpoint
    (run,) = _runs(tmp_path)
    assert _sources(run) == ["train_original_1000.log", "train_resume_attempt1_killed.log", "train_resume_attempt2.log"]


def test_runs_whose_names_differ_by_a_setting_stay_apart(tmp_path, no_workers):
    (tmp_path / "train_lr0.1.log").write_text(_iters(0, 500))
    (tmp_path / "train_lr0.01.log").write_text(_iters(0, 500, level=0.5))
    assert len(_runs(tmp_path)) == 2


def test_a_resume_that_counts_from_the_start_again_beside_two_plain_runs_stays_apart(tmp_path, no_workers):
    (tmp_path / "train_1.log").write_text(_iters(0, 500))
    (tmp_path / "train_2.log").write_text(_iters(0, 500, level=0.3))
    (tmp_path / "train_resume.log").write_text(_iters(400, 800))  # which of the two it resumed is not said
    assert len(_runs(tmp_path)) == 3


def test_a_fresh_start_named_as_a_resume_is_another_run(tmp_path, no_workers):
    (tmp_path / "train.log").write_text(_iters(0, 500))
    (tmp_path / "train_resume.log").write_text(_iters(0, 300, level=0.2))  # the counter starts again at 0
    assert len(_runs(tmp_path)) == 2


def test_the_stem_is_the_words_before_the_launch_word_or_the_name_without_its_numbers():
    assert family(Path("train_resume_gpu_fail.log")) == ("train", True)
    assert family(Path("train_pd_30.log")) == ("train_pd", False)
    assert family(Path("train_from_scratch.log")) == ("train_from_scratch", False)
    assert family(Path("train.log.1")) == ("train", False)
