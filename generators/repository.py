"""A repository: the FUSE-free content model of one seed (lookup, list, read), and its README.

This is the "mount source" the daemon and the command line sit on: every path question is answered
from the spec and the tree, and file bytes are synthesised on demand. Nothing here caches bytes; the
caller (the daemon, an export) decides what to keep.
"""

from __future__ import annotations

import builtins
import hashlib
from dataclasses import dataclass
from functools import cached_property

from generators import mess as messes
from generators.codebook import render_codebook
from generators.encoders import encode, encoded_size
from generators.messwrite import encode_messy
from generators.paths import README_NAME, Entry, Tree
from generators.spec import SPECIAL_PLACEHOLDERS, Spec, crossings_within, render_number
from generators.synth import Table, measure_text, synthesize

MAX_SEED = 2**63 - 1
# What ``Repository.measure`` keeps of a data file for ``encode_table``: its table, or a messy file's MessyFile.
Measured = Table | messes.MessyFile


class PathNotFound(LookupError):
    """The path is not a file or directory of the repository."""


@dataclass(frozen=True)
class Node:
    path: str
    is_dir: bool


def split_path(path: str) -> list[str]:
    """Path parts relative to the repository root; '' and '/' are the root."""
    parts = [p for p in path.strip("/").split("/") if p]
    if any(p in (".", "..") for p in parts):
        raise PathNotFound(path)
    return parts


class Repository:
    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self.tree = Tree(spec)
        # ``--mess``: the faults laid over the clean files, None for a clean repository (generators.mess).
        self.mess = messes.plan(spec, self.tree)

    # -- README ----------------------------------------------------------------------------------
    @property
    def has_readme(self) -> bool:
        return self.spec.readme.present

    @cached_property
    def readme(self) -> bytes:
        return render_readme(self.spec, self.tree).encode("utf-8")

    # -- lookup / list / read --------------------------------------------------------------------
    def lookup(self, path: str) -> Node:
        parts = split_path(path)
        if not parts:
            return Node("", True)
        if parts == [README_NAME] and self.has_readme:
            return Node(README_NAME, False)
        if self.mess is not None:
            joined = "/".join(parts)
            kind = self._mess_nodes.get(joined)
            if kind is None:
                raise PathNotFound(path)
            return Node(joined, kind)
        if self.tree.is_dir(parts):
            return Node("/".join(parts), True)
        if self.tree.file_index(parts) is not None:
            return Node("/".join(parts), False)
        raise PathNotFound(path)

    def list(self, path: str = "") -> builtins.list[Entry]:
        parts = split_path(path)
        if self.mess is not None:
            listing = self.listings.get("/".join(parts))
            if listing is None:
                raise PathNotFound(path)
            return [Entry(name, is_dir) for name, is_dir in listing]
        entries = self.tree.list_dir(parts)
        if entries is None:
            raise PathNotFound(path)
        if not parts and self.has_readme:
            entries = sorted([*entries, Entry(README_NAME, False)], key=lambda e: e.name)
        return entries

    @cached_property
    def listings(self) -> dict[str, builtins.list[tuple[str, bool]]]:
        """Every directory's sorted (name, is_dir) entries, keyed by its path ('' is the root, README included):
        ``list`` of every directory, built at once."""
        listings = dict(self.tree.listings)
        if self.mess is not None:
            listings = _messy_listings(listings, self.mess)
        if self.has_readme:
            listings[""] = sorted([*listings[""], (README_NAME, False)])
        return listings

    @cached_property
    def _mess_nodes(self) -> dict[str, bool]:
        """Every path of a messy repository (README excluded) -> whether it is a directory."""
        nodes = {"": True}
        for folder, entries in self.listings.items():
            for name, is_dir in entries:
                nodes[f"{folder}/{name}" if folder else name] = is_dir
        return nodes

    def _layout_file(self, path: str) -> tuple[str, int]:
        """The layout path and point number of the data file at ``path`` (in a messy repository: of the layout file
        whose current version or superseded copy ``path`` is); PathNotFound for anything else."""
        logical = "/".join(split_path(path))
        if self.mess is not None:
            if self._mess_nodes.get(logical) is not False or logical == messes.CODEBOOK_NAME:
                raise PathNotFound(path)
            logical = self.mess.stale_copies.get(logical, messes.logical_of(logical))
        number = self.tree.file_index(logical.split("/"))
        if number is None:
            raise PathNotFound(path)
        return logical, number

    def table(self, path: str) -> Table:
        """The rows of a data file as the clean repository writes them (in a messy repository: those of the layout
        file whose current version or superseded copy ``path`` is)."""
        logical, number = self._layout_file(path)
        return synthesize(self.spec, logical, self.tree.placeholder_values(number))

    def _messy(self, path: str) -> messes.MessyFile:
        assert self.mess is not None
        logical, number = self._layout_file(path)
        values = self.tree.placeholder_values(number)
        table = synthesize(self.spec, logical, values)
        return messes.messy_file(self.spec, self.mess, "/".join(split_path(path)), table, values)

    def observed(self, path: str) -> Table:
        """The rows of a data file as the documented cleaning convention reads them (docs/generation.md): in a
        messy repository, missing and coded cells are marked absent (``Column.present``), drifted values are
        converted back, categories have the codebook's spelling; in a clean one, ``table(path)``."""
        if self.mess is None:
            return self.table(path)
        return self._messy(path).observed

    @cached_property
    def codebook(self) -> bytes:
        assert self.mess is not None
        return render_codebook(self.spec, self.mess).encode("utf-8")

    def read(self, path: str) -> bytes:
        """The whole content of a file."""
        parts = split_path(path)
        if parts == [README_NAME] and self.has_readme:
            return self.readme
        if self.mess is not None:
            if parts == [messes.CODEBOOK_NAME]:
                return self.codebook
            return self.encode_table(self._messy(path))
        return self.encode_table(self.table(path))

    def size(self, path: str) -> int:
        """``len(self.read(path))``, from the cell texts where the format allows, without building the file."""
        parts = split_path(path)
        if parts == [README_NAME] and self.has_readme:
            return len(self.readme)
        if self.mess is not None:
            return len(self.read(path))  # messy files are written to be measured
        return encoded_size(self.table(path), self.spec.extension)

    def sizes(self, paths: builtins.list[str]) -> builtins.list[int | Exception]:
        """``size`` of every path, or the exception it raised; the data files' sizes counted together.

        Cheaper per file than ``size`` one by one: the text of continuous columns is measured in one
        whole-array pass over all the tables (``encoded_sizes``) instead of being written per column.
        """
        return [size for size, _ in self.measure(paths)]

    def measure(self, paths: builtins.list[str]) -> builtins.list[tuple[int | Exception, Measured | None]]:
        """``sizes``, each with the table it measured (None for the README, the codebook and failures):
        ``encode_table`` of that table is then the file's bytes, so a file measured first is assembled later
        without being synthesised again (a messy file's table is its ``MessyFile``)."""
        results: builtins.list[tuple[int | Exception, Measured | None]] = []
        tables: builtins.list[Table] = []
        slots: builtins.list[int] = []
        for path in paths:
            try:
                parts = split_path(path)
                if (parts == [README_NAME] and self.has_readme) or (
                    self.mess is not None and parts == [messes.CODEBOOK_NAME]
                ):
                    results.append((self.size(path), None))  # None: ``read`` gives the bytes
                    continue
                if self.mess is not None:  # written to be measured; kept, it is encoded again without synthesis
                    messy = self._messy(path)
                    results.append((len(self.encode_table(messy)), messy))
                    continue
                tables.append(self.table(path))
                slots.append(len(results))
                results.append((-1, None))
            except Exception as exc:  # the caller decides what a failed path means
                results.append((exc, None))
        measure_text(tables)
        for slot, table in zip(slots, tables, strict=True):
            try:
                results[slot] = (encoded_size(table, self.spec.extension), table)
            except Exception as exc:
                results[slot] = (exc, None)
        return results

    def encode_table(self, table: Measured) -> bytes:
        """The bytes of the data file whose table this is (``read`` is ``encode_table(table(path))``, in a messy
        repository ``encode_table`` of its ``MessyFile``)."""
        if isinstance(table, messes.MessyFile):
            return encode_messy(table, self.spec.extension)
        return encode(table, self.spec.extension)

    def file_paths(self) -> builtins.list[str]:
        """Every file path (README included), sorted by name as ``find | LC_ALL=C sort`` would."""
        if self.mess is not None:
            paths = [p for p, is_dir in self._mess_nodes.items() if not is_dir and p != README_NAME]
        else:
            paths = list(self.tree.file_paths)
        if self.has_readme:
            paths.append(README_NAME)
        return sorted(paths)

    def data_paths(self) -> builtins.list[str]:
        """The current data files, in the order of the layout's point numbers: the layout's paths, or in a messy
        repository the current version of each (``NAME_v2.ext`` where it replaces ``NAME.ext``)."""
        if self.mess is None:
            return list(self.tree.file_paths)
        return [self.mess.current(p) for p in self.tree.file_paths]

    def digest(self) -> str:
        """SHA-256 over every path and its bytes, in sorted path order."""
        digest = hashlib.sha256()
        for path in self.file_paths():
            content = self.read(path)
            digest.update(f"{path}\0{len(content)}\0".encode())
            digest.update(content)
        return digest.hexdigest()


def _placeholder_phrase(spec: Spec, name: str) -> str:
    if name == "researcher":
        return "`researcher`: who recorded the file"
    if name == "date":
        return "`date`: the day the file's first record was taken (later records may follow on other days)"
    if name == "seq_number":
        return "`seq_number`: the run number within its group"
    variable = spec.path_variable(name)
    unit = f" ({variable.unit})" if variable.unit else ""
    return f"`{variable.column}`: {variable.name}{unit}"


def layout_template(spec: Spec, *, named: bool = False) -> str:
    """Where data files live, with ``{placeholder}`` fields: ``{date}/{researcher}/{temp}-{seq_number}.csv``, each
    field standing for a whole name as the paths write it (questions say how: ``{temp}`` appears as ``temp=300``).
    ``named``: each condition's field written inside its name as the paths write it, for the README, whose reader
    of ``{temp}`` looked for a folder ``300`` among folders named ``temp=300``: ``{date}/{researcher}/temp={temp}``."""
    style = spec.template.value_style

    def field(placeholder: str) -> str:
        whole = "{" + placeholder + "}"
        if not named or placeholder in SPECIAL_PLACEHOLDERS:
            return whole
        return style.format(name=placeholder, val=whole)

    directories = "/".join(
        spec.template.joiners[i].join(field(p) for p in component)
        for i, component in enumerate(spec.template.components)
    )
    return f"{directories}.{spec.extension}"


def _exclusion_lines(spec: Spec, tree: Tree) -> builtins.list[str]:
    """The combinations of conditions the study cannot have, as the README states them (none: no line), at the
    levels some file holds: a crossing of a hard disk, in a tree that holds no hard-disk file, names a component the
    study does not have."""
    excluded = crossings_within(spec.excluded, tree.held_path_variables())
    if not excluded:
        return []

    def levels(column: str, values: tuple[str, ...] | tuple[float, ...]) -> str:
        shown = [f"`{v if isinstance(v, str) else render_number(v)}`" for v in values]
        return f"`{column}` " + (shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} or {shown[-1]}")

    # Not "cannot occur": a design excludes what cannot be made (a 5-machine DMU instance) and what its study did
    # not run (a closed autocracy in Latin America); a reader faulted the stronger claim where it was the latter
    lines = [
        "Some combinations of conditions are not in this study (they cannot be made, or were not run), "
        "and no file holds them:",
        "",
    ]
    for crossing in excluded:
        lines.append("- " + " with ".join(levels(column, values) for column, values in crossing.items()))
    return [*lines, ""]


def render_readme(spec: Spec, tree: Tree | None = None) -> str:
    """The README an agent sees: the title and abstract only when the spec shows them; ``tree``: the repository's
    (built from ``spec`` when not given)."""
    project = spec.project
    lines = [f"# {project.title}" if spec.readme.show_title else f"# {project.repo_name}", ""]
    if spec.readme.show_title and spec.readme.show_abstract:
        lines += ["## Abstract", "", project.abstract, ""]
    template = layout_template(spec, named=True)
    lines += [
        "## Layout",
        "",
        f"Each data file is a `.{spec.extension}` table stored at `{template}`, where",
        "",
        *(f"- {_placeholder_phrase(spec, p)}" for p in spec.template.placeholders),
        "",
        *_exclusion_lines(spec, tree or Tree(spec)),
        f"Field: {spec.context.field}; domain: {spec.context.domain}; area: {spec.context.subdomain}.",
        "",
    ]
    return "\n".join(lines)


def _messy_listings(
    listings: dict[str, builtins.list[tuple[str, bool]]], plan: messes.MessPlan
) -> dict[str, builtins.list[tuple[str, bool]]]:
    """The layout's listings with a messy repository's codebook, ``_v2`` files and ``old/`` copies."""
    children: dict[str, dict[str, bool]] = {folder: dict(entries) for folder, entries in listings.items()}
    children[""][messes.CODEBOOK_NAME] = False
    for logical in plan.v2:
        folder, _, name = logical.rpartition("/")
        children[folder][messes.v2_name(name)] = False
    for physical in plan.stale_copies:
        if physical in plan.v2:
            continue
        parent = ""
        parts = physical.split("/")
        for level, name in enumerate(parts):
            here = f"{parent}/{name}" if parent else name
            children.setdefault(parent, {})[name] = level < len(parts) - 1
            if level < len(parts) - 1:
                children.setdefault(here, {})
            parent = here
    return {folder: sorted(names.items()) for folder, names in children.items()}
