"""Importers: one module per family of formats, each returning `Table`s in one schema.
The ordered list is `importers.registry.IMPORTERS`."""
from .base import Importer, Table

__all__ = ["Importer", "Table"]
