"""The agent's tools as Inspect tools: the MCP server's filesystem tools (same code, same descriptions),
the sandboxed Python tool, for ``tools=shell`` a shell on the mounted repository, and in the ``full`` and
``ask`` conditions of an ambiguous run the clarification channel."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from inspect_ai.tool import Tool, ToolDef, ToolError
from inspect_ai.util import store

from qa.clarify import Exchange, Oracle
from sgfs.agents.mcp.ask import ASK_SAMPLE_DESCRIPTION
from sgfs.agents.mcp.tools import DESCRIPTIONS, RepositoryTools, ToolFailure
from sgfs.agents.pytool import PythonLimits, run_python_async, run_shell_async

# The sample's store key listing the repository files the Python tool's code opened (read by results.py)
PYTHON_FILES_KEY = "sgfs_python_files_opened"
# The sample's store key holding its clarification exchange (qa.clarify.Exchange as a dict; read by the scorer)
ASK_KEY = "sgfs_ask_exchange"
T = TypeVar("T")
PATH = "Path relative to the root, starting with the seed, e.g. 118/data"


def _call(work: Callable[[], T]) -> T:
    try:
        return work()
    except ToolFailure as exc:
        raise ToolError(str(exc)) from None


def filesystem_tools(tools: RepositoryTools) -> list[Tool]:
    """The six read-only tools. Their output is never cut by Inspect (``max_output=0``): reading a whole file
    returns the whole file, as over MCP."""

    async def list_directory(path: str = "") -> str:
        return _call(lambda: tools.list_directory(path))

    async def directory_tree(path: str = "", depth: int = 3) -> str:
        return _call(lambda: tools.directory_tree(path, depth))

    async def read_text_file(path: str, head: int | None = None, tail: int | None = None) -> str:
        return _call(lambda: tools.read_text_file(path, head, tail))

    async def read_binary_file(path: str) -> str:
        return json.dumps(_call(lambda: tools.read_binary_file(path)))

    async def get_file_info(path: str) -> str:
        return _call(lambda: tools.get_file_info(path))

    async def search_files(path: str, pattern: str) -> str:
        return _call(lambda: tools.search_files(path, pattern))

    parameters: dict[str, dict[str, str]] = {
        "list_directory": {"path": PATH},
        "directory_tree": {"path": PATH, "depth": "Levels to descend, 1 = the directory's own entries"},
        "read_text_file": {"path": PATH, "head": "Only the first N lines", "tail": "Only the last N lines"},
        "read_binary_file": {"path": PATH},
        "get_file_info": {"path": PATH},
        "search_files": {"path": PATH, "pattern": "Glob, e.g. *.csv, or with a slash: **/ph_7/*.csv"},
    }
    functions = (list_directory, directory_tree, read_text_file, read_binary_file, get_file_info, search_files)
    return [
        ToolDef(
            function,
            name=function.__name__,
            description=DESCRIPTIONS[function.__name__],
            parameters=parameters[function.__name__],
            max_output=0,
        ).as_tool()
        for function in functions
    ]


def python_tool(cwd: Path, limits: PythonLimits) -> Tool:
    async def run_python_code(code: str) -> str:
        result = await run_python_async(code, cwd, limits)  # a cancelled sample kills its sandbox
        opened: list[str] = store().get(PYTHON_FILES_KEY, [])
        store().set(PYTHON_FILES_KEY, sorted({*opened, *result.files_opened}))
        return result.for_model()

    description = (
        f"Run Python 3 code (numpy, pandas, scipy, openpyxl) in a fresh process whose working directory is the "
        f"repository's root; print what you need. Limits: {limits.timeout_s:g} s, {limits.memory_mb} MB, "
        f"output over {limits.output_bytes} bytes cut, no network, files read-only. "
        "Example: run_python_code(code=\"import pandas as pd; print(pd.read_csv('a/b.csv').shape)\")"
    )
    return ToolDef(
        run_python_code,
        name="run_python_code",
        description=description,
        parameters={"code": "Python source; state is not kept between calls"},
        max_output=0,  # the sandbox already bounds it
    ).as_tool()


def shell_tool(cwd: Path, limits: PythonLimits) -> Tool:
    async def bash(command: str) -> str:
        result = await run_shell_async(command, cwd, limits)
        return result.for_model()

    description = (
        "Run a bash command in the repository's root (a read-only filesystem; ls, cat, head, find, grep, awk, "
        f"python3 work). Limits: {limits.timeout_s:g} s, {limits.memory_mb} MB, output over {limits.output_bytes} "
        "bytes cut, no network. Example: bash(command='find . -name \"*.csv\" | head')"
    )
    return ToolDef(
        bash, name="bash", description=description, parameters={"command": "A bash command line"}, max_output=0
    ).as_tool()


def ask_tool(oracle: Oracle) -> Tool:
    """``ask_clarification(question)``, answered by the sample's own ``oracle``; its exchange is kept in the
    sample's store (``ASK_KEY``) for the scorer."""

    async def ask_clarification(question: str) -> str:
        reply = oracle.ask(question)
        store().set(ASK_KEY, dataclasses.asdict(oracle.exchange))
        return reply

    return ToolDef(
        ask_clarification,
        name="ask_clarification",
        description=ASK_SAMPLE_DESCRIPTION,
        parameters={"question": "One clarifying question, in words"},
    ).as_tool()


def exchange_of(stored: object) -> Exchange:
    """The exchange ``ask_tool`` kept in a sample's store (nothing asked when there is none)."""
    if not isinstance(stored, dict):
        return Exchange()
    return Exchange(bool(stored.get("asked")), stored.get("ask_text"), stored.get("ask_reply"))
