"""Question records as the harnesses read them (docs/questions.md), and the wordings put to an agent.

One loader for ``sgfs eval`` and the Inspect task: a questions file (``read_question_file``) or the questions
generated for some repositories (``generated_records``) become :class:`QuestionRecord` objects, each the typed
:class:`~qa.model.Question` with the part the grader reads decoded exactly (numbers as written, as Decimal);
``expand_variants`` turns them into the (question, variant) pairs to ask. Nothing here imports ``sgfs``: a
problem is a :class:`QuestionsError` with a one-line message, which the caller reports its own way.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING

from generators.spec import GENERATOR_VERSION, MAX_MESS
from qa.clarify import CONDITIONS
from qa.grading import TEMPLATE, VARIANTS, GradedQuestion, GradingInputError, parse_question
from qa.model import AMBIGUITY_KINDS, DECISIONS, Ambiguity, Decoy, Json, Question

if TYPE_CHECKING:
    from generators import Repository
    from qa.generate import Options

ALL_VARIANTS = "all"
VARIANT_CHOICES = (*VARIANTS, ALL_VARIANTS)
GENERATED = "generated questions"  # the source named in messages about generated questions


class QuestionsError(ValueError):
    """Questions that cannot be used: an unreadable file, a line that is not a question record (the message
    names the file and line), a duplicate id, a variant a question lacks."""


@dataclass(frozen=True)
class QuestionRecord:
    """One question record: the question, and the part of it the grader reads, decoded exactly."""

    question: Question
    graded: GradedQuestion

    @property
    def id(self) -> str:
        return self.question.id

    @classmethod
    def from_line(cls, line: str, where: str) -> QuestionRecord:
        """The record on one line of a questions file; ``where`` (``FILE:LINE``) starts every error message."""
        try:
            exact = json.loads(line, parse_float=Decimal, parse_int=Decimal)
            plain = json.loads(line)
        except ValueError as exc:
            raise QuestionsError(f"{where}: not a JSON object ({exc})") from None
        if not isinstance(plain, dict):
            raise QuestionsError(f"{where}: not a JSON object")
        try:
            graded = parse_question(exact, where)
        except GradingInputError as exc:
            raise QuestionsError(str(exc)) from None
        return cls(question_from_json(plain, graded, where), graded)


def question_line(question: Question) -> str:
    """The line ``sgfs qa`` writes for ``question``."""
    return json.dumps(question.to_dict(), ensure_ascii=False)


def _invalid(where: str, key: str) -> QuestionsError:
    return QuestionsError(f"{where}: question record lacks a valid {key!r}")


def _strings(value: Json) -> list[str] | None:
    """``value`` when it is a list of strings, else None."""
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return [item for item in value if isinstance(item, str)]
    return None


def question_from_json(obj: Mapping[str, Json], graded: GradedQuestion, where: str) -> Question:
    """The typed question of a decoded record whose graded part is ``graded``. Keys outside the record's schema
    are ignored; the optional ones (``unanswerable_reason``, ``query``, ``paraphrases``) may be absent."""
    seed = obj.get("seed")
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise _invalid(where, "seed")
    text = obj.get("question")
    if not isinstance(text, str):
        raise _invalid(where, "question")
    evidence = _strings(obj.get("evidence"))
    if evidence is None:
        raise _invalid(where, "evidence")
    variables = obj.get("variables")
    if not isinstance(variables, dict) or not all(isinstance(v, str) for v in variables.values()):
        raise _invalid(where, "variables")
    answer = obj.get("answer")
    if not isinstance(answer, str | int | float) or isinstance(answer, bool):
        raise _invalid(where, "answer")
    reason = obj.get("unanswerable_reason")
    if reason is not None and not isinstance(reason, str):
        raise _invalid(where, "unanswerable_reason")
    query = obj.get("query", {})
    if not isinstance(query, dict):
        raise _invalid(where, "query")
    paraphrases = _strings(obj.get("paraphrases") or [])
    if paraphrases is None:
        raise _invalid(where, "paraphrases")
    # Records written before the generator version was recorded were made by generator 3.
    generator = obj.get("generator_version", 3)
    if not isinstance(generator, int) or isinstance(generator, bool):
        raise _invalid(where, "generator_version")
    prior = obj.get("prior")
    if prior not in (None, "consistent", "violating"):
        raise _invalid(where, "prior")
    counterfactual = obj.get("counterfactual", False)
    if not isinstance(counterfactual, bool):
        raise _invalid(where, "counterfactual")
    mess = obj.get("mess", 0)
    if not isinstance(mess, int) or isinstance(mess, bool) or not 0 <= mess <= MAX_MESS:
        raise _invalid(where, "mess")
    ambiguity = ambiguity_from_json(obj.get("ambiguity"), where)
    return Question(
        id=graded.id,
        seed=seed,
        category=graded.category,
        type=graded.type,
        question=text,
        variables={name: value for name, value in variables.items() if isinstance(value, str)},
        answer=answer,
        answer_kind=graded.answer_kind,
        choices=None if graded.choices is None else list(graded.choices),
        sig_figs=graded.sig_figs,
        answerable=graded.answerable,
        unanswerable_reason=reason,
        evidence=evidence,
        query=query,
        paraphrases=paraphrases,
        generator_version=generator,
        prior=prior if isinstance(prior, str) else None,
        counterfactual=counterfactual,
        mess=mess,
        ambiguity=ambiguity,
    )


def ambiguity_from_json(value: Json, where: str) -> Ambiguity | None:
    """The ``ambiguity`` of a twin's record (None when absent or null); a malformed one is a QuestionsError."""
    if value is None:
        return None
    bad = _invalid(where, "ambiguity")
    if not isinstance(value, dict):
        raise bad
    texts = {key: value.get(key) for key in ("kind", "decision", "full_id", "open", "intended", "clarification")}
    if not all(isinstance(text, str) and text for text in texts.values()):
        raise bad
    if texts["kind"] not in AMBIGUITY_KINDS or DECISIONS.get(str(texts["decision"])) != texts["kind"]:
        raise bad
    keywords = _strings(value.get("keywords"))
    decoys = value.get("decoy_answers")
    if not keywords or not isinstance(decoys, list) or not decoys:
        raise bad
    parsed: list[Decoy] = []
    for decoy in decoys:
        if not isinstance(decoy, dict):
            raise bad
        reading, answer, query = decoy.get("reading"), decoy.get("answer"), decoy.get("query")
        if not isinstance(reading, str) or not isinstance(query, dict):
            raise bad
        if not isinstance(answer, str | int | float) or isinstance(answer, bool):
            raise bad
        parsed.append(Decoy(reading, answer, query))
    return Ambiguity(
        kind=str(texts["kind"]),
        decision=str(texts["decision"]),
        full_id=str(texts["full_id"]),
        open=str(texts["open"]),
        intended=str(texts["intended"]),
        clarification=str(texts["clarification"]),
        keywords=keywords,
        decoy_answers=parsed,
    )


# -------------------------------------------------------------------------------------------- loading


def parse_question_lines(lines: Iterable[str], source: str) -> list[QuestionRecord]:
    """The records of a questions file's lines (blank lines skipped); ids must be unique, and one at least."""
    records: list[QuestionRecord] = []
    seen: set[str] = set()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{source}:{number}"
        record = QuestionRecord.from_line(line, where)
        if record.id in seen:
            raise QuestionsError(f"{where}: duplicate question id {record.id}")
        seen.add(record.id)
        records.append(record)
    if not records:
        raise QuestionsError(f"no questions in {source}")
    return records


def read_question_lines(path: str) -> list[str]:
    """The lines of a questions file (UTF-8, a byte-order mark allowed), line ends removed."""
    try:
        with open(path, encoding="utf-8-sig") as handle:
            return [line.rstrip("\r\n") for line in handle]
    except (OSError, UnicodeDecodeError) as exc:
        raise QuestionsError(f"cannot read questions file {path}: {getattr(exc, 'strerror', None) or exc}") from None


def read_question_file(path: str) -> list[QuestionRecord]:
    """The records of a questions file written by ``sgfs qa``."""
    return parse_question_lines(read_question_lines(path), path)


def find_in_file(path: str, question_id: str) -> QuestionRecord | None:
    """The record of ``question_id`` in a questions file (only that line is checked), None when absent."""
    for number, line in enumerate(read_question_lines(path), 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            obj = json.loads(line)
        except ValueError as exc:
            raise QuestionsError(f"{where}: not a JSON object ({exc})") from None
        if isinstance(obj, dict) and obj.get("id") == question_id:
            return QuestionRecord.from_line(line, where)
    return None


def generated_records(
    repositories: Iterable[Repository], options: Options, on_repository: Callable[[], None] | None = None
) -> list[QuestionRecord]:
    """The records ``sgfs qa`` would write for ``repositories``; ``on_repository`` is called after each."""
    from qa.generate import generate  # scipy is heavy: imported only when questions are generated

    lines: list[str] = []
    for repository in repositories:
        lines += [question_line(question) for question in generate(repository, options)]
        if on_repository is not None:
            on_repository()
    return parse_question_lines(lines, GENERATED)


# ------------------------------------------------------------------------------------------- variants


@dataclass(frozen=True)
class AskedQuestion:
    """One wording (variant) of a question, as put to an agent."""

    record: QuestionRecord
    variant: str

    @property
    def question(self) -> Question:
        return self.record.question

    @property
    def graded(self) -> GradedQuestion:
        return self.record.graded

    @property
    def id(self) -> str:
        return self.record.id

    @property
    def seed(self) -> int:
        return self.question.seed

    @property
    def key(self) -> tuple[str, str]:
        """What identifies a result: (question id, variant)."""
        return (self.id, self.variant)

    @property
    def sample_id(self) -> str:
        """The id of its Inspect sample: the question id, with the variant after a colon unless templated."""
        return self.id if self.variant == TEMPLATE else f"{self.id}:{self.variant}"

    def text(self) -> str:
        """The question as asked in this variant, ``{name}`` placeholders filled (paths relative to the repo)."""
        return render(wording(self.question, self.variant), self.question.variables)


def wording(question: Question, variant: str) -> str:
    """The text of one variant, placeholders unfilled."""
    if variant == TEMPLATE:
        return question.question
    return question.paraphrases[paraphrase_number(variant) - 1]


def paraphrase_number(variant: str) -> int:
    return int(variant.rpartition("_")[2])


def render(text: str, variables: Mapping[str, str]) -> str:
    """``text`` with its ``{name}`` placeholders filled in (other braces left alone)."""
    for name, value in variables.items():
        text = text.replace("{" + name + "}", value)
    return text


def variants_of(choice: str) -> tuple[str, ...]:
    """The variants a ``--variant`` choice names: one of ``VARIANTS``, or every one for ``all``."""
    if choice == ALL_VARIANTS:
        return VARIANTS
    if choice not in VARIANTS:
        raise QuestionsError(f"variant must be one of {', '.join(VARIANT_CHOICES)}, got {choice!r}")
    return (choice,)


def expand_variants(records: Sequence[QuestionRecord], variants: Sequence[str]) -> list[AskedQuestion]:
    """Every record in every variant, variants of one question together, in order."""
    asked = []
    for record in records:
        for variant in variants:
            if variant != TEMPLATE and len(record.question.paraphrases) < paraphrase_number(variant):
                raise QuestionsError(f"question {record.id} has no {variant}")
            asked.append(AskedQuestion(record, variant))
    return asked


@dataclass(frozen=True)
class QuestionSource:
    """Where a run's questions come from: a questions file, else the questions generated for ``seeds``."""

    questions_file: str | None
    seeds: Sequence[int]
    per_type: int
    unanswerable: float


def check_generated_for(records: Sequence[QuestionRecord], source: str, counterfactual: bool, mess: int = 0) -> None:
    """Questions read from a file hold for the repositories of the generator and the world that made them: refuse
    them (one QuestionsError) when this sgfs would serve other repositories."""
    for record in records:
        made = record.question.generator_version
        if made != GENERATOR_VERSION:
            raise QuestionsError(
                f"{source}: question {record.id} was made by generator version {made}; this sgfs generates version "
                f"{GENERATOR_VERSION}, whose repositories differ (make the questions again with sgfs qa)"
            )
        if record.question.counterfactual != counterfactual:
            world = "the counterfactual world" if record.question.counterfactual else "the plain world"
            raise QuestionsError(
                f"{source}: question {record.id} was made in {world}: "
                + ("add --counterfactual" if record.question.counterfactual else "drop --counterfactual")
            )
        if record.question.mess != mess:
            raise QuestionsError(
                f"{source}: question {record.id} was made with --mess {record.question.mess}, not --mess {mess}: "
                f"use --mess {record.question.mess}"
            )


def load_asked_questions(
    source: QuestionSource,
    variant: str,
    repository_for: Callable[[int], Repository],
    on_repository: Callable[[], None] | None = None,
    counterfactual: bool = False,
    mess: int = 0,
    ambiguous: bool = False,
) -> list[AskedQuestion]:
    """The (question, variant) pairs of a run, in order: ``variant`` is checked first, then the questions are
    read or generated (``repository_for`` makes each seed's repository; with their ambiguous twins when
    ``ambiguous``)."""
    variants = variants_of(variant)
    if source.questions_file is not None:
        records = read_question_file(source.questions_file)
        check_generated_for(records, source.questions_file, counterfactual, mess)
    else:
        from qa.generate import Options

        options = Options(
            per_type=source.per_type,
            unanswerable=source.unanswerable,
            ambiguous=ambiguous,
            counterfactual=counterfactual,
        )
        records = generated_records(map(repository_for, source.seeds), options, on_repository)
    return expand_variants(records, variants)


# ----------------------------------------------------------------------------------------- conditions


def parse_conditions(text: str, name: str) -> tuple[str, ...]:
    """The conditions a comma list names (``full,ambig,ask``), in the order of ``qa.clarify.CONDITIONS``; a
    QuestionsError naming the option ``name`` when one is unknown or none is named."""
    names = {part.strip() for part in text.split(",") if part.strip()}
    unknown = sorted(names - set(CONDITIONS))
    if unknown or not names:
        shown = ", ".join(unknown) if unknown else repr(text)
        raise QuestionsError(f"{name} must be a comma list of {', '.join(CONDITIONS)}, got {shown}")
    return tuple(condition for condition in CONDITIONS if condition in names)


def twin_conditions(
    asked: Sequence[AskedQuestion], conditions: Sequence[str], where: str
) -> list[tuple[AskedQuestion, str]]:
    """The twin pairs among ``asked`` in each of ``conditions``, in order: for each ambiguous twin and wording,
    its full twin's item in ``full`` and its own in ``ambig`` and ``ask``. Questions without a twin are left out;
    no twin at all, or a twin whose full twin is missing or itself ambiguous, is a QuestionsError (``where``
    names the questions)."""
    by_key = {item.key: item for item in asked}
    items: list[tuple[AskedQuestion, str]] = []
    for item in asked:
        ambiguity = item.question.ambiguity
        if ambiguity is None:
            continue
        full = by_key.get((ambiguity.full_id, item.variant))
        if full is None:
            raise QuestionsError(
                f"{where}: question {item.id} is an ambiguous twin of {ambiguity.full_id}, which is not among "
                f"them ({item.variant}): the full twin must be there too, as sgfs qa --ambiguous writes it"
            )
        if full.question.ambiguity is not None:
            raise QuestionsError(f"{where}: the full twin {full.id} of {item.id} is itself ambiguous")
        items += [(full if condition == "full" else item, condition) for condition in conditions]
    if not items:
        raise QuestionsError(
            f"no ambiguous twins among {where} (no record has 'ambiguity'): make them with sgfs qa --ambiguous"
        )
    return items
