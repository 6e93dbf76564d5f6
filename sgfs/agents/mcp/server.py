"""``sgfs mcp``: the read-only filesystem tools served by the official MCP Python SDK (v2, ``MCPServer``)."""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from generators import MAX_SEED
from sgfs.agents.mcp.ask import ASK_DESCRIPTION, ClarificationDesk
from sgfs.agents.mcp.tools import DESCRIPTIONS, RepositoryTools, ToolFailure
from sgfs.errors import SgfsError
from sgfs.store.source import MountSource

if TYPE_CHECKING:
    from sgfs.agents.pytool import PythonLimits

SERVER_NAME = "sgfs"
HTTP_PATH = "/mcp"
INSTRUCTIONS = (
    "Read-only scientific data repositories. The root holds one directory per repository, named by its seed "
    "(an integer, e.g. 118); every path is relative to the root, e.g. 118/README.md. Nothing can be written."
)
ASK_INSTRUCTIONS = (
    " When a question's wording leaves open what to compute, ask_clarification answers one clarifying question "
    "per question id about it."
)
T = TypeVar("T")
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)

PathArg = Annotated[str, Field(description="Path relative to the root, starting with the seed, e.g. 118/data")]


def _guarded(call: Callable[[], T]) -> T:
    """A ToolFailure becomes the SDK's ToolError: an error result with the message, the server keeps going."""
    try:
        return call()
    except ToolFailure as exc:
        raise ToolError(str(exc)) from None


def python_description(limits: PythonLimits) -> str:
    return (
        "Run Python 3 code (numpy, pandas, scipy, openpyxl) in a fresh process whose working directory is "
        f"repository `seed`; print what you need. Limits: {limits.timeout_s:g} s, {limits.memory_mb} MB, output "
        f"over {limits.output_bytes} bytes cut, no network, files read-only, no sgfs. "
        "Example: run_python_code(seed=118, code=\"import pandas as pd; print(pd.read_csv('a/b.csv').shape)\")"
    )


def add_python_tool(server: MCPServer[Any], source: MountSource, limits: PythonLimits) -> None:
    """``run_python_code(seed, code)``: the paper's interpreter, each repository copied locally once."""
    import anyio.to_thread

    from sgfs.agents.pytool import Workspaces, run_python_async

    workspaces = Workspaces(source)

    async def run_python_code(
        seed: Annotated[int, Field(description="The repository to run in, e.g. 118")],
        code: Annotated[str, Field(description="Python source; state is not kept between calls")],
    ) -> str:
        if not 0 <= seed <= MAX_SEED:
            raise ToolError(f"bad seed {seed}: a repository's seed is an integer in [0, 2^63)")
        workspace = await anyio.to_thread.run_sync(lambda: workspaces.path(seed))
        result = await run_python_async(code, workspace, limits)  # a cancelled call kills its sandbox
        return result.for_model()

    annotations = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=False)
    server.add_tool(
        run_python_code,
        name="run_python_code",
        description=python_description(limits),
        annotations=annotations,
        structured_output=False,
    )


def add_ask_tool(server: MCPServer[Any], desk: ClarificationDesk) -> None:
    """``ask_clarification(question_id, question)``: the clarification oracle of each question of ``desk``."""

    def ask_clarification(
        question_id: Annotated[str, Field(description="The id of the question you were asked, e.g. 118-readme-1")],
        question: Annotated[str, Field(description="One clarifying question, in words")],
    ) -> str:
        return _guarded(lambda: desk.ask(question_id, question))

    # Not read-only or idempotent: a question spends the question id's one question.
    annotations = ToolAnnotations(
        read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
    )
    server.add_tool(
        ask_clarification,
        name="ask_clarification",
        description=ASK_DESCRIPTION,
        annotations=annotations,
        structured_output=False,
    )


def build_server(
    source: MountSource, python: PythonLimits | None = None, ask: ClarificationDesk | None = None
) -> MCPServer[Any]:
    """An MCP server whose tools read ``source`` (and run Python on its repositories when ``python`` gives
    the limits, and answer clarifying questions about ``ask``'s questions when given); run it with
    ``run_server`` or connect to it in memory."""
    tools = RepositoryTools(source)
    instructions = INSTRUCTIONS + (ASK_INSTRUCTIONS if ask is not None else "")
    server: MCPServer[Any] = MCPServer(SERVER_NAME, instructions=instructions, log_level="WARNING")

    def list_directory(path: PathArg = "") -> str:
        return _guarded(lambda: tools.list_directory(path))

    def directory_tree(
        path: PathArg = "",
        depth: Annotated[int, Field(description="Levels to descend, 1 = the directory's own entries")] = 3,
    ) -> str:
        return _guarded(lambda: tools.directory_tree(path, depth))

    def read_text_file(
        path: PathArg,
        head: Annotated[int | None, Field(description="Only the first N lines")] = None,
        tail: Annotated[int | None, Field(description="Only the last N lines")] = None,
    ) -> str:
        return _guarded(lambda: tools.read_text_file(path, head, tail))

    def read_binary_file(path: PathArg) -> str:
        return json.dumps(_guarded(lambda: tools.read_binary_file(path)))

    def get_file_info(path: PathArg) -> str:
        return _guarded(lambda: tools.get_file_info(path))

    def search_files(
        path: PathArg,
        pattern: Annotated[str, Field(description="Glob, e.g. *.csv, or with a slash: **/ph_7/*.csv")],
    ) -> str:
        return _guarded(lambda: tools.search_files(path, pattern))

    for function in (list_directory, directory_tree, read_text_file, read_binary_file, get_file_info, search_files):
        name = function.__name__
        server.add_tool(
            function, name=name, description=DESCRIPTIONS[name], annotations=READ_ONLY, structured_output=False
        )
    if python is not None:
        add_python_tool(server, source, python)
    if ask is not None:
        add_ask_tool(server, ask)
    return server


def run_server(
    source: MountSource,
    transport: str,
    host: str,
    port: int,
    python: PythonLimits | None = None,
    ask: ClarificationDesk | None = None,
) -> None:
    """Serve until the client disconnects (stdio) or the process is interrupted (http). Over http, the
    address is taken before anything else (an SgfsError if it cannot be), and once the server listens one
    line on stderr gives its URL: ``sgfs mcp: serving on http://127.0.0.1:8000/mcp``."""
    server = build_server(source, python, ask)
    if transport == "stdio":
        server.run("stdio")
    else:
        serve_http(server, listen(host, port), host)


def listen(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host``:``port`` (port 0: any free one), or an SgfsError saying why not."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as exc:
        raise SgfsError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise SgfsError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock


def url_of(sock: socket.socket) -> str:
    """The streamable-HTTP endpoint a client connects to on ``sock``."""
    host, port = sock.getsockname()[:2]
    return f"http://{f'[{host}]' if ':' in host else host}:{port}{HTTP_PATH}"


def serve_http(server: MCPServer[Any], sock: socket.socket, host: str) -> None:
    """Serve streamable HTTP on the bound ``sock`` until interrupted, saying where once it listens; ``host``
    as given (the SDK guards a loopback address against DNS rebinding)."""
    import uvicorn

    app = server.streamable_http_app(streamable_http_path=HTTP_PATH, host=host)
    url = url_of(sock)

    class AnnouncedServer(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if self.started:
                print(f"sgfs mcp: serving on {url}", file=sys.stderr, flush=True)

    config = uvicorn.Config(app, log_level="warning")
    anyio.run(AnnouncedServer(config).serve, [sock])
