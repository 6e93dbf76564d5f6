"""``sgfs mcp``: serve the read-only filesystem tools over MCP (stdio or streamable HTTP)."""

from __future__ import annotations

import click

from qa.records import QuestionsError, read_question_file
from sgfs.cli.options import examples, key_option, specs_options, world_of, world_option
from sgfs.errors import SgfsError
from sgfs.store.repositories import (
    RepositoryFactory,
    check_world,
    keyed_procedural,
    load_key,
    mount_repositories,
    parse_seed_list,
)
from sgfs.store.source import DEFAULT_CACHE_MB, MIB

MCP_HELP = """Serve repositories to an MCP client through read-only filesystem tools.

The root holds one directory per seed; any seed opens by name, and the root lists those given with
--seeds. Tools: list_directory, directory_tree, read_text_file, read_binary_file, get_file_info,
search_files, with --python run_python_code, and with --questions FILE ask_clarification(question_id,
question): one clarifying question per question id, answered only about what that question leaves open
(docs/agents.md). Over http, one line on stderr gives the URL once the server listens.

""" + examples(
    "sgfs mcp --seeds 1-20                 # stdio: the command an MCP client starts",
    "sgfs mcp --seeds 1-20 --python        # also the sandboxed Python tool",
    "sgfs mcp --transport http --port 8000 # prints: sgfs mcp: serving on http://127.0.0.1:8000/mcp",
    "sgfs mcp --transport http --port 0    # any free port (the line says which)",
    "sgfs mcp --seeds 1-20 --key universe.key   # the keyed universe's repositories",
    "sgfs mcp --seeds 1-20 --counterfactual     # the counterfactual world's repositories",
    "sgfs mcp --specs pack.sgfspack              # the repositories of a spec pack (its seeds listed)",
    "sgfs mcp --seeds 1-20 --questions q.jsonl --ask-log asks.jsonl   # the clarification channel",
)


@click.command("mcp", help=MCP_HELP)
@click.option("--seeds", default="", metavar="LIST", help="Seeds listed at the root, e.g. 1-100,118.")
@click.option(
    "--transport",
    type=click.Choice(["stdio", "http"]),
    default="stdio",
    show_default=True,
    help="stdio for a client that starts the server; http for streamable HTTP at http://HOST:PORT/mcp.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on (http).")
@click.option(
    "--port", type=click.IntRange(0, 65535), default=8000, show_default=True, help="Port (http); 0: any free port."
)
@click.option(
    "--cache-mb", type=click.IntRange(0), default=DEFAULT_CACHE_MB, show_default=True, help="File cache size."
)
@click.option(
    "--python",
    "with_python",
    is_flag=True,
    help="Add run_python_code(seed, code): the sandboxed Python tool with the paper's limits (docs/agents.md).",
)
@click.option(
    "--python-timeout", type=click.FloatRange(0, min_open=True), default=60.0, show_default=True, help="Seconds."
)
@click.option(
    "--python-memory-mb",
    type=click.IntRange(64),
    default=512,
    show_default=True,
    help="Memory limit of one call: all its processes together.",
)
@click.option(
    "--python-unsealed",
    is_flag=True,
    help="Run the Python tool without its sandbox (for machines without bubblewrap): UNSEALED, the code sees "
    "the host, sgfs included, and can read the truth. Without it, --python refuses to start where no sandbox can.",
)
@click.option(
    "--questions",
    "questions_file",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="Add ask_clarification(question_id, question) for the questions of FILE (sgfs qa, twins included). "
    "Serve without it for the ambig condition: no channel.",
)
@click.option(
    "--ask-log",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="Append every clarifying question and its reply to FILE, one JSON line each (needs --questions).",
)
@specs_options
@key_option
@world_option
def mcp_command(
    seeds: str,
    transport: str,
    host: str,
    port: int,
    cache_mb: int,
    with_python: bool,
    python_timeout: float,
    python_memory_mb: int,
    python_unsealed: bool,
    questions_file: str | None,
    ask_log: str | None,
    specs: str | None,
    fallback: str | None,
    key_file: str | None,
    counterfactual: bool,
) -> None:
    seed_list = parse_seed_list(seeds) if seeds.strip() else []
    if ask_log is not None and questions_file is None:
        raise SgfsError("--ask-log only applies with --questions FILE")
    world = world_of(counterfactual)
    check_world(specs, world)  # --counterfactual --specs: one line, before anything else is read
    key = load_key(key_file)
    factory: RepositoryFactory
    if specs is None:
        if fallback is not None:
            raise SgfsError("--fallback only applies with --specs PACK")
        factory = keyed_procedural(key, world)
    else:  # as sgfs mount serves a pack: checked whole first, seeds outside it missing unless --fallback
        pack = mount_repositories(specs, fallback, key)
        factory = pack
        seed_list = seed_list or pack.pack.seeds()
    try:
        from sgfs.agents.mcp.server import run_server
    except ImportError as exc:
        raise SgfsError(f"sgfs mcp needs the MCP SDK: pip install 'sgfs[mcp]' ({exc})", exit_code=1) from None
    from sgfs.agents.mcp.ask import ClarificationDesk
    from sgfs.agents.pytool import PythonLimits
    from sgfs.store.source import MountSource

    ask = None
    if questions_file is not None:
        try:
            records = read_question_file(questions_file)
        except QuestionsError as exc:
            raise SgfsError(str(exc)) from None
        ask = ClarificationDesk(records, ask_log)

    python = None
    if with_python:
        from sgfs.agents.pytool import sandbox_problem

        python = PythonLimits(timeout_s=python_timeout, memory_mb=python_memory_mb, isolate=not python_unsealed)
        problem = sandbox_problem(python, "--python-unsealed")
        if problem is not None:
            raise SgfsError(problem)
    run_server(MountSource(seed_list, cache_mb * MIB, factory=factory), transport, host, port, python, ask)
