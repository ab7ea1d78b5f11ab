"""A counter printed with thousands separators (`Step [1,000/12,942]`, `Epoch [100/1,000]`) counts as the
same counter printed bare (#24): the step and the plan are its numbers, commas left out. Fixtures are the
lines a script's f-strings write (`f"{i:,}/{n:,}"`); a lookalike (a list of fractions, no counter) reads no step."""
from __future__ import annotations

import polars as pl
import pytest

from spikelens import api
from spikelens.importers.linetokens import tokenise


def _lines(fmt: str, n: int = 1_500, every: int = 100) -> list[str]:
    return [f"Epoch [1/3], Step [{fmt.format(i)}/{fmt.format(n)}], Loss: {9.2 - i / 400:.4f}, "
            f"Perplexity: {fmt.format(int(10_000 - i * 5))}.2157" for i in range(every, n + 1, every)]


@pytest.mark.parametrize("fmt", ["{:,}", "{}"])
def test_a_separated_counter_gives_the_step(tmp_path, fmt):
    (tmp_path / "training_log.txt").write_text("\n".join(_lines(fmt)) + "\n")
    frame = api.load(str(tmp_path / "training_log.txt"))
    loss = frame.filter(pl.col("metric") == "Loss").sort("seq")
    assert loss.get_column("step").to_list() == list(range(100, 1_501, 100))
    assert loss.get_column("value")[0] == pytest.approx(8.95)


def test_the_counter_and_its_total_are_spanned_whole():
    t = tokenise("Epoch [1/3], Step [1,000/12,942], Loss: 9.2159")
    line = "Epoch [1/3], Step [1,000/12,942], Loss: 9.2159"
    assert line[t.inner[0]:sum(t.inner)] == "1,000" and line[t.inner_total[0]:sum(t.inner_total)] == "12,942"
    assert t.separated


def test_fractions_in_a_list_are_no_separated_counter():
    t = tokenise("3/10,5/10 loss 2")
    line = "3/10,5/10 loss 2"
    assert line[t.inner_total[0]:sum(t.inner_total)] == "10"
