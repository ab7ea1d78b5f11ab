"""The explicit, ordered list of importers: the first that claims a source reads it.

Folder importers (a W&B offline run, an MLflow run) come first so that the files
inside a claimed folder are not read again by a file importer.
"""
from __future__ import annotations

from .base import Importer
from .textlogs import TextLogImporter

IMPORTERS: tuple[Importer, ...] = (
    TextLogImporter(),  # keep last: the most permissive (any .log/.txt a pattern matches)
)
