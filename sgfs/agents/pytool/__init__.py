"""The sandboxed Python tool: ``run_python`` with the paper's limits, and local copies of repositories."""

from sgfs.agents.pytool.sandbox import PythonLimits, PythonResult, run_python, run_shell
from sgfs.agents.pytool.workspace import Workspaces, materialise

__all__ = ["PythonLimits", "PythonResult", "Workspaces", "materialise", "run_python", "run_shell"]
