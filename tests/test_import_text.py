"""Text-log importer: each catalogue pattern on fixtures printed with the real format
strings (`fixtures/writers/textlogs.py`), the damage real logs carry, and sniffing."""
from __future__ import annotations

import math
import sys
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from spikelens import diagnostics
from spikelens.importers.base import TABLE_SCHEMA
from spikelens.discover import iter_runs
from spikelens.errors import ConfigError, FormatError
from spikelens.frame import infer_role
from spikelens.importers import textlogs
from spikelens.importers.patterns import CATALOGUE
from spikelens.importers.textlogs import SNIFF_BYTES, TextLogImporter, set_user_patterns

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
sys.path.insert(0, str(FIXTURES))
from writers._curves import clean_run, plant_spike  # noqa: E402
from writers.textlogs import llmc_stdout_lines  # noqa: E402

TEXT = FIXTURES / "text"


def read(path: Path) -> tuple[pl.DataFrame, dict, list[str]]:
    with diagnostics.collecting() as diag:
        (table,) = TextLogImporter().read(path)
    return table.frame, table.meta, diag.lines


def series(frame: pl.DataFrame, metric: str) -> pl.DataFrame:
    return frame.filter(pl.col("metric") == metric).select("step", "value")


def values_at(frame: pl.DataFrame, metric: str) -> dict[int, float]:
    return dict(series(frame, metric).iter_rows())


def only_run(path: Path):
    with diagnostics.collecting():
        (run,) = list(iter_runs([path]))
    return run


pytestmark = pytest.mark.usefixtures("no_user_patterns")


# ------------------------------------------------------------------ which pattern claims what

CASES = [
    ("llmc/gpt2_train.nan.log", "llm.c", {"train_loss": "loss", "val_loss": "eval_loss", "grad_norm": "grad_norm",
                                          "lr": "lr", "hellaswag": "other", "mfu": "throughput", "tok/s": "throughput"}),
    ("llmc_main/main.log", "llm.c main.log", {"train_loss": "loss", "val_loss": "eval_loss", "grad_norm": "grad_norm",
                                              "lr": "lr", "hellaswag": "other"}),
    ("nanogpt/train_stdout.log", "nanoGPT", {"train_loss": "loss", "val_loss": "eval_loss",
                                             "eval_train_loss": "eval_loss", "mfu": "throughput"}),
    ("modded_nanogpt/record.txt", "modded-nanogpt", {"train_loss": "loss", "val_loss": "eval_loss"}),
    ("build_nanogpt/log.txt", "build-nanogpt", {"train_loss": "loss", "val_loss": "eval_loss", "hellaswag": "other"}),
    ("megatron/megatron_lm.log", "Megatron", {"lm loss": "loss", "lm loss validation": "eval_loss", "lr": "lr",
                                              "loss_scale": "loss_scale", "grad_norm": "grad_norm",
                                              "skipped_iterations": "other", "nan_iterations": "other",
                                              "lm loss validation ppl": "perplexity"}),
    ("megatron/megatron_ds.log", "Megatron", {"lm loss": "loss", "loss_scale": "loss_scale", "lr": "lr",
                                              "overflow_skips": "other"}),
    ("deepspeed/ds_chat_step3.log", "DeepSpeed-Chat", {"act_loss": "loss", "cri_loss": "loss",
                                                       "loss_scale": "loss_scale", "reward": "reward"}),
    ("deepspeed/ds_chat_step1.log", "DeepSpeed", {"ppl": "perplexity", "lr": "lr", "loss_scale": "loss_scale",
                                                  "skipped_steps": "other", "epoch": "other"}),
]


@pytest.mark.parametrize("rel, pattern, roles", CASES, ids=[c[1] + ":" + c[0] for c in CASES])
def test_fixture_claimed_by_its_pattern_with_metric_roles(rel, pattern, roles):
    path = TEXT / rel
    imp = TextLogImporter()
    assert imp.claims(path, path.read_bytes()[:4096])
    frame, meta, _ = read(path)
    assert meta["pattern"] == pattern
    metrics = set(frame.get_column("metric").unique())
    assert set(roles) <= metrics
    assert {m: infer_role(m) for m in roles} == roles
    assert frame.schema == pl.Schema(TABLE_SCHEMA)


def test_every_catalogue_pattern_has_a_fixture():
    assert {p.name for p in CATALOGUE} == {c[1] for c in CASES}


# ------------------------------------------------------------------ llm.c


def test_llmc_stdout_values_nan_spellings_and_context_steps():
    frame, _, warnings = read(TEXT / "llmc/gpt2_train.nan.log")
    run = clean_run(241, seed=3)
    loss = series(frame, "train_loss").sort("step")
    healthy = loss.filter(pl.col("step") <= 150)
    assert healthy.get_column("step").to_list() == list(range(1, 151))
    np.testing.assert_allclose(healthy.get_column("value").to_numpy(), run["loss"][:150], atol=1e-6)
    broken = loss.filter(pl.col("step") > 150)
    assert broken.get_column("step").to_list() == list(range(151, 241))
    assert broken.get_column("value").is_nan().all()          # `nan` and glibc `-nan`
    assert series(frame, "grad_norm").filter(pl.col("step") > 150).get_column("value").is_nan().all()
    # `val loss` has no step: it takes the step line before it (0 before the first)
    assert sorted(values_at(frame, "val_loss")) == [0, 50, 100, 150, 200, 239]
    assert values_at(frame, "val_loss")[0] == pytest.approx(run["loss"][0] * 0.99, abs=1e-6)
    assert sorted(values_at(frame, "hellaswag")) == [0, 50, 100, 150, 200, 239]
    assert not warnings


def test_llmc_spliced_line_keeps_values_before_the_splice():
    frame, _, _ = read(TEXT / "llmc/gpt2_train.nan.log")
    at120 = frame.filter(pl.col("step") == 120)
    assert set(at120.get_column("metric")) == {"train_loss", "grad_norm"}   # `| lError: ...` cut lr off
    at240 = frame.filter(pl.col("step") == 240)                           # SLURM cancel spliced into the last line
    assert set(at240.get_column("metric")) == {"train_loss", "grad_norm"}
    assert at240.get_column("value").is_nan().all()
    assert frame.filter(pl.col("metric") == "lr").height == 238


def test_llmc_main_resume_appended_becomes_two_segments():
    run = only_run(TEXT / "llmc_main/main.log")
    assert [(s["segment"], s["first_step"], s["last_step"]) for s in run.segments] == [(0, 0, 299), (1, 200, 399)]
    f = run.frame
    trl = f.filter(pl.col("metric") == "train_loss")
    assert trl.height == 500
    curve = clean_run(400, seed=5)["loss"]
    second = trl.filter(pl.col("segment") == 1).sort("step")
    np.testing.assert_allclose(second.get_column("value").to_numpy(), curve[200:400] + 0.003, atol=1e-4)
    assert f.filter(pl.col("metric") == "val_loss").height == 6 + 4
    assert f.filter(pl.col("metric") == "grad_norm").height == 500


# ------------------------------------------------------------------ nanoGPT family


def test_nanogpt_mfu_placeholder_dropped_and_resume_split():
    run = only_run(TEXT / "nanogpt/train_stdout.log")
    assert [(s["first_step"], s["last_step"]) for s in run.segments] == [(0, 130), (100, 199)]
    f = run.frame
    mfu = f.filter(pl.col("metric") == "mfu")
    assert mfu.height == 231 - 10            # 5 placeholder iterations in each launch
    assert (mfu.get_column("value") > 0).all()
    assert f.filter(pl.col("metric") == "train_loss").height == 231
    assert sorted(f.filter(pl.col("metric") == "val_loss").get_column("step")) == [0, 50, 100, 100, 150]


def test_modded_nanogpt_reads_step_lines_not_the_code_dump():
    frame, meta, warnings = read(TEXT / "modded_nanogpt/record.txt")
    train = values_at(frame, "train_loss")
    assert sorted(train) == list(range(1, 501))
    assert sorted(values_at(frame, "val_loss")) == [0, 125, 250, 375, 500]
    curve = plant_spike(clean_run(501, seed=11), at=300, height=1.6, recover=2, grad_precursor=False)["loss"]
    assert train[300] == pytest.approx(curve[300], abs=1e-4)
    assert train[300] > 1.4 * train[298]
    assert set(frame.get_column("metric")) == {"train_loss", "val_loss"}   # timings are not metrics
    assert not warnings


def test_build_nanogpt_log_txt():
    frame, _, _ = read(TEXT / "build_nanogpt/log.txt")
    assert sorted(values_at(frame, "train_loss")) == list(range(600))
    assert sorted(values_at(frame, "val_loss")) == [0, 250, 500, 599]
    assert values_at(frame, "hellaswag")[500] == pytest.approx(0.3)


# ------------------------------------------------------------------ Megatron


def test_megatron_found_after_a_long_preamble():
    path = TEXT / "megatron/megatron_lm.log"
    assert path.read_bytes().index(b" iteration ") > SNIFF_BYTES
    assert TextLogImporter().claims(path, path.read_bytes()[:4096])


def test_megatron_nan_average_all_skipped_interval_and_counts():
    frame, _, _ = read(TEXT / "megatron/megatron_lm.log")
    loss = values_at(frame, "lm loss")
    assert math.isnan(loss[150])             # NaN average: `lm loss` missing, nan iterations 10
    assert 160 not in loss                   # all skipped: the printed 0.0 is not a loss
    assert len(loss) == 29 and all(math.isfinite(v) for s, v in loss.items() if s != 150)
    assert math.isnan(values_at(frame, "grad_norm")[170])
    assert 160 not in values_at(frame, "grad_norm")
    assert values_at(frame, "skipped_iterations")[160] == 10
    assert values_at(frame, "nan_iterations")[150] == 10
    assert values_at(frame, "loss_scale")[160] == 32768.0
    assert sorted(values_at(frame, "lm loss validation")) == [100, 200, 300]
    assert values_at(frame, "lm loss validation ppl")[100] == pytest.approx(
        math.exp(values_at(frame, "lm loss validation")[100]), rel=1e-5)
    assert list(values_at(frame, "lm loss test")) == [300]
    wall = frame.filter((pl.col("step") == 150) & (pl.col("metric") == "lm loss")).get_column("wall_time")[0]
    assert wall == datetime(2026, 11, 22, 12, 2, 30, tzinfo=timezone.utc).timestamp()


def test_megatron_deepspeed_rank_duplicates_do_not_make_segments():
    run = only_run(TEXT / "megatron/megatron_ds.log")
    assert run.meta["pattern"] == "Megatron"           # not the generic DeepSpeed fallback
    assert len(run.segments) == 1
    f = run.frame
    per_step = f.group_by("metric", "step").len()
    assert per_step.get_column("len").max() == 1
    assert sorted(values_at(f, "lm loss")) == list(range(10, 201, 10))
    assert sorted(values_at(f, "lm loss validation")) == [100, 200]
    scale = values_at(f, "loss_scale")
    assert scale[50] == 4096.0 and scale[60] == 2048.0   # OVERFLOW line takes the next iteration
    assert values_at(f, "overflow_skips") == {60: 1.0}


# ------------------------------------------------------------------ DeepSpeed


def test_deepspeed_chat_losses_overflows_and_rewards():
    frame, _, _ = read(TEXT / "deepspeed/ds_chat_step3.log")
    act = values_at(frame, "act_loss")
    assert sorted(act) == list(range(120))
    assert min(act.values()) < 0                       # PPO losses can be negative
    scale = values_at(frame, "loss_scale")
    assert scale == {0: 65536.0, 1: 32768.0, 2: 16384.0, 40: 8192.0}   # hysteresis keeps the scale
    assert values_at(frame, "overflow_skips") == {0: 2.0, 1: 2.0, 2: 2.0, 40: 2.0}
    assert sorted(values_at(frame, "reward")) == list(range(120))


def test_deepspeed_engine_log_is_the_fallback():
    frame, meta, _ = read(TEXT / "deepspeed/ds_chat_step1.log")
    assert meta["pattern"] == "DeepSpeed"
    ppl = values_at(frame, "ppl")
    assert ppl == {0: pytest.approx(4998.296), 50: pytest.approx(2.018), 100: pytest.approx(1.972),
                   150: pytest.approx(1.990)}
    assert values_at(frame, "epoch") == {0: 0.0, 50: 1.0, 100: 2.0, 150: 3.0}
    assert sorted(values_at(frame, "lr")) == list(range(10, 151, 10))
    assert values_at(frame, "loss_scale") == {10: 32768.0, 20: 16384.0}
    assert frame.filter(pl.col("metric") == "loss_scale").get_column("wall_time").is_not_null().all()


# ------------------------------------------------------------------ damage


def test_garbage_non_utf8_spliced_and_cut_last_line():
    frame, _, warnings = read(TEXT / "damaged/gpt2_damaged.log")
    assert sorted(values_at(frame, "train_loss")) == list(range(1, 60))   # step 60 is cut mid-number
    assert any("not valid UTF-8" in w for w in warnings)
    near = [w for w in warnings if "could not be read" in w]
    assert len(near) == 1 and " 2 line(s)" in near[0]
    assert "gpt2_damaged.log" in near[0] and "\n" not in near[0]


def test_cut_last_line_value_is_not_read_short(tmp_path):
    path = tmp_path / "log.txt"
    path.write_text("0 train 10.5\n1 train 9.25\n2 train 8.125\n3 train 7.5")   # no newline: maybe cut
    frame, _, _ = read(path)
    assert values_at(frame, "train_loss") == {0: 10.5, 1: 9.25, 2: 8.125}
    path.write_text("0 train 10.5\n1 train 9.25\n2 train 8.125\n3 train 7.5\n")
    assert values_at(read(path)[0], "train_loss")[3] == 7.5


def test_nan_and_inf_spellings(tmp_path):
    path = tmp_path / "main.log"
    spellings = ["nan", "-nan", "+nan", "NaN", "inf", "-inf", "+inf", "Infinity", "1.5e+00"]
    path.write_text("".join(f"s:{i} trl:{v}\n" for i, v in enumerate(spellings)))
    got = [v for _, v in sorted(values_at(read(path)[0], "train_loss").items())]
    assert [math.isnan(v) for v in got[:4]] == [True] * 4
    assert got[4:] == [math.inf, -math.inf, math.inf, math.inf, 1.5]


@pytest.mark.parametrize("name, content", [
    ("metrics.csv", b"step,train_loss\n0,1.0\n1,0.9\n"),
    ("trainer_state.json", b'{"log_history": [{"step": 1, "loss": 1.0}]}'),
    ("empty.log", b""),
    ("blank.log", b"\n\n   \n"),
    ("header_only.log", b"+-----+\n| Parameter | Value |\n+-----+\nallocated 237 MiB\n"),
    ("events.log", b"\x00\x00\x00\x10" * 300 + b"s:1 trl:1.0\ns:2 trl:0.9\n"),
    ("notes.txt", (TEXT / "damaged/notes.txt").read_bytes()),
    ("table.csv", b"s:1 trl:1.0\ns:2 trl:0.9\n"),   # matching lines, but a CSV name
])
def test_not_claimed(tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(content)
    assert not TextLogImporter().claims(path, content[:4096])


def test_reading_an_unmatched_file_is_a_one_line_format_error(tmp_path):
    path = tmp_path / "notes.log"
    path.write_text("nothing to see\nhere\n")
    with pytest.raises(FormatError) as err:
        TextLogImporter().read(path)
    assert str(path) in str(err.value) and "\n" not in str(err.value)


def test_single_line_file_is_enough_when_read_whole(tmp_path):
    path = tmp_path / "short.log"
    path.write_text("iter 0: loss 4.1736, time 587.69ms, mfu -100.00%\n")
    assert TextLogImporter().claims(path, path.read_bytes())
    assert values_at(read(path)[0], "train_loss") == {0: 4.1736}


def test_random_bytes_in_a_log_never_crash(tmp_path):
    rng = np.random.default_rng(0)
    lines = llmc_stdout_lines(40, seed=1, hellaswag=False)
    for trial in range(10):
        blob = "".join(lines).encode()
        for _ in range(5):
            k = int(rng.integers(0, len(blob)))
            blob = blob[:k] + rng.bytes(int(rng.integers(1, 40))) + blob[k:]
        path = tmp_path / f"t{trial}.log"
        path.write_bytes(blob)
        frame, _, _ = read(path)
        assert frame.filter(pl.col("metric") == "train_loss").height >= 20


# ------------------------------------------------------------------ user patterns (in process)


def test_user_pattern_set_in_process_wins_and_renames():
    set_user_patterns({"mytrainer": {"regex": r"^\[train\] it=(?P<step>\d+) loss=(?P<loss>[\d.eE+-]+) gn=(?P<gn>[\d.]+)",
                                     "metrics": {"loss": "train_loss", "gn": "grad_norm"}}})
    frame, meta, _ = read(TEXT / "user/custom_trainer.log")
    assert meta["pattern"] == "mytrainer"
    curve = clean_run(200, seed=31)
    loss = series(frame, "train_loss").sort("step")
    assert loss.get_column("step").to_list() == list(range(200))
    np.testing.assert_allclose(loss.get_column("value").to_numpy(), curve["loss"], atol=1e-5)
    assert series(frame, "grad_norm").height == 200


def test_without_a_user_pattern_the_custom_log_is_read_by_its_line_structure():
    path = TEXT / "user/custom_trainer.log"
    imp = TextLogImporter()
    assert imp.pattern_for(path) is None and imp.claims(path, path.read_bytes()[:4096])
    frame, meta, _ = read(path)
    assert meta["pattern"] == "console log" and meta["step.from"] == "step"
    loss = series(frame, "loss").sort("step")
    assert loss.get_column("step").to_list() == list(range(200))
    np.testing.assert_allclose(loss.get_column("value").to_numpy(), clean_run(200, seed=31)["loss"], atol=1e-5)


@pytest.mark.parametrize("spec, says", [
    ({"regex": r"loss=(?P<loss>\d+)"}, "step"),
    ({"regex": r"it=(?P<step>\d+)"}, "metric group"),
    ({"regex": r"it=(?P<step>\d+"}, "invalid regex"),
    ({"regex": r"(?<=it=)(?P<step>\d+) (?P<loss>\d+)"}, "look-around"),
    ({"regex": r"it=(?P<step>\d+) (?P<loss>\d+)", "metric": {}}, "unknown keys"),
    ({"regex": r"it=(?P<step>\d+) (?P<loss>\d+)", "metrics": ["x"]}, "metrics"),
    ({"regex": r"it=(?P<step>\d+) (?P<text>\d+)"}, "used by the importer"),
])
def test_bad_user_patterns_are_config_errors(spec, says):
    with pytest.raises(ConfigError) as err:
        set_user_patterns({"bad": spec})
    assert "'bad'" in str(err.value) and says in str(err.value)


# ------------------------------------------------------------------ speed


def test_twenty_thousand_line_log_reads_every_step(tmp_path):
    """Every train line of a long log is read (its speed is benchmarks/bench_textlogs.py's:
    a timed assertion here failed on a loaded machine, not on a slow reader)."""
    path = tmp_path / "gpt2_train.log"
    path.write_text("".join(llmc_stdout_lines(20000, seed=2, val_every=250)))
    imp = TextLogImporter()
    assert imp.claims(path, path.read_bytes()[:4096])
    (table,) = imp.read(path)
    train = table.frame.filter(pl.col("metric") == "train_loss")
    assert train.height == 20000 and train.get_column("step").n_unique() == 20000


def test_sniff_is_cached_per_file_version(tmp_path):
    path = tmp_path / "log.txt"
    path.write_text("0 train 1.0\n1 train 0.9\n2 train 0.8\n")
    imp = TextLogImporter()
    assert imp.pattern_for(path).name == "build-nanogpt"
    path.write_text("s:0 trl:1.0\ns:1 trl:0.9\ns:2 trl:0.8\ns:3 trl:0.7\n")
    assert imp.pattern_for(path).name == "llm.c main.log"
    assert textlogs.looks_binary(b"\x00" * 100) and not textlogs.looks_binary(b"step 1/2 | loss 3.0")
