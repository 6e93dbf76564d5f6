"""The simulator: seed -> spec -> tree -> tables -> bytes. Imports neither ``qa`` nor ``sgfs``."""

from generators.builders.procedural import build_spec
from generators.repository import MAX_SEED, PathNotFound, Repository
from generators.spec import EXTENSIONS, GENERATOR_VERSION, Spec, SpecError

__all__ = [
    "GENERATOR_VERSION",
    "MAX_SEED",
    "PathNotFound",
    "Repository",
    "Spec",
    "SpecError",
    "build_spec",
    "repository",
    "warm_up",
]


def repository(seed: int) -> Repository:
    """Repository ``seed`` built by the embedded procedural builder."""
    return Repository(build_spec(seed))


def warm_up() -> None:
    """Build repositories and synthesise one data file of every format: the modules, data files and caches a
    first synthesis loads are then loaded. A long-lived process (a mount's synthesis workers) calls this once,
    so that its first real request costs what every later one does."""
    formats = set(EXTENSIONS)
    seed = 0
    while formats and seed < 200:  # every format occurs among the first ten seeds
        repo = repository(seed)
        if repo.spec.extension in formats:
            formats.discard(repo.spec.extension)
            if repo.tree.file_paths:
                repo.read(min(repo.tree.file_paths))
        seed += 1
