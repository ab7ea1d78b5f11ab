"""`spikelens export --format parquet|csv|tensorboard|wandb` (#28): the format is given or read
from `-o`'s extension, and the two must agree. `-o a.json` was written as a TensorBoard folder
named `a.json/`; `--format parquet` was refused while Parquet was chosen by extension."""
from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from spikelens.errors import UsageError
from spikelens.export.target import FORMATS, export_format

from test_cli_overwrite import cli, lightning_csv  # noqa: F401  (the in-process entry point)


@pytest.mark.parametrize("out, given, fmt", [
    ("all.parquet", None, "parquet"), ("ALL.CSV", None, "csv"), ("fixed", None, "tensorboard"),
    ("all.parquet", "parquet", "parquet"), ("all.csv", "csv", "csv"), ("fixed", "wandb", "wandb"),
    ("run.v2", "tensorboard", "tensorboard"),  # an extension no file format uses: a folder name, when said so
])
def test_the_format_from_the_option_or_the_extension(out, given, fmt, tmp_path):
    assert export_format(tmp_path / out, given) == fmt


@pytest.mark.parametrize("out, given, needle", [
    ("a.json", None, "cannot tell the format from '.json'; use FILE.parquet, FILE.csv, or a folder name"),
    ("run.v2", None, "cannot tell the format from '.v2'"),
    ("a.json", "tensorboard", "--format tensorboard writes a folder, and a.json names a .json file"),
    ("a.parquet", "wandb", "or --format parquet for the .parquet file"),
    ("a.parquet", "csv", "--format csv writes one .csv file; name it a.csv"),
    ("fixed", "parquet", "--format parquet writes one .parquet file; name it fixed.parquet"),
])
def test_an_extension_that_disagrees_is_one_line_listing_the_choices(out, given, needle, tmp_path):
    with pytest.raises(UsageError) as exc:
        export_format(tmp_path / out, given)
    assert needle in str(exc.value) and "\n" not in str(exc.value)


def test_an_existing_folder_is_a_folder_whatever_its_name(tmp_path):
    (tmp_path / "exports.csv").mkdir()
    assert export_format(tmp_path / "exports.csv", None) == "tensorboard"
    with pytest.raises(UsageError, match="writes one .csv file"):
        export_format(tmp_path / "exports.csv", "csv")


def test_cli_formats_given_outright_and_mismatches_refused(cli, tmp_path):  # noqa: F811
    logs = tmp_path / "logs"
    lightning_csv(logs / "r", 3, steps=120)
    for fmt in ("parquet", "csv"):
        out = tmp_path / f"all.{fmt}"
        res = cli("export", logs, "-o", out, "--format", fmt)
        assert res.code == 0, res.err
        back = pl.read_parquet(out) if fmt == "parquet" else pl.read_csv(out)
        assert back.filter(pl.col("metric") == "train_loss").height == 120
    for args in (("-o", tmp_path / "a.json"), ("-o", tmp_path / "a.json", "--format", "tensorboard"),
                 ("-o", tmp_path / "a.parquet", "--format", "csv"), ("-o", tmp_path / "b.csv", "-f", "wandb")):
        res = cli("export", logs, *args)
        lines = [line for line in res.err.splitlines() if line.strip()]
        assert res.code == 2 and len(lines) == 1 and "Traceback" not in res.err, (args, res.err)
        assert any(f in lines[0] for f in FORMATS)
        assert not Path(args[1]).exists()  # never a folder silently named a.json/
    res = cli("export", logs, "-o", tmp_path / "a.json")
    assert "parquet|csv|tensorboard|wandb" in res.err
