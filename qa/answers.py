"""Reading an agent's response: the final answer it committed to, and the values in it (docs/grading.md).

Everything here takes time linear in the length of the text (no backtracking regular expressions, a bounded
number of JSON decodes), so one agent's output can never stall a grading run, and nothing raises on any text.

* ``extract_answer`` reduces a response to its final answer: the last ``"answer": VALUE`` written as JSON, else the
  last ``\\boxed{...}``, else the sentence after the last answer marker (``Answer:``, ``Final answer:``,
  ``the answer is``), else the whole text.
* ``numbers`` lists the numbers of a text, never digits inside identifiers (``vo2``, ``run-003.csv``, ``R^2``).
* ``prepare`` writes a text's numbers in one form: NFKC (full-width digits, thin-space thousands separators),
  Unicode minus signs, superscript and times-ten exponents (``7.684 × 10⁻¹``).
* ``committed_numbers`` applies the remark, comparison and assertion rules to find the values a final answer
  commits to.
* ``abstention_at`` finds the phrase ``not possible``.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import TypeAlias

NOT_POSSIBLE = "not possible"

# A JSON value as read here: numbers are Decimal (exactly as written), never float; a number beyond Decimal's
# exponent range stays the text it was written as.
JsonValue: TypeAlias = "bool | str | Decimal | list[JsonValue] | dict[str, JsonValue] | None"


def _json_number(text: str) -> Decimal | str:
    try:
        return Decimal(text)
    except (InvalidOperation, ValueError):
        return text


def _keep_constant(name: str) -> str:
    """``NaN``/``Infinity`` are not JSON: keep them as the text they were."""
    return name


DECODER = json.JSONDecoder(parse_float=_json_number, parse_int=_json_number, parse_constant=_keep_constant)

# ------------------------------------------------------------------------------------------ final answer

_ANSWER_KEY = '"answer"'
_KEY_COLON = re.compile(r"[ \t\r\n]*+:[ \t\r\n]*+")
# Searches run backwards from the end of the response with a bounded number of attempts, and each attempt
# reads forward at most once, so finding the final answer stays linear in the length of the response.
_JSON_ATTEMPTS = 8
_MARKER_ATTEMPTS = 64
_BOXED = "\\boxed{"
_BOXED_WINDOW = 10_000
_BRACE = re.compile(r"[{}]")
_ANSWER_REVERSED = re.compile(r"[Rr][Ee][Ww][Ss][Nn][Aa]")  # "answer" in any case, searched in the reversed text
_MARKER = re.compile(r"answer(?![A-Za-z])[*_ \t]*+(?:[:=\uff1a]|is(?![A-Za-z])|[-\u2013\u2014](?=\s))", re.IGNORECASE)
# What may stand between a marker and its answer: emphasis, quotes, a colon, a dash followed by a space (never
# a minus sign: "Answer: -0.31" is negative).
_MARKER_LEAD = re.compile(r"[\s*_:=\uff1a`\"']*+(?:[-\u2013\u2014](?=\s)[\s*_`\"']*+)?")
_EMPHASIS = " \t*_`"
# A sentence ends at . ! or ? followed by more text on the line ("Answer: 0.52. Computed over 160 rows.").
_SENTENCE_END = re.compile(r"[.!?](?=\s+\S)")
_LINES_AFTER_EMPTY_MARKER = 3
_LOOK_BACK = 1_000
# A final answer is read from its last characters only: the committed value stands at its end, and the bound
# keeps the per-number work of grading small whatever an agent prints.
MAX_FINAL_ANSWER = 10_000


def extract_answer(response: str) -> JsonValue:
    """The final answer of ``response``: the value of the last ``"answer"`` key written as JSON (in prose or code
    fences; numbers exact), else the content of the last ``\\boxed{}``, else the sentence after the last answer
    marker (``Answer:``, ``Final answer:``, ``the answer is``, ``answer =``), else the whole response."""
    found, value = _json_answer(response)
    if found:
        return value
    boxed = _boxed(response)
    if boxed is not None:
        return boxed
    marked = _marked(response)
    return response if marked is None else marked


def _json_answer(response: str) -> tuple[bool, JsonValue]:
    end = len(response)
    for _ in range(_JSON_ATTEMPTS):
        key = response.rfind(_ANSWER_KEY, 0, end)
        if key < 0:
            break
        end = key
        colon = _KEY_COLON.match(response, key + len(_ANSWER_KEY))
        if colon is None or response[max(0, key - _LOOK_BACK) : key].rstrip()[-1:] not in ("{", ","):
            continue  # not a key of an object
        try:
            value, _ = DECODER.raw_decode(response, colon.end())
        except (ValueError, RecursionError):
            continue
        return True, value
    return False, None


def _boxed(response: str) -> str | None:
    start = response.rfind(_BOXED)
    if start < 0:
        return None
    depth = 1
    for brace in _BRACE.finditer(response, start + len(_BOXED), start + len(_BOXED) + _BOXED_WINDOW):
        depth += 1 if brace.group() == "{" else -1
        if depth == 0:
            return response[start + len(_BOXED) : brace.start()]
    return None


def _marked(response: str) -> str | None:
    reversed_response = response[::-1]
    position = 0
    for _ in range(_MARKER_ATTEMPTS):
        found = _ANSWER_REVERSED.search(reversed_response, position)
        if found is None:
            return None
        position = found.end()
        start = len(response) - found.end()
        glued = start > 0 and response[start - 1].isascii() and response[start - 1].isalpha()
        marker = None if glued else _MARKER.match(response, start)
        if marker is not None:
            return _sentence_after(response, marker.end())
    return None


def _sentence_after(response: str, start: int) -> str:
    """The first sentence of the first non-empty line (of the next few) from ``start``."""
    line = ""
    for _ in range(_LINES_AFTER_EMPTY_MARKER + 1):
        stop = response.find("\n", start)
        stop = len(response) if stop < 0 else stop
        line = response[start:stop].strip()
        lead = _MARKER_LEAD.match(line)
        line = line[lead.end() if lead else 0 :].rstrip(_EMPHASIS).strip()
        if line or stop == len(response):
            break
        start = stop + 1
    end = _SENTENCE_END.search(line)
    return (line[: end.start()] if end else line).rstrip(".!").strip()


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


# ---------------------------------------------------------------------------------------------- numbers

# A number: optional sign (only when not glued to a preceding word or number, so the hyphen of "run-003" or of
# "0.5-0.6" is no minus), digits with optional thousands separators (commas "1,234,567", or single spaces
# "1 234 567": a head of one to three digits, then groups of exactly three digits, each group standing alone), an
# optional fraction, an optional exponent. ASCII digits only (``prepare`` maps the others); possessive
# quantifiers, and space groups that are taken one by one and never given back, keep every scan linear.
_NUMBER = re.compile(
    r"""
    (?:(?<![0-9A-Za-z_.])[-+])?
    (?:
        (?:
            [0-9]{1,3}+(?:,[0-9]{3})++(?![0-9])
          | [0-9]{1,3}+(?:[ \u00a0\u2009\u202f][0-9]{3}(?![0-9A-Za-z_/\\@]|[-.][A-Za-z]))++
          | [0-9]++
        )(?:\.[0-9]*+)?
      | \.[0-9]++
    )
    (?:[eE][-+]?[0-9]++)?
    """,
    re.VERBOSE,
)
_SEPARATORS = str.maketrans({",": None, " ": None, "\u00a0": None, "\u2009": None, "\u202f": None})
_MINUS_SIGNS = str.maketrans({"\u2212": "-", "\u2012": "-", "\u2013": "-", "\ufe63": "-", "\uff0d": "-"})
# Superscript exponents glued to a number ("10⁻¹", "10⁶") are written with a caret first, before NFKC would
# make them plain digits.
_SUPERSCRIPT = re.compile(r"(?<=[0-9\uff10-\uff19])[\u2070\u00b9\u00b2\u00b3\u2074-\u2079\u207a\u207b]++")
_FROM_SUPERSCRIPT = str.maketrans(
    "\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079\u207a\u207b", "0123456789+-"
)
# "1.2 × 10^-3", "1.2 \times 10^{-3}", "1.2*10^3" and a bare "10^18" are written in exponent notation first.
_TIMES_TEN = re.compile(
    r"(?<![0-9.])([0-9]++(?:\.[0-9]++)?)[ \t]*+(?:[x\u00d7\u00b7\u22c5*]|\\times|\\cdot)[ \t]*+10[ \t]*+\^[ \t]*+"
    r"\{?[ \t]*+([-+]?[0-9]++)[ \t]*+\}?"
)
_BARE_TEN = re.compile(r"(?<![0-9A-Za-z_.^])10\^\{?([-+]?[0-9]++)\}?")
# Characters that glue digits into an identifier or a path when they stand right before or after them.
_GLUE_BEFORE = frozenset("_^\\/@")
_GLUE_AFTER = frozenset("_/\\@")
_LETTERS_THEN = re.compile(r"[A-Za-z]++([0-9_]?)")
# Multiplier suffixes glued to a number and followed by no letter, digit or "_": "1.2M", "5k", "3bn". Units are no
# multipliers ("1.2 mM", "5 m", "5kg": a space, a lower-case m, or more letters).
_MULTIPLIERS = {"k": 3, "K": 3, "M": 6, "B": 9, "bn": 9}
# Comparison operators: the number right after one restates a condition ("rows where tfp <= 0.997"), never a value.
_COMPARISONS = frozenset("<>\u2264\u2265\u2260\u2a7d\u2a7e\u226a\u226b")
_COMPARISON_LOOK_BACK = 16


@dataclass(frozen=True)
class Number:
    """A number found in a text: where it is, as written, and its exact value (None: beyond any range)."""

    start: int
    end: int
    written: str
    value: Decimal | None

    def same_as(self, other: Number) -> bool:
        if self.value is None or other.value is None:
            return self.written == other.written
        return self.value == other.value


def prepare(text: str) -> str:
    """The text with its numbers in one form: superscript exponents written with a caret ("10⁻¹" -> "10^-1"),
    NFKC (full-width digits, thin and no-break spaces), Unicode minus signs made ASCII, times-ten notation made
    exponent notation. Linear in the length of the text."""
    if _SUPERSCRIPT.search(text) is not None:
        text = _SUPERSCRIPT.sub(lambda m: "^" + m.group().translate(_FROM_SUPERSCRIPT), text)
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
    text = text.translate(_MINUS_SIGNS)
    if "10" in text and "^" in text:
        text = _TIMES_TEN.sub(r"\1e\2", text)
        text = _BARE_TEN.sub(r"1e\1", text)
    return text


def numbers(text: str, start: int = 0, stop: int | None = None) -> Iterator[Number]:
    """The numbers of ``text`` (already ``prepare``d) between ``start`` and ``stop``, in order; digits glued into
    identifiers (``vo2``, ``x_1``, ``R^2``, ``HEK293``, ``run-003``, ``0.json``, ``a/3``) are skipped, and so are
    numbers right after a comparison operator (``tfp <= 0.997``: a condition). A multiplier suffix glued to a
    number scales it (``1.2M``, ``5k``, ``3bn``)."""
    stop = len(text) if stop is None else stop
    for match in _NUMBER.finditer(text, start, stop):
        if _in_identifier(text, match.start(), match.end()) or _after_comparison(text, match.start()):
            continue
        written = match.group()
        end = match.end()
        scale = 0
        for suffix, power in _MULTIPLIERS.items():
            if text.startswith(suffix, end) and not _word_char(text, end + len(suffix)):
                scale, end = power, end + len(suffix)
                break
        try:
            value: Decimal | None = Decimal(written.translate(_SEPARATORS))
        except (InvalidOperation, ValueError):
            value = None
        if value is not None and scale:
            sign, digits, exponent = value.as_tuple()
            value = Decimal((sign, digits, int(exponent) + scale))
        yield Number(match.start(), end, text[match.start() : end], value)


def _word_char(text: str, at: int) -> bool:
    return at < len(text) and (text[at].isalnum() or text[at] == "_")


def _after_comparison(text: str, start: int) -> bool:
    """Whether a comparison operator (``<``, ``>``, ``<=``, ``>=``, ``≤``, ``≥``, ``≠``, ``!=``, ``==``) stands
    right before ``start`` (spaces between allowed); an arrow (``->``, ``=>``) is no comparison."""
    at = start - 1
    floor = max(-1, start - 1 - _COMPARISON_LOOK_BACK)
    while at > floor and text[at] in " \t":
        at -= 1
    if at < 0 or at == floor:
        return False
    before = text[at - 1] if at > 0 else ""
    if text[at] == ">":
        return before not in ("-", "=")
    if text[at] in _COMPARISONS:
        return True
    return text[at] == "=" and before in ("<", ">", "!", "=", "\u2260")


def _in_identifier(text: str, start: int, end: int) -> bool:
    before = text[start - 1] if start > 0 else ""
    if before.isalpha() or before in _GLUE_BEFORE:
        return True
    if before in ("-", "+", ".") and start > 1:
        glued = text[start - 2]
        if glued.isalpha() or glued == "_":  # "run-003", "v.2"; a digit there is a range ("0.5-0.6")
            return True
    after = text[end] if end < len(text) else ""
    if after in _GLUE_AFTER:
        return True
    if text[end - 1] == "." and after.isalpha():  # "0.json": a file name
        return True
    if after in (".", "-") and end + 1 < len(text) and text[end + 1].isalpha():
        return True  # "3.csv", "293-combo"
    if after.isalpha():
        letters = _LETTERS_THEN.match(text, end)
        return letters is not None and letters.group(1) != ""  # "2b3", "3a_x"; a unit ("0.52mg") is fine
    return False


# ------------------------------------------------------------------------------------- committed values

REMARK = re.compile(r"\([^()\n]*+\)")
_ASSERTION = re.compile(
    r"(?:(?<![A-Za-z])(?:is|are|was|were|equals?)(?![A-Za-z])|(?<![<>!=])=(?![=<>])|[:\u2248])[ \t]*+(?=[-+]?\.?[0-9])",
    re.IGNORECASE,
)


def distinct(found: Iterator[Number], limit: int = 2) -> list[Number]:
    """The first ``limit`` numbers of different values (stops reading as soon as it has them)."""
    kept: list[Number] = []
    for number in found:
        if not any(number.same_as(other) for other in kept):
            kept.append(number)
            if len(kept) >= limit:
                break
    return kept


def committed_numbers(text: str) -> list[Number]:
    """The different values a final answer commits to (at most two are returned: two mean a hedge).

    Remarks in parentheses after the first number are ignored ("0.52 (n = 160)"); numbers right after a
    comparison operator are conditions, not values ("118 rows where tfp <= 0.997"); when two different values
    remain and an assertion ("is", "are", "=", ":", "≈"; never a comparison such as "<=" or "==") stands right
    before a number, only the text from the number after the last assertion counts ("the mean of the 160 rows is
    0.52")."""
    first = next(numbers(text), None)
    if first is None:
        return []
    text = text[: first.end] + REMARK.sub(" ", text[first.end :])
    found = distinct(numbers(text))
    if len(found) < 2:
        return found
    last: re.Match[str] | None = None
    for last in _ASSERTION.finditer(text):  # noqa: B007 - only the last assertion counts
        pass
    if last is None:
        return found
    return distinct(numbers(text, last.end()))


# ---------------------------------------------------------------------------------------------- abstain

_ABSTAIN = re.compile(r"(?<![A-Za-z0-9_])not\s++possible(?![A-Za-z0-9_])", re.IGNORECASE)


def abstention_at(text: str, start: int = 0) -> int | None:
    """Where the first ``not possible`` (whole words, any case and spacing) begins, or None."""
    found = _ABSTAIN.search(text, start)
    return None if found is None else found.start()
