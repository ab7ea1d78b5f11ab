"""The findings of one kind on a loss written as a `step,loss` CSV: the fixture the spike tests share."""
from __future__ import annotations

import numpy as np

from spikelens import api, diagnostics


def findings_of(tmp_path, loss: np.ndarray, kind: str = "spike", digits: int = 6) -> list:
    """`digits`: significant digits written (a loss near its floor, 0.0007, needs more than 6)."""
    path = tmp_path / "train.csv"
    path.write_text("step,loss\n" + "\n".join(f"{i},{v:.{digits}g}" for i, v in enumerate(loss)) + "\n")
    with diagnostics.collecting():
        report = api.analyze(path)
    return [f for r in report.runs for f in r.findings if f.kind == kind]
