"""A log's signals (plan, relaunches, the error it ends with) gathered a chunk of lines
at a time, in the parse threads, with or without line shapes, are what reading every
line at once gave (`textlog_reference`, the code before): the text of a log is no
longer held whole for them."""
from __future__ import annotations

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

import textlog_reference as reference
from spikelens.importers import textlogs, textsignals
from spikelens.importers.patterns import CATALOGUE

PATTERNS = {p.name: p for p in CATALOGUE}
LLMC, NANOGPT = PATTERNS["llm.c"], PATTERNS["nanoGPT"]

LINES = st.one_of(
    st.builds(lambda s, total: f"step {s:>4}/{total} | loss 3.{s % 10}00 (+0.00z)| norm 1.{s % 7} (+0.00z)| lr 3.0e-04 | "
              f"1.{s % 9} ms | 40.1% bf16 MFU | 1234 tok/s", st.integers(1, 9999), st.sampled_from([500, 19560, 0])),
    st.builds(lambda i, mfu: f"iter {i}: loss 3.{i % 10}1, time 12.{i % 9}ms, mfu {mfu}%", st.integers(0, 999),
              st.sampled_from(["-100.00", "38.21", "41.00"])),
    st.sampled_from(["Traceback (most recent call last):", '  File "train.py", line 12, in <module>',
                     "RuntimeError: CUDA out of memory", "[rank0]: torch.OutOfMemoryError: boom", "Killed",
                     "slurmstepd: error: *** JOB 12 CANCELLED AT 2024 DUE TO TIME LIMIT ***", "allocated 237 MiB",
                     "", "   ", "val loss 3.21", "step 10: train loss 3.1, val loss 3.2", "KeyboardInterrupt"]),
)


def _chunked(lines: pl.DataFrame, pattern, sizes: list[int], shaped: bool) -> textsignals.Signals:
    """The signals of `lines` cut in chunks of the sizes given, in turn (one empty chunk
    for no lines, as the parse gives)."""
    cuts, lo = [], 0
    while lo < lines.height:
        cuts.append((lo, sizes[len(cuts) % len(sizes)]))
        lo += cuts[-1][1]
    signals, known = textsignals.Signals(pattern), {}
    for lo, size in cuts or [(0, 0)]:
        chunk, shapes = lines.slice(lo, size), None
        if shaped:
            chunk, shapes = textlogs._shaped(chunk)
        signals.add(textsignals.chunk_signals(chunk, pattern, shapes, known))
    return signals


@settings(max_examples=300, deadline=None)
@given(body=st.lists(LINES, max_size=60), pattern=st.sampled_from([LLMC, NANOGPT]),
       sizes=st.lists(st.integers(1, 12), min_size=1, max_size=5), shaped=st.booleans(), look=st.integers(1, 4),
       data=st.data())
def test_signals_gathered_by_chunk_are_those_of_all_lines(body, pattern, sizes, shaped, look, data):
    lines = reference.split_lines("\n".join(body) + "\n")
    chosen = data.draw(st.lists(st.integers(0, lines.height - 1), unique=True, max_size=lines.height))
    rows = pl.DataFrame({"row": sorted(chosen)}, schema={"row": pl.Int64})  # where values were read
    # the reference (the code before chunking) knows no kill notice among the last value lines and
    # no fatal error without a traceback: without those lines it is the answer; with them, all lines at once is
    want = reference.signal_meta(lines, pattern, rows)
    saved, textsignals._LAST_LOOK = textsignals._LAST_LOOK, look  # a chunk's end, looked at first: shorter here
    try:
        whole = textsignals.signal_meta(lines, pattern, rows)
        assert _chunked(lines, pattern, sizes, shaped).meta(rows) == whole
        if not any(x in line for line in body for x in ("Killed", "CANCELLED", "out of memory", "OutOfMemoryError")):
            assert whole == want
    finally:
        textsignals._LAST_LOOK = saved


def test_the_plan_is_the_last_total_printed_even_inside_one_chunk():
    body = [f"step {s:>4}/{500 if s < 7 else 900} | loss 3.000 (+0.00z)| norm 1.0 (+0.00z)| lr 3.0e-04 | 1.0 ms | "
            f"40.1% bf16 MFU | 1234 tok/s" for s in range(1, 10)]
    lines = reference.split_lines("\n".join(body) + "\n")
    for shaped in (False, True):
        assert _chunked(lines, LLMC, [100], shaped).planned_total() == 900


def test_after_a_traceback_the_last_line_names_the_error_when_no_exception_line_does():
    body = ["iter 1: loss 3.1, time 12.0ms, mfu 38.21%", "Traceback (most recent call last):",
            '  File "train.py", line 12, in <module>', "", "cuda went away", ""]
    lines = reference.split_lines("\n".join(body) + "\n")
    for sizes in ([1], [2, 3], [100]):
        assert _chunked(lines, NANOGPT, sizes, True).final_error(0) == ("cuda went away", 4)
