"""A design's strength for a numeric cause (generator version 11): a parent written 0.2 moves the outcome a
tenth as much as one written 2, in the same direction; a campaign ad moves vote intention a little (issue 24)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from generators.designs import DesignError
from tests.generators.design_fixture import fixture_file, load_fixture, specs_with_design


def _with_anneal(strength: Any) -> dict[str, Any]:
    data = fixture_file()
    outcome = next(o for o in data["designs"][0]["outcomes"] if o["column"] == "yield_mpa")
    outcome["parents"] = {"alloy": 0, "anneal_c": strength}
    return data


def test_a_strength_keeps_its_direction_and_is_parsed() -> None:
    weak = next(o for o in load_fixture(_with_anneal(-0.2)).outcomes if o.column == "yield_mpa")
    assert dict(weak.parents)["anneal_c"] == -1 and weak.strength("anneal_c") == pytest.approx(0.2)
    plain = next(o for o in load_fixture(_with_anneal(-1)).outcomes if o.column == "yield_mpa")
    assert dict(plain.parents)["anneal_c"] == -1 and plain.strength("anneal_c") == 1.0


@pytest.mark.parametrize("strength", [0.05, -3.5, 4, "strong", True])
def test_a_strength_out_of_range_is_refused_in_one_line(strength: Any) -> None:
    with pytest.raises(DesignError, match=r"parents\.anneal_c: expected a direction 1 or -1") as e:
        load_fixture(_with_anneal(strength))
    assert "\n" not in str(e.value)


def _anneal_coefficients(monkeypatch: pytest.MonkeyPatch, strength: float) -> list[float]:
    found = []
    for spec in specs_with_design(monkeypatch, load_fixture(_with_anneal(strength)), 4):
        expression = spec.variable("yield_mpa").expression or ""
        term = re.search(r" ([-+]) ([0-9.]+(?:e-?[0-9]+)?)\*(\S*anneal_c\S*)", expression)
        assert term is not None, expression
        found.append(float(term.group(2)) * (1 if term.group(1) == "+" else -1))
    return found


def test_a_strength_scales_the_term_and_keeps_its_sign(monkeypatch: pytest.MonkeyPatch) -> None:
    weak, strong = _anneal_coefficients(monkeypatch, -0.2), _anneal_coefficients(monkeypatch, -2)
    for a, b in zip(weak, strong, strict=True):
        assert a * b > 0 and b / a == pytest.approx(10, rel=2e-3)
