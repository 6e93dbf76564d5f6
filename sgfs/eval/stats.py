"""Intervals for proportions: Wilson score intervals and Newcombe's interval for a difference."""

from __future__ import annotations

import math

Z95 = 1.959963984540054


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """The Wilson score interval of ``successes / n`` (None for n = 0)."""
    if n == 0:
        return None
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def newcombe(s1: int, n1: int, s2: int, n2: int) -> tuple[float, float, float] | None:
    """``(p1 - p2, lower, upper)``: Newcombe's hybrid score interval (method 10) of a difference of proportions."""
    a, b = wilson(s1, n1), wilson(s2, n2)
    if a is None or b is None:
        return None
    p1, p2 = s1 / n1, s2 / n2
    d = p1 - p2
    lower = d - math.sqrt((p1 - a[0]) ** 2 + (b[1] - p2) ** 2)
    upper = d + math.sqrt((a[1] - p1) ** 2 + (p2 - b[0]) ** 2)
    return d, lower, upper
