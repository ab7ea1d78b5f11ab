"""Line shapes session 19's dev runs showed unread, each written here in the layout of its print
statement (never copied from a log): dicts printed behind a label (spaCy's `Losses {'ner': x}`, nested
`{'train': {...}, 'val': {...}}`) and Caffe2's printed scalar blob (`Tensor loss of type float. Dims: (): x`)."""
from __future__ import annotations

import pytest

from spikelens import diagnostics
from spikelens.errors import SpikelensError
from spikelens.frame import infer_role
from spikelens.importers.linetokens import tokenise
from text_shapes import curve, load, loss

pytestmark = pytest.mark.usefixtures("no_user_patterns")


def _names(line: str) -> list[str]:
    return [name for name, _, _ in tokenise(line).values]


def test_a_dict_behind_a_label_is_named_by_its_container(tmp_path):
    """`print("Losses", losses)` each batch (spaCy v2): `ner` alone names no loss; `Losses/ner` does."""
    values = [loss(k) for k in range(80)]
    lines = ["Training Start !"] + [f"Losses {{'ner': {v!r}}}" for v in values] + ["Training End !"]
    frame = load(tmp_path, lines, name="output.log")
    assert frame.get_column("metric").unique().to_list() == ["Losses/ner"]
    assert infer_role("Losses/ner") == "loss" and infer_role("ner") != "loss"
    got = curve(frame, "Losses/ner")
    assert [v for _, v in got] == pytest.approx(values)
    assert [s for s, _ in got] == sorted(s for s, _ in got) and len({s for s, _ in got}) == len(values)


def test_a_labelled_dict_of_several_terms_keeps_each_under_its_label():
    line = "step 10 Losses {'ner': 1.25, 'tagger': 3.5, 'parser': 0.75}"
    template = tokenise(line)
    assert _names(line) == ["Losses/ner", "Losses/tagger", "Losses/parser"]
    assert template.step is not None and line[template.step[1]:sum(template.step[1:])] == "10"
    assert [line[s:s + k] for _, s, k in template.values] == ["1.25", "3.5", "0.75"]


def test_nested_phase_dicts_name_train_and_validation_apart():
    """`print(metrics)` of `{'train': {...}, 'val': {...}}`: the same key under both phases is two
    metrics, one line holding both is no evaluation line (before: all read as `val_`, the val loss lost)."""
    line = "{'train': {'loss': 0.52, 'acc': 0.81}, 'val': {'loss': 0.61, 'acc': 0.77}}"
    template = tokenise(line)
    assert _names(line) == ["loss", "acc", "val_loss", "val_acc"]
    assert [line[s:s + k] for _, s, k in template.values] == ["0.52", "0.81", "0.61", "0.77"]
    assert template.evaluation is None
    only_val = tokenise("{'val': {'loss': 0.61}}")
    assert only_val.evaluation == "val" and [n for n, _, _ in only_val.values] == ["val_loss"]


@pytest.mark.parametrize("line, names", [
    ("{'loss': 1.25, 'learning_rate': 5e-05, 'epoch': 0.1}", ["loss", "learning_rate", "epoch"]),  # HF: no label
    ("INFO - {'loss': 1.25}", ["loss"]),  # a logger's level is no label
    ("Epoch 3 {'loss': 1.25}", ["loss"]),  # a counter before the dict is no label
    ("val: {'loss': 1.25}", ["val_loss"]),  # a phase word labels as before
    ('json_stats: {"_type": "train_iter", "loss": 1.25, "lr": 0.1}', ["loss", "lr"]),  # a tag naming no measure
    ("metrics {'acc': 0.5}", ["acc"]),
    ("reward: {'format_reward': 1.0, 'reward': 0.5}", ["format_reward", "reward"]),  # keys naming their measure
])
def test_unlabelled_dicts_read_as_before(line, names):
    assert _names(line) == names


def test_a_caffe2_scalar_blob_print_is_its_name_and_value(tmp_path):
    """`print(workspace.FetchBlob('loss'))` of Caffe2 each iteration: the repr names the blob, the
    number after its `Dims: ()` is the value; no counter, so the line order is the step."""
    values = [loss(k) for k in range(120)]
    lines = [f"Tensor loss of type float. Dims: (): {v:.6g}" for v in values]
    got = curve(load(tmp_path, lines, name="loss.log"), "loss")
    assert [v for _, v in got] == pytest.approx([float(f"{v:.6g}") for v in values])
    assert [s for s, _ in got] == sorted(s for s, _ in got) and len({s for s, _ in got}) == len(values)
    assert _names("Tensor accuracy of type float. Dims: (). Data: 0.91") == ["accuracy"]


def test_a_blob_that_is_no_scalar_stays_unread(tmp_path):
    """A printed batch (`Dims: (64,1,28,28)`) shows its first element only: no value of the blob."""
    assert _names("Tensor data of type float. Dims: (64,1,28,28): 0.5") == []
    lines = [f"Tensor data of type float. Dims: (64,1,28,28): {loss(k):.4f}" for k in range(60)]
    with pytest.raises(SpikelensError), diagnostics.collecting():
        load(tmp_path, lines, name="blobs.log")


def test_blocks_under_a_minute_date_framed_in_dashes_read_their_scores(tmp_path):
    """`print(time.strftime('%Y-%m-%d %H:%M'))`, then `print(f'---class {c} ap {ap}---')` per class and
    `print(f'---map {m}---')` each evaluation: the date to the minute is no number to read, the dashes
    framing a line are decoration (before: `0.43---` read as nothing, the file refused)."""
    lines, maps = [], []
    for k in range(6):
        lines.append(f"2020-05-23 {10 + k:02d}:05")
        aps = [0.2 + 0.05 * k + 0.01 * c for c in range(3)]
        lines += [f"---class {c} ap {ap!r}---" for c, ap in zip(("person", "cat", "dog"), aps)]
        maps.append(sum(aps) / 3)
        lines.append(f"---map {maps[-1]!r}---")
    frame = load(tmp_path, lines, name="eval.log")
    assert set(frame.get_column("metric").unique()) == {"class_person_ap", "class_cat_ap", "class_dog_ap", "map"}
    got = curve(frame, "map")
    assert [v for _, v in got] == pytest.approx(maps)
    assert [s for s, _ in got] == sorted(s for s, _ in got) and len({s for s, _ in got}) == len(maps)


@pytest.mark.parametrize("line, names, evaluation", [
    ("#####Valid##### Epoch: 3, mae_loss: 0.0123, psnr_loss: 23.0001", ["val_mae_loss", "val_psnr_loss"], "val"),
    ("#####Train##### Epoch: 3, g_loss: 0.0123, d_loss: -0.5", ["g_loss", "d_loss"], None),
    ("-----Iteration: 2000----- Loss: 0.5", ["Loss"], None),
])
def test_a_banner_framing_its_word_names_the_phase(line, names, evaluation):
    template = tokenise(line)
    assert [n for n, _, _ in template.values] == names and template.evaluation == evaluation


@pytest.mark.parametrize("line, names", [
    ("step 3 --- loss 0.5", ["loss"]),  # dashes inside a line stay a separator
    ("loss: -0.5", ["loss"]),
    ("2020-05-23 21:05:33 loss 0.5", ["loss"]),  # a time to the second stays the line's stamp
    ("lr 1e-3---", ["lr"]),
])
def test_dashes_and_dates_inside_lines_read_as_before(line, names):
    template = tokenise(line)
    assert [n for n, _, _ in template.values] == names
    assert tokenise("2020-05-23 21:05:33 loss 0.5").stamp == (0, 19)


def _rounds(rounds: int, start_loss: float) -> tuple[list[str], list[float]]:
    lines, accs = [], []
    for r in range(1, rounds + 1):
        lines.append(f"========== Round [{r}/{rounds}] ==========")
        for c in range(1, 4):
            lines.append(f" Client {c}/3")
            lines += [f"loss = {start_loss * loss(r * 5 + k):.6f}" for k in range(3)]
        accs.append(round(0.1 + 0.6 * (1 - loss(r * 10) / 2.7), 4))
        lines.append(f"Round {r} Test Accuracy={accs[-1]}")
    return lines, accs


def test_federated_rounds_count_the_records_and_restart_with_each_experiment(tmp_path):
    """A federated script's `print(f'===== Round [{r}/{R}] =====')` banner and `Round {r} Test Accuracy=`:
    the round is the count (not a metric named `Round`), and a second experiment appended to the file
    starts again at round 1 (before: the loss was counted by its line, the restart invisible)."""
    first, accs = _rounds(6, 1.0)
    second, accs2 = _rounds(6, 1.2)
    frame = load(tmp_path, ["Total Experiments = 2"] + first + ["", "Attack : min_max"] + second, name="run.log")
    assert "Round" not in frame.get_column("metric").unique().to_list()
    steps = [s for s, _ in curve(frame, "test_Accuracy")]
    assert len(steps) == 12 and steps[:6] == sorted(steps[:6]) and steps[6] < steps[5]
    assert [v for _, v in curve(frame, "test_Accuracy")] == pytest.approx(accs + accs2)
    banner = tokenise("========== Round [3/100] ==========")
    assert banner.epoch == (18, 1) and banner.epoch_total == (20, 3)


@pytest.mark.parametrize("line, names", [
    ("Stage 3 initialize beginning", ["Stage"]),  # DeepSpeed's memory report: no record counted by it
    ("scale=512, lr 0.1", ["scale", "lr"]),  # a setting linked by `=` stays a value
    ('"stage": 3, ', ["stage"]),
])
def test_an_outer_word_that_counts_no_record_stays_a_value(line, names):
    template = tokenise(line)
    assert [n for n, _, _ in template.values] == names and template.epoch is None
