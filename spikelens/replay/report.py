"""The replay report: `spikelens.replay/1` JSON (the contract in schema.py) and the Rich view."""
from __future__ import annotations

import json
from typing import Any

from ..model.finding import json_float
from .outcome import ReplayReport

SCHEMA_ID = "spikelens.replay/1"


def _num(x: Any) -> Any:
    """JSON-safe numbers, as the findings report writes them: NaN and ±inf as strings."""
    if x is None or isinstance(x, (bool, str)):
        return x
    if isinstance(x, int):
        return x
    return json_float(float(x))


def _clean(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return _num(obj)


def report_dict(report: ReplayReport) -> dict[str, Any]:
    res = report.result
    layers = res.grads.layer_rows() if res.grads is not None else []
    return _clean({
        "schema": SCHEMA_ID,
        "target": report.target,
        "step": report.step,
        "replayed_step": res.step,
        "checkpoint": report.checkpoint,
        "device": report.device,
        "dtype": report.dtype,
        "torch": report.torch_version,
        "optimizer": report.optimizer,
        "finite": res.nonfinite is None,
        "loss": res.loss,
        "nonfinite": res.nonfinite.to_json() if res.nonfinite is not None else None,
        "logged": report.logged,
        "grad_norm": res.grad_norm,
        "dominant": res.grads.dominant(layers) if res.grads is not None else [],
        "layers": layers,
        "parameters": res.grads.param_rows() if res.grads is not None else [],
        "window": report.window,
        "warnings": list(report.warnings),
        "source": report.source,
        "bisect": report.bisect,
        "replayed": report.replayed,
    })


def render_json(report: ReplayReport) -> str:
    return json.dumps(report_dict(report), indent=1, allow_nan=False)


def _fmt(x: Any, pct: bool = False) -> str:
    if x is None:
        return "–"
    if isinstance(x, str):
        return x
    if pct:
        return f"{x:.1%}"
    return f"{x:.4g}"


def render_rich(report: ReplayReport, console, *, top: int = 15) -> None:
    """Verdict line, where the first NaN/Inf came from, logged-vs-replayed, the layer table."""
    from rich.markup import escape

    res = report.result
    data = report_dict(report)
    at = f"step {res.step}" if res.step == report.step else f"step {res.step} (window stopped before {report.step})"
    head = (f"replay of [bold]{escape(report.target)}[/] at {at} on {report.device} "
            f"({report.dtype}, torch {report.torch_version})")
    if report.checkpoint and report.checkpoint != report.target:
        head += f" from {escape(report.checkpoint)}"
    console.print(head)
    if report.source is not None and report.source.get("kind") != "build":
        src = report.source
        console.print(f"rebuilt from a {src['kind']} checkpoint holding the updates through step {src['at_step']} "
                      f"({', '.join(src['restored']) or 'nothing restored'}), batches from "
                      f"{escape(str(src['captures']))}")
    if report.bisect is not None:
        _bisect_lines(report, console)
    nf = res.nonfinite
    if nf is None:
        console.print(f"[green]finite[/]: loss {_fmt(data['loss'])}, grad norm {_fmt(data['grad_norm'])}")
    else:
        where = f" [bold]{escape(nf.module)}[/]" if nf.module else ""
        op = f" op [bold]{escape(nf.op)}[/]" if nf.op else ""
        console.print(f"[red bold]non-finite in {nf.phase}[/]{where}{op} at step {nf.step}: {escape(nf.detail)}")
        if nf.where:
            console.print(f"  at {escape(nf.where)}")
        console.print(f"loss {_fmt(data['loss'])}, grad norm {_fmt(data['grad_norm'])}")
    if report.logged and report.logged.get("message"):
        colour = "green" if report.logged.get("reproduced") else "yellow"
        console.print(f"[{colour}]{escape(report.logged['message'])}[/]")
    if data["dominant"]:
        parts = ", ".join(f"{escape(d['layer'])} {_fmt(d['share'], pct=True)}" for d in data["dominant"])
        console.print(f"gradient dominated by: {parts} of the squared norm")
    if report.window:
        _window_table(report, console)
    if data["layers"]:
        _layer_table(data, console, top, report.optimizer is not None)


def _bisect_lines(report: ReplayReport, console) -> None:
    from rich.markup import escape

    b, r = report.bisect, report.replayed or {}
    cost = f"{b['checked_steps']} checked replays, {b['plain_steps']} plain steps"
    if b["first_bad"] is None:
        console.print(f"[green]bisect {b['from']}..{b['to']}: no bad step[/] ({cost})")
    else:
        console.print(f"[red bold]bisect {b['from']}..{b['to']}: first bad step {b['first_bad']}[/]: "
                      f"{escape(str(b['why']))} ({cost}; probed {', '.join(str(p['step']) for p in b['probes'])})")
    if r.get("compared_losses"):
        drift = r.get("drift_step")
        console.print("the replay follows the captured losses" if drift is None else
                      f"[yellow]the replay drifts from the captured losses from step {drift}[/]")


def _window_table(report: ReplayReport, console) -> None:
    from rich.table import Table

    has_logged = any("logged" in p for p in report.window)
    t = Table(title=f"window: steps {report.window[0]['step']}–{report.window[-1]['step']}")
    for col in ("step", "loss", "grad norm") + (("logged",) if has_logged else ()) + ("finite",):
        t.add_column(col, justify="right")
    for p in report.window:
        row = [str(p["step"]), _fmt(_num(p["loss"])), _fmt(_num(p["grad_norm"]))]
        if has_logged:
            row.append(_fmt(_num(p.get("logged"))))
        row.append("yes" if p["finite"] else "[red]no[/]")
        t.add_row(*row)
    console.print(t)


def _layer_table(data: dict[str, Any], console, top: int, with_update: bool) -> None:
    from rich.markup import escape
    from rich.table import Table

    rows = data["layers"]
    shown = rows[:top] if top > 0 else rows
    t = Table(title=f"gradients by layer ({len(shown)} of {len(rows)}, largest first)")
    cols = ["layer", "params", "grad norm", "param norm"] + (["update ratio"] if with_update else []) + ["share"]
    for c in cols:
        t.add_column(c, justify="left" if c == "layer" else "right", overflow="fold")
    for r in shown:
        cells = [escape(r["layer"]), str(r["numel"]), _fmt(r["grad_norm"]), _fmt(r["param_norm"])]
        if with_update:
            cells.append(_fmt(r["update_ratio"]))
        cells.append(_fmt(r["share"], pct=True))
        t.add_row(*cells)
    console.print(t)
