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

Answer = str | int | float
# A JSON value as the standard library decodes it (numbers as int or float).
Json: TypeAlias = "str | int | float | bool | list[Json] | dict[str, Json] | None"


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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
