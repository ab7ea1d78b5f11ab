"""`--executor ray` reports byte for byte what `--executor local` reports: the per-group
work is the same pure function, only the fan-out differs. A real local Ray instance
(2 CPUs, no dashboard) is started here and the CLI joins it through RAY_ADDRESS."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import FIXTURES, run_cli

ray = pytest.importorskip("ray", reason="the 'ray' extra is not installed (pip install 'spikelens[ray]')")

PUBLIC = FIXTURES.parent.parent / "shared" / "bench" / "public"
FOLDERS = [FIXTURES] + ([PUBLIC] if PUBLIC.is_dir() else [])


@pytest.fixture(scope="module")
def ray_address():
    ctx = ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield ctx.address_info["address"]
    finally:
        ray.shutdown()


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_ray_equals_local_byte_for_byte(folder: Path, ray_address: str):
    local = run_cli("analyze", folder, "--format", "json", "--executor", "local")
    on_ray = run_cli("analyze", folder, "--format", "json", "--executor", "ray",
                     env={"RAY_ADDRESS": ray_address})
    assert local.returncode == 0, local.stderr
    assert on_ray.returncode == 0, on_ray.stderr
    assert '"runs": [' in local.stdout and local.stdout.count('"run": ') > 10
    assert on_ray.stdout == local.stdout
    assert on_ray.stderr == local.stderr  # the same warnings, in the same order


def test_ray_task_error_is_one_line(tmp_path: Path, ray_address: str):
    """A named file that is not a log fails inside a Ray task; the user sees the same
    one-line error as with local workers, not a Ray traceback."""
    for i in range(5):  # enough groups to fan out
        (tmp_path / f"run{i}").mkdir()
        (tmp_path / f"run{i}" / "metrics.csv").write_text("step,loss\n" + "".join(f"{s},{2 - s / 100}\n" for s in range(50)))
    bad = tmp_path / "run0" / "metrics.csv"
    bad.write_bytes(b"step,loss\n\x00\x01\x02binary\xff\xfe")
    out = run_cli("analyze", bad, "--format", "json", "--executor", "ray", env={"RAY_ADDRESS": ray_address})
    local = run_cli("analyze", bad, "--format", "json")
    assert out.returncode == local.returncode == 2, out.stderr
    assert out.stderr == local.stderr
    assert "Traceback" not in out.stderr
