"""Intervals for proportions: Wilson score intervals and Newcombe's interval for a difference; and what respects
the design of a run (items clustered by question id): cluster-robust intervals, paired comparisons with a
baseline (cluster bootstrap, McNemar's exact test) and pass@k over repeats (docs/eval.md, "Statistics")."""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import stats as sps

IntArray = npt.NDArray[np.int64]

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


# -- the design of a run: wordings and repeats of one question are not independent ----------------------------
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20231
_BOOTSTRAP_CELLS = 4_000_000  # resamples drawn at once: resamples x clusters stays below this


def wilson_p(p: float, n: float, z: float = Z95) -> tuple[float, float] | None:
    """The Wilson score interval of a proportion ``p`` observed on ``n`` (possibly fractional) observations."""
    if n <= 0:
        return None
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(max(0.0, p * (1 - p)) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def _codes(clusters: Sequence[Hashable]) -> tuple[IntArray, int]:
    """Each item's cluster as 0..G-1 (in order of first appearance), and G."""
    index: dict[Hashable, int] = {}
    codes = np.fromiter((index.setdefault(c, len(index)) for c in clusters), dtype=np.int64, count=len(clusters))
    return codes, len(index)


@dataclass(frozen=True)
class ClusteredProportion:
    """A proportion over items grouped in clusters (question ids), with its cluster-robust interval."""

    successes: int
    n: int
    clusters: int
    design_effect: float  # cluster-robust variance / the variance of n independent items, in [1, n / clusters]
    interval: tuple[float, float] | None

    @property
    def value(self) -> float | None:
        return None if self.n == 0 else self.successes / self.n

    @property
    def effective_n(self) -> float:
        return self.n / self.design_effect if self.n else 0.0


def clustered_proportion(correct: Sequence[bool], clusters: Sequence[Hashable]) -> ClusteredProportion:
    """The share of ``correct`` items with a 95 % interval that treats the items of one cluster (the wordings and
    repeats of one question) as one draw: the Wilson score interval at the effective sample size n / deff, where
    deff is the ratio of the cluster-robust (sandwich) variance of the mean, sum over clusters of
    (cluster sum - cluster size * p)^2 / n^2, to p(1 - p) / n, bounded by 1 and n / G (G clusters). With one item
    per cluster it is exactly Wilson's interval; when every item is right (or wrong) the variance ratio is
    undefined and the bound n / G is used (as if each question counted once)."""
    y = np.asarray(correct, dtype=np.float64)
    n = int(y.size)
    if n == 0:
        return ClusteredProportion(0, 0, 0, 1.0, None)
    codes, groups = _codes(clusters)
    successes = int(y.sum())
    p = successes / n
    most = n / groups
    if 0 < successes < n:
        residual = np.bincount(codes, weights=y - p, minlength=groups)
        deff = float(np.sum(residual**2)) / (n * p * (1 - p))
        deff = min(max(deff, 1.0), most)
    else:
        deff = most
    return ClusteredProportion(successes, n, groups, deff, wilson_p(p, n / deff))


@dataclass(frozen=True)
class PairedComparison:
    """A run against its baseline on paired items: the difference in accuracy, its paired cluster bootstrap
    interval, and McNemar's exact test where every question has one pair."""

    pairs: int
    clusters: int
    accuracy: float
    baseline_accuracy: float
    difference: float
    interval: tuple[float, float]
    improved: int  # pairs wrong in the baseline and right in the run
    worsened: int  # pairs right in the baseline and wrong in the run
    mcnemar_p: float | None  # None when some question has several pairs (wordings, repeats): not independent
    resamples: int = BOOTSTRAP_RESAMPLES
    seed: int = BOOTSTRAP_SEED

    def to_json(self) -> dict[str, object]:
        return {
            "pairs": self.pairs,
            "questions": self.clusters,
            "accuracy": self.accuracy,
            "baseline_accuracy": self.baseline_accuracy,
            "difference": self.difference,
            "interval": list(self.interval),
            "interval_method": f"paired bootstrap over question ids ({self.resamples} resamples, seed {self.seed})",
            "improved": self.improved,
            "worsened": self.worsened,
            "mcnemar_p": self.mcnemar_p,
        }


def paired_comparison(
    mine: Sequence[bool],
    theirs: Sequence[bool],
    clusters: Sequence[Hashable],
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> PairedComparison | None:
    """``mine[i]`` and ``theirs[i]`` are one item in the run and in the baseline, ``clusters[i]`` its question id.
    The 95 % interval of the difference in accuracy is the percentile interval of a bootstrap that resamples
    question ids (with every pair of a drawn question), seeded: the same data always give the same interval."""
    a = np.asarray(mine, dtype=np.float64)
    b = np.asarray(theirs, dtype=np.float64)
    n = int(a.size)
    if n == 0:
        return None
    codes, groups = _codes(clusters)
    delta = np.bincount(codes, weights=a - b, minlength=groups)
    sizes = np.bincount(codes, minlength=groups).astype(np.float64)
    rng = np.random.default_rng(seed)
    block = max(1, _BOOTSTRAP_CELLS // groups)
    draws = []
    for start in range(0, resamples, block):
        rows = min(block, resamples - start)
        weights = rng.multinomial(groups, np.full(groups, 1.0 / groups), size=rows).astype(np.float64)
        draws.append((weights @ delta) / (weights @ sizes))
    low, high = np.percentile(np.concatenate(draws), [2.5, 97.5])
    improved = int(np.sum((a == 1) & (b == 0)))
    worsened = int(np.sum((a == 0) & (b == 1)))
    single = groups == n  # every question has one pair: McNemar's pairs are independent
    return PairedComparison(
        pairs=n,
        clusters=groups,
        accuracy=float(a.mean()),
        baseline_accuracy=float(b.mean()),
        difference=float(a.mean() - b.mean()),
        interval=(float(low), float(high)),
        improved=improved,
        worsened=worsened,
        mcnemar_p=mcnemar_exact(improved, worsened) if single else None,
        resamples=resamples,
        seed=seed,
    )


def mcnemar_exact(improved: int, worsened: int) -> float:
    """McNemar's exact test: the two-sided binomial test (p = 1/2) on the discordant pairs; 1.0 without any."""
    discordant = improved + worsened
    if discordant == 0:
        return 1.0
    return float(min(1.0, sps.binomtest(improved, discordant, 0.5, alternative="two-sided").pvalue))


def pass_at_k(n: Sequence[int] | IntArray, c: Sequence[int] | IntArray, k: int) -> float | None:
    """The unbiased pass@k of Chen et al. (2021), averaged over question-variants tried ``n[i]`` times with
    ``c[i]`` right: 1 - C(n - c, k) / C(n, k), over those tried at least k times (None if none)."""
    tries = np.asarray(n, dtype=np.int64)
    right = np.asarray(c, dtype=np.int64)
    keep = tries >= k
    if not keep.any():
        return None
    tries, right = tries[keep], right[keep]
    # C(n - c, k) / C(n, k) = prod_{i = n - c + 1}^{n} (1 - k / i), computed stably as a product over i.
    top = int(tries.max())
    i = np.arange(1, top + 1, dtype=np.float64)
    factors = np.where(i > k, 1.0 - k / np.maximum(i, 1.0), 0.0)  # i <= k: C(n - c, k) = 0 once n - c < k
    logs = np.log(np.where(factors > 0, factors, 1.0))
    zero = np.cumsum(factors <= 0)  # how many zero factors up to i
    cum = np.concatenate([[0.0], np.cumsum(logs)])
    cumzero = np.concatenate([[0], zero])
    lower = tries - right  # the product runs over i in (n - c, n]
    ratio = np.exp(cum[tries] - cum[lower]) * ((cumzero[tries] - cumzero[lower]) == 0)
    ratio = np.where(right == 0, 1.0, ratio)
    return float(np.mean(1.0 - ratio))
