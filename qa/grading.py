"""Deterministic grading of answers against the question record (paper A.8; docs/grading.md).

Pure functions: the only input handled here is lines of text given by the caller (``parse_questions``,
``parse_answers``); reading files and printing belong to ``sgfs grade``. Nothing here imports ``sgfs``.

The rules, in short:

* A response is reduced to its answer: the last JSON object in the text with an ``"answer"`` key, else
  the whole text (``extract_answer``).
* ``categorical`` / ``yes_no``: correct when the lower-cased answer contains the right choice and no
  other, choices matched as whole tokens; a question with a single choice (a title, a sentence) is
  graded by containment after collapsing whitespace.
* ``integer``: the first number in the answer equals the truth exactly.
* ``continuous``: the first number in the answer and the truth, both rounded to ``sig_figs - 1``
  significant figures (half to even), are equal.
* ``not possible`` is the abstention: correct exactly on unanswerable questions. ``not possible`` also
  counts as one more choice, so an answer that gives both a value and ``not possible`` is never correct.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import MAX_EMAX, MIN_EMIN, ROUND_HALF_EVEN, Context, Decimal, InvalidOperation
from typing import Any, TypeAlias

NOT_POSSIBLE = "not possible"
ANSWER_KINDS = ("categorical", "integer", "continuous", "yes_no")
TEMPLATE = "template"
VARIANTS = (TEMPLATE, "paraphrase_1", "paraphrase_2", "paraphrase_3")
YES_NO = ("yes", "no")

# A JSON value as read here: numbers are Decimal (exactly as written), never float.
JsonValue: TypeAlias = "bool | str | Decimal | list[JsonValue] | dict[str, JsonValue] | None"
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


def _keep_constant(name: str) -> str:
    """``NaN``/``Infinity`` are not JSON: keep them as the text they were."""
    return name


_DECODER = json.JSONDecoder(parse_float=Decimal, parse_int=Decimal, parse_constant=_keep_constant)


def _decode_object(line: str, where: str) -> dict[str, Any]:
    try:
        value = _DECODER.decode(line)
    except (ValueError, RecursionError) as exc:
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
    return [parse_answer(_decode_object(line, where), where) for where, line in _numbered(lines, source)]


def extract_answer(response: str) -> JsonValue:
    """The value of ``"answer"`` in the last JSON object of ``response`` that has that key (objects may
    sit in prose or code fences, nested ones included; "last" is the one that ends last), else the
    whole response."""
    best: JsonValue = None
    best_end = -1
    for match in re.finditer(r"\{", response):
        try:
            value, end = _DECODER.raw_decode(response, match.start())
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict) and "answer" in value and end > best_end:
            best, best_end = value["answer"], end
    return response if best_end < 0 else best


def answer_text(value: JsonValue) -> str:
    """The text graded for an answer value: strings as they are, numbers as written, ``true``/``false``,
    ``null`` as the empty text, arrays and objects as compact JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Decimal):
        return str(value)
    return json.dumps(value, default=str, ensure_ascii=False, separators=(",", ":"))


# -------------------------------------------------------------------------------------------- numbers

# The first number of a text: optional sign (only when not glued to a preceding word or number, so the
# hyphen of "run-003" is no minus), digits with optional comma thousands separators ("1,234,567"), an
# optional fraction, an optional exponent. ASCII digits only.
_NUMBER = re.compile(
    r"""
    (?:(?<![0-9A-Za-z_.])[-+])?
    (?:
        (?:[0-9]{1,3}(?:,[0-9]{3})+(?![0-9])|[0-9]+)(?:\.[0-9]*)?
      | \.[0-9]+
    )
    (?:[eE][-+]?[0-9]+)?
    """,
    re.VERBOSE | re.ASCII,
)
_MINUS_SIGNS = str.maketrans({"\u2212": "-", "\u2012": "-", "\u2013": "-", "\ufe63": "-", "\uff0d": "-"})

# Wide exponent range so that rounding never overflows; InvalidOperation is trapped and caught.
_CONTEXT = Context(prec=60, rounding=ROUND_HALF_EVEN, Emax=MAX_EMAX, Emin=MIN_EMIN)


def find_number(text: str) -> tuple[str, Decimal | None] | None:
    """The first number in ``text``: (its text, its exact value), the value None when it cannot be
    represented (an exponent beyond any range); None when there is no number."""
    match = _NUMBER.search(text.translate(_MINUS_SIGNS))
    if match is None:
        return None
    written = match.group(0)
    try:
        value = Decimal(written.replace(",", ""))
    except (InvalidOperation, ValueError):
        return written, None
    return written, value


def answer_number(value: JsonValue) -> tuple[bool, Decimal | None]:
    """(whether the answer gives a number, its exact value): a JSON number as it is, else the first
    number of the answer's text. The value is None when there is no number, or one too large to
    represent."""
    if isinstance(value, Decimal):
        return True, (value if value.is_finite() else None)
    found = find_number(answer_text(value))
    if found is None:
        return False, None
    return True, found[1]


def round_sig(value: Decimal, figures: int) -> Decimal:
    """``value`` rounded to ``figures`` significant figures, half to even, exactly (no float): the
    quantum is 10^(e - figures + 1) where 10^e is the place of the first significant digit. Zero stays
    zero; the sign is kept; rounding may carry into a new digit (9.96 -> 10.0 at 2 figures), which
    compares equal to 10. Raises ValueError for figures < 1 or a non-finite value."""
    if figures < 1:
        raise ValueError(f"figures must be >= 1, got {figures}")
    if not value.is_finite():
        raise ValueError(f"cannot round {value}")
    if value.is_zero():
        return Decimal(0)
    exponent = value.adjusted() - figures + 1
    try:
        return value.quantize(Decimal((0, (1,), exponent)), context=_CONTEXT)
    except InvalidOperation as exc:
        raise ValueError(f"cannot round {value} to {figures} figures") from exc


def compared_figures(sig_figs: int) -> int:
    """Figures compared for a continuous answer: one fewer than asked, at least one."""
    return max(1, sig_figs - 1)


# ------------------------------------------------------------------------------------------ choices


def _normalize(text: str) -> str:
    """NFKC, case-folded, whitespace runs collapsed to one space, trimmed."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def _spans(haystack: str, needle: str, tokens: bool) -> list[tuple[int, int]]:
    """Where ``needle`` occurs in ``haystack``. With ``tokens``, only as whole tokens: not preceded or
    followed by a word character where the needle itself begins or ends with one."""
    if not needle:
        return []
    if not tokens:
        found: list[tuple[int, int]] = []
        start = haystack.find(needle)
        while start >= 0:
            found.append((start, start + len(needle)))
            start = haystack.find(needle, start + 1)
        return found
    left = r"(?<!\w)" if re.match(r"\w", needle[0]) else ""
    right = r"(?!\w)" if re.match(r"\w", needle[-1]) else ""
    return [m.span() for m in re.finditer(left + re.escape(needle) + right, haystack)]


def _present(haystack: str, needles: dict[str, bool]) -> set[str]:
    """The needles found in ``haystack`` (value: match whole tokens). An occurrence inside an occurrence
    of a longer needle does not count (``no`` inside a ``no change`` choice)."""
    spans = {needle: _spans(haystack, needle, tokens) for needle, tokens in needles.items()}
    found: set[str] = set()
    for needle, own in spans.items():
        longer = [s for other, ss in spans.items() if len(other) > len(needle) for s in ss]
        if any(not any(a <= s and e <= b for a, b in longer) for s, e in own):
            found.add(needle)
    return found


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


# ------------------------------------------------------------------------------------------- grading


def grade(question: GradedQuestion, value: JsonValue) -> Grade:
    """Grade one answer value (already reduced from a response) against ``question``. Never raises for
    any JSON value or text."""
    text = answer_text(value)
    norm = _normalize(text)
    if question.answer_kind in ("categorical", "yes_no"):
        return _grade_categorical(question, text, norm)
    return _grade_numeric(question, value, text, norm)


def _grade_categorical(question: GradedQuestion, text: str, norm: str) -> Grade:
    choices = _choice_list(question)
    single = len(choices) == 1 and question.answer_kind == "categorical"
    needles: dict[str, bool] = {NOT_POSSIBLE: True}
    keys: dict[str, str] = {}  # needle -> the choice it stands for
    for choice in choices:
        needle = _single_core(choice) if single else choice
        needles[needle] = not single
        keys[needle] = choice
    found = _present(norm, needles)
    found_choices = sorted(keys[n] for n in found if n in keys)
    says_np = NOT_POSSIBLE in found and NOT_POSSIBLE not in keys
    abstained = says_np and not found_choices
    if question.answerable:
        truth = _normalize(str(question.answer))
        correct = found_choices == [truth] and not says_np
    else:
        correct = abstained
    extracted = found_choices + ([NOT_POSSIBLE] if says_np else [])
    return Grade(correct, abstained, text, extracted)


def _grade_numeric(question: GradedQuestion, value: JsonValue, text: str, norm: str) -> Grade:
    has_number, number = answer_number(value)
    says_np = not isinstance(value, Decimal) and NOT_POSSIBLE in _present(norm, {NOT_POSSIBLE: True})
    abstained = says_np and not has_number
    extracted = None if number is None else str(number)
    if not question.answerable:
        return Grade(abstained, abstained, text, extracted)
    if says_np or number is None:
        return Grade(False, abstained, text, extracted)
    truth = question.answer
    assert isinstance(truth, int | Decimal)
    if question.answer_kind == "integer":
        correct = number == Decimal(truth)
    else:
        figures = compared_figures(question.sig_figs or 1)
        try:
            correct = round_sig(number, figures) == round_sig(Decimal(truth), figures)
        except ValueError:
            correct = False
    return Grade(correct, abstained, text, extracted)


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
