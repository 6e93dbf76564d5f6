"""Ground-truth statistics, computed exactly on the selected values (definitions in docs/questions.md)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt
from scipy import stats as sps

FloatArray = npt.NDArray[np.float64]

UNIVARIATE: dict[str, Callable[[FloatArray], float]] = {
    "mean": lambda x: float(np.mean(x)),
    "median": lambda x: float(np.median(x)),
    "std": lambda x: float(np.std(x, ddof=1)),
    "variance": lambda x: float(np.var(x, ddof=1)),
    "min": lambda x: float(np.min(x)),
    "max": lambda x: float(np.max(x)),
    "sum": lambda x: float(np.sum(x)),
}
MIN_ROWS = {
    "mean": 1,
    "median": 1,
    "min": 1,
    "max": 1,
    "sum": 1,
    "std": 2,
    "variance": 2,
    "pearson": 3,
    "spearman": 3,
    "chi2": 1,
    "welch": 2,
}


def univariate(statistic: str, values: FloatArray) -> float:
    return UNIVARIATE[statistic](np.asarray(values, dtype=np.float64))


def is_constant(values: Sequence[object] | npt.NDArray[np.generic]) -> bool:
    return len(set(np.asarray(values).tolist())) < 2


def pearson(x: FloatArray, y: FloatArray) -> tuple[float, float]:
    result = sps.pearsonr(x, y)
    return float(result.statistic), float(result.pvalue)


def spearman(x: FloatArray, y: FloatArray) -> tuple[float, float]:
    result = sps.spearmanr(x, y)
    return float(result.statistic), float(result.pvalue)


def chi2(a: Sequence[str], b: Sequence[str]) -> tuple[float, float]:
    """Pearson's chi-square test of independence on the observed contingency table, no correction."""
    rows, row_codes = np.unique(np.asarray(a, dtype=object).astype(str), return_inverse=True)
    cols, col_codes = np.unique(np.asarray(b, dtype=object).astype(str), return_inverse=True)
    table = np.zeros((rows.size, cols.size), dtype=np.int64)
    np.add.at(table, (row_codes, col_codes), 1)
    result = sps.chi2_contingency(table, correction=False)
    return float(result.statistic), float(result.pvalue)


def welch(first: FloatArray, second: FloatArray) -> tuple[float, float]:
    result = sps.ttest_ind(first, second, equal_var=False)
    return float(result.statistic), float(result.pvalue)
