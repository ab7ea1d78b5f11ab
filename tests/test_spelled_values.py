"""Values written as text in JSON logs are read as the numbers a person reads (#24,
`benchmarks/realworld/perturb_json.py`): `{"loss": "1.234"}` of a quoting logger (ms-swift's
`logging.jsonl`), `json.dump(history, default=str)` of NumPy floats, in JSON lines, MMEngine's
`scalars.json` and a trainer_state's log_history. Whole numbers written as text stay text (an id, a run)."""
from __future__ import annotations

import json

import pytest

from spikelens import api
from spikelens.errors import SpikelensError

from loaded_runs import curve as _curve, only_frame as _only

LOSS = [round(2.5 * 0.97 ** i + 0.1, 6) for i in range(30)]


def _lines(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.mark.parametrize("name", ["logging.jsonl", "metrics.jsonl"])
def test_quoted_values_in_json_lines(tmp_path, name):
    _lines(tmp_path / "a" / name, [{"global_step": 10 * (i + 1), "loss": str(v), "grad_norm": "1.958e+04",
                                    "learning_rate": "5e-05"} for i, v in enumerate(LOSS)])
    frame = _only(tmp_path / "a")
    assert _curve(frame, "loss") == ([10 * (i + 1) for i in range(30)], pytest.approx(LOSS))
    assert _curve(frame, "grad_norm")[1] == pytest.approx([1.958e4] * 30)


def test_quoted_values_in_mmengine_scalars(tmp_path):
    _lines(tmp_path / "vis_data" / "scalars.json",
           [{"lr": "0.01", "loss": str(v), "iter": 50 * (i + 1), "epoch": 1, "step": 50 * (i + 1)} for i, v in enumerate(LOSS)])
    frame = _only(tmp_path)
    assert _curve(frame, "loss")[1] == pytest.approx(LOSS)


def test_quoted_values_in_a_trainer_state(tmp_path):
    history = [{"step": 5 * (i + 1), "epoch": round(0.1 * (i + 1), 2), "loss": str(v), "learning_rate": "2e-05"}
               for i, v in enumerate(LOSS)]
    (tmp_path / "trainer_state.json").write_text(json.dumps({"global_step": 150, "log_history": history}))
    frame = _only(tmp_path)
    assert _curve(frame, "loss")[1] == pytest.approx(LOSS)


def test_whole_numbers_as_text_stay_text(tmp_path):
    # a dataset's records: ids and labels spelled as text are no metrics, and nothing measured: refused
    _lines(tmp_path / "a" / "data.jsonl", [{"id": str(1000 + i), "label": str(i % 3), "text": f"sample {i}"}
                                           for i in range(30)])
    with pytest.raises(SpikelensError):
        api.load_runs(tmp_path / "a")
    # beside quoted measurements, a run id spelled as a whole number is no metric
    _lines(tmp_path / "b" / "metrics.jsonl", [{"step": i, "run": "7", "loss": str(v)} for i, v in enumerate(LOSS)])
    assert "run" not in set(_only(tmp_path / "b")["metric"].cast(str))


def test_quoted_values_in_json_documents(tmp_path):
    # `json.dump(losses, f, default=str)` of NumPy floats, and a Keras history dumped the same way
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "losses.json").write_text(json.dumps([str(v) for v in LOSS]))
    assert _curve(_only(tmp_path / "a"), "losses") == (list(range(30)), pytest.approx(LOSS))
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "history.json").write_text(json.dumps({"loss": [str(v) for v in LOSS],
                                                            "val_loss": [str(v * 1.1) for v in LOSS]}))
    assert _curve(_only(tmp_path / "b"), "val_loss")[1] == pytest.approx([v * 1.1 for v in LOSS])


def test_a_banner_line_before_llamafactory_records_keeps_its_reader(tmp_path):
    # LLaMA-Factory's trainer_log.jsonl with a wrapper's line before it: still read by its plan and its steps
    rows = [{"current_steps": 10 * (i + 1), "total_steps": 600, "loss": v, "lr": 1e-5, "epoch": round(0.05 * (i + 1), 3),
             "percentage": round(100 * 10 * (i + 1) / 600, 2), "elapsed_time": "0:02:13", "remaining_time": "1:00:00"}
            for i, v in enumerate(LOSS)]
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "trainer_log.jsonl").write_text("2024-05-01 12:00:00 INFO training started\n"
                                                      + "".join(json.dumps(r) + "\n" for r in rows))
    runs = [r for r in api.load_runs(tmp_path / "a") if r.frame.height]
    assert [f for r in runs for f in r.formats] == ["llamafactory"]
    assert _curve(runs[0].frame, "loss") == ([10 * (i + 1) for i in range(30)], pytest.approx(LOSS))
