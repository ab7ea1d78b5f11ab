"""A commented header line over rows of bare numbers: the names of the columns below it.

`np.savetxt(..., header='iter loss val_loss')` writes `# iter loss val_loss`; Torch7's `optim.Logger`
writes `% mean class accuracy (train set)\t` (a `%` comment, each name ended by a tab, names with
spaces in them). A person reads the names between the comment mark and the separator the line uses:
tabs, commas or semicolons when it has any (a name may then hold spaces), else runs of spaces. The
header names the columns only when it gives as many names as the rows hold numbers (one name over one
column of numbers too: the Logger of a single measure).
"""
from __future__ import annotations

import re

_MARKED = re.compile(r"^[ \t]*[#%][ \t]*(?P<names>[A-Za-z_][^\n]*)$")
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)")


def header_names(line: str, width: int) -> list[str] | None:
    """The names a commented header line gives its `width` columns, else None (not a header, a name
    that is a number, or as many names as columns not given)."""
    m = _MARKED.match(line)
    if m is None:
        return None
    text = m["names"]  # its trailing tab says the separator too (`name\t`)
    if re.search(r"[\t,;]", text):
        names = [n.strip() for n in re.split(r"[\t,;]", text)]
    else:
        names = re.split(r"[ \t]+", text)
    names = [n for n in names if n]
    if not names or any(_NUMBER.fullmatch(n) for n in names) or len(names) != width:
        return None
    return names
