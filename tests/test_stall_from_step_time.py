"""A stall in a log without a clock: the PyTorch word_language_model example prints the mean
`ms/batch` of the last 100 batches and no time stamps; an interval where the machine paused
(laptop sleep, contention) shows as a step time tens of times the run's usual. Fixtures: the
example's console lines written here as it prints them; must fire on isolated pauses, stay
silent on a steady run, on the first interval's warm-up and on a pause at every epoch's end
(an evaluation inside the interval: routine)."""
from __future__ import annotations

from spikelens import api, diagnostics

BATCHES = 2000


def _log(ms: dict[tuple[int, int], float], epochs: int = 6, every_epoch_end: float | None = None) -> str:
    out = []
    for e in range(1, epochs + 1):
        for b in range(100, BATCHES + 1, 100):
            t = ms.get((e, b), 220.0 + 7.0 * ((e * 31 + b // 100 * 17) % 5))
            if every_epoch_end is not None and b == BATCHES:
                t = every_epoch_end
            loss = 6.5 - 0.3 * e - 0.0002 * b
            out.append(f"| epoch {e:3d} | {b:5d}/{BATCHES:5d} batches | lr 20.00 | ms/batch {t:5.2f} | "
                       f"loss {loss:5.2f} | ppl {2.718 ** loss:8.2f}\n")
        out.append("-" * 89 + "\n" + f"| end of epoch {e:3d} | time: 460.00s | valid loss {5.9 - 0.3 * e:5.2f} | "
                   f"valid ppl {2.718 ** (5.9 - 0.3 * e):8.2f}\n" + "-" * 89 + "\n")
    return "".join(out)


def _stalls(tmp_path, text: str):
    path = tmp_path / "train_log.txt"
    path.write_text(text)
    with diagnostics.collecting():
        (run,) = api.analyze(path).runs
    return [f for f in run.findings if f.kind == "stall"]


def test_isolated_pauses_in_the_step_time_are_stalls(tmp_path, no_workers):
    found = _stalls(tmp_path, _log({(3, 700): 9800.0, (3, 800): 4100.0, (5, 1500): 10500.0}))
    assert len(found) == 2 and all(f.severity == "info" and f.evidence["from"] == "step_time" for f in found)
    assert found[0].magnitude > 20 and found[0].start_step < found[0].end_step


def test_a_steady_run_and_its_warm_up_are_no_stall(tmp_path, no_workers):
    assert _stalls(tmp_path, _log({(1, 100): 30000.0})) == []  # the first interval: compilation, caches


def test_a_pause_at_every_epochs_end_is_routine(tmp_path, no_workers):
    assert _stalls(tmp_path, _log({}, every_epoch_end=9000.0)) == []
