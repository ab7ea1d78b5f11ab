"""A training journal kept by hand in Markdown (#24): pipe tables with a counter column read as curves,
emphasis and notes aside; settings tables and prose are no curve; a folder's walk never takes a README."""
from __future__ import annotations

import math

import pytest

from spikelens import api


def returns(n, start):
    return [round(-700 + 250 * (1 - math.exp(-i / 6)) + 10 * math.sin(i), 2) for i in range(start, start + n)]


def journal(first, milestones):
    lines = ["# PPO snake run", "", "## Configuration", "", "| Parameter | Value |", "|-----------|-------|",
             "| Algorithm | PPO |", "| Learning Rate | 1e-3 |", "| Total Iterations | 5000 |", "",
             "## Run 1", "", "Training went as below.", "", "| Step | AverageReturn | Status |",
             "|------|--------------|--------|"]
    lines += [f"| {s} | {v} | {'**Best so far**' if k == len(first) - 1 else 'Learning'} |"
              for k, (s, v) in enumerate(first)]
    lines += ["", "## Milestones", "", "| Milestone | AverageReturn |", "|-----------|--------------|"]
    lines += [f"| Step {s} | **{v}** (Final, Best) |" if k == len(milestones) - 1 else f"| Step {s} | {v} |"
              for k, (s, v) in enumerate(milestones)]
    return "\n".join(lines) + "\n"


def test_a_markdown_journal_reads_each_counted_table(tmp_path):
    first = list(zip(range(150, 3151, 250), returns(13, 0)))
    later = list(zip(range(500, 5001, 500), returns(10, 3)))
    path = tmp_path / "training_log.md"
    path.write_text(journal(first, later))
    (run,) = api.load_runs(path)
    part = run.frame.filter(run.frame["metric"] == "AverageReturn")
    assert set(run.frame["metric"]) == {"AverageReturn"}  # Status is text, the settings table no curve
    assert part["step"].to_list() == [s for s, _ in first] + [s for s, _ in later]
    assert part["value"].to_list() == pytest.approx([v for _, v in first] + [v for _, v in later])
    assert part["segment"].n_unique() == 2  # each table a listing of its own


def test_a_table_with_a_percent_and_an_epoch_column(tmp_path):
    path = tmp_path / "README-logs.md"
    rows = [(e, 6.5 * math.exp(-e / 20), 1.7 + e) for e in range(1, 31)]
    path.write_text("| Epoch | Train Loss | Train Acc |\n|---|---|---|\n"
                    + "".join(f"| {e} | {l:.4f} | {a:.2f}% |\n" for e, l, a in rows))
    (run,) = api.load_runs(path)
    part = run.frame.filter(run.frame["metric"] == "Train Loss").sort("step")
    assert part["step"].to_list() == list(range(1, 31))
    assert part["value"].to_list() == pytest.approx([round(l, 4) for _, l, _ in rows])


def test_tables_without_a_counter_are_not_claimed_and_a_folder_walk_skips_readmes(tmp_path):
    from spikelens.importers.markdowntables import MarkdownTableImporter

    path = tmp_path / "notes.md"
    text = "| Checkpoint | Loss |\n|---|---|\n" + "".join(f"| ckpt-{k} | {1.0 / k:.3f} |\n" for k in range(1, 20))
    path.write_text(text)
    assert not MarkdownTableImporter().claims_named(path, path.read_bytes())
    (tmp_path / "README.md").write_text(journal(list(zip(range(0, 1000, 100), returns(10, 0))), []))
    from spikelens.errors import NothingFound

    with pytest.raises(NothingFound):  # a README in a folder is no log, whatever tables it shows
        api.load_runs(tmp_path)
