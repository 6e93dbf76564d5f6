"""A README claims only what the files hold (issue 24): a small tree need not hold every level its spec lists, and a
README that lists a forecast model with no file, or expects the highest error for it, contradicts its own tree."""

from __future__ import annotations

import dataclasses
import re

from generators.builders.text import levels
from generators.paths import Tree
from generators.repository import Repository, layout_template
from generators.spec import SPECIAL_PLACEHOLDERS, level_key
from tests.helpers import repo


def test_the_readme_lists_and_names_only_the_levels_some_file_holds() -> None:
    lacking = listed = 0
    for seed in range(1, 800):
        spec = repo(seed).spec
        repository = Repository(spec)
        if "README.md" not in repository.file_paths():
            continue
        readme = repository.read("README.md").decode()
        tree = Tree(spec)
        for pv in spec.path_variables:
            held = tree.held_values(pv.column)
            dead = [v for v in pv.values if v not in held]
            if not dead:
                continue
            lacking += 1
            assert f"{pv.name} ({levels(pv)})" not in readme, (seed, pv.column)  # the spec's list, with no file
            listed += f"{pv.name} ({levels(dataclasses.replace(pv, values=held))})" in readme  # type: ignore[arg-type]
            for level in dead:
                named = rf"(?:highest|lowest) for {re.escape(pv.name)} {re.escape(str(level))}\b"
                assert not re.search(named, readme), (seed, pv.column, level)
    # e.g. seed 34 lacks one of six forecast models
    assert lacking >= 3 and listed >= 1, "too few trees lack a level to test anything"


def test_the_readme_layout_writes_each_path_as_the_files_are_named() -> None:
    """Filling the README's layout with a file's values gives the file's path: a reader of ``{lna_tech}`` looked for
    a folder ``CMOSFDSOI`` among folders named ``lna_tech_CMOSFDSOI`` (a reviewer's fault)."""
    styles = set()
    for seed in range(1, 200):
        spec = repo(seed).spec
        tree = Tree(spec)
        layout = layout_template(spec, named=True)
        styles.add(spec.template.value_style)
        for number in tree.indices.tolist()[:5]:
            values = tree.placeholder_values(number)
            texts = {}
            for k, placeholder in enumerate(tree.placeholders):
                index = tree.values[k].index(values[placeholder])
                whole = tree.texts[k][index]
                texts[placeholder] = whole if placeholder in SPECIAL_PLACEHOLDERS else level_key(values[placeholder])
            assert layout.format(**texts) == tree.path_of(number), (seed, layout)
        if "README.md" in Repository(spec).file_paths():
            assert f"stored at `{layout}`" in Repository(spec).read("README.md").decode()
    assert len(styles) == 5  # every value style, the bare "{val}" among them


def test_the_readme_states_impossible_crossings_only_at_levels_some_file_holds() -> None:
    """A crossing of a hard disk at 85 C, in a tree that holds no hard-disk file, named a component the study does
    not have (a reviewer's fault): the README states the crossings at the held levels, or none."""
    unheld = 0
    for seed in range(1, 3000):
        spec = repo(seed).spec
        if not spec.excluded or not spec.readme.present:
            continue
        tree = Tree(spec)
        held = {pv.column: tree.held_values(pv.column) for pv in spec.path_variables}
        readme = Repository(spec).read("README.md").decode()
        section = readme.split("cannot occur", 1)[1].split("Field:", 1)[0] if "cannot occur" in readme else ""
        held_texts = {level_key(v) for values in held.values() for v in values}
        for crossing in spec.excluded:
            for column, crossed in crossing.items():
                for level in crossed:
                    if level not in held[column] and level_key(level) not in held_texts:
                        unheld += 1
                        assert f"`{level_key(level)}`" not in section, (seed, column, level)
        if unheld >= 3:
            break
    assert unheld >= 3, "too few trees lack a crossed level to test anything"


def test_the_abstract_says_how_files_are_named_and_every_path_names_its_conditions() -> None:
    """An abstract said "one file per combination of conditions" over a tree with several numbered files per
    combination (a reader's fault). It now says each file is named by its conditions: every path holds the value of
    every condition of the layout, and several files may share one combination."""
    shared = 0
    for seed in range(1, 300):
        spec = repo(seed).spec
        repository = Repository(spec)
        if "README.md" not in repository.file_paths() or not spec.readme.show_abstract:
            continue
        readme = repository.read("README.md").decode()
        assert "one file per combination" not in readme, seed
        assert "each file named by its conditions" in readme, seed
        tree = Tree(spec)
        columns = [pv.column for pv in spec.path_variables]
        combinations = set()
        for number in tree.indices.tolist():
            values = tree.placeholder_values(number)
            combinations.add(tuple(str(values[c]) for c in columns))
        shared += len(combinations) < tree.n_files
    assert shared >= 10, shared  # the claim the old abstract made would have been false this often
