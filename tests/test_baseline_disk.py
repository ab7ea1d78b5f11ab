"""`spikelens check --baseline` / `--update-baseline` over a baseline of 10^5 runs (issue 28):
its entries on disk past `baselinedisk.HELD`, the file read and written an entry at a time.
Everything here compares the spilled baseline against the held one (the code as it was):
the same gates and reasons, the same file bytes, the same entries or message read back;
and a single-file findings dataset read in slices gives the table read whole."""
from __future__ import annotations

import gc
import io
import json
import random
import sys
import tracemalloc
from pathlib import Path

import polars as pl
import pytest

from spikelens import diagnostics, findings_data
from spikelens.check import (Baseline, BaselineEntry, Policy, _load_whole, _suffix_names, baseline_from, evaluate,
                             load_baseline, write_baseline)
from spikelens.config import Config
from spikelens.errors import InputError
from spikelens.model.finding import Finding
from spikelens.model.report import Report, RunReport
from spikelens.pipeline import baselinedisk, incremental, sweep
from spikelens.pipeline.baselinedisk import Entries
from spikelens.pipeline.runsummary import SpooledRuns
from spikelens.report.json_report import write_check_json

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
from writers import _sweep_reports as sweep_reports  # noqa: E402


def spilled(entries) -> Entries:
    """The entries in an `Entries` that goes to disk past one entry."""
    out = Entries(held=1)
    out.extend(entries)
    assert out.spilled or len(out) <= 1
    return out


def tricky_entries(n: int, seed: int = 0) -> list[BaselineEntry]:
    """Entries a sort or a JSON writer could get wrong: names that sort apart by byte and by code
    point, a lone surrogate (an odd file name), no metric, no step, big steps, duplicates."""
    rng = random.Random(seed)
    runs = ["a", "a/b", "b", "é/run", "Z", "run\udcff", "日本/x", "a b", ""]
    out = []
    for i in range(n):
        out.append(BaselineEntry(run=rng.choice(runs), metric=rng.choice(["train/loss", None, "eval/loss", ""]),
                                 kind=rng.choice(["spike", "nan", "plateau"]), code=rng.choice(["SL101", "SL201"]),
                                 step=rng.choice([None, 0, 5, 5, 2**62, -3, rng.randrange(10**6)]),
                                 severity=rng.choice(["info", "warning"]), message=f"m{i} \"quoted\" \u2603"))
    return out


# ---------------------------------------------------------------- the file

@pytest.mark.parametrize("n", [0, 1, 7, 300])
@pytest.mark.parametrize("on_disk", [False, True])
def test_the_baseline_file_is_the_bytes_of_the_whole_document(tmp_path, n, on_disk, monkeypatch):
    monkeypatch.setattr("spikelens.pipeline.extsort.CHUNK", 16)  # a sort of several files, merged
    entries = tricky_entries(n)
    base = Baseline(entries=spilled(entries) if on_disk else entries, fraction=0.125, min_steps=7)
    write_baseline(base, tmp_path / "b.json")
    whole = json.dumps(Baseline(entries=entries, fraction=0.125, min_steps=7).to_json(), indent=1,
                       allow_nan=False) + "\n"
    assert (tmp_path / "b.json").read_text(encoding="utf-8") == whole


def layouts(entries: list[BaselineEntry]) -> dict[str, str]:
    findings = [e.to_json() for e in entries]
    doc = {"schema": "spikelens.baseline/1", "window": {"fraction": 0.07, "min_steps": 123456789}}
    return {
        "ours": json.dumps({**doc, "findings": findings}, indent=1),
        "compact": json.dumps({**doc, "findings": findings}, separators=(",", ":")),
        "findings first, other keys": json.dumps({"findings": findings, "note": [1, {"x": None}], **doc}, indent=4),
        "no window, crlf, unicode kept": json.dumps({"schema": doc["schema"], "findings": findings},
                                                    ensure_ascii=False, indent="\t").replace("\n", "\r\n"),
        "a findings key nested too": json.dumps({**doc, "x": {"findings": [1]}, "findings": findings}),
    }


@pytest.mark.parametrize("block", [7, 1 << 16])
def test_a_baseline_reads_back_the_same_streamed_as_whole(tmp_path, monkeypatch, block):
    monkeypatch.setattr(baselinedisk, "BLOCK", block)  # values cut across blocks
    monkeypatch.setattr(baselinedisk, "HELD", 3)
    entries = [e for e in tricky_entries(40, seed=1) if "\udcff" not in e.run]  # ensure_ascii=False cannot write it
    for name, text in layouts(entries).items():
        p = tmp_path / "b.json"
        p.write_text(text, encoding="utf-8")
        streamed, whole = load_baseline(p), _load_whole(p)
        assert streamed.entries.spilled, name
        assert list(streamed.entries) == list(whole.entries) == entries, name
        assert (streamed.fraction, streamed.min_steps, streamed.path) == (whole.fraction, whole.min_steps,
                                                                        whole.path), name


BAD = [
    "{not json",
    '{"schema": "spikelens.baseline/1", "findings": [{"run": "r"}, {"run": "r", "kind": "k"}',  # bad entry, then cut
    '{"schema": "spikelens.baseline/1", "findings": [{"run": "r"}]}',
    '{"schema": "spikelens.baseline/1", "findings": [{"run": "r", "kind": "spike"}, {"run": "r", "kind": "s", '
    '"step": true}]}',
    '{"findings": [{"run": "r", "kind": "spike"}], "schema": "spikelens.report/1"}',
    '{"schema": "spikelens.baseline/1", "findings": {"run": "r"}}',
    '{"schema": "spikelens.baseline/1", "findings": [], "window": [1]}',
    '{"schema": "spikelens.baseline/1", "findings": [], "window": {"fraction": "x"}}',
    '{"schema": "spikelens.baseline/1", "findings": [{"run": "r", "kind": "k"}]} extra',
    '{"schema": "spikelens.baseline/1", "findings": [{"run": "r", "kind": "k"},]}',
    '{"schema": "spikelens.baseline/1", "findings": [{"run": "r", "kind": "k"}], "findings": []}',  # the last wins
    '{"schema": "spikelens.baseline/1", "findings": [1] , "window": null}',
    '\ufeff{"schema": "spikelens.baseline/1", "findings": []}',
    '["schema"]',
    '{"schema": "spikelens.baseline/1", "findings": [{"run": "r", "kind": "k", "step": 12',
    '{"schema": "spikelens.baseline/1", "findings": [{"run": "r", "kind": "k", "step": 1e400}]}',
]


@pytest.mark.parametrize("text", BAD)
def test_a_malformed_baseline_reads_as_it_did_whole(tmp_path, monkeypatch, text):
    monkeypatch.setattr(baselinedisk, "BLOCK", 5)
    p = tmp_path / "b.json"
    p.write_text(text, encoding="utf-8")

    def outcome(load):
        try:
            b = load(p)
        except InputError as exc:
            return str(exc)
        return list(b.entries), b.fraction, b.min_steps

    assert outcome(load_baseline) == outcome(_load_whole)


def test_a_bad_byte_reads_as_it_did_whole(tmp_path):
    p = tmp_path / "b.json"
    p.write_bytes(b'{"schema": "spikelens.baseline/1", "findings": [{"run": "\xff", "kind": "k"}]}')
    with pytest.raises(InputError) as streamed:
        load_baseline(p)
    with pytest.raises(InputError) as whole:
        _load_whole(p)
    assert str(streamed.value) == str(whole.value)


# ---------------------------------------------------------------- the gate

def report_of(runs: dict[str, list[tuple]], last_step: int = 1000) -> Report:
    out = []
    for name, found in runs.items():
        seg = [{"segment": 0, "source": f"{name}/m.csv", "first_step": 0, "last_step": last_step}]
        fs = [Finding(kind=kind, code="SL101", run=name, metric=metric, severity="warning", recovery="none",
                      message=f"{kind} at {step}", start_step=step, peak_step=step) for kind, metric, step in found]
        out.append(RunReport(run=name, sources=[f"{name}/m.csv"], segments=seg, metrics={"train/loss": "loss"},
                             findings=fs))
    return Report(command="analyze", runs=out)


def gates(result) -> list[tuple]:
    return [(r.run, f.kind, f.anchor_step, result.gate(f).status, result.gate(f).reason)
            for r in result.report.runs for f in r.findings]


def test_a_spilled_baseline_gates_as_a_held_one():
    """Exact names, names recorded shorter or longer (path suffixes), an ambiguous suffix (two
    recorded names fit: no match), a finding between two entries at the same distance, more
    findings than entries, run-level findings (no metric, no step)."""
    recorded = {
        "exact": [("spike", "train/loss", 500), ("spike", "train/loss", 520), ("nan", "train/loss", 10)],
        "logs": [("spike", "train/loss", 300)],  # now deep/logs
        "team/long/name": [("spike", "train/loss", 100)],  # now long/name
        "x/amb": [("spike", "train/loss", 50)], "y/amb": [("spike", "train/loss", 50)],  # now amb: two fit
        "gone": [("spike", "train/loss", 1)],
        "runlevel": [("step_reset", None, None), ("spike", "train/loss", 700)],
        "tie": [("spike", "train/loss", 90), ("spike", "train/loss", 110)],
    }
    current = {
        "exact": [("spike", "train/loss", 510), ("spike", "train/loss", 505), ("spike", "train/loss", 515),
                  ("nan", "train/loss", 11), ("nan", "eval/loss", 10)],
        "deep/logs": [("spike", "train/loss", 310)],
        "long/name": [("spike", "train/loss", 90)],
        "amb": [("spike", "train/loss", 50)],
        "runlevel": [("step_reset", None, None), ("spike", "train/loss", None)],
        "tie": [("spike", "train/loss", 100), ("spike", "train/loss", 100)],
        "new": [("spike", "train/loss", 1)],
    }
    held = baseline_from(report_of(recorded))
    assert not held.entries.spilled
    disk = Baseline(entries=spilled(held.entries))
    rep = report_of(current)  # one report: a tie between two findings goes by id(finding)
    for policy in (Policy(fail_on="error", ignore=["nan"]), Policy()):
        a, b = evaluate(rep, policy, held), evaluate(rep, policy, disk)
        assert gates(a) == gates(b)
        assert json.dumps(a.to_json()) == json.dumps(b.to_json())
    statuses = [g[3] for g in gates(a)]  # the default policy's
    assert statuses.count("baselined") >= 6 and "fail" in statuses  # the case did give the matcher work


def test_suffix_names_on_disk_are_the_held_ones():
    rng = random.Random(3)
    parts = ["a", "b", "c", "", "ü"]
    for trial in range(200):
        def name() -> str:
            return "/".join(rng.choice(parts) for _ in range(rng.randint(1, 4)))

        recorded = [name() for _ in range(rng.randint(1, 8))]
        current = list(dict.fromkeys(name() for _ in range(rng.randint(1, 8))))
        disk = spilled(BaselineEntry(run=r, metric=None, kind="k", code="", step=None) for r in recorded * 2)
        if not disk.spilled:
            continue
        names = disk.names().build(lambda: iter(current))
        expected = _suffix_names(lambda: iter(current), set(recorded))
        assert {c: names.get(c) for c in current if names.get(c) is not None} == expected, (recorded, current)


def _spooled_sweep(monkeypatch, tmp_path: Path, n: int, findings: Path | None = None):
    monkeypatch.setattr(sweep, "source_groups", sweep_reports.groups(n))
    monkeypatch.setattr(sweep, "execute", sweep_reports.executor(make=sweep_reports.linked_report))
    monkeypatch.setattr(sweep, "SPOOL_FROM", 2)
    monkeypatch.delenv(sweep.SPOOL_ENV, raising=False)
    monkeypatch.setattr(incremental, "group_key", sweep_reports.group_key)
    monkeypatch.setattr(incremental, "fingerprint", sweep_reports.fingerprint)
    (tmp_path / "logs").mkdir(parents=True, exist_ok=True)
    report = sweep.analyze_roots([tmp_path / "logs"], Config(), keep_frames=False, spool=tmp_path / "spool",
                                 findings=findings)
    assert isinstance(report.runs, SpooledRuns)
    return report


def test_check_update_baseline_then_baseline_over_a_spooled_sweep_is_the_same_on_disk(monkeypatch, tmp_path):
    """The CLI's two steps over a sweep whose reports wait on disk: the baseline held (HELD
    large) and on disk (HELD 5) give the same file and the same check JSON, and a baseline
    recorded a few steps off, under other names, gates the same way."""
    report = _spooled_sweep(monkeypatch, tmp_path, 40)
    out = {}
    for held in (10**9, 5):
        monkeypatch.setattr(baselinedisk, "HELD", held)
        path = tmp_path / "b.json"  # the same path both times: the policy names it
        policy = Policy(baseline=str(path), fail_on="info")
        result = evaluate(report, policy, None)
        fresh = baseline_from(result.report)
        assert fresh.entries.spilled == (held == 5)
        write_baseline(fresh, path)
        fresh.path = "b.json"
        after = io.StringIO()
        write_check_json(evaluate(report, policy, fresh), after, 0)
        # recorded elsewhere: steps moved, one run renamed longer, one shorter, one gone
        moved = json.loads(path.read_text())
        for i, e in enumerate(moved["findings"]):
            if e["step"] is not None:
                e["step"] += (i % 7) * 9 - 27
            e["run"] = {"solo_1": "x/solo_1", "g0/run": "run", "solo_5": "gone"}.get(e["run"], e["run"])
        (tmp_path / "moved.json").write_text(json.dumps(moved, indent=1))
        against = io.StringIO()
        moved_base = load_baseline(tmp_path / "moved.json")
        assert moved_base.entries.spilled == (held == 5)
        checked = evaluate(report, policy, moved_base)
        write_check_json(checked, against, checked.exit_code())
        out[held] = (path.read_bytes(), after.getvalue(), against.getvalue())
    assert out[10**9] == out[5]
    text = out[5][2]
    assert '"status": "baselined"' in text and '"status": "fail"' in text  # moved: some absorbed, some not


# ---------------------------------------------------------------- memory

def test_a_large_baseline_is_read_and_written_without_holding_it(tmp_path):
    """A baseline of 12,000 entries held < 60 B an entry once read (~700 when it was a list of
    entries), and read, matched and written again within a few MB whatever its size."""
    n = 12_000
    entries = [BaselineEntry(run=f"sweep/run_{i:06d}", metric="train/loss", kind="spike", code="SL101",
                             step=100 + i % 50, severity="warning", message=f"train/loss spiked 3.0x at step {i}")
               for i in range(n)]
    write_baseline(Baseline(entries=entries), tmp_path / "b.json")
    del entries
    rep = report_of({f"sweep/run_{i:06d}": [("spike", "train/loss", 100 + i % 50)] for i in range(300)})
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        loaded = load_baseline(tmp_path / "b.json")
        held = tracemalloc.get_traced_memory()[0] - base
        result = evaluate(rep, Policy(), loaded)
        write_baseline(loaded, tmp_path / "again.json")
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert loaded.entries.spilled and len(loaded.entries) == n and result.counts()["baselined"] == 300
    assert held / n < 60, f"{held / n:.0f} B an entry held"
    assert peak < 6e6, f"peak {peak / 1e6:.1f} MB"
    assert (tmp_path / "again.json").read_bytes() == (tmp_path / "b.json").read_bytes()


# ---------------------------------------------------------------- the single-file findings dataset

COLUMNS = ["row", "run", "group_key", "fingerprint", "settings", "state", "rows_hash"]


def test_a_single_file_dataset_is_read_in_slices(monkeypatch, tmp_path):
    path = tmp_path / "f.parquet"
    _spooled_sweep(monkeypatch, tmp_path, 13, findings=path)
    slices = list(findings_data.read_slices(path, COLUMNS, 4))
    assert len(slices) > 3 and all(s.height <= 4 for s in slices)
    whole = findings_data.read(path, COLUMNS)
    assert pl.concat(slices).equals(whole) and whole.height > 13
    assert whole.filter(pl.col("state").is_not_null()).height == 12  # a state a group (two runs mirror)


def test_a_single_file_damaged_part_way_is_not_used_at_all(monkeypatch, tmp_path):
    """Damage found after some slices were read: one warning, and none of the file's states
    kept (as when the whole table failed to read)."""
    path = tmp_path / "f.parquet"
    _spooled_sweep(monkeypatch, tmp_path, 13, findings=path)
    settings = incremental.settings(Config(), None, [tmp_path / "logs"])
    monkeypatch.setattr(incremental, "STATE_SLICE", 4)
    groups, _ = incremental.previous(path, settings)
    assert len(groups) == 12
    real, calls = pl.from_arrow, [0]

    def from_arrow(batch, *a, **k):
        calls[0] += 1
        if calls[0] == 3:
            raise OSError("checksum mismatch")
        return real(batch, *a, **k)

    monkeypatch.setattr(pl, "from_arrow", from_arrow)
    with diagnostics.collecting() as diag:
        groups, hashes = incremental.previous(path, settings)
    assert calls[0] == 3 and (dict(groups), dict(hashes)) == ({}, {})
    assert len(diag.lines) == 1 and "damaged findings dataset (checksum mismatch)" in diag.lines[0]


@pytest.mark.parametrize("on_disk", [False, True])
def test_a_tie_goes_to_the_earlier_finding_whatever_its_address(on_disk):
    """Two findings as near to two entries (steps 90 and 110, both at 100): the first of the run
    takes the first entry, however the findings lie in memory (the tie went by id(), so a
    report's reasons could swap between two processes)."""
    entries = [BaselineEntry(run="r", metric="train/loss", kind="spike", code="SL101", step=s) for s in (90, 110)]
    base = Baseline(entries=spilled(entries) if on_disk else entries)
    reasons = set()
    keep = []  # alive, so that later findings are laid out elsewhere
    for trial in range(40):
        pair = [Finding(kind="spike", code="SL101", run="r", metric="train/loss", severity="warning", recovery="none",
                        message=str(k), start_step=100, peak_step=100) for k in range(2)]
        if trial % 2:
            pair.reverse()  # the later-made finding first
        keep.append(pair)
        seg = [{"segment": 0, "source": "m.csv", "first_step": 0, "last_step": 1000}]
        rep = Report(command="analyze", runs=[RunReport(run="r", sources=["m.csv"], segments=seg,
                                                        metrics={"train/loss": "loss"}, findings=list(pair))])
        result = evaluate(rep, Policy(), base)
        reasons.add(tuple(result.gate(f).reason for f in rep.runs[0].findings))
    assert reasons == {("in the baseline at step 90", "in the baseline at step 110")}
