"""Deterministic grading of answers against the question record (paper A.8; docs/grading.md).

Pure functions: the only input handled here is lines of text given by the caller (``parse_questions``,
``parse_answers``, or ``read_answers``, which reports a malformed line and reads on); reading files and printing
belong to ``sgfs grade``. Nothing here imports ``sgfs``.
Reading a response (its final answer, the numbers in it, the abstention) is ``qa.answers``.

The rules, in short (docs/grading.md has them whole, with a table of cases):

* The final answer is the last ``"answer": VALUE`` written as JSON, else the last ``\\boxed{}``, else the sentence
  after the last ``Answer:`` / ``Final answer:`` / ``the answer is``, else the whole text.
* Abstention, for every kind: the final answer says ``not possible`` with no value (number or choice) before it.
  A value before it is a hedge; two different values are a hedge; a hedge is wrong. A number right after a
  comparison operator is a condition, not a value; on a yes/no question ``no`` followed by a word is a determiner
  (``No file matches ...``), not the answer word (``No, ...``, ``no - not possible``).
* ``categorical`` / ``yes_no``: the final answer contains the right choice and no other (whole words); a
  single-choice question (a title, an abstract's first sentence) needs the answer to be the text itself, after
  normalisation (case, spaces, quotes, markdown emphasis, a heading mark, a final full stop, a lead-in such as
  ``The title is``).
* ``integer``: the one value equals the truth exactly.
* ``continuous`` (``s`` figures asked, ``u`` the unit of the truth's ``s``-th figure): correct when the value is
  within ``u`` of the truth or of the truth rounded to ``s`` figures (half up or half even). Rounded, truncated
  and full-precision answers are correct, a last digit off by one is forgiven, two units off is wrong.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import (
    MAX_EMAX,
    MIN_EMIN,
    ROUND_DOWN,
    ROUND_HALF_EVEN,
    ROUND_HALF_UP,
    Context,
    Decimal,
    InvalidOperation,
)
from typing import Any, TypeAlias

from qa.answers import (
    DECODER,
    MAX_FINAL_ANSWER,
    NOT_POSSIBLE,
    REMARK,
    JsonValue,
    Number,
    abstention_at,
    answer_text,
    committed_numbers,
    distinct,
    extract_answer,
    numbers,
    prepare,
)

__all__ = ["NOT_POSSIBLE", "JsonValue", "answer_text", "extract_answer"]  # re-exported: the grader's API
ANSWER_KINDS = ("categorical", "integer", "continuous", "yes_no")
TEMPLATE = "template"
VARIANTS = (TEMPLATE, "paraphrase_1", "paraphrase_2", "paraphrase_3")
YES_NO = ("yes", "no")

Truth: TypeAlias = "str | int | Decimal"


class GradingInputError(ValueError):
    """A malformed line in a questions or answers file; the message names the file and line."""


# --------------------------------------------------------------------------------------------- records


@dataclass(frozen=True)
class GradedQuestion:
    """The part of a question record (docs/questions.md) that grading needs."""

    id: str
    type: str
    category: str
    answer_kind: str
    answer: Truth
    choices: tuple[str, ...] | None
    sig_figs: int | None
    answerable: bool


@dataclass(frozen=True)
class AnswerRecord:
    """One line of an answers file: the answer to grade (already reduced from a response)."""

    id: str
    variant: str
    answer: JsonValue
    from_response: bool
    line: int


@dataclass(frozen=True)
class Grade:
    """The verdict on one answer. ``parsed``: the text graded; ``extracted``: what was read out of it
    (the number as a string, or the sorted choices found, ``not possible`` included)."""

    correct: bool
    abstained: bool
    parsed: str
    extracted: str | list[str] | None


@dataclass(frozen=True)
class ItemResult:
    """One graded (question, variant) pair. A missing answer is an item with ``missing`` true."""

    id: str
    variant: str
    type: str
    category: str
    answer_kind: str
    answerable: bool
    correct: bool
    abstained: bool
    missing: bool
    parsed: str | None
    extracted: str | list[str] | None
    expected: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "variant": self.variant,
            "type": self.type,
            "category": self.category,
            "answer_kind": self.answer_kind,
            "answerable": self.answerable,
            "correct": self.correct,
            "abstained": self.abstained,
            "missing": self.missing,
            "parsed": self.parsed,
            "extracted": self.extracted,
            "expected": self.expected,
        }


@dataclass(frozen=True)
class GradingRun:
    """Every item, in question-file order then variant order, and what could not be graded."""

    items: list[ItemResult]
    variants: list[str]
    missing: list[str] = field(default_factory=list)  # question ids lacking an answer for some variant
    unknown: list[str] = field(default_factory=list)  # answer ids not among the questions
    duplicates: list[str] = field(default_factory=list)  # ids answered twice for the same variant


# ----------------------------------------------------------------------------------------- JSON lines


def _decode_object(line: str, where: str) -> dict[str, Any]:
    try:
        value = DECODER.decode(line)
    except RecursionError:
        raise GradingInputError(f"{where}: JSON nested too deeply") from None
    except ValueError as exc:
        raise GradingInputError(f"{where}: not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        raise GradingInputError(f"{where}: expected a JSON object, got {_json_type(value)}")
    return value


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, Decimal):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _numbered(lines: Iterable[str], source: str) -> Iterable[tuple[str, str]]:
    """(where, line) for every non-blank line; ``where`` is ``source:N`` (1-based)."""
    for number, line in enumerate(lines, start=1):
        if line.strip():
            yield f"{source}:{number}", line


def _line_number(where: str) -> int:
    return int(where.rsplit(":", 1)[1])


def _require_str(obj: dict[str, Any], key: str, where: str) -> str:
    if key not in obj:
        raise GradingInputError(f'{where}: missing key "{key}"')
    value = obj[key]
    if not isinstance(value, str) or not value:
        raise GradingInputError(f'{where}: "{key}" must be a non-empty string, got {_json_type(value)}')
    return value


def _small_int(value: object) -> int | None:
    if isinstance(value, Decimal) and value.is_finite() and abs(value) < 10**6 and value == int(value):
        return int(value)
    return None


# ------------------------------------------------------------------------------------------ questions


def parse_question(obj: dict[str, Any], where: str) -> GradedQuestion:
    """Validate the keys grading uses; other keys (text, query, evidence, ...) are ignored."""
    qid = _require_str(obj, "id", where)
    qtype = _require_str(obj, "type", where)
    category = _require_str(obj, "category", where)
    kind = _require_str(obj, "answer_kind", where)
    if kind not in ANSWER_KINDS:
        kinds = ", ".join(ANSWER_KINDS)
        raise GradingInputError(f'{where}: "answer_kind" must be one of {kinds}, not {kind!r}')
    for key in ("answer", "answerable"):
        if key not in obj:
            raise GradingInputError(f'{where}: missing key "{key}"')
    answerable = obj["answerable"]
    if not isinstance(answerable, bool):
        raise GradingInputError(f'{where}: "answerable" must be true or false, got {_json_type(answerable)}')

    choices_raw = obj.get("choices")
    choices: tuple[str, ...] | None = None
    if choices_raw is not None:
        valid = isinstance(choices_raw, list) and all(isinstance(c, str) and c.strip() for c in choices_raw)
        if not valid:
            raise GradingInputError(f'{where}: "choices" must be null or a list of non-empty strings')
        choices = tuple(choices_raw)

    sig_raw = obj.get("sig_figs")
    sig_figs: int | None = None
    if sig_raw is not None:
        sig_figs = _small_int(sig_raw)
        if sig_figs is None or sig_figs < 1:
            raise GradingInputError(f'{where}: "sig_figs" must be null or a positive integer')

    truth = obj["answer"]
    answer: Truth
    if not answerable:
        answer = truth if isinstance(truth, str) else NOT_POSSIBLE
    elif kind in ("categorical", "yes_no"):
        if not isinstance(truth, str) or not _normalize(truth):
            raise GradingInputError(f'{where}: "answer" of a {kind} question must be a non-empty string')
        answer = truth
        if kind == "yes_no" and _normalize(truth) not in YES_NO:
            raise GradingInputError(f'{where}: "answer" of a yes_no question must be "yes" or "no"')
    elif kind == "integer":
        if not isinstance(truth, Decimal) or truth.adjusted() > 1000 or truth != truth.to_integral_value():
            raise GradingInputError(f'{where}: "answer" of an integer question must be an integer')
        answer = int(truth)
    else:  # continuous
        if not isinstance(truth, Decimal) or not truth.is_finite():
            raise GradingInputError(f'{where}: "answer" of a continuous question must be a finite number')
        if sig_figs is None:
            raise GradingInputError(f'{where}: a continuous question needs "sig_figs"')
        answer = truth
    return GradedQuestion(qid, qtype, category, kind, answer, choices, sig_figs, answerable)


def parse_questions(lines: Iterable[str], source: str) -> list[GradedQuestion]:
    """One question per non-blank line; ids must be unique."""
    questions: list[GradedQuestion] = []
    seen: dict[str, str] = {}
    for where, line in _numbered(lines, source):
        question = parse_question(_decode_object(line, where), where)
        if question.id in seen:
            first = seen[question.id]
            raise GradingInputError(f"{where}: duplicate question id {question.id!r} (first at {first})")
        seen[question.id] = where
        questions.append(question)
    return questions


# -------------------------------------------------------------------------------------------- answers


def parse_answer(obj: dict[str, Any], where: str) -> AnswerRecord:
    """``{"id", "answer"}`` (already extracted, any JSON value) or ``{"id", "response"}`` (the final text,
    reduced with ``extract_answer``); ``"answer"`` wins when both are given. ``"variant"`` is optional."""
    aid = _require_str(obj, "id", where)
    variant = obj.get("variant", TEMPLATE)
    if variant is None:
        variant = TEMPLATE
    if not isinstance(variant, str) or variant not in VARIANTS:
        shown = variant if isinstance(variant, str) else _json_type(variant)
        raise GradingInputError(f'{where}: "variant" must be one of {", ".join(VARIANTS)}, not {shown!r}')
    line = _line_number(where)
    if "answer" in obj:
        return AnswerRecord(aid, variant, obj["answer"], from_response=False, line=line)
    if "response" in obj:
        response = obj["response"]
        if not isinstance(response, str):
            raise GradingInputError(f'{where}: "response" must be a string, got {_json_type(response)}')
        return AnswerRecord(aid, variant, extract_answer(response), from_response=True, line=line)
    raise GradingInputError(f'{where}: needs an "answer" or a "response" key')


def parse_answers(lines: Iterable[str], source: str) -> list[AnswerRecord]:
    """Every answer line, or a GradingInputError for the first malformed one (``read_answers`` goes on)."""
    return [parse_answer(_decode_object(line, where), where) for where, line in _numbered(lines, source)]


@dataclass(frozen=True)
class AnswersRead:
    """The answers of a file that could be read, and one message (``file:line: reason``) per line that could not."""

    answers: list[AnswerRecord]
    errors: list[str]


def read_answers(lines: Iterable[str | bytes], source: str) -> AnswersRead:
    """Read an answers file line by line: a malformed line (not UTF-8, not JSON, nested too deeply, a bad key) is
    reported and skipped, and the other lines are read. Never raises on any line."""
    answers: list[AnswerRecord] = []
    errors: list[str] = []
    for number, raw in enumerate(lines, start=1):
        where = f"{source}:{number}"
        if isinstance(raw, bytes):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                errors.append(f"{where}: not valid UTF-8")
                continue
        else:
            line = raw
        if not line.strip():
            continue
        try:
            answers.append(parse_answer(_decode_object(line, where), where))
        except GradingInputError as exc:
            errors.append(str(exc))
        except Exception as exc:  # a last guard: one line never stops the others
            errors.append(f"{where}: could not be read ({type(exc).__name__})")
    return AnswersRead(answers, errors)


# ------------------------------------------------------------------------------------------ choices

_SPACES = re.compile(r"\s+")


def _normalize(text: str) -> str:
    """NFKC, case-folded, whitespace runs collapsed to one space, trimmed."""
    return _SPACES.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def _needle_pattern(needle: str, tokens: bool, longer: Iterable[str]) -> re.Pattern[str]:
    """A pattern for the occurrences of ``needle`` that count: whole tokens when ``tokens`` (no word character
    right before or after, where the needle itself begins or ends with one), and never inside an occurrence of a
    longer needle (``no`` inside a ``no change`` choice). One compiled search per needle keeps grading linear."""
    left = r"(?<!\w)" if tokens and re.match(r"\w", needle[0]) else ""
    right = r"(?!\w)" if tokens and re.match(r"\w", needle[-1]) else ""
    guards: list[str] = []
    for other in longer:
        offset = other.find(needle)
        while offset >= 0:
            before, after = other[:offset], other[offset + len(needle) :]
            inside = (f"(?<={re.escape(before)})" if before else "") + re.escape(needle + after)
            guards.append(f"(?!{inside})")
            offset = other.find(needle, offset + 1)
    return re.compile(left + "".join(guards) + re.escape(needle) + right)


def _choice_list(question: GradedQuestion) -> list[str]:
    """The normalized real choices of a categorical question (``not possible`` is handled apart)."""
    raw: Sequence[str]
    if question.choices is not None:
        raw = question.choices
    elif question.answer_kind == "yes_no":
        raw = YES_NO
    elif question.answerable and isinstance(question.answer, str):
        raw = [question.answer]
    else:
        raw = []
    out: list[str] = []
    for choice in raw:
        norm = _normalize(choice)
        if norm and norm != NOT_POSSIBLE and norm not in out:
            out.append(norm)
    if question.answerable and isinstance(question.answer, str):
        truth = _normalize(question.answer)
        if truth not in out:
            out.append(truth)
    return out


def _single_core(choice: str) -> str:
    """A single choice (title, sentence) without its final full stop, so that an answer may drop it."""
    core = choice.rstrip(" .")
    return core or choice


SINGLE_CHOICE_TYPES = ("title", "abstract")
_EMPHASIS_MARKS = str.maketrans({"*": None, "_": None, "`": None})
_QUOTE_PAIRS = {'"': '"', "'": "'", "\u201c": "\u201d", "\u2018": "\u2019", "\u00ab": "\u00bb", "\u201e": "\u201c"}
_HEADING = re.compile(r"#++\s*+")
# A lead-in naming what is given: "The title is", "Title:", "The first sentence of the abstract is".
_LEAD_IN = re.compile(
    r"(?:the\s++)?(?:(?:readme|repository|project|paper|dataset)(?:'s)?\s++)?"
    r"(?:title|heading|abstract|first\s++sentence(?:\s++of\s++the\s++abstract)?)\s*+(?:is(?![a-z])[ \t]*+:?|:)\s*+"
)
_LATEX_TEXT = re.compile(r"\\(?:text|textbf|textit|mathrm|emph)\{(.*)\}", re.DOTALL)
_SINGLE_PASSES = 3


def single_choice_text(text: str) -> str:
    """A single-choice answer or truth (a title, a sentence) in the form compared for equality: NFKC, case-folded,
    markdown emphasis (``*``, ``_``, backticks) removed, whitespace collapsed, then (a few passes) a leading heading
    mark, a lead-in (``The title is``), a ``\\text{...}`` wrapper, surrounding quotes and a final full stop
    removed. Linear in the length of the text."""
    norm = _SPACES.sub(" ", unicodedata.normalize("NFKC", text).casefold().translate(_EMPHASIS_MARKS)).strip()
    for _ in range(_SINGLE_PASSES):
        before = norm
        latex = _LATEX_TEXT.fullmatch(norm)
        if latex is not None:
            norm = latex.group(1).strip()
        heading = _HEADING.match(norm)
        if heading is not None:
            norm = norm[heading.end() :]
        lead = _LEAD_IN.match(norm)
        if lead is not None and lead.end() < len(norm):
            norm = norm[lead.end() :]
        norm = norm.strip()
        if norm.endswith("."):
            norm = norm[:-1].rstrip()
        if len(norm) >= 2 and _QUOTE_PAIRS.get(norm[0]) == norm[-1]:
            norm = norm[1:-1].strip()
        if norm == before:
            break
    return norm


# ------------------------------------------------------------------------------------------- grading


def grade(question: GradedQuestion, value: JsonValue) -> Grade:
    """Grade one final answer (already reduced from a response by ``extract_answer``) against ``question``.
    Never raises, for any JSON value or text, and takes time linear in its length."""
    try:
        text = answer_text(value)
    except (RecursionError, ValueError):  # an array or object nested too deeply to write back as JSON
        return Grade(False, False, "", None)
    if len(text) > MAX_FINAL_ANSWER and not isinstance(value, Decimal):
        text = text[-MAX_FINAL_ANSWER:]
    if question.answer_kind in ("categorical", "yes_no"):
        return _grade_categorical(question, text)
    return _grade_numeric(question, value, text)


def _abstention(question: GradedQuestion, text: str) -> Grade:
    return Grade(not question.answerable, True, text, [NOT_POSSIBLE])


def _grade_categorical(question: GradedQuestion, text: str) -> Grade:
    norm = _normalize(text)
    choices = _choice_list(question)
    single = question.answer_kind == "categorical" and (question.type in SINGLE_CHOICE_TYPES or len(choices) == 1)
    needles = {(_single_core(choice) if single else choice): choice for choice in choices}
    first = _first_occurrences(norm, [*needles, NOT_POSSIBLE], single)
    if not single and first:
        # Remarks in parentheses after the first choice are no answer: "csv (not json)", "yes (p = 0.003)".
        start = min(first.values()) + 1
        if "(" in norm[start:]:
            norm = norm[:start] + REMARK.sub(" ", norm[start:])
            first = _first_occurrences(norm, [*needles, NOT_POSSIBLE], single)
    if single:
        return _grade_single(question, text, norm, first, needles)
    found_choices = sorted({needles[n] for n in first if n in needles})
    says_np = NOT_POSSIBLE in first and NOT_POSSIBLE not in needles
    if says_np and not _value_before(question, norm, first, needles):
        return _abstention(question, text)
    extracted = found_choices + ([NOT_POSSIBLE] if says_np else [])
    correct = question.answerable and not says_np and found_choices == [_normalize(str(question.answer))]
    return Grade(correct, False, text, extracted)


def _grade_single(
    question: GradedQuestion, text: str, norm: str, first: dict[str, int], needles: dict[str, str]
) -> Grade:
    """A title or a sentence: the answer must be the text (``single_choice_text`` on both sides). It abstains when
    it is not the text and says ``not possible`` with no occurrence of the text before the phrase."""
    given = single_choice_text(text)
    matched = [choice for choice in needles.values() if single_choice_text(choice) == given]
    if matched:
        correct = question.answerable and _normalize(str(question.answer)) in matched
        return Grade(correct, False, text, matched)
    says_np = NOT_POSSIBLE in first and NOT_POSSIBLE not in needles
    if says_np and not _value_before(question, norm, first, needles):
        return _abstention(question, text)
    return Grade(False, False, text, [NOT_POSSIBLE] if says_np else [])


# "no" followed (after spaces or emphasis) by a letter or digit is the determiner of a noun phrase ("No file
# matches", "there is no row"), not the answer word, unless what follows is "not possible" itself.
_DETERMINER_NO = "no"
_ANSWER_WORD_END = re.compile(r"[ \t*_`]*+(?:not possible|(?!\w))")


def _value_before(question: GradedQuestion, norm: str, first: dict[str, int], needles: dict[str, str]) -> bool:
    """Whether a value (a choice) stands before the first ``not possible`` of ``norm``: any occurrence of a choice,
    except that on a yes/no question ``no`` counts only as the answer word (not followed by a word)."""
    phrase = first[NOT_POSSIBLE]
    before = [n for n in first if n in needles and first[n] < phrase]
    if question.answer_kind != "yes_no" or before != [_DETERMINER_NO]:
        return bool(before)
    every = [*needles, NOT_POSSIBLE]
    longer = [other for other in every if len(other) > len(_DETERMINER_NO) and _DETERMINER_NO in other]
    for found in _needle_pattern(_DETERMINER_NO, True, longer).finditer(norm, 0, phrase):
        if _ANSWER_WORD_END.match(norm, found.end()) is not None:
            return True
    return False


def _first_occurrences(norm: str, every: list[str], single: bool) -> dict[str, int]:
    """Where each needle first counts in ``norm`` (absent needles are left out)."""
    first: dict[str, int] = {}
    for needle in every:
        if not needle:
            continue
        longer = [other for other in every if len(other) > len(needle) and needle in other]
        found = _needle_pattern(needle, not single or needle == NOT_POSSIBLE, longer).search(norm)
        if found is not None:
            first[needle] = found.start()
    return first


def _grade_numeric(question: GradedQuestion, value: JsonValue, text: str) -> Grade:
    committed: list[Number]
    if isinstance(value, Decimal):
        committed = [Number(0, len(text), text, value)]
    else:
        prepared = prepare(text)
        at = abstention_at(prepared)
        if at is not None:
            before = distinct(numbers(prepared, 0, at), 1)
            if not before:
                return _abstention(question, text)
            return Grade(False, False, text, [before[0].written, NOT_POSSIBLE])  # a value, then not possible
        committed = committed_numbers(prepared)
    if len(committed) != 1:  # no value, or a hedge between two
        return Grade(False, False, text, [n.written for n in committed] or None)
    number = committed[0].value
    extracted = committed[0].written if number is None else str(number)
    if not question.answerable or number is None:
        return Grade(False, False, text, extracted)
    truth = question.answer
    assert isinstance(truth, int | Decimal)
    if question.answer_kind == "integer":
        return Grade(number == Decimal(truth), False, text, extracted)
    return Grade(continuous_correct(number, Decimal(truth), question.sig_figs or 1), False, text, extracted)


# ------------------------------------------------------------------------------------ continuous rule

# Answers more than this many places below the unit are cut there first (no realistic answer has them), so that
# the exact arithmetic below stays small whatever the input.
_PLACES_BELOW_UNIT = 4000


def figure_unit(truth: Decimal, figures: int) -> Decimal:
    """The unit of the truth's last asked figure: 10^(e - figures + 1), 10^e the place of its first significant
    digit (a zero truth counts as e = 0)."""
    top = 0 if truth.is_zero() else truth.adjusted()
    return Decimal((0, (1,), top - figures + 1))


def round_sig(value: Decimal, figures: int, rounding: str = ROUND_HALF_EVEN) -> Decimal:
    """``value`` rounded to ``figures`` significant figures, exactly (no float): the quantum is the unit of the
    last figure. Zero stays zero; the sign is kept; rounding may carry into a new digit (9.96 -> 10.0 at 2
    figures). Raises ValueError for figures < 1 or a non-finite value."""
    if figures < 1:
        raise ValueError(f"figures must be >= 1, got {figures}")
    if not value.is_finite():
        raise ValueError(f"cannot round {value}")
    if value.is_zero():
        return Decimal(0)
    return value.quantize(figure_unit(value, figures), rounding=rounding, context=_exact_context(value))


def _exact_context(*values: Decimal) -> Context:
    """A context wide enough that sums and differences of ``values`` are exact."""
    tops = [v.adjusted() for v in values if not v.is_zero()] or [0]
    bottoms = [int(v.as_tuple().exponent) for v in values]
    precision = max(tops) - min(bottoms) + 4
    return Context(prec=max(precision, 28), rounding=ROUND_HALF_EVEN, Emax=MAX_EMAX, Emin=MIN_EMIN)


def continuous_correct(answer: Decimal, truth: Decimal, figures: int) -> bool:
    """The continuous rule: ``answer`` is within one unit of the truth's last asked figure of the truth itself,
    or of the truth rounded to ``figures`` figures half up or half even. Exact decimal arithmetic."""
    if not (answer.is_finite() and truth.is_finite()) or figures < 1:
        return False
    unit = figure_unit(truth, figures)
    unit_place = int(unit.as_tuple().exponent)
    ceiling = max(0 if truth.is_zero() else truth.adjusted(), unit_place) + 2
    if not answer.is_zero() and answer.adjusted() > ceiling:
        return False  # at least ten times the truth: never within a unit
    floor = unit_place - _PLACES_BELOW_UNIT
    if int(answer.as_tuple().exponent) < floor:
        cut = Decimal((0, (1,), floor))
        answer = answer.quantize(cut, rounding=ROUND_DOWN, context=_exact_context(answer, cut))
    context = _exact_context(answer, truth, unit)
    try:
        references = [truth, *(round_sig(truth, figures, rounding) for rounding in (ROUND_HALF_UP, ROUND_HALF_EVEN))]
        return any(context.subtract(answer, reference).copy_abs() <= unit for reference in references)
    except (InvalidOperation, ValueError):
        return False


# ------------------------------------------------------------------------------------ a whole run


def grade_answers(questions: Sequence[GradedQuestion], answers: Sequence[AnswerRecord]) -> GradingRun:
    """Grade every (question, variant) pair. The variants expected of every question are those that
    appear among the answers to known questions (``template`` when there are none). An id answered
    twice for the same variant is a duplicate (the first answer is graded); an answer whose id is not a
    question is unknown (not graded); a pair without an answer is missing (graded wrong)."""
    by_id = {q.id: q for q in questions}
    chosen: dict[tuple[str, str], AnswerRecord] = {}
    unknown: list[str] = []
    duplicates: list[str] = []
    for answer in answers:
        if answer.id not in by_id:
            if answer.id not in unknown:
                unknown.append(answer.id)
            continue
        key = (answer.id, answer.variant)
        if key in chosen:
            if answer.id not in duplicates:
                duplicates.append(answer.id)
            continue
        chosen[key] = answer
    seen_variants = {variant for _, variant in chosen}
    variants = [v for v in VARIANTS if v in seen_variants] or [TEMPLATE]

    items: list[ItemResult] = []
    missing: list[str] = []
    for question in questions:
        expected = answer_text(question.answer) if isinstance(question.answer, str) else str(question.answer)
        for variant in variants:
            record = chosen.get((question.id, variant))
            common = (
                question.id,
                variant,
                question.type,
                question.category,
                question.answer_kind,
                question.answerable,
            )
            if record is None:
                if question.id not in missing:
                    missing.append(question.id)
                items.append(
                    ItemResult(
                        *common,
                        correct=False,
                        abstained=False,
                        missing=True,
                        parsed=None,
                        extracted=None,
                        expected=expected,
                    )
                )
                continue
            verdict = grade(question, record.answer)
            items.append(
                ItemResult(
                    *common,
                    correct=verdict.correct,
                    abstained=verdict.abstained,
                    missing=False,
                    parsed=verdict.parsed,
                    extracted=verdict.extracted,
                    expected=expected,
                )
            )
    return GradingRun(items, variants, missing, unknown, duplicates)
