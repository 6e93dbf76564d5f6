"""Study designs per subdomain (generators/data/designs): complete, sane, coherent, and what the builder draws."""

from __future__ import annotations

import copy
import itertools
import json
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

from generators.builders.procedural import build_spec
from generators.data_files import taxonomy
from generators.designs import DesignError, check_files, designs, load_file, parse_unit, shared_columns
from tests.generators.design_fixture import fixture_file, load_fixture, specs_with_design

DESIGN_DIR = Path(str(resources.files("generators").joinpath("data", "designs")))


def test_every_subdomain_has_a_design() -> None:
    everything = designs()
    expected = {(f.name, s.name) for f in taxonomy() for d in f.domains for s in d.subdomains}
    assert set(everything) == expected
    assert len(everything) >= 780


def test_design_files_pass_the_checker() -> None:
    files = sorted(p for p in DESIGN_DIR.glob("*.json") if p.name != "shared.json")
    assert len(files) == len(taxonomy())
    assert check_files(files) == []


def test_designs_are_sane() -> None:
    for design in designs().values():
        assert len(design.factors) >= 3 and len(design.measures) >= 3 and len(design.outcomes) >= 2, design.subdomain
        assert sum(not o.derived for o in design.outcomes) >= 2, design.subdomain
        for outcome in design.outcomes:
            assert outcome.parents, outcome.column
            if outcome.derived:  # a definition: its values follow from its inputs
                continue
            low, high = outcome.center - outcome.spread, outcome.center + outcome.spread
            if outcome.scale == "log":  # center is a geometric mean, spread in decades
                assert outcome.center > 0 and 0 < outcome.spread <= 3, outcome.column
                low, high = outcome.center / 10**outcome.spread, outcome.center * 10**outcome.spread
            if outcome.clip:  # a hurdle: the typical range may pass the bound, whose share of records sits on it
                continue
            assert outcome.low is None or outcome.low <= low, outcome.column
            assert outcome.high is None or high <= outcome.high, outcome.column
        for factor in design.factors:
            assert len(set(factor.values)) == len(factor.values) >= 3


def test_no_design_borrows_another_domains_variables() -> None:
    """Within a field, a column belongs to one domain unless it is declared shared (temperature, age...)."""
    by_field: dict[str, dict[str, set[str]]] = {}
    for field in taxonomy():
        for domain in field.domains:
            columns = {c for s in domain.subdomains for c in designs()[(field.name, s.name)].columns}
            by_field.setdefault(field.name, {})[domain.name] = columns - shared_columns()
    for field_name, domains in by_field.items():
        for (a, ca), (b, cb) in itertools.combinations(domains.items(), 2):
            assert not ca & cb, (field_name, a, b, sorted(ca & cb))


@pytest.mark.parametrize("unit", ["", "mg/L", "m^2", "s^-1", "W/m^2", "umol/m^2/s", "kg·m^-3", "%", "°C"])
def test_units_parse(unit: str) -> None:
    parse_unit(unit)


@pytest.mark.parametrize("unit", ["furlongs", "m^x", "mg//L", "m^0", "kg m"])
def test_bad_units_are_refused(unit: str) -> None:
    with pytest.raises(DesignError):
        parse_unit(unit)


def _response(data: dict[str, object]) -> dict[str, object]:
    """The first outcome of the first design that is a response (not a formula)."""
    outcomes = data["designs"][0]["outcomes"]  # type: ignore[index]
    return next(o for o in outcomes if "formula" not in o)  # type: ignore[no-any-return]


def _categorical(data: dict[str, object]) -> dict[str, object]:
    measures = data["designs"][0]["measures"]  # type: ignore[index]
    return next(m for m in measures if m["type"] == "categorical")  # type: ignore[no-any-return]


def _field_file(slug: str) -> dict[str, object]:
    return json.loads((DESIGN_DIR / f"{slug}.json").read_text("utf-8"))


def _load(data: dict[str, object], slug: str) -> None:
    field = next(f for f in taxonomy() if f.slug == slug)
    load_file(json.dumps(data), field, f"{slug}.json")


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d["designs"].pop(), "no design for subdomain"),
        (lambda d: _response(d).update(parents={"no_such_column": 1}), "not a factor"),
        (lambda d: _response(d).update(unit="furlongs"), "not a known unit symbol"),
        (lambda d: _response(d).update(spread=-1), "spread: must be positive"),
        (lambda d: d["designs"][0]["factors"][0].update(values=["a b", "c", "d"]), "not a path token"),
        (lambda d: d["designs"][0]["factors"][0].update(values=[3, 2, 1]), "increasing order"),
        (lambda d: d["designs"][0].update(colour="red"), "unknown field"),
        (lambda d: d.update(field="Alchemy"), "is not"),
        (lambda d: _categorical(d).update(values=["1", "2", "3"], probs=[0.5, 0.3, 0.2]), "reads as a number"),
    ],
)
def test_bad_designs_are_refused_with_the_field_named(mutate: object, message: str) -> None:
    data = copy.deepcopy(_field_file("engineering-chemical-materials"))
    mutate(data)  # type: ignore[operator]
    with pytest.raises(DesignError, match=message):
        _load(data, "engineering-chemical-materials")


def test_a_key_written_twice_is_refused() -> None:
    """JSON keeps the last of two equal keys: a design's first ``parents`` would vanish without a word."""
    field = next(f for f in taxonomy() if f.slug == "engineering-chemical-materials")
    text = (DESIGN_DIR / "engineering-chemical-materials.json").read_text("utf-8")
    doubled = text.replace('"parents": {', '"parents": {"x": 1}, "parents": {', 1)
    assert doubled != text
    with pytest.raises(
        DesignError, match=r"engineering-chemical-materials\.json: not valid JSON: key 'parents' appears twice"
    ):
        load_file(doubled, field, "engineering-chemical-materials.json")


def test_categorical_causes_have_no_direction() -> None:
    data = copy.deepcopy(_field_file("engineering-chemical-materials"))
    design = data["designs"][0]  # type: ignore[index]
    categorical = next(f["column"] for f in design["factors"] if isinstance(f["values"][0], str))
    _response(data)["parents"] = {categorical: 1}
    with pytest.raises(DesignError, match="needs direction 0"):
        _load(data, "engineering-chemical-materials")


def test_a_normal_law_that_goes_negative_must_say_so() -> None:
    data = copy.deepcopy(_field_file("engineering-chemical-materials"))
    design = data["designs"][0]  # type: ignore[index]
    measure = next(m for m in design["measures"] if m.get("dist") == "normal")
    measure["params"] = {"mean": 1.0, "sd": 1.0}
    measure.pop("signed", None)
    with pytest.raises(DesignError, match="negative values"):
        _load(data, "engineering-chemical-materials")
    measure["signed"] = True
    _load(data, "engineering-chemical-materials")


SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def _script(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPTS / name), *args], capture_output=True, text=True, check=False)


def test_check_designs_script(tmp_path: Path) -> None:
    ok = _script("check_designs.py")
    assert ok.returncode == 0 and ok.stdout == "" and "0 problem(s)" in ok.stderr
    bad = tmp_path / "engineering-chemical-materials.json"
    data = _field_file("engineering-chemical-materials")
    _response(data)["unit"] = "furlongs"
    bad.write_text(json.dumps(data))
    result = _script("check_designs.py", str(bad), str(tmp_path / "missing.json"))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert len(result.stdout.splitlines()) == 2 and "furlongs" in result.stdout


def test_measure_designs_script_meets_the_issue_thresholds() -> None:
    """Same-subdomain repositories share at least three times what other-domain ones share, which is <= 0.08."""
    result = _script("measure_designs.py", "--seeds", "1-400", "--check")
    assert result.returncode == 0, result.stderr
    assert "same subdomain" in result.stdout and "other domain" in result.stdout
    bad = _script("measure_designs.py", "--seeds", "5-1")
    assert bad.returncode == 2 and "end is below the start" in bad.stderr and "Traceback" not in bad.stderr


def test_profile_designs_script_shows_what_a_design_gives() -> None:
    """A designer's check: per column the range over files against the design's center ± spread, the scatter within
    a file, each outcome's mean per factor level and when records were taken; bad input is one line and exit 2."""
    design = designs()[("Engineering - Chemical and Materials", "Heterogeneous Catalysis")]
    result = _script(
        "profile_designs.py", "engineering-chemical-materials", "--subdomain", design.subdomain, "--repos", "1"
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"## {design.subdomain} (seeds ")
    first = design.outcomes[0]
    row = next(line for line in lines if line.startswith(f"  {first.column}: p1 "))
    assert " p50 " in row and " p99 " in row and "sd within a file" in row and "[outcome " in row
    assert any(line.startswith(f"  mean {first.column} by ") for line in lines)
    assert design.timestamp is not None  # when the records were taken: months, hours, weekend share, a file's span
    when = next(line for line in lines if line.startswith("  times: months ["))
    assert " hours " in when and " weekend " in when and "a file spans " in when
    for args, message in [
        (("no-such-field",), "no field 'no-such-field'"),
        (("engineering-chemical-materials", "--subdomain", "Cooking"), "has no subdomain 'Cooking'"),
        (("engineering-chemical-materials", "--repos", "0"), "--repos must be between 1 and 20"),
    ]:
        bad = _script("profile_designs.py", *args)
        assert bad.returncode == 2 and message in bad.stderr and "Traceback" not in bad.stderr


def test_review_sample_script_shows_what_an_agent_sees(tmp_path: Path) -> None:
    """The reviewer's packets: the drawn seeds, each with its subdomain, tree, README and the head of two files."""
    out = tmp_path / "review"
    result = _script(
        "review_sample.py", "--seeds", "1-40", "--count", "3", "--draw", "7", "--rows", "2", "--out", str(out)
    )
    assert result.returncode == 0, result.stderr
    seeds = [int(s) for s in (out / "seeds.txt").read_text().split()]
    assert len(seeds) == 3 and seeds == sorted(seeds) and all(1 <= s <= 40 for s in seeds)
    again = _script("review_sample.py", "--seeds", "1-40", "--count", "3", "--draw", "7", "--rows", "2")
    assert again.returncode == 0 and again.stdout == "".join((out / f"{s}.txt").read_text() + "\n" for s in seeds)
    for seed in seeds:
        text = (out / f"{seed}.txt").read_text()
        spec = build_spec(seed)
        assert text.startswith(
            f"# seed {seed}: {spec.context.field} / {spec.context.domain} / {spec.context.subdomain}"
        )
        assert "## tree (" in text and ("## README.md" in text or "## no README.md" in text)
        identifier = next(v.column for v in spec.variables if v.role == "identifier")
        assert text.count("rows; the first") in (1, 2) and identifier in text.split("rows; the first")[1]
    excluded = _script("review_sample.py", "--seeds", "1-4", "--exclude", "1-3", "--count", "1", "--rows", "1")
    assert excluded.returncode == 0 and excluded.stdout.startswith("# seed 4:")
    for args, message in [
        (("--seeds", "5-1"), "end is below the start"),
        (("--seeds", "1-3", "--count", "4"), "--count must be between 1 and 3"),
        (("--seeds", "1-3", "--rows", "0", "--count", "1"), "--rows must be at least 1"),
    ]:
        bad = _script("review_sample.py", *args)
        assert bad.returncode == 2 and message in bad.stderr and "Traceback" not in bad.stderr


def test_review_sample_shows_one_repository_of_every_design_of_a_field() -> None:
    """A designer's self-review (``--field``): the first repository of each of the field's designs, in the designs'
    order, or of one ``--subdomain``; a wrong field or subdomain is one line and exit 2."""
    field = next(f for f in taxonomy() if f.slug == "social-economics")
    ordered = [sub for name, sub in designs() if name == field.name]
    result = _script("review_sample.py", "--field", "social-economics", "--rows", "1")
    assert result.returncode == 0, result.stderr
    shown = [line.split(" / ")[-1] for line in result.stdout.splitlines() if line.startswith("# seed ")]
    assert shown == ordered
    one = _script("review_sample.py", "--field", "social-economics", "--subdomain", ordered[1], "--rows", "1")
    assert one.returncode == 0 and one.stdout.count("# seed ") == 1 and f"/ {ordered[1]}\n" in one.stdout
    for args, message in [
        (("--field", "no-such-field"), "no field 'no-such-field'"),
        (("--field", "social-economics", "--subdomain", "Cooking"), "has no subdomain 'Cooking'"),
        (("--subdomain", "Cooking"), "--subdomain needs --field"),
    ]:
        bad = _script("review_sample.py", *args)
        assert bad.returncode == 2 and message in bad.stderr and "Traceback" not in bad.stderr


def test_an_outcome_takes_up_to_six_causes_and_each_enters_its_formula(monkeypatch: pytest.MonkeyPatch) -> None:
    """A migrant stock follows distance, both populations, language and the origin's history: six causes load and
    every one moves the response; a seventh is refused in one line."""
    causes = {"yield_mpa": 1, "strain_rate": 1, "batch": 0, "width_mm": 1, "thickness_mm": -1, "anneal_c": -1}
    data = fixture_file()
    uts = next(o for o in data["designs"][0]["outcomes"] if o["column"] == "uts_mpa")
    uts["parents"] = causes
    design = load_fixture(data)
    assert [c for c, _ in next(o for o in design.outcomes if o.column == "uts_mpa").parents] == list(causes)
    held = 0
    for spec in specs_with_design(monkeypatch, design, 12):
        columns = {v.column for v in spec.variables} | {pv.column for pv in spec.path_variables}
        formula = next((v.expression for v in spec.variables if v.column == "uts_mpa"), None)
        if formula is None:
            continue
        for cause in causes:
            if cause in columns:
                assert cause in formula, (spec.seed, cause, formula)
        held += 1
    assert held >= 6
    uts["parents"] = causes | {"alloy": 0}
    with pytest.raises(DesignError, match=r"parents: expected an object of 1 to 6 causes") as caught:
        load_fixture(data)
    assert "\n" not in str(caught.value)
