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
    """The canonical form as first defined: dataclasses.asdict, then every tuple as a list (and without the
    ``universe`` field added later, which is left out while empty: the open universe's text is unchanged)."""
    if is_dataclass(value) and not isinstance(value, type):
        value = asdict(value)
        if value.get("universe") == "":
            del value["universe"]
        if value.get("mess") == 0:  # likewise the messiness level, absent for a clean repository
            del value["mess"]
        if "excluded" in value and not value["excluded"]:  # and the impossible crossings (version 12) when none
            del value["excluded"]
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
    assert spec_digest(canonical_json(repo(118).spec)) == "be76d1cadc86a30f93ceb79dc4bb0f59"


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
            distribution={"kind": "normal", "params": {"mean": 0, "sd": -1}}, by_level=None
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
    data = copy.deepcopy(repo(12).spec.to_dict())  # 12: every kind of column, for the mutations to reach
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


def _with(seed: int, edit: Callable[[dict[str, Any]], None]) -> str:
    data = json.loads(repo(seed).spec.to_json())
    edit(data)
    return json.dumps(data)


def _set_path_value(data: dict[str, Any]) -> None:
    strings = next(pv for pv in data["path_variables"] if isinstance(pv["values"][0], str))
    strings["values"][0] += "\n"


NAME_FIELDS: list[tuple[str, Callable[[dict[str, Any]], None]]] = [
    ("variables[0].column", lambda d: d["variables"][0].__setitem__("column", d["variables"][0]["column"] + "\n")),
    ("project.repo_name", lambda d: d["project"].__setitem__("repo_name", d["project"]["repo_name"] + "\n")),
    ("researchers[0]", lambda d: d["researchers"].__setitem__(0, d["researchers"][0] + "\n")),
    ("path_variables[", _set_path_value),
    ("path_variables[0].column", lambda d: d["path_variables"][0].__setitem__("column", "x\n")),
    ("template.components[0][0]", lambda d: d["template"]["components"][0].__setitem__(0, "researcher\n")),
    (
        "categories[0]",
        lambda d: d["variables"][_independent_index(d, "categorical")]["categories"].__setitem__(0, "group\n"),
    ),
    ("variables[0].prefix", lambda d: d["variables"][0].__setitem__("prefix", "P\n")),
]


@pytest.mark.parametrize(("field", "edit"), NAME_FIELDS, ids=[f[0] for f in NAME_FIELDS])
def test_a_trailing_newline_never_passes_name_validation(field: str, edit: Callable[[dict[str, Any]], None]) -> None:
    """Names are matched whole: ``re.match(r"...$")`` would accept "name\\n" ($ matches before a final newline)."""
    seed = next(
        s
        for s in range(200)
        if repo(s).spec.researchers
        and repo(s).spec.variables[0].prefix
        and any(not pv.numeric for pv in repo(s).spec.path_variables)
        and any(v.role == "independent" and v.type == "categorical" for v in repo(s).spec.variables)
    )
    with pytest.raises(SpecError, match="invalid value") as caught:
        from_json(_with(seed, edit))
    assert field in str(caught.value)


HOSTILE_TEXTS: list[tuple[str, str]] = [
    ("5001-digit integer", '{"format_version": 1, "seed": ' + "9" * 5001 + "}"),
    ("5001-digit integer deep inside", json.dumps({"format_version": 1, "x": 0}).replace("0}", "7" * 5001 + "}")),
    ("nesting 5000 deep", '{"format_version": 1, "seed": ' + "[" * 5000 + "]" * 5000 + "}"),
    ("nesting 100000 deep", "{" + '"a":{' * 100_000 + "}" * 100_001),
    ("a huge string", json.dumps({"format_version": 1, "seed": 1, "x": "y" * (3 << 20)})),
    ("NaN seed", '{"format_version": 1, "seed": NaN}'),
    ("Infinity version", '{"format_version": Infinity}'),
    ("a list", "[1, 2]"),
]


@pytest.mark.parametrize("text", [t for _, t in HOSTILE_TEXTS], ids=[label for label, _ in HOSTILE_TEXTS])
def test_hostile_json_is_one_spec_error(text: str) -> None:
    """Whatever the text holds, from_json gives a spec or one SpecError of one line, never another exception."""
    with pytest.raises(SpecError) as caught:
        from_json(text)
    assert "\n" not in str(caught.value) and len(str(caught.value)) < 400


def test_an_expression_literal_that_overflows_is_a_spec_error() -> None:
    data = repo(5).spec.to_dict()
    dependent = next(v for v in data["variables"] if v["expression"])
    dependent["expression"] += " + 1e999"
    with pytest.raises(SpecError, match=r"expression: number '1e999' is out of range"):
        from_json(json.dumps(data))


def test_a_keyed_spec_canonical_form_adds_only_its_salt() -> None:
    from dataclasses import replace

    spec = repo(118).spec
    keyed = replace(spec, universe="ab" * 32)
    data = keyed.to_dict()
    assert data.pop("universe") == "ab" * 32 and data == spec.to_dict()
    assert spec_digest(canonical_json(keyed)) != spec_digest(canonical_json(spec))
