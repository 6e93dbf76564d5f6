"""The package's layers, read from every import statement (module level and inside functions alike):
``generators`` <- ``qa`` <- ``sgfs``; inside ``sgfs``: cli -> eval -> agents | mount -> store, never back up,
never sideways between agents and mount, and no private name (``_x``) imported from another package."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Rank of each part of the project: a module may import parts of lower rank, and its own part.
RANKS = {
    "generators": 0,
    "qa": 1,
    "sgfs.errors": 2,
    "sgfs.store": 3,
    "sgfs.mount": 4,
    "sgfs.agents": 4,
    "sgfs.eval": 5,
    "sgfs.cli": 6,
    "sgfs": 7,  # sgfs/__init__.py and __main__.py: the entry point
}


def part_of(module: str) -> str | None:
    """The part (a key of RANKS) ``module`` belongs to; None for a module outside the project."""
    for part in sorted(RANKS, key=len, reverse=True):
        if module == part or module.startswith(part + "."):
            return part
    return None


def project_modules() -> dict[str, Path]:
    modules = {}
    for top in ("generators", "qa", "sgfs"):
        for path in sorted((ROOT / top).rglob("*.py")):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
            modules[name] = path
    return modules


def imports_of(name: str, path: Path) -> list[tuple[str, list[str], int]]:
    """(imported module, names taken from it, line) for every import in the file, relative ones resolved."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, [], node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            found.append((base, [alias.name for alias in node.names], node.lineno))
    return found


def violations() -> list[str]:
    problems = []
    for name, path in project_modules().items():
        own = part_of(name)
        assert own is not None, name
        for target, names, line in imports_of(name, path):
            other = part_of(target)
            if other is None or other == own:
                continue
            where = f"{name}:{line} imports {target}"
            if RANKS[other] >= RANKS[own]:
                problems.append(f"{where}: {other} is not below {own}")
            private = [part for part in target.split(".") if part.startswith("_")]
            private += [n for n in names if n.startswith("_") and not n.startswith("__")]
            if private:
                problems.append(f"{where}: private name(s) {private} cross from {other} into {own}")
    return problems


def test_imports_follow_the_layers() -> None:
    assert violations() == []


@pytest.mark.parametrize(
    ("importer", "statement", "problem"),
    [
        ("sgfs.store.source", "from sgfs.mount.operations import SgfsFilesystem", "is not below"),
        ("sgfs.mount.daemon", "import sgfs.agents.mcp.tools", "is not below"),
        ("sgfs.eval.harness", "from sgfs.cli.mount import unmount_command", "is not below"),
        ("qa.grading", "from sgfs.errors import SgfsError", "is not below"),
        ("generators.synth", "from qa import grading", "is not below"),
        ("sgfs.cli.eval", "from sgfs.eval.runner import _private", "private name"),
        ("sgfs.eval.harness", "from .._x import y", "is not below"),
    ],
)
def test_the_check_catches_an_import_that_runs_back_up(
    importer: str, statement: str, problem: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check itself, on a module with one bad import: it must report it."""
    fake = tmp_path / "fake.py"
    fake.write_text(f"def f() -> None:\n    {statement}\n")
    monkeypatch.setattr(__import__(__name__, fromlist=["x"]), "project_modules", lambda: {importer: fake})
    assert any(problem in line for line in violations()), violations()
