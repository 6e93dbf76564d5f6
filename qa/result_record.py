"""The result record: one graded (question, variant) of an agent run, the one format of ``results.jsonl``
(docs/eval.md). ``sgfs eval`` writes it, the Inspect task's log converter makes it, ``sgfs report`` reads it;
all build it with :meth:`ResultRecord.of`. Records from other harnesses need only the keys of ``REQUIRED_KEYS``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from functools import cache

from qa.clarify import CONDITIONS, Exchange, wrong_target
from qa.grading import TEMPLATE, GradedQuestion, ItemResult, JsonValue, grade
from qa.model import NOT_POSSIBLE, Json, Question
from qa.prior import PriorError, PriorTable, default_table

STATUSES = ("ok", "timeout", "crash", "no_answer")
# The keys every record has (a record converted from an Inspect log has exactly these).
RECORD_KEYS = (
    "id",
    "variant",
    "repeat",
    "seed",
    "type",
    "category",
    "answer_kind",
    "answerable",
    "prior",
    "answer",
    "truth",
    "correct",
    "abstained",
    "status",
    "time_s",
    "usage",
    "tool_calls",
    "files_read",
    "evidence_read",
    "evidence_recall",
    "floors",
)
REQUIRED_KEYS = ("id", "type", "category", "answerable", "correct")
# The keys only ``sgfs eval`` writes (``EvalDetails``).
EVAL_KEYS = ("extracted", "exit_code", "stderr_tail", "evidence_files", "bytes_read", "dirs_listed", "reads_outside")
# The keys of a record made in a condition of ``--ambiguous`` (docs/eval.md, "Ambiguity and clarification"), last
# in the record; a record made without conditions has none of them, as before twins existed.
CONDITION_KEYS = ("condition", "pair", "asked", "ask_text", "ask_reply", "wrong_target")


# The values of a question's ``prior`` (qa.model.Question): a relation of the design the data follow, or one the
# counterfactual world turned around. Questions over no such relation have none (null).
PRIORS = ("consistent", "violating")

# The floor agents graded on every item (docs/eval.md): "not possible" to everything, and the prior table's answer.
FLOORS = ("abstain", "prior")


@cache
def prior_table() -> PriorTable:
    """The prior table shipped with sgfs (``qa.prior.default_table``), read once."""
    return default_table()


def floor_grades(question: GradedQuestion, seed: int) -> dict[str, bool | None]:
    """Whether each floor agent's answer to ``question`` is correct, graded like any answer; the prior floor is
    None on a seed the prior table was learned from (it would know the answer)."""
    try:
        table: PriorTable | None = prior_table()
    except PriorError:  # a shipped table of another question format: no prior floor rather than no run
        table = None
    prior = (
        None if table is None or seed in table.seeds else grade(question, _as_json(table.answer(question.type))).correct
    )
    return {"abstain": grade(question, NOT_POSSIBLE).correct, "prior": prior}


def _as_json(value: str | int | float) -> JsonValue:
    """An answer as an agent's JSON answer file gives it to the grader: numbers exactly as written."""
    return value if isinstance(value, str) else Decimal(str(value))


class ResultRecordError(ValueError):
    """A result record that cannot be read; the message names the record."""


@dataclass(frozen=True)
class EvalDetails:
    """What ``sgfs eval`` records beyond the common keys: the grader's reading, the agent's process and the
    audited mount (``bytes_read``, ``dirs_listed``, ``reads_outside``: None when the run was not audited)."""

    extracted: str | list[str] | None
    exit_code: int | None
    stderr_tail: str | None
    evidence_files: int | None
    bytes_read: int | None
    dirs_listed: list[str] | None
    reads_outside: list[str] | None


@dataclass(frozen=True)
class ResultRecord:
    """One line of ``results.jsonl``. ``correct``/``abstained`` are None only for a sample that failed before it
    was graded; ``files_read``, ``evidence_read`` and ``evidence_recall`` are None when reads were not seen."""

    id: str
    variant: str
    seed: int | None
    type: str
    category: str
    answer_kind: str | None
    answerable: bool
    answer: str | None
    correct: bool | None
    abstained: bool | None
    status: str | None
    time_s: float | None
    usage: dict[str, int] | None
    tool_calls: int | None
    files_read: list[str] | None
    evidence_read: list[str] | None
    evidence_recall: float | None
    details: EvalDetails | None = None  # None for records converted from Inspect logs
    repeat: int = 1  # 1..K with `sgfs eval --repeats K`; records without it are repeat 1
    truth: Json = None  # the question's answer (``not possible`` when unanswerable); None: not recorded
    floors: dict[str, bool | None] | None = None  # ``floor_grades``; None: not recorded
    prior: str | None = None  # the question's ``prior`` (one of ``PRIORS``); None: none, or not recorded
    # With ``--ambiguous``: the condition (one of ``qa.clarify.CONDITIONS``; None for a run without conditions),
    # the twin pair (the full twin's id), the item's clarification exchange and whether the answer took another
    # reading than the intended one (``qa.clarify.wrong_target``; None on full items and ungraded answers).
    condition: str | None = None
    pair: str | None = None
    asked: bool | None = None
    ask_text: str | None = None
    ask_reply: str | None = None
    wrong_target: bool | None = None

    @classmethod
    def of(
        cls,
        question: Question,
        variant: str,
        *,
        answer: str | None,
        correct: bool | None,
        abstained: bool | None,
        status: str,
        time_s: float | None,
        usage: dict[str, int] | None,
        tool_calls: int | None,
        files_read: list[str] | None,
        details: EvalDetails | None = None,
        repeat: int = 1,
        graded: GradedQuestion | None = None,
        condition: str | None = None,
        exchange: Exchange | None = None,
        graded_answer: JsonValue = None,
    ) -> ResultRecord:
        """The record of ``question`` asked in ``variant`` (the ``repeat``-th time): its fields from the question,
        the evidence read and its recall from ``files_read`` (paths inside the question's repository; None: reads
        not seen), and, given the question as the grader reads it (``graded``), the floor agents' grades.

        In a condition of an ambiguous run (``condition``), also the twin pair, the item's ``exchange`` with the
        clarification oracle, and, given ``graded`` and the answer as the grader read it (``graded_answer``; None
        for no answer, or one not counted), whether that answer took an unintended reading."""
        evidence_read: list[str] | None = None
        evidence_recall: float | None = None
        if files_read is not None:
            read = set(files_read)
            evidence_read = [path for path in question.evidence if path in read]
            evidence_recall = len(evidence_read) / len(question.evidence) if question.evidence else None
        channel = exchange if exchange is not None else Exchange()
        if condition is not None and condition not in CONDITIONS:
            raise ValueError(f"unknown condition {condition!r}")
        ambiguity = question.ambiguity
        took_decoy = (
            wrong_target(graded, ambiguity, graded_answer)
            if condition is not None and graded is not None and graded_answer is not None
            else None
        )
        return cls(
            id=question.id,
            variant=variant,
            seed=question.seed,
            type=question.type,
            category=question.category,
            answer_kind=question.answer_kind,
            answerable=question.answerable,
            answer=answer,
            correct=correct,
            abstained=abstained,
            status=status,
            time_s=time_s,
            usage=usage,
            tool_calls=tool_calls,
            files_read=files_read,
            evidence_read=evidence_read,
            evidence_recall=evidence_recall,
            details=details,
            repeat=repeat,
            truth=question.answer if question.answerable else NOT_POSSIBLE,
            floors=None if graded is None else floor_grades(graded, question.seed),
            prior=question.prior,
            condition=condition,
            pair=None if condition is None else (ambiguity.full_id if ambiguity is not None else question.id),
            asked=None if condition is None else channel.asked,
            ask_text=None if condition is None else channel.ask_text,
            ask_reply=None if condition is None else channel.ask_reply,
            wrong_target=took_decoy,
        )

    @property
    def key(self) -> tuple[str, str]:
        """(question id, variant): the question-variant, asked ``repeat`` times."""
        return (self.id, self.variant)

    @property
    def unit(self) -> tuple[str, str, int, str | None]:
        """(question id, variant, repeat, condition): one record per unit in a run (condition None without
        ``--ambiguous``)."""
        return (self.id, self.variant, self.repeat, self.condition)

    @property
    def reads_outside(self) -> list[str] | None:
        return None if self.details is None else self.details.reads_outside

    def item_result(self) -> ItemResult:
        """The record as a graded item of ``qa.metrics`` (a record not graded counts as wrong)."""
        return ItemResult(
            id=self.id,
            variant=self.variant,
            type=self.type,
            category=self.category,
            answer_kind=self.answer_kind or "",
            answerable=self.answerable,
            correct=bool(self.correct),
            abstained=bool(self.abstained),
            missing=False,
            parsed=self.answer,
            extracted=None,
            expected="" if self.truth is None else str(self.truth),
        )

    def to_json(self) -> dict[str, Json]:
        """The record as ``results.jsonl`` holds it (the keys of ``EvalDetails`` only when it has them)."""
        d = self.details
        usage: Json = None if self.usage is None else dict(self.usage)
        pairs: list[tuple[str, Json]] = [
            ("id", self.id),
            ("variant", self.variant),
            ("repeat", self.repeat),
            ("seed", self.seed),
            ("type", self.type),
            ("category", self.category),
            ("answer_kind", self.answer_kind),
            ("answerable", self.answerable),
            ("prior", self.prior),
            ("answer", self.answer),
            ("truth", self.truth),
            *([("extracted", _copy(d.extracted))] if d else []),
            ("correct", self.correct),
            ("abstained", self.abstained),
            ("status", self.status),
            *([("exit_code", d.exit_code), ("stderr_tail", d.stderr_tail)] if d else []),
            ("time_s", self.time_s),
            ("usage", usage),
            ("tool_calls", self.tool_calls),
            *([("evidence_files", d.evidence_files)] if d else []),
            ("files_read", _copy(self.files_read)),
            *([("bytes_read", d.bytes_read), ("dirs_listed", _copy(d.dirs_listed))] if d else []),
            *([("reads_outside", _copy(d.reads_outside))] if d else []),
            ("evidence_read", _copy(self.evidence_read)),
            ("evidence_recall", self.evidence_recall),
            ("floors", None if self.floors is None else dict(self.floors)),
        ]
        if self.condition is not None:
            pairs += [
                ("condition", self.condition),
                ("pair", self.pair),
                ("asked", self.asked),
                ("ask_text", self.ask_text),
                ("ask_reply", self.ask_reply),
                ("wrong_target", self.wrong_target),
            ]
        return dict(pairs)

    @classmethod
    def from_json(cls, obj: Mapping[str, Json]) -> ResultRecord:
        """A record as read from ``results.jsonl``: the keys of ``REQUIRED_KEYS`` must be there, the others may
        be absent (null); a value of the wrong type is a ResultRecordError."""
        missing = [key for key in REQUIRED_KEYS if key not in obj]
        if missing:
            raise ResultRecordError(f"record {obj.get('id')} lacks {', '.join(missing)}")
        read = _Reader(obj)
        variant = obj.get("variant", TEMPLATE)
        details = None
        if any(key in obj for key in EVAL_KEYS):
            extracted = obj.get("extracted")
            details = EvalDetails(
                extracted=extracted if isinstance(extracted, str) else read.strings("extracted"),
                exit_code=read.integer("exit_code"),
                stderr_tail=read.text("stderr_tail"),
                evidence_files=read.integer("evidence_files"),
                bytes_read=read.integer("bytes_read"),
                dirs_listed=read.strings("dirs_listed"),
                reads_outside=read.strings("reads_outside"),
            )
        return cls(
            id=str(obj["id"]),
            variant=str(variant),
            seed=read.integer("seed"),
            type=str(obj["type"]),
            category=str(obj["category"]),
            answer_kind=read.text("answer_kind"),
            answerable=bool(obj["answerable"]),
            answer=read.text("answer"),
            correct=read.flag("correct"),
            abstained=read.flag("abstained"),
            status=read.text("status"),
            time_s=read.number("time_s"),
            usage=read.counts("usage"),
            tool_calls=read.integer("tool_calls"),
            files_read=read.strings("files_read"),
            evidence_read=read.strings("evidence_read"),
            evidence_recall=read.number("evidence_recall"),
            details=details,
            repeat=read.repeat(),
            truth=read.truth(),
            floors=read.floors(),
            prior=read.prior(),
            condition=read.condition(),
            pair=read.text("pair"),
            asked=read.boolean("asked"),
            ask_text=read.text("ask_text"),
            ask_reply=read.text("ask_reply"),
            wrong_target=read.boolean("wrong_target"),
        )


def _copy(values: str | list[str] | None) -> Json:
    return list(values) if isinstance(values, list) else values


class _Reader:
    """Typed reads of a record's optional keys: absent or null is None, a value of another type an error."""

    def __init__(self, obj: Mapping[str, Json]) -> None:
        self.obj = obj

    def _error(self, key: str) -> ResultRecordError:
        return ResultRecordError(f"record {self.obj.get('id')} has an invalid {key!r}")

    def text(self, key: str) -> str | None:
        value = self.obj.get(key)
        if value is None or isinstance(value, str):
            return value
        raise self._error(key)

    def flag(self, key: str) -> bool | None:
        value = self.obj.get(key)
        return None if value is None else bool(value)

    def integer(self, key: str) -> int | None:
        value = self.obj.get(key)
        if value is None or (isinstance(value, int) and not isinstance(value, bool)):
            return value
        raise self._error(key)

    def number(self, key: str) -> float | None:
        value = self.obj.get(key)
        if value is None:
            return None
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        raise self._error(key)

    def repeat(self) -> int:
        value = self.integer("repeat")
        if value is None:
            return 1
        if value < 1:
            raise self._error("repeat")
        return value

    def truth(self) -> Json:
        value = self.obj.get("truth")
        if value is None or (isinstance(value, str | int | float) and not isinstance(value, bool)):
            return value
        raise self._error("truth")

    def prior(self) -> str | None:
        """The question's prior: absent (a record of an older sgfs or another harness) or null is None."""
        value = self.obj.get("prior")
        if value is None or value in PRIORS:
            return value if isinstance(value, str) else None
        raise self._error("prior")

    def condition(self) -> str | None:
        """The condition of an ambiguous run: absent (any other run) or null is None."""
        value = self.obj.get("condition")
        if value is None or value in CONDITIONS:
            return value if isinstance(value, str) else None
        raise self._error("condition")

    def boolean(self, key: str) -> bool | None:
        value = self.obj.get(key)
        if value is None or isinstance(value, bool):
            return value
        raise self._error(key)

    def floors(self) -> dict[str, bool | None] | None:
        value = self.obj.get("floors")
        if value is None:
            return None
        if isinstance(value, dict) and all(v is None or isinstance(v, bool) for v in value.values()):
            return {name: v for name, v in value.items() if v is None or isinstance(v, bool)}
        raise self._error("floors")

    def strings(self, key: str) -> list[str] | None:
        value = self.obj.get(key)
        if value is None:
            return None
        if isinstance(value, list) and all(isinstance(item, str) for item in value):
            return [item for item in value if isinstance(item, str)]
        raise self._error(key)

    def counts(self, key: str) -> dict[str, int] | None:
        value = self.obj.get(key)
        if value is None:
            return None
        if isinstance(value, dict):
            counts = {name: n for name, n in value.items() if isinstance(n, int) and not isinstance(n, bool)}
            if len(counts) == len(value):
                return counts
        raise self._error(key)
