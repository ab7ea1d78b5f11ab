"""`spikelens analyze --remedy FILE`: the steps to skip and the checkpoint to roll back to,
read back by a real Lightning run through `SkipBatches`, which must leave out exactly those
batches. Fixtures: `fixtures/writers/judged.py` (TensorBoard events with HF-style
`checkpoint-N/` folders and Megatron's `batch-size` scalar; Megatron stdout with 'saving
checkpoint' lines)."""
from __future__ import annotations

import json
import sys

import pytest

import spikelens
from spikelens.remedy import write_remedy
from spikelens.replay.callbacks import SkipBatches, read_skip_batches

from conftest import FIXTURES, run_cli

sys.path.insert(0, str(FIXTURES))
from writers import judged as j  # noqa: E402

STEPS, BATCH = 64, 4


@pytest.fixture
def tb_remedy(tmp_path):
    logs = j.bad_batches(tmp_path / "run", {20: 12.0, 41: 20.0}, steps=STEPS, batch=BATCH, saves=(16, 40, 60))
    out = tmp_path / "remedy.json"
    proc = run_cli("analyze", str(logs), "--remedy", str(out))
    assert proc.returncode == 0, proc.stderr
    return out, proc


def test_remedy_names_the_bad_batches_their_samples_and_the_checkpoint_before_them(tb_remedy):
    out, proc = tb_remedy
    doc = json.loads(out.read_text())
    assert doc["schema"] == "spikelens.remedy/1"
    (run,) = doc["runs"]
    assert run["skip_batches"] == [[20, 20], [41, 41]] and run["lightning"]["skip_batches"] == [20, 41]
    assert run["megatron_args"] == "--train-range-to-skip 20 20 41 41"
    (rem,) = run["remedies"]
    assert rem["batch_size"] == BATCH and rem["skip_samples"] == [[80, 83], [164, 167]]
    assert rem["rollback"]["step"] == 16 and rem["rollback"]["where"].endswith("checkpoint-16")
    # the report's advice quotes it
    assert "checkpoint-16" in proc.stdout and "--train-range-to-skip 20 20 41 41" in proc.stdout
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".spikelens-tmp")]


def test_a_real_lightning_run_skips_exactly_the_batches_of_the_remedy(tb_remedy):
    torch = pytest.importorskip("torch")
    L = pytest.importorskip("lightning")
    from torch.utils.data import BatchSampler, DataLoader, SequentialSampler, TensorDataset

    out, _ = tb_remedy
    data = TensorDataset(torch.arange(STEPS * BATCH, dtype=torch.float32).unsqueeze(1))
    sampler = SkipBatches.from_file(BatchSampler(SequentialSampler(data), BATCH, drop_last=False), out)
    seen: list[int] = []

    class Tiny(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(1, 1)

        def training_step(self, batch, batch_idx):
            (x,) = batch
            seen.append(int(x[0, 0]) // BATCH)  # the global batch index this batch was drawn as
            return self.layer(x / 1000).pow(2).mean()

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.01)

    trainer = L.Trainer(max_epochs=1, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(Tiny(), DataLoader(data, batch_sampler=sampler))
    assert seen == [i for i in range(STEPS) if i not in (20, 41)]
    assert sampler.skipped == [20, 41] and trainer.global_step == STEPS - 2


def test_megatron_stdout_gives_the_rollback_from_its_saving_lines_and_samples_from_its_batch_size(tmp_path):
    logs = j.megatron_text(tmp_path / "mg", {250: 15.0}, saves=(100, 200, 300))
    out = tmp_path / "remedy.json"
    proc = run_cli("analyze", str(logs), "--remedy", str(out), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    (run,) = json.loads(out.read_text())["runs"]
    (rem,) = run["remedies"]
    assert rem["skip_batches"] == [[250, 250]] and rem["rollback"]["step"] == 200
    assert rem["batch_size"] == 64 and rem["skip_samples"] == [[16000, 16063]]
    report = json.loads(proc.stdout)  # the JSON report carries it in the finding's evidence too
    spike = next(f for r in report["runs"] for f in r["findings"] if f["kind"] == "spike")
    assert spike["evidence"]["remedy"]["rollback"]["step"] == 200


def test_a_quiet_run_gets_an_empty_remedy_file(tmp_path):
    logs = j.bad_batches(tmp_path / "run", {}, steps=STEPS, saves=(16,))
    out = tmp_path / "remedy.json"
    out.write_text("old")
    write_remedy(spikelens.analyze(logs, jobs=1), out)
    assert json.loads(out.read_text())["runs"] == []


def test_skip_batches_reads_plain_lists_and_names_a_bad_file(tmp_path):
    plain = tmp_path / "skip_batches.json"
    plain.write_text(json.dumps({"skip_batches": [3, [7, 9]]}))
    assert read_skip_batches(plain) == [3, 7, 8, 9]
    assert list(SkipBatches(range(12), read_skip_batches(plain), start=2)) == [0, 2, 3, 4, 8, 9, 10, 11]
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="bad.json"):
        read_skip_batches(bad)


def test_remedy_into_a_missing_folder_is_a_one_line_error(tmp_path):
    logs = j.bad_batches(tmp_path / "run", {20: 12.0}, steps=STEPS)
    proc = run_cli("analyze", str(logs), "--remedy", str(tmp_path / "nope" / "r.json"))
    assert proc.returncode == 2 and "cannot write the remedy file" in proc.stderr and "Traceback" not in proc.stderr
