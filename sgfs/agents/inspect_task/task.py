"""The ``infinite_science`` task: one sample per question (and wording), the paper's tools, the grader; with
``ambiguous``, the twin pairs in the conditions of Ambig-DS, the clarification channel in ``full`` and ``ask``."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import anyio.to_thread
from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset
from inspect_ai.model import ChatMessageSystem
from inspect_ai.solver import Generate, Solver, TaskState, solver

from generators.spec import World
from qa.clarify import CONDITIONS, WITH_CHANNEL, Oracle
from qa.model import QUESTION_FORMAT
from qa.records import QuestionSource, ambiguity_from_json
from sgfs.agents.inspect_task.dataset import condition_samples, load_questions, parse_conditions, to_samples
from sgfs.agents.inspect_task.scorer import AMBIGUITY_METRICS, SCORER_METRICS, infinite_science_scorer
from sgfs.agents.inspect_task.tools import ask_tool, filesystem_tools, python_tool, shell_tool
from sgfs.agents.mcp.tools import RepositoryTools
from sgfs.agents.pytool import PythonLimits, Workspaces, sandbox_problem
from sgfs.errors import SgfsError
from sgfs.store.repositories import keyed_procedural, load_key, parse_seed_list
from sgfs.store.source import MountSource

TOOL_SETS = ("python", "shell")

ANSWER_FORMAT = (
    'End with your final answer as JSON on the last line: {"answer": "..."}. If the data in the repository '
    'cannot answer the question, answer {"answer": "not possible"}.'
)
# Said only where the tool is offered (the full and ask conditions).
ASK_PROMPT = (
    "If the question leaves open what to compute, you may ask one clarifying question with ask_clarification "
    "before you answer."
)


def system_prompt(seed: int, tools: str, ask: bool = False) -> str:
    if tools == "shell":
        access = (
            f"The repository (seed {seed}) is the working directory of the bash and run_python_code tools, "
            "so a path a/b.csv in the question is the file a/b.csv there."
        )
    else:
        access = (
            f"The repository is the directory {seed}/ of the file tools' root: a path a/b.csv in the question is "
            f"{seed}/a/b.csv for list_directory, read_text_file and the other file tools, and a/b.csv in "
            "run_python_code, whose working directory is the repository."
        )
    return (
        "You answer a question about a scientific data repository, using only what its files contain. "
        f"{access} Everything is read-only. {ASK_PROMPT + ' ' if ask else ''}{ANSWER_FORMAT}"
    )


@contextlib.contextmanager
def mounted(seed: int, key_file: str | None = None, counterfactual: bool = False) -> Iterator[Path]:
    """``sgfs mount`` of one seed in a temporary directory (in ``key_file``'s universe, in the counterfactual
    world with ``counterfactual``); always unmounted."""
    sgfs = [sys.executable, "-m", "sgfs"]
    keyed = ([] if key_file is None else ["--key", key_file]) + (["--counterfactual"] if counterfactual else [])
    with tempfile.TemporaryDirectory(prefix="sgfs-mnt-") as directory:
        mnt = Path(directory)
        argv = [*sgfs, "mount", str(mnt), "--seeds", str(seed), *keyed]
        result = subprocess.run(argv, capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(f"sgfs mount failed: {result.stderr.strip()}")
        try:
            yield mnt / str(seed)
        finally:
            subprocess.run([*sgfs, "unmount", str(mnt)], capture_output=True, check=False)


@solver
def repository_agent(
    tools: str = "python",
    python_timeout: float = 60.0,
    python_memory_mb: int = 512,
    output_bytes: int = 16384,
    key: str | None = None,
    python_unsealed: bool = False,
    counterfactual: bool = False,
) -> Solver:
    """Gives the model the sample's repository tools and a system prompt, then lets it call tools until it
    answers (Inspect's generate loop). Repositories are copied locally once per seed for the Python tool; with
    ``key`` (a key FILE) they are the keyed universe's, with ``counterfactual`` the counterfactual world's."""
    limits = PythonLimits(
        timeout_s=python_timeout, memory_mb=python_memory_mb, output_bytes=output_bytes, isolate=not python_unsealed
    )
    world = World(counterfactual=counterfactual)
    source = MountSource([], factory=keyed_procedural(load_key(key, warn=False), world))
    file_tools = RepositoryTools(source)
    workspaces = Workspaces(source)

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        seed = int(state.metadata["seed"])
        # The channel, in the full and ask conditions of an ambiguous run: a fresh oracle for this sample.
        channel = []
        if state.metadata.get("condition") in WITH_CHANNEL:
            ambiguity = ambiguity_from_json(state.metadata["record"].get("ambiguity"), f"sample {state.sample_id}")
            channel = [ask_tool(Oracle(ambiguity))]
        state.messages.insert(0, ChatMessageSystem(content=system_prompt(seed, tools, ask=bool(channel))))
        if tools == "shell":
            with contextlib.ExitStack() as stack:
                root = await anyio.to_thread.run_sync(lambda: stack.enter_context(mounted(seed, key, counterfactual)))
                state.tools = [shell_tool(root, limits), python_tool(root, limits), *channel]
                try:
                    return await generate(state)
                finally:
                    await anyio.to_thread.run_sync(stack.close)
        workspace = await anyio.to_thread.run_sync(lambda: workspaces.path(seed))
        state.tools = [*filesystem_tools(file_tools), python_tool(workspace, limits), *channel]
        return await generate(state)

    return solve


@task
def infinite_science(
    seeds: str | int = "1-20",
    variant: str = "template",
    tools: str = "python",
    questions: str | None = None,
    per_type: int = 5,
    unanswerable: float = 0.28,
    python_timeout: float = 60.0,
    python_memory_mb: int = 512,
    output_bytes: int = 16384,
    message_limit: int = 60,
    key: str | None = None,
    python_unsealed: bool = False,
    counterfactual: bool = False,
    ambiguous: bool = False,
    conditions: str | None = None,
) -> Task:
    """InfiniteScienceGym questions over sgfs repositories.

    Args:
        seeds: repositories to ask about, e.g. 1-20 or 3,118 (ignored with `questions`).
        variant: template, paraphrase_1, paraphrase_2, paraphrase_3, or all (one sample per wording).
        tools: python (the paper's setting: the file tools and a sandboxed Python) or shell (bash and Python
            on a real FUSE mount of the repository).
        questions: a questions file written by `sgfs qa` to use instead of generating them.
        per_type: samples of each sampled question type per repository.
        unanswerable: target share of unanswerable questions.
        python_timeout: wall-clock limit of one Python or shell call, seconds.
        python_memory_mb: address-space limit of one Python or shell call.
        output_bytes: output kept from one Python or shell call.
        message_limit: messages per sample before it is stopped.
        key: a universe key FILE (`sgfs key new`): questions and repositories of the keyed universe. The key
            stays in this process and its mount daemon; the model never sees it.
        python_unsealed: run the Python and shell tools without their sandbox (for machines without
            bubblewrap): UNSEALED, the code sees the host, sgfs included. Without it the task refuses to start
            where no sandbox can.
        counterfactual: the counterfactual world (as `sgfs qa --counterfactual`): questions and repositories in
            which some relations of the study design run against their expected direction. A questions file
            must have been made in the same world.
        ambiguous: the ambiguous twins (as `sgfs qa --ambiguous`; a `questions` file must hold both twins of each
            pair): each pair in each of `conditions`, sample ids ID@CONDITION. In full and ask the model also
            gets ask_clarification, one question per sample, answered by the twin's oracle.
        conditions: with `ambiguous`, a comma list of full (the full twin, with the channel), ambig (the twin,
            without) and ask (the twin, with); default all three.
    """
    if tools not in TOOL_SETS:
        raise SgfsError(f"tools must be one of {', '.join(TOOL_SETS)}, got {tools!r}")
    problem = sandbox_problem(PythonLimits(isolate=not python_unsealed), "-T python_unsealed=true")
    if problem is not None:
        raise SgfsError(problem)
    seed_list = parse_seed_list(str(seeds)) if questions is None else []
    universe = load_key(key)
    if not isinstance(counterfactual, bool):  # -T counterfactual=yes arrives as a string
        raise SgfsError(f"counterfactual must be true or false, got {counterfactual!r}")
    if not isinstance(ambiguous, bool):
        raise SgfsError(f"ambiguous must be true or false, got {ambiguous!r}")
    if conditions is not None and not ambiguous:
        raise SgfsError("conditions only applies with -T ambiguous=true")
    chosen = parse_conditions(str(conditions)) if conditions is not None else CONDITIONS
    source = QuestionSource(questions, seed_list, per_type, unanswerable)
    asked = load_questions(source, variant, universe, World(counterfactual=counterfactual), ambiguous)
    samples = condition_samples(asked, chosen) if ambiguous else to_samples(asked)
    return Task(
        dataset=MemoryDataset(samples, name="infinite_science"),
        solver=repository_agent(
            tools, python_timeout, python_memory_mb, output_bytes, key, python_unsealed, counterfactual
        ),
        scorer=infinite_science_scorer(),
        # With twins, also accuracy, ask rate and wrong-target rate per condition (they replace the scorer's own).
        metrics=[*SCORER_METRICS, *AMBIGUITY_METRICS] if ambiguous else None,
        message_limit=message_limit,
        metadata={
            "tools": tools,
            "variant": variant,
            "key_fingerprint": None if universe is None else universe.fingerprint,
            "question_format": QUESTION_FORMAT,  # runs of different formats are never compared
            "counterfactual": counterfactual,  # nor runs of different worlds
            "ambiguous": ambiguous,
            "conditions": list(chosen) if ambiguous else None,
        },
    )
