"""The read-only filesystem tools: the framework-free core, then the MCP server through the SDK's own client,
in memory, over stdio (``sgfs mcp`` as a child process) and over streamable HTTP on a free local port."""

from __future__ import annotations

import base64
import contextlib
import functools
import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest

from sgfs.agents.mcp.tools import BINARY_CAP_BYTES, RepositoryTools, ToolFailure, head_lines, resolve, tail_lines
from sgfs.store.source import MountSource
from tests.helpers import repo

mcp = pytest.importorskip("mcp")

CSV_SEED = 34  # 15 files, csv, with a README
XLSX_SEED = 22  # 16 files, xlsx
CSV_FILE = "quinn_aggregation=SKUstore/forecast_model=ARIMA/horizon_wk=4.csv"
TOP = CSV_FILE.split("/")[0]
XLSX_FILE = "BKumar/n_system=cropsoil/oxygen_condition=hypoxic.xlsx"
TOOL_NAMES = {"list_directory", "directory_tree", "read_text_file", "read_binary_file", "get_file_info", "search_files"}
SGFS = [sys.executable, "-c", "import sys; from sgfs.cli import main; sys.argv[0] = 'sgfs'; main()"]


def tools() -> RepositoryTools:
    return RepositoryTools(MountSource([CSV_SEED, XLSX_SEED]))


def failure(call: Callable[[], object]) -> str:
    with pytest.raises(ToolFailure) as caught:
        call()
    return str(caught.value)


# -- the framework-free tools ----------------------------------------------------------------------------
def test_resolve_paths() -> None:
    assert resolve("").shown == "" and resolve("/").mount == "/"
    assert resolve("/34/./a//b.csv").shown == "34/a/b.csv"
    assert resolve("34/a/../b").mount == "/34/b"
    assert "escapes the root" in failure(lambda: resolve("../etc/passwd"))
    assert "escapes the root" in failure(lambda: resolve("34/../../x"))
    for bad in ("abc/x", "007", "-1/a", str(2**63)):
        assert "bad seed" in failure(functools.partial(resolve, bad)), bad


def test_head_and_tail_are_exact_slices() -> None:
    text = "a\nb\nc\n"
    assert [head_lines(text, n) for n in range(5)] == ["", "a\n", "a\nb\n", text, text]
    assert [tail_lines(text, n) for n in range(5)] == ["", "c\n", "b\nc\n", text, text]
    assert tail_lines("a\nb", 1) == "b" and head_lines("a\nb", 1) == "a\n"
    assert head_lines("", 3) == "" == tail_lines("", 3)


def test_reads_are_the_bytes_of_sgfs_cat() -> None:
    t = tools()
    data = repo(CSV_SEED).read(CSV_FILE)
    text = data.decode()
    assert t.read_text_file(f"{CSV_SEED}/{CSV_FILE}") == text
    assert t.read_text_file(f"/{CSV_SEED}/{CSV_FILE}", head=3) == "".join(text.splitlines(keepends=True)[:3])
    assert t.read_text_file(f"{CSV_SEED}/{CSV_FILE}", tail=2) == "".join(text.splitlines(keepends=True)[-2:])
    assert t.read_text_file(f"{CSV_SEED}/{CSV_FILE}", head=0) == ""
    binary = t.read_binary_file(f"{XLSX_SEED}/{XLSX_FILE}")
    raw = repo(XLSX_SEED).read(XLSX_FILE)
    assert base64.b64decode(binary["base64"]) == raw and binary["size"] == len(raw)
    assert binary["mime_type"].endswith("spreadsheetml.sheet")
    assert t.read_binary_file(f"{CSV_SEED}/README.md")["mime_type"] == "text/markdown"


def test_listing_tree_info_and_search() -> None:
    t = tools()
    r = repo(CSV_SEED)
    top = r.list("")
    assert t.list_directory(str(CSV_SEED)).splitlines() == [("[DIR] " if e.is_dir else "[FILE] ") + e.name for e in top]
    assert t.list_directory("/").splitlines() == [f"[DIR] {CSV_SEED}", f"[DIR] {XLSX_SEED}"]
    assert "no seeds" in RepositoryTools(MountSource([])).list_directory("")
    tree = json.loads(t.directory_tree(str(CSV_SEED), depth=10))

    def files(nodes: list[dict[str, Any]], prefix: str) -> list[str]:
        out: list[str] = []
        for node in nodes:
            path = prefix + node["name"]
            out += files(node["children"], path + "/") if node["type"] == "directory" else [path]
        return out

    assert sorted(files(tree, "")) == sorted(r.file_paths())
    shallow = json.loads(t.directory_tree(str(CSV_SEED), depth=1))
    assert [n["name"] for n in shallow] == [e.name for e in top] and all("children" not in n for n in shallow)
    info = t.get_file_info(f"{CSV_SEED}/{CSV_FILE}")
    assert f"size: {len(r.read(CSV_FILE))} bytes" in info and "type: file" in info and "r--r--r--" in info
    assert "type: directory" in t.get_file_info(str(CSV_SEED))
    csvs = t.search_files(str(CSV_SEED), "*.csv").splitlines()
    assert sorted(csvs) == sorted(f"{CSV_SEED}/{p}" for p in r.file_paths() if p.endswith(".csv"))
    deep = t.search_files(f"{CSV_SEED}/{TOP}", "**/horizon_wk=*.csv").splitlines()
    assert sorted(deep) == sorted(f"{CSV_SEED}/{p}" for p in r.file_paths() if p.startswith(f"{TOP}/"))
    assert t.search_files(f"{CSV_SEED}/{TOP}", "*/horizon_wk=4.csv").splitlines() == [
        line for line in deep if line.endswith("/horizon_wk=4.csv") and line.count("/") == 3
    ]
    assert t.search_files(str(CSV_SEED), "quinn_*").splitlines()[0].endswith("/")
    assert "no matches" in t.search_files(str(CSV_SEED), "*.parquet")


def test_tool_errors_are_clear() -> None:
    t = tools()
    assert "no such file or directory: 34/nope.csv" in failure(lambda: t.read_text_file("34/nope.csv"))
    assert "no such file" in failure(lambda: t.list_directory("999/nope"))
    assert "is a directory" in failure(lambda: t.read_text_file(f"34/{TOP}"))
    assert "is a directory" in failure(lambda: t.read_binary_file("/"))
    assert "not a directory" in failure(lambda: t.list_directory(f"34/{CSV_FILE}"))
    assert "not a directory" in failure(lambda: t.search_files(f"34/{CSV_FILE}", "*"))
    assert "head or tail, not both" in failure(lambda: t.read_text_file(f"34/{CSV_FILE}", head=1, tail=1))
    assert ">= 0" in failure(lambda: t.read_text_file(f"34/{CSV_FILE}", head=-1))
    assert "binary" in failure(lambda: t.read_text_file(f"{XLSX_SEED}/{XLSX_FILE}"))
    assert "depth" in failure(lambda: t.directory_tree("34", depth=0))
    assert "pattern is empty" in failure(lambda: t.search_files("34", ""))
    small = RepositoryTools(MountSource([XLSX_SEED]), binary_cap=100)
    assert "over read_binary_file's cap of 100 bytes" in failure(lambda: small.read_binary_file(f"22/{XLSX_FILE}"))
    assert BINARY_CAP_BYTES == 1 << 20


# -- the MCP server, through the SDK's client ------------------------------------------------------------
def run_client(target: object, body: Callable[[Any], Awaitable[None]]) -> None:
    import anyio
    from mcp import Client

    async def main() -> None:
        async with Client(target) as client:  # type: ignore[arg-type]
            await body(client)

    anyio.run(main)


def text(result: Any) -> str:
    assert len(result.content) == 1
    return str(result.content[0].text)


async def check_reads(client: Any) -> None:
    """The checks every transport runs: the tool list, a byte-exact read, an error, and a read after it."""
    listed = await client.list_tools()
    assert {t.name for t in listed.tools} == TOOL_NAMES
    for t in listed.tools:
        assert "Example: " in t.description and len(t.description) < 400, t.name
        assert t.annotations.read_only_hint is True
    full = await client.call_tool("read_text_file", {"path": f"{CSV_SEED}/{CSV_FILE}"})
    assert not full.is_error and text(full) == repo(CSV_SEED).read(CSV_FILE).decode()
    bad = await client.call_tool("read_text_file", {"path": "../secret"})
    assert bad.is_error and "path escapes the root" in text(bad)
    again = await client.call_tool("list_directory", {"path": f"/{CSV_SEED}"})
    assert not again.is_error and "[FILE] README.md" in text(again)


def test_mcp_in_memory() -> None:
    from sgfs.agents.mcp.server import build_server

    async def body(client: Any) -> None:
        await check_reads(client)
        head = await client.call_tool("read_text_file", {"path": f"{CSV_SEED}/{CSV_FILE}", "head": 40})
        assert text(head) == head_lines(repo(CSV_SEED).read(CSV_FILE).decode(), 40)
        binary = await client.call_tool("read_binary_file", {"path": f"{XLSX_SEED}/{XLSX_FILE}"})
        assert base64.b64decode(json.loads(text(binary))["base64"]) == repo(XLSX_SEED).read(XLSX_FILE)
        for arguments, message in (
            ({"path": "34/nope.csv"}, "no such file or directory: 34/nope.csv"),
            ({"path": f"34/{TOP}"}, "is a directory"),
            ({"path": f"34/{CSV_FILE}", "head": 2, "tail": 2}, "head or tail, not both"),
            ({"path": "seventeen/a.csv"}, "bad seed 'seventeen'"),
        ):
            result = await client.call_tool("read_text_file", arguments)
            assert result.is_error and message in text(result), (arguments, text(result))
        tree = await client.call_tool("directory_tree", {"path": str(CSV_SEED), "depth": 1})
        assert [n["name"] for n in json.loads(text(tree))] == [e.name for e in repo(CSV_SEED).list("")]
        info = await client.call_tool("get_file_info", {"path": f"{CSV_SEED}/README.md"})
        assert "type: file" in text(info)
        found = await client.call_tool("search_files", {"path": str(CSV_SEED), "pattern": "README*"})
        assert text(found) == f"{CSV_SEED}/README.md"
        missing_argument = await client.call_tool("read_text_file", {})
        assert missing_argument.is_error

    run_client(build_server(MountSource([CSV_SEED])), body)


def test_mcp_over_stdio() -> None:
    from mcp import StdioServerParameters

    params = StdioServerParameters(command=SGFS[0], args=[*SGFS[1:], "mcp", "--seeds", str(CSV_SEED)])
    cat = subprocess.run([*SGFS, "cat", str(CSV_SEED), CSV_FILE], capture_output=True, check=True, timeout=60)

    async def body(client: Any) -> None:
        await check_reads(client)
        full = await client.call_tool("read_text_file", {"path": f"{CSV_SEED}/{CSV_FILE}"})
        assert text(full).encode() == cat.stdout
        root = await client.call_tool("list_directory", {"path": "/"})
        assert text(root) == f"[DIR] {CSV_SEED}"

    run_client(params, body)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def stderr_line(process: subprocess.Popen[bytes], timeout_s: float) -> str:
    """The first line ``process`` writes on stderr, read byte by byte (nothing after it is taken)."""
    assert process.stderr is not None
    fd, line = process.stderr.fileno(), b""
    deadline = time.monotonic() + timeout_s
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        assert left > 0, f"no line on stderr within {timeout_s} s: {line!r}"
        if select.select([fd], [], [], left)[0]:
            byte = os.read(fd, 1)
            assert byte, f"sgfs mcp ended (exit code {process.wait(10)}) after {line!r}"
            line += byte
    return line.decode()


@contextlib.contextmanager
def http_server(port: int) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``sgfs mcp --transport http`` on 127.0.0.1:PORT, and the URL it printed once listening; always stopped
    (SIGTERM, then SIGKILL)."""
    command = [*SGFS, "mcp", "--transport", "http", "--host", "127.0.0.1", "--port", str(port)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        line = stderr_line(process, 60)
        match = re.fullmatch(r"sgfs mcp: serving on (http://\S+)\n", line)
        assert match, line
        yield match[1], process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)
        if process.stderr is not None:
            process.stderr.close()


def test_mcp_over_http_prints_its_url_once_listening() -> None:
    port = free_port()
    with http_server(port) as (url, process):
        assert url == f"http://127.0.0.1:{port}/mcp"
        with socket.create_connection(("127.0.0.1", port), timeout=5):  # at once: the line came after listen()
            pass
        run_client(url, check_reads)
        process.send_signal(signal.SIGTERM)
        process.wait(10)
        assert process.stderr is not None
        rest = process.stderr.read().decode()
        assert "serving on" not in rest and "Traceback" not in rest, rest  # said once; stopped cleanly


def test_mcp_over_http_on_any_free_port_and_a_busy_one() -> None:
    with http_server(0) as (url, _):
        match = re.fullmatch(r"http://127\.0\.0\.1:(\d+)/mcp", url)
        assert match and int(match[1]) > 0, url
        port = match[1]
        busy = [*SGFS, "mcp", "--transport", "http", "--host", "127.0.0.1", "--port", port]
        result = subprocess.run(busy, capture_output=True, text=True, timeout=60, check=False)
        assert result.returncode == 2
        assert result.stderr.splitlines() == [f"sgfs: error: cannot listen on 127.0.0.1:{port}: Address already in use"]

        async def body(client: Any) -> None:
            listing = await client.call_tool("list_directory", {"path": str(CSV_SEED)})
            assert not listing.is_error and "[FILE] README.md" in text(listing)

        run_client(url, body)


def test_mcp_command_rejects_bad_input() -> None:
    for args in (["--seeds", "abc"], ["--transport", "carrier-pigeon"], ["--port", "65536"]):
        result = subprocess.run([*SGFS, "mcp", *args], capture_output=True, text=True, timeout=60, check=False)
        assert result.returncode == 2, (args, result.stderr)
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("sgfs: error: "), result.stderr


def test_mcp_python_tool() -> None:
    from sgfs.agents.mcp.server import build_server
    from sgfs.agents.pytool import PythonLimits

    async def body(client: Any) -> None:
        listed = await client.list_tools()
        assert {t.name for t in listed.tools} == {*TOOL_NAMES, "run_python_code"}
        code = f"print(len(open({CSV_FILE!r}, 'rb').read()))"
        result = await client.call_tool("run_python_code", {"seed": CSV_SEED, "code": code})
        assert not result.is_error and text(result) == str(len(repo(CSV_SEED).read(CSV_FILE)))
        failing = await client.call_tool("run_python_code", {"seed": CSV_SEED, "code": "1/0"})
        assert "ZeroDivisionError" in text(failing) and "[exit code 1]" in text(failing)
        bad = await client.call_tool("run_python_code", {"seed": -1, "code": "print(1)"})
        assert bad.is_error and "bad seed -1" in text(bad)

    run_client(build_server(MountSource([]), PythonLimits(timeout_s=30)), body)
    run_client(build_server(MountSource([])), check_reads)  # without it, only the six file tools


# -- the counterfactual world and spec packs --------------------------------------------------------------
COUNTERFACTUAL_SEED = 3  # a seed whose counterfactual world turns relations around (tests/cli)


def test_mcp_serves_the_counterfactual_world() -> None:
    """``sgfs mcp --counterfactual`` serves the bytes of ``sgfs cat --counterfactual``, which differ from the plain
    world's for the files over a turned relation."""
    from mcp import StdioServerParameters

    import generators
    from generators.builders.procedural import build_spec
    from generators.repository import Repository
    from generators.spec import World

    seed = COUNTERFACTUAL_SEED
    world = Repository(build_spec(seed, world=World(counterfactual=True)))
    assert world.spec.counterfactual, "the seed must turn some relation around"
    plain = generators.repository(seed)
    changed = [p for p in world.file_paths() if p != "README.md" and world.read(p) != plain.read(p)]
    assert changed
    paths = [*changed[:2], "README.md"]
    cats = {
        path: subprocess.run(
            [*SGFS, "cat", str(seed), path, "--counterfactual"], capture_output=True, check=True, timeout=60
        ).stdout
        for path in paths
    }
    params = StdioServerParameters(command=SGFS[0], args=[*SGFS[1:], "mcp", "--seeds", str(seed), "--counterfactual"])

    async def body(client: Any) -> None:
        root = await client.call_tool("list_directory", {"path": "/"})
        assert text(root) == f"[DIR] {seed}"
        for path in paths:
            result = await client.call_tool("read_binary_file", {"path": f"{seed}/{path}"})
            assert not result.is_error, text(result)
            served = base64.b64decode(json.loads(text(result))["base64"])
            assert served == cats[path] == world.read(path), path
            if path in changed:
                assert served != plain.read(path)

    run_client(params, body)


def test_mcp_serves_a_spec_pack(tmp_path: Any) -> None:
    """``sgfs mcp --specs PACK``: the pack's repositories, its seeds listed at the root; others missing."""
    from mcp import StdioServerParameters

    pack = tmp_path / "p.sgfspack"
    built = [*SGFS, "specs", "build", "1-2", "--backend", "procedural", "--out", str(pack)]
    subprocess.run(built, capture_output=True, check=True, timeout=120)
    params = StdioServerParameters(command=SGFS[0], args=[*SGFS[1:], "mcp", "--specs", str(pack)])
    readme = subprocess.run([*SGFS, "cat", "2", "README.md", "--specs", str(pack)], capture_output=True, timeout=60)

    async def body(client: Any) -> None:
        root = await client.call_tool("list_directory", {"path": "/"})
        assert text(root).splitlines() == ["[DIR] 1", "[DIR] 2"]
        outside = await client.call_tool("list_directory", {"path": "5"})
        assert outside.is_error and "no such file or directory: 5" in text(outside)
        if readme.returncode == 0:
            served = await client.call_tool("read_text_file", {"path": "2/README.md"})
            assert text(served).encode() == readme.stdout

    run_client(params, body)


def test_mcp_refuses_a_world_with_a_pack_in_one_line(tmp_path: Any) -> None:
    for args, message in (
        (["--counterfactual", "--specs", str(tmp_path / "missing.sgfspack")], "not to a spec pack (--specs)"),
        (["--fallback", "procedural"], "--fallback only applies with --specs PACK"),
        (["--specs", str(tmp_path / "missing.sgfspack")], "missing.sgfspack"),
    ):
        result = subprocess.run([*SGFS, "mcp", *args], capture_output=True, text=True, timeout=60, check=False)
        assert result.returncode == 2, (args, result.stderr)
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("sgfs: error: ") and message in lines[0], result.stderr
