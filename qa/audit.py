"""An independent audit of generated questions: defects an agent could notice, and how much guessing pays.

The audit reads question records as an agent would, from their wording (the template and every paraphrase),
and, where a defect can only be decided with the data, from the record's ``query`` and the repository's files
(:class:`qa.view.RepoView`). It never calls the generator. Each defect class has one detector returning
findings ``(question id, defect class, short detail)``:

duplicates
  ``duplicate_question``: two questions of one repository with the same rendered text (placeholders
  filled in), or the same type and query apart from the significant figures asked.
degenerate filters
  ``between_same_bounds``: a ``between`` row condition whose low bound is not below its high bound.
  ``noop_row_condition``: a row condition that, on its own, keeps every row of the question's files.
  ``repeated_column``: a column (or a path field) conditioned more than once in one question.
  ``noop_path_condition``: a path condition that, on its own, keeps every data file of the repository, or a
  ``prefix`` directory that holds every data file.
questions that reveal their own unanswerability
  ``reveals_constant``: a bivariate question whose row filter fixes one of its two analysed columns
  (``eq``, ``in`` with one value, ``between`` with equal bounds).
  ``reveals_narrow_window``: a ``between`` window on a numeric column that keeps none of the column's
  values in the question's files and either (a) holds no integer while every such value is an integer, or
  (b) is narrower than ``NARROW_WINDOW`` (1 %) of the values' interquartile range (their range where the
  interquartile range is zero). An empty window that narrow is empty because it is narrow: a reader can
  answer "not possible" from the wording alone. A window that keeps rows is never flagged (a narrow window
  that keeps rows is no tell: it misleads a guesser).
wording (checked in every variant: the template and each paraphrase)
  ``wording_not_possible``: a ``not possible`` instruction in a readme question (always answerable), or a
  generic one (about rows, conditions, statistics or columns) in an extension question.
  ``wording_readme_presupposed``: a title or abstract question that does not say, in a sentence of its
  own, what to answer when there is no README and when the README does not give the title (abstract).
  ``wording_empty_count``: a count (``count_rows``, ``prefix``, ``condition``) whose zero result is answered
  ``not possible`` without a sentence of its own saying so (a ``count_rows`` with row conditions for an
  empty row selection and for a missing file, a ``count_rows`` without for a missing file, a ``prefix``
  for a missing directory, a ``condition`` for an empty file selection). The generic closing note
  ("If the data ... cannot answer this question (for example, ...)") does not count.
  ``wording_list_without_or``: a list "one of a, b" (comma-separated) whose last item is not joined by
  "or" before the clause ends (``and``, ``?``, ``.``, ``;``). Lists introduced by a colon are exempt.
  ``wording_numeric_only``: a univariate statistic of a non-numeric (categorical or identifier) column
  whose wording does not say the statistic is defined only for numeric columns.
  ``wording_grammar``: "a" before a vowel letter or "an" before a consonant letter (with the usual
  exceptions), a doubled word, an empty backtick pair, a space before a comma, full stop or question mark,
  two spaces in a row, or a doubled full stop.

:func:`balance` measures the answers: per type the count, unanswerable share and most common answer; the
abstain floor; the score of the prior-only policy (learned on other seeds) graded by :func:`qa.grading.grade`;
the share of "yes" among answerable hypothesis tests; and the answerable share of title and abstract
questions among repositories with a README. :func:`criteria` turns both into the pass/fail checks of the
benchmark's balance goals.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from functools import partial
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

import generators
from generators import Repository
from generators.spec import Spec
from generators.synth import Table
from qa.generate import Options
from qa.grading import grade
from qa.model import NOT_POSSIBLE, Answer, Question
from qa.prior import PriorTable, learn
from qa.records import QuestionRecord, generated_records, render
from qa.view import Condition, RepoView, row_mask

FloatArray = npt.NDArray[np.float64]

NARROW_WINDOW = 0.01  # a between window narrower than this share of the column's interquartile range
BIVARIATE = ("bivariate_statistic", "bivariate_hypothesis")
COUNTS = ("count_rows", "prefix", "condition")
UNIVARIATE = ("univariate_single_file", "univariate_condition")
NUMERIC_TYPES = ("integer", "continuous")


class Finding(NamedTuple):
    id: str
    defect: str
    detail: str


# ------------------------------------------------------------------------------------------------ text


def variants(question: Question) -> list[tuple[str, str]]:
    """(variant name, text with its placeholders filled in) for the template and each paraphrase."""
    texts = [("template", question.question)] + [(f"paraphrase_{i}", p) for i, p in enumerate(question.paraphrases, 1)]
    return [(name, render(text, question.variables)) for name, text in texts]


_SENTENCE_BREAK = re.compile(r"(?<=[.?!])[\"”]?\s+(?=[A-Z\"`(])|(?<=[.?!][\"”])\s+")


def sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE_BREAK.split(text) if s]


def _is_generic(sentence: str) -> bool:
    """The generic closing note: not a statement about this question's own empty result."""
    lowered = sentence.lower()
    return "cannot answer this question" in lowered or "for example" in lowered


def _own_not_possible(text: str) -> list[str]:
    """The question's own sentences that tell when to answer "not possible" (the generic note left out)."""
    return [s.lower() for s in sentences(text) if NOT_POSSIBLE in s.lower() and not _is_generic(s)]


_NEGATION = re.compile(r"\b(no|not|none|without|lacks?|missing|doesn't|does not|isn't|is not|absent)\b")
_NO_ROW = re.compile(r"\b(no|none of the|zero|0)\b[^.?]*\b(rows?|records?)\b|\bno (data )?rows?\b|\bempty\b")
_NO_FILE = re.compile(
    r"\bno such file\b|\b(no|none of the|zero|0)\b[^.?]*\b(data )?files?\b|\bfile\b[^.?]*\b(does not|doesn't|not) exist"
)
_NO_DIRECTORY = re.compile(
    r"\bno such (directory|folder)\b|\b(directory|folder)\b[^.?]*\b(does not|doesn't|not) exist|"
    r"\b(no|zero|0)\b[^.?]*\bdata files?\b"
)


# ------------------------------------------------------------------------------------------------ duplicates


def _canonical_query(question: Question) -> str:
    query = {k: v for k, v in question.query.items() if k != "sig_figs"}
    for key in ("row_conditions", "path_conditions"):
        if isinstance(query.get(key), list):
            query[key] = sorted(json.dumps(c, sort_keys=True) for c in query[key])
    return json.dumps([question.type, query], sort_keys=True, default=str)


def duplicate_questions(questions: Sequence[Question]) -> list[Finding]:
    """Questions of one repository asked twice: the same rendered text, or the same type and query."""
    findings: list[Finding] = []
    by_text: dict[tuple[int, str], str] = {}
    by_query: dict[tuple[int, str], str] = {}
    for q in questions:
        text = render(q.question, q.variables)
        first_text = by_text.setdefault((q.seed, text), q.id)
        first_query = by_query.setdefault((q.seed, _canonical_query(q)), q.id)
        if first_text != q.id:
            findings.append(Finding(q.id, "duplicate_question", f"same text as {first_text}"))
        elif first_query != q.id:
            findings.append(Finding(q.id, "duplicate_question", f"same query as {first_query}"))
    return findings


# ------------------------------------------------------------------------------------------------ filters


def _row_conditions(question: Question) -> list[Condition]:
    conditions = question.query.get("row_conditions") or []
    return [c for c in conditions if isinstance(c, dict)]


def _path_conditions(question: Question) -> list[Condition]:
    conditions = question.query.get("path_conditions") or []
    return [c for c in conditions if isinstance(c, dict)]


def _describe(condition: Condition) -> str:
    name = condition.get("column", condition.get("variable"))
    if condition["op"] == "between":
        return f"{name} between {condition['low']} and {condition['high']}"
    value = condition.get("value", condition.get("values"))
    return f"{name} {condition['op']} {value}"


def between_same_bounds(questions: Sequence[Question]) -> list[Finding]:
    """``between X and X`` (or a reversed window): no range at all."""
    return [
        Finding(q.id, "between_same_bounds", _describe(c))
        for q in questions
        for c in _row_conditions(q)
        if c["op"] == "between" and float(c["low"]) >= float(c["high"])
    ]


def repeated_column(questions: Sequence[Question]) -> list[Finding]:
    """A column, or a path field, conditioned more than once in one question."""
    findings: list[Finding] = []
    for q in questions:
        columns = Counter(str(c["column"]) for c in _row_conditions(q))
        fields = Counter(str(c["variable"]) for c in _path_conditions(q))
        for name, n in (*columns.items(), *fields.items()):
            if n > 1:
                findings.append(Finding(q.id, "repeated_column", f"{name} conditioned {n} times"))
    return findings


def selected_files(question: Question, view: RepoView) -> list[str]:
    """The data files a question is about, as its query describes them (none where they do not exist)."""
    query = question.query
    if isinstance(query.get("path"), str):
        path = query["path"]
        return [path] if view.exists(path) else []
    if "path_conditions" in query:
        try:
            return view.selected_paths(view.select(_path_conditions(question)))
        except (ValueError, KeyError):  # a value or field the repository does not have: no file
            return []
    return []


def noop_row_condition(questions: Sequence[Question], view: RepoView) -> list[Finding]:
    """A row condition that, on its own, keeps every row of the question's files."""
    findings: list[Finding] = []
    for q in questions:
        conditions = _row_conditions(q)
        paths = selected_files(q, view) if conditions else []
        for c in conditions:
            # files are read only until one of them has a row the condition drops
            try:
                kept = all(bool(row_mask(view.table(p), [c]).all()) for p in paths)
            except KeyError:  # a column some file does not record: not a condition that keeps every row
                continue
            if paths and kept and any(view.table(p).n_rows for p in paths):
                findings.append(Finding(q.id, "noop_row_condition", f"{_describe(c)} keeps every row"))
    return findings


def noop_path_condition(questions: Sequence[Question], view: RepoView) -> list[Finding]:
    """A path condition that, on its own, keeps every data file; a prefix directory that holds all of them."""
    findings: list[Finding] = []
    for q in questions:
        for c in _path_conditions(q):
            try:
                everything = bool(view.select([c]).all())
            except (ValueError, KeyError):
                continue
            if everything:
                findings.append(Finding(q.id, "noop_path_condition", f"{_describe(c)} keeps every file"))
        prefix = q.query.get("prefix")
        if isinstance(prefix, str) and view.paths and all(p.startswith(prefix + "/") for p in view.paths):
            findings.append(Finding(q.id, "noop_path_condition", f"{prefix}/ holds every data file"))
    return findings


# ------------------------------------------------------------------------------------------------ revealing


def _fixes_a_value(condition: Condition) -> bool:
    op = condition["op"]
    if op == "eq":
        return True
    if op == "in":
        return len(set(map(str, condition["values"]))) <= 1
    if op == "between":
        return float(condition["low"]) >= float(condition["high"])
    return False


def reveals_constant(questions: Sequence[Question]) -> list[Finding]:
    """A bivariate question whose row filter fixes one of the two columns it analyses."""
    findings: list[Finding] = []
    for q in questions:
        if q.type not in BIVARIATE:
            continue
        analysed = {str(c) for c in q.query.get("columns") or []}
        for c in _row_conditions(q):
            if c["column"] in analysed and _fixes_a_value(c):
                findings.append(Finding(q.id, "reveals_constant", f"{_describe(c)} fixes an analysed column"))
    return findings


def reveals_tie(questions: Sequence[Question]) -> list[Finding]:
    """A "first run" question whose path conditions fix the date: every selected file (at least two) is then of
    one day, so the question's own words say that only run numbers could order them."""
    findings: list[Finding] = []
    for q in questions:
        if not q.query.get("first_run"):
            continue
        fixed = {c["variable"] for c in _path_conditions(q) if _fixes_a_value(c)}
        if "date" in fixed:
            findings.append(Finding(q.id, "reveals_tie", "the conditions fix the date"))
    return findings


def _window_values(view: RepoView, paths: list[str], condition: Condition) -> FloatArray:
    """The column's values over ``paths`` where the window keeps none of them; else (or for a column that is
    not numeric) no values. Files are read only until one of them has a value in the window."""
    low, high = float(condition["low"]), float(condition["high"])
    parts: list[FloatArray] = []
    for path in paths:
        try:
            values = np.asarray(view.table(path).column(str(condition["column"])).values, dtype=np.float64)
        except (TypeError, ValueError, KeyError):
            return np.empty(0)
        if np.any((values >= low) & (values <= high)):
            return np.empty(0)
        parts.append(values)
    return np.concatenate(parts) if parts else np.empty(0)


def narrow_window_reason(low: float, high: float, values: FloatArray) -> str | None:
    """Why a ``between`` window over a numeric column's ``values`` gives itself away, or None: it keeps none of
    the values and it holds no integer of an integer column, or it is narrower than ``NARROW_WINDOW`` of the
    values' interquartile range (of their range where that is zero). A window that keeps a value never does."""
    values = values[np.isfinite(values)]
    if values.size == 0 or low >= high or np.any((values >= low) & (values <= high)):
        return None
    if np.all(values == np.round(values)) and np.ceil(low) > np.floor(high):
        return "holds no integer of an integer column"
    q25, q75 = np.percentile(values, [25, 75])
    spread = float(q75 - q25) or float(values.max() - values.min())
    if spread > 0 and high - low < NARROW_WINDOW * spread:
        return f"width {high - low:.3g} is {100 * (high - low) / spread:.2g}% of the column's spread {spread:.3g}"
    return None


def reveals_narrow_window(questions: Sequence[Question], view: RepoView) -> list[Finding]:
    """A ``between`` window so narrow (against the column in the question's files) that it must be empty."""
    findings: list[Finding] = []
    for q in questions:
        windows = [c for c in _row_conditions(q) if c["op"] == "between"]
        if not windows:
            continue
        paths = selected_files(q, view)
        for c in windows:
            values = _window_values(view, paths, c)
            reason = narrow_window_reason(float(c["low"]), float(c["high"]), values)
            if reason:
                findings.append(Finding(q.id, "reveals_narrow_window", f"{_describe(c)}: {reason}"))
    return findings


# ------------------------------------------------------------------------------------------------ wording


_GENERIC_TOPICS = re.compile(r"\b(rows?|conditions?|statistics?|columns?)\b")


def _variant_findings(question: Question, defect: str, problem: Callable[[str], str | None]) -> list[Finding]:
    """One finding for ``question`` when ``problem`` finds something in any of its variants: the variants it
    was found in and the first problem found."""
    found = [(name, p) for name, text in variants(question) if (p := problem(text))]
    if not found:
        return []
    names = ", ".join(name for name, _ in found)
    return [Finding(question.id, defect, f"{names}: {found[0][1]}")]


def not_possible_problem(qtype: str, text: str) -> str | None:
    """A "not possible" sentence that makes no sense in a readme (any) or extension (a generic one) question."""
    for s in sentences(text):
        lowered = s.lower()
        if NOT_POSSIBLE in lowered and (qtype == "readme" or _GENERIC_TOPICS.search(lowered)):
            return s[:80]
    return None


def wording_not_possible(questions: Sequence[Question]) -> list[Finding]:
    """A "not possible" instruction where it makes no sense: any in a readme question (always answerable),
    one about rows, conditions, statistics or columns in an extension question."""
    return [
        f
        for q in questions
        if q.type in ("readme", "extension")
        for f in _variant_findings(q, "wording_not_possible", partial(not_possible_problem, q.type))
    ]


def readme_presupposed_problem(qtype: str, text: str) -> str | None:
    """What a title or abstract question leaves unsaid: the answer without a README, or without the item."""
    own = [s for s in _own_not_possible(text) if _NEGATION.search(s)]
    no_readme = any("readme" in s for s in own)
    no_item = any(qtype in s for s in own)
    missing = [w for w, ok in (("no README", no_readme), (f"no {qtype}", no_item)) if not ok]
    return f"says nothing of {' and '.join(missing)}" if missing else None


def wording_readme_presupposed(questions: Sequence[Question]) -> list[Finding]:
    """A title or abstract question that does not say what to answer without a README, or without the
    title (abstract) in it."""
    return [
        f
        for q in questions
        if q.type in ("title", "abstract")
        for f in _variant_findings(q, "wording_readme_presupposed", partial(readme_presupposed_problem, q.type))
    ]


def _empty_count_needs(question: Question) -> list[tuple[str, re.Pattern[str]]]:
    if question.type == "count_rows":
        needs = [("a missing file", _NO_FILE)]
        if _row_conditions(question):
            needs.append(("no row meeting the conditions", _NO_ROW))
        return needs
    if question.type == "prefix":
        return [("a missing directory", _NO_DIRECTORY)]
    if question.type == "condition":
        return [("no file meeting the conditions", _NO_FILE)]
    return []


def empty_count_problem(needs: list[tuple[str, re.Pattern[str]]], text: str) -> str | None:
    own = _own_not_possible(text)
    missing = [what for what, pattern in needs if not any(pattern.search(s) for s in own)]
    return f"nothing on {' or '.join(missing)}" if missing else None


def wording_empty_count(questions: Sequence[Question]) -> list[Finding]:
    """A count whose empty result is answered "not possible" without a sentence of its own saying so."""
    return [
        f
        for q in questions
        if q.type in COUNTS
        for f in _variant_findings(q, "wording_empty_count", partial(empty_count_problem, _empty_count_needs(q)))
    ]


_ONE_OF = re.compile(r"\bone of (?!:)(?P<rest>[^?;:]*)")
_CLAUSE_END = re.compile(r" and |\. |\.$|\?")


def list_without_or(text: str) -> str | None:
    """The first "one of a, b" list of ``text`` whose last item is not joined by "or", or None."""
    for match in _ONE_OF.finditer(text):
        rest = match.group("rest")
        end = _CLAUSE_END.search(rest)
        items = rest[: end.start()] if end else rest
        if "," in items and " or " not in items:
            return "one of " + items[:60]
    return None


def wording_list_without_or(questions: Sequence[Question]) -> list[Finding]:
    return [f for q in questions for f in _variant_findings(q, "wording_list_without_or", list_without_or)]


_NUMERIC_ONLY = re.compile(
    r"numeric (columns?|values?|data)? ?only|only (for|when|of|on|to) [^.?]*numeric|numeric[^.?]*\bonly\b|"
    r"must be numeric|(defined|applies|meaningful) [^.?]*numeric"
)


def numeric_only_problem(text: str) -> str | None:
    return None if _NUMERIC_ONLY.search(text.lower()) else "no statement that only numeric columns qualify"


def wording_numeric_only(questions: Sequence[Question], repository: Repository) -> list[Finding]:
    """A univariate statistic of a non-numeric column that does not say it is defined for numeric columns only."""
    types = {v.column: v.type for v in repository.spec.variables}
    findings: list[Finding] = []
    for q in questions:
        column = q.query.get("column")
        if q.type in UNIVARIATE and isinstance(column, str) and types.get(column) not in NUMERIC_TYPES:
            findings += _variant_findings(q, "wording_numeric_only", numeric_only_problem)
    return findings


# "a" before these vowel-letter words and "an" before these consonant-letter words are right.
_A_BEFORE_VOWEL = re.compile(r"^(u[bcdfgklmnprstv][aeiouy]|uni|use|usu|ut[aeiou]|eu|one\b|once\b|ure)", re.I)
_AN_BEFORE_CONSONANT = re.compile(r"^(hour|honou?r|honest|heir|[A-Z]{2,}\b|[FHLMNRSX]\b)")
# An article: lower-case "a"/"an" anywhere, capitalised only where a sentence starts ("is A and B" names a value).
_ARTICLE = re.compile(r"(?:(?<![\w`'-])(?P<lower>an?)|(?:^|(?<=[.?!] ))(?P<upper>An?)) (?P<word>[A-Za-z][\w-]*)")
# Words that never follow an article: "a" before them is a value ("`grade` is a or b").
_NOT_AFTER_ARTICLE = frozenset({"and", "or", "is", "are", "of", "in", "to", "at", "on", "as", "if", "nor", "but"})
_DOUBLED = re.compile(r"(?<![\w`])(?P<word>[A-Za-z]{2,}) (?P=word)\b", re.I)
_SPACING = re.compile(r" [,.?]|  |\.\.(?!\.)|``")


def grammar_defects(text: str) -> list[str]:
    found: list[str] = []
    for m in _ARTICLE.finditer(text):
        article, word = m.group("lower") or m.group("upper"), m.group("word")
        if word.lower() in _NOT_AFTER_ARTICLE:
            continue
        vowel = word[0].lower() in "aeiou"
        wrong_a = article.lower() == "a" and vowel and not _A_BEFORE_VOWEL.match(word)
        wrong_an = article.lower() == "an" and not vowel and not _AN_BEFORE_CONSONANT.match(word)
        if wrong_a or wrong_an:
            found.append(m.group(0))
    found += [m.group(0) for m in _DOUBLED.finditer(text)]
    found += [repr(m.group(0)) for m in _SPACING.finditer(text)]
    return found


def grammar_problem(text: str) -> str | None:
    found = grammar_defects(text)
    return ", ".join(found[:3]) if found else None


def wording_grammar(questions: Sequence[Question]) -> list[Finding]:
    return [f for q in questions for f in _variant_findings(q, "wording_grammar", grammar_problem)]


# ------------------------------------------------------------------------------------------------ all

TextDetector = Callable[[Sequence[Question]], list[Finding]]
DataDetector = Callable[[Sequence[Question], RepoView], list[Finding]]

TEXT_DETECTORS: dict[str, TextDetector] = {
    "duplicate_question": duplicate_questions,
    "between_same_bounds": between_same_bounds,
    "repeated_column": repeated_column,
    "reveals_constant": reveals_constant,
    "reveals_tie": reveals_tie,
    "wording_not_possible": wording_not_possible,
    "wording_readme_presupposed": wording_readme_presupposed,
    "wording_empty_count": wording_empty_count,
    "wording_list_without_or": wording_list_without_or,
    "wording_grammar": wording_grammar,
}
DATA_DETECTORS: dict[str, DataDetector] = {
    "noop_row_condition": noop_row_condition,
    "noop_path_condition": noop_path_condition,
    "reveals_narrow_window": reveals_narrow_window,
    "wording_numeric_only": lambda questions, view: wording_numeric_only(questions, view.repository),
}
GROUPS: dict[str, tuple[str, ...]] = {
    "duplicates": ("duplicate_question",),
    "degenerate filters": ("between_same_bounds", "noop_row_condition", "repeated_column", "noop_path_condition"),
    "revealing": ("reveals_constant", "reveals_narrow_window", "reveals_tie"),
    "wording": (
        "wording_not_possible",
        "wording_readme_presupposed",
        "wording_empty_count",
        "wording_list_without_or",
        "wording_numeric_only",
        "wording_grammar",
    ),
}
DEFECTS: tuple[str, ...] = tuple(d for group in GROUPS.values() for d in group)


def audit_repository(questions: Sequence[Question], repository: Repository) -> list[Finding]:
    """Every finding of every detector over the questions of one repository."""
    view = RepoView(repository)
    findings: list[Finding] = []
    for text_detector in TEXT_DETECTORS.values():
        findings += text_detector(questions)
    for data_detector in DATA_DETECTORS.values():
        findings += data_detector(questions, view)
    return findings


def defect_counts(findings: Iterable[Finding]) -> dict[str, int]:
    counts = Counter(f.defect for f in findings)
    return {d: counts[d] for d in DEFECTS}


def summary(findings: Sequence[Finding], examples: int = 3) -> str:
    """Counts per defect class with a few example ids and details, one line each."""
    by_class: dict[str, list[Finding]] = defaultdict(list)
    for f in findings:
        by_class[f.defect].append(f)
    lines = []
    for defect in DEFECTS:
        found = by_class.get(defect, [])
        shown = "; ".join(f"{f.id} ({f.detail})" for f in found[:examples])
        lines.append(f"{defect}: {len(found)}" + (f" e.g. {shown}" if found else ""))
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------ balance


@dataclass(frozen=True)
class TypeBalance:
    type: str
    n: int
    unanswerable_share: float
    top_answer: str
    top_share: float


@dataclass(frozen=True)
class Balance:
    n: int
    per_type: tuple[TypeBalance, ...]
    abstain_floor: float
    prior_score: float
    hypothesis_n: int
    hypothesis_yes_share: float
    readme_repositories: int
    title_share: float
    abstract_share: float
    # The question forms whose unanswerability is scientific: how many, and the share answered "not possible"
    # (above one half, recognising the form would pay).
    first_run_n: int = 0
    first_run_not_possible: float = float("nan")
    factor_n: int = 0
    factor_not_possible: float = float("nan")

    @property
    def prior_margin(self) -> float:
        return self.prior_score - self.abstain_floor


def _answer_key(answer: Answer) -> str:
    if isinstance(answer, str):
        return answer.strip().casefold()
    return repr(float(answer))


def _as_graded_value(answer: Answer) -> str | Decimal:
    if isinstance(answer, str):
        return answer
    return Decimal(answer) if isinstance(answer, int) else Decimal(repr(float(answer)))


def _share(part: int, whole: int) -> float:
    return part / whole if whole else float("nan")


def balance(records: Sequence[QuestionRecord], prior: PriorTable) -> Balance:
    """The answer balance of ``records`` (evaluation seeds) and the score of ``prior`` (learned elsewhere)."""
    questions = [r.question for r in records]
    by_type: dict[str, list[Question]] = defaultdict(list)
    for q in questions:
        by_type[q.type].append(q)
    per_type = []
    for qtype, group in by_type.items():
        top, top_n = Counter(_answer_key(q.answer) for q in group).most_common(1)[0]
        unanswerable = sum(not q.answerable for q in group)
        per_type.append(TypeBalance(qtype, len(group), unanswerable / len(group), top, top_n / len(group)))
    abstain = sum(grade(r.graded, NOT_POSSIBLE).correct for r in records)
    prior_right = sum(grade(r.graded, _as_graded_value(prior.answer(r.question.type))).correct for r in records)
    hypotheses = [q for q in questions if q.type == "bivariate_hypothesis" and q.answerable]
    yes = sum(_answer_key(q.answer) == "yes" for q in hypotheses)
    first_runs = [q for q in questions if q.query.get("first_run")]
    factors = [q for q in questions if (q.query.get("test") or {}).get("name") == "welch_factor"]
    with_readme = {q.seed for q in questions if q.type == "readme" and _answer_key(q.answer) == "yes"}
    shares = {}
    for qtype in ("title", "abstract"):
        group = [q for q in questions if q.type == qtype and q.seed in with_readme]
        shares[qtype] = _share(sum(q.answerable for q in group), len(group))
    return Balance(
        n=len(records),
        per_type=tuple(per_type),
        abstain_floor=_share(abstain, len(records)),
        prior_score=_share(prior_right, len(records)),
        hypothesis_n=len(hypotheses),
        hypothesis_yes_share=_share(yes, len(hypotheses)),
        readme_repositories=len(with_readme),
        title_share=shares["title"],
        abstract_share=shares["abstract"],
        first_run_n=len(first_runs),
        first_run_not_possible=_share(sum(not q.answerable for q in first_runs), len(first_runs)),
        factor_n=len(factors),
        factor_not_possible=_share(sum(not q.answerable for q in factors), len(factors)),
    )


# ------------------------------------------------------------------------------------------------ criteria

PRIOR_MARGIN = 0.05
YES_SHARE = (0.35, 0.65)
README_ANSWERABLE = 0.5
FORM_NOT_POSSIBLE = 0.5  # a form answered "not possible" more often than not would make abstaining on it pay


@dataclass(frozen=True)
class Criterion:
    name: str
    passed: bool
    detail: str


def criteria(result: Balance, findings: Sequence[Finding]) -> list[Criterion]:
    """The done-when checks: guessing does not pay, balanced tests, README facts mostly present, no defects."""
    counts = defect_counts(findings)
    low, high = YES_SHARE
    out = [
        Criterion(
            "prior score <= abstain floor + 0.05",
            result.prior_score <= result.abstain_floor + PRIOR_MARGIN,
            f"prior {result.prior_score:.3f}, abstain {result.abstain_floor:.3f}, margin {result.prior_margin:+.3f}",
        ),
        Criterion(
            f"hypothesis yes share in [{low}, {high}]",
            low <= result.hypothesis_yes_share <= high,
            f"{result.hypothesis_yes_share:.3f} of {result.hypothesis_n}",
        ),
        Criterion(
            "title answerable in >= 50% of README repositories",
            result.title_share >= README_ANSWERABLE,
            f"{result.title_share:.3f} of {result.readme_repositories}",
        ),
        Criterion(
            "abstract answerable in >= 50% of README repositories",
            result.abstract_share >= README_ANSWERABLE,
            f"{result.abstract_share:.3f} of {result.readme_repositories}",
        ),
    ]
    for form, n, share in (
        ("first-run", result.first_run_n, result.first_run_not_possible),
        ("factor", result.factor_n, result.factor_not_possible),
    ):
        out.append(
            Criterion(
                f"{form} questions not possible in <= 50%",
                n == 0 or share <= FORM_NOT_POSSIBLE,
                f"{share:.3f} of {n}" if n else "none asked",
            )
        )
    for group, defects in GROUPS.items():
        total = sum(counts[d] for d in defects)
        detail = ", ".join(f"{d} {counts[d]}" for d in defects)
        out.append(Criterion(f"zero {group}", total == 0, detail))
    return out


def failed(checks: Sequence[Criterion]) -> list[Criterion]:
    return [c for c in checks if not c.passed]


def group_by_seed(records: Iterable[QuestionRecord]) -> Mapping[int, list[Question]]:
    grouped: dict[int, list[Question]] = defaultdict(list)
    for r in records:
        grouped[r.question.seed].append(r.question)
    return grouped


class CachedRepository(Repository):
    """A repository that synthesises each table once: the generator and the audit read the same files."""

    def __init__(self, spec: Spec) -> None:
        super().__init__(spec)
        self._cache: dict[str, Table] = {}

    def table(self, path: str) -> Table:
        table = self._cache.get(path)
        if table is None:
            table = self._cache[path] = super().table(path)
        return table


def audit_seeds(
    seeds: Iterable[int], options: Options | None = None, on_repository: Callable[[], None] | None = None
) -> tuple[list[QuestionRecord], list[Finding]]:
    """The records of the repositories ``seeds`` (as ``sgfs qa`` writes them) and every finding over them."""
    options = options or Options()
    records: list[QuestionRecord] = []
    findings: list[Finding] = []
    for seed in seeds:
        repository = CachedRepository(generators.repository(seed).spec)
        generated = generated_records([repository], options)
        records += generated
        findings += audit_repository([r.question for r in generated], repository)
        if on_repository is not None:
            on_repository()
    return records, findings


def learn_prior(seeds: Sequence[int], options: Options | None = None) -> PriorTable:
    """The prior-only policy learned on the questions of ``seeds``."""
    options = options or Options()
    records = generated_records([generators.repository(s) for s in seeds], options)
    return learn([r.question for r in records], seeds, options.per_type, options.unanswerable)
