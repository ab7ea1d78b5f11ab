"""Where the first NaN/Inf is born: forward op and module, or backward node.

Anomaly detection only sees NaN created in backward, so the forward side is
watched here: a TorchFunctionMode checks the output of every torch op (the exact
op, e.g. `log`) and module hooks keep the stack of qualified module names
(`blocks.1.mlp`) the op ran in. The same mode maps each autograd node's sequence
number to its module, so a backward node that returns NaN/Inf (caught by a node
hook, which also sees Inf, which anomaly mode does not) is named with its module.
"""
from __future__ import annotations

import bisect
import re
import traceback
from dataclasses import asdict, dataclass
from typing import Any

from .tensors import all_finite, describe_nonfinite

PHASES = ("state", "input", "forward", "backward", "optimizer")
"""In time order: the checkpoint's parameters, the batch, forward, backward, optimizer step."""

_ANOMALY = re.compile(r"Function '(?P<op>\w+)' returned (?P<kind>nan|inf) values in its (?P<idx>\d+)\w* output")
_FILE_LINE = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)\n(?P<code>[^\n]*)')


@dataclass
class NonFinite:
    """The first place a NaN/Inf appeared in the replayed step."""

    phase: str
    module: str | None
    module_type: str | None
    op: str | None
    detail: str
    where: str | None = None
    step: int | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def op_name(func: Any) -> str:
    name = getattr(func, "__name__", None) or repr(func)
    if name.startswith("__") and name.endswith("__") and len(name) > 4:
        name = name[2:-2]
    return name


def _internal(path: str) -> bool:
    """A frame of torch itself or of this package: never the user's line. Told by the packages'
    own folders, not by a '/torch/' anywhere in the path (an environment under /opt/torch/ holds
    transformers, whose loss code is what a user needs to see)."""
    import os

    path = os.path.abspath(path) if not path.startswith("<") else path
    return path.startswith("<frozen") or path.startswith(_internal_roots())


def _internal_roots() -> tuple[str, ...]:
    global _ROOTS
    if _ROOTS is None:
        import os
        import sys

        torch = sys.modules.get("torch")
        roots = [os.path.dirname(os.path.abspath(__file__)) + os.sep]
        if torch is not None and getattr(torch, "__file__", None):
            roots.append(os.path.dirname(os.path.abspath(torch.__file__)) + os.sep)
        _ROOTS = tuple(roots)
    return _ROOTS


_ROOTS: tuple[str, ...] | None = None


def user_frame(frames) -> str | None:
    """`model.py:12 in forward: return torch.log(x)` for the innermost frame outside torch and spikelens."""
    for fr in reversed(frames):
        if _internal(fr.filename):
            continue
        code = (fr.line or "").strip()
        return f"{fr.filename}:{fr.lineno} in {fr.name}" + (f": {code}" if code else "")
    return None


def anomaly_where(text: str) -> str | None:
    """The user's line from the forward traceback anomaly mode attaches to its warning."""
    _, _, tail = text.partition("Traceback of forward call that caused the error:")
    found = None
    for m in _FILE_LINE.finditer(tail):
        if _internal(m["file"]):
            continue
        found = f"{m['file']}:{m['line']} in {m['func']}: {m['code'].strip()}"
    return found


def node_where(node) -> str | None:
    """The user's line that created an autograd node (anomaly mode keeps the forward stack)."""
    try:
        stack = node.metadata.get("traceback_")
    except Exception:
        return None
    if not stack:
        return None
    text = "".join(stack) if isinstance(stack, (list, tuple)) else str(stack)
    return anomaly_where("Traceback of forward call that caused the error:\n" + text)


def parse_anomaly(message: str) -> tuple[str, str, int] | None:
    """("SqrtBackward0", "NaN", 0) from anomaly mode's RuntimeError, or None."""
    m = _ANOMALY.search(message)
    if not m:
        return None
    return m["op"], "NaN" if m["kind"] == "nan" else "Inf", int(m["idx"])


class ForwardWatch:
    """Module hooks plus an op-level TorchFunctionMode for one forward pass."""

    def __init__(self, model, torch):
        self.torch = torch
        self.names: dict[int, str] = {}
        self.types: dict[str, str] = {}
        for name, mod in model.named_modules():
            qual = name or "(root)"
            self.names.setdefault(id(mod), qual)
            self.types.setdefault(qual, type(mod).__name__)
        self.model = model
        self.stack: list[str] = []
        self.found: NonFinite | None = None
        self.seq_modules: dict[int, str | None] = {}
        self._handles: list[Any] = []
        self._mode = None

    # -- hooks
    def _pre(self, module, args):
        self.stack.append(self.names.get(id(module), type(module).__name__))

    def _post(self, module, args, output):
        name = self.stack.pop() if self.stack else self.names.get(id(module))
        if self.found is None and not _outputs_finite(output, self.torch):
            self.found = NonFinite(phase="forward", module=name, module_type=self.types.get(name),
                                   op=None, detail=f"the output of {name} ({self.types.get(name)}) "
                                                   f"holds {_describe_first(output, self.torch)}")

    def on_op(self, func, out) -> None:
        """Called by the mode after every torch op."""
        torch = self.torch
        module = self.stack[-1] if self.stack else None
        for t in _tensors_of(out, torch):
            fn = t.grad_fn
            if fn is not None:
                try:
                    self.seq_modules[fn._sequence_nr()] = module
                except Exception:
                    pass
            if self.found is None and not all_finite(t, torch):
                op = op_name(func)
                inside = f"in {module} ({self.types.get(module)})" if module else "outside any module (in loss_fn)"
                self.found = NonFinite(phase="forward", module=module,
                                       module_type=self.types.get(module) if module else None, op=op,
                                       detail=f"{op} returned {describe_nonfinite(t, torch)} {inside}",
                                       where=user_frame(traceback.extract_stack()))

    def module_of_node(self, node) -> str | None:
        """The module whose forward created an autograd node (by sequence number)."""
        try:
            seq = node._sequence_nr()
        except Exception:
            return None
        if not self.seq_modules:
            return None
        keys = self._sorted_keys()
        i = bisect.bisect_left(keys, seq)  # the op call that created it is the first recorded at or after it
        return self.seq_modules[keys[i]] if i < len(keys) else None

    def _sorted_keys(self) -> list[int]:
        if getattr(self, "_keys_len", -1) != len(self.seq_modules):
            self._keys = sorted(self.seq_modules)
            self._keys_len = len(self.seq_modules)
        return self._keys

    def __enter__(self) -> "ForwardWatch":
        for mod in self.model.modules():
            self._handles.append(mod.register_forward_pre_hook(self._pre))
            self._handles.append(mod.register_forward_hook(self._post, always_call=True))
        self._mode = _op_mode(self.torch)(self)
        self._mode.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        try:
            if self._mode is not None:
                self._mode.__exit__(*exc)
        finally:
            for h in self._handles:
                h.remove()
            self._handles.clear()
            self.stack.clear()


def _op_mode(torch):
    from torch.overrides import TorchFunctionMode

    class _OpWatch(TorchFunctionMode):
        def __init__(self, watch: ForwardWatch):
            super().__init__()
            self.watch = watch

        def __torch_function__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            self.watch.on_op(func, out)
            return out

    return _OpWatch


class BackwardWatch:
    """Node hooks on the whole autograd graph of the loss: the first node whose computed
    gradients hold NaN/Inf is where the backward blow-up was born."""

    def __init__(self, loss, forward: ForwardWatch, torch):
        self.torch = torch
        self.forward = forward
        self.found: NonFinite | None = None
        self.active = True
        self._register(loss.grad_fn)

    def _register(self, root) -> None:
        seen: set[Any] = set()
        todo = [root]
        while todo:
            node = todo.pop()
            if node is None or node in seen:
                continue
            seen.add(node)
            node.register_hook(self._hook_for(node))
            todo.extend(fn for fn, _ in node.next_functions)

    def _hook_for(self, node):
        def hook(grad_inputs, grad_outputs):
            if self.found is not None or not self.active:
                return None
            for i, g in enumerate(grad_inputs):
                if g is not None and not all_finite(g, self.torch):
                    self.found = self._finding(node, i, g, grad_outputs)
                    break
            return None
        return hook

    def _finding(self, node, index: int, grad, grad_outputs) -> NonFinite:
        torch = self.torch
        op = node.name()
        module = self.forward.module_of_node(node)
        incoming_ok = all(g is None or all_finite(g, torch) for g in grad_outputs)
        inside = f"in {module} ({self.forward.types.get(module)})" if module else "outside any module"
        detail = f"{op} returned {describe_nonfinite(grad, torch)} in its output {index} {inside}"
        if not incoming_ok:
            detail += " (the gradient flowing into it was already non-finite)"
        return NonFinite(phase="backward", module=module,
                         module_type=self.forward.types.get(module) if module else None, op=op, detail=detail,
                         where=node_where(node))

    def from_anomaly(self, message: str) -> NonFinite | None:
        """Fill in from anomaly mode's error when no node hook saw the gradient."""
        parsed = parse_anomaly(message)
        if parsed is None:
            return None
        op, kind, idx = parsed
        return NonFinite(phase="backward", module=None, module_type=None, op=op,
                         detail=f"{op} returned {kind} values in its output {idx}")


def _tensors_of(out, torch):
    if isinstance(out, torch.Tensor):
        return (out,)
    if isinstance(out, (tuple, list)):
        return tuple(t for t in out if isinstance(t, torch.Tensor))
    return ()


def _iter_out(output, torch):
    from .tensors import iter_tensors

    return iter_tensors(output, torch, "output")


def _outputs_finite(output, torch) -> bool:
    return all(all_finite(t, torch) for _, t in _iter_out(output, torch))


def _describe_first(output, torch) -> str:
    for _, t in _iter_out(output, torch):
        if not all_finite(t, torch):
            return describe_nonfinite(t, torch)
    return "non-finite values"
