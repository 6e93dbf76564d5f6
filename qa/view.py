"""A repository seen by the question generator: files with their placeholder values, and row selection.

Path conditions are matched on each file's placeholder *digits* (which value of each placeholder the file
has), never on substrings of the path, and every condition of a list applies. Tables are synthesised
through the same :class:`generators.Repository` that serves the mount, and cached for the lifetime of one
repository's question generation.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from generators import Repository
from generators.synth import Column, Table

BoolArray = npt.NDArray[np.bool_]
Condition = dict[str, Any]


class RepoView:
    def __init__(self, repository: Repository) -> None:
        self.repository = repository
        self.spec = repository.spec
        self.tree = repository.tree
        tree = self.tree
        # Current data files (a messy repository's ``NAME_v2.ext`` where it replaces ``NAME.ext``), in point order.
        self.paths: list[str] = repository.data_paths()
        self.placeholders = list(tree.placeholders)
        strides = [math.prod(tree.radices[k + 1 :]) for k in range(len(tree.radices))]
        self.digits = np.stack(
            [(tree.indices // strides[k]) % tree.radices[k] for k in range(len(tree.radices))], axis=1
        )
        self._tables: dict[str, Table] = {}

    # -- files -----------------------------------------------------------------------------------
    def rendered(self, name: str) -> tuple[str, ...]:
        return self.tree.texts[self.placeholders.index(name)]

    def select(self, conditions: list[Condition]) -> BoolArray:
        """Files meeting every path condition (exact rendered values)."""
        mask = np.ones(len(self.paths), dtype=bool)
        for condition in conditions:
            k = self.placeholders.index(condition["variable"])
            texts = self.tree.texts[k]
            wanted = [condition["value"]] if condition["op"] == "eq" else condition["values"]
            codes = [texts.index(w) for w in wanted]
            mask &= np.isin(self.digits[:, k], codes)
        return mask

    def selected_paths(self, mask: BoolArray) -> list[str]:
        return sorted(p for p, keep in zip(self.paths, mask.tolist(), strict=True) if keep)

    def exists(self, path: str) -> bool:
        try:
            return not self.repository.lookup(path).is_dir
        except LookupError:
            return False

    def layout(self) -> dict[str, Any]:
        template = self.spec.template
        return {
            "components": [list(c) for c in template.components],
            "joiners": list(template.joiners),
            "extension": self.spec.extension,
            "rendered": {name: list(self.rendered(name)) for name in self.placeholders},
        }

    # -- rows ------------------------------------------------------------------------------------
    def table(self, path: str) -> Table:
        table = self._tables.get(path)
        if table is None:
            table = self.repository.observed(path)
            self._tables[path] = table
        return table

    def pooled(
        self, paths: list[str], columns: list[str], row_conditions: list[Condition]
    ) -> dict[str, np.ndarray[Any, Any]]:
        """Values of ``columns`` over the rows of ``paths`` that meet every row condition and have a value in every
        one of ``columns`` (a messy file's missing cells leave their row out)."""
        parts: dict[str, list[np.ndarray[Any, Any]]] = {c: [] for c in columns}
        for path in paths:
            table = self.table(path)
            mask = row_mask(table, row_conditions)
            for c in columns:
                present = table.column(c).present
                if present is not None:
                    mask &= present
            for c in columns:
                parts[c].append(table.column(c).values[mask])
        return {c: np.concatenate(v) if v else np.empty(0) for c, v in parts.items()}


def row_mask(table: Table, conditions: list[Condition]) -> BoolArray:
    """Rows meeting every condition; a missing cell meets none."""
    mask = np.ones(table.n_rows, dtype=bool)
    for condition in conditions:
        column = table.column(condition["column"])
        mask &= _condition_mask(column, condition)
        if column.present is not None:
            mask &= column.present
    return mask


def _condition_mask(column: Column, condition: Condition) -> BoolArray:
    values = column.values
    op = condition["op"]
    if op == "eq":
        return np.asarray(values == condition["value"], dtype=bool)
    if op == "in":
        return np.isin(values, condition["values"])
    numeric = values.astype(np.float64)
    comparisons = {
        "gt": lambda: numeric > condition["value"],
        "lt": lambda: numeric < condition["value"],
        "ge": lambda: numeric >= condition["value"],
        "le": lambda: numeric <= condition["value"],
        "between": lambda: (numeric >= condition["low"]) & (numeric <= condition["high"]),
    }
    if op in comparisons:
        result: BoolArray = np.asarray(comparisons[op](), dtype=bool)
        return result
    raise ValueError(f"unknown row condition {op!r}")
