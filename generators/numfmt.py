"""Whole-array ``%.{p}g`` formatting of doubles, byte-identical to Python's own ``"%.6g" % x``.

Python writes each value with a correctly rounded decimal conversion (round half to even on the exact
binary value), one call per value. Here the ``p`` significant digits of every value come from one correctly
rounded multiplication or division by an exact power of ten, and the characters are written into a byte
matrix column by column. Where float arithmetic cannot decide the rounding for certain (the scaled value
lies within its error bound of a half, the power of ten is not exact, the value is not finite, or ``p`` is
too large for the digits to be exact in a double), that value alone is written by Python itself, so the
text is always exactly Python's.

The value the text denotes (``float(text)``) is ``mantissa / 10**k`` with both exact, which one correctly
rounded division gives (Clinger's fast path of every ``strtod``): no text needs parsing back.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

# 10**k is exact in a double for 0 <= k <= 22; scaling by one exact power is a single rounding.
_EXACT_POWER = 22
# Above 12 digits the scaled value's rounding error (relative 2**-53) is no longer far below a half-unit.
MAX_VECTOR_DIGITS = 12
# Relative error bound of one correctly rounded operation, with a wide margin.
_REL_ERROR = 4.0 * 2.0**-53
_DIGITS = np.frombuffer(b"0123456789", dtype=np.uint8)
_DOT, _MINUS, _PLUS, _E, _ZERO = (ord(c) for c in ".-+e0")


@dataclass(frozen=True)
class Decimals:
    """Every value as ``sign * mantissa * 10**(exponent - kept + 1)``, trailing zeros stripped."""

    negative: BoolArray
    mantissa: IntArray  # the significant digits without trailing zeros; 0 for zero
    kept: IntArray  # how many digits ``mantissa`` has (1 for zero)
    exponent: IntArray  # decimal exponent of the leading digit
    decided: BoolArray  # False where only Python's own conversion is exact (see the module docstring)


def format_g(values: FloatArray, digits: int) -> list[str]:
    """``[("%.{digits}g" % v) for v in values]``, computed on whole arrays."""
    return round_g(values, digits)[0]


def round_g(values: FloatArray, digits: int) -> tuple[list[str], FloatArray]:
    """The ``%.{digits}g`` text of every value and the doubles those texts denote (``float(text)``)."""
    flat = np.ascontiguousarray(values, dtype=np.float64).ravel()
    if not 1 <= digits <= MAX_VECTOR_DIGITS or flat.size < 16:
        spelled = list(map(f"%.{digits}g".__mod__, flat.tolist()))
        return spelled, np.array(spelled, dtype=np.float64).reshape(flat.shape)
    dec = decimals(flat, digits)
    text: list[str] = _assemble(dec, digits).tolist()
    shift = dec.kept - 1 - dec.exponent  # value = mantissa / 10**shift
    exact = dec.decided & (np.abs(shift) <= _EXACT_POWER)
    power = 10.0 ** np.clip(np.abs(shift), 0, _EXACT_POWER)
    magnitude = np.where(shift >= 0, dec.mantissa / power, dec.mantissa * power)
    parsed = np.where(dec.negative, -magnitude, magnitude)
    if not dec.decided.all():
        spell = f"%.{digits}g".__mod__
        for i in np.flatnonzero(~dec.decided).tolist():
            text[i] = spell(float(flat[i]))
    rest = np.flatnonzero(~exact)
    if rest.size:
        parsed[rest] = np.array([text[i] for i in rest.tolist()], dtype=np.float64)
    return text, parsed


def text_lengths(values: FloatArray, digits: int) -> IntArray:
    """``len("%.{digits}g" % v)`` for every value, without writing any text where arithmetic decides it."""
    flat = np.ascontiguousarray(values, dtype=np.float64).ravel()
    if not 1 <= digits <= MAX_VECTOR_DIGITS or flat.size < 16:
        return np.array([len(t) for t in format_g(flat, digits)], dtype=np.int64)
    dec = decimals(flat, digits)
    lengths = _layout(dec, digits)[0]
    rest = np.flatnonzero(~dec.decided)
    if rest.size:
        spell = f"%.{digits}g".__mod__
        lengths[rest] = [len(spell(v)) for v in flat[rest].tolist()]
    return lengths


def decimals(values: FloatArray, p: int) -> Decimals:
    n = values.size
    magnitude = np.abs(values)
    finite = np.isfinite(values)
    zero = magnitude == 0.0
    nonzero = finite & ~zero
    safe = np.where(nonzero, magnitude, 1.0)
    exponent = np.floor(np.log10(safe)).astype(np.int64)
    mantissa = np.zeros(n, dtype=np.int64)
    ok = nonzero.copy()
    low, high = 10 ** (p - 1), 10**p
    # log10 may be one off next to a power of ten: rescale until the digits are p long.
    pending = nonzero.copy()
    for _ in range(3):
        idx = np.flatnonzero(pending)
        if idx.size == 0:
            break
        m, good = _scaled_digits(safe[idx], p - 1 - exponent[idx])
        too_big, too_small = m >= high, m < low
        exponent[idx[too_big & good]] += 1
        exponent[idx[too_small & good]] -= 1
        settled = ~too_big & ~too_small
        mantissa[idx[settled]] = m[settled]
        ok[idx[~good]] = False
        pending[idx[settled | ~good]] = False
    ok &= ~pending
    kept = np.full(n, p, dtype=np.int64)
    for _ in range(p - 1):  # strip trailing zeros, as %g does
        zero_end = (mantissa % 10 == 0) & (kept > 1)
        if not zero_end.any():
            break
        mantissa = np.where(zero_end, mantissa // 10, mantissa)
        kept -= zero_end
    kept[zero] = 1
    exponent[zero] = 0
    return Decimals(np.signbit(values), mantissa, kept, exponent, ok | (zero & finite))


def _scaled_digits(magnitude: FloatArray, shift: IntArray) -> tuple[IntArray, BoolArray]:
    """round(magnitude * 10**shift) to even, and whether float arithmetic decided that rounding exactly."""
    exact_power = np.abs(shift) <= _EXACT_POWER
    power = 10.0 ** np.clip(np.abs(shift), 0, _EXACT_POWER)
    with np.errstate(over="ignore", invalid="ignore"):  # overflowing products are never "good"
        scaled = np.where(shift >= 0, magnitude * power, magnitude / power)
    distance = np.abs(scaled - np.floor(scaled) - 0.5)
    good = exact_power & (distance > scaled * _REL_ERROR) & (scaled < 2.0**53)
    return np.where(good, np.rint(scaled), 0.0).astype(np.int64), good


def _layout(dec: Decimals, p: int) -> tuple[IntArray, BoolArray, IntArray, IntArray]:
    """Per value: text length, fixed notation or not, leading characters before the digits, exponent start."""
    x, kept = dec.exponent, dec.kept
    fixed = (x >= -4) & (x < p)
    sign = dec.negative.astype(np.int64)
    # Fixed notation, x >= 0: max(kept, x + 1) digits, a point when digits remain after the units digit.
    # Fixed notation, x < 0: "0." then -x - 1 zeros then the digits.
    # Exponent notation: one digit, the point and the other digits if any, "e", sign, 2 or 3 digits.
    exp_digits = np.where(np.abs(x) >= 100, 3, 2)
    lead = np.where(fixed & (x < 0), 1 - x, 0)
    body = np.where(
        fixed,
        np.where(x >= 0, np.maximum(kept, x + 1) + (kept > x + 1), lead + kept),
        kept + (kept > 1) + 2 + exp_digits,
    )
    exp_start = sign + kept + (kept > 1)
    return sign + body, fixed, lead, exp_start


def _assemble(dec: Decimals, p: int) -> npt.NDArray[np.str_]:
    """The text of every decided value (others are left empty), as a numpy unicode array."""
    n = dec.mantissa.size
    width = p + 8
    _, fixed, lead, exp_start = _layout(dec, p)
    buf = np.zeros((n, width), dtype=np.uint8)
    rows = np.arange(n)
    x, kept = dec.exponent, dec.kept
    sign = dec.negative.astype(np.int64)
    buf[rows[dec.negative], 0] = _MINUS
    small = fixed & (x < 0)
    buf[rows[small], sign[small]] = _ZERO
    buf[rows[small], sign[small] + 1] = _DOT
    for z in range(3):  # zeros after "0." (x >= -4)
        at = small & (z < -x - 1)
        buf[rows[at], sign[at] + 2 + z] = _ZERO
    big = fixed & (x >= 0)
    for z in range(p - 1):  # zeros that pad the integer part: 1.5e5 -> 150000
        at = big & (kept + z <= x)
        buf[rows[at], sign[at] + kept[at] + z] = _ZERO
    dot_after = np.where(big, x, 0)  # the point follows this digit (exponent notation: the first)
    has_dot = np.where(big, kept > x + 1, ~fixed & (kept > 1))
    buf[rows[has_dot], sign[has_dot] + dot_after[has_dot] + 1] = _DOT
    # Write digits from the most significant: digit j (0-based from the left) of kept digits.
    mantissa = dec.mantissa.copy()
    for back in range(p):  # back = position counted from the last digit
        at = back < kept
        digit = mantissa % 10
        mantissa //= 10
        j = kept - 1 - back
        position = sign + lead + j + (has_dot & (j > dot_after))
        buf[rows[at], position[at]] = _DIGITS[digit[at]]
    sci = ~fixed & dec.decided
    if sci.any():
        e = exp_start[sci]
        r = rows[sci]
        buf[r, e] = _E
        buf[r, e + 1] = np.where(x[sci] < 0, _MINUS, _PLUS)
        magnitude = np.abs(x[sci])
        three = magnitude >= 100
        buf[r[three], e[three] + 2] = _DIGITS[magnitude[three] // 100]
        tail = e + 2 + three
        buf[r, tail] = _DIGITS[(magnitude // 10) % 10]
        buf[r, tail + 1] = _DIGITS[magnitude % 10]
    buf[~dec.decided] = 0
    return buf.view(f"S{width}").ravel().astype(f"U{width}")
