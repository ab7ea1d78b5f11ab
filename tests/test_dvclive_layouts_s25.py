"""A DVCLive 0.x folder (`<dir>/<metric>.tsv`, each headed `step` and its own name) reads as one run however its
files were laid out again (#24, `perturb_tables.py`): rewritten by pandas with `;` separators, upper-case or
reordered columns, a trailing separator, or a note above the header, the metrics keep their steps and values.
The files are DVCLive's own (`fixtures/trackers/dvclive_run`, written by `dvclive.Live`), copied flat."""
from __future__ import annotations

import io
import shutil
from pathlib import Path

import pandas as pd
import pytest

from spikelens import api, diagnostics

METRICS = Path(__file__).resolve().parent.parent / "fixtures" / "trackers" / "dvclive_run" / "dvclive" / "plots" / "metrics"


def _flat(dst: Path) -> Path:
    dst.mkdir(parents=True)
    for f in METRICS.rglob("*.tsv"):
        shutil.copy(f, dst / f.name)
    return dst


def _read(folder: Path) -> list[dict[str, list]]:
    with diagnostics.collecting():
        runs = api.load_runs(folder)
    return [{str(m): sorted(zip(g["step"].to_list(), g["value"].to_list()))
             for (m,), g in r.frame.sort("metric", "step").group_by("metric", maintain_order=True)} for r in runs]


def _relay(text: str, how: str) -> str:
    df = pd.read_csv(io.StringIO(text), sep="\t")
    if how == "semicolon":
        return df.to_csv(sep=";", index=False)
    if how == "upper":
        return df.rename(columns=str.upper).to_csv(sep="\t", index=False)
    if how == "reversed":
        return df[df.columns[::-1]].to_csv(sep="\t", index=False)
    if how == "trailing":
        return "".join(line + "\t\n" for line in df.to_csv(sep="\t", index=False).splitlines())
    return "# dvclive 0.x, run 2\n" + df.to_csv(sep="\t", index=False)  # a note above the header


@pytest.mark.parametrize("how", ["semicolon", "upper", "reversed", "trailing", "note"])
def test_a_flat_dvclive_folder_laid_out_again_is_the_same_one_run(tmp_path, how, no_workers):
    pristine = _flat(tmp_path / "dvclive_logs")
    want = _read(pristine)
    assert len(want) == 1 and {"loss", "grad_norm", "lr"} <= set(want[0])
    relaid = _flat(tmp_path / how / "dvclive_logs")
    for f in relaid.glob("*.tsv"):
        f.write_text(_relay(f.read_text(), how))
    assert _read(relaid) == want
