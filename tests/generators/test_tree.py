"""The path tree: rendering, listing without enumeration, membership, and the A.2 file counts."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from scipy import stats

from generators import PathNotFound
from generators.builders.procedural import build_spec
from generators.paths import Tree, render_date
from generators.spec import DATE_FORMATS
from tests.helpers import repo


def _walk(seed: int) -> list[str]:
    r = repo(seed)
    found: list[str] = []

    def visit(prefix: str) -> None:
        for entry in r.list(prefix):
            path = f"{prefix}/{entry.name}" if prefix else entry.name
            if entry.is_dir:
                assert r.lookup(path).is_dir
                visit(path)
            else:
                assert not r.lookup(path).is_dir
                found.append(path)

    visit("")
    return sorted(found)


@pytest.mark.parametrize("seed", [1, 2, 5, 10, 118, 303])
def test_listing_every_directory_gives_exactly_the_file_list(seed: int) -> None:
    assert _walk(seed) == repo(seed).file_paths()


@pytest.mark.parametrize("seed", [*range(1, 41), 118, 279, 288, 303])
def test_listings_built_at_once_equal_each_directory_listed(seed: int) -> None:
    r = repo(seed)
    listings = r.listings
    walked: list[str] = [""]
    for folder in walked:  # every directory reachable from the root, and no other, is in the index
        entries = [(e.name, e.is_dir) for e in r.list(folder)]
        assert listings[folder] == entries
        walked += [f"{folder}/{name}" if folder else name for name, is_dir in entries if is_dir]
    assert sorted(listings) == sorted(walked)


@pytest.mark.parametrize("seed", [1, 3, 10, 118])
def test_files_are_unique_and_have_the_extension(seed: int) -> None:
    r = repo(seed)
    paths = r.file_paths()
    assert len(set(paths)) == len(paths) == r.tree.n_files + r.has_readme
    data = [p for p in paths if p != "README.md"]
    assert all(p.endswith("." + r.spec.extension) for p in data)
    assert all(p.count("/") == len(r.spec.template.components) - 1 for p in data)


@pytest.mark.parametrize("seed", [1, 10, 118])
def test_paths_not_in_the_repository_are_refused(seed: int) -> None:
    r = repo(seed)
    path = r.tree.file_paths[0]
    parts = path.split("/")
    bad = [
        path + "x",
        path.rsplit(".", 1)[0] + ".zip",
        "/".join(parts[:-1]),  # a directory is not a file
        "nope/" + path,
        "../" + path,
        "/".join([*parts[:-1], "..", parts[-1]]),
    ]
    with pytest.raises(PathNotFound):
        r.read(bad[0])
    for candidate in bad[1:]:
        with pytest.raises(PathNotFound):
            r.table(candidate)
    # An existing combination of names that the sample left out is not a file either.
    tree = r.tree
    missing = next(i for i in range(tree.size) if i not in set(tree.indices.tolist()))
    with pytest.raises(PathNotFound):
        r.lookup(tree.path_of(missing))


def test_lookup_accepts_leading_and_trailing_slashes() -> None:
    r = repo(118)
    first = r.tree.file_paths[0]
    assert r.lookup("/" + first).path == first
    assert r.lookup("/").is_dir
    top = first.split("/")[0]
    assert r.lookup(top + "/").is_dir


def test_render_date_formats() -> None:
    assert [render_date("2024-03-05", f) for f in DATE_FORMATS] == [
        "2024-03-05",
        "20240305",
        "2024_03_05",
        "05Mar2024",
    ]


def test_large_product_is_never_materialised() -> None:
    # Seed 4737 has the largest product among seeds 1-6000 (302 400 paths, 1 659 files): queries are binary searches.
    tree = Tree(build_spec(4737))
    assert tree.size > 300_000 > 100 * tree.n_files
    assert tree.n_files <= tree.spec.params.max_files
    assert tree.list_dir([]) is not None
    for number in tree.indices[:: max(1, tree.n_files // 50)].tolist():
        assert tree.file_index(tree.path_of(number).split("/")) == number
    assert len(tree.file_paths) == tree.n_files


def test_placeholder_values_render_in_the_path() -> None:
    r = repo(118)
    tree = r.tree
    for number in tree.indices[:20].tolist():
        path = tree.path_of(number)
        for name, value in tree.placeholder_values(number).items():
            if name in ("researcher",):
                assert str(value) in path
            elif name == "seq_number":
                assert re.search(rf"\b0*{value}\b", path.replace("_", " ").replace("-", " "))
        assert r.lookup(path).path == path


@pytest.mark.slow
def test_file_counts_follow_appendix_a2() -> None:
    """Over seeds 1-500 whose product holds >= 1000 possible paths, (n - l)/(min(h, P) - l) ~ Beta(1.05, 25)."""
    fractions = []
    for seed in range(1, 501):
        tree = Tree(build_spec(seed))
        p = tree.spec.params
        # the paths a study can have: impossible crossings (version 12) leave some out of the product
        size = tree.size if tree.excluded is None else tree.excluded.allowed_count
        cap = min(p.max_files, size)
        assert min(p.min_files, size) <= tree.n_files <= p.max_files
        if size <= p.min_files:
            assert tree.n_files == size
        if size >= 1000:
            fractions.append((tree.n_files - p.min_files) / (cap - p.min_files))
    assert len(fractions) >= 100, len(fractions)
    result = stats.kstest(fractions, stats.beta(1.05, 25).cdf)
    assert result.pvalue > 0.01, (result, len(fractions))
    assert math.isclose(float(np.mean(fractions)), 1.05 / 26.05, rel_tol=0.35)


def test_a_numeric_condition_ending_in_a_digit_is_never_glued_to_its_value() -> None:
    """``plant_density_m28`` reads as 28 per m2 (a designer's find): a repository whose path writes such a condition
    separates name and value; other repositories keep the glued style the paper draws."""
    glued = separated = 0
    for seed in range(1, 1500):
        spec = build_spec(seed)
        digit_ended = [pv for pv in spec.path_variables if pv.numeric and pv.column[-1].isdigit()]
        if spec.template.value_style == "{name}{val}":
            assert not digit_ended, (seed, [pv.column for pv in digit_ended])
            glued += 1
        elif digit_ended and spec.template.value_style == "{name}_{val}":
            separated += 1
    assert glued >= 100 and separated >= 5, (glued, separated)


def test_without_a_readme_a_numeric_condition_is_never_a_bare_number() -> None:
    """Folders ``0.5``, ``2`` and ``5`` say nothing of what they measure where no README names the layout (a
    reviewer's fault): a repository without a README names each numeric condition in its path; one with a README,
    or with only categorical conditions, keeps the bare style the paper draws."""
    renamed = bare_with_readme = bare_categories = 0
    for seed in range(1, 1500):
        spec = build_spec(seed)
        numeric = any(pv.numeric for pv in spec.path_variables)
        if spec.template.value_style != "{val}":
            renamed += numeric and not spec.readme.present and spec.template.value_style == "{name}_{val}"
            continue
        assert spec.readme.present or not numeric, seed
        bare_with_readme += numeric
        bare_categories += not numeric
    assert renamed >= 30 and bare_with_readme >= 30 and bare_categories >= 10, (
        renamed,
        bare_with_readme,
        bare_categories,
    )
