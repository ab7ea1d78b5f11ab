"""Every refusal names its reason (#24): a file that is found and not read is said why, in one
line naming the file: empty, binary, not text, only banners, a table without numbers, a JSON
that is a config or a summary, a log whose numbers stand in a config dump; a console log passed
over in a folder whose other logs were read is named too (never silence); a run read without a
loss says so. Fixtures: files written here, as a user's folder would hold them."""
from __future__ import annotations

import json
import random

import polars as pl
import pytest

from conftest import main_in_process
from spikelens import api, diagnostics, passedover
from spikelens.errors import FormatError
from spikelens.importers.textlogs import TextLogImporter

BANNERS = "\n".join(["=" * 60, "  Welcome to the trainer", "=" * 60, "Loading model...", "Done."] * 20) + "\n"
CONFIG_DUMP = ("Namespace(lr=0.001, batch_size=32, epochs=10, seed=42)\nconfig:\n" +
               "".join(f"  {k}: {v}\n" for k, v in [("lr", 0.001), ("batch_size", 32), ("warmup_steps", 500),
                                                     ("max_steps", 10000), ("weight_decay", 0.1), ("hidden", 768),
                                                     ("layers", 12), ("heads", 12), ("dropout", 0.1), ("seed", 42)])
               + "Starting training...\nTraining finished.\n")


def _steps(n: int = 60) -> str:
    return "".join(f"step {s} | loss {4 - 0.01 * s:.4f} | lr 0.0003\n" for s in range(n))


def _odd(tmp_path, kind: str):
    """(folder holding one odd file, that file, the words its reason must hold)."""
    folder = tmp_path / kind
    folder.mkdir()
    if kind == "empty":
        path, words = folder / "train.log", "the file is empty"
        path.write_bytes(b"")
    elif kind == "binary":
        path, words = folder / "train.log", "binary data"
        path.write_bytes(random.Random(0).randbytes(5000))
    elif kind == "not_text":
        path, words = folder / "train.log", "no readable text"
        path.write_bytes(b"\xc5" * 3000)
    elif kind == "banners":
        path, words = folder / "train.log", "none of its 100 lines holds a number"
        path.write_text(BANNERS)
    elif kind == "csv_no_numbers":
        path, words = folder / "metrics.csv", "columns (name, split, status) hold no numbers"
        path.write_text("name,split,status\n" + "".join(f"run{i},train,ok\n" for i in range(30)))
    elif kind == "json_config":
        path, words = folder / "config.json", "a JSON object (model, data) that holds no series of numbers"
        path.write_text(json.dumps({"model": {"layers": 12, "hidden": 768}, "data": ["a", "b"]}))
    else:  # config_dump: every number of the log stands in its settings
        path, words = folder / "train.log", "10 lines hold numbers but none is read"
        path.write_text(CONFIG_DUMP)
    return folder, path, words


KINDS = ["empty", "binary", "not_text", "banners", "csv_no_numbers", "json_config", "config_dump"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_file_named_alone_is_refused_with_its_reason(tmp_path, capsys, kind):
    _, path, words = _odd(tmp_path, kind)
    code, out, err = main_in_process(capsys, "analyze", path, "--format", "json")
    assert code == 2 and out == ""
    (line,) = [ln for ln in err.splitlines() if ln.strip()]  # one line
    assert str(path) in line and words in line


@pytest.mark.parametrize("kind", KINDS)
def test_a_folder_with_nothing_read_names_each_file_and_why(tmp_path, capsys, kind):
    folder, path, words = _odd(tmp_path, kind)
    (folder / "model.pt").write_bytes(b"\x80\x02weights")  # not a log-like file: not listed
    code, _, err = main_in_process(capsys, "analyze", folder, "--format", "json")
    last = [ln for ln in err.splitlines() if ln.strip()][-1]
    assert code == 2 and path.name in last and words in last and "model.pt" not in last


def test_a_folder_lists_three_files_and_counts_the_rest(tmp_path):
    for i in range(5):
        (tmp_path / f"run{i}.log").write_text(BANNERS)
    with pytest.raises(Exception) as err:
        api.analyze(tmp_path)
    msg = str(err.value)
    assert "5 files looked at" in msg and "run2.log: none of its" in msg and "and 2 more" in msg
    assert "run3.log" not in msg


def test_a_console_log_beside_read_logs_is_named_not_passed_over_in_silence(tmp_path, no_workers):
    (tmp_path / "train.log").write_text(_steps())
    # an oumi-like startup log: numbers in its banners and settings, outnumbered by its prose, no record
    lines = [f"[2025-02-13 15:00:{i:02d},744][oumi][rank0][INFO] Setting up part {i} of the job" for i in range(12)]
    lines += ["Loading the model from the hub and checking its files"] * 30
    (tmp_path / "train.out").write_text("\n".join(lines) + "\n")
    with diagnostics.collecting():
        report = api.analyze(tmp_path)
    assert [r.run for r in report.runs] == ["train.log"]
    (note,) = [w for w in report.warnings if "train.out" in w]
    assert "passed over, not read as a log" in note and "12 lines hold numbers" in note
    assert not note.endswith("nothing was read from it")  # the folder's other log was read: check passes


def test_check_is_not_failed_by_a_passed_over_log(tmp_path, capsys, no_workers):
    (tmp_path / "train.log").write_text(_steps())
    (tmp_path / "notes.out").write_text("\n".join([f"epoch {i} took {i * 3} seconds and went fine" for i in range(12)]
                                                  + ["all good here, nothing to report"] * 30) + "\n")
    code, out, err = main_in_process(capsys, "check", tmp_path, "--format", "concise")
    assert code == 0 and "notes.out: passed over" in err


def test_a_summary_json_named_alone_says_it_is_a_summary(tmp_path):
    path = tmp_path / "wandb-summary.json"  # the run's last values, no history (W&B ends it without a newline)
    path.write_text(json.dumps({"bce_loss": 0.277, "epoch": 49, "_runtime": 383, "_step": 11749, "ACC": 0.65}))
    with pytest.raises(FormatError, match="holds no series of numbers: a config or a summary"):
        api.analyze(path)


def test_a_run_read_without_a_loss_says_so(tmp_path, no_workers):
    path = tmp_path / "speed.log"
    path.write_text("".join(f"step {s} | tok/s {1000 + s} | mem 12.5GiB\n" for s in range(40)))
    with diagnostics.collecting():
        report = api.analyze(path)
    assert report.runs and any("speed.log: no loss-like metric" in w and "--role TAG=loss" in w
                               for w in report.warnings)


# ------------------------------------------------------------------ the text reader's own refusals


def test_text_reader_refuses_an_empty_log(tmp_path):
    path = tmp_path / "train.log"
    path.write_text("\n  \n")
    with pytest.raises(FormatError, match="empty text log"):
        TextLogImporter().read(path)


def test_text_reader_refuses_a_log_of_banners_naming_what_it_looked_for(tmp_path):
    path = tmp_path / "train.log"
    path.write_text(BANNERS)
    with pytest.raises(FormatError, match="no known text-log line pattern matches .* hold no repeating keyed numbers"):
        TextLogImporter().read(path)


def test_a_console_log_with_no_keyed_number_names_its_numbered_lines(tmp_path, monkeypatch):
    from spikelens.importers import textlogs

    path = tmp_path / "train.log"
    path.write_text(_steps(30))
    empty = textlogs.read_general(iter([]))  # the reader's answer for a file none of whose lines it could key
    monkeypatch.setattr(textlogs, "read_general", lambda chunks, headers=(): empty)
    with pytest.raises(FormatError, match=r"no line held a keyed number \(30 lines hold numbers; the commonest, "
                                          r"30 lines like line 1: 'step 0 \| loss 4.0000 \| lr 0.0003'\)"):
        TextLogImporter()._read_general(path)


@pytest.mark.parametrize("body, words", [
    ("", "the file is empty"),
    ("\x00" * 200, "only NUL bytes"),
    ("   \n\n", "only white space"),
    ("[1, 2, 3]", "a JSON list of 3 items"),
    ("{bad json", "not valid JSON"),
    ('{"loss": [3.0, 2.0, 1.5], "acc": [0.1, 0.2, 0.3]}', "lists of numbers (loss, acc)"),
    ("3.5", "a single JSON value"),
])
def test_each_reason_for_a_json_file(tmp_path, body, words):
    path = tmp_path / "x.json"
    path.write_text(body)
    assert words in passedover.reason(path)


def test_reason_for_a_table_header_only_and_numeric_columns(tmp_path):
    path = tmp_path / "x.csv"
    path.write_text("a,b,c\n")
    assert "a header (a, b, c) and no rows" in passedover.reason(path)
    path.write_text("name,score\n" + "".join(f"r{i},{i * 0.5}\n" for i in range(10)))
    assert "numeric columns (score)" in passedover.reason(path)


def test_reason_for_numbered_lines_in_no_layout_gives_the_commonest_shape(tmp_path):
    path = tmp_path / "x.txt"  # tqdm bars with no keyed value: numbers a person reads, no record
    path.write_text("Training started at 06-06-2025 09:26:06\n"
                    + "".join(f"Training: {i}%| | {i * 3750}/300000 [00:{i:02d}<10:00, 12.5it/s]\n"
                              for i in range(1, 40)))
    why = passedover.reason(path)
    assert "hold numbers" in why and "the commonest" in why and "Training: " in why


def test_a_console_log_of_nuls_beside_a_read_log_is_named(tmp_path, no_workers):
    (tmp_path / "train.log").write_text(_steps())
    (tmp_path / "job.out").write_bytes(b"starting job 17\n" + b"\x00" * 4096)  # killed while writing
    with diagnostics.collecting():
        report = api.analyze(tmp_path)
    (note,) = [w for w in report.warnings if "job.out" in w]
    assert "NUL bytes" in note and note.endswith("nothing was read from it")


def test_an_importer_bug_is_one_line_naming_the_file_and_the_exception(tmp_path, capsys, monkeypatch, no_workers):
    def boom(self, path):
        raise ValueError("a reader's own bug")

    path = tmp_path / "train.log"
    path.write_text(_steps())
    monkeypatch.setattr(TextLogImporter, "read", boom)
    code, _, err = main_in_process(capsys, "analyze", path, "--format", "json")
    (line,) = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and str(path) in line and "could not read it (ValueError: a reader's own bug)" in line
    (tmp_path / "other.csv").write_text("step,loss\n" + "".join(f"{s},{4 - 0.01 * s}\n" for s in range(50)))
    code, _, err = main_in_process(capsys, "analyze", tmp_path, "--format", "json")  # in a folder: skipped, said
    assert code == 0 and "train.log: the text importer could not read it (ValueError" in err and "(skipped)" in err


def test_a_named_pattern_that_reads_no_value_says_so(tmp_path):
    from spikelens.importers.patterns import CATALOGUE

    path = tmp_path / "train.log"
    path.write_text(_steps(3))
    info = {"near_misses": pl.DataFrame({"row": [4], "line_no": [4], "text": ["step 4/10 | loss 3.1\x00"]})}
    with diagnostics.collecting() as said:
        TextLogImporter._warn(path, CATALOGUE[0], info, pl.DataFrame())
    cut, empty = said.lines
    assert str(path) in cut and "1 line(s) look like" in cut and "first at line 5: 'step 4/10 | loss 3.1'" in cut
    assert empty == f"{path}: matched the {CATALOGUE[0].name} pattern but held no readable values"
