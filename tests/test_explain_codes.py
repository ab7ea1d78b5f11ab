"""Every code a detector emits has its own explanation (#25): `spikelens explain SL208` explains
the objective detector, not the divergence page that SL202 owns. Walks every code there is."""
from __future__ import annotations

import pytest

from spikelens.cli import main
from spikelens.detect.codes import codes_by_kind
from spikelens.detect.registry import DETECTORS
from spikelens.explain import catalog


def _every_code() -> set[str]:
    return {c for codes in codes_by_kind().values() for c in codes} | {cls.code for cls in DETECTORS}


def test_every_code_has_a_page_of_its_own():
    codes = sorted(_every_code())
    pages = {code: catalog.lookup(code) for code in codes}
    by_page: dict[tuple[str, str], list[str]] = {}
    for code, entry in pages.items():
        by_page.setdefault((entry.title, entry.what), []).append(code)
    shared = {page[0]: cs for page, cs in by_page.items() if len(cs) > 1}
    assert not shared, f"codes explained by one page: {shared}"
    assert len(codes) >= 25 and {"SL202", "SL208", "SL209"} <= set(codes)


def _explain(code: str, capsys) -> str:
    """Through the real entry point, in process (a subprocess each is slow)."""
    with pytest.raises(SystemExit) as exc:
        main(["explain", code])
    assert not exc.value.code
    return capsys.readouterr().out


@pytest.mark.parametrize("code, title, doc", [("SL208", "Objective fall", "ObjectiveDetector"),
                                              ("SL209", "run-away", "RunawayDetector")])
def test_explain_prints_the_codes_own_detector_text(code, title, doc, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    out = _explain(code, capsys)
    assert title in out and doc in out and "Divergence  (kind divergence)" not in out
    assert "Divergence  (kind divergence)" in _explain("SL202", capsys)
