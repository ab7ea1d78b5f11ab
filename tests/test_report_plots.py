"""PNG plots: one per run, findings shaded, superseded points faint, long series enveloped."""
from __future__ import annotations

import io

import numpy as np

from report_cases import clean_run, nan_run, resumed_run, spiky_run
from spikelens.model.report import Report, RunReport
from spikelens.report.plots import Span, envelope, figure, file_name, finding_spans, label_rows, plot_run, write_plots

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _image(png: bytes) -> np.ndarray:
    import matplotlib.image as mpimg

    return mpimg.imread(io.BytesIO(png), format="png")


def test_panels_follow_the_roles_present():
    fig = figure(nan_run())
    labels = [ax.get_ylabel() for ax in fig.axes]
    assert labels == ["loss", "grad norm", "learning rate", "loss scale"]
    assert fig.axes[0].get_yscale() == "log" and fig.axes[2].get_yscale() == "linear"
    assert figure(resumed_run()).axes[0].get_ylabel() == "loss" and len(figure(resumed_run()).axes) == 1


def test_png_is_a_readable_picture_whose_height_grows_with_panels():
    one, four = _image(plot_run(resumed_run())), _image(plot_run(nan_run()))
    assert one.shape[1] == four.shape[1] == 1200
    assert four.shape[0] > one.shape[0] > 300


def test_superseded_points_are_drawn_faint():
    ax = figure(resumed_run()).axes[0]
    lines = {l.get_label(): l for l in ax.get_lines()}
    old = lines["loss (superseded)"]
    assert old.get_alpha() < 0.6 and lines["loss"].get_alpha() in (None, 1.0)
    assert set(np.asarray(old.get_xdata())) <= set(range(2000, 2200))


def test_nonfinite_values_are_marked():
    ax = figure(nan_run()).axes[0]
    marks = [c for c in ax.collections if c.get_label() == "loss NaN/inf"]
    assert marks and marks[0].get_offsets().shape[0] == 390


def test_finding_spans():
    spans = finding_spans(nan_run(), last_step=3999)
    assert [(s.label, s.x0, s.x1) for s in spans] == [("divergence", 3500, 3999), ("nan", 3610, 3999)]
    spans = finding_spans(spiky_run(), last_step=5999)
    assert [(s.label, s.x0, s.x1, s.color) for s in spans] == [("spike", 3203, 3260, "#ff7f0e"),
                                                               ("spike", 5099, 5812, "#ff7f0e")]
    spans = finding_spans(resumed_run(), last_step=3999)
    assert [(s.label, s.x0, s.line) for s in spans] == [("resume_overlap", 2000, True), ("spike", 2005, False)]
    assert finding_spans(clean_run()) == []


def test_spans_are_drawn_on_every_panel():
    fig = figure(spiky_run())
    for ax in fig.axes:
        assert len([p for p in ax.patches]) == 2


def test_overlapping_labels_go_to_separate_rows():
    spans = [Span(100, 100, "r", "divergence"), Span(101, 200, "r", "nan"), Span(900, 950, "r", "spike")]
    rows = {sp.label: r for sp, r in label_rows(spans, (0, 1000))}
    assert rows == {"divergence": 0, "nan": 1, "spike": 0}


def test_envelope_keeps_the_extremes_of_a_long_series():
    rng = np.random.default_rng(0)
    step = np.arange(1_000_000)
    value = 3 + 0.1 * rng.standard_normal(step.size)
    value[654_321], value[10] = 50.0, -5.0
    xs, ys = envelope(step, value, max_points=2000)
    assert xs.size == ys.size == 2000
    assert ys.max() == 50.0 and ys.min() == -5.0
    assert np.all(np.diff(xs) >= 0)
    short = np.arange(10)
    assert envelope(short, short * 1.0)[0] is short


def test_run_without_plottable_metrics_still_gets_a_picture():
    run = RunReport(run="empty", sources=[], segments=[], metrics={}, frame=None)
    assert plot_run(run).startswith(PNG_MAGIC)


def test_file_names_are_safe_and_unique():
    used: set[str] = set()
    names = [file_name(n, used) for n in ("group/run:1", "group_run_1", "../..", "a b")]
    assert names == ["group_run_1.png", "group_run_1-2.png", "run.png", "a_b.png"]


def test_write_plots_creates_the_folder_one_png_per_run_and_one_per_finding(tmp_path):
    out = tmp_path / "deep" / "plots"
    paths = write_plots(Report("analyze", [spiky_run(), resumed_run()]), out)
    # the run's picture first, then one zoom per finding that needs attention (info notes get none)
    assert sorted(p.name for p in out.iterdir()) == ["bert-resume--spike-2005.png", "bert-resume.png",
                                                     "gpt-small-3--spike-3204.png", "gpt-small-3--spike-5100.png",
                                                     "gpt-small-3.png"]
    assert [p.name for p in paths["gpt-small-3"]][0] == "gpt-small-3.png"
    assert all(p.read_bytes().startswith(PNG_MAGIC) for ps in paths.values() for p in ps)


def test_finding_pngs_are_capped_per_run_worst_first(tmp_path, monkeypatch):
    from spikelens.report import plots

    monkeypatch.setattr(plots, "MAX_FINDING_PNGS", 1)
    run = nan_run()  # a divergence and two NaN findings, all errors
    paths = write_plots(Report("analyze", [run]), tmp_path)["llama-fp16"]
    assert [p.name for p in paths] == ["llama-fp16.png", "llama-fp16--divergence-3500.png"]


def test_finding_png_zooms_on_the_finding():
    from spikelens.report.plots import finding_figure

    run = spiky_run()
    spike = next(f for f in run.findings if f.peak_step == 3204)
    fig = finding_figure(run, spike)
    lo, hi = fig.axes[0].get_xlim()
    assert lo < spike.start_step and spike.end_step < hi  # the spike and its recovery, with some baseline
    assert hi - lo < 0.1 * 6000  # a zoom, not the whole run
    from spikelens.model.finding import Finding

    note = Finding(kind="noise", code="SL150", run=run.run, metric="train/loss", severity="info", message="noisy")
    assert finding_figure(run, note) is None  # a run-wide note has no stretch to zoom on


def test_evidence_metric_findings_are_shaded_in_their_own_panel_only():
    from spikelens.model.finding import Finding

    run = nan_run()
    run.findings.append(Finding(kind="loss_scale_collapse", code="SL402", run=run.run, metric="loss_scale",
                                severity="warning", message="halved", start_step=3480, end_step=3600))
    spans = [s for s in finding_spans(run, 3999) if s.label == "loss_scale_collapse"]
    assert [(s.x0, s.x1, s.metric) for s in spans] == [(3480, 3600, "loss_scale")]
    fig = figure(run)
    assert [len(ax.patches) for ax in fig.axes] == [2, 2, 2, 3]
