"""Launches that logged nothing (header-only event files, W&B folders without history
rows) are segments with 0 points in the timeline, counted in the resume finding and the
verdict, and alone only a note. Fixtures: `fixtures/writers/empty_launches.py` (the real
TensorBoard EventFileWriter and the real wandb client); every expected number comes from
how the fixture was built."""
from __future__ import annotations

import json
import sys
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from conftest import FIXTURES, main_in_process, run_cli
from spikelens import api
from spikelens.report.markdown import render_markdown
from spikelens.report.verdict import segments_text, verdict

sys.path.insert(0, str(FIXTURES))
from writers import empty_launches as fx  # noqa: E402

ROOT = FIXTURES / "empty_launches"
SCHEMA = json.loads(resources.files("spikelens.report").joinpath("schema.json").read_text(encoding="utf-8"))


def only_run(report):
    (run,) = report.runs
    return run


def stitched(folder: str):
    report, _ = api.stitch(ROOT / folder)
    return only_run(report)


def analyzed(folder: str):
    return only_run(api.analyze(ROOT / folder, jobs=1))


def empties(run) -> list[dict]:
    return [s for s in run.segments if s["points"] == 0]


def test_header_only_files_between_two_launches_are_segments_with_no_points():
    run = stitched("tb_between")
    assert len(run.segments) == 4
    assert [s["points"] for s in run.segments] == [fx.N_FIRST, 0, 0, fx.N_LAST - fx.RESUME_AT]
    assert [s["launch"] for s in run.segments] == ["start", "empty", "empty", "rollback"]
    files = sorted((ROOT / "tb_between").iterdir())
    assert [Path(s["source"]).name for s in run.segments] == [f.name for f in files]
    for s, f in zip(empties(run), files[1:3]):  # start time from the file name, no steps
        assert s["first_wall_time"] == int(f.name.split(".")[3])
        assert s["first_step"] is None and s["last_step"] is None
    # the resume is judged as before; the empty launches are one info finding with their count
    by_kind = {f.kind: f for f in run.findings}
    assert by_kind["resume_overlap"].extra["resume_step"] == fx.RESUME_AT
    note = by_kind["empty_launch"]
    assert note.severity == "info" and note.code == "SL307"
    assert note.evidence["empty_launches"] == [1, 2] and note.evidence["launch_count"] == 4
    assert note.message.startswith("4 launches: 2 logged nothing (launches 2, 3)")
    assert verdict(run) == f"resumed with rollback at step {fx.RESUME_AT}; 2 of 4 launches logged nothing"
    assert segments_text(run) == f"4 segments (2 logged nothing; resumed at step {fx.RESUME_AT})"


def test_identical_restarts_count_the_launches_that_logged_nothing():
    run = stitched("tb_reruns")
    assert [s["launch"] for s in run.segments] == ["start", "empty", "rerun", "empty", "rerun"]
    appended = [f for f in run.findings if f.kind == "step_reset"]
    assert len(appended) == 1 and not [f for f in run.findings if f.kind == "empty_launch"]
    f = appended[0]
    assert f.message.startswith("5 launches: 2 logged nothing, 3 started from step 0; "
                                "3 runs appended to this log, each from step 0")
    assert f.evidence["restarts"] == 2 and f.evidence["empty_launches"] == [1, 3]
    assert f.evidence["reached_steps"] == [fx.N_RERUN - 1] * 2
    assert verdict(run) == ("3 runs appended to one log (each from step 0; the last one is judged); "
                            "2 of 5 launches logged nothing")


def test_a_lone_empty_restart_after_a_complete_run_is_a_note_not_a_warning():
    run = analyzed("tb_lone")
    assert [s["points"] for s in run.segments] == [fx.N_LONE, 0]
    assert [f.kind for f in run.findings] == ["empty_launch"]
    (f,) = run.findings
    assert f.severity == "info" and run.worst() == "info"
    assert f.start_step == fx.N_LONE - 1
    assert f.evidence["wallclock_gap_s"] == pytest.approx(fx.LONE_AFTER_S, abs=fx.STEP_S + 1)
    assert "launch 2 of 2 logged nothing" in f.message and "16 h 00 min after launch 1 stopped" in f.message
    assert verdict(run) == "clean (1 note)"


def test_a_header_only_file_another_rank_opened_with_the_launch_is_no_empty_launch():
    run = analyzed("tb_ranks")
    assert [s["launch"] for s in run.segments] == ["start", "parallel"]
    assert run.findings == [] and verdict(run) == "clean"


def test_a_wandb_launch_without_history_rows_is_an_empty_segment():
    run = analyzed("wandb")
    assert [s["points"] for s in run.segments] == [fx.N_WANDB, 0]
    assert run.segments[1]["launch"] == "empty"
    assert run.segments[1]["first_wall_time"] >= run.segments[0]["last_wall_time"]
    assert "offline-run-20240501_100000" in run.segments[1]["source"]
    assert [(f.kind, f.severity) for f in run.findings] == [("empty_launch", "info")]
    # every W&B launch writes run-<id>.wandb: the folder tells them apart
    assert f"offline-run-20240501_100000-{fx.WANDB_ID}/run-{fx.WANDB_ID}.wandb" in run.findings[0].message


def test_a_folder_of_header_only_files_is_still_nothing_read(tmp_path, capsys):
    folder = tmp_path / "crashed"
    folder.mkdir()
    for f in sorted((ROOT / "tb_between").iterdir())[1:3]:
        (folder / f.name).write_bytes(f.read_bytes())
    code, _, err = main_in_process(capsys, "analyze", folder, "--format", "json")  # in process: CI time
    assert code != 0 and "none holds a scalar value" in err


def test_json_and_markdown_show_the_empty_launches(tmp_path, capsys):
    code, out, err = main_in_process(capsys, "stitch", ROOT / "tb_between", "--format", "json")  # in process: CI time
    assert code in (0, 1), err
    data = json.loads(out)
    jsonschema.validate(data, SCHEMA)
    (run,) = data["runs"]
    assert [s["points"] for s in run["segments"]] == [fx.N_FIRST, 0, 0, fx.N_LAST - fx.RESUME_AT]
    assert [s.get("launch") for s in run["segments"]][1:3] == ["empty", "empty"]
    assert "first_step" not in run["segments"][1] or run["segments"][1]["first_step"] is None
    text = run_cli("stitch", ROOT / "tb_between", env={"COLUMNS": "200"}).stdout
    assert "4 launch(es) on one timeline" in text
    rows = [line for line in text.splitlines() if "events.out.tfevents" in line]
    assert [("empty" in r.split()) for r in rows] == [False, True, True, False]
    report, _ = api.stitch(ROOT / "tb_between")
    md = render_markdown(report)
    assert "4 segments (2 logged nothing; resumed at step 150)" in md
