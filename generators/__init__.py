"""The simulator: seed -> spec -> tree -> tables -> bytes. Imports neither ``qa`` nor ``sgfs``."""

from generators.builders.procedural import build_spec
from generators.repository import MAX_SEED, PathNotFound, Repository
from generators.spec import Spec, SpecError

__all__ = ["MAX_SEED", "PathNotFound", "Repository", "Spec", "SpecError", "build_spec", "repository"]


def repository(seed: int) -> Repository:
    """Repository ``seed`` built by the embedded procedural builder."""
    return Repository(build_spec(seed))
