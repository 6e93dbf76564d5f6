"""The one source of randomness: a counter-based SplitMix64 bit stream with our own transforms.

Why not ``numpy.random.Generator``: its transforms (normal, gamma, binomial…) may change between numpy
releases, which would silently change every repository. Here the bit stream is SplitMix64 over a counter,
written with plain uint64 array arithmetic, and every distribution is a transform of ours on top of it, so
the same key gives the same numbers on any machine and any numpy version. Keys come from BLAKE2b over the
textual parts (never ``hash()``), so they do not depend on ``PYTHONHASHSEED``.
"""

from __future__ import annotations

import hashlib
import math
from typing import TypeVar

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
T = TypeVar("T")

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_TWO_POW_53 = float(2**53)
_MASK = 2**64 - 1
_GOLDEN_INT, _MIX1_INT, _MIX2_INT = int(_GOLDEN), int(_MIX1), int(_MIX2)
# A discrete table is cut where the remaining tail mass is far below one double's resolution.
_TABLE_SDS = 14.0


def derive_key(*parts: int | str) -> int:
    """A 64-bit key from integers and strings, stable across processes and machines."""
    digest = hashlib.blake2b(digest_size=8, person=b"sgfs-rng")
    for part in parts:
        if not isinstance(part, int | str):
            raise TypeError(f"key parts must be int or str, not {type(part).__name__}")
        tag = b"i" if isinstance(part, int) else b"s"
        digest.update(tag + str(part).encode("utf-8") + b"\x1f")
    return int.from_bytes(digest.digest(), "little")


def _splitmix(counter: npt.NDArray[np.uint64], key: np.uint64) -> npt.NDArray[np.uint64]:
    z = counter * _GOLDEN + key
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


class Stream:
    """An independent, reproducible stream of random numbers named by its key parts."""

    __slots__ = ("_counter", "_key", "key")

    def __init__(self, *parts: int | str) -> None:
        self.key = derive_key(*parts)
        self._key = np.uint64(self.key)
        self._counter = 0

    def child(self, *parts: int | str) -> Stream:
        """A stream independent of this one and of its other children."""
        return Stream(self.key, *parts)

    # -- raw bits and uniforms -------------------------------------------------------------------
    def raw(self, n: int) -> npt.NDArray[np.uint64]:
        start = self._counter
        self._counter += n
        counter = np.arange(start + 1, start + n + 1, dtype=np.uint64)
        return _splitmix(counter, self._key)

    def uniform(self, n: int) -> FloatArray:
        """Doubles in the open interval (0, 1)."""
        bits = self.raw(n) >> np.uint64(11)
        return (bits.astype(np.float64) + 0.5) / _TWO_POW_53

    def uniform_range(self, low: float, high: float, n: int) -> FloatArray:
        return low + (high - low) * self.uniform(n)

    def integers(self, low: int, high: int, n: int) -> IntArray:
        """Integers in [low, high)."""
        if high <= low:
            raise ValueError(f"empty integer range [{low}, {high})")
        span = high - low
        drawn = np.floor(self.uniform(n) * span).astype(np.int64)
        return low + np.minimum(drawn, span - 1)

    # -- scalar conveniences for the spec builders ------------------------------------------------
    def random(self) -> float:
        """One uniform in (0, 1); the same number ``uniform(1)`` would give, without numpy's overhead."""
        self._counter += 1
        z = (self._counter * _GOLDEN_INT + self.key) & _MASK
        z = ((z ^ (z >> 30)) * _MIX1_INT) & _MASK
        z = ((z ^ (z >> 27)) * _MIX2_INT) & _MASK
        z ^= z >> 31
        return ((z >> 11) + 0.5) / _TWO_POW_53

    def randint(self, low: int, high: int) -> int:
        """An integer in [low, high] (both ends included); equal to ``integers(low, high + 1, 1)[0]``."""
        if high < low:
            raise ValueError(f"empty integer range [{low}, {high}]")
        span = high - low + 1
        return low + min(math.floor(self.random() * span), span - 1)

    def chance(self, p: float) -> bool:
        return self.random() < p

    def pick(self, items: list[T] | tuple[T, ...]) -> T:
        if not items:
            raise ValueError("cannot pick from an empty sequence")
        return items[self.randint(0, len(items) - 1)]

    def pick_weighted(self, items: list[T] | tuple[T, ...], weights: list[float] | tuple[float, ...]) -> T:
        draw = self.random() * math.fsum(weights)
        total = 0.0
        for item, weight in zip(items, weights, strict=True):
            total += weight
            if draw < total:
                return item
        return items[-1]

    def sample(self, items: list[T] | tuple[T, ...], k: int) -> list[T]:
        """k distinct items in a random order."""
        if k > len(items):
            raise ValueError(f"cannot sample {k} of {len(items)} items")
        order = np.argsort(self.raw(len(items)), kind="stable")[:k]
        return [items[int(i)] for i in order]

    def shuffled(self, items: list[T] | tuple[T, ...]) -> list[T]:
        return self.sample(items, len(items))

    # -- continuous transforms --------------------------------------------------------------------
    def normal(self, mean: float, sd: float, n: int) -> FloatArray:
        """Box–Muller, keeping the cosine branch only, so one draw costs two uniforms."""
        u = self.uniform(2 * n)
        radius = np.sqrt(-2.0 * np.log(u[:n]))
        return mean + sd * radius * np.cos(2.0 * math.pi * u[n:])

    def exponential(self, scale: float, n: int) -> FloatArray:
        return -scale * np.log(self.uniform(n))

    def gamma(self, shape: float, n: int) -> FloatArray:
        """Marsaglia–Tsang, rejection done on whole arrays until every slot is filled."""
        if shape <= 0:
            raise ValueError("gamma shape must be positive")
        if shape < 1.0:
            boost = self.uniform(n) ** (1.0 / shape)
            return self.gamma(shape + 1.0, n) * boost
        d = shape - 1.0 / 3.0
        c = 1.0 / math.sqrt(9.0 * d)
        out = np.empty(n, dtype=np.float64)
        pending = np.arange(n)
        while pending.size:
            m = pending.size
            x = self.normal(0.0, 1.0, m)
            u = self.uniform(m)
            v = (1.0 + c * x) ** 3
            with np.errstate(invalid="ignore", divide="ignore"):
                log_v = np.log(np.where(v > 0, v, 1.0))
            ok = (v > 0) & (np.log(u) < 0.5 * x * x + d - d * v + d * log_v)
            out[pending[ok]] = d * v[ok]
            pending = pending[~ok]
        return out

    def beta(self, a: float, b: float, n: int) -> FloatArray:
        x = self.gamma(a, n)
        y = self.gamma(b, n)
        return x / (x + y)

    # -- discrete transforms ----------------------------------------------------------------------
    def categorical(self, probs: FloatArray, n: int) -> IntArray:
        """Indices drawn with the given (not necessarily normalised) weights."""
        cdf = np.cumsum(probs, dtype=np.float64)
        draws = self.uniform(n) * cdf[-1]
        idx: IntArray = np.minimum(np.searchsorted(cdf, draws, side="right"), len(probs) - 1).astype(np.int64)
        return idx

    def bernoulli(self, p: float, n: int) -> IntArray:
        return (self.uniform(n) < p).astype(np.int64)

    def geometric(self, p: float, n: int) -> IntArray:
        """Trials up to and including the first success: support 1, 2, 3, …"""
        if p >= 1.0:
            return np.ones(n, dtype=np.int64)
        k = np.ceil(np.log(self.uniform(n)) / math.log1p(-p))
        return np.maximum(k, 1).astype(np.int64)

    def poisson(self, lam: float, n: int) -> IntArray:
        return self._from_table(_poisson_table(lam), n)

    def binomial(self, trials: int, p: float, n: int) -> IntArray:
        return self._from_table(_binomial_table(trials, p), n)

    def negative_binomial(self, r: int, p: float, n: int) -> IntArray:
        """Failures before the r-th success: support 0, 1, 2, …"""
        return self._from_table(_negative_binomial_table(r, p), n)

    def _from_table(self, cdf: FloatArray, n: int) -> IntArray:
        drawn = np.searchsorted(cdf, self.uniform(n) * cdf[-1], side="right")
        idx: IntArray = np.minimum(drawn, len(cdf) - 1).astype(np.int64)
        return idx


def _cdf_from_log_ratios(log_p0: float, log_ratios: FloatArray) -> FloatArray:
    """Cumulative table from log P(0) and log P(k+1)/P(k), computed in log space against underflow."""
    log_pmf = np.concatenate(([log_p0], log_p0 + np.cumsum(log_ratios)))
    pmf = np.exp(log_pmf - log_pmf.max())
    return np.cumsum(pmf)


def _support_end(mean: float, var: float) -> int:
    return math.ceil(mean + _TABLE_SDS * math.sqrt(var) + 20)


def _poisson_table(lam: float) -> FloatArray:
    k = np.arange(_support_end(lam, lam), dtype=np.float64)
    return _cdf_from_log_ratios(-lam, np.log(lam / (k + 1.0)))


def _binomial_table(trials: int, p: float) -> FloatArray:
    if p <= 0.0:
        return np.ones(1)
    if p >= 1.0:
        return np.concatenate((np.zeros(trials), [1.0]))
    k = np.arange(trials, dtype=np.float64)
    log_ratios = np.log((trials - k) / (k + 1.0)) + math.log(p) - math.log1p(-p)
    return _cdf_from_log_ratios(trials * math.log1p(-p), log_ratios)


def _negative_binomial_table(r: int, p: float) -> FloatArray:
    mean = r * (1.0 - p) / p
    var = mean / p
    k = np.arange(_support_end(mean, var), dtype=np.float64)
    log_ratios = np.log((k + r) / (k + 1.0)) + math.log1p(-p)
    return _cdf_from_log_ratios(r * math.log(p), log_ratios)
