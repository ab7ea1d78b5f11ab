"""A series' name as a person says it: the measure, without the word for the container it was kept in.

`loss_history.json` holding `[4.73, 4.24, ...]`, `{"loss_history": [...], "val_acc_list": [...]}`,
`train_losses_log.txt`: the file or key says what the series measures (`loss`, `val_acc`,
`train_losses`) and how the script kept it (a history, a list, a log). A person calls the curve by
its measure, so the container's word is dropped where what is left still names a measure; a name that
would then say nothing (`history`, `value_list`) or clash with another series is kept as written.
"""
from __future__ import annotations

import re

_KEPT_IN = r"history|hist|list|log|logs|record|records|array|arr|curve|values|vals|series|buffer|buf"
_VALUE_WORD = r"(?:的)?值|の?値|[ \t]*값"
""""Value" glued after a name in Chinese, Japanese and Korean prints (`loss值`, `損失の値`, `loss 값`): the value
of the measure, not a part of its name."""
_CONTAINER = re.compile(rf"^(?:(?:{_KEPT_IN})[_\-. ])?(?P<measure>.+?)"
                        rf"(?:[_\-. ](?:{_KEPT_IN}|per[_\-. ]?(?:epoch|step|iter|iteration|batch))|{_VALUE_WORD})?$", re.I)


def plain_name(name: str) -> str:
    """`loss_history` -> `loss`, `val_acc_list` -> `val_acc`; unchanged when the rest names no measure."""
    from ..frame import infer_role

    m = _CONTAINER.fullmatch(name)
    if m is None or m["measure"] == name:
        return name
    measure = m["measure"]
    return measure if infer_role(measure) != "other" else name


def plain_names(names: list[str]) -> dict[str, str]:
    """Each name's `plain_name`, keeping a name as written where its plain form clashes with another."""
    plain = {n: plain_name(n) for n in names}
    taken = [p for p in plain.values()]
    return {n: p if taken.count(p) == 1 and (p == n or p not in names) else n for n, p in plain.items()}
