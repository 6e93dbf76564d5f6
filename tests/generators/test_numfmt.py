"""Whole-array %g formatting is byte-identical to Python's own, and the values it denotes are float(text)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from generators import numfmt, synth
from tests.helpers import repo

GOLDEN = json.loads((Path(__file__).parent / "golden_digests.json").read_text())["digests"]


def _edge_values() -> npt.NDArray[np.float64]:
    """Zeros, powers of ten and their neighbours, rounding ties and near-ties, notation switches, extremes."""
    powers = 10.0 ** np.arange(-30, 23)
    around = np.concatenate([np.nextafter(powers, 0), powers, np.nextafter(powers, np.inf)])
    ties = np.array([d + 0.5 for d in range(0, 40)] + [0.125, 0.375, 2.675, 1.0005, 999999.5, 9999995.0, 99999.95])
    ties = np.concatenate([ties * 10.0**k for k in range(-8, 9)])
    nearby = np.concatenate([np.nextafter(ties, 0), np.nextafter(ties, np.inf)])
    switch = np.array([9.999995e-5, 9.9999949e-5, 1e-4, 0.0001000005, 999999.4, 999999.5, 999999.6, 1e6, 1e15, 1e16])
    extremes = np.array([0.0, -0.0, 5e-324, 2.2250738585072014e-308, 1e-300, 1e300, 1.7976931348623157e308])
    values = np.concatenate([around, ties, nearby, switch, extremes, np.array([np.nan, np.inf, -np.inf])])
    return np.concatenate([values, -values])


def _python(values: npt.NDArray[np.float64], digits: int) -> list[str]:
    return list(map(f"%.{digits}g".__mod__, values.tolist()))


def _check(values: npt.NDArray[np.float64], digits: int) -> None:
    expected = _python(values, digits)
    text, parsed = numfmt.round_g(values, digits)
    assert np.array_equal(np.array(text), np.array(expected))
    reference = np.array(expected, dtype=np.float64)
    same = (parsed == reference) & (np.signbit(parsed) == np.signbit(reference))
    assert bool(np.all(same | (np.isnan(parsed) & np.isnan(reference))))
    assert numfmt.text_lengths(values, digits).tolist() == [len(t) for t in expected]


@pytest.mark.parametrize("digits", [1, 2, 3, 6, 9, 12, 15])
def test_edge_cases(digits: int) -> None:
    _check(_edge_values(), digits)


def test_negative_zero_and_specials() -> None:
    assert numfmt.format_g(np.array([-0.0, 0.0] * 10), 6)[:2] == ["-0", "0"]
    assert numfmt.format_g(np.array([np.nan, np.inf, -np.inf] * 6), 6)[:3] == ["nan", "inf", "-inf"]


def test_short_arrays_take_the_scalar_path() -> None:
    assert numfmt.format_g(np.array([1234567.0, 0.5]), 6) == ["1.23457e+06", "0.5"]


@pytest.mark.slow
def test_ten_million_values_match_python() -> None:
    """10^7 values over every magnitude the generator can write (clipped to +-1e15) and far beyond it."""
    rng = np.random.default_rng(20240101)
    chunk = 1_000_000
    for i in range(10):
        scale = 10.0 ** rng.integers(-40, 20, chunk)
        values = rng.standard_normal(chunk) * scale
        if i % 3 == 0:  # values the generator actually writes: bounded, cleared of -0.0
            values = np.clip(values, -1e15, 1e15) + 0.0
        if i % 3 == 1:  # short decimals: exact ties of the rounding are common
            values = np.round(rng.uniform(-1000, 1000, chunk), int(rng.integers(0, 8)))
        expected = _python(values, 6)
        assert numfmt.format_g(values, 6) == expected


def test_vectorised_synthesis_keeps_golden_digests(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every continuous column formatted by numfmt: the same bytes as the scalar path."""
    monkeypatch.setattr(synth, "VECTOR_FORMAT_MIN_ROWS", 0)
    for seed in ("1", "2", "3", "4", "5"):
        assert repo(int(seed)).digest() == GOLDEN[seed]
