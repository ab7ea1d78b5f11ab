"""`decoding.drop_terminal_codes` (NumPy) removes exactly the bytes the terminal-code regex
removes: colour codes, cut codes, codes at a block's ends, OSC titles, lone ESCs."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from spikelens.importers.decoding import _TERMINAL_CODES, CSI_SCAN, Decoder, drop_terminal_codes

PIECES = [b"\x1b", b"\x1b[", b"\x1b]", b"[", b"]", b"0", b"9", b";", b"?", b"m", b"K", b"@", b"~", b" ", b"/",
          b"a", b"\n", b"\x07", b"\\", b"\x7f", b"\xff", b"\x1b[0m", b"\x1b[31m", b"\x1b[1;32m", b"\x1b[38;5;208m",
          b"\x1b[1 2m", b"\x1b[2J", b"\x1b]0;title\x07", b"\x1b[" + b"1;" * CSI_SCAN + b"m",
          b"\x1b[1 ;m", b"\x1b[" + b"1" * (CSI_SCAN - 1) + b"m", b"\x1b[" + b"1" * CSI_SCAN + b"m", b"\n\x1b[3"]


def regex(data: bytes) -> bytes:
    return _TERMINAL_CODES.sub(b"", data)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from(PIECES), max_size=40))
def test_same_bytes_as_the_regex(pieces):
    data = b"".join(pieces)
    assert drop_terminal_codes(data) == regex(data)


def test_a_coloured_console_block():
    line = (b"\x1b[32m[rank0]:[titan] 2025-01-01 12:00:00,400 - root - INFO - \x1b[31mstep: 12  "
            b"\x1b[32mloss: 10.12345  \x1b[35mmfu: 40.1%\x1b[39m\n")
    block = line * 2000 + b"\x1b[3"  # a code cut by the block's end stays (the regex does not match it)
    out = drop_terminal_codes(block)
    assert out == regex(block)
    assert out.startswith(b"[rank0]:[titan] 2025-01-01 12:00:00,400 - root - INFO - step: 12  loss: 10.12345")
    assert out.endswith(b"\x1b[3") and out.count(b"\x1b") == 1


def test_the_decoder_drops_codes_and_counts_no_damage():
    dec = Decoder()
    out = dec.feed(b"\x1b[1mloss\x1b[0m: 1.5\n\x1b]0;job\x07step 2\n", final=True)
    assert out == b"loss: 1.5\nstep 2\n"
    assert dec.damage.warning("x.log") is None


def test_codes_after_the_last_newline_are_dropped_as_the_regex_does():
    """Codes after a block's last newline (a line cut by the block's end) are the regex's."""
    line = b"\x1b[32mstep: 3  \x1b[1;31mloss: 2.5\x1b[0m\n"
    for tail in (b"\x1b[33mgrad", b"\x1b[33mgrad\x1b[0", b"\x1b[3", b"x\x1b", b"\x1b]0;t\x07a\x1b[1m"):
        block = line * 3 + tail
        assert drop_terminal_codes(block) == regex(block)


def test_a_code_cut_by_a_read_block_is_dropped_whole():
    """The reader feeds 1 MiB blocks: a code cut by a block's end is held for the next block
    (the output is the regex's on the whole file, wherever the cuts fall)."""
    line = "\x1b[32m[rank0]: step: {}  \x1b[1;31mloss: 2.5\x1b[0m \x1b]0;title\x07é\n"
    data = "".join(line.format(i) for i in range(40)).encode()
    for size in (7, 13, 64, 101):
        dec = Decoder()
        out = b"".join(dec.feed(data[i:i + size]) for i in range(0, len(data), size)) + dec.feed(b"", final=True)
        assert out == regex(data), size
        assert dec.damage.warning("x.log") is None
    dec = Decoder()  # a progress bar with no newline is not held past HOLD bytes
    from spikelens.importers.decoding import HOLD
    bar = (b"\r\x1b[32m50%\x1b[0m" * (HOLD // 8))
    assert len(dec.feed(bar[:HOLD + 100])) > 0
