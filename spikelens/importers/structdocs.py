"""Training histories saved as YAML or TOML documents, read as their JSON twins are.

`yaml.safe_dump({"loss": [...], "val_loss": [...]})` and `toml.dump({"epoch": [{"epoch": 1, "loss": ..}, ...]})`
hold the same objects a JSON history does (an object of lists, a list of records in a section), so
once parsed they go through `jsonhistory`'s reading. A YAML or TOML file is claimed only when its
first bytes show such a history: a key naming a measure (a loss, an accuracy, a reward, an error)
over a list of three numbers or more, a YAML list of records one of whose first keys names one, or
a TOML array of tables whose first table names one.
Settings files (`milestones: [30, 60]`, `lr = 0.1`) are left to the other readers.

YAML is parsed with PyYAML's safe loader (nothing in the file is run); without PyYAML the file is
refused with a line that says so. TOML is parsed with the standard library's `tomllib`.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..errors import FormatError

SUFFIXES = frozenset({".yaml", ".yml", ".toml"})
_MEASURE = rb"[^\s:=\[\]{}\"']{0,60}(?:loss|acc|accuracy|reward|return|score|error|mse|mae|ppl|perplexity)[^\s:=\[\]{}\"']{0,60}"
_YAML_LIST = re.compile(rb"(?im)^\s{0,8}[\"']?" + _MEASURE + rb"[\"']?\s*:\s*(?:\n\s*-\s*[-+\d.][^\n]*){3}")
"""`loss:` over three block items that are numbers (`- 2.31`)."""
_YAML_FLOW = re.compile(rb"(?im)^\s{0,8}[\"']?" + _MEASURE + rb"[\"']?\s*:\s*\[\s*(?:[-+\d.][^,\]]*,\s*){2}[-+\d.]")
"""`loss: [2.31, 2.10, 1.98, ...]`."""
_YAML_RECORDS = re.compile(rb"(?m)^-[ \t]+(?:[\w\"'.\-/]+[ \t]*:[^\n]*\n[ \t]{1,8}){0,20}?[\"']?" + _MEASURE
                           + rb"[\"']?[ \t]*:[ \t]*[-+\d.]")
"""A list of records (`- epoch: 1` then `  loss: 2.31`, a record appended an epoch): among an item's
first keys, a measure with a number."""
_TOML_LIST = re.compile(rb"(?im)^\s*[\"']?" + _MEASURE + rb"[\"']?\s*=\s*\[\s*(?:[-+\d.][^,\]]*,\s*){2}[-+\d.]")
_TOML_TABLES = re.compile(rb"(?is)^\s*(?:#[^\n]*\n\s*)*\[\[[^\]\n]{1,80}\]\]\s*\n(?:\s*[\w\"'.\-/]+\s*=[^\n]*\n){0,20}?\s*[\"']?"
                          + _MEASURE + rb"[\"']?\s*=\s*[-+\d.]")
"""`[[epoch]]` and, among its first keys, a measure with a number (`train_loss = 0.52`)."""


def claims(path: Path, head: bytes) -> bool:
    """A YAML or TOML document whose head shows a history (see the module doc)."""
    if path.suffix.lower() == ".toml":
        return bool(_TOML_LIST.search(head) or _TOML_TABLES.match(head))
    return bool(_YAML_LIST.search(head) or _YAML_FLOW.search(head) or _YAML_RECORDS.search(head))


def load(path: Path, text: str) -> Any:
    """The document's object; a one-line FormatError when it is not whole, or YAML cannot be parsed here."""
    if path.suffix.lower() == ".toml":
        import tomllib

        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise FormatError(path, f"not a whole TOML document ({exc})") from None
    try:
        import yaml
    except ImportError:
        raise FormatError(path, "a YAML history, and PyYAML is not installed to parse it (pip install pyyaml)") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise FormatError(path, f"not a whole YAML document ({str(exc).splitlines()[0]})") from None
