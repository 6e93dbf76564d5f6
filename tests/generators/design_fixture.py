"""A design file of one field whose first design is the small tensile-test fixture (derived_design.json): the design
schema tests edit it and load it as the loader loads a real file."""

from __future__ import annotations

import dataclasses
import functools
import json
from pathlib import Path
from typing import Any

import pytest

from generators.builders import procedural
from generators.data_files import taxonomy
from generators.designs import Design, designs, load_file
from generators.spec import Spec

FIELD = "engineering-chemical-materials"


def fixture_file() -> dict[str, Any]:
    """The field's design file with the fixture design, renamed to the field's first subdomain, in first place."""
    data: dict[str, Any] = json.loads(
        (Path(__file__).resolve().parents[2] / "generators" / "data" / "designs" / f"{FIELD}.json").read_text()
    )
    design = json.loads((Path(__file__).with_name("derived_design.json")).read_text("utf-8"))["designs"][0]
    data["designs"][0] = design | {"subdomain": data["designs"][0]["subdomain"]}
    return data


def timed_fixture(clock: str, every: str, formulas: list[dict[str, Any]]) -> dict[str, Any]:
    """The fixture file with the fixture design timed by ``clock`` every ``every`` (column ``tested_at``) and
    ``formulas`` (derived outcomes over the time) put before its outcomes."""
    data = fixture_file()
    design = data["designs"][0]
    design["timestamp"] = {
        "column": "tested_at",
        "name": "test time",
        "description": "Time of the test.",
        "clock": clock,
        "every": every,
    }
    design["outcomes"][:0] = formulas
    return data


def load_fixture(data: dict[str, Any]) -> Design:
    """The first design of ``data`` as the loader reads it (raises DesignError)."""
    field = next(f for f in taxonomy() if f.slug == FIELD)
    return load_file(json.dumps(data), field, f"{FIELD}.json")[0]


@functools.cache
def seeds_of(field: str, subdomain: str, count: int) -> tuple[int, ...]:
    """The first ``count`` seeds whose repository is of this subdomain (the context draw comes first and reads no
    design, so a design put in place of the shipped one keeps them)."""
    found = []
    for seed in range(1, 200_000):
        if procedural.subdomain_of(seed) == (field, subdomain):
            found.append(seed)
            if len(found) == count:
                break
    return tuple(found)


def specs_with_design(monkeypatch: pytest.MonkeyPatch, design: Design, count: int) -> list[Spec]:
    """Specs of ``count`` repositories of ``design``'s subdomain, built with ``design`` in place of the shipped one."""
    table = dict(designs())
    key = (design.field, design.subdomain)
    table[key] = design
    monkeypatch.setattr(procedural, "designs", lambda: table)
    return [procedural.build_spec(seed) for seed in seeds_of(*key, count)]


def with_changed_column(spec: Spec, role: str, **change: Any) -> Spec:
    """``spec`` with its first column of ``role`` changed (unvalidated: for the tests of what validation refuses)."""
    target = next(v for v in spec.variables if v.role == role)
    columns = tuple(dataclasses.replace(v, **change) if v is target else v for v in spec.variables)
    return dataclasses.replace(spec, variables=columns)
