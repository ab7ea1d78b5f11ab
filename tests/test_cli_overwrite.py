"""One overwrite policy for every output (#28): an output already there is refused with one
line naming it and saying `--force` replaces it (exit 2, the file untouched, nothing read
when the name is known up front); `--force` replaces it in one rename. Outputs made to be
updated keep doing so (`--summary` appends, `--update-baseline` re-records a baseline, a
`--findings` dataset is updated), and the logs read are refused even with `--force`.

The logs are Lightning CSVLogger `version_0/metrics.csv` files written here, one with a
loss spike (so the JUnit, remedy and plot outputs have something to say)."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from conftest import main_in_process, tree_hashes
from spikelens.errors import OutputExists
from spikelens.outputs import atomic_folder, atomic_write_text, claim, is_temp_name, occupied, write_output

MINE = "mine: not spikelens'\n"


def lightning_csv(folder: Path, seed: int, steps: int = 400, spike_at: int | None = None) -> Path:
    """`folder/version_0/metrics.csv` as CSVLogger writes it (header, one row per step)."""
    rng = np.random.default_rng(seed)
    s = np.arange(steps)
    loss = 2.0 * np.exp(-s / 150) + 1.0 + 0.02 * rng.standard_normal(steps)
    if spike_at is not None:
        loss[spike_at:spike_at + 3] *= 6
    path = folder / "version_0" / "metrics.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["epoch", "step", "train_loss"])
        for step, v in zip(s, loss):
            w.writerow([int(step) // 100, int(step), repr(float(v))])
    return path


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("overwrite") / "runs"
    lightning_csv(root / "spiky", 1, spike_at=250)
    return root


class Ran:
    def __init__(self, code: int, out: str, err: str):
        self.code, self.out, self.err = code, out, err


@pytest.fixture()
def cli(capsys, in_empty_folder):
    """The real entry point, in this process (fast), from an empty working folder."""
    def run(*args) -> Ran:
        code, out, err = main_in_process(capsys, *args)
        return Ran(code or 0, out, err)

    return run


def refused(res: Ran, path: Path) -> bool:
    """Exit 2 and one line naming the path and saying --force replaces it."""
    lines = [line for line in res.err.splitlines() if line.strip()]
    return (res.code == 2 and len(lines) == 1 and "Traceback" not in res.err and str(path) in lines[0]
            and "already exists; --force replaces it" in lines[0])


def no_temps(folder: Path) -> bool:
    return not [p for p in folder.rglob("*") if is_temp_name(p.name)]


# ---------------------------------------------------------------- each output flag

FILE_OUTPUTS = {
    "export -o FILE.parquet": ("all.parquet", lambda logs, out: ("export", logs, "-o", out)),
    "export -o FILE.csv --format csv": ("all.csv", lambda logs, out: ("export", logs, "-o", out, "--format", "csv")),
    "stitch -o FILE.parquet": ("s.parquet", lambda logs, out: ("stitch", logs / "spiky", "-o", out, "-f", "json",
                                                               "--no-charts")),
    "analyze --html": ("r.html", lambda logs, out: ("analyze", logs, "--html", out, "-f", "json", "--no-charts")),
    "analyze --remedy": ("fix.json", lambda logs, out: ("analyze", logs, "--remedy", out, "-f", "json",
                                                        "--no-charts")),
    "check --junit": ("j.xml", lambda logs, out: ("check", logs, "--junit", out, "-f", "json", "--exit-zero")),
}


@pytest.mark.parametrize("case", list(FILE_OUTPUTS))
def test_an_existing_output_is_refused_up_front_and_replaced_with_force(case, logs, cli, tmp_path):
    name, args = FILE_OUTPUTS[case]
    out = tmp_path / name
    out.write_text(MINE)
    res = cli(*args(logs, out))
    assert refused(res, out), res.err
    assert out.read_text() == MINE and no_temps(tmp_path)
    res = cli(*args(logs, out), "--force")
    assert res.code == 0, res.err
    assert out.read_bytes() != MINE.encode() and out.stat().st_size > 100 and no_temps(tmp_path)
    if name.endswith(".parquet"):
        assert pl.read_parquet(out).height > 0
    elif name.endswith(".json"):
        assert "runs" in json.loads(out.read_text())


def test_plot_pngs_and_an_export_folder_follow_the_same_policy(logs, cli, tmp_path):
    plots = tmp_path / "plots"
    plots.mkdir()
    (plots / "notes.txt").write_text(MINE)  # a folder of the user's: other files are no obstacle
    (plots / "spiky.png").write_text(MINE)  # the name the run's picture takes
    res = cli("analyze", logs, "--plot", plots, "-f", "json", "--no-charts")
    assert refused(res, plots / "spiky.png"), res.err
    assert sorted(p.name for p in plots.iterdir()) == ["notes.txt", "spiky.png"]  # no PNG drawn before the check
    assert (plots / "spiky.png").read_text() == MINE
    res = cli("analyze", logs, "--plot", plots, "-f", "json", "--no-charts", "--force")
    assert res.code == 0, res.err
    pngs = sorted(p.name for p in plots.glob("*.png"))
    assert "spiky.png" in pngs and len(pngs) >= 2  # the run and its spike
    assert (plots / "spiky.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (plots / "notes.txt").read_text() == MINE and no_temps(plots)

    out = tmp_path / "tb"
    assert cli("export", logs / "spiky", "-o", out).code == 0
    (old,) = (out / "spiky").iterdir()
    res = cli("export", logs / "spiky", "-o", out, "--format", "tensorboard")
    assert refused(res, out / "spiky"), res.err
    assert [p.name for p in (out / "spiky").iterdir()] == [old.name]
    res = cli("export", logs / "spiky", "-o", out, "--force")
    assert res.code == 0, res.err
    assert len(list((out / "spiky").iterdir())) == 1 and not old.exists() and no_temps(tmp_path)


def test_the_logs_read_are_refused_even_with_force(logs, cli, tmp_path):
    before = tree_hashes(logs)
    log = logs / "spiky" / "version_0" / "metrics.csv"
    for args in (("export", log, "-o", log, "--format", "csv", "--force"),
                 ("analyze", logs, "--html", logs / "r.html", "--force"),
                 ("check", logs, "--junit", log, "--force")):
        res = cli(*args)
        assert res.code == 2 and ("is being read" in res.err or "inside the logs" in res.err), (args, res.err)
    assert tree_hashes(logs) == before


# ---------------------------------------------------------------- outputs made to be updated

def test_summary_appends_and_update_baseline_re_records(logs, cli, tmp_path):
    summary = tmp_path / "summary.md"
    summary.write_text("# earlier step\n")  # $GITHUB_STEP_SUMMARY holds the job's earlier steps
    res = cli("check", logs, "--summary", summary, "-f", "json", "--exit-zero")
    assert res.code == 0, res.err
    text = summary.read_text()
    assert text.startswith("# earlier step\n") and "spikelens check" in text

    base = tmp_path / "base.json"
    for _ in range(2):  # recorded, then re-recorded: that is what the flag is for
        res = cli("check", logs, "--baseline", base, "--update-baseline", "-f", "json")
        assert res.code == 0, res.err
        assert json.loads(base.read_text())["schema"] == "spikelens.baseline/1"
    other = tmp_path / "spikelens.toml"  # a typo naming another file is never replaced silently
    other.write_text("[tool.spikelens]\n")
    res = cli("check", logs, "--baseline", other, "--update-baseline", "-f", "json")
    assert refused(res, other) and "not a spikelens baseline" in res.err
    assert other.read_text() == "[tool.spikelens]\n"
    assert cli("check", logs, "--baseline", other, "--update-baseline", "-f", "json", "--force").code == 0
    assert json.loads(other.read_text())["schema"] == "spikelens.baseline/1"


def test_a_findings_dataset_is_updated_without_force(logs, cli, tmp_path):
    data = tmp_path / "findings.parquet"
    for _ in range(2):
        res = cli("analyze", logs, "--findings", data, "-f", "json", "--no-charts")
        assert res.code == 0, res.err
    assert pl.read_parquet(data).height > 0


# ---------------------------------------------------------------- the functions

def test_claim_and_write_output(tmp_path):
    f = tmp_path / "a.txt"
    claim(f, "-o", force=False)  # nothing there
    write_output(f, lambda tmp: tmp.write_text("one"), "-o", force=False)
    with pytest.raises(OutputExists, match=r"-o .*a\.txt: already exists; --force replaces it"):
        write_output(f, lambda tmp: tmp.write_text("two"), "-o", force=False)
    assert f.read_text() == "one"
    write_output(f, lambda tmp: tmp.write_text("two"), "-o", force=True)
    assert f.read_text() == "two"

    def sneaky(tmp: Path) -> None:  # another process takes the name while the output is written
        tmp.write_text("late")
        (tmp_path / "b.txt").write_text("theirs")

    with pytest.raises(OutputExists):
        write_output(tmp_path / "b.txt", sneaky, "-o", force=False)
    assert (tmp_path / "b.txt").read_text() == "theirs" and no_temps(tmp_path)

    empty = tmp_path / "empty"
    empty.mkdir()
    assert not occupied(empty) and not occupied(tmp_path / "none") and occupied(f)
    full = tmp_path / "full"
    full.mkdir()
    atomic_write_text(full / "old.txt", "old")
    with atomic_folder(full, replace=True) as tmp:
        (tmp / "new.txt").write_text("new")
    assert [p.name for p in full.iterdir()] == ["new.txt"] and no_temps(tmp_path)
