"""`decoding.drop_terminal_codes` (NumPy) removes exactly the bytes the terminal-code regex
removes: colour codes, cut codes, codes at a block's ends, OSC titles, lone ESCs."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from spikelens.importers.decoding import _TERMINAL_CODES, CSI_SCAN, Decoder, drop_terminal_codes

PIECES = [b"\x1b", b"\x1b[", b"\x1b]", b"[", b"]", b"0", b"9", b";", b"?", b"m", b"K", b"@", b"~", b" ", b"/",
          b"a", b"\n", b"\x07", b"\\", b"\x7f", b"\xff", b"\x1b[0m", b"\x1b[31m", b"\x1b[1;32m", b"\x1b[38;5;208m",
          b"\x1b[1 2m", b"\x1b[2J", b"\x1b]0;title\x07", b"\x1b[" + b"1;" * CSI_SCAN + b"m"]


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
