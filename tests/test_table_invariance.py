"""A table reads the same however its writer laid it out (#24, `benchmarks/realworld/perturb_tables.py`):
comment lines above it, a separator after every field, pandas' index column before a named counter.
Each test writes the same values two ways and checks both read alike; lookalikes stay refused."""
from __future__ import annotations

import pytest

from spikelens import api
from spikelens.errors import SpikelensError

from loaded_runs import curve as _curve, only_frame as _read


LOSS = [round(2.5 * 0.97 ** i + 0.1, 6) for i in range(40)]


def _write(tmp_path, sub, name, text):
    (tmp_path / sub).mkdir()
    (tmp_path / sub / name).write_text(text)
    return tmp_path / sub


def test_comment_lines_above_a_table_are_read_past(tmp_path):
    # Lightning's CSVLogger rows leave the metrics a row did not log empty; a script's note above the header
    rows = "epoch,step,train_loss_step,val_loss\n" + "".join(
        f"0,{10 * i + 9},{v},{'' if i % 5 else v * 1.1}\n" for i, v in enumerate(LOSS))
    plain = _read(_write(tmp_path, "plain", "metrics.csv", rows))
    noted = _read(_write(tmp_path, "noted", "metrics.csv", "# run started 2024-05-01 12:00, lr=0.001, seed 42\n" + rows))
    assert _curve(noted, "train_loss_step") == _curve(plain, "train_loss_step")
    assert _curve(noted, "train_loss_step")[1] == pytest.approx(LOSS)
    # a headerless table of a file named for its measure, under a comment that names no columns
    bare = "".join(f"{i},{v}\n" for i, v in enumerate(LOSS))
    plain = _read(_write(tmp_path, "bare", "loss_curve.csv", bare))
    noted = _read(_write(tmp_path, "bare_noted", "loss_curve.csv", "# seed 42, 2024-05-01\n# lr=0.001\n" + bare))
    (metric,) = set(plain["metric"].cast(str))
    assert _curve(noted, metric) == _curve(plain, metric) and _curve(plain, metric)[0] == list(range(40))


def test_a_commented_header_still_names_the_columns(tmp_path):
    # `np.savetxt(..., header='iter loss')` under a note: the last comment is the header
    text = "# trained on 4 GPUs, 2024-05-01\n# iter loss\n" + "".join(f"{10 * i} {v}\n" for i, v in enumerate(LOSS))
    frame = _read(_write(tmp_path, "a", "train.txt", text))
    assert _curve(frame, "loss") == ([10 * i for i in range(40)], pytest.approx(LOSS))


def test_a_separator_after_every_field_is_no_column(tmp_path):
    # pandas' index and two losses, each line ended by the separator (`f.write(f"{g},{d},")`)
    text = ",G,D,\n" + "".join(f"{i},{v},{-v},\n" for i, v in enumerate(LOSS))
    frame = _read(_write(tmp_path, "a", "loss.csv", text))
    assert _curve(frame, "loss/G")[1] == pytest.approx(LOSS)  # named by the file, as without the separator
    assert _curve(frame, "loss/D") == (list(range(40)), pytest.approx([-v for v in LOSS]))
    bare = _read(_write(tmp_path, "b", "loss_curve.csv", "".join(f"{i},{v},\n" for i, v in enumerate(LOSS))))
    (metric,) = set(bare["metric"].cast(str))
    assert _curve(bare, metric) == (list(range(40)), pytest.approx(LOSS))


def test_pandas_index_before_an_epoch_of_two_phases_keeps_the_epoch(tmp_path):
    # `df.to_csv()` of `epoch,type,loss` rows, a train and a validation row an epoch: the epoch is the step
    rows = [(e, kind, v if kind == "train" else v * 1.2) for e, v in enumerate(LOSS, 1) for kind in ("train", "validation")]
    plain = _read(_write(tmp_path, "plain", "loss_log.csv", "epoch,type,loss\n" + "".join(f"{e},{k},{v}\n" for e, k, v in rows)))
    indexed = _read(_write(tmp_path, "indexed", "loss_log.csv",
                           ",epoch,type,loss\n" + "".join(f"{i},{e},{k},{v}\n" for i, (e, k, v) in enumerate(rows))))
    assert sorted(set(indexed["step"].to_list())) == sorted(set(plain["step"].to_list())) == list(range(1, 41))


def test_a_batch_history_under_its_epoch_still_counts_its_rows(tmp_path):
    # the lookalike the rule above keeps: many rows an epoch (a row a batch), the index counts them
    text = ",epoch,sample_count,train_loss\n" + "".join(f"{i},{i // 8},{32 * (i % 8)},{v}\n" for i, v in enumerate(LOSS))
    frame = _read(_write(tmp_path, "a", "history.csv", text))
    assert _curve(frame, "train_loss")[0] == list(range(40))


def test_a_comment_over_a_settings_table_stays_refused(tmp_path):
    folder = _write(tmp_path, "a", "config.csv", "# exported 2024-05-01\nname,value\nlr,0.001\nbatch,32\nseed,42\nwd,0.01\n")
    with pytest.raises(SpikelensError):
        api.load_runs(folder)


def test_a_space_after_each_comma_keeps_the_step_column(tmp_path):
    # `f.write(f"{episode}, {step}, {loss}\n")`: the step column is `step`, spaces or not
    rows = [(100 * (i + 1), 3000 * (i + 1) + 7 * i, v) for i, v in enumerate(LOSS)]
    plain = _read(_write(tmp_path, "plain", "loss.csv", "episode,step,loss\n" + "".join(f"{e},{s},{v}\n" for e, s, v in rows)))
    spaced = _read(_write(tmp_path, "spaced", "loss.csv", "episode, step, loss\n" + "".join(f"{e}, {s}, {v}\n" for e, s, v in rows)))
    assert _curve(spaced, "loss") == _curve(plain, "loss") == ([s for _, s, _ in rows], pytest.approx(LOSS))


def test_a_note_above_an_sb3_progress_table_keeps_its_reader(tmp_path):
    header = "rollout/ep_rew_mean,time/total_timesteps,train/loss,train/n_updates\n"
    rows = "".join(f"{0.1 * i},{2048 * (i + 1)},{v},{i}\n" for i, v in enumerate(LOSS))
    for sub, text in (("plain", header + rows), ("noted", "# PPO on CartPole-v1, seed 42\n" + header + rows)):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "progress.csv").write_text(text)
    plain, noted = (api.load_runs(tmp_path / s)[0] for s in ("plain", "noted"))
    assert noted.formats == plain.formats
    assert _curve(noted.frame, "train/loss") == _curve(plain.frame, "train/loss") == ([2048 * (i + 1) for i in range(40)], pytest.approx(LOSS))
