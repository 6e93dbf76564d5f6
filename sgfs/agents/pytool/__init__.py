"""The sealed Python tool: ``run_python`` in a sandbox with the paper's limits, and local copies of
repositories."""

from sgfs.agents.pytool.sandbox import (
    PythonLimits,
    PythonResult,
    run_python,
    run_python_async,
    run_shell,
    run_shell_async,
    sandbox_problem,
)
from sgfs.agents.pytool.workspace import Workspaces, materialise

__all__ = [
    "PythonLimits",
    "PythonResult",
    "Workspaces",
    "materialise",
    "run_python",
    "run_python_async",
    "run_shell",
    "run_shell_async",
    "sandbox_problem",
]
