"""Console logs no named pattern reads, read through their line structure (`linetokens`,
`linerecords`): one fixture per line family, written here in the layout of the real
code's print statements (never copied from a real log), each checked for its values,
steps, metric roles and plan; files that are no log stay unread; a file that looks like
a log and cannot be read says why; and a property test: a generated console log of any
family reads back the values written, and a cut anywhere keeps the lines before it."""
from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spikelens import diagnostics
from spikelens.discover import iter_runs
from spikelens.errors import FormatError
from spikelens.frame import infer_role
from spikelens.importers.linetokens import tokenise
from spikelens.importers.textlogs import TextLogImporter

E = "\x1b"


pytestmark = pytest.mark.usefixtures("no_user_patterns")


def write(tmp_path: Path, name: str, lines: list[str], end: str = "\n") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + end, encoding="utf-8")
    return path


def read(path: Path) -> tuple[pl.DataFrame, dict, list[str]]:
    imp = TextLogImporter()
    assert imp.pattern_for(path) is None, "a named pattern claimed it: the general reader is not what is tested"
    assert imp.claims(path, path.read_bytes()[:4096])
    with diagnostics.collecting() as diag:
        (table,) = imp.read(path)
    assert table.meta["pattern"] == "console log"
    return table.frame, table.meta, diag.lines


def curve(frame: pl.DataFrame, metric: str) -> dict[int, float]:
    return dict(frame.filter(pl.col("metric") == metric).select("step", "value").iter_rows())


def roles(frame: pl.DataFrame) -> dict[str, str]:
    return {m: infer_role(m) for m in frame.get_column("metric").unique().to_list()}


# ------------------------------------------------------------------ one family each


def test_torchtitan_with_ansi_colours_rank_prefix_units_and_a_crash(tmp_path):
    head = "[rank0]:[titan] 2025-01-01 12:00:00,000 - root - INFO - "
    lines = [head + "Starting job: Llama 3 8B training",
             head + "Training starts at step 1, with local batch size 8, global batch size 64, "
                    "sequence length 8192, total steps 1000 (warmup 200)"]
    for s in range(1, 61):
        lines.append(f"{E}[32m[rank0]:[titan] 2025-01-01 12:00:{s % 60:02d},000 - root - INFO - {E}[31mstep: {s:2}  "
                     f"{E}[32mloss: {12 - s * 0.1:8.5f}  {E}[33mgrad_norm: {1 + s / 100:7.4f}  "
                     f"{E}[34mmemory: {29 + s / 100:5.2f}GiB({92 + s / 100:.2f}%)  {E}[35mtps: {7000 + s:,}  "
                     f"{E}[36mtflops: 4.92  {E}[35mmfu: 1.58%{E}[39m")
    lines += ["Traceback (most recent call last):", '  File "train.py", line 500, in <module>',
              "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"]
    frame, meta, warned = read(write(tmp_path, "titan.log", lines))
    assert curve(frame, "loss") == {s: pytest.approx(12 - s * 0.1) for s in range(1, 61)}
    assert curve(frame, "tps")[30] == 7030 and curve(frame, "memory_pct")[2] == pytest.approx(92.02)
    assert curve(frame, "memory_gib")[60] == pytest.approx(29.6) and curve(frame, "mfu_pct")[1] == 1.58
    assert set(frame.get_column("metric").unique()) == {"loss", "grad_norm", "memory_gib", "memory_pct", "tps",
                                                        "tflops", "mfu_pct"}  # the banner's numbers are no metrics
    assert roles(frame) == {"loss": "loss", "grad_norm": "grad_norm", "memory_gib": "memory",
                            "memory_pct": "memory", "tps": "throughput", "tflops": "throughput",
                            "mfu_pct": "throughput"}
    assert meta["plan.steps"] == 1000 and meta["step.from"] == "step"
    assert meta["plan.error"].startswith("torch.OutOfMemoryError") and meta["plan.error_line_no"] == 65
    wall = frame.filter(pl.col("metric") == "loss").get_column("wall_time")
    assert wall[0] == pytest.approx(1735732801.0)  # 2025-01-01 12:00:01 UTC
    assert not warned


def test_nanochat_counter_is_the_step_and_its_total_the_plan(tmp_path):
    lines = ["Vocab size: 65,536", "num_iterations: 1000"]
    lines += [f"step {s:05d}/01000 ({100 * s / 1000:.2f}%) | loss: {5.5 - s / 100:.6f} | lrm: 1.00 | "
              f"dt: {1142.98 + s:.2f}ms | tok/sec: {111 + s * 1000:,} | mfu: {s / 10:.2f} | total time: {s / 60:.2f}m"
              for s in range(1, 41)]
    frame, meta, _ = read(write(tmp_path, "base_train.log", lines))
    assert curve(frame, "loss")[40] == pytest.approx(5.1) and sorted(curve(frame, "loss")) == list(range(1, 41))
    assert curve(frame, "tok/sec")[3] == 3111 and curve(frame, "dt_ms")[1] == pytest.approx(1143.98)
    assert curve(frame, "total_time_min")[30] == pytest.approx(0.5)
    r = roles(frame)
    assert (r["loss"], r["lrm"], r["dt_ms"], r["tok/sec"], r["mfu"]) == ("loss", "lr", "step_time", "throughput",
                                                                         "throughput")
    assert meta["plan.steps"] == 1000 and meta["step.from"] == "counter"


def test_minimind_epoch_and_batch_counters_compose_the_step(tmp_path):
    lines = [f"Epoch:[{e}/2]({i}/300), loss: {8.5 - e - i / 1000:.4f}, logits_loss: {8.4 - e:.4f}, "
             f"lr: 0.00050000, epoch_Time:{2113.0 - i / 10:.1f}min:"
             for e in (1, 2) for i in range(10, 301, 10)]
    frame, meta, _ = read(write(tmp_path, "pretrain.log", lines))
    loss = curve(frame, "loss")
    assert loss[10] == pytest.approx(7.49) and loss[300 + 10] == pytest.approx(6.49) and max(loss) == 600
    assert roles(frame)["logits_loss"] == "loss" and roles(frame)["lr"] == "lr"
    assert meta["plan.steps"] == 600 and meta["step.from"] == "epoch and counter"


def test_loguru_script_with_a_per_epoch_step(tmp_path):
    lines = [f"2024-05-01 12:{i // 60:02d}:{i % 60:02d}.123 | INFO     | __main__:train:88 - "
             f"epoch {1 + i // 50} step {i % 50} loss {2.31 - i * 0.001:.3f}" for i in range(150)]
    frame, meta, _ = read(write(tmp_path, "run.log", lines))
    loss = curve(frame, "loss")
    assert sorted(loss) == list(range(150))  # the per-epoch step composed with the epoch
    assert loss[120] == pytest.approx(2.19) and set(frame.get_column("metric").unique()) == {"loss", "epoch"}
    assert meta["step.from"] == "step"


def test_hf_trainer_dicts_between_tqdm_redraws_take_the_bar_step(tmp_path):
    out = ["***** Running training *****", "  Num examples = 1,000", "  Total optimization steps = 100"]
    bar = ""
    for s in range(1, 41):
        bar += f"\r {s}%|{'#' * (s // 10)}   | {s}/100 [00:{s:02d}<01:00,  1.50it/s]"
        if s % 10 == 0:
            out += [bar, f"{{'loss': {2.5 - s * 0.01:.4f}, 'grad_norm': 1.5, 'learning_rate': 5e-05, "
                         f"'epoch': {s / 100:.2f}}}"]
            bar = ""
        if s == 20:
            out += [bar + f"\r{s}/100 [00:20<01:00, 1.5it/s]\r  0%|          | 0/5 [00:00<?, ?it/s]\r"
                          "100%|##########| 5/5 [00:01<00:00, 4.00it/s]",
                    "{'eval_loss': 2.1, 'eval_runtime': 1.5, 'eval_samples_per_second': 100.0, 'epoch': 0.2}"]
            bar = ""
    frame, meta, _ = read(write(tmp_path, "train.log", out))
    assert curve(frame, "loss") == {10: 2.4, 20: 2.3, 30: 2.2, 40: 2.1}
    assert curve(frame, "eval_loss") == {20: 2.1}  # after the eval bar (5/5): the training step
    assert "Num_examples" not in set(frame.get_column("metric").unique())
    r = roles(frame)
    assert (r["loss"], r["eval_loss"], r["learning_rate"], r["it/s"]) == ("loss", "eval_loss", "lr", "throughput")
    assert meta["plan.steps"] == 100


def test_ms_swift_quoted_numbers_inside_a_tqdm_bar(tmp_path):
    bar = "".join(f"Train:  {s}%|#  | {s}/100 [00:{s:02d}<00:30,  2.00it/s]{{'loss': '{2.0 - s * 0.01:.3f}', "
                  f"'grad_norm': '1.958e+04', 'learning_rate': '9.9e-05', 'memory(GiB)': '12.3', "
                  f"'global_step/max_steps': '{s}/100', 'percentage': '{s}.00%', 'elapsed_time': '5s'}}\r"
                  for s in range(1, 21))
    frame, meta, _ = read(write(tmp_path, "swift.log", [bar]))
    assert curve(frame, "loss")[20] == pytest.approx(1.8) and len(curve(frame, "loss")) == 20
    assert curve(frame, "grad_norm")[1] == 19580.0 and curve(frame, "memory_gib")[5] == 12.3
    assert roles(frame)["memory_gib"] == "memory"
    assert meta["plan.steps"] == 100


def test_keras_console_epoch_banner_and_progress_bar(tmp_path):
    out = []
    for e in range(1, 4):
        out.append(f"Epoch {e}/10")
        bar = "\r".join(f"{b:3d}/100 [{'=' * (b // 10)}>{'.' * (10 - b // 10)}] - ETA: 2s - loss: {1 / e:.4f} - "
                        f"accuracy: {0.5:.4f}" for b in range(10, 100, 10))
        out.append(bar + f"\r100/100 [==========] - 2s 20ms/step - loss: {1 / e:.4f} - accuracy: {0.6 + e / 10:.4f}"
                         f" - val_loss: {1 / e + 0.1:.4f} - val_accuracy: 0.7000")
    frame, meta, _ = read(write(tmp_path, "keras_stdout.txt", out))
    assert curve(frame, "val_loss") == {100: pytest.approx(1.1), 200: pytest.approx(0.6), 300: pytest.approx(0.4333)}
    assert curve(frame, "accuracy")[300] == pytest.approx(0.9) and "ETA_s" not in frame.get_column("metric")
    r = roles(frame)
    assert (r["val_loss"], r["accuracy"], r["val_accuracy"]) == ("eval_loss", "accuracy", "accuracy")
    assert meta["plan.steps"] == 1000  # 10 epochs of 100 batches: killed at epoch 3


def test_lightning_progress_bar_postfix_with_zero_based_epochs(tmp_path):
    out = []
    for e in range(3):
        bar = "\r".join(f"Epoch {e}:  {b}%|{'#' * (b // 10)}     | {b}/100 [00:05<00:05, 10.00it/s, v_num=0, "
                        f"train_loss={2.1 - e * 0.1 - b / 1000:.3f}]" for b in range(10, 100, 10))
        out.append(bar + f"\rEpoch {e}: 100%|##########| 100/100 [00:10<00:00, 10.00it/s, v_num=0, "
                         f"train_loss={2.0 - e * 0.1:.3f}, val_loss={2.05 - e * 0.1:.3f}]")
    frame, meta, _ = read(write(tmp_path, "lightning.log", out))
    assert curve(frame, "val_loss") == {100: 2.05, 200: 1.95, 300: 1.85}  # epoch 0 is the first
    assert curve(frame, "train_loss")[10] == pytest.approx(2.09) and "v_num" not in frame.get_column("metric")
    assert meta["step.from"] == "epoch and counter"


def test_mmengine_train_and_val_lines(tmp_path):
    head = "2024/01/01 12:00:00 - mmengine - INFO - "
    out = []
    for e in (1, 2):
        out += [head + f"Epoch(train)  [{e}][{i:4d}/1000]  lr: 1.0000e-02  eta: 1:00:00  time: 0.5000  "
                       f"data_time: 0.1000  memory: 3000  loss: {3 - i / 1000 - e / 2:.4f}  loss_cls: 1.0000"
                for i in range(50, 1001, 50)]
        out.append(head + f"Epoch(val) [{e}][500/500]    accuracy/top1: {70 + e:.4f}  accuracy/top5: 90.0000  "
                          "data_time: 0.0100  time: 0.1000")
    frame, meta, _ = read(write(tmp_path, "20240101_120000.log", out))
    assert curve(frame, "loss")[50] == pytest.approx(2.45) and curve(frame, "loss")[2000] == pytest.approx(1.0)
    assert curve(frame, "val_accuracy/top1") == {1000: 71.0, 2000: 72.0}
    assert curve(frame, "val_accuracy/top5") == {1000: 90.0, 2000: 90.0}  # keys with digits told apart
    assert roles(frame)["val_accuracy/top1"] == "accuracy" and roles(frame)["loss_cls"] == "loss"
    assert meta["step.from"] == "epoch and counter" and frame.get_column("wall_time").drop_nulls().len()


def test_fairseq_progress_and_epoch_summaries(tmp_path):
    out = []
    for e in (1, 2):
        out += [f"epoch {e:03d}:  {i} / 300 loss={9.1 - e / 10:.3f}, ppl={548 - e}, wps=1234, ups=1.2, wpb=2048, "
                f"bsz=8, num_updates={(e - 1) * 300 + i}, lr=0.0005, gnorm=1.2, train_wall=5, wall=6"
                for i in range(10, 301, 10)]
        out.append(f"| epoch {e:03d} | valid on 'valid' subset | loss {8.9 - e / 10:.3f} | ppl 478 | "
                   f"num_updates {e * 300}")
    frame, meta, _ = read(write(tmp_path, "train.log", out))
    assert curve(frame, "loss")[10] == pytest.approx(9.0) and curve(frame, "loss")[600] == pytest.approx(8.9)
    assert curve(frame, "val_loss") == {300: pytest.approx(8.8), 600: pytest.approx(8.7)}
    r = roles(frame)
    assert (r["val_loss"], r["gnorm"], r["ppl"], r["wps"]) == ("eval_loss", "grad_norm", "perplexity", "throughput")
    assert meta["step.from"] == "step"


def test_detectron2_text_log(tmp_path):
    out = ["[01/02 03:04:05 d2.engine.train_loop]: Starting training from iteration 0"]
    out += [f"[01/02 03:04:05 d2.utils.events]:  eta: 1:00:00  iter: {i}  total_loss: {2.1 - i / 1000:.3f}  "
            f"loss_cls: 0.7  loss_box_reg: 0.3  time: 0.5  data_time: 0.01  lr: 0.0002  max_mem: 3000M"
            for i in range(19, 400, 20)]
    frame, meta, _ = read(write(tmp_path, "log.txt", out))
    assert curve(frame, "total_loss")[399] == pytest.approx(1.701) and min(curve(frame, "total_loss")) == 19
    assert curve(frame, "max_mem_M")[19] == 3000 and "eta" not in frame.get_column("metric")
    assert roles(frame)["max_mem_M"] == "memory" and roles(frame)["data_time"] == "step_time"


def test_a_relaunch_appended_becomes_a_second_segment(tmp_path):
    lines = [f"step {s} | loss {3 - s / 100:.3f} | lr 1e-4" for s in range(1, 31)]
    lines += ["Resuming from checkpoint at step 20"]
    lines += [f"step {s} | loss {3 - s / 100 + 0.001:.4f} | lr 1e-4" for s in range(21, 41)]
    path = write(tmp_path, "train.log", lines)
    with diagnostics.collecting():
        (run,) = list(iter_runs([path]))
    assert run.frame.get_column("segment").unique().sort().to_list() == [0, 1]
    assert run.frame.filter(pl.col("segment") == 1).get_column("step").min() == 21


# ------------------------------------------------------------------ what is not read


@pytest.mark.parametrize("name, text", [
    ("requirements.txt", "torch==2.1.0\nnumpy>=1.24\npolars==1.0.0\n"),
    ("README.txt", "Training\n\nStep 1: install 2 packages.\nStep 2: run the 3 scripts.\n"
                   "We trained for 10 epochs on 8 GPUs with a batch size of 64 per GPU.\n"),
    ("model.txt", "\n".join(f"  ({i}): LayerNorm((1024,), eps=1e-12, elementwise_affine=True)" for i in range(12))),
])
def test_not_a_log_is_not_read(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    assert not TextLogImporter().claims(path, text.encode()[:4096])


def test_numbers_no_key_names_are_refused_with_the_reason(tmp_path):
    # no first column counts the rows (a counted training loop's rows are read: test_bare_rows_in_logs.py)
    path = write(tmp_path, "train.log", [f"{(i * 37) % 11} {i * 0.5:.2f} {3 - i * 0.01:.3f}" for i in range(40)])
    imp = TextLogImporter()
    assert imp.claims(path, path.read_bytes())
    with pytest.raises(FormatError) as err:
        imp.read(path)
    message = str(err.value)
    assert "40 lines hold numbers" in message and "line 1 '0 0.00 3.000'" in message and "\n" not in message
    folder = tmp_path / "runs"
    folder.mkdir()
    path.rename(folder / "train.log")
    write(folder, "other.log", [f"step {s} loss {1 / s:.3f} acc {s / 100:.2f}" for s in range(1, 20)])
    with diagnostics.collecting() as diag:
        runs = list(iter_runs([folder]))
    assert len(runs) == 1 and [line for line in diag.lines if "train.log" in line and "hold numbers" in line]


# ------------------------------------------------------------------ tokens


@pytest.mark.parametrize("line, values, step", [
    ("iter 100: loss 2.3, time 12.5ms", {"loss": "2.3", "time_ms": "12.5"}, "100"),
    ("validate step: 100 loss: 2.3", {"val_loss": "2.3"}, "100"),
    ("step 10/100 | loss -nan | norm inf | 330.02 ms | 1,234 tok/s", {"loss": "-nan", "norm": "inf", "ms": "330.02",
                                                                       "tok/s": "1,234"}, None),
    ("Train: 0 [  50/1251 (  4%)]  Loss: 6.912 (6.950)  LR: 1.0e-06", {"Loss": "6.912",
                                                                       "Loss_avg": "6.950", "LR": "1.0e-06"}, None),
])
def test_tokens_of_a_line(line, values, step):
    t = tokenise(line)
    assert {n: line[s: s + k] for n, s, k in t.values} == values
    assert (line[t.step[1]: t.step[1] + t.step[2]] if t.step else None) == step


@pytest.mark.parametrize("line, epoch, inner", [
    ("Train: 0 [  50/1251 (  4%)]  Loss: 6.912 (6.950)", "0", "50/1251"),  # timm: the number before the counter
    ("[3/25][40/100]\tLoss_D: 1.2070\tLoss_G: 0.8731", "3/25", "40/100"),  # DCGAN: coarse to fine
    ("Train: [3/300][40/1251]\teta 0:12:34 lr 0.000100\tloss 6.9 (6.9)", "3/300", "40/1251"),  # Swin
    ("Epoch:[1/1](10/39695) loss:8.537", "1/1", "10/39695"),
    ("step 10/1000 [00:10<00:20] loss 2.3", None, "10/1000"),  # a bar's times are no counter
    ("Loss: 0.5 | Acc: 88.1% (56/59)", None, None),  # the count behind a share
])
def test_counters_side_by_side_are_epoch_then_step(line, epoch, inner):
    """Counters printed side by side run coarse to fine: the first (or a whole number right before
    a bracketed counter) is the epoch the second runs within."""
    t = tokenise(line)

    def said(at, total):
        return None if at is None else line[at[0]: sum(at)] + ("/" + line[total[0]: sum(total)] if total else "")

    assert said(t.epoch, t.epoch_total) == epoch
    assert said(t.inner, t.inner_total) == inner


# ------------------------------------------------------------------ property: values read back, cuts keep the prefix

FAMILIES = {
    "titan": lambda s, v: (f"{E}[32m[rank0]:[titan] 2025-01-01 12:00:00,000 - root - INFO - {E}[31mstep: {s:2}  "
                           f"{E}[32mloss: {v:8.5f}  {E}[33mgrad_norm: {v / 3:7.4f}{E}[39m"),
    "nanochat": lambda s, v: f"step {s:05d}/09999 ({s / 100:.2f}%) | loss: {v:.6f} | grad_norm: {v / 3:.4f}",
    "dict": lambda s, v: f"{{'loss': '{v:.4f}', 'grad_norm': '{v / 3:.4f}', 'global_step/max_steps': '{s}/9999'}}",
    "fairseq": lambda s, v: f"epoch 001:  {s} / 9999 loss={v:.3f}, grad_norm={v / 3:.3f}, num_updates={s}",
    "loguru": lambda s, v: (f"2024-05-01 12:00:00.123 | INFO     | __main__:train:88 - step {s} loss {v:.4f} "
                            f"grad_norm {v / 3:.4f}"),
    # values in their array type's repr, a value glued to the next key, a rank after `@` in a name
    "tensor": lambda s, v: f"idx: {s}loss: tensor({v:.4f}, device='cuda:0', grad_fn=<NegBackward>)",
    "numpy": lambda s, v: f"iter {s} Acc@1 {v / 2:.3f} loss: np.float64({v!r}) top@5: np.float32({v / 3:.4f})",
}


@settings(max_examples=25, deadline=None, derandomize=True)
@given(family=st.sampled_from(sorted(FAMILIES)),
       values=st.lists(st.one_of(st.floats(0.01, 50.0), st.just(math.nan), st.just(math.inf)), min_size=4, max_size=30),
       cut=st.integers(0, 10_000))
def test_console_logs_read_back_and_a_cut_keeps_the_lines_before(tmp_path_factory, family, values, cut):
    make = FAMILIES[family]
    lines = [make(s, v) for s, v in enumerate(values, start=1)]
    folder = tmp_path_factory.mktemp("gen")
    whole = write(folder, "train.log", lines)
    frame, _, _ = read(whole)
    got = curve(frame, "loss")
    assert sorted(got) == list(range(1, len(values) + 1))
    for s, v in enumerate(values, start=1):
        printed = float(make(s, v).split("loss")[1].strip(" :=',").split()[0].strip("',{}|")
                        .removeprefix("tensor(").removeprefix("np.float64(").rstrip(",)"))
        assert got[s] == pytest.approx(printed, nan_ok=True)
    data = whole.read_bytes()
    at = cut % (len(data) + 1)
    ends = [i + 1 for i, b in enumerate(data) if b == ord("\n")]
    complete = sum(1 for e in ends if e <= at)
    if complete < 3:
        return
    cut_path = folder / "cut.log"
    cut_path.write_bytes(data[:at])
    imp = TextLogImporter()
    if not imp.claims(cut_path, data[:4096]):
        return  # too little left to tell it from a note: never a wrong value
    with diagnostics.collecting():
        (table,) = imp.read(cut_path)
    prefix = curve(table.frame, "loss")
    for s in range(1, complete + 1):
        assert prefix[s] == pytest.approx(got[s], nan_ok=True)


def test_many_shapes_with_digits_in_their_keys_read_in_bounded_memory(tmp_path):
    """Keys with digits (`top1`, `loss_0`, layer names) make a shape's key include their text; with
    a few dozen such shapes in one chunk the key expression once doubled per shape (gigabytes for a
    300 KB YOLO console log). Read in a subprocess capped at 1.5 GB of address space."""
    lines = []
    for step in range(1, 401):  # 25 shapes, each with a key holding a digit (`hhh_loss1`, `top5`)
        k = step % 25
        lines.append(f"[trainer] iter: {step:04d}  loss: {2 - step / 1000:.4f}  {'h' * (k + 1)}_loss1: "
                     f"{0.1 * k:.3f}  top5: {k:02d}")
    log = tmp_path / "train.log"
    log.write_text("\n".join(lines) + "\n")
    script = ("import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (1_500_000_000, 1_500_000_000)); "
              "from spikelens import api; f = api.load(sys.argv[1]); "
              "print(f.filter(f['metric'] == 'loss').height, f['metric'].n_unique())")
    res = subprocess.run([sys.executable, "-c", script, str(log)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.split()[-2:] == ["400", "27"]  # loss, top5 and the 25 named heads


def test_a_bar_described_by_its_epoch_counts_steps_across_epochs(tmp_path):
    """tqdm bars described `Training Epoch 3` (desc=f"Training Epoch {e}") restart their counter each
    epoch: the step is composed with the epoch, one run, not a launch per epoch."""
    pieces = []
    for epoch in range(1, 4):
        for i in range(0, 11):
            loss = 1.0 / (epoch * 10 + i)
            pieces.append(f"Training Epoch {epoch}: {i * 9:3d}%|#    | {i}/10 [00:0{i}<00:10,  1.01s/it, "
                          f"Batch_Loss={loss:.4f}, Batch_PSNR={20 + epoch:.1f}]")
    path = tmp_path / "train.out"
    path.write_text("nohup: ignoring input\n" + "\r".join(pieces) + "\n", encoding="utf-8")
    frame, meta, _ = read(path)
    loss = curve(frame, "Batch_Loss")
    assert frame.get_column("segment").n_unique() == 1 if "segment" in frame.columns else True
    assert max(loss) == 30 and loss[30] == pytest.approx(1.0 / 40, abs=1e-4)  # epoch 3, 10/10
    assert loss[10 + 5] == pytest.approx(1.0 / 25, abs=1e-4)  # epoch 2, 5/10
    assert tokenise("Training Epoch 3:  50%|#  | 5/10 [00:05<00:05, loss=0.3]").epoch is not None
    assert tokenise("Model has 124 parameters").values == []  # a sentence still names nothing


def test_a_line_cut_mid_number_by_the_end_of_the_file_is_no_record(tmp_path):
    """A log cut inside its last line ('loss=0' of 'loss=0.500', its step key gone): that line
    gives no value, neither a wrong number nor one at the step before it."""
    lines = [f"epoch 001:  {s} / 9999 loss={v:.3f}, grad_norm={v / 3:.3f}, num_updates={s}"
             for s, v in enumerate([1.0, 1.0, 1.0, 0.5], start=1)]
    path = tmp_path / "train.log"
    path.write_text("\n".join(lines[:3]) + "\n" + lines[3][:30], encoding="utf-8")
    frame, _, _ = read(path)
    assert curve(frame, "loss") == {1: 1.0, 2: 1.0, 3: 1.0}
    assert frame.filter(pl.col("metric") == "loss").height == 3
