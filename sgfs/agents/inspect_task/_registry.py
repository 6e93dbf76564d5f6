"""Imported by Inspect through the ``inspect_ai`` entry point: registers the package's tasks."""

from sgfs.agents.inspect_task.task import infinite_science

__all__ = ["infinite_science"]
