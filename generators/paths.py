"""The path tree: placeholder rendering, the sampled subset of paths (paper A.2) and directory queries.

A path is a point of the cartesian product of the placeholders' values. Points are numbered in mixed
radix, the first placeholder most significant, so every directory is a contiguous range of point numbers
and the repository is one sorted array of sampled numbers. Listing a directory or testing a path is a
binary search in that array; the product itself is never materialised. A spec's ``excluded`` crossings (levels of
conditions that cannot occur together) are points the sample never takes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from datetime import date
from functools import cached_property

import numpy as np
import numpy.typing as npt

from generators.rng import Stream, root_stream
from generators.spec import PathVariable, Spec, SpecError, allowed_combinations, render_number

IntArray = npt.NDArray[np.int64]
README_NAME = "README.md"
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_DENSE_FACTOR = 4
_MAX_BATCH = 1 << 22  # points drawn at a time when crossings rule some out
MAX_COMPONENT_COMBINATIONS = 200_000


def render_date(iso: str, fmt: str) -> str:
    day = date.fromisoformat(iso)
    return (
        fmt.replace("%Y", f"{day.year:04d}")
        .replace("%m", f"{day.month:02d}")
        .replace("%d", f"{day.day:02d}")
        .replace("%b", _MONTHS[day.month - 1])
    )


@dataclass(frozen=True)
class Entry:
    name: str
    is_dir: bool


class Tree:
    """The directories and files of one repository (README excluded: see :mod:`generators.repository`)."""

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        template = spec.template
        self.placeholders = template.placeholders
        self.values = [self._placeholder_values(p) for p in self.placeholders]
        self.texts = [self._placeholder_texts(p, v) for p, v in zip(self.placeholders, self.values, strict=True)]
        self.radices = [len(v) for v in self.values]
        self.size = math.prod(self.radices)
        # Placeholder span and stride of every component; a component's local number is its own mixed radix.
        self.spans: list[tuple[int, int]] = []
        start = 0
        for component in template.components:
            self.spans.append((start, start + len(component)))
            start += len(component)
        self.component_radix = [math.prod(self.radices[a:b]) for a, b in self.spans]
        for i, radix in enumerate(self.component_radix):
            if radix > MAX_COMPONENT_COMBINATIONS:
                raise SpecError(f"template.components[{i}]: more than {MAX_COMPONENT_COMBINATIONS} value combinations")
        self.component_stride = [math.prod(self.component_radix[i + 1 :]) for i in range(len(self.spans))]
        self.depth = len(self.spans)  # number of components; files live at this depth
        self.excluded = _Exclusions(spec, self.placeholders, self.radices) if spec.excluded else None
        self.indices = self._sample(root_stream(spec.seed, spec.universe, "tree"))
        self._name_cache: dict[int, dict[str, int]] = {}

    # -- placeholder values ----------------------------------------------------------------------
    def _placeholder_values(self, name: str) -> tuple[str | int | float, ...]:
        spec = self.spec
        if name == "researcher":
            return spec.researchers
        if name == "date":
            return spec.dates
        if name == "seq_number":
            return tuple(range(1, spec.seq_count + 1))
        return spec.path_variable(name).values

    def _placeholder_texts(self, name: str, values: tuple[str | int | float, ...]) -> tuple[str, ...]:
        template = self.spec.template
        if name == "researcher":
            return tuple(str(v) for v in values)
        if name == "date":
            return tuple(render_date(str(v), template.date_format) for v in values)
        if name == "seq_number":
            return tuple(f"{int(v):0{template.seq_width}d}" for v in values)
        rendered = (v if isinstance(v, str) else render_number(v) for v in values)
        return tuple(template.value_style.format(name=name, val=v) for v in rendered)

    # -- sampling (paper A.2) --------------------------------------------------------------------
    @property
    def n_files(self) -> int:
        return int(self.indices.size)

    def _sample(self, stream: Stream) -> IntArray:
        p = self.spec.params
        excluded = self.excluded
        size = self.size if excluded is None else excluded.allowed_count
        if size <= p.min_files:
            return np.arange(self.size, dtype=np.int64) if excluded is None else excluded.allowed_points()
        cap = min(p.max_files, size)
        fraction = float(stream.beta(p.files_alpha, p.files_beta, 1)[0])
        n = min(cap, p.min_files + math.floor(fraction * (cap - p.min_files) + 0.5))
        if excluded is None:
            return _sample_distinct(stream, self.size, n)
        return excluded.sample(stream, self.size, n)

    def held_values(self, placeholder: str) -> tuple[str | int | float, ...]:
        """The values of ``placeholder`` that some file's path holds, in the placeholder's order: a small tree need
        not hold every level or date its spec lists, and a README or a name must not claim one it lacks."""
        k = self.placeholders.index(placeholder)
        stride = math.prod(self.radices[k + 1 :])
        held = np.unique((self.indices // stride) % self.radices[k])
        return tuple(self.values[k][i] for i in held.tolist())

    def held_path_variables(self) -> tuple[PathVariable, ...]:
        """The spec's path variables at the levels some file holds (:meth:`held_values`): what a README lists."""
        return tuple(
            replace(pv, values=self.held_values(pv.column))  # type: ignore[arg-type]
            for pv in self.spec.path_variables
        )

    # -- names -----------------------------------------------------------------------------------
    def component_name(self, component: int, local: int) -> str:
        a, b = self.spans[component]
        parts = []
        for k in range(b - 1, a - 1, -1):
            local, digit = divmod(local, self.radices[k])
            parts.append(self.texts[k][digit])
        name = self.spec.template.joiners[component].join(reversed(parts))
        return f"{name}.{self.spec.extension}" if component == self.depth - 1 else name

    def _names(self, component: int) -> dict[str, int]:
        names = self._name_cache.get(component)
        if names is None:
            names = {}
            for local in range(self.component_radix[component]):
                text = self.component_name(component, local)
                if text in names:
                    raise SpecError(f"template.components[{component}]: two value combinations render as {text!r}")
                names[text] = local
            self._name_cache[component] = names
        return names

    def _decode(self, parts: list[str]) -> int | None:
        """Point number of the first ``len(parts)`` components, or None if a name is not valid."""
        number = 0
        for component, part in enumerate(parts):
            local = self._names(component).get(part)
            if local is None:
                return None
            number += local * self.component_stride[component]
        return number

    def _range(self, parts: list[str]) -> tuple[int, int] | None:
        """Slice of ``indices`` below the directory named by ``parts`` (empty list = root)."""
        if not parts:
            return 0, self.n_files
        low = self._decode(parts)
        if low is None:
            return None
        high = low + self.component_stride[len(parts) - 1]
        a, b = np.searchsorted(self.indices, [low, high])
        return (int(a), int(b)) if b > a else None

    # -- queries ---------------------------------------------------------------------------------
    def is_dir(self, parts: list[str]) -> bool:
        return len(parts) < self.depth and self._range(parts) is not None

    def file_index(self, parts: list[str]) -> int | None:
        """Point number of a data file, or None when the path is not a file of this repository."""
        if len(parts) != self.depth:
            return None
        number = self._decode(parts)
        if number is None:
            return None
        pos = int(np.searchsorted(self.indices, number))
        return number if pos < self.n_files and int(self.indices[pos]) == number else None

    def list_dir(self, parts: list[str]) -> list[Entry] | None:
        """Sorted entries of a directory, or None when it does not exist."""
        if len(parts) >= self.depth:
            return None
        span = self._range(parts)
        if span is None:
            return None
        level = len(parts)
        locals_ = np.unique(
            (self.indices[span[0] : span[1]] // self.component_stride[level]) % self.component_radix[level]
        )
        is_dir = level < self.depth - 1
        return sorted((Entry(self.component_name(level, int(x)), is_dir) for x in locals_), key=lambda e: e.name)

    @cached_property
    def listings(self) -> dict[str, list[tuple[str, bool]]]:
        """Every directory's sorted (name, is_dir) entries, keyed by its path ('' is the root): ``list_dir`` of
        each, built in one pass over the file paths (a mount lists most directories of a tree it walks)."""
        children: dict[str, dict[str, bool]] = {"": {}}
        last = self.depth - 1
        for path in self.file_paths:
            parent = ""
            for level, name in enumerate(path.split("/")):
                here = f"{parent}/{name}" if parent else name
                names = children[parent]
                if name not in names:
                    names[name] = level < last
                    if level < last:
                        children[here] = {}
                parent = here
        return {folder: sorted(names.items()) for folder, names in children.items()}

    def digits(self, number: int) -> list[int]:
        out = []
        for radix in reversed(self.radices):
            number, digit = divmod(number, radix)
            out.append(digit)
        return out[::-1]

    def placeholder_values(self, number: int) -> dict[str, str | int | float]:
        """The raw value of every placeholder for the file with this point number."""
        return {
            name: self.values[k][d]
            for k, (name, d) in enumerate(zip(self.placeholders, self.digits(number), strict=True))
        }

    def path_of(self, number: int) -> str:
        parts = []
        for component in range(self.depth):
            local = (number // self.component_stride[component]) % self.component_radix[component]
            parts.append(self.component_name(component, local))
        return "/".join(parts)

    @cached_property
    def file_paths(self) -> list[str]:
        """Every data file path, in the order of point numbers (not sorted by name)."""
        per_component = []
        for component in range(self.depth):
            locals_ = (self.indices // self.component_stride[component]) % self.component_radix[component]
            unique, inverse = np.unique(locals_, return_inverse=True)
            names = np.array([self.component_name(component, int(u)) for u in unique], dtype=object)
            per_component.append(names[inverse])
        joined = per_component[0]
        for names in per_component[1:]:
            joined = joined + "/" + names
        return [str(p) for p in joined]


class _Exclusions:
    """The points of a tree that no crossing of ``spec.excluded`` rules out, without materialising the product: a
    point is allowed when the digits of the placeholders the crossings name form an allowed combination, a lookup
    in a table over those placeholders' values only (a few hundred entries)."""

    def __init__(self, spec: Spec, placeholders: tuple[str, ...], radices: list[int]) -> None:
        named = sorted({column for crossing in spec.excluded for column in crossing}, key=placeholders.index)
        self.positions = [placeholders.index(column) for column in named]
        self.weights = [math.prod(radices[k + 1 :]) for k in range(len(radices))]  # a digit's place value
        self.radices = radices
        shape = tuple(radices[k] for k in self.positions)
        allowed = allowed_combinations({c: spec.path_variable(c).values for c in named}, spec.excluded)
        self.allowed = allowed.ravel()  # over the named placeholders' combinations, the first most significant
        self.shape = shape
        self.allowed_count = int(self.allowed.sum()) * (math.prod(radices) // math.prod(shape))

    def mask(self, numbers: IntArray) -> npt.NDArray[np.bool_]:
        """Whether each point number is allowed."""
        combination = np.zeros(numbers.shape, dtype=np.int64)
        for k, n in zip(self.positions, self.shape, strict=True):
            combination = combination * n + (numbers // self.weights[k]) % self.radices[k]
        return self.allowed[combination]

    def allowed_points(self) -> IntArray:
        """Every allowed point number, sorted: the named placeholders' allowed combinations, each with every
        combination of the other placeholders (only called when there are few: at most four times a sample)."""
        named = set(self.positions)
        combos = np.flatnonzero(self.allowed)
        offsets = np.zeros(combos.shape, dtype=np.int64)
        for k, n in zip(reversed(self.positions), reversed(self.shape), strict=True):
            combos, digit = np.divmod(combos, n)
            offsets += digit * self.weights[k]
        others = np.zeros(1, dtype=np.int64)
        for k, radix in enumerate(self.radices):
            if k not in named:
                others = (others[:, None] + np.arange(radix, dtype=np.int64)[None, :] * self.weights[k]).ravel()
        return np.sort(np.add.outer(offsets, others).ravel())

    def sample(self, stream: Stream, size: int, n: int) -> IntArray:
        """``n`` distinct sorted allowed points, uniformly: from the list of allowed points where the sample takes a
        quarter of them or more, else drawn from the whole product and the excluded ones dropped."""
        if n * _DENSE_FACTOR >= self.allowed_count:
            points = self.allowed_points()
            order = np.argsort(stream.raw(points.size), kind="stable")[:n]
            return np.sort(points[order])
        batch = min(_MAX_BATCH, math.ceil((2 * n + 16) * size / self.allowed_count))  # about 2n + 16 allowed ones
        collected = np.empty(0, dtype=np.int64)
        while True:
            drawn = np.minimum(np.floor(stream.uniform(batch) * size).astype(np.int64), size - 1)
            collected = np.concatenate((collected, drawn[self.mask(drawn)]))
            _, first = np.unique(collected, return_index=True)
            if first.size >= n:
                return np.sort(collected[np.sort(first)[:n]])
            collected = collected[np.sort(first)]


def _sample_distinct(stream: Stream, size: int, n: int) -> IntArray:
    """``n`` distinct sorted numbers from ``range(size)``, uniformly, without building the range."""
    if n >= size:
        return np.arange(size, dtype=np.int64)
    if n * _DENSE_FACTOR >= size:
        order = np.argsort(stream.raw(size), kind="stable")[:n]
        return np.sort(order.astype(np.int64))
    collected = np.empty(0, dtype=np.int64)
    while True:
        drawn = np.minimum(np.floor(stream.uniform(2 * n + 16) * size).astype(np.int64), size - 1)
        collected = np.concatenate((collected, drawn))
        _, first = np.unique(collected, return_index=True)
        if first.size >= n:
            return np.sort(collected[np.sort(first)[:n]])
        collected = collected[np.sort(first)]
