"""The read-only filesystem tools, independent of any agent framework.

Paths are relative to the root that holds one directory per seed (``118/a/b.csv``; a leading ``/`` and ``.``
components are accepted). Every failure the caller can cause is a ``ToolFailure`` whose message is meant for
the model; the bytes returned are exactly those of ``sgfs cat``.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, TypeVar

from sgfs.store.source import GenerationError, MountSource, seed_from_name

T = TypeVar("T")

BINARY_CAP_BYTES = 1 << 20  # read_binary_file refuses larger files (base64 adds a third on top)
TREE_MAX_ENTRIES = 1000  # directory_tree stops listing after this many entries
SEARCH_MAX_RESULTS = 1000  # search_files shows at most this many matches
MAX_TREE_DEPTH = 10
FILE_PERMISSIONS = "r--r--r-- (0444)"
DIR_PERMISSIONS = "r-xr-xr-x (0555)"
MODIFIED = "2024-01-01T00:00:00Z"  # the mount's fixed mtime

MIME_TYPES = {
    "csv": "text/csv",
    "json": "application/json",
    "jsonl": "application/jsonl",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "txt": "text/plain",
    "log": "text/plain",
    "md": "text/markdown",
}


class ToolFailure(Exception):
    """A failure the model caused or can act on; the message is shown to it as the tool's error."""


@dataclass(frozen=True)
class Resolved:
    shown: str  # as the model writes it: "118/a/b.csv", "" for the root
    mount: str  # as MountSource takes it: "/118/a/b.csv"


def resolve(path: str) -> Resolved:
    """Normalise a tool path; refuse one that climbs above the root or names no seed."""
    parts: list[str] = []
    for part in path.replace("\\", "/").split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                raise ToolFailure(f"path escapes the root: {path!r} (paths are relative to the root, e.g. 118/a.csv)")
            parts.pop()
            continue
        parts.append(part)
    if parts and seed_from_name(parts[0]) is None:
        raise ToolFailure(
            f"bad seed {parts[0]!r} in {path!r}: the root holds one directory per repository, named by its seed, "
            "an integer in [0, 2^63) without leading zeros (e.g. 118/data.csv)"
        )
    shown = "/".join(parts)
    return Resolved(shown, "/" + shown)


def head_lines(text: str, count: int) -> str:
    """The first ``count`` lines, as ``head -n``: an exact prefix of ``text``."""
    end = -1
    for _ in range(count):
        end = text.find("\n", end + 1)
        if end == -1:
            return text
    return text[: end + 1]


def tail_lines(text: str, count: int) -> str:
    """The last ``count`` lines, as ``tail -n``: an exact suffix of ``text`` (a final newline ends a line)."""
    if count == 0:
        return ""
    start = len(text) - 1 if text.endswith("\n") else len(text)
    for _ in range(count):
        start = text.rfind("\n", 0, start)
        if start == -1:
            return text
    return text[start + 1 :]


@lru_cache(maxsize=256)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """``*`` and ``?`` stay within one path component, ``**`` crosses them; the rest is literal."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out), re.DOTALL)


# What a model reads about each tool: short, exact, with an example. One text for MCP and for Inspect.
DESCRIPTIONS = {
    "list_directory": (
        "List one directory: one line per entry, [DIR] or [FILE] then the name. "
        "The root lists repositories by seed. Example: list_directory(path='118')"
    ),
    "directory_tree": (
        "Nested JSON of the entries below a directory, down to `depth` levels (1-"
        f"{MAX_TREE_DEPTH}, default 3), each {{name, type, children}}. Example: directory_tree(path='118', depth=2)"
    ),
    "read_text_file": (
        "Return a text file's content exactly; head=N gives only its first N lines, tail=N only its last N "
        "(not both). Example: read_text_file(path='118/run_01.csv', head=40)"
    ),
    "read_binary_file": (
        "Return a file's bytes as base64 in JSON {path, mime_type, size, base64}, for binary files such as .xlsx; "
        f"files over {BINARY_CAP_BYTES} bytes are refused. Example: read_binary_file(path='118/run_01.xlsx')"
    ),
    "get_file_info": (
        "Type, size in bytes, permissions and modification time of a file or directory. "
        "Example: get_file_info(path='118/run_01.csv')"
    ),
    "search_files": (
        "Find files and directories below `path` whose name matches a glob (* and ? within a name); "
        "a pattern with / matches the path below `path` (** spans directories). One path per line. "
        "Example: search_files(path='118', pattern='*.csv')"
    ),
}


class RepositoryTools:
    """``list_directory``, ``directory_tree``, ``read_text_file``, ``read_binary_file``, ``get_file_info`` and
    ``search_files`` over one ``MountSource`` (thread-safe, as the source is)."""

    def __init__(self, source: MountSource, *, binary_cap: int = BINARY_CAP_BYTES) -> None:
        self.source = source
        self.binary_cap = binary_cap

    # -- the tools -------------------------------------------------------------------------------------
    def list_directory(self, path: str = "") -> str:
        where = resolve(path)
        entries = self._listdir(where)
        if not entries:
            if not where.shown:
                return "(the root lists no seeds; any seed still opens by name, e.g. list_directory('118'))"
            return "(empty directory)"
        return "\n".join(f"[DIR] {name}" if is_dir else f"[FILE] {name}" for name, is_dir in entries)

    def directory_tree(self, path: str = "", depth: int = 3) -> str:
        if not 1 <= depth <= MAX_TREE_DEPTH:
            raise ToolFailure(f"depth must be between 1 and {MAX_TREE_DEPTH}, got {depth}")
        where = resolve(path)
        budget = [TREE_MAX_ENTRIES]
        tree = self._tree(where, depth, budget)
        return json.dumps(tree, separators=(",", ":"), ensure_ascii=False)

    def read_text_file(self, path: str, head: int | None = None, tail: int | None = None) -> str:
        if head is not None and tail is not None:
            raise ToolFailure("give head or tail, not both")
        for name, value in (("head", head), ("tail", tail)):
            if value is not None and value < 0:
                raise ToolFailure(f"{name} must be a number of lines >= 0, got {value}")
        where = resolve(path)
        data = self._read(where)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise ToolFailure(
                f"not a text file: {where.shown} is binary; read it with read_binary_file or with code"
            ) from None
        if head is not None:
            return head_lines(text, head)
        if tail is not None:
            return tail_lines(text, tail)
        return text

    def read_binary_file(self, path: str) -> dict[str, Any]:
        where = resolve(path)
        size = self._stat_file(where)
        if size > self.binary_cap:
            raise ToolFailure(
                f"file too large: {where.shown} is {size} bytes, over read_binary_file's cap of "
                f"{self.binary_cap} bytes; read it with code or read_text_file(head=N)"
            )
        data = self._read(where)
        extension = where.shown.rpartition(".")[2].lower() if "." in where.shown.rpartition("/")[2] else ""
        return {
            "path": where.shown,
            "mime_type": MIME_TYPES.get(extension, "application/octet-stream"),
            "size": len(data),
            "base64": base64.b64encode(data).decode("ascii"),
        }

    def get_file_info(self, path: str) -> str:
        where = resolve(path)
        stat = self._call(where, lambda: self.source.stat(where.mount))
        lines = [f"path: {where.shown or '/'}"]
        if stat.is_dir:
            entries = self._listdir(where)
            lines += [
                "type: directory",
                f"entries: {len(entries)} ({sum(d for _, d in entries)} directories)",
                f"permissions: {DIR_PERMISSIONS}",
            ]
        else:
            lines += ["type: file", f"size: {stat.size} bytes", f"permissions: {FILE_PERMISSIONS}"]
        lines.append(f"modified: {MODIFIED}")
        return "\n".join(lines)

    def search_files(self, path: str, pattern: str) -> str:
        if not pattern:
            raise ToolFailure("pattern is empty; give a glob such as *.csv or **/run_*.json")
        where = resolve(path)
        if not self._call(where, lambda: self.source.stat(where.mount)).is_dir:
            raise ToolFailure(f"not a directory: {where.shown}; search_files searches below a directory")
        regex = glob_regex(pattern.strip("/"))
        by_name = "/" not in pattern.strip("/")
        found: list[str] = []
        more = False
        for relative, is_dir in self._walk(where, ""):
            subject = relative.rpartition("/")[2] if by_name else relative
            if regex.fullmatch(subject):
                if len(found) == SEARCH_MAX_RESULTS:
                    more = True
                    break
                prefix = f"{where.shown}/" if where.shown else ""
                found.append(prefix + relative + ("/" if is_dir else ""))
        if not found:
            return f"no matches for {pattern!r} under {where.shown or '/'}"
        if more:
            found.append(f"(stopped after {SEARCH_MAX_RESULTS} matches; narrow the pattern or the path)")
        return "\n".join(found)

    # -- internals -------------------------------------------------------------------------------------
    def _call(self, where: Resolved, call: Callable[[], T]) -> T:
        """Run a MountSource call, turning its exceptions into messages for the model."""
        try:
            return call()
        except FileNotFoundError:
            raise ToolFailure(f"no such file or directory: {where.shown}") from None
        except NotADirectoryError:
            raise ToolFailure(f"not a directory: {where.shown} is a file; read it with read_text_file") from None
        except IsADirectoryError:
            raise ToolFailure(f"not a file: {where.shown or '/'} is a directory; list it with list_directory") from None
        except GenerationError as exc:
            raise ToolFailure(f"internal error while generating {where.shown}: {exc}") from None

    def _listdir(self, where: Resolved) -> list[tuple[str, bool]]:
        return self._call(where, lambda: self.source.listdir(where.mount))

    def _stat_file(self, where: Resolved) -> int:
        stat = self._call(where, lambda: self.source.stat(where.mount))
        if stat.is_dir:
            raise ToolFailure(f"not a file: {where.shown or '/'} is a directory; list it with list_directory")
        return stat.size

    def _read(self, where: Resolved) -> bytes:
        size = self._stat_file(where)
        return self._call(where, lambda: self.source.read(where.mount, size, 0))

    def _child(self, where: Resolved, name: str) -> Resolved:
        shown = f"{where.shown}/{name}" if where.shown else name
        return Resolved(shown, "/" + shown)

    def _tree(self, where: Resolved, depth: int, budget: list[int]) -> list[dict[str, Any]]:
        nodes: list[dict[str, Any]] = []
        entries = self._listdir(where)
        for name, is_dir in entries:
            if budget[0] <= 0:
                nodes.append({"name": "...", "type": "truncated", "note": f"over {TREE_MAX_ENTRIES} entries"})
                break
            budget[0] -= 1
            node: dict[str, Any] = {"name": name, "type": "directory" if is_dir else "file"}
            if is_dir and depth > 1:
                node["children"] = self._tree(self._child(where, name), depth - 1, budget)
            nodes.append(node)
        return nodes

    def _walk(self, where: Resolved, relative: str) -> Iterator[tuple[str, bool]]:
        """Every entry below ``where``, depth first in listing order, as (path relative to the start, is_dir)."""
        for name, is_dir in self._listdir(where):
            child = f"{relative}/{name}" if relative else name
            yield child, is_dir
            if is_dir:
                yield from self._walk(self._child(where, name), child)
