"""A record holding a list of like records, one per player, seat, agent or head (`"seats": [{"id": 0,
"q_loss": 4.18, ...}, {"id": 1, ...}]`): each member's numbers are series of their own, as a person reads
the table of players, named by the list and the member (`seats.0.q_loss`).

A member is named by its own id key (`id`, `seat`, `player`, `agent`, ...) when every member has a
distinct one, else by its place in the list. Lists of numbers, of text, or of records with no number
are left as they were (skipped by the readers: a histogram, a config list, tags).
"""
from __future__ import annotations

from typing import Any

MAX_MEMBERS = 64
"""Longer lists are data (a batch's samples, a per-class table), not the members of a run."""
_ID_KEYS = ("id", "seat", "player", "agent", "rank", "worker", "client", "idx", "index", "name")


def has_member_lists(rows: list[dict[str, Any]]) -> bool:
    """Whether any of the rows holds a list of records with numbers (cheap: checked on a file's head)."""
    return any(_members(v) is not None for r in rows for v in r.values())


def spread_lists(row: dict[str, Any]) -> dict[str, Any]:
    """The row with each list of like records turned into a record of its members by id or place,
    so the dotted keys name them (`seats.1.q_loss`); other values unchanged."""
    out: dict[str, Any] = {}
    for k, v in row.items():
        members = _members(v)
        out[k] = v if members is None else members
    return out


def _members(value: Any) -> dict[str, dict[str, Any]] | None:
    if not isinstance(value, list) or not 0 < len(value) <= MAX_MEMBERS or not all(isinstance(m, dict) for m in value):
        return None
    if not any(isinstance(x, (int, float)) and not isinstance(x, bool) for m in value for x in m.values()):
        return None
    key = next((k for k in _ID_KEYS if all(isinstance(m.get(k), (int, str)) and not isinstance(m.get(k), bool)
                                           for m in value) and len({str(m[k]) for m in value}) == len(value)), None)
    if key is None:
        return {str(i): m for i, m in enumerate(value)}
    return {str(m[key]): {a: b for a, b in m.items() if a != key} for m in value}
