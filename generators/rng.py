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
from collections.abc import Sequence
from functools import lru_cache
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
_SHIFT11, _SHIFT27, _SHIFT30, _SHIFT31 = np.uint64(11), np.uint64(27), np.uint64(30), np.uint64(31)
_KEY_HASH = hashlib.blake2b(digest_size=8, person=b"sgfs-rng")
# A discrete table is cut where the remaining tail mass is far below one double's resolution.
_TABLE_SDS = 14.0


def derive_key(*parts: int | str) -> int:
    """A 64-bit key from integers and strings, stable across processes and machines."""
    digest = _KEY_HASH.copy()  # cheaper than a new hash object; one update of all parts hashes the same bytes
    encoded: list[bytes] = []
    for part in parts:
        if not isinstance(part, int | str):
            raise TypeError(f"key parts must be int or str, not {type(part).__name__}")
        tag = b"i" if isinstance(part, int) else b"s"
        encoded.append(tag + str(part).encode("utf-8") + b"\x1f")
    digest.update(b"".join(encoded))
    return int.from_bytes(digest.digest(), "little")


# Up to this many uniforms are drawn with Python integers (``random``), which give the same doubles.
_SCALAR_DRAWS = 4
# ``(i + 1) * _GOLDEN`` for i < len: counter ``start + i + 1`` times the constant is this plus ``start * _GOLDEN``
# (mod 2**64), so a draw needs one addition instead of an ``arange`` and a multiplication.
_counter_steps: npt.NDArray[np.uint64] = np.arange(1, 1025, dtype=np.uint64) * _GOLDEN


def _steps(n: int) -> npt.NDArray[np.uint64]:
    global _counter_steps
    if n > _counter_steps.size:
        size = 1 << (n - 1).bit_length()
        _counter_steps = np.arange(1, size + 1, dtype=np.uint64) * _GOLDEN
    return _counter_steps[:n]


def _splitmix(start: int, n: int, key: int) -> npt.NDArray[np.uint64]:
    """SplitMix64 of the counters ``start + 1 … start + n`` under ``key``."""
    return _mix(_steps(n) + np.uint64((start * _GOLDEN_INT + key) & _MASK))


def _mix(z: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """SplitMix64's finaliser of ``counter * golden + key``, in place."""
    shifted = np.empty_like(z)
    np.right_shift(z, _SHIFT30, out=shifted)
    z ^= shifted
    z *= _MIX1
    np.right_shift(z, _SHIFT27, out=shifted)
    z ^= shifted
    z *= _MIX2
    np.right_shift(z, _SHIFT31, out=shifted)
    z ^= shifted
    return z


def prefetch_uniforms(streams: Sequence[Stream], counts: Sequence[int]) -> None:
    """Compute the next ``counts[i]`` uniforms of every fresh stream ``streams[i]`` in one pass over all of them.

    A draw is a function of the stream's key and counter only, so computing it ahead, for many streams at
    once, gives the very doubles ``uniform`` would: it only saves numpy's per-call overhead. Streams that
    already drew, and zero counts, are left alone; draws past a stream's prefetched ones are computed as usual.
    """
    chosen = [(s, c) for s, c in zip(streams, counts, strict=True) if c > 0 and s._counter == 0]
    if not chosen:
        return
    sizes = [c for _, c in chosen]
    steps = np.concatenate([_steps(c) for c in sizes])
    keys = np.repeat(np.array([s.key for s, _ in chosen], dtype=np.uint64), sizes)
    doubles = _uniforms_of(_mix(steps + keys))
    start = 0
    for stream, count in chosen:
        stream._uniforms = doubles[start : start + count]
        start += count


def _uniforms_of(bits: npt.NDArray[np.uint64]) -> FloatArray:
    """The top 53 bits as a double in (0, 1): ``((bits >> 11) + 0.5) / 2**53``; ``bits`` is overwritten."""
    bits >>= _SHIFT11
    doubles = bits.astype(np.float64)
    doubles += 0.5
    doubles /= _TWO_POW_53
    return doubles


class Stream:
    """An independent, reproducible stream of random numbers named by its key parts."""

    __slots__ = ("_counter", "_uniforms", "key")

    def __init__(self, *parts: int | str) -> None:
        self.key = derive_key(*parts)
        self._counter = 0
        # uniform() of counters 1 … len, computed ahead by ``prefetch_uniforms`` (values depend on the counter only).
        self._uniforms: FloatArray | None = None

    def child(self, *parts: int | str) -> Stream:
        """A stream independent of this one and of its other children."""
        return Stream(self.key, *parts)

    def children(self, names: Sequence[str]) -> list[Stream]:
        """``[self.child(name) for name in names]``, hashing the shared key prefix's bytes once."""
        prefix = b"i" + str(self.key).encode("utf-8") + b"\x1f"
        streams = []
        for name in names:
            digest = _KEY_HASH.copy()
            digest.update(prefix + b"s" + name.encode("utf-8") + b"\x1f")
            streams.append(Stream._keyed(int.from_bytes(digest.digest(), "little")))
        return streams

    @classmethod
    def _keyed(cls, key: int) -> Stream:
        """A fresh stream whose key is already derived."""
        stream = cls.__new__(cls)
        stream.key = key
        stream._counter = 0
        stream._uniforms = None
        return stream

    # -- raw bits and uniforms -------------------------------------------------------------------
    def raw(self, n: int) -> npt.NDArray[np.uint64]:
        start = self._counter
        self._counter += n
        return _splitmix(start, n, self.key)

    def uniform(self, n: int) -> FloatArray:
        """Doubles in the open interval (0, 1)."""
        start = self._counter
        ahead = self._uniforms
        if ahead is not None and start + n <= ahead.size:
            self._counter = start + n
            return ahead[start : start + n].copy()
        if n <= _SCALAR_DRAWS:  # a few draws: Python integers cost less than numpy's per-call overhead
            return np.array([self.random() for _ in range(n)], dtype=np.float64)
        return _uniforms_of(self.raw(n))

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
        # In place, the same operations in the same order as ``mean + sd * sqrt(-2 log u1) * cos(2 pi u2)``.
        radius = np.log(u[:n])
        radius *= -2.0
        np.sqrt(radius, out=radius)
        radius *= sd
        angle = u[n:]
        angle *= 2.0 * math.pi
        np.cos(angle, out=angle)
        radius *= angle
        radius += mean
        return radius

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
        with np.errstate(invalid="ignore", divide="ignore"):
            while pending.size:
                m = pending.size
                x = self.normal(0.0, 1.0, m)
                u = self.uniform(m)
                v = (1.0 + c * x) ** 3
                positive = v > 0
                log_v = np.log(np.where(positive, v, 1.0))
                ok = positive & (np.log(u) < 0.5 * x * x + d - d * v + d * log_v)
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
        return self.from_cdf(np.cumsum(probs, dtype=np.float64), n)

    def bernoulli(self, p: float, n: int) -> IntArray:
        return (self.uniform(n) < p).astype(np.int64)

    def geometric(self, p: float, n: int) -> IntArray:
        """Trials up to and including the first success: support 1, 2, 3, …"""
        if p >= 1.0:
            return np.ones(n, dtype=np.int64)
        k = np.ceil(np.log(self.uniform(n)) / math.log1p(-p))
        return np.maximum(k, 1).astype(np.int64)

    def poisson(self, lam: float, n: int) -> IntArray:
        return self.from_cdf(_poisson_table(lam), n)

    def binomial(self, trials: int, p: float, n: int) -> IntArray:
        return self.from_cdf(_binomial_table(trials, p), n)

    def negative_binomial(self, r: int, p: float, n: int) -> IntArray:
        """Failures before the r-th success: support 0, 1, 2, …"""
        return self.from_cdf(_negative_binomial_table(r, p), n)

    def from_cdf(self, cdf: FloatArray, n: int) -> IntArray:
        """Indices drawn with the weights whose running sums are ``cdf`` (``categorical`` of the weights)."""
        drawn = np.searchsorted(cdf, self.uniform(n) * cdf[-1], side="right")
        idx: IntArray = np.minimum(drawn, len(cdf) - 1).astype(np.int64)
        return idx


def root_stream(seed: int, universe: str, *parts: int | str) -> Stream:
    """A root stream of repository ``seed``: every stream of a repository and of its questions descends from one.

    In the open universe (``universe`` empty) it is exactly ``Stream(seed, *parts)``, so repositories are those
    anyone can compute. In a keyed universe (``universe``: the seed's salt, ``generators.keys``) the salt is part
    of the name, so the streams, and everything drawn from them, cannot be computed without the salt."""
    if not universe:
        return Stream(seed, *parts)
    return Stream("universe", universe, seed, *parts)


def _cdf_from_log_ratios(log_p0: float, log_ratios: FloatArray) -> FloatArray:
    """Cumulative table from log P(0) and log P(k+1)/P(k), computed in log space against underflow."""
    log_pmf = np.concatenate(([log_p0], log_p0 + np.cumsum(log_ratios)))
    pmf = np.exp(log_pmf - log_pmf.max())
    cdf = np.cumsum(pmf)
    cdf.flags.writeable = False  # tables are cached and shared
    return cdf


def _support_end(mean: float, var: float) -> int:
    return math.ceil(mean + _TABLE_SDS * math.sqrt(var) + 20)


@lru_cache(maxsize=1024, typed=True)
def _poisson_table(lam: float) -> FloatArray:
    k = np.arange(_support_end(lam, lam), dtype=np.float64)
    return _cdf_from_log_ratios(-lam, np.log(lam / (k + 1.0)))


@lru_cache(maxsize=1024, typed=True)
def _binomial_table(trials: int, p: float) -> FloatArray:
    if p <= 0.0:
        return np.ones(1)
    if p >= 1.0:
        return np.concatenate((np.zeros(trials), [1.0]))
    k = np.arange(trials, dtype=np.float64)
    log_ratios = np.log((trials - k) / (k + 1.0)) + math.log(p) - math.log1p(-p)
    return _cdf_from_log_ratios(trials * math.log1p(-p), log_ratios)


@lru_cache(maxsize=1024, typed=True)
def _negative_binomial_table(r: int, p: float) -> FloatArray:
    mean = r * (1.0 - p) / p
    var = mean / p
    k = np.arange(_support_end(mean, var), dtype=np.float64)
    log_ratios = np.log((k + r) / (k + 1.0)) + math.log1p(-p)
    return _cdf_from_log_ratios(r * math.log(p), log_ratios)
