"""JSON Schema of `spikelens replay --format json` (schema id `spikelens.replay/1`).

A public interface like the findings report: add fields freely, never rename or drop
one without bumping the id. Non-finite numbers are the strings "NaN", "Infinity",
"-Infinity" (JSON has no NaN).
"""
from __future__ import annotations

_NUM = {"oneOf": [{"type": "number"}, {"enum": ["NaN", "Infinity", "-Infinity"]}]}
_NUM_OR_NULL = {"oneOf": [{"type": "number"}, {"enum": ["NaN", "Infinity", "-Infinity"]}, {"type": "null"}]}
_STR_OR_NULL = {"type": ["string", "null"]}

NONFINITE = {
    "type": "object",
    "required": ["phase", "module", "module_type", "op", "detail", "where", "step"],
    "properties": {
        "phase": {"enum": ["state", "input", "forward", "backward", "optimizer"]},
        "module": _STR_OR_NULL,
        "module_type": _STR_OR_NULL,
        "op": _STR_OR_NULL,
        "detail": {"type": "string"},
        "where": _STR_OR_NULL,
        "step": {"type": ["integer", "null"]},
    },
}

LAYER = {
    "type": "object",
    "required": ["layer", "params", "numel", "grad_norm", "param_norm", "update_ratio", "share"],
    "properties": {
        "layer": {"type": "string"}, "params": {"type": "integer"}, "numel": {"type": "integer"},
        "grad_norm": _NUM_OR_NULL, "param_norm": _NUM, "update_ratio": _NUM_OR_NULL,
        "share": {"type": ["number", "null"], "minimum": 0, "maximum": 1.0000001},
    },
}

PARAMETER = {
    "type": "object",
    "required": ["name", "layer", "shape", "grad_norm", "param_norm", "update_ratio"],
    "properties": {
        "name": {"type": "string"}, "layer": {"type": "string"},
        "shape": {"type": "array", "items": {"type": "integer"}},
        "grad_norm": _NUM_OR_NULL, "param_norm": _NUM, "update_ratio": _NUM_OR_NULL,
    },
}

LOGGED = {
    "type": ["object", "null"],
    "required": ["metric", "step", "value", "replayed", "rel_diff", "reproduced", "message"],
    "properties": {
        "metric": {"type": "string"}, "step": {"type": "integer"},
        "value": _NUM_OR_NULL, "replayed": _NUM_OR_NULL, "rel_diff": _NUM_OR_NULL,
        "reproduced": {"type": ["boolean", "null"]}, "message": _STR_OR_NULL,
    },
}

WINDOW_POINT = {
    "type": "object",
    "required": ["step", "loss", "grad_norm", "finite"],
    "properties": {"step": {"type": "integer"}, "loss": _NUM_OR_NULL, "grad_norm": _NUM_OR_NULL,
                   "finite": {"type": "boolean"}, "logged": _NUM_OR_NULL},
}

SOURCE = {
    "type": ["object", "null"],
    "required": ["kind", "path", "at_step", "restored", "captures"],
    "properties": {
        "kind": {"enum": ["transformers", "lightning", "state_dict", "build"]},
        "path": {"type": "string"}, "at_step": {"type": ["integer", "null"]},
        "restored": {"type": "array", "items": {"type": "string"}}, "captures": _STR_OR_NULL,
    },
}

BISECT = {
    "type": ["object", "null"],
    "required": ["from", "to", "factor", "first_bad", "why", "checked_steps", "plain_steps", "probes"],
    "properties": {
        "from": {"type": "integer"}, "to": {"type": "integer"}, "factor": {"type": "number"},
        "first_bad": {"type": ["integer", "null"]}, "why": _STR_OR_NULL,
        "checked_steps": {"type": "integer"}, "plain_steps": {"type": "integer"},
        "probes": {"type": "array", "items": {
            "type": "object", "required": ["step", "loss", "bad", "phase"],
            "properties": {"step": {"type": "integer"}, "loss": _NUM_OR_NULL, "bad": _STR_OR_NULL,
                           "phase": _STR_OR_NULL}}},
    },
}

REPLAYED = {
    "type": ["object", "null"],
    "required": ["plain_steps", "checked_steps", "compared_losses", "max_rel_diff", "drift_step"],
    "properties": {
        "plain_steps": {"type": "integer"}, "checked_steps": {"type": "integer"},
        "compared_losses": {"type": "integer"}, "max_rel_diff": _NUM_OR_NULL,
        "drift_step": {"type": ["integer", "null"]},
    },
}

REPLAY_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "spikelens replay report",
    "type": "object",
    "required": ["schema", "target", "step", "replayed_step", "checkpoint", "device", "dtype", "torch",
                 "optimizer", "finite", "loss", "nonfinite", "logged", "grad_norm", "dominant", "layers",
                 "parameters", "window", "warnings", "source", "bisect", "replayed"],
    "properties": {
        "schema": {"const": "spikelens.replay/1"},
        "target": {"type": "string"},
        "step": {"type": "integer"},
        "replayed_step": {"type": "integer"},
        "checkpoint": _STR_OR_NULL,
        "device": {"type": "string"},
        "dtype": {"enum": ["float32", "float16", "bfloat16"]},
        "torch": {"type": "string"},
        "optimizer": _STR_OR_NULL,
        "finite": {"type": "boolean"},
        "loss": _NUM_OR_NULL,
        "nonfinite": {"oneOf": [{"type": "null"}, NONFINITE]},
        "logged": LOGGED,
        "grad_norm": _NUM_OR_NULL,
        "dominant": {"type": "array", "items": {"type": "object", "required": ["layer", "share"],
                                                 "properties": {"layer": {"type": "string"},
                                                                "share": {"type": "number"}}}},
        "layers": {"type": "array", "items": LAYER},
        "parameters": {"type": "array", "items": PARAMETER},
        "window": {"type": "array", "items": WINDOW_POINT},
        "warnings": {"type": "array", "items": {"type": "string"}},
        "source": SOURCE,
        "bisect": BISECT,
        "replayed": REPLAYED,
    },
}
