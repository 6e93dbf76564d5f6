"""The messiness ladder (``--mess``, generators.mess): level 0 is the clean repository byte for byte, every kind of
mess occurs at level 2, every format still parses with the usual tools, and reading the bytes by the documented
cleaning convention gives exactly the table the question generator uses (``Repository.observed``)."""

from __future__ import annotations

import io
import json
import math
import re
import shlex
from collections import Counter
from functools import cache
from pathlib import Path

import numpy as np
import openpyxl
import pandas as pd
import pytest

from generators import build_spec
from generators.mess import CODEBOOK_NAME, KINDS, V2_SUFFIX, logical_of
from generators.repository import PathNotFound, Repository
from generators.spec import SpecError, World, from_json


@cache
def messy(seed: int, level: int) -> Repository:
    return Repository(build_spec(seed, world=World(mess=level)))


def test_level_zero_is_the_clean_repository() -> None:
    for seed in (1, 12, 34):
        clean = Repository(build_spec(seed))
        zero = Repository(build_spec(seed, world=World(mess=0)))
        assert zero.spec.to_json() == clean.spec.to_json() and '"mess"' not in zero.spec.to_json()
        assert zero.mess is None and zero.digest() == clean.digest()


def test_the_level_is_recorded_and_validated() -> None:
    spec = build_spec(5, world=World(mess=2))
    data = json.loads(spec.to_json())
    assert data["mess"] == 2 and from_json(spec.to_json()) == spec
    data["mess"] = 4
    with pytest.raises(SpecError, match="mess"):
        from_json(json.dumps(data))


def test_every_kind_occurs_at_level_two_over_fifty_seeds() -> None:
    seen: Counter[str] = Counter()
    for seed in range(1, 51):
        seen.update(messy(seed, 2).mess.kinds)  # type: ignore[union-attr]
    assert set(seen) == set(KINDS), seen
    # Level 3 has more of everything than level 2 on the same seeds.
    three: Counter[str] = Counter()
    for seed in range(1, 21):
        three.update(messy(seed, 3).mess.kinds)  # type: ignore[union-attr]
    two = Counter(k for seed in range(1, 21) for k in messy(seed, 2).mess.kinds)  # type: ignore[union-attr]
    assert sum(three.values()) > sum(two.values())


def test_messy_bytes_are_deterministic_and_sized() -> None:
    for seed in (3, 12):
        first, second = messy(seed, 3), Repository(build_spec(seed, world=World(mess=3)))
        assert first.digest() == second.digest() != Repository(build_spec(seed)).digest()
        for path in first.file_paths()[:6]:
            assert first.size(path) == len(first.read(path))


def test_the_tree_holds_the_codebook_and_the_superseded_copies() -> None:
    seed = next(s for s in range(1, 60) if messy(s, 3).mess and messy(s, 3).mess.v2 and messy(s, 3).mess.old)  # type: ignore[union-attr]
    repo = messy(seed, 3)
    plan = repo.mess
    assert plan is not None
    paths = set(repo.file_paths())
    assert CODEBOOK_NAME in paths and not repo.lookup(CODEBOOK_NAME).is_dir
    for logical in plan.v2:
        current = repo.data_paths()[repo.tree.file_paths.index(logical)]
        assert current.endswith(f"{V2_SUFFIX}.{repo.spec.extension}") and logical_of(current) == logical
        assert {logical, current} <= paths
        assert repo.observed(logical).n_rows < repo.observed(current).n_rows  # the superseded export is shorter
    for logical in plan.old:
        assert f"{plan.old_dir}/{logical}" in paths and logical in paths
    # Listings agree with the file list, directories included.
    listed = set()
    for folder, entries in repo.listings.items():
        listed |= {f"{folder}/{name}" if folder else name for name, is_dir in entries if not is_dir}
    assert listed == paths
    assert [e.name for e in repo.list(plan.old_dir)]
    with pytest.raises(PathNotFound):
        repo.read("no/such/file.csv")


# ------------------------------------------------------------------------------------ the reading convention
_MISSING = {"csv": {""}, "txt": {"NA"}, "log": {"NA"}, "xlsx": {""}, "json": {None}, "jsonl": {None}}


def _codebook(repo: Repository) -> dict[str, object]:
    """What CODEBOOK.md declares, read from its text as a reader would."""
    text = repo.read(CODEBOOK_NAME).decode()
    sentinel = re.search(r"In (.*), the code `-999`", text)
    drift = re.search(
        r"In (.*), `(\w+)` is recorded in (\S+) instead of .*?: to get .*?, (multiply by|add) (\S+)\.", text
    )
    rename = re.search(r"In (.*), `(\w+)` is named `(\w+)`", text)
    return {
        "sentinel": set(re.findall(r"`(\w+)`", sentinel.group(1))) if sentinel else set(),
        "drift": drift.groups() if drift else None,
        "rename": rename.groups() if rename else None,
    }


def _covered(rule_text: str, repo: Repository, logical: str) -> bool:
    """Whether the codebook's rule ("files dated D or later", "files of researcher R", "files whose F is V")
    covers the file, from its path alone."""
    number = repo.tree.file_index(logical.split("/"))
    assert number is not None
    digits = repo.tree.digits(number)
    texts = {name: repo.tree.texts[k][digits[k]] for k, name in enumerate(repo.tree.placeholders)}
    dated = re.match(r"files dated (\S+) or later \(`(\S+)` in paths\)", rule_text)
    if dated:
        k = repo.tree.placeholders.index("date")
        day_of = dict(zip(repo.tree.texts[k], (str(v) for v in repo.tree.values[k]), strict=True))
        return day_of[texts["date"]] >= dated.group(1)
    who = re.match(r"files of researcher `(\S+)`", rule_text)
    if who:
        return texts["researcher"] == who.group(1)
    level = re.match(r"files whose `(\w+)` is `(\S+)` in paths", rule_text)
    assert level, rule_text
    return texts[level.group(1)] == level.group(2)


def _read(repo: Repository, path: str) -> dict[str, list[object]]:
    """A data file's columns as written (header, comments and units row dropped), cells as read by the usual
    tools: text for delimited and log files, JSON values, openpyxl values."""
    data, ext = repo.read(path), repo.spec.extension
    if ext in ("csv", "txt"):
        lines = [line for line in data.decode().split("\n") if line and not line.startswith("# ")]
        frame = pd.read_csv(
            io.StringIO("\n".join(lines)), sep="," if ext == "csv" else "\t", dtype=str, keep_default_na=False
        )
        if len(frame) and all(str(v).startswith("[") for v in frame.iloc[0]):
            frame = frame.iloc[1:]
        return {c: frame[c].tolist() for c in frame.columns}
    if ext in ("json", "jsonl"):
        records = json.loads(data) if ext == "json" else [json.loads(line) for line in data.decode().splitlines()]
        return {name: [r[name] for r in records] for name in records[0]}
    if ext == "log":
        lines = [line for line in data.decode().splitlines() if not line.startswith("# ")]
        rows = [dict(pair.split("=", 1) for pair in shlex.split(line)[1:]) for line in lines]
        return {name: [r[name] for r in rows] for name in rows[0]}
    sheet = openpyxl.load_workbook(io.BytesIO(data), read_only=True)["data"]
    rows = [list(r) for r in sheet.iter_rows(values_only=True)]
    header, body = rows[0], rows[1:]
    if body and all(v is None or str(v).startswith("[") for v in body[0]):
        body = body[1:]
    return {str(name): [r[i] for r in body] for i, name in enumerate(header)}


def _convention(repo: Repository, path: str) -> dict[str, tuple[list[object], list[bool]]]:
    """Each codebook column of a current data file: its values by the cleaning convention, and which are present."""
    book = _codebook(repo)
    raw = _read(repo, path)
    logical = logical_of(path)
    rename = book["rename"]
    if rename and _covered(rename[0], repo, logical):  # type: ignore[index]
        raw[rename[1]] = raw.pop(rename[2])  # type: ignore[index]
    out: dict[str, tuple[list[object], list[bool]]] = {}
    for variable in repo.spec.variables:
        cells = raw[variable.column]
        present = [c not in _MISSING[repo.spec.extension] and c is not None for c in cells]
        if variable.column in book["sentinel"]:  # type: ignore[operator]
            present = [p and str(c) != "-999" for c, p in zip(cells, present, strict=True)]
        values: list[object] = list(cells)
        if variable.type in ("integer", "continuous"):
            numbers = [float(c) if p else math.nan for c, p in zip(cells, present, strict=True)]
            drift = book["drift"]
            if drift and drift[1] == variable.column and _covered(drift[0], repo, logical):  # type: ignore[index]
                operation, amount = drift[3], float(drift[4])  # type: ignore[index]
                array = np.array(numbers)
                numbers = (array * amount if operation == "multiply by" else array + amount).tolist()
            values = numbers
        elif variable.type == "categorical":
            names = {c.strip().casefold(): c for c in variable.categories}
            values = [names[str(c).strip().casefold()] if p else None for c, p in zip(cells, present, strict=True)]
        out[variable.column] = (values, present)
    return out


@pytest.mark.parametrize("level", [1, 2, 3])
def test_the_convention_reads_what_the_ground_truth_uses(level: int) -> None:
    """For every format: read the bytes as docs/generation.md says, compare with the observed table."""
    formats: dict[str, int] = {}
    for seed in range(1, 200):
        formats.setdefault(build_spec(seed).extension, seed)
        if len(formats) == 6:
            break
    kinds: set[str] = set()
    for seed in [*formats.values(), 3, 11, 18, 27]:
        repo = messy(seed, level)
        assert repo.mess is not None
        kinds |= set(repo.mess.kinds)
        for path in repo.data_paths()[:5]:
            observed = repo.observed(path)
            read = _convention(repo, path)
            for column in observed.columns:
                values, present = read[column.name]
                expected_present = np.ones(observed.n_rows, bool) if column.present is None else column.present
                assert present == expected_present.tolist(), (seed, path, column.name)
                mask = np.asarray(present)
                if column.numeric:
                    got = np.asarray(values, dtype=np.float64)[mask]
                    assert np.array_equal(got, column.values.astype(np.float64)[mask]), (seed, path, column.name)
                elif column.type == "categorical":
                    assert [v for v, p in zip(values, present, strict=True) if p] == column.values[mask].tolist()
    if level >= 2:
        assert {"missing", "header"} <= kinds and len(kinds) >= 4, kinds


MESS_GOLDEN = json.loads((Path(__file__).parent / "golden_digests.json").read_text())["mess_digests"]


@pytest.mark.parametrize("key", sorted(MESS_GOLDEN))
def test_messy_golden_digest(key: str) -> None:
    """Messy repositories are as deterministic as clean ones: ``seed:level`` -> ``sgfs digest SEED --mess LEVEL``."""
    seed, level = map(int, key.split(":"))
    assert messy(seed, level).digest() == MESS_GOLDEN[key]
