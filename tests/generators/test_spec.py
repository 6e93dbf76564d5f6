"""The spec model: lossless JSON round trip, and refusal of malformed or hostile spec files."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import asdict, is_dataclass
from typing import Any

import pytest

from generators.packs import canonical_json, spec_digest
from generators.spec import FORMAT_VERSION, SpecError, from_dict, from_json
from tests.helpers import repo


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 17, 118, 499, 2**63 - 1])
def test_round_trip_is_lossless(seed: int) -> None:
    spec = repo(seed).spec
    text = spec.to_json()
    again = from_json(text)
    assert again == spec
    assert again.to_json() == text


def _asdict_with_lists(value: Any) -> Any:
    """The canonical form as first defined: dataclasses.asdict, then every tuple as a list."""
    if is_dataclass(value) and not isinstance(value, type):
        value = asdict(value)
    if isinstance(value, dict):
        return {k: _asdict_with_lists(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_asdict_with_lists(v) for v in value]
    return value


def test_the_canonical_form_never_changes() -> None:
    """Disk cache folders and spec packs are keyed by the digest of the canonical JSON: it must stay the text
    that asdict gave, over every format and the edge seeds."""
    seeds = [*range(60), 118, 288, 2**40 + 7, 2**63 - 1]
    for seed in seeds:
        spec = repo(seed).spec
        assert spec.to_dict() == _asdict_with_lists(spec), seed
        assert spec.to_json() == json.dumps(_asdict_with_lists(spec), indent=2, ensure_ascii=False) + "\n", seed
    assert spec_digest(canonical_json(repo(118).spec)) == "a02082e180b11c1ea3159e23b75d7c28"


def _dependent_index(data: dict[str, Any]) -> int:
    return next(i for i, v in enumerate(data["variables"]) if v["role"] == "dependent")


def _independent_index(data: dict[str, Any], kind: str) -> int:
    return next(i for i, v in enumerate(data["variables"]) if v["role"] == "independent" and v["type"] == kind)


Mutation = Callable[[dict[str, Any]], None]

HOSTILE: list[tuple[str, Mutation, str]] = [
    ("wrong version", lambda d: d.update(format_version=FORMAT_VERSION + 1), "format_version"),
    ("unknown field", lambda d: d.update(evil=1), "evil: unknown field"),
    ("seed negative", lambda d: d.update(seed=-1), "seed"),
    ("seed too big", lambda d: d.update(seed=2**63), "seed"),
    ("seed bool", lambda d: d.update(seed=True), "seed: expected an integer"),
    ("bad extension", lambda d: d.update(extension="exe"), "extension"),
    ("not a list", lambda d: d.update(variables={}), "variables: expected a list"),
    ("title newline", lambda d: d["project"].update(title="a\nb"), "project.title"),
    ("missing abstract", lambda d: d["project"].pop("abstract"), "project.abstract: missing"),
    (
        "dunder expression",
        lambda d: d["variables"][_dependent_index(d)].update(expression="__import__('os').system('id')"),
        "expression: attribute access",
    ),
    (
        "unknown name expression",
        lambda d: d["variables"][_dependent_index(d)].update(expression="secret + 1"),
        "unknown name 'secret'",
    ),
    (
        "expression uses later column",
        lambda d: d["variables"][_dependent_index(d)].update(expression=d["variables"][-1]["column"] + " + 1"),
        "expression",
    ),
    ("nan number", lambda d: d["variables"][_dependent_index(d)].update(noise_sd=float("nan")), "noise_sd"),
    (
        "negative sd",
        lambda d: d["variables"][_independent_index(d, "continuous")].update(
            distribution={"kind": "normal", "params": {"mean": 0, "sd": -1}}
        ),
        "sd must be positive",
    ),
    (
        "unknown distribution",
        lambda d: d["variables"][_independent_index(d, "continuous")].update(
            distribution={"kind": "cauchy", "params": {"loc": 0}}
        ),
        "cauchy",
    ),
    (
        "probs do not sum",
        lambda d: d["variables"][_independent_index(d, "categorical")].update(
            probs=[0.9] * len(d["variables"][_independent_index(d, "categorical")]["categories"])
        ),
        "sum to 1",
    ),
    (
        "path traversal value",
        lambda d: d["path_variables"][0].update(values=["../etc", "x"]),
        "invalid value",
    ),
    ("slash in value", lambda d: d["path_variables"][0].update(values=["a/b", "x"]), "invalid value"),
    (
        "duplicate column",
        lambda d: d["variables"][1].update(column=d["variables"][0]["column"]),
        "used twice",
    ),
    ("reserved column", lambda d: d["variables"][1].update(column="exp"), "reserved"),
    (
        "unknown placeholder",
        lambda d: d["template"]["components"][0].append("nowhere"),
        "unknown placeholder",
    ),
    ("bad joiner", lambda d: d["template"]["joiners"].__setitem__(0, "/"), "joiners"),
    ("bad date", lambda d: d.update(start_date="2024-13-01"), "start_date"),
    (
        "huge poisson",
        lambda d: d["variables"][_independent_index(d, "integer")].update(
            distribution={"kind": "poisson", "params": {"lam": 1e9}}
        ),
        "distribution",
    ),
    ("too many files", lambda d: d["params"].update(max_files=10**9), "params.max_files"),
]


@pytest.mark.parametrize(("label", "mutate", "message"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_specs_are_refused_with_the_field_named(label: str, mutate: Mutation, message: str) -> None:
    data = copy.deepcopy(repo(118).spec.to_dict())
    mutate(data)
    with pytest.raises(SpecError, match=message.replace("(", r"\(").replace(")", r"\)")) as info:
        from_dict(data)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("text", ["", "{", "[]", "null", "1", '"spec"', "[" * 100_000])
def test_malformed_json_is_refused(text: str) -> None:
    with pytest.raises(SpecError):
        from_json(text)


def test_spec_file_with_many_seeds_round_trips() -> None:
    for seed in range(30, 60):
        spec = repo(seed).spec
        assert from_dict(json.loads(json.dumps(spec.to_dict()))) == spec
