"""``sgfs mcp --questions FILE``: the clarification channel ``ask_clarification(question_id, question)`` over the
SDK's own client, in memory and over stdio (``sgfs mcp`` as a child process), with its ask log."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from qa.clarify import EMPTY, NOTHING_OPEN, ONE_QUESTION, REFUSAL, in_scope
from qa.generate import Options
from qa.records import QuestionRecord, generated_records
from sgfs.agents.mcp.ask import ClarificationDesk
from sgfs.store.source import MountSource
from tests.agents.test_mcp import SGFS, TOOL_NAMES, run_client, text
from tests.helpers import repo

mcp = pytest.importorskip("mcp")

SEED = 34  # its questions at --per-type 1 have two ambiguous twins


@pytest.fixture(scope="module")
def records() -> list[QuestionRecord]:
    return generated_records([repo(SEED)], Options(per_type=1, ambiguous=True))


@pytest.fixture(scope="module")
def questions_file(records: list[QuestionRecord], tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("questions") / "q.jsonl"
    path.write_text("".join(json.dumps(r.question.to_dict()) + "\n" for r in records))
    return path


def twins(records: list[QuestionRecord]) -> list[QuestionRecord]:
    found = [record for record in records if record.question.ambiguity is not None]
    assert len(found) >= 2, "the seed must give two twins"
    return found


def in_scope_question(record: QuestionRecord) -> str:
    ambiguity = record.question.ambiguity
    assert ambiguity is not None
    question = f"Which {ambiguity.keywords[0]} do you mean here?"
    assert in_scope(ambiguity, question)
    return question


OUT_OF_SCOPE = "What is the answer to this question?"


async def check_channel(client: Any, records: list[QuestionRecord]) -> None:
    """The replies of the protocol: the clarification, a refusal, nothing open, one question, an unknown id."""
    listed = await client.list_tools()
    assert {t.name for t in listed.tools} == {*TOOL_NAMES, "ask_clarification"}
    tool = next(t for t in listed.tools if t.name == "ask_clarification")
    assert "One question per question id" in tool.description and "leaves open" in tool.description
    assert tool.annotations.idempotent_hint is False
    first, second = twins(records)[:2]
    full = next(r for r in records if first.question.ambiguity and r.id == first.question.ambiguity.full_id)
    assert first.question.ambiguity is not None and second.question.ambiguity is not None

    async def ask(question_id: str, question: str) -> str:
        result = await client.call_tool("ask_clarification", {"question_id": question_id, "question": question})
        assert not result.is_error, text(result)
        return text(result)

    assert await ask(first.id, in_scope_question(first)) == first.question.ambiguity.clarification
    assert await ask(first.id, in_scope_question(first)) == ONE_QUESTION  # the id's one question is spent
    assert not in_scope(second.question.ambiguity, OUT_OF_SCOPE)
    assert await ask(second.id, OUT_OF_SCOPE) == REFUSAL
    assert await ask(second.id, in_scope_question(second)) == ONE_QUESTION  # a refused question counts too
    assert await ask(full.id, in_scope_question(first)) == NOTHING_OPEN  # over-asking on the full twin
    unknown = await client.call_tool("ask_clarification", {"question_id": "34-nope-9", "question": "mean?"})
    assert unknown.is_error  # one line: the SDK puts "Error executing tool ask_clarification: " before it
    assert text(unknown).endswith(": unknown question id '34-nope-9': give the id of the question you were asked")
    assert "\n" not in text(unknown)
    # The questions file is not reachable through the other tools: the root holds the seeds only.
    root = await client.call_tool("list_directory", {"path": "/"})
    assert text(root) == f"[DIR] {SEED}"


def check_log(log: Path, records: list[QuestionRecord]) -> None:
    first, second = twins(records)[:2]
    assert first.question.ambiguity is not None and second.question.ambiguity is not None
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    full_id = first.question.ambiguity.full_id
    assert [(line["id"], line["pair"], line["asked"], line["recorded"]) for line in lines] == [
        (first.id, full_id, True, True),
        (first.id, full_id, True, False),
        (second.id, second.question.ambiguity.full_id, True, True),
        (second.id, second.question.ambiguity.full_id, True, False),
        (full_id, full_id, True, True),
    ]
    assert lines[0]["ask_text"] == in_scope_question(first)
    assert lines[0]["ask_reply"] == first.question.ambiguity.clarification
    assert [line["ask_reply"] for line in lines[1:]] == [ONE_QUESTION, REFUSAL, ONE_QUESTION, NOTHING_OPEN]


def test_ask_clarification_in_memory(records: list[QuestionRecord], tmp_path: Path) -> None:
    from sgfs.agents.mcp.server import build_server

    log = tmp_path / "asks.jsonl"
    run_client(
        build_server(MountSource([SEED]), ask=ClarificationDesk(records, str(log))), lambda c: check_channel(c, records)
    )
    check_log(log, records)


def test_ask_clarification_over_stdio(records: list[QuestionRecord], questions_file: Path, tmp_path: Path) -> None:
    """``sgfs mcp --questions FILE --ask-log LOG`` offers the tool; without ``--questions`` it is not listed."""
    from mcp import StdioServerParameters

    log = tmp_path / "asks.jsonl"
    args = [*SGFS[1:], "mcp", "--seeds", str(SEED), "--questions", str(questions_file), "--ask-log", str(log)]
    run_client(StdioServerParameters(command=SGFS[0], args=args), lambda c: check_channel(c, records))
    check_log(log, records)

    async def without(client: Any) -> None:
        listed = await client.list_tools()
        assert {t.name for t in listed.tools} == TOOL_NAMES
        result = await client.call_tool("ask_clarification", {"question_id": twins(records)[0].id, "question": "?"})
        assert result.is_error

    run_client(StdioServerParameters(command=SGFS[0], args=[*SGFS[1:], "mcp", "--seeds", str(SEED)]), without)


def test_each_server_has_fresh_oracles(records: list[QuestionRecord]) -> None:
    """One oracle per question id and server: a second server answers the first question again."""
    twin = twins(records)[0]
    question = in_scope_question(twin)
    desk = ClarificationDesk(records)
    assert len(desk) == len(records)
    assert twin.question.ambiguity is not None
    assert desk.ask(twin.id, question) == twin.question.ambiguity.clarification
    assert desk.ask(twin.id, question) == ONE_QUESTION
    fresh = ClarificationDesk(records)
    assert fresh.ask(twin.id, "   ") == EMPTY  # not a question: it does not spend the id's one question
    assert fresh.ask(twin.id, question) == twin.question.ambiguity.clarification


def test_mcp_ask_options_refuse_bad_input(questions_file: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x"}\n')
    for args, message in (
        (["--ask-log", str(tmp_path / "a.jsonl")], "--ask-log only applies with --questions FILE"),
        (["--questions", str(tmp_path / "missing.jsonl")], "cannot read questions file"),
        (["--questions", str(bad)], "bad.jsonl:1"),
        (
            ["--questions", str(questions_file), "--ask-log", str(tmp_path / "no" / "a.jsonl")],
            "cannot write the ask log",
        ),
    ):
        result = subprocess.run([*SGFS, "mcp", *args], capture_output=True, text=True, timeout=60, check=False)
        assert result.returncode == 2, (args, result.stderr)
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("sgfs: error: ") and message in lines[0], result.stderr
