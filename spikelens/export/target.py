"""Which format `export -o PATH [--format F]` writes, checked against PATH before anything
is read: a file format wants its own extension, a folder format a name that is not a
file's, and with no `--format` the extension decides (`a.json` is an error listing the
choices, never a TensorBoard folder named `a.json/`)."""
from __future__ import annotations

from pathlib import Path

from ..errors import UsageError

FILE_FORMATS = {"parquet": ".parquet", "csv": ".csv"}
"""Formats written as one file: the long frame of every run, by extension."""
FOLDER_FORMATS = ("tensorboard", "wandb")
"""Formats written as a folder (`-o DIR`, the run under DIR/<run>)."""
FORMATS = tuple(FILE_FORMATS) + FOLDER_FORMATS
FILE_LIKE = frozenset({".parquet", ".csv", ".tsv", ".json", ".jsonl", ".ndjson", ".html", ".htm", ".txt", ".md",
                       ".xml", ".log", ".png", ".pdf", ".yaml", ".yml", ".toml", ".gz", ".zip", ".tar", ".arrow",
                       ".feather", ".npz", ".npy", ".pt", ".pkl", ".db", ".sqlite", ".tfevents"})
"""Extensions that name a file: a folder format refuses them (`-o a.json --format tensorboard`)."""
CHOICES = ("FILE.parquet, FILE.csv, or a folder name with no extension (tensorboard; --format wandb for W&B); "
           f"--format {'|'.join(FORMATS)} says it outright")


def export_format(output: Path, given: str | None) -> str:
    """The format to write, from `--format` or else from OUTPUT's extension; UsageError (one
    line) when they disagree or the extension names none."""
    suffix = output.suffix.lower()
    is_folder = output.is_dir()
    if given is None:
        by_ext = {ext: fmt for fmt, ext in FILE_FORMATS.items()}
        if suffix in by_ext and not is_folder:
            return by_ext[suffix]
        if not suffix or is_folder:
            return "tensorboard"
        raise UsageError(f"-o {output}: cannot tell the format from {suffix!r}; use {CHOICES}")
    if given not in FORMATS:
        raise UsageError(f"--format {given!r}: not a format; choose {', '.join(FORMATS)}")
    if given in FILE_FORMATS:
        want = FILE_FORMATS[given]
        if suffix != want or is_folder:
            raise UsageError(f"-o {output}: --format {given} writes one {want} file; name it "
                             f"{output.with_suffix(want).name if suffix else output.name + want}")
        return given
    if suffix in FILE_LIKE and not is_folder:
        other = f" (or --format {suffix[1:]} for the {suffix} file)" if suffix[1:] in FILE_FORMATS else ""
        raise UsageError(f"-o {output}: --format {given} writes a folder, and {output.name} names a {suffix} file; "
                         f"give a folder name{other}")
    return given
