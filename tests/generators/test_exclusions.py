"""Combinations of conditions a study cannot have (generator version 12): a design's ``exclude`` crossings become the
spec's ``excluded``, the tree never holds such a path, and the README says which. Reviewers of issue 24 rejected
benchmark families with machine counts they do not contain and variational assimilation runs with ensemble sizes."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
from typing import Any

import numpy as np
import pytest

from generators.designs import DesignError
from generators.llm.draft import assemble, draft_of
from generators.paths import Tree
from generators.repository import Repository
from generators.spec import SpecError, crossings_within, from_json, validate
from tests.generators.design_fixture import fixture_file, load_fixture, specs_with_design
from tests.helpers import repo

_HOT_A1 = {"alloy": ["a1"], "anneal_c": [500]}
_FAST_COLD = {"strain_rate": [0.1], "anneal_c": [300, 400]}


def _with(exclude: Any) -> dict[str, Any]:
    data = fixture_file()
    data["designs"][0]["exclude"] = exclude
    return data


def _forbidden(spec: Any, path_values: dict[str, Any]) -> bool:
    return any(all(path_values.get(c) in levels for c, levels in crossing.items()) for crossing in spec.excluded)


def test_a_design_names_its_impossible_crossings() -> None:
    design = load_fixture(_with([_HOT_A1, _FAST_COLD]))
    assert design.excluded == (
        {"alloy": ("a1",), "anneal_c": (500.0,)},
        {"strain_rate": (0.1,), "anneal_c": (300.0, 400.0)},
    )
    assert load_fixture(fixture_file()).excluded == ()


@pytest.mark.parametrize(
    ("exclude", "message"),
    [
        ([{"alloy": ["a1"]}], r"exclude\[0\]: expected an object of two or more factors"),
        ([{"alloy": ["a1"], "grain": ["x"]}], r"exclude\[0\]: 'grain' is not a factor of this design"),
        (
            [{"alloy": ["a9"], "anneal_c": [500]}],
            r"exclude\[0\]\.alloy: 'a9' is not one of its levels \('a1', 'a2', 'a3'\)",
        ),
        (
            [{"alloy": ["a1"], "anneal_c": [450]}],
            r"exclude\[0\]\.anneal_c: 450 is not one of its levels \(300, 400, 500\)",
        ),
        ([{"alloy": [], "anneal_c": [500]}], r"exclude\[0\]\.alloy: expected a list of distinct levels"),
        ([{"alloy": ["a1", "a1"], "anneal_c": [500]}], r"exclude\[0\]\.alloy: expected a list of distinct levels"),
        ([], r"exclude: expected a list of 1 to 8 crossings"),
        ({"alloy": ["a1"]}, r"exclude: expected a list of 1 to 8 crossings"),
        (
            [{"alloy": ["a1"], "anneal_c": [300, 400, 500]}],
            r"exclude: level 'a1' of 'alloy' is ruled out with every other level",
        ),
    ],
)
def test_a_bad_crossing_is_refused_in_one_line(exclude: Any, message: str) -> None:
    with pytest.raises(DesignError, match=message) as caught:
        load_fixture(_with(exclude))
    assert "\n" not in str(caught.value)


def test_no_repository_holds_a_path_of_an_impossible_crossing(monkeypatch: pytest.MonkeyPatch) -> None:
    specs = specs_with_design(monkeypatch, load_fixture(_with([_HOT_A1, _FAST_COLD])), 30)
    crossed = 0
    for spec in specs:
        varied = {pv.column: pv.values for pv in spec.path_variables}
        for crossing in spec.excluded:  # only conditions the repository varies, at levels it holds
            assert all(c in varied and set(levels) <= set(varied[c]) for c, levels in crossing.items())
        crossed += bool(spec.excluded)
        tree = Tree(spec)
        for number in tree.indices.tolist():
            assert not _forbidden(spec, tree.placeholder_values(number)), tree.path_of(number)
    assert crossed >= 5, "too few repositories vary two crossed conditions to test anything"


def test_a_level_no_allowed_path_holds_is_not_a_level_of_the_repository(monkeypatch: pytest.MonkeyPatch) -> None:
    """A school model ruled out in both districts a repository holds has no file; a README that listed it among the
    conditions contradicted its own tree (a reviewer's rejection). With a1 ruled out at 400 and 500 C, a repository
    that holds those two temperatures only holds no a1; every level a repository keeps is on some allowed path."""
    specs = specs_with_design(monkeypatch, load_fixture(_with([{"alloy": ["a1"], "anneal_c": [400, 500]}])), 60)
    checked = dead = 0
    for spec in specs:
        varied = {pv.column: pv.values for pv in spec.path_variables}
        if "alloy" not in varied or "anneal_c" not in varied:
            continue
        for alloy in varied["alloy"]:
            assert any(not _forbidden(spec, {"alloy": alloy, "anneal_c": a}) for a in varied["anneal_c"]), varied
        if varied["anneal_c"] == (400.0, 500.0):
            assert "a1" not in varied["alloy"], varied
            repository = Repository(spec)
            if "README.md" in repository.file_paths():
                assert "a1" not in repository.read("README.md").decode()
            dead += 1
        checked += 1
    assert checked >= 10 and dead >= 2, (checked, dead)
    ids = [s for s in range(1, 400) if repo(s).spec.excluded]
    for seed in ids[:20]:  # the shipped designs too: every held level appears in the files
        spec = repo(seed).spec
        tree = Tree(spec)
        seen: dict[str, set[Any]] = {pv.column: set() for pv in spec.path_variables}
        for number in tree.indices.tolist():
            for column, value in tree.placeholder_values(number).items():
                if column in seen:
                    seen[column].add(value)
        crossed = {c for crossing in spec.excluded for c in crossing}
        for pv in spec.path_variables:
            if pv.column in crossed and len(tree.indices) >= 4 * math.prod(len(p.values) for p in spec.path_variables):
                assert seen[pv.column] == set(pv.values), (seed, pv.column, pv.values, seen[pv.column])


def _forbidden_pair(crossings: tuple[Any, ...], combination: tuple[Any, Any]) -> bool:
    return any(combination[0] in k["alloy"] and combination[1] in k["anneal_c"] for k in crossings)


def _spec_with(excluded: tuple[dict[str, tuple[Any, ...]], ...], seed: int = 118) -> Any:
    return dataclasses.replace(repo(seed).spec, excluded=excluded)


def _two_conditions(seed: int) -> tuple[Any, Any]:
    spec = repo(seed).spec
    return spec.path_variables[0], spec.path_variables[1]


@pytest.mark.parametrize("seed", [118, 3, 28, 288, 5, 20, 113, 279])
def test_the_sample_is_uniform_over_what_the_crossings_leave(seed: int) -> None:
    """Every allowed path, and only those, can be drawn, and the file count follows the paper's law over them."""
    a, b = _two_conditions(seed)
    spec = _spec_with(({a.column: a.values[:1], b.column: b.values[1:]},), seed)
    validate(spec)
    tree, plain = Tree(spec), Tree(repo(seed).spec)
    every = np.arange(tree.size, dtype=np.int64)
    allowed = tree.excluded.mask(every)  # type: ignore[union-attr]
    assert int(allowed.sum()) == tree.excluded.allowed_count  # type: ignore[union-attr]
    assert np.array_equal(tree.excluded.allowed_points(), np.flatnonzero(allowed))  # type: ignore[union-attr]
    assert allowed[tree.indices].all()
    assert np.unique(tree.indices).size == tree.n_files
    assert 0 < tree.n_files <= min(plain.n_files, int(allowed.sum()))


@pytest.mark.parametrize("dense", [True, False])
def test_both_ways_of_sampling_draw_every_allowed_point_alike(dense: bool) -> None:
    """Over many draws each allowed point is taken about equally often (the dense way lists the allowed points, the
    sparse way rejects excluded draws from the whole product)."""
    from generators.paths import _Exclusions
    from generators.rng import root_stream

    a, b = _two_conditions(118)
    spec = _spec_with(({a.column: a.values[:1], b.column: b.values[:1]},))
    exclusions = _Exclusions(spec, spec.template.placeholders, Tree(spec).radices)
    size = math.prod(Tree(spec).radices)
    n = exclusions.allowed_count // 2 if dense else max(1, exclusions.allowed_count // 50)
    counts = np.zeros(size, dtype=np.int64)
    for k in range(400):
        drawn = exclusions.sample(root_stream(k, "", "uniformity"), size, n)
        assert drawn.size == n and np.unique(drawn).size == n
        counts[drawn] += 1
    allowed = exclusions.mask(np.arange(size, dtype=np.int64))
    assert counts[~allowed].sum() == 0
    expected = 400 * n / exclusions.allowed_count
    assert abs(counts[allowed].mean() - expected) < 1e-9
    assert counts[allowed].std() < 0.5 * expected + 3 * math.sqrt(expected)


def test_the_readme_names_what_cannot_occur() -> None:
    a, b = _two_conditions(118)
    spec = _spec_with(({a.column: a.values[:2], b.column: b.values[:1]},))
    readme = Repository(spec).readme.decode()
    shown = [v if isinstance(v, str) else (str(int(v)) if float(v).is_integer() else repr(v)) for v in a.values[:2]]
    heading = "Some combinations of conditions are not in this study (they cannot be made, or were not run)"
    assert heading + ", and no file holds them:" in readme
    assert "cannot occur" not in readme  # a design's exclusions are not all impossible
    assert f"- `{a.column}` `{shown[0]}` or `{shown[1]}` with `{b.column}` " in readme
    assert "cannot occur" not in repo(118).readme.decode()


def test_the_spec_file_keeps_the_crossings_and_refuses_bad_ones() -> None:
    a, b = _two_conditions(118)
    spec = _spec_with(({a.column: a.values[:1], b.column: b.values[:1]},))
    text = spec.to_json()
    assert '"excluded"' in text and from_json(text) == spec
    assert '"excluded"' not in repo(118).spec.to_json()  # no crossing: the spec file is what it was
    data = json.loads(text)
    bad = {
        "a crossing of one condition": [{a.column: list(a.values[:1])}],
        "an unknown condition": [{a.column: list(a.values[:1]), "grain": ["x"]}],
        "an unknown level": [
            {a.column: ["nope" if isinstance(a.values[0], str) else 123456.0], b.column: list(b.values[:1])}
        ],
        "every path ruled out": [{a.column: list(a.values), b.column: list(b.values)}],
        "not an object": ["x"],
    }
    for what, excluded in bad.items():
        with pytest.raises(SpecError, match=r"^excluded") as caught:
            from_json(json.dumps(data | {"excluded": excluded}))
        assert "\n" not in str(caught.value), what


def test_crossings_that_would_leave_no_path_are_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two crossings that together rule out every combination of the levels a repository drew: the builder keeps
    the first, so the tree is never empty (the design's check that every level stays possible makes it rare)."""
    crossings = ({"alloy": ("a1",), "anneal_c": (300.0, 400.0)}, {"alloy": ("a2", "a3"), "anneal_c": (300.0, 400.0)})
    design = dataclasses.replace(load_fixture(fixture_file()), excluded=crossings)  # past the design's check
    pvs = tuple(
        dataclasses.replace(f, values=v)
        for f, v in zip(design.factors[:2], [("a1", "a2"), (300.0, 400.0)], strict=True)
    )
    kept = crossings_within(design.excluded, pvs)
    assert kept == ({"alloy": ("a1",), "anneal_c": (300.0, 400.0)},)
    allowed = [c for c in itertools.product(*(pv.values for pv in pvs)) if not _forbidden_pair(kept, c)]
    assert allowed == [("a2", 300.0), ("a2", 400.0)]


def test_a_model_draft_keeps_the_crossings_of_the_conditions_it_drafts(monkeypatch: pytest.MonkeyPatch) -> None:
    base = next(s for s in specs_with_design(monkeypatch, load_fixture(_with([_HOT_A1, _FAST_COLD])), 30) if s.excluded)
    data = draft_of(base)
    assert assemble(base, json.dumps(data)).excluded == base.excluded
    crossed = next(iter(base.excluded[0]))
    drafted = next(v for v in data["path_variables"] if v["column"] == crossed)
    drafted["column"] = "renamed_condition"  # the model names the condition otherwise: no crossing of it is left
    for component in data["template"]["components"]:
        component[:] = ["renamed_condition" if p == crossed else p for p in component]
    for variable in data["variables"]:
        if variable.get("expression"):
            variable["expression"] = variable["expression"].replace(crossed, "renamed_condition")
    kept = assemble(base, json.dumps(data)).excluded
    assert all(crossed not in crossing for crossing in kept)


def test_a_model_draft_of_a_level_no_allowed_path_holds_is_refused_for_repair(monkeypatch: pytest.MonkeyPatch) -> None:
    """The procedural builder's rule holds for a drafted spec too: with a1 ruled out at 400 and 500 C, a model that
    drafts those two temperatures with alloys a1 and a2 drafts a level with no file, which its README and formulas
    would name. The draft is refused in one line that names the level (the model's repair turn), and the draft
    without it is accepted with no path of a1."""
    specs = specs_with_design(monkeypatch, load_fixture(_with([{"alloy": ["a1"], "anneal_c": [400, 500]}])), 60)
    base = next(s for s in specs if s.excluded)
    data = draft_of(base)
    levels = {pv["column"]: pv for pv in data["path_variables"]}
    assert {"alloy", "anneal_c"} <= set(levels), levels
    levels["anneal_c"]["values"] = [400.0, 500.0]
    levels["alloy"]["values"] = ["a1", "a2"]
    with pytest.raises(SpecError, match=r"^path_variables: alloy level\(s\) a1 have no allowed path") as refused:
        assemble(base, json.dumps(data))
    assert "\n" not in str(refused.value)
    levels["anneal_c"]["values"] = [300.0, 400.0, 500.0]  # the repair: a temperature where a1 may be annealed
    spec = assemble(base, json.dumps(data))
    assert spec.path_variable("alloy").values == ("a1", "a2")
    tree = Tree(spec)
    for number in tree.indices.tolist():
        assert not _forbidden(spec, tree.placeholder_values(number)), tree.path_of(number)
