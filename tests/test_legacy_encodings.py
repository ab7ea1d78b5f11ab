"""A log a Windows console wrote in its code page (GBK for Chinese, Shift-JIS, cp1252) reads as a person
reads it (#24): a hand-written loop's `当前损失值：2.9484` lines were refused as "no keyed number" when their
every key decoded to U+FFFD. A UTF-8 log with a few damaged bytes stays UTF-8; binary stays binary."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from spikelens.importers.decoding import encoding_of, legacy_codec, looks_binary

BATCHES, EPOCHS = 600, 3


def _gbk_loop_log() -> tuple[str, list[float]]:
    """A GPT-2 loop's print every 10 batches, the batch counter restarting each epoch (as MedQA-style
    scripts print it), a save message after each epoch."""
    lines, losses = ["开始时间：2024-03-01 10:00:00"], []
    for e in range(EPOCHS):
        for b in range(10, BATCHES + 1, 10):
            loss = 6.0 / (1 + 0.002 * (e * BATCHES + b))
            losses.append(round(loss, 4))
            lines.append(f"当前Batch：{b}/{BATCHES} | 当前epoch:{e}/50 | 当前损失值：{loss:.4f} | 当前准确率：{30 + e}.5%")
        lines.append("最佳模型保存成功！")
    return "\n".join(lines) + "\n", losses


def _analyze(path) -> dict:
    out = subprocess.run([sys.executable, "-m", "spikelens", "analyze", str(path), "--format", "json"],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)["runs"][0]


@pytest.mark.parametrize("codec", ["gbk", "gb18030"])
def test_a_gbk_console_log_reads_its_chinese_keys(tmp_path, codec):
    text, losses = _gbk_loop_log()
    log = tmp_path / "train_log.txt"
    log.write_bytes(text.encode(codec))
    assert encoding_of(log.read_bytes())[0] == "gb18030"
    run = _analyze(log)
    assert run["stats"]["main_metric"] == "当前损失值"
    assert run["metrics"]["当前损失值"] == "loss"
    assert run["stats"]["points"] == len(losses)
    assert run["stats"]["first_step"] == 10 and run["stats"]["last_step"] == (EPOCHS - 1) * BATCHES + BATCHES


def test_a_shift_jis_and_a_cp1252_log_are_read_in_their_code_pages():
    sjis = "".join(f"エポック {i} 損失: {1.5 - i * 0.01:.3f}\n" for i in range(40)).encode("shift_jis")
    assert legacy_codec(sjis) is not None  # a double-byte page: its keys read consistently
    latin = "".join(f"Époque {i} perte_entraînement: {1.5 - i * 0.01:.3f} °C\n" for i in range(40)).encode("cp1252")
    assert legacy_codec(latin) == "cp1252"  # lone high bytes: GBK would swallow the letter after each


def test_utf8_with_damaged_bytes_and_binary_stay_as_they_were():
    text = "".join(f"step {i} loss █ {1.5 - i * 0.01:.3f} — ok\n" for i in range(60)).encode()
    damaged = text[:300] + b"\xe9\xff\x81\xfe" + text[300:600] + b"\xb0" + text[600:]
    assert encoding_of(damaged)[0] == "utf-8"
    ascii_log = b"".join(b"step %d loss %.3f\n" % (i, 1.0 / (i + 1)) for i in range(60))
    assert encoding_of(ascii_log[:200] + b"\xe9\xe9\xe9\xe9\xe9" + ascii_log[200:])[0] == "utf-8"  # one line hit
    noise = os.urandom(8192)
    assert encoding_of(noise)[0] == "utf-8" and looks_binary(noise)
