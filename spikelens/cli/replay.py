"""`spikelens replay`: re-run one training step under anomaly detection (torch extra)."""
from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Optional

import typer

from . import app
from .common import QUIET, emit_warnings, stdout_console


class Device(str, Enum):
    auto = "auto"
    cuda = "cuda"
    cpu = "cpu"


class DType(str, Enum):
    float32 = "float32"
    float16 = "float16"
    bfloat16 = "bfloat16"


class ReplayFormat(str, Enum):
    rich = "rich"
    json = "json"


@app.command("replay")
def replay_cmd(
    target: str = typer.Argument(..., metavar="TARGET",
                                 help="A checkpoint replayed without code (a Hugging Face checkpoint-N/ folder, a "
                                      "Lightning .ckpt with --module, a state dict with --module), or "
                                      "FILE.py:FUNCTION / package.module:FUNCTION returning a ReplayTarget "
                                      "(FUNCTION defaults to build)."),
    step: Optional[int] = typer.Option(None, "--step", "-s", help="The training step to replay."),
    captures: Optional[Path] = typer.Option(None, "--captures", metavar="DIR",
                                            help="The batches hf_callback / lightning_callback / capture() saved "
                                                 "(default: spikelens-captures beside a checkpoint)."),
    module: Optional[str] = typer.Option(None, "--module", metavar="PKG.MOD:NAME",
                                         help="The LightningModule class of a .ckpt, or the function or class "
                                              "building the model of a state dict (it may return (model, optimizer))."),
    loss: Optional[str] = typer.Option(None, "--loss", metavar="PKG.MOD:FN",
                                       help="loss_fn(model, batch) for a checkpoint (default: the model's own loss, "
                                            "training_step for Lightning)."),
    bisect: Optional[str] = typer.Option(None, "--bisect", metavar="FROM..TO",
                                         help="Find the first step in FROM..TO whose loss or gradient goes "
                                              "non-finite, whose loss jumps above --factor x the median before it, "
                                              "or whose update leaves NaN/Inf in the weights; O(log n) checked "
                                              "replays."),
    factor: float = typer.Option(3.0, "--factor", metavar="X", help="The loss jump --bisect calls bad."),
    thorough: bool = typer.Option(False, "--thorough",
                                  help="Watch every op of every replayed step (anomaly mode), even when the step "
                                       "ends finite; by default a step runs plain and is watched only when "
                                       "something came out non-finite."),
    checkpoint: Optional[Path] = typer.Option(None, "--checkpoint", "-c", metavar="PATH",
                                              help="Checkpoint passed to build (must exist)."),
    device: Device = typer.Option(Device.auto, "--device", help="auto (CUDA when available), cuda or cpu."),
    dtype: DType = typer.Option(DType.float32, "--dtype",
                                help="float32, or float16 / bfloat16 to run the forward under autocast."),
    logdir: Optional[Path] = typer.Option(None, "--logdir", metavar="PATH",
                                          help="The run's logs, to compare the replayed loss with the logged one."),
    metric: Optional[str] = typer.Option(None, "--metric", metavar="TAG",
                                         help="The logged loss tag in --logdir (default: the main loss found)."),
    window: int = typer.Option(0, "--window", "-w", metavar="K",
                               help="Also replay the K steps before --step, from the checkpoint, stepping the "
                                    "optimizer: the loss and grad-norm trajectory."),
    format: ReplayFormat = typer.Option(ReplayFormat.rich, "--format", "-f", case_sensitive=False,
                                        help="rich (terminal) or json (schema spikelens.replay/1, stdout only JSON)."),
    top: int = typer.Option(15, "--top", metavar="N", help="Layers shown in the terminal table (0: all)."),
    quiet: bool = QUIET,
) -> None:
    """Re-run one training step under torch anomaly detection: where the first NaN/Inf is
    born (phase, module, op), the loss against the logged one, and the gradient by layer.

    Without code: TARGET is the checkpoint, the batches come from the capture callback
    ([bold]spikelens.replay.hf_callback(dir)[/] / [bold]lightning_callback(dir)[/]); the steps between
    the checkpoint and --step are replayed plain, then --step with every check.

    Example: [bold]spikelens replay out/checkpoint-1000 --step 1042 --captures out/spikelens-captures[/]

    Example: [bold]spikelens replay out/checkpoint-1000 --bisect 1001..1032[/]

    Example: [bold]spikelens replay ckpts/last.ckpt --module mypkg.model:LitModel --step 420[/]

    Or TARGET names a function [bold]build(step, checkpoint) -> ReplayTarget[/]:

        from spikelens.replay import ReplayTarget
        def build(step, checkpoint):
            model = MyModel()
            if checkpoint:
                model.load_state_dict(torch.load(checkpoint, weights_only=True))
            return ReplayTarget(model=model, batch=batch_for(step),
                                loss_fn=lambda m, b: m(b["x"], b["y"]),
                                optimizer=None)  # optional: also step it

    A step runs plain first; when its loss or a gradient comes out non-finite it runs again, from
    the same RNG, under [bold]torch.autograd.detect_anomaly(check_nan=True)[/] with hooks on every op
    and module (anomaly mode alone only sees NaN made in backward); --thorough watches every step.
    Needs PyTorch: pip install 'spikelens\\[replay]'.

    Exit code 0 when everything is finite, 1 when a NaN/Inf was found (with --bisect: a bad
    step), 2 on errors.

    Example: [bold]spikelens replay train.py:build --step 1200 --checkpoint ckpt/step_1000.pt[/]

    Example: [bold]spikelens replay mypkg.debug:build --step 1200 --logdir runs/a --metric train/loss --format json[/]
    """
    from ..replay.report import render_json, render_rich
    from ..replay.session import replay

    report = replay(target, step, checkpoint=checkpoint, device=device.value, dtype=dtype.value,
                    window=window, logdir=logdir, metric=metric, captures=captures, module=module, loss=loss,
                    bisect=bisect, factor=factor, thorough=thorough)
    emit_warnings(report.warnings, quiet)
    if format == ReplayFormat.json:
        typer.echo(render_json(report))
    else:
        render_rich(report, stdout_console(), top=top)
    if report.exit_code:
        sys.exit(report.exit_code)  # typer.Exit's code is lost under standalone_mode=False
