"""The catalogue of named text-log line patterns, and user patterns from config.

A `LinePattern` is one log family (llm.c stdout, Megatron, ...): a few `Rule`s, each a
line regex whose named groups give the step and metric values. The text importer
(`importers/textlogs.py`) picks the pattern that matches the most lines of a file and
runs its rules over every line at once with Polars. Regexes use the syntax shared by
Python `re` and Rust `regex` (no look-around, no back-references): Polars runs them.

Group names inside a rule regex:

- `step`: the training step of the line (rules without it take the step of the
  previous or next step line, see `Rule.step_from`);
- `timestamp`: a `YYYY-MM-DD HH:MM:SS[.,]frac` time, becomes `wall_time`;
- `rest`: the tail of the line, split into `key: value` pairs by `Rule.pairs`;
- a name starting with `_`: context kept for `Rule.post`, never a metric;
- anything else: a metric, renamed through `Rule.metrics`.

A value is only taken when the character after it ends a number (space, `|`, `,`,
`(`, `%`, end of line), so a number cut off by a splice or a truncated line is not
read as a shorter number.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

import polars as pl

from ..errors import ConfigError
from .lineprefix import DECORATION, ZONE

NUM = r"[-+]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|(?i:nan|inf(?:inity)?))"
"""A number as loggers print it, NaN and inf spellings included (`-nan`, `+nan`, `inf`)."""
END = r"(?:[\s|,;()%\]]|$)"
"""What may follow a complete number."""
STAMP = r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?"
"""`2023-04-18 01:46:52,554` (Python logging) or `2026-11-22 12:00:10.000000` (Megatron)."""

RESERVED_GROUPS = ("step", "timestamp", "rest")
_INTERNAL_COLUMNS = ("row", "line_no", "text", "wall_time")
STEP_FROM = ("line", "previous", "next")

Post = Callable[[pl.DataFrame], pl.DataFrame]
"""Fix-up of one rule's rows: columns `line_no, pos, step, wall_time, metric, value`
plus the rule's `_context` groups; returns the same columns."""


@dataclass(frozen=True)
class Rule:
    """One kind of line in a log family."""

    regex: str
    metrics: Mapping[str, str] = field(default_factory=dict)
    """Group name or pair key → metric name (names not listed keep their own name)."""
    fields: Mapping[str, str] = field(default_factory=dict)
    """Metric → regex with one capture group, searched anywhere in the matched line;
    each field is read on its own, so a spliced line keeps the values before the splice."""
    pairs: str | None = None
    """Regex with `key` and `value` groups, found repeatedly in the `rest` group."""
    pair_sep: str | None = None
    """A literal that ends every key of `pairs` (the key cannot hold it): a pair's key is
    then the text of its match before the first one, its value what follows with white
    space and `value_trim` stripped, split without running the regex again per pair."""
    value_trim: str = ""
    """Characters a pair's match may hold after its value (separators, units), never the
    last character of a number."""
    keep_other: bool = True
    """Pairs: keep keys that `metrics` does not list."""
    ignore: frozenset = frozenset()
    """Pairs: keys that are never metrics (counters like `ppo_ep`)."""
    step_from: str = "line"
    """`line`: the `step` group; `previous` / `next`: the nearest step line before / after."""
    before_first: str = "next-1"
    """Step of a `previous` row that comes before any step line: `next-1` or `zero`."""
    near: str | None = None
    """Lines that look like this rule's lines; those it cannot read are counted and warned about."""
    counts: str | None = None
    """Also emit this metric: how many of this rule's lines fall on each step."""
    post: Post | None = None
    post_per_line: bool = False
    """The post only looks at the rows of one line at a time and keeps their order, so
    the importer runs it chunk by chunk instead of gathering the rule's rows whole."""


@dataclass(frozen=True)
class LinePattern:
    """A named log family: its rules and how sure a sniff must be to claim a file."""

    name: str
    rules: tuple[Rule, ...]
    description: str = ""
    min_lines: int = 2
    """Step lines a sniff must see before it claims a file."""
    fallback: bool = False
    """Claimed only when no other pattern matches (generic lines that richer logs also print)."""
    user: bool = False
    plan: str | None = None
    """Regex whose first group is the step total a step line prints (`step N/TOTAL`): the run's plan."""
    launch_start: str | None = None
    """Regex of the step lines only the first steps of a launch print (nanoGPT's `mfu -100.00%`
    placeholder): where they follow unmarked step lines, a relaunch was appended."""

    @property
    def anchors(self) -> tuple[Rule, ...]:
        return tuple(r for r in self.rules if r.step_from == "line")


# ------------------------------------------------------------------ fix-ups


def _drop_placeholder_mfu(df: pl.DataFrame) -> pl.DataFrame:
    """nanoGPT prints `mfu -100.00%` until it has 5 timings: a placeholder, not a value."""
    return df.filter(~((pl.col("metric") == "mfu") & (pl.col("value") <= -100.0)))


_LOSS_KEYS = re.compile(r"loss$", re.I)


def _megatron_losses(df: pl.DataFrame) -> pl.DataFrame:
    """Megatron prints a loss only `if avg >= 0.0` (`> 0.0` in older code), so a NaN
    average makes the key vanish, and an interval where every iteration was skipped
    prints `lm loss: 0.0`. Drop those zeros; write NaN where a loss the file logs is
    missing and the line says NaN iterations happened or nothing was skipped (then
    the average existed and can only have been NaN). Built from the lines that print
    the counters (few rows), so a long log is not grouped line by line."""
    if df.height == 0:
        return df
    metric = pl.col("metric")
    loss_keys = [m for m in df.get_column("metric").unique(maintain_order=True).cast(pl.String).to_list()
                 if _LOSS_KEYS.search(m)]
    if not df.get_column("row").is_sorted():
        df = df.sort("row", "pos", maintain_order=True)
    first_of_line = pl.col("row") != pl.col("row").shift(1).fill_null(-1)
    counter = lambda name: df.filter(metric == name).filter(first_of_line)  # noqa: E731
    skipped = counter("skipped_iterations").select("row", "line_no", "step", "wall_time", skipped=pl.col("value"))
    nans = counter("nan_iterations").select("row", "line_no", "step", "wall_time", nans=pl.col("value"))
    zero_skipped = df.filter(metric.is_in(loss_keys) & (pl.col("value") == 0.0)).join(
        skipped.filter(pl.col("skipped") > 0).select("row"), on="row", how="semi")
    out = df.join(zero_skipped.select("row", "pos"), on=["row", "pos"], how="anti", maintain_order="left") \
        if zero_skipped.height else df
    lines = pl.concat([skipped.select("row", "line_no", "step", "wall_time"),
                       nans.select("row", "line_no", "step", "wall_time")]).unique("row", keep="first", maintain_order=True)
    said_nan = lines.join(skipped.select("row", "skipped"), on="row", how="left") \
        .join(nans.select("row", "nans"), on="row", how="left") \
        .filter((pl.col("nans").fill_null(0) > 0) | (pl.col("skipped").fill_null(-1) == 0))
    nan_rows = [
        said_nan.join(df.filter(metric == key).select("row"), on="row", how="anti").select(
            "row", "line_no", "step", "wall_time",
            pos=pl.lit(-1, df.schema["pos"]), metric=pl.lit(key).cast(df.schema["metric"]), value=pl.lit(float("nan")))
        for key in loss_keys
    ]
    nan_rows = [r for r in nan_rows if r.height]
    if not nan_rows:
        return out
    return pl.concat([out, *nan_rows], how="diagonal_relaxed").sort("row", "pos", maintain_order=True)


def _megatron_validation(df: pl.DataFrame) -> pl.DataFrame:
    """`validation loss at iteration N on validation set | lm loss value: X | lm loss PPL: Y |`
    → `lm loss validation`, `lm loss validation ppl` (the tags Megatron writes to TensorBoard);
    `... on test set` gives `lm loss test`."""
    is_test = pl.col("_split").fill_null("").str.contains("(?i)test")
    split = pl.when(is_test).then(pl.lit("test")).otherwise(pl.lit("validation"))
    metric = (
        pl.when(pl.col("metric").str.ends_with(" value"))
        .then(pl.col("metric").str.strip_suffix(" value") + " " + split)
        .when(pl.col("metric").str.to_lowercase().str.ends_with(" ppl"))
        .then(pl.col("metric").str.slice(0, pl.col("metric").str.len_chars() - 4) + " " + split + " ppl")
        .otherwise(pl.col("metric") + " " + split)
    )
    return df.with_columns(metric=metric)


def _overflow(df: pl.DataFrame) -> pl.DataFrame:
    """DeepSpeed `Attempted loss scale: X, reducing to Y` → `loss_scale` Y; the
    hysteresis variant (`but hysteresis is 2`) keeps the scale at X."""
    has_new = (pl.col("metric") == "loss_scale").any().over("row")
    return df.filter((pl.col("metric") == "loss_scale") | ((pl.col("metric") == "attempted_loss_scale") & ~has_new)) \
        .with_columns(metric=pl.lit("loss_scale"))


# ------------------------------------------------------------------ the catalogue

_RANK = r"(?:\[(?:default|rank)?\d+\]:?\s*|\d+:\s+)?"
"""A rank tag launchers put before each line (`torchrun --tee`: `[default0]:`, `srun -l`: `0: `)."""
_STAMP_PREFIX = rf"^{_RANK}\s*(?:\[(?P<timestamp>{STAMP}){ZONE}?\]\s*)?{DECORATION}"
_LOG_PREFIX = (rf"^{_RANK}\s*(?:\[?(?P<timestamp>{STAMP}){ZONE}?\]?[\s,:|-]*)?{DECORATION}"
               r"(?:\[?(?:INFO|WARNING|WARN|DEBUG)\]?(?::[\w.]*:|[\s:|-]+))?\s*")
"""What a launcher or a logger may put before a printed line: a rank tag, a time stamp
(`2023-03-22 09:30:39 iter 10: ...`, `[2023-...] ...`), a level (`INFO:root:`, `- INFO -`).
The time stamp becomes the line's wall time; any other decoration a logger or launcher prints
(`lineprefix.DECORATION`: `[titan]`, glog's header, loguru's location, a second stamp) is let through."""
_OVERFLOW = Rule(
    regex=_STAMP_PREFIX + rf".*?OVERFLOW! Rank \d+ Skipping step\. Attempted loss scale: (?P<attempted_loss_scale>{NUM}){END}"
          rf"(?:.*reducing to (?P<loss_scale>{NUM}){END})?",
    step_from="next", counts="overflow_skips", post=_overflow, post_per_line=True,
)

LLMC_STDOUT = LinePattern(
    name="llm.c",
    plan=r"step\s+\d+/(\d+)\s*[|:]",
    description="llm.c train_gpt2 stdout: `step N/M | loss X (+Yz)| norm Z (+Wz)| lr ... | ms | MFU | tok/s`",
    rules=(
        Rule(
            regex=_LOG_PREFIX + rf"step\s+(?P<step>\d+)/\d+\s*[|:]\s*(?:train )?loss\s+(?P<train_loss>{NUM}){END}",
            fields={
                "grad_norm": rf"[|\s]norm\s+({NUM}){END}",
                "lr": rf"[|\s]lr\s+({NUM}){END}",
                "step_time_ms": rf"[|(]\s*({NUM})\s*ms[\s|,]",
                "mfu": rf"\|\s*({NUM})%[^|]*MFU",
                "tok/s": rf"[|,]\s*({NUM})\s*tok/s",
            },
            near=r"^step\s+\d",
        ),
        Rule(regex=_LOG_PREFIX + rf"val loss\s+(?P<val_loss>{NUM})\s*$", step_from="previous"),
        Rule(regex=rf"HellaSwag: \d+/\d+ = (?P<hellaswag>{NUM})\s*$", step_from="previous"),
    ),
)

LLMC_MAIN = LinePattern(
    name="llm.c main.log",
    description="llm.c main.log: `s:N trl:X lr:Y norm:Z`, `s:N tel:X` (val), `s:N eval:X` (HellaSwag)",
    rules=(
        Rule(
            regex=r"^s:(?P<step>\d+)\s+(?P<rest>.*)$",
            pairs=rf"(?P<key>[A-Za-z_][\w/]*):(?P<value>{NUM})(?:\s|$)", pair_sep=":",
            metrics={"trl": "train_loss", "tel": "val_loss", "eval": "hellaswag", "norm": "grad_norm"},
            near=r"^s:\d",
        ),
    ),
)

NANOGPT = LinePattern(
    name="nanoGPT",
    launch_start=r"iter\s+\d+:.*mfu\s+-100\.00%",
    plan=r"^Overriding: max_iters = (\d+)\s*$",
    description="nanoGPT train.py: `iter N: loss X, time Tms, mfu M%` and `step N: train loss X, val loss Y`",
    rules=(
        Rule(
            regex=_LOG_PREFIX + rf"iter\s+(?P<step>\d+):\s*loss\s+(?P<train_loss>{NUM}),",
            fields={"iter_time_ms": rf"time\s+({NUM})\s*ms", "mfu": rf"mfu\s+({NUM})%"},
            near=r"^iter\s+\d+:", post=_drop_placeholder_mfu, post_per_line=True,
        ),
        Rule(
            regex=_LOG_PREFIX + rf"step\s+(?P<step>\d+):\s*train loss\s+(?P<eval_train_loss>{NUM}),\s*val loss\s+(?P<val_loss>{NUM})\s*$",
            near=r"^step\s+\d+:",
        ),
    ),
)

MODDED_NANOGPT = LinePattern(
    name="modded-nanogpt",
    plan=r"step:\d+/(\d+)\s",
    description="modded-nanogpt record logs: `step:N/M train_loss:X train_time:Tms step_avg:Sms`, `step:N/M val_loss:X ...`",
    rules=(
        Rule(
            regex=_LOG_PREFIX + r"step:(?P<step>\d+)/\d+\s+(?P<rest>.*)$",
            pairs=rf"(?P<key>[A-Za-z_]\w*):(?P<value>{NUM})(?:ms|s|%)?(?:\s|$)", pair_sep=":", value_trim="ms%",
            metrics={"train_loss": "train_loss", "val_loss": "val_loss"}, keep_other=False,
            near=r"^step:\d",
        ),
    ),
)

BUILD_NANOGPT = LinePattern(
    name="build-nanogpt",
    description="build-nanogpt log.txt: `N train X`, `N val X`, `N hella X`",
    min_lines=3,
    rules=(
        Rule(
            regex=rf"^(?P<step>\d+) (?P<rest>(?:train|val|hella|lr|norm) {NUM})\s*$",
            pairs=rf"(?P<key>[a-z]+) (?P<value>{NUM})", pair_sep=" ",
            metrics={"train": "train_loss", "val": "val_loss", "hella": "hellaswag", "norm": "grad_norm"},
            near=r"^\d+ (?:train|val|hella)\b",
        ),
    ),
)

MEGATRON = LinePattern(
    name="Megatron",
    plan=r"iteration\s+\d+\s*/\s*(\d+)\s*\|",
    description="Megatron-LM / Megatron-DeepSpeed: `[time] iteration N/ M | key: value | ...`, `validation loss at iteration N ...`",
    rules=(
        Rule(
            regex=_STAMP_PREFIX + r"iteration\s+(?P<step>\d+)\s*/\s*\d+\s*\|(?P<rest>.*)$",
            pairs=rf"\s*(?P<key>[^|:]+?):\s+(?P<value>{NUM})\s*\|", pair_sep=":", value_trim="|",
            metrics={"learning rate": "lr", "loss scale": "loss_scale", "grad norm": "grad_norm",
                     "number of skipped iterations": "skipped_iterations",
                     "number of nan iterations": "nan_iterations"},
            near=_STAMP_PREFIX + r"iteration\s+\d", post=_megatron_losses,
        ),
        Rule(
            regex=_STAMP_PREFIX + r"validation loss at (?:iteration\s+)?(?P<step>\d+)(?P<_split>[^|]*)\|(?P<rest>.*)$",
            pairs=rf"\s*(?P<key>[^|:]+?):\s+(?P<value>{NUM})\s*\|", pair_sep=":", value_trim="|",
            near=_STAMP_PREFIX + r"validation loss at", post=_megatron_validation, post_per_line=True,
        ),
        _OVERFLOW,
    ),
)

DEEPSPEED_CHAT = LinePattern(
    name="DeepSpeed-Chat",
    description="DeepSpeed-Chat step 3: `epoch: E|step: N|ppo_ep: 1|act_loss: X|cri_loss: Y|...`",
    rules=(
        Rule(
            regex=rf"^{_RANK}epoch:\s*(?P<_epoch>\d+)\s*\|\s*step:\s*(?P<step>\d+)\s*\|(?P<rest>.*)$",
            pairs=rf"(?P<key>[A-Za-z_]\w*):\s*(?P<value>{NUM})\s*(?:\||$)", pair_sep=":", value_trim="|",
            ignore=frozenset({"ppo_ep", "epoch", "step"}),
            near=r"^epoch:\s*\d+\s*\|\s*step",
        ),
        Rule(regex=rf"^average reward score:\s*(?P<reward>{NUM})\s*$", step_from="previous"),
        _OVERFLOW,
    ),
)

DEEPSPEED = LinePattern(
    name="DeepSpeed",
    description="DeepSpeed engine stdout: `[Rank 0] step=N, skipped=K, lr=[...]`, `OVERFLOW! ... reducing to Y`, `ppl: X`",
    fallback=True,
    rules=(
        Rule(
            regex=_STAMP_PREFIX + rf".*\[Rank \d+\] step=(?P<step>\d+), skipped=(?P<skipped_steps>\d+), lr=\[(?P<lr>{NUM})[,\]]",
            near=r"\[Rank \d+\] step=",
        ),
        Rule(regex=r"Evaluating perplexity, Epoch (?P<epoch>\d+)/\d+", step_from="previous", before_first="zero"),
        Rule(regex=rf"^ppl:\s*(?P<ppl>{NUM})\s*$", step_from="previous", before_first="zero"),
        _OVERFLOW,
    ),
)

CATALOGUE: tuple[LinePattern, ...] = (
    LLMC_STDOUT, LLMC_MAIN, NANOGPT, MODDED_NANOGPT, BUILD_NANOGPT, MEGATRON, DEEPSPEED_CHAT, DEEPSPEED,
)
"""Built-in patterns. When several match a file, the one with the most step lines wins
(ties: this order); fallback patterns only when nothing else matches."""


# ------------------------------------------------------------------ user patterns


def check_regex(regex: str, where: str) -> list[str]:
    """Group names of a regex Polars can run; ConfigError naming `where` otherwise."""
    try:
        compiled = re.compile(regex)
    except re.error as exc:
        raise ConfigError(f"{where}: invalid regex ({exc})") from None
    try:
        pl.Series([""], dtype=pl.String).str.extract_groups(regex)
    except pl.exceptions.PolarsError as exc:
        detail = str(exc).strip().splitlines()[-1]
        raise ConfigError(f"{where}: regex not supported by the Rust regex engine (no look-around or "
                          f"back-references): {detail}") from None
    return list(compiled.groupindex)


def user_patterns(table: Mapping[str, Any], source: Path | str | None = None) -> tuple[LinePattern, ...]:
    """Patterns from `[tool.spikelens.patterns]`:

        [tool.spikelens.patterns]
        myformat = { regex = 'it=(?P<step>\\d+) loss=(?P<loss>[\\d.eE+-]+)', metrics = { loss = "train_loss" } }

    `regex` needs a `step` group and at least one metric group; `metrics` renames
    groups; `min_lines` (default 2) is how many lines must match to claim a file.
    """
    where = str(source) if source else "[tool.spikelens.patterns]"
    out = []
    for name, spec in table.items():
        here = f"{where}: pattern {name!r}"
        if isinstance(spec, str):
            spec = {"regex": spec}
        if not isinstance(spec, Mapping) or not isinstance(spec.get("regex"), str):
            raise ConfigError(f"{here}: expected a table with a 'regex' string")
        unknown = sorted(set(spec) - {"regex", "metrics", "min_lines"})
        if unknown:
            raise ConfigError(f"{here}: unknown keys {unknown}; known: ['regex', 'metrics', 'min_lines']")
        groups = check_regex(spec["regex"], here)
        taken = [g for g in groups if g in _INTERNAL_COLUMNS or g.startswith("__")]
        if taken:
            raise ConfigError(f"{here}: group names {taken} are used by the importer; rename them")
        if "step" not in groups:
            raise ConfigError(f"{here}: the regex needs a (?P<step>...) group")
        if not [g for g in groups if g not in RESERVED_GROUPS and not g.startswith("_")]:
            raise ConfigError(f"{here}: the regex needs at least one metric group besides 'step'")
        metrics = spec.get("metrics", {})
        if not isinstance(metrics, Mapping) or not all(isinstance(v, str) for v in metrics.values()):
            raise ConfigError(f"{here}: 'metrics' must map group names to metric names")
        min_lines = spec.get("min_lines", 2)
        if not isinstance(min_lines, int) or min_lines < 1:
            raise ConfigError(f"{here}: 'min_lines' must be a positive integer")
        out.append(LinePattern(name=str(name), rules=(Rule(regex=spec["regex"], metrics=dict(metrics)),),
                               description="user pattern", min_lines=min_lines, user=True))
    return tuple(out)
