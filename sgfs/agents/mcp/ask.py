"""The clarification channel of ``sgfs mcp --questions FILE``: ``ask_clarification(question_id, question)``,
framework-free (the MCP server wraps it; the Inspect task binds one ``Oracle`` per sample itself).

One ``qa.clarify.Oracle`` per question id of the file, so the channel behaves as in ``sgfs eval`` and the Inspect
task: one question per question id, answered only about what that question leaves open. The questions file
stays in the server: the tool's replies are the oracle's fixed texts and the twin's clarification, nothing else.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from pathlib import Path

from qa.clarify import MAX_QUESTION_CHARS, Oracle
from qa.records import QuestionRecord
from sgfs.agents.mcp.tools import ToolFailure
from sgfs.errors import SgfsError

# What a model reads about the tool, over MCP (with question_id) and in the Inspect task (without: the sample's
# question is the one asked about).
ASK_RULES = (
    "One question per question id: a second one is not answered. It answers only what the question leaves open "
    "(which quantity or which statistic is meant); anything else is refused, and it never reads the data for you."
)
ASK_DESCRIPTION = (
    "Ask one clarifying question about the question you were given (by its id) when its wording leaves open what "
    f"to compute. {ASK_RULES} Example: ask_clarification(question_id='118-univariate_condition-2', "
    "question='Does the typical value mean the mean or the median?')"
)
ASK_SAMPLE_DESCRIPTION = (
    "Ask one clarifying question about the question you were given when its wording leaves open what to compute. "
    f"{ASK_RULES} Example: ask_clarification(question='Does the typical value mean the mean or the median?')"
)


class ClarificationDesk:
    """The oracles of a questions file's records, by question id (thread-safe), and the ask log: every call
    appended to ``log`` as one JSON line ``{"id", "pair", "asked", "ask_text", "ask_reply", "recorded"}``."""

    def __init__(self, records: Sequence[QuestionRecord], log: str | None = None) -> None:
        self._oracles = {record.id: Oracle(record.question.ambiguity) for record in records}
        # The twin pair of each record: the full twin's id (a record without a twin pairs with itself).
        self._pairs = {
            record.id: record.question.ambiguity.full_id if record.question.ambiguity else record.id
            for record in records
        }
        self._log = None if log is None else Path(log)
        self._lock = threading.Lock()
        if self._log is not None:
            try:  # fail at start, not at the first question
                self._log.open("a", encoding="utf-8").close()
            except OSError as exc:
                raise SgfsError(f"cannot write the ask log {log}: {exc.strerror or exc}") from None

    def __len__(self) -> int:
        return len(self._oracles)

    def ask(self, question_id: str, text: str) -> str:
        """The oracle's reply to ``text`` about ``question_id``; an unknown id is a ToolFailure."""
        oracle = self._oracles.get(question_id)
        if oracle is None:
            raise ToolFailure(f"unknown question id {question_id!r}: give the id of the question you were asked")
        with self._lock:  # one call at a time, so that the log's order is the oracle's
            before = oracle.exchange.asked
            reply = oracle.ask(text)
            exchange = oracle.exchange
            if self._log is not None:
                line = {
                    "id": question_id,
                    "pair": self._pairs[question_id],
                    "asked": exchange.asked,  # whether the question id's one question is spent
                    "ask_text": text[:MAX_QUESTION_CHARS],  # as the oracle reads it
                    "ask_reply": reply,
                    "recorded": exchange.asked and not before,  # this is the question id's recorded exchange
                }
                with self._log.open("a", encoding="utf-8") as handle:
                    handle.write(json.dumps(line, ensure_ascii=False) + "\n")
        return reply
