"""The question record and the fixed vocabularies of the benchmark (docs/questions.md)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, TypeAlias

from generators.spec import GENERATOR_VERSION

NOT_POSSIBLE = "not possible"
# The version of what a question means and how it is graded. Bumped whenever either changes (2: balanced answers,
# scientific unanswerability, explicit empty-result wording, the stricter grader of issue 23; 3: "first run" and
# factor questions with the ambiguous_definition and confounded reasons, no chi-square hypothesis questions), so
# that runs made before a change are never compared with runs made after it (run.json records it).
QUESTION_FORMAT = 3

CATEGORIES: dict[str, str] = {
    "readme": "Repository Metadata",
    "title": "Repository Metadata",
    "abstract": "Repository Metadata",
    "extension": "File Metadata",
    "count_rows": "File Metadata",
    "prefix": "Directory Traversal",
    "condition": "Directory Traversal",
    "univariate_single_file": "Univariate Statistics",
    "univariate_condition": "Univariate Statistics",
    "bivariate_statistic": "Bivariate Statistics",
    "bivariate_hypothesis": "Bivariate Statistics",
}
FIXED_TYPES = ("readme", "title", "abstract", "extension")
SAMPLED_TYPES = tuple(t for t in CATEGORIES if t not in FIXED_TYPES)
REASONS = (
    "no_readme",
    "title_not_in_readme",
    "abstract_not_in_readme",
    "no_file",
    "no_row",
    "undefined_statistic",
    "too_few_rows",
    "constant_input",
    "not_measured",
    "ambiguous_definition",
    "confounded",
    "missing_values",
)
ANSWER_KINDS = ("categorical", "integer", "continuous", "yes_no")
# The two families of ambiguity of Ambig-DS (docs/questions.md, "Ambiguous twins"): which quantity (target) or
# which statistic or rule (objective) the question means is left open.
AMBIGUITY_KINDS = ("target", "objective")
TWIN_SUFFIX = "-ambig"  # an ambiguous twin's id is its full twin's with this after it
# The decision a twin leaves open, and its family.
DECISIONS: dict[str, str] = {"file": "target", "column": "target", "statistic": "objective", "correlation": "objective"}

Answer = str | int | float
# A JSON value as the standard library decodes it (numbers as int or float).
Json: TypeAlias = "str | int | float | bool | list[Json] | dict[str, Json] | None"


@dataclass(frozen=True)
class Decoy:
    """A reading of an ambiguous twin other than the intended one, with its exact answer: its ``query`` is the
    full question's with the open decision taken the other way (docs/questions.md)."""

    reading: str  # what this reading takes the open decision to be, in words ("the median")
    answer: Answer
    query: dict[str, Any]


@dataclass(frozen=True)
class Ambiguity:
    """What an ambiguous twin leaves open (``Question.ambiguity``): the decision, its intended reading (the full
    twin's, whose answer is the twin's ``answer``), every other reading with its answer, and what the
    clarification oracle says when asked about it (``qa.clarify``)."""

    kind: str  # one of AMBIGUITY_KINDS
    decision: str  # one of DECISIONS
    full_id: str  # the id of the full twin: the same question with the decision stated
    open: str  # the words the twin uses where the full twin states the decision ("the typical value")
    intended: str  # the intended reading, in words ("the mean (arithmetic average)")
    clarification: str  # the oracle's reply to a question about the open decision
    keywords: list[str]  # words (lowercase) of which one puts a question about this twin in the oracle's scope
    decoy_answers: list[Decoy]


@dataclass(frozen=True)
class Question:
    """One question record (docs/questions.md): what ``sgfs qa`` writes, one JSON object per line, and what
    ``sgfs eval``, the Inspect task and ``sgfs agent`` read back (``qa.records``)."""

    id: str
    seed: int
    category: str
    type: str
    question: str
    variables: dict[str, str]
    answer: Answer
    answer_kind: str
    choices: list[str] | None
    sig_figs: int | None
    answerable: bool
    unanswerable_reason: str | None
    evidence: list[str]
    query: dict[str, Any]
    paraphrases: list[str] = field(default_factory=list)
    # The generator that made the repository (generators.spec.GENERATOR_VERSION): answers hold for its bytes only.
    generator_version: int = GENERATOR_VERSION
    # For a question about a relation of the study design (a hypothesis or statistic over a cause and its
    # outcome): "consistent" when the data follow the design's expected direction, "violating" when the
    # counterfactual world turned it around (spec.counterfactual); None for every other question.
    prior: str | None = None
    counterfactual: bool = False  # made in the counterfactual world (--counterfactual): only its mount answers
    mess: int = 0  # the repository's messiness level (--mess): only a mount of that level answers
    # Set on an ambiguous twin only (sgfs qa --ambiguous): the record has no key "ambiguity" otherwise.
    ambiguity: Ambiguity | None = None

    def to_dict(self) -> dict[str, Any]:
        record = asdict(self)
        if record["ambiguity"] is None:
            del record["ambiguity"]  # records of plain questions are what they were before twins existed
        return record
