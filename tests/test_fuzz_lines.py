"""Fuzz the line-based formats: damage in line L keeps every value of the lines before L.

For a fixture file of CSV (generic, Lightning, Keras, W&B exports), text logs (nanoGPT,
Megatron, llm.c, DeepSpeed, ...), JSONL histories and MLflow metric files, line L is
damaged (cut inside it, a byte flipped, junk inserted, the line duplicated or deleted).
The clean prefix, lines 0..L-1, is what a run killed at that moment would have left;
for every (run, metric) it reads, its (step, value) list must be the start of the same
list read from the damaged file, and of the list read from the intact file (text logs:
the values, since a line without a step takes the step of the next step line; MLflow:
as a multiset, since points are ordered by their timestamp). Loading never raises
anything but a `SpikelensError`.

HF `trainer_state.json` is one JSON document, so its property is about entries: a file
cut anywhere keeps every `log_history` entry that was complete before the cut.
"""
from __future__ import annotations

import json
import tempfile
from collections import Counter
from functools import lru_cache
from pathlib import Path

import pytest
from hypothesis import assume, event, given
from hypothesis import strategies as st

from conftest import FIXTURES
from fuzz_cases import fuzz_settings, load, per_metric, place, unit_of

SETTINGS = fuzz_settings()
DAMAGED_CASES = {"damaged", "not_logs", "not_exports"}
TEXT_SUFFIXES = {".csv", ".tsv", ".log", ".txt", ".jsonl", ""}


def line_files(family: str, *, under: str = "") -> list[Path]:
    root = FIXTURES / family / under
    out = []
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(FIXTURES)
        if not p.is_file() or p.suffix not in TEXT_SUFFIXES or DAMAGED_CASES & set(rel.parts):
            continue
        if p.suffix == "" and "metrics" not in rel.parts:  # MLflow: only metric files have no suffix
            continue
        if p.read_bytes().count(b"\n") >= 3:
            out.append(rel)
    return out


CORPUS = {
    "csv": line_files("csv") + line_files("check") + line_files("resumes", under="csv_clean")
    + line_files("resumes", under="lightning"),
    "text": line_files("text"),
    "wandb_exports": line_files("wandb_exports"),
    "mlflow": line_files("mlflow"),
}


def line_spans(data: bytes) -> list[tuple[int, int]]:
    """(start, end) of every line, the newline included in end."""
    spans, pos = [], 0
    while pos < len(data):
        nl = data.find(b"\n", pos)
        end = len(data) if nl < 0 else nl + 1
        spans.append((pos, end))
        pos = end
    return spans


def read_variant(rel: Path, data: bytes, warnings: list[str] | None = None) -> dict:
    """per_metric of the unit holding `rel`, with `rel`'s bytes replaced by `data`
    (the warning lines are appended to `warnings` when given)."""
    with tempfile.TemporaryDirectory() as tmp:
        copy, root = place(Path(tmp), rel)
        copy.write_bytes(data)
        out = load(unit_of(copy, root))
    if warnings is not None:
        warnings.extend(out.warnings)
    if out.error is not None or out.frame.height == 0:
        return {}
    return per_metric(out.frame)


@lru_cache(maxsize=None)
def intact(rel: Path) -> dict:
    return read_variant(rel, (FIXTURES / rel).read_bytes())


@lru_cache(maxsize=None)
def clean_prefix(rel: Path, end: int) -> dict:
    return read_variant(rel, (FIXTURES / rel).read_bytes()[:end])


def damage(data: bytes, start: int, end: int, kind: str, draw) -> bytes:
    if kind == "cut inside":
        return data[: draw(st.integers(start + 1, max(start + 1, end - 1)), label="cut at")]
    if kind == "flip":
        b = bytearray(data)
        b[draw(st.integers(start, end - 1), label="byte")] ^= draw(st.integers(1, 255), label="xor mask")
        return bytes(b)
    if kind == "insert junk":
        at = draw(st.integers(start, end - 1), label="insert at")
        return data[:at] + draw(st.binary(min_size=1, max_size=40), label="junk") + data[at:]
    if kind == "duplicate line":
        return data[:end] + data[start:end] + data[end:]
    return data[:start] + data[end:]  # delete line


def test_every_line_format_has_files():
    assert all(len(files) >= 2 for files in CORPUS.values()), {k: len(v) for k, v in CORPUS.items()}
    assert all(intact(rel) for rel in CORPUS["csv"][:3] + CORPUS["text"][:3])


def _check_lines(family: str, data) -> None:
    rel = data.draw(st.sampled_from(CORPUS[family]), label="file")
    raw = (FIXTURES / rel).read_bytes()
    spans = line_spans(raw)
    line = data.draw(st.sampled_from(range(1, len(spans))), label="damaged line")
    start, end = spans[line]
    kind = data.draw(st.sampled_from(["cut inside", "flip", "insert junk", "duplicate line", "delete line"]),
                     label="damage")
    damaged = read_variant(rel, damage(raw, start, end, kind, data.draw))
    before = clean_prefix(rel, start)
    full = intact(rel)
    if family == "text":
        # a line without a step (DeepSpeed's OVERFLOW) takes the step of the next step line, which the
        # prefix may not hold: compare values in order, and only when the prefix reads as the intact file does
        before, full, damaged = ({k: [v for _, v in pts] for k, pts in d.items()} for d in (before, full, damaged))
        consistent = all(full.get(k, [])[: len(p)] == p for k, p in before.items())
        event(f"{kind}: {'prefix has values' if before else 'empty prefix'}"
              f"{'' if consistent else ', prefix ends between a line and its step line'}")
        assume(consistent)
    else:
        event(f"{kind}: {'prefix has values' if before else 'empty prefix'}")
    for key, points in before.items():
        # MLflow points are ordered by their timestamp, which the damage may change; a CSV (a W&B
        # export is one) whose damaged line made a step go back without re-logging any step is read
        # sorted by step
        if family in ("mlflow", "csv", "wandb_exports"):
            assert not Counter(points) - Counter(full.get(key, [])), key
            assert not Counter(points) - Counter(damaged.get(key, [])), f"values before line {line + 1} lost: {key}"
            continue
        assert full.get(key, [])[: len(points)] == points, f"the clean prefix disagrees with the intact file: {key}"
        assert damaged.get(key, [])[: len(points)] == points, f"values before line {line + 1} lost: {key}"


# Regression tests for what the properties above found in the CSV importer (fixed since).


@pytest.mark.parametrize("how", ["cut inside a quoted field", "a stray quote", "a byte after a closing quote"])
def test_a_csv_with_one_bad_quoted_field_keeps_the_lines_before(how):
    """Found by test_wandb_export_damage_keeps_the_lines_before: a W&B chart export (every
    field quoted) cut inside line 3, as an interrupted download leaves it; an unquoted
    CSV with a stray `"`; a byte after a closing quote."""
    folder = {"a stray quote": "histories"}.get(how, "chart")
    rel = next(p for p in CORPUS["wandb_exports"] if p.parent.name == folder)
    raw = (FIXTURES / rel).read_bytes()
    start, end = line_spans(raw)[2]
    before = clean_prefix(rel, start)
    assert before
    if how == "cut inside a quoted field":
        bad = raw[: start + (end - start) // 2]
    else:
        at = raw.index(b'"', start + 1) + 1 if how != "a stray quote" else start + 3
        bad = raw[:at] + (b"\x01" if how != "a stray quote" else b'"') + raw[at:]
    damaged = read_variant(rel, bad)
    for key, points in before.items():
        assert damaged.get(key, [])[: len(points)] == points


@SETTINGS
@given(data=st.data())
def test_csv_damage_keeps_the_lines_before(data):
    _check_lines("csv", data)


@SETTINGS
@given(data=st.data())
def test_text_log_damage_keeps_the_lines_before(data):
    _check_lines("text", data)


@SETTINGS
@given(data=st.data())
def test_wandb_export_damage_keeps_the_lines_before(data):
    _check_lines("wandb_exports", data)


@SETTINGS
@given(data=st.data())
def test_mlflow_metric_file_damage_keeps_the_lines_before(data):
    _check_lines("mlflow", data)


# ------------------------------------------------------------------ HF trainer_state.json

HF_FILES = [p.relative_to(FIXTURES) for p in sorted((FIXTURES / "hf").rglob("trainer_state.json"))
            if "damaged" not in p.parts] + [p.relative_to(FIXTURES) for p in sorted(
                (FIXTURES / "resumes").rglob("trainer_state.json"))]


def entry_ends(text: str) -> list[tuple[int, dict]]:
    """(end offset, entry) of every log_history entry, found with the json module."""
    doc = json.loads(text)
    at = text.index('"log_history"')
    at = text.index("[", at) + 1
    decoder = json.JSONDecoder()
    out = []
    for _ in doc["log_history"]:
        while text[at] in " \t\r\n,":
            at += 1
        obj, at = decoder.raw_decode(text, at)
        out.append((at, obj))
    return out


def read_alone(name: str, data: bytes) -> dict:
    """per_metric of one trainer_state.json read on its own (no checkpoint copies beside it)."""
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "run" / name
        f.parent.mkdir()
        f.write_bytes(data)
        out = load(f)
    if out.error is not None or out.frame.height == 0:
        return {}
    return per_metric(out.frame)


@SETTINGS
@given(data=st.data())
def test_hf_cut_anywhere_keeps_every_complete_entry(data):
    rel = data.draw(st.sampled_from(HF_FILES), label="file")
    raw = (FIXTURES / rel).read_bytes()
    entries = entry_ends(raw.decode())
    cut = data.draw(st.integers(entries[0][0] - 1, len(raw) - 1), label="cut at")
    got = read_alone(rel.name, raw[:cut])
    full = read_alone(rel.name, raw)
    complete = [e for end, e in entries if end <= cut]
    event("every entry complete" if len(complete) == len(entries) else "some entries cut off")
    for key, points in got.items():
        assert full.get(key, [])[: len(points)] == points, key  # a prefix of the intact file, nothing invented
    kept = {s for pts in got.values() for s, _ in pts}
    wanted = {e["step"] for e in complete
              if any(isinstance(v, (int, float)) and not isinstance(v, bool) and k not in ("step", "epoch")
                     for k, v in e.items())}
    in_full = {s for pts in full.values() for s, _ in pts}
    assert wanted & in_full <= kept, sorted(wanted & in_full - kept)


def test_a_nul_byte_in_a_csv_keeps_the_lines_before():
    """Found by test_wandb_export_damage_keeps_the_lines_before. A crash while appending
    often leaves NUL bytes in a file; one NUL in line 3 of a CSV loses every line."""
    rel = Path("csv/generic/metrics.csv")
    raw = (FIXTURES / rel).read_bytes()
    start, end = line_spans(raw)[2]
    before = clean_prefix(rel, start)
    assert before
    damaged = read_variant(rel, raw[:start + 3] + b"\x00" + raw[start + 3:])
    for key, points in before.items():
        assert damaged.get(key, [])[: len(points)] == points


def test_one_bad_step_cell_keeps_the_steps_of_the_lines_before():
    """Found by test_csv_damage_keeps_the_lines_before: a Lightning metrics.csv whose
    line 43 lost a comma (`0,,200,4.26` → `0-,200,4.26`, a byte flip) shifts a loss
    value into the step column; every row of the file then gets its row number as step."""
    rel = Path("resumes/lightning/version_0/metrics.csv")
    raw = (FIXTURES / rel).read_bytes()
    start, end = line_spans(raw)[42]
    before = clean_prefix(rel, start)
    assert before
    comma = raw.index(b",", start)
    damaged = read_variant(rel, raw[:comma] + b"-" + raw[comma + 1:])
    for key, points in before.items():
        assert damaged.get(key, [])[: len(points)] == points
