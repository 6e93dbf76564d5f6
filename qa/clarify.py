"""The clarification oracle of the ``ask`` condition and the wrong-target check (docs/eval.md, "Ambiguity").

After Ambig-DS (its section 4.4): the oracle is truthful, scoped and one-shot. It answers a question about the
item's open decision with the twin's clarification text and anything else with a fixed refusal; an item allows
one question, and a second is refused. Whether a question is about the open decision is decided without a
model, deterministically: it is when it contains one of the twin's ``keywords`` as a word. A fully specified
item (the full twin) has nothing open: any question about it gets ``NOTHING_OPEN``, and counts as asked.

Every interface (``sgfs eval``'s ``$SGFS_ASK``, the MCP server and the Inspect task's ``ask_clarification``)
asks through one :class:`Oracle` per item, so all give the same replies and record the same fields.
"""

from __future__ import annotations

import dataclasses
import re
import threading
from dataclasses import dataclass
from decimal import Decimal

from qa.grading import GradedQuestion, JsonValue, grade
from qa.model import Ambiguity

# The three conditions of Ambig-DS: the full twin (with the channel: asking there is over-asking), the ambiguous
# twin without a channel, and the ambiguous twin with it.
CONDITIONS = ("full", "ambig", "ask")
WITH_CHANNEL = frozenset({"full", "ask"})
MAX_QUESTION_CHARS = 2000  # a clarifying question longer than this is cut (the paper asks for under 50 words)
REFUSAL = "I can only clarify what this question leaves open; I cannot answer that."
NOTHING_OPEN = "Nothing in this question is left open: answer it as it is written."
ONE_QUESTION = "Only one clarifying question is allowed for each question; this one is not answered."
EMPTY = "Ask one question in words."
_WORD = re.compile(r"[\w.+-]+")


def calibration(ask_rate_ambiguous: float | None, ask_rate_full: float | None) -> float | None:
    """The calibration of asking (docs/eval.md): the harmonic mean of the ask rate on ambiguous items (``ask``)
    and the rate of not asking on full ones, 1 − ``ask_rate_full``, as F1 is of precision and recall. 1 for an
    agent that asks exactly when something is open; 0 when it never asks, or always asks; None when a rate is
    undefined (a condition not run)."""
    if ask_rate_ambiguous is None or ask_rate_full is None:
        return None
    restraint = 1.0 - ask_rate_full
    total = ask_rate_ambiguous + restraint
    return 0.0 if total == 0 else 2 * ask_rate_ambiguous * restraint / total


def in_scope(ambiguity: Ambiguity, text: str) -> bool:
    """Whether ``text`` asks about the open decision: one of the twin's keywords appears in it as a word (a keyword
    of several words, as a phrase), case and punctuation aside."""
    words = " " + " ".join(_WORD.findall(text.lower())) + " "
    return any(f" {' '.join(_WORD.findall(keyword.lower()))} " in words for keyword in ambiguity.keywords)


def reply(ambiguity: Ambiguity | None, text: str) -> str:
    """The oracle's reply to one question about an item (its twin's ``ambiguity``; None for a full item)."""
    if not text.strip():
        return EMPTY
    if ambiguity is None:
        return NOTHING_OPEN
    return ambiguity.clarification if in_scope(ambiguity, text) else REFUSAL


@dataclass(frozen=True)
class Exchange:
    """What an item's record keeps of its channel: whether the agent asked, its first question and the reply."""

    asked: bool = False
    ask_text: str | None = None
    ask_reply: str | None = None


class Oracle:
    """The channel of one item: the first question is answered by :func:`reply` and recorded; every later one
    gets ``ONE_QUESTION``. Thread-safe: the harness serves it from its own thread."""

    def __init__(self, ambiguity: Ambiguity | None) -> None:
        self.ambiguity = ambiguity
        self._lock = threading.Lock()
        self._exchange = Exchange()

    def ask(self, text: str) -> str:
        text = text[:MAX_QUESTION_CHARS]
        with self._lock:
            if self._exchange.asked:
                return ONE_QUESTION
            if not text.strip():
                return EMPTY  # not a question: it does not use up the item's one question
            answer = reply(self.ambiguity, text)
            self._exchange = Exchange(True, text, answer)
            return answer

    @property
    def exchange(self) -> Exchange:
        with self._lock:
            return self._exchange


def as_truth(value: str | int | float) -> str | Decimal:
    # A decoy's answer as the grader reads a record: numbers exactly as written in JSON (repr of a float).
    return value if isinstance(value, str) else Decimal(repr(value))


def decoy_questions(graded: GradedQuestion, ambiguity: Ambiguity) -> list[GradedQuestion]:
    """The twin as the grader would read it under each unintended reading: its answer replaced by the decoy's."""
    return [dataclasses.replace(graded, answer=as_truth(decoy.answer)) for decoy in ambiguity.decoy_answers]


def wrong_target(graded: GradedQuestion, ambiguity: Ambiguity | None, answer: JsonValue) -> bool | None:
    """Whether ``answer`` is graded correct under an unintended reading of the twin (and so not under the intended
    one): the agent committed to another reading. None for an item with nothing open."""
    if ambiguity is None:
        return None
    if grade(graded, answer).correct:
        return False
    return any(grade(decoy, answer).correct for decoy in decoy_questions(graded, ambiguity))
