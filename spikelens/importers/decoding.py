"""Bytes of a text log -> UTF-8 text, whatever a crash or a shell left in them.

One place decides how text files are decoded, for discovery's sniffing and for the
text, CSV and JSON-lines readers, so damage costs only the bytes it touches and is
counted (ripgrep's lossy decoding, not Python's strict default):

- a byte-order mark picks the encoding and is dropped: UTF-8 (`\\ufeff` would otherwise
  glue itself to the first line and hide its step), UTF-16 LE/BE (PowerShell's `>`);
  UTF-16 without a mark is told by its zero high bytes;
- NUL bytes (the zero-filled tail a crash leaves, or a hole in the middle) are dropped;
  a run of them inside a line ends that line, since what follows was written later;
- undecodable bytes become U+FFFD, counted;
- terminal codes (colours, `ESC[2J`, OSC titles) are dropped: a console capture's
  styling is not text;
- other control bytes (C0 but tab, newlines, form feed, ESC; DEL) are dropped, counted:
  glued to the front of a line they would hide its record;
- box-drawing characters (the borders rich, prettytable and tabulate draw: `│ ┃ ║`, `─ ━ ═`,
  `┌ ┼ ╪ ╭`) become the ASCII they stand for (`|`, `-`, `+`), one character for one: a table a
  terminal drew reads as the pipe table it is, its columns where they were.

`Decoder.feed` works a block at a time (a UTF-16 code unit or a UTF-8 character cut
by a block boundary is carried over); clean UTF-8 without NULs is passed through as
the same bytes object, so the common case costs one validity check.
"""
from __future__ import annotations

import codecs
import functools
import re
from dataclasses import dataclass
from pathlib import Path

BOMS = ((b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be"))
_NULS = re.compile(rb"\x00+")
_TERMINAL_CODES = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b\n]*(?:\x07|\x1b\\)?")
"""Colours and other terminal codes (CSI, OSC) a console log captured: not text, dropped
(a coloured `loss` reads as a plain one)."""
_CONTROL_BYTES = re.compile(rb"[\x01-\x08\x0e-\x1a\x1c-\x1f\x7f]")
"""Bytes text does not hold: C0 controls but tab, newlines, form feed and ESC (colours), and DEL
(NULs are counted apart: they are what damage leaves in text)."""
_CONTROL_DELETE = bytes(range(0x01, 0x09)) + bytes(range(0x0e, 0x1b)) + bytes(range(0x1c, 0x20)) + b"\x7f"
_BOX = re.compile(rb"\xe2[\x94\x95][\x80-\xbf]")  # U+2500-U+257F in UTF-8


def _box_ascii(ch: int) -> bytes:
    """The ASCII a box-drawing character (U+2500-U+257F) stands for: a vertical line `|`, a horizontal
    one `-`, a half line (rich's `╷ ╵ ╶ ╴` over and under a light table) a space, a corner or a joint `+`."""
    if ch in (0x2502, 0x2503, 0x2506, 0x2507, 0x250A, 0x250B, 0x2551, 0x254E, 0x254F):
        return b"|"
    if ch in (0x2500, 0x2501, 0x2504, 0x2505, 0x2508, 0x2509, 0x2550, 0x254C, 0x254D):
        return b"-"
    return b" " if 0x2574 <= ch <= 0x257F else b"+"


_BOX_ASCII = {chr(c).encode(): _box_ascii(c) for c in range(0x2500, 0x2580)}


def ascii_rules(data: bytes) -> bytes:
    """UTF-8 bytes with their box-drawing characters as ASCII (see the module doc); the same object
    when they hold none (every box-drawing character starts `e2 94` or `e2 95`: one `memchr` for
    `e2` first, since a two-byte search scans byte by byte, ~0.35 s over a 200 MB ASCII log)."""
    if b"\xe2" not in data or b"\xe2\x94" not in data and b"\xe2\x95" not in data:
        return data
    return _BOX.sub(lambda m: _BOX_ASCII[m.group()], data)


HOLD = 64 * 1024
"""The most bytes of a block's last line `Decoder` holds for the next block (see `_hold_cut_code`)."""
BINARY_SHARE = 0.05
"""Random bytes hold ~12% control bytes; a text file with a few damaged bytes far fewer."""
TEXT_LEAD = 32
"""A head that starts with this many bytes of clean text holding a whole line is text,
whatever follows it (garbage appended after a log is the reader's business)."""


def encoding_of(head: bytes) -> tuple[str, int]:
    """(codec, length of its byte-order mark) from a file's first bytes."""
    for bom, codec in BOMS:
        if head.startswith(bom):
            return codec, len(bom)
    sample = head[:4096]
    if len(sample) >= 8:
        even, odd = sample[0::2], sample[1::2]
        if odd.count(0) > 0.4 * len(odd) and even.count(0) < 0.05 * len(even):
            return "utf-16-le", 0
        if even.count(0) > 0.4 * len(even) and odd.count(0) < 0.05 * len(odd):
            return "utf-16-be", 0
    return legacy_codec(head) or "utf-8", 0


LEGACY_CODECS = ("gb18030", "shift_jis", "euc_kr", "big5")
"""Double-byte encodings a log written outside UTF-8 is in (a Windows console's code page: GBK for Chinese,
Shift-JIS, EUC-KR, Big5), tried in this order; the first that reads the head strictly wins. A head whose
high bytes stand mostly alone (`é`, `°` among ASCII) is cp1252, Western Europe's code page: GBK would read
such a byte and the letter after it as one character."""
_HIGH_PAIR = re.compile(rb"[\x80-\xff]{2}")
_DIGIT = re.compile(rb"\d")
LEGACY_SHARE = 0.3
"""At least this share of the head's non-ASCII bytes must be undecodable as UTF-8, and at least half its
lines must hold non-ASCII bytes: a UTF-8 log with a few damaged bytes stays UTF-8 (the bad bytes replaced,
counted), a GBK log whose keys are Chinese is undecodable nearly throughout. (Where only a banner is in
GBK, the keys are ASCII and read as they are.)"""


def legacy_codec(head: bytes) -> str | None:
    """The legacy encoding of a text head that is not UTF-8 (see LEGACY_CODECS), or None: UTF-8 (valid,
    or with a little damage), binary (control bytes or NULs), or no legacy codec reads it."""
    sample = head[:65536]
    cut = sample.rfind(b"\n")
    sample = sample[:cut + 1] if cut > 0 else sample  # a character cut at the head's end is no fault
    if sample.isascii() or b"\x00" in sample or len(_CONTROL_BYTES.findall(sample)) > 0.001 * len(sample):
        return None
    if sample.count(b"\n") < 2 or not _DIGIT.search(sample):
        return None  # a log is lines that hold numbers: one run of undecodable bytes is no text in any code page
    high = len(sample) - len(sample.translate(None, bytes(range(0x80, 0x100))))
    bad = sample.decode("utf-8", errors="replace").count("\ufffd") - sample.count(b"\xef\xbf\xbd")
    if bad < 4 or bad < LEGACY_SHARE * high:
        return None
    lines = [ln for ln in sample.split(b"\n") if ln.strip()]
    if 2 * sum(1 for ln in lines if not ln.isascii()) < len(lines):
        return None
    paired = 2 * len(_HIGH_PAIR.findall(sample))
    for codec in LEGACY_CODECS if paired >= 0.5 * high else ("cp1252",):
        try:
            sample.decode(codec)
        except UnicodeDecodeError:
            continue
        return codec
    return None


def looks_binary(head: bytes) -> bool:
    """Not text: a head whose control bytes (NULs aside) are a substantial share of it and
    that does not start with a clean line of text. NULs, UTF-16 and bytes appended after
    the text do not make a log binary; event files, SQLite and archives stay binary."""
    if not head:
        return False
    if encoding_of(head)[0] != "utf-8":
        return False
    rest = head.replace(b"\x00", b"")
    if not rest:
        return True  # nothing but zeros
    first_bad = _CONTROL_BYTES.search(rest)
    lead = rest if first_bad is None else rest[:first_bad.start()]
    lead = lead[:_valid_utf8(lead)]
    if len(lead) >= TEXT_LEAD and b"\n" in lead:
        return False
    return len(_CONTROL_BYTES.findall(rest)) > BINARY_SHARE * len(rest)


def past_zeros(path, head: bytes, limit: int = 8 * 1024 * 1024) -> bytes:
    """The head a reader should judge: when the file starts with nothing but NULs (and
    blanks), the bytes after that run (a log overwritten in place keeps its old length in
    zeros before the new text; a preallocated file); else `head` itself."""
    if head.replace(b"\x00", b"").strip() and not head.startswith(b"\x00"):
        return head
    with open(path, "rb") as fh:
        seen = 0
        while seen < limit:
            block = fh.read(64 * 1024)
            if not block:
                return b""
            start = len(block) - len(block.lstrip(b"\x00 \t\r\n"))
            seen += len(block)
            if start < len(block):
                fh.seek(seen - len(block) + start)
                return fh.read(len(head) or 4096)
    return head


def _valid_utf8(data: bytes) -> int:
    """Length of the longest prefix of `data` that is valid UTF-8."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start
    return len(data)


@dataclass
class Damage:
    """What decoding a file changed: the warning is made from it."""

    encoding: str = "utf-8"
    bom: bool = False
    nuls: int = 0
    first_nul: int | None = None
    replaced: int = 0
    first_bad: int | None = None
    controls: int = 0
    first_control: int | None = None

    def warning(self, path: Path | str) -> str | None:
        """One line naming every kind of damage and how many bytes it cost (None: clean)."""
        parts = []
        if self.nuls:
            parts.append(f"{self.nuls} NUL byte(s) dropped (first at byte {self.first_nul}; a crash while "
                         "writing leaves them)")
        if self.replaced:
            at = "" if self.first_bad is None else f", first at byte {self.first_bad}"
            parts.append(f"{self.replaced} byte(s) that are not UTF-8 replaced (not valid UTF-8{at})")
        if self.controls:
            at = "" if self.first_control is None else f" (first near byte {self.first_control})"
            parts.append(f"{self.controls} control byte(s) dropped{at}")
        if not parts:
            return None
        where = "" if self.encoding == "utf-8" else f" ({self.encoding.upper()})"
        return f"{path}{where}: " + "; ".join(parts)


class Decoder:
    """Blocks of a file's bytes in, clean UTF-8 bytes out (see the module doc)."""

    def __init__(self, keep_nuls: bool = False) -> None:
        """`keep_nuls`: leave NULs in (the CSV reader skips the rows holding them, whole)."""
        self.keep_nuls = keep_nuls
        self.damage = Damage()
        self._codec: str | None = None
        self._dec: codecs.IncrementalDecoder | None = None
        self._offset = 0
        self._ends_line = True
        self._held = b""

    def feed(self, block: bytes, final: bool = False) -> bytes:
        if self._codec is None:
            if not block and not final:
                return b""
            self._codec, skip = encoding_of(block)
            self.damage.encoding, self.damage.bom = self._codec, bool(skip)
            self._dec = codecs.getincrementaldecoder(self._codec)(errors="replace")
            self._offset, block = skip, block[skip:]
        start, self._offset = self._offset, self._offset + len(block)
        if self._codec == "utf-8":
            block = self._hold_cut_code(block, final)
            start = self._offset - len(block) - len(self._held)
            if not self.keep_nuls and b"\x00" in block:
                block = self._drop_nuls(block, start)
            if b"\x1b" in block:
                block = drop_terminal_codes(block)
            if _has_controls(block):
                block = self._drop_controls(block, start)
            block = ascii_rules(block)
            if not self._dec.getstate()[0]:
                try:
                    block.decode("utf-8")
                except UnicodeDecodeError as exc:
                    if self.damage.first_bad is None and exc.reason != "unexpected end of data":
                        self.damage.first_bad = start + exc.start
                else:  # the common case: clean UTF-8, passed through as it is
                    self._note_end(block)
                    return block
            text = self._dec.decode(block, final)
            self.damage.replaced += text.count("\ufffd") - block.count(b"\xef\xbf\xbd")
        else:
            text = self._dec.decode(block, final)
            self.damage.replaced += text.count("\ufffd")
            out = text.encode("utf-8")
            if not self.keep_nuls and b"\x00" in out:
                out = self._drop_nuls(out, start, width=2)
            if _has_controls(out):
                out = self._drop_controls(out, start)
            out = ascii_rules(out)
            self._note_end(out)
            return out
        out = ascii_rules(text.encode("utf-8"))
        self._note_end(out)
        return out

    def _hold_cut_code(self, block: bytes, final: bool) -> bytes:
        """The block with the bytes held from the block before, less its last line's bytes from
        its first ESC on, held for the next block: a terminal code cut by the block's end would
        be neither dropped here nor whole in the next block (no code crosses a newline, so the
        codes before the held part are whole). A held part over `HOLD` bytes (a progress bar
        redrawn with carriage returns, no newline) is not held."""
        if self._held:
            block, self._held = self._held + block, b""
        if not final and b"\x1b" in block:
            at = block.find(b"\x1b", block.rfind(b"\n") + 1)
            if at >= 0 and len(block) - at <= HOLD:
                block, self._held = block[:at], block[at:]
        return block

    def _drop_controls(self, data: bytes, start: int) -> bytes:
        out = data.translate(None, _CONTROL_DELETE)
        if len(out) != len(data):
            if self.damage.first_control is None:
                self.damage.first_control = start + _CONTROL_BYTES.search(data).start()
            self.damage.controls += len(data) - len(out)
        return out

    def _note_end(self, out: bytes) -> None:
        if out:
            self._ends_line = out[-1:] in (b"\n", b"\r")

    def _drop_nuls(self, data: bytes, start: int, width: int = 1) -> bytes:
        """NULs dropped; a run of them inside a line ends that line (a newline)."""
        first = data.find(b"\x00")
        if self.damage.first_nul is None:
            self.damage.first_nul = start + first * width

        def cut(m: re.Match) -> bytes:
            at = m.start()
            prev_ends = self._ends_line if at == 0 else data[at - 1:at] in (b"\n", b"\r")
            after = data[m.end():m.end() + 1]
            return b"" if prev_ends or after in (b"", b"\n", b"\r") else b"\n"

        out = _NULS.sub(cut, data)
        self.damage.nuls += data.count(b"\x00") * width
        return out


CSI_SCAN = 16
"""The longest CSI body (parameters, intermediates) `drop_terminal_codes` reads in NumPy; a
longer one, and any OSC, sends the block to the regex."""
_CSI_CLASS = bytes(1 if 0x30 <= b <= 0x3f else 2 if 0x20 <= b <= 0x2f else 4 if 0x40 <= b <= 0x7e else 0
                   for b in range(256))
"""A CSI code's byte classes: 1 parameter, 2 intermediate, 4 final, 0 none of them."""


def drop_terminal_codes(data: bytes) -> bytes:
    """`_TERMINAL_CODES.sub(b"", data)`, the same bytes, ~2.9x quicker and mostly outside the
    GIL on a coloured log (the regex costs ~0.25 µs a code, and a torchtitan line holds 9).

    A CSI code is ESC `[`, parameter bytes, intermediate bytes and one final byte: three
    disjoint classes, so the regex's match at an ESC is read byte by byte from the ESCs
    found in NumPy, all codes a step at a time, and holds no other ESC (no two matches
    overlap, and every ESC is where the regex would try). No code crosses a newline (not
    one of the classes), so a scan from an ESC before the last newline stops by it and
    needs no bounds check; the few codes after it are the regex's. OSC codes (`ESC ]`) and
    bodies longer than `CSI_SCAN` are left to the regex (`tests/test_decoding_codes.py`
    compares both)."""
    import numpy as np

    a = np.frombuffer(data, np.uint8)
    esc = np.flatnonzero(a == 0x1b)
    if not esc.size:
        return data
    cut = data.rfind(b"\n") + 1
    tail = [m.span() for m in _TERMINAL_CODES.finditer(data, cut)] if esc[-1] >= cut else []
    esc = esc[:np.searchsorted(esc, cut)]
    after = a[esc + 1]
    if (after == 0x5d).any():
        return _TERMINAL_CODES.sub(b"", data)
    esc = esc[after == 0x5b]
    length = np.zeros(esc.size, np.int64)  # -1 no code at this ESC, else its length
    idx, pos = np.arange(esc.size), esc + 2  # the codes still being read, and their next byte
    inter = np.zeros(esc.size, bool)  # an intermediate byte read: no parameter may follow
    classes = np.frombuffer(_CSI_CLASS, np.uint8)
    for k in range(3, 4 + CSI_SCAN):
        if not idx.size:
            break
        if k == 3 + CSI_SCAN:
            return _TERMINAL_CODES.sub(b"", data)
        c = np.take(classes, np.take(a, pos))
        done = (c != 1) & (c != 2) | (c == 1) & inter
        if done.any():
            length[idx[done]] = np.where(c[done] == 4, k, -1)
            running = ~done
            idx, pos, inter, c = idx[running], pos[running], inter[running], c[running]
        pos += 1
        inter |= c == 2
    found = length > 0
    starts, lens = esc[found], length[found]
    if not starts.size and not tail:
        return data
    keep = np.ones(a.size, bool)
    for lo, hi in tail:
        keep[lo:hi] = False
    for k in range(int(lens.max()) if lens.size else 0):
        keep[starts[lens > k] + k] = False
    return a[keep].tobytes()


def _has_controls(data: bytes) -> bool:
    """Whether `data` holds a control byte, at the cost of one vector compare over it and a
    lookup of the few bytes below 0x20 it holds (newlines, mostly), and one memchr for DEL."""
    import numpy as np

    a = np.frombuffer(data, np.uint8)
    return bool(_control_table()[a[a < 0x20]].any()) or b"\x7f" in data


@functools.cache
def _control_table():
    import numpy as np

    table = np.zeros(256, bool)
    table[list(_CONTROL_DELETE)] = True
    return table


def clean_bytes(raw: bytes, keep_nuls: bool = False) -> tuple[bytes, Damage]:
    """A whole file's bytes as clean UTF-8 bytes (the same object when they already
    were), and what decoding them changed."""
    dec = Decoder(keep_nuls)
    return dec.feed(raw, final=True), dec.damage


def clean_file(path: Path | str, raw: bytes, keep_nuls: bool = False) -> bytes:
    """`clean_bytes`, its damage reported as one warning naming the file."""
    from .. import diagnostics

    out, damage = clean_bytes(raw, keep_nuls)
    note = damage.warning(path)
    if note:
        diagnostics.warn(note)
    return out


_DAMAGE_CHARS = re.compile("[\ufffd\x01-\x08\x0b\x0c\x0e-\x1f\x7f]")


def text_head(head: bytes) -> str:
    """A file head as text for claims (a character cut at its end dropped): undecodable and
    control bytes are left out, so one damaged byte in the first rows does not change
    what the file looks like (the reader still counts it)."""
    dec = Decoder()
    # final: a character cut at the end becomes U+FFFD, dropped here; no code is held back
    return _DAMAGE_CHARS.sub("", dec.feed(head, final=True).decode("utf-8", errors="ignore"))


def decode_file(path: Path | str, raw: bytes, keep_nuls: bool = False) -> str:
    """The file's text (`clean_file`)."""
    return clean_file(path, raw, keep_nuls).decode("utf-8")
