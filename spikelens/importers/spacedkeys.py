"""Keys of several words written without a link: `Batch Loss 4.59 Tokens per Sec 8992 LR 3e-4`.

A line that is nothing but names and their numbers, each name a few words and each number right
after its name (`Epoch 3 Train Loss 0.512 Val Acc 91.2`), is read by a person as pairs: the words
before a number name it, though no `:` or `=` says so. The same words in a sentence (`Loaded 3 shards
in 12 seconds`) are no pairs, so the pairs must run to the line's end, be two at least, hold no word
that makes a sentence (a clause, a copula, a joining word) and one of them must name a measure
(a loss, an accuracy, a reward): `spaced_pairs` gives the numbers so named, `tokenise` links them.
The grammar treats the ten digits alike, as `linetokens`' does (it runs on line shapes).
"""
from __future__ import annotations

import re
from typing import Callable

_PIECE = re.compile(
    r"(?P<num>(?<![\w.])[-+]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|(?i:nan|inf)(?![A-Za-z]))"
    r"(?:,\d\d\d)*(?:\.\d+)?[%A-Za-z/]*)(?![\w.])"
    r"|(?P<word>[^\W\d][\w\-./@]*)"
    r"|(?P<sep>[,;|]|\s-\s|\s{2,})"
    r"|(?P<space>[ \t])"
    r"|(?P<other>\S)")
"""A line cut into numbers (a unit glued on: `91.2%`, `12ms`), words, separators between pairs
(`,`, `;`, `|`, ` - `, two spaces or more), single spaces and anything else (a bracket, a link)."""
MAX_WORDS = 4
"""The most words a name of this kind has (`Tokens per Sec`, `Avg Train Loss Total`)."""


def spaced_pairs(clean: str, measured: Callable[[str], bool], stop: frozenset[str] | set[str]) -> set[int]:
    """The start offsets of the numbers in `clean` that close a run of words naming them: the pairs
    (1 to MAX_WORDS words, one space apart, then a number) that end the line, read back from its end,
    two pairs at least; none of their words in `stop` (lower case), one name `measured`."""
    pieces = [(m.lastgroup, m.group(), m.start()) for m in _PIECE.finditer(clean.rstrip())]
    pairs: list[tuple[int, list[str]]] = []
    i = len(pieces) - 1
    while i >= 0 and pieces[i][0] in ("sep", "space"):
        i -= 1
    while i >= 0 and pieces[i][0] == "num":
        at = pieces[i][2]
        i -= 1
        if i < 0 or pieces[i][0] != "space":
            break
        words: list[str] = []
        while i >= 1 and pieces[i][0] == "space" and pieces[i - 1][0] == "word":
            words.insert(0, pieces[i - 1][1])
            i -= 2
        if not words or len(words) > MAX_WORDS or any(w.lower() in stop for w in words):
            break
        pairs.append((at, words))
        while i >= 0 and pieces[i][0] in ("sep", "space"):
            i -= 1  # what parts this pair from the one before (` `, `, `, ` | `)
    if len(pairs) < 2 or not any(len(ws) > 1 for _, ws in pairs):
        return set()
    if not any(measured("_".join(ws)) for _, ws in pairs):
        return set()
    return {at for at, _ in pairs}
