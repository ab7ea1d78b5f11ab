"""The CI gate behind `spikelens check`: which findings of a report fail a build.

Library side only (no printing): a `Policy` built from options, the
`[tool.spikelens.check]` table and defaults (in that order of precedence); a
`Baseline` of findings already accepted; `evaluate()` giving every finding a gate
status, and the exit code. Renderers read the `CheckResult`.

    report = spikelens.analyze("runs/")
    result = evaluate(report, build_policy(config.check), load_baseline("baseline.json"))
    sys.exit(result.exit_code())
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

from .model.finding import SEVERITIES, SEVERITY_RANK, Finding, _clean
from .errors import ConfigError, InputError, UsageError
from .model.report import Report, RunReport
from .pipeline.baselinedisk import LIST, Entries, NotStreamed, read_document, write_document

BASELINE_SCHEMA = "spikelens.baseline/1"
STATUSES = ("fail", "allowed", "baselined", "below")
"""fail: fails the build; allowed: a fast spike within max-fast-spikes; baselined:
recorded in the baseline; below: under its fail-on threshold."""

_CODE_PREFIX = re.compile(r"^SL\d{0,3}$")
_KIND_SPECIFICITY = 6
"""A kind name is more specific than any code prefix (SL101 reports `spike` and `outliers`)."""


# ---------------------------------------------------------------- selectors

def known_kinds() -> list[str]:
    """Kinds a selector may name: the catalog's and every registered detector's."""
    from .detect.registry import DETECTORS
    from .explain.catalog import names

    return sorted({*names("kind"), *(c.kind for c in DETECTORS)})


def parse_selectors(value: Any, where: str, error: type[Exception] = UsageError) -> list[str]:
    """Kinds or code prefixes (ruff style: `SL1`, `SL201`, `nan`, `ALL`) from a list or a
    comma-separated string; `none` or an empty string gives an empty list."""
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not all(isinstance(s, str) for s in items):
        raise error(f"{where}: expected a list of kinds or codes, got {value!r}")
    out: list[str] = []
    kinds = None
    for raw in items:
        s = raw.strip()
        if not s or s.lower() == "none":
            continue
        if s.upper() == "ALL" or _CODE_PREFIX.match(s.upper()):
            sel = s.upper()
        else:
            sel = s.lower().replace("-", "_")
            kinds = kinds or known_kinds()
            if sel not in kinds:
                raise error(f"{where}: unknown selector {s!r}; use a code prefix (SL, SL1, SL201) "
                            f"or a kind: {', '.join(kinds)}")
        if sel not in out:
            out.append(sel)
    return out


def specificity(selector: str, finding: Finding) -> int | None:
    """How precisely `selector` names the finding (None: not at all). ALL < SL < SL1 < SL101 < kind."""
    if selector == "ALL":
        return 0
    if _CODE_PREFIX.match(selector):
        return len(selector) if (finding.code or "").upper().startswith(selector) else None
    return _KIND_SPECIFICITY if finding.kind == selector else None


def _best(selectors: Iterable[str], finding: Finding) -> tuple[int, str] | None:
    hits = [(s, sel) for sel in selectors if (s := specificity(sel, finding)) is not None]
    return max(hits, key=lambda h: h[0]) if hits else None


# ---------------------------------------------------------------- policy

@dataclass
class Policy:
    """What fails a build. Every field is a `[tool.spikelens.check]` key (kebab-case) and an option."""

    fail_on: str = "warning"
    """Findings at or above this severity fail."""
    fail_on_kind: dict[str, str] = field(default_factory=dict)
    """Per kind or code prefix thresholds; the most specific selector wins over everything else."""
    always_fail: list[str] = field(default_factory=lambda: ["nan"])
    """Kinds that fail at warning or above whatever fail-on says (info-level NaN findings are
    the fp16 steps a loss scaler skipped, a normal event)."""
    max_fast_spikes: int = 0
    """Fast-recovering spikes tolerated per run; with more, every one of them fails."""
    select: list[str] = field(default_factory=list)
    """Only these kinds or code prefixes are checked (empty: all)."""
    ignore: list[str] = field(default_factory=list)
    """Kinds or code prefixes never checked (the more specific of select/ignore wins; a tie ignores)."""
    metrics: list[str] = field(default_factory=list)
    """Only findings on metrics matching these globs are checked (empty: all; run-level findings always)."""
    ignore_metrics: list[str] = field(default_factory=list)
    """Findings on metrics matching these globs are never checked."""
    baseline: str | None = None
    """Baseline file: findings recorded there do not fail."""
    origins: dict[str, str] = field(default_factory=dict, compare=False)
    """Where each value came from: option, file or default."""

    def checks(self, f: Finding) -> bool:
        """Is the finding in scope (select/ignore by kind or code, metric globs)?"""
        chosen = _best(self.select, f) if self.select else (0, "ALL")
        if chosen is None:
            return False
        dropped = _best(self.ignore, f)
        if dropped is not None and dropped[0] >= chosen[0]:
            return False
        if f.metric is None:
            return True
        if self.metrics and not any(fnmatchcase(f.metric, g) for g in self.metrics):
            return False
        return not any(fnmatchcase(f.metric, g) for g in self.ignore_metrics)

    def threshold(self, f: Finding) -> tuple[str, str]:
        """(severity at which the finding fails, the rule that set it)."""
        per_kind = _best(self.fail_on_kind, f)
        if per_kind is not None:
            return self.fail_on_kind[per_kind[1]], f"fail-on-kind {per_kind[1]}"
        always = _best(self.always_fail, f)
        if always is not None:
            sev = min(self.fail_on, "warning", key=SEVERITY_RANK.__getitem__)
            return sev, f"always-fail {always[1]}"
        return self.fail_on, "fail-on"

    def to_json(self) -> dict[str, Any]:
        return {"fail_on": self.fail_on, "fail_on_kind": dict(self.fail_on_kind), "always_fail": list(self.always_fail),
                "max_fast_spikes": self.max_fast_spikes, "select": list(self.select), "ignore": list(self.ignore),
                "metrics": list(self.metrics), "ignore_metrics": list(self.ignore_metrics),
                "baseline": self.baseline, "origins": dict(self.origins)}


POLICY_KEYS = ("fail_on", "fail_on_kind", "always_fail", "max_fast_spikes", "select", "ignore", "metrics",
               "ignore_metrics", "baseline")


def build_policy(table: Mapping[str, Any] | None = None, options: Mapping[str, Any] | None = None,
                 *, config_path: Path | None = None) -> Policy:
    """Option > `[tool.spikelens.check]` > default, key by key.

    `table` is `Config.check` (kebab- or snake-case keys); `options` holds the values
    given on the command line (None: not given). `fail_on_kind` tables merge key by
    key (the option wins); lists given as options replace the file's.
    """
    where_file = f"{config_path or 'config'}: [tool.spikelens.check]"
    file_vals = {}
    for key, value in (table or {}).items():
        name = str(key).replace("-", "_")
        if name not in POLICY_KEYS:
            raise ConfigError(f"{where_file}: unknown key {key!r}; known: "
                              f"{', '.join(k.replace('_', '-') for k in POLICY_KEYS)}")
        file_vals[name] = value
    opts = {k: v for k, v in (options or {}).items() if v is not None}
    unknown = sorted(set(opts) - set(POLICY_KEYS))
    if unknown:
        raise UsageError(f"unknown check options {unknown}")
    default = Policy()
    values: dict[str, Any] = {}
    origins: dict[str, str] = {}
    for name in POLICY_KEYS:
        flag = "--" + name.replace("_", "-")
        from_file = (_parse(name, file_vals[name], f"{where_file} {name.replace('_', '-')}", ConfigError,
                            config_path) if name in file_vals else None)
        from_opt = _parse(name, opts[name], flag, UsageError, None) if name in opts else None
        if name == "fail_on_kind" and (name in file_vals or name in opts):
            values[name] = {**(from_file or {}), **(from_opt or {})}
            origins[name] = "+".join(o for o, hit in (("option", name in opts), ("file", name in file_vals)) if hit)
        elif name in opts:
            values[name], origins[name] = from_opt, "option"
        elif name in file_vals:
            values[name], origins[name] = from_file, "file"
        else:
            values[name], origins[name] = getattr(default, name), "default"
    return Policy(**values, origins=origins)


def _parse(name: str, value: Any, where: str, error: type[Exception], base: Path | None) -> Any:
    """One policy value, validated; `error` names the option or the file key."""
    if name == "fail_on":
        if not isinstance(value, str) or value.strip().lower() not in SEVERITIES:
            raise error(f"{where}: expected one of {', '.join(SEVERITIES)}, got {value!r}")
        return value.strip().lower()
    if name == "fail_on_kind":
        if not isinstance(value, Mapping):
            raise error(f"{where}: expected a table {{KIND or CODE = SEVERITY}}, got {value!r}")
        out = {}
        for sel, sev in value.items():
            key = parse_selectors([str(sel)], where, error)
            if len(key) != 1:
                raise error(f"{where}: {sel!r} is not a kind or code prefix")
            out[key[0]] = _parse("fail_on", sev, f"{where} {sel}", error, base)
        return out
    if name in ("always_fail", "select", "ignore"):
        return parse_selectors(value, where, error)
    if name == "max_fast_spikes":
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise error(f"{where}: expected a whole number >= 0, got {value!r}")
        return value
    if name in ("metrics", "ignore_metrics"):
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, (list, tuple)) or not all(isinstance(g, str) for g in items):
            raise error(f"{where}: expected a list of metric globs, got {value!r}")
        return [g.strip() for g in items if g.strip()]
    if name == "baseline":
        if not isinstance(value, (str, Path)) or not str(value).strip():
            raise error(f"{where}: expected a file path, got {value!r}")
        path = Path(value)
        return str(base.parent / path if base is not None and not path.is_absolute() else path)
    raise AssertionError(name)  # pragma: no cover


def parse_kind_thresholds(items: Iterable[str]) -> dict[str, str] | None:
    """`--fail-on-kind SEL=SEVERITY` options → {selector: severity} (None when none given)."""
    out: dict[str, str] = {}
    for item in items:
        sel, sep, sev = item.partition("=")
        if not sep or not sel.strip():
            raise UsageError(f"--fail-on-kind {item!r}: expected KIND=SEVERITY, e.g. --fail-on-kind oscillation=error")
        out[sel.strip()] = sev.strip()
    return out or None


# ---------------------------------------------------------------- baseline

@dataclass
class BaselineEntry:
    run: str
    metric: str | None
    kind: str
    code: str
    step: int | None
    severity: str = ""
    message: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"run": self.run, "metric": self.metric, "kind": self.kind, "code": self.code, "step": self.step,
                "severity": self.severity, "message": self.message}


@dataclass
class Baseline:
    """Findings accepted once; later checks match them by run, metric, kind and a step window
    of max(`fraction` of the run's steps, `min_steps`), one current finding per entry."""

    entries: list[BaselineEntry] = field(default_factory=list)
    fraction: float = 0.05
    min_steps: int = 20
    path: str | None = None

    def window(self, run: RunReport) -> float:
        return max(self.fraction * run_span(run), float(self.min_steps))

    def match(self, report: Report) -> dict[int, BaselineEntry]:
        """id(finding) → the entry that absorbs it; nearest anchors first."""
        matcher = self.matcher(lambda: (r.run for r in report.runs))
        used: set[int] = set()
        out: dict[int, BaselineEntry] = {}
        for run in report.runs:
            out.update(matcher.match_run(run, used))
        return out

    def close(self) -> None:
        """Let its entries' folder go now (on disk past `baselinedisk.HELD`; else nothing)."""
        if isinstance(self.entries, Entries):
            self.entries.close()

    def matcher(self, names: Callable[[], Iterable[str]]) -> "_Matcher":
        """Matches run by run (`names`: the current runs' names, gone over twice)."""
        return _Matcher(self, names)

    def to_json(self) -> dict[str, Any]:
        entries = sorted(self.entries, key=_sort_key)
        return {"schema": BASELINE_SCHEMA, "window": {"fraction": self.fraction, "min_steps": self.min_steps},
                "findings": [_clean(e.to_json()) for e in entries]}


class _Matcher:
    """The baseline's entries by (recorded run, metric, kind), and each current run's
    recorded name: what matching one run needs, whatever the number of runs (it holds the
    baseline, not the sweep)."""

    def __init__(self, baseline: Baseline, names: Callable[[], Iterable[str]]) -> None:
        self.baseline = baseline
        entries = baseline.entries
        self.disk = entries if isinstance(entries, Entries) and entries.spilled else None
        if self.disk is not None:  # a baseline past `baselinedisk.HELD` entries: asked of its tables
            self.names = self.disk.names().build(names)
            return
        self.pool: dict[tuple, list[int]] = {}
        for i, e in enumerate(entries):
            self.pool.setdefault((e.run, e.metric, e.kind), []).append(i)
        self.recorded = {e.run for e in entries}
        self.renamed = _suffix_names(names, self.recorded)

    def recorded_name(self, name: str) -> str | None:
        if self.disk is not None:
            return name if self.disk.has_run(name) else self.names.get(name)
        return name if name in self.recorded else self.renamed.get(name)

    def _pool(self, key: tuple) -> list[int]:
        if self.disk is not None:
            return self.disk.pool(*key)
        return self.pool.get(key, [])

    def match_run(self, run: RunReport, used: set[int]) -> dict[int, BaselineEntry]:
        """id(finding) → entry for one run's findings (`used`: entries taken, added to)."""
        entries, win, recorded = self.baseline.entries, self.baseline.window(run), self.recorded_name(run.run)
        pairs = []
        pools: dict[tuple, list[tuple[int, Any]]] = {}  # (position, step) of each key's entries, this run
        for k, f in enumerate(run.findings):
            key = (recorded, f.metric, f.kind)
            if key not in pools:
                pools[key] = [(i, entries[i].step) for i in self._pool(key)]
            for i, step in pools[key]:
                d = _distance(f.anchor_step, step)
                if d is not None and d <= win:
                    pairs.append((d, k, i))  # a tie: the earlier finding, then the earlier entry (not id())
        out: dict[int, BaselineEntry] = {}
        for _, k, i in sorted(pairs):
            fid = id(run.findings[k])
            if fid not in out and i not in used:
                out[fid] = entries[i]
                used.add(i)
        return out

def same_runs(current: list[str], recorded: list[str]) -> dict[str, str]:
    """Current run name → the name the baseline recorded it under: the same name, or else
    the one recorded name that is a path suffix of it or it of them (`deepspeed_chat/logs`
    and `logs`: a run named from a smaller folder, or before more runs stood beside it)."""
    recorded_set = set(recorded)
    out = {name: name for name in current if name in recorded_set}
    out.update(_suffix_names(lambda: current, recorded_set))
    return out


def _suffix_names(names: Callable[[], Iterable[str]], recorded: set[str]) -> dict[str, str]:
    """`same_runs`' names found by path suffix, in two passes over the current names: the
    dict holds at most one name per recorded name (a sweep's names are never held)."""
    taken = {name for name in names() if name in recorded}
    out: dict[str, str] = {}
    for name in names():
        if name in recorded or name in out:
            continue
        near = [r for r in recorded - taken if _path_suffix(r, name) or _path_suffix(name, r)]
        if len(near) == 1:
            out[name] = near[0]
            taken.add(near[0])
    return out


def _path_suffix(short: str, long: str) -> bool:
    a, b = short.split("/"), long.split("/")
    return len(a) < len(b) and b[-len(a):] == a


def _distance(a: int | None, b: int | None) -> float | None:
    if a is None or b is None:
        return 0.0 if a is None and b is None else None
    return float(abs(int(a) - int(b)))


def run_span(run: RunReport) -> int:
    """Steps the run covers (last - first logged step)."""
    firsts = [s["first_step"] for s in run.segments if s.get("first_step") is not None]
    lasts = [s["last_step"] for s in run.segments if s.get("last_step") is not None]
    if firsts and lasts:
        return int(max(lasts)) - int(min(firsts))
    if "first_step" in run.stats and "last_step" in run.stats:
        return int(run.stats["last_step"]) - int(run.stats["first_step"])
    return 0


def baseline_from(report: Report, *, fraction: float = 0.05, min_steps: int = 20) -> Baseline:
    """A baseline accepting every finding of the report."""
    entries = Entries()  # on disk past `baselinedisk.HELD`: a sweep's runs are read back one at a time
    entries.extend(BaselineEntry(run=r.run, metric=f.metric, kind=f.kind, code=f.code, step=f.anchor_step,
                                 severity=f.severity, message=f.message)
                   for r in report.runs for f in r.findings)
    return Baseline(entries=entries, fraction=fraction, min_steps=min_steps)


def load_baseline(path: str | Path) -> Baseline:
    """Read a `spikelens.baseline/1` file; a missing or malformed one is an InputError. Read
    an entry at a time (`baselinedisk.read_document`), the entries on disk past
    `baselinedisk.HELD`; a document the streamed reader does not take (a syntax error, a key
    twice) is read whole, as it always was, for the same baseline or the same message."""
    p = Path(path)
    if not p.is_file():
        raise InputError(p, "baseline file not found (write one with --update-baseline)")
    entries = Entries()
    head: dict[str, Any] = {}
    bad: int | None = None  # the first malformed finding, told once the whole document has parsed
    try:
        with open(p, encoding="utf-8") as fh:
            for what, value in read_document(fh, "findings"):
                if what == "key":
                    head[value[0]] = value[1]
                elif bad is None:
                    entry = _entry(value)
                    if entry is None:
                        bad = len(entries)
                    else:
                        entries.append(entry)
    except (OSError, UnicodeDecodeError, NotStreamed):
        entries.close()
        return _load_whole(p)
    if head.get("schema") != BASELINE_SCHEMA:
        raise InputError(p, f"not a {BASELINE_SCHEMA} file (schema {head.get('schema')!r})")
    window = head.get("window") or {}
    if head.get("findings") is not LIST or not isinstance(window, dict):
        raise InputError(p, "baseline has no 'findings' list")
    if bad is not None:
        raise InputError(p, f"baseline finding {bad} needs run, kind (strings), metric (string or null) "
                            f"and step (integer or null)")
    return _with_window(entries, window, p)


def _load_whole(p: Path) -> Baseline:
    """The whole document parsed at once (what `load_baseline` did before it streamed)."""
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(p, f"cannot read the baseline ({exc})") from None
    if not isinstance(data, dict) or data.get("schema") != BASELINE_SCHEMA:
        got = data.get("schema") if isinstance(data, dict) else type(data).__name__
        raise InputError(p, f"not a {BASELINE_SCHEMA} file (schema {got!r})")
    window = data.get("window") or {}
    findings = data.get("findings")
    if not isinstance(findings, list) or not isinstance(window, dict):
        raise InputError(p, "baseline has no 'findings' list")
    entries = Entries()
    for n, item in enumerate(findings):
        entry = _entry(item)
        if entry is None:
            raise InputError(p, f"baseline finding {n} needs run, kind (strings), metric (string or null) "
                                f"and step (integer or null)")
        entries.append(entry)
    return _with_window(entries, window, p)


def _entry(item: Any) -> BaselineEntry | None:
    """One recorded finding of a baseline file (None: malformed)."""
    ok = (isinstance(item, dict) and isinstance(item.get("run"), str) and isinstance(item.get("kind"), str)
          and (item.get("metric") is None or isinstance(item.get("metric"), str))
          and (item.get("step") is None or (isinstance(item.get("step"), int) and not isinstance(item["step"], bool))))
    if not ok:
        return None
    return BaselineEntry(run=item["run"], metric=item.get("metric"), kind=item["kind"], code=str(item.get("code", "")),
                         step=item.get("step"), severity=str(item.get("severity", "")),
                         message=str(item.get("message", "")))


def _with_window(entries: Entries, window: dict, p: Path) -> Baseline:
    try:
        fraction, min_steps = float(window.get("fraction", 0.05)), int(window.get("min_steps", 20))
    except (TypeError, ValueError):
        entries.close()
        raise InputError(p, f"baseline window {window!r} is not numbers") from None
    return Baseline(entries=entries, fraction=fraction, min_steps=min_steps, path=str(p))


def write_baseline(baseline: Baseline, path: str | Path) -> None:
    """Write the baseline as stable, sorted JSON (no timestamps: diffs show only real changes),
    atomically (a killed write leaves the previous baseline). The bytes of `to_json` dumped
    whole (indent 1), written an entry at a time; entries on disk are sorted on disk."""
    from .outputs import atomic_write

    p = Path(path)
    head = {"schema": BASELINE_SCHEMA, "window": {"fraction": baseline.fraction, "min_steps": baseline.min_steps}}

    def write(tmp: Path) -> None:
        with open(tmp, "w", encoding="utf-8") as fh:
            write_document(fh, head, "findings", (_clean(e.to_json()) for e in _sorted_entries(baseline.entries)))
            fh.write("\n")

    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(p, write)
    except OSError as exc:
        raise InputError(p, f"cannot write the baseline ({exc.strerror or exc})") from None


def _sort_key(e: BaselineEntry) -> tuple:
    return (e.run, e.metric or "", e.kind, -1 if e.step is None else e.step)


def _sorted_entries(entries: Any) -> Iterator[BaselineEntry]:
    """The entries in the file's order (`_sort_key`, ties in the order given): sorted in
    memory when held, by `extsort` in their spool's folder when on disk."""
    if not (isinstance(entries, Entries) and entries.spilled):
        yield from sorted(entries, key=_sort_key)
        return
    from .pipeline.extsort import sorted_pairs

    pairs = ((_sort_key(e), i) for i, e in enumerate(entries))
    for _, i in sorted_pairs(pairs, entries.folder):
        yield entries[i]


# ---------------------------------------------------------------- evaluation

@dataclass
class Gate:
    """The gate's verdict on one finding."""

    finding: Finding
    status: str
    reason: str
    threshold: str

    @property
    def fails(self) -> bool:
        return self.status == "fail"

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "fails": self.fails, "threshold": self.threshold, "reason": self.reason}


@dataclass
class CheckResult:
    report: Report
    """The analysis with out-of-scope findings (select/ignore/metrics) removed; command 'check'.
    Of a spooled sweep (`pipeline.runsummary.SpooledRuns`), its runs are checked as each is
    read back, so a pass over them holds one run and its gates at a time."""
    policy: Policy
    gates: dict[int, Gate]
    """id(finding) → gate, for every finding left in `report` (of a spooled sweep: of the
    runs read back and still alive)."""
    filtered_out: int = 0
    baseline: Baseline | None = None
    tally: dict[str, int] = field(default_factory=dict)
    """Numbers of every run, counted in one pass (`evaluate`): each status, failing findings
    and runs (counted from `gates` when a caller builds the result without them)."""

    def __post_init__(self) -> None:
        if not self.tally:
            self.tally = dict.fromkeys((*STATUSES, "failed", "runs failing"), 0)
            for run in self.report.runs:
                gates = self.run_gates(run)
                for g in gates:
                    self.tally[g.status] += 1
                self.tally["failed"] += sum(g.fails for g in gates)
                self.tally["runs failing"] += any(g.fails for g in gates)

    def gate(self, f: Finding) -> Gate:
        return self.gates[id(f)]

    def run_gates(self, run: RunReport) -> list[Gate]:
        return [self.gates[id(f)] for f in run.findings]

    def failures(self) -> Iterator[Gate]:
        """The failing gates, run by run in the report's order (one run at a time)."""
        for r in self.report.runs:
            yield from (g for g in self.run_gates(r) if g.fails)

    @property
    def failed(self) -> list[Gate]:
        return list(self.failures())

    @property
    def n_failed(self) -> int:
        return self.tally["failed"]

    @property
    def runs_failing(self) -> int:
        return self.tally["runs failing"]

    @property
    def passed(self) -> bool:
        return not self.n_failed

    def counts(self) -> dict[str, int]:
        return {s: self.tally[s] for s in STATUSES}

    def exit_code(self, exit_zero: bool = False) -> int:
        """0 when nothing fails (or with exit_zero), 1 when something does."""
        return 0 if exit_zero or self.passed else 1

    def to_json(self, exit_code: int | None = None) -> dict[str, Any]:
        """The `check` object of the JSON report."""
        out = self.json_head(exit_code)
        out["runs"] = list(self.json_runs())
        return out

    def json_head(self, exit_code: int | None = None) -> dict[str, Any]:
        """The `check` object but its `runs` (`json_runs`, which come last)."""
        b = self.baseline
        return {
            "passed": self.passed,
            "exit_code": self.exit_code() if exit_code is None else exit_code,
            "failed": self.n_failed,
            "counts": self.counts(),
            "filtered_out": self.filtered_out,
            "policy": self.policy.to_json(),
            "baseline": None if b is None else {"path": b.path, "entries": len(b.entries),
                                                "matched": self.counts()["baselined"]},
        }

    def json_runs(self) -> Iterator[dict[str, Any]]:
        for r in self.report.runs:
            failed = sum(g.fails for g in self.run_gates(r))
            yield {"run": r.run, "passed": not failed, "failed": failed}


def evaluate(report: Report, policy: Policy | None = None, baseline: Baseline | None = None) -> CheckResult:
    """Apply the policy and the baseline to an analysis report (the report is not changed).
    A spooled sweep's runs are checked in one pass for the numbers, then again as each is
    read back (`Checker`): the result holds the numbers, not the runs."""
    from .pipeline.runsummary import SpooledRuns

    policy = policy or Policy()
    runs = report.runs
    spooled = isinstance(runs, SpooledRuns)
    names = (lambda: (runs.name(i) for i in range(len(runs)))) if spooled else (lambda: (r.run for r in runs))
    check = Checker(policy, baseline.matcher(names) if baseline is not None else None)
    tally = dict.fromkeys((*STATUSES, "failed", "runs failing", "filtered out"), 0)
    gates: dict[int, Gate] = {}
    kept_runs: list[RunReport] = []
    used: set[int] = set()  # a baseline entry absorbs one finding (of a spooled sweep: names are unique)
    for run in runs:
        checked, run_gates = check.run(run, set() if spooled else used)
        for g in run_gates:
            tally[g.status] += 1
        failing = sum(g.fails for g in run_gates)
        tally["failed"] += failing
        tally["runs failing"] += failing > 0
        tally["filtered out"] += len(run.findings) - len(checked.findings)
        if not spooled:
            kept_runs.append(checked)
            gates.update((id(g.finding), g) for g in run_gates)
    result = CheckResult(report=Report(command="check", runs=kept_runs, warnings=list(report.warnings)),
                         policy=policy, gates=gates, filtered_out=tally["filtered out"], baseline=baseline,
                         tally=tally)
    if spooled:
        result.report.runs = runs.then(check.reader(result.gates))  # type: ignore[attr-defined]
    return result


class Checker:
    """One run's check: its findings in scope, matched to the baseline, each given a gate."""

    def __init__(self, policy: Policy, matcher: _Matcher | None) -> None:
        self.policy, self.matcher = policy, matcher

    def run(self, run: RunReport, used: set[int]) -> tuple[RunReport, list[Gate]]:
        kept = [f for f in run.findings if self.policy.checks(f)]
        checked = replace(run, findings=kept)
        accepted = self.matcher.match_run(checked, used) if self.matcher is not None else {}
        gates = [_gate(f, self.policy, accepted.get(id(f))) for f in kept]
        _allow_fast_spikes(gates, self.policy.max_fast_spikes)
        return checked, gates

    def reader(self, gates: dict[int, Gate]) -> Callable[[RunReport], RunReport]:
        """Checks a run read back from the spool; its gates stay in `gates` while the checked
        run lives (a finding read back is this run's alone: its id is not reused before)."""
        import weakref

        def read(run: RunReport) -> RunReport:
            checked, run_gates = self.run(run, set())
            ids = [id(g.finding) for g in run_gates]
            gates.update(zip(ids, run_gates))
            weakref.finalize(checked, _forget, gates, ids)
            return checked

        return read


def _forget(gates: dict[int, Gate], ids: list[int]) -> None:
    for i in ids:
        gates.pop(i, None)


def _gate(f: Finding, policy: Policy, entry: BaselineEntry | None) -> Gate:
    threshold, rule = policy.threshold(f)
    if entry is not None:
        at = "" if entry.step is None else f" at step {entry.step}"
        return Gate(f, "baselined", f"in the baseline{at}", threshold)
    if SEVERITY_RANK.get(f.severity, 0) < SEVERITY_RANK[threshold]:
        return Gate(f, "below", f"{f.severity} is below {threshold} ({rule})", threshold)
    return Gate(f, "fail", f"{f.severity} is at or above {threshold} ({rule})", threshold)


def _allow_fast_spikes(gates: list[Gate], allowed: int) -> None:
    """Up to `allowed` failing fast-recovering spikes of one run pass; more fail together."""
    fast = [g for g in gates if g.fails and g.finding.kind == "spike" and g.finding.recovery == "fast"]
    if not fast:
        return
    if len(fast) <= allowed:
        for g in fast:
            g.status, g.reason = "allowed", f"fast-recovering spike, {len(fast)} of max-fast-spikes {allowed} in this run"
    elif allowed:
        for g in fast:
            g.reason += f"; {len(fast)} fast-recovering spikes in this run, more than max-fast-spikes {allowed}"
