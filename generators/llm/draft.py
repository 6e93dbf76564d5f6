"""What the model writes (a *draft*) and how it becomes a spec.

The draft has exactly the shape of the corresponding parts of a spec (project texts, path variables, the
path template's placeholders, joiners and value style, the columns with their expressions), so the spec
validation's messages ("variables[3].expression: unknown name 'x'") point straight into the model's output
and can be fed back for repair. The rest of the spec (taxonomy context, extension, README flags, researchers,
dates, run numbers, generation parameters) comes from the procedural spec of the same seed, which keeps the
paper's distributions of those choices and lets the prompt name the context.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from generators import clock
from generators.packs import check_untrusted
from generators.spec import (
    CONTINUOUS_DISTRIBUTIONS,
    INTEGER_DISTRIBUTIONS,
    JOINERS,
    MAX_VALUES,
    MAX_VARIABLES,
    ROLES,
    VALUE_STYLES,
    PathVariable,
    Spec,
    SpecError,
    from_dict,
    held_levels,
    level_key,
    validate,
)

DRAFT_KEYS = ("project", "path_variables", "template", "variables")
TEMPLATE_KEYS = ("components", "joiners", "value_style")
COLUMN_PATTERN = "^[a-z][a-z0-9_]{0,31}$"

_TEXT: dict[str, Any] = {"type": "string"}
_TEXTS: dict[str, Any] = {"type": "array", "items": _TEXT}


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": False, "required": list(properties), "properties": properties}


# JSON Schema of a draft, for structured outputs. Distribution parameters are a free-form object of numbers
# (their names depend on the kind), so the schema is not "strict" in OpenAI's sense; validation checks them.
DRAFT_SCHEMA: dict[str, Any] = _object(
    {
        "project": _object(
            {
                "title": _TEXT,
                "repo_name": {"type": "string", "pattern": "^[a-z0-9][a-z0-9_-]{0,79}$"},
                "description": _object(
                    {
                        "plan": _TEXT,
                        "hypotheses": _TEXTS,
                        "independent": _TEXTS,
                        "dependent": _TEXTS,
                        "confounders": _TEXTS,
                        "setup": _TEXT,
                    }
                ),
                "abstract": _TEXT,
            }
        ),
        "path_variables": {
            "type": "array",
            "maxItems": 8,
            "items": _object(
                {
                    "name": _TEXT,
                    "column": {"type": "string", "pattern": COLUMN_PATTERN},
                    "description": _TEXT,
                    "unit": _TEXT,
                    "values": {
                        "type": "array",
                        "minItems": 1,
                        "maxItems": MAX_VALUES,
                        "items": {"anyOf": [{"type": "string"}, {"type": "number"}]},
                    },
                }
            ),
        },
        "template": _object(
            {
                "components": {
                    "type": "array",
                    "minItems": 2,
                    "maxItems": 8,
                    "items": {"type": "array", "minItems": 1, "maxItems": 4, "items": _TEXT},
                },
                "joiners": {"type": "array", "items": {"enum": list(JOINERS)}},
                "value_style": {"enum": list(VALUE_STYLES)},
            }
        ),
        "variables": {
            "type": "array",
            "minItems": 1,
            "maxItems": MAX_VARIABLES,
            "items": _object(
                {
                    "name": _TEXT,
                    "column": {"type": "string", "pattern": COLUMN_PATTERN},
                    "role": {"enum": list(ROLES)},
                    "type": {"enum": ["string", "datetime", "date", "categorical", "integer", "continuous"]},
                    "description": _TEXT,
                    "unit": _TEXT,
                    "distribution": {
                        "anyOf": [
                            {"type": "null"},
                            _object(
                                {
                                    "kind": {"enum": [*CONTINUOUS_DISTRIBUTIONS, *INTEGER_DISTRIBUTIONS]},
                                    "params": {"type": "object", "additionalProperties": {"type": "number"}},
                                }
                            ),
                        ]
                    },
                    "categories": _TEXTS,
                    "probs": {"type": "array", "items": {"type": "number"}},
                    "expression": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                    "noise_sd": {"type": "number"},
                    "bounds": {
                        "type": "array",
                        "minItems": 2,
                        "maxItems": 2,
                        "items": {"anyOf": [{"type": "number"}, {"type": "null"}]},
                    },
                    "prefix": _TEXT,
                }
            ),
        },
    }
)


def draft_of(spec: Spec) -> dict[str, Any]:
    """The draft a perfect model would write for ``spec`` (the procedural backend's answer, the prompt's example)."""
    data = spec.to_dict()
    template = {k: data["template"][k] for k in TEMPLATE_KEYS}
    return {
        "project": data["project"],
        "path_variables": data["path_variables"],
        "template": template,
        "variables": data["variables"],
    }


def assemble(base: Spec, text: str) -> Spec:
    """The spec made of ``base`` and the model's draft ``text``; :class:`SpecError` names the first problem."""
    try:
        draft = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise SpecError(f"not valid JSON: {exc}") from None
    if not isinstance(draft, dict):
        raise SpecError("expected one JSON object")
    for key in sorted(draft):
        if key not in DRAFT_KEYS:
            raise SpecError(f"{key}: unknown field (a draft has {', '.join(DRAFT_KEYS)})")
    for key in DRAFT_KEYS:
        if key not in draft:
            raise SpecError(f"{key}: missing")
    template = draft["template"]
    if not isinstance(template, dict):
        raise SpecError("template: expected an object")
    for key in sorted(template):
        if key not in TEMPLATE_KEYS:
            raise SpecError(f"template.{key}: unknown field")
    data = base.to_dict()
    data.update({key: draft[key] for key in DRAFT_KEYS})
    data.pop("excluded", None)  # the design's crossings, at the drafted levels below
    _inherit_clock(base, data["variables"])
    data["template"] = {**template, "date_format": base.template.date_format, "seq_width": base.template.seq_width}
    spec = from_dict(data)
    if base.excluded:  # a drafted condition of the design keeps its impossible crossings, at the levels drafted
        held, excluded = held_levels(spec.path_variables, base.excluded)
        _refuse_dead_levels(spec.path_variables, held)
        spec = replace(spec, excluded=excluded)
        validate(spec)
    check_untrusted(spec)
    return spec


def _refuse_dead_levels(drafted: tuple[PathVariable, ...], held: tuple[PathVariable, ...]) -> None:
    """A drafted level that the design's crossings leave on no path would have no file, while the draft's README and
    formulas name it: the model is told to drop it (a repair), as the procedural builder drops such a level."""
    for pv, kept in zip(drafted, held, strict=True):
        dead = [v for v in pv.values if v not in kept.values]
        if dead:
            shown = ", ".join(str(level_key(v)) for v in dead)
            raise SpecError(
                f"path_variables: {pv.column} level(s) {shown} have no allowed path (the design rules out every "
                "crossing with the other drafted levels); drop them or draft other levels"
            )


def _inherit_clock(base: Spec, variables: object) -> None:
    """A drafted datetime column without a clock takes the design's (the base spec's), and its window, where they fit
    the draft's resolution: the model writes names and laws, the time model of the subdomain's records is data."""
    if not isinstance(variables, list):
        return  # from_dict names the problem
    timed = next((v for v in base.variables if v.role == "datetime" and v.clock != "random"), None)
    if timed is None:
        return
    for variable in variables:
        if not isinstance(variable, dict) or variable.get("role") != "datetime" or "clock" in variable:
            continue
        resolution = "date" if variable.get("type") == "date" else "datetime"
        if clock.cadence_problem(timed.clock, timed.every, resolution) is None:
            variable["clock"], variable["every"] = timed.clock, timed.every
            window = timed.window
            if window is not None and clock.window_problem(window, timed.clock, timed.every, resolution) is None:
                variable["window"] = {
                    "months": list(window.months),
                    "hours": list(window.hours),
                    "weekdays": window.weekdays,
                    "closed": [list(period) for period in window.closed],
                }
