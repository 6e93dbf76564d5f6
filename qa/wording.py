"""Question wording: the templated text and three procedural paraphrases, from one structured draft.

The templated text names columns and path variables by their short names, states every definition it
relies on and ends with the answer instructions. The paraphrases say the same thing with the variables'
readable names and units and another sentence structure, and keep every ``{path}`` placeholder. A
paraphraser is anything with ``paraphrase(draft) -> list[str]``; an LLM backend can implement the same
protocol later.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from generators.builders.text import data_topic, lower_name
from generators.repository import layout_template
from generators.spec import Spec, Variable

Condition = dict[str, Any]

STAT_TEMPLATED = {
    "mean": "mean (arithmetic average)",
    "median": "median (the mean of the two middle values when the count is even)",
    "std": "sample standard deviation (dividing by n - 1)",
    "variance": "sample variance (dividing by n - 1)",
    "min": "minimum",
    "max": "maximum",
    "sum": "sum",
    # The open statistics of ambiguous twins (qa.twins): each names a family of statistics, not one of them.
    "typical": "typical value",
    "spread": "spread (a standard deviation or a variance, dividing by n - 1)",
}
STAT_PLAIN = {
    "mean": "average",
    "median": "median (averaging the two middle values for an even count)",
    "std": "sample standard deviation (n - 1 in the denominator)",
    "variance": "sample variance (n - 1 in the denominator)",
    "min": "smallest value",
    "max": "largest value",
    "sum": "total",
    "typical": "typical value",
    "spread": "spread (standard deviation or variance, n - 1 in the denominator)",
}
# Each definition states the columns it is defined for: a statistic asked of other columns is "not possible".
BIVARIATE_TEMPLATED = {
    "pearson": "Pearson's correlation coefficient r (defined only when both columns are numeric)",
    "spearman": "Spearman's rank correlation coefficient rho (tied values get their average rank; defined only "
    "when both columns are numeric)",
    "chi2": "the chi-square statistic of Pearson's test of independence on the contingency table of the two "
    "columns (no continuity correction; defined only when both columns are categorical)",
    # An open twin's: which of the two coefficients is left open (a bare "correlation coefficient" reads as Pearson's).
    "correlation": "the correlation coefficient (Pearson's or Spearman's; defined only when both columns are numeric)",
}
BIVARIATE_PLAIN = {
    "pearson": "Pearson correlation (r; both columns must be numeric)",
    "spearman": "Spearman rank correlation (rho, average ranks for ties; both columns must be numeric)",
    "chi2": "Pearson chi-square statistic for independence of the two columns (contingency table of "
    "observed values, no continuity correction; both columns must be categorical)",
    "correlation": "correlation coefficient (Pearson's or Spearman's; both columns must be numeric)",
}
TESTS = {
    "pearson": (
        "a two-sided test of zero Pearson correlation (t distribution with n - 2 degrees of freedom; defined "
        "only when both columns are numeric)",
        "there is no linear correlation between `{a}` and `{b}`",
    ),
    "spearman": (
        "a two-sided test of zero Spearman rank correlation (t approximation, n - 2 degrees of "
        "freedom, average ranks for ties; defined only when both columns are numeric)",
        "there is no monotonic association between `{a}` and `{b}`",
    ),
    "chi2": (
        "Pearson's chi-square test of independence (no continuity correction; defined only when both columns "
        "are categorical)",
        "`{a}` and `{b}` are independent",
    ),
    "welch": (
        "Welch's two-sided two-sample t-test (unequal variances)",
        "the mean of `{b}` is the same in rows where `{a}` is {g1} and rows where `{a}` is {g2}",
    ),
    "welch_factor": (
        "Welch's two-sided two-sample t-test (unequal variances) between the pooled rows of the files where `{a}` "
        "is {g1} and those of the files where `{a}` is {g2}",
        "the mean of `{b}` is the same in these two groups of files",
    ),
}
# What "the first run" of a selection means; whether the files show which file that is, the question leaves to them.
RUN_NOTE = "Each data file holds one run, and runs are ordered by their date."
RUN_NUMBER_NOTE = (
    " Run numbers count the runs of one group of files, those that agree in every other path field, so they order "
    "runs of the same group on the same date only."
)
# A README whose title is hidden still starts with the repository's short name as a heading.
TITLE_NOTE = (
    "A heading that only gives the repository's short name (lowercase words joined by hyphens) is not the title."
)
PLACEHOLDER_MEANINGS = {
    "date": "the measurement date",
    "researcher": "the researcher's name",
    "seq_number": "the run number",
}
NOT_POSSIBLE_TEXT = '"not possible"'
# What each statistic needs, said in the question when it needs more than one row.
MIN_ROWS_TEXT = {"std": 2, "variance": 2, "spread": 2, "pearson": 3, "spearman": 3, "correlation": 3, "welch": 2}


@dataclass
class Draft:
    """Everything the wording needs, independent of the answer."""

    type: str
    spec: Spec
    statistic: str | None = None
    columns: list[str] = field(default_factory=list)
    path_conditions: list[Condition] = field(default_factory=list)
    path_display: dict[str, str] = field(default_factory=dict)  # rendered value -> value as worded
    row_conditions: list[Condition] = field(default_factory=list)
    test: dict[str, Any] | None = None
    sig_figs: int | None = None
    extra_variables: dict[str, Variable] = field(default_factory=dict)  # named columns the spec lacks
    first_run: bool = False  # a count_rows question about the first run of the files the path conditions select


class Paraphraser(Protocol):
    def paraphrase(self, draft: Draft) -> list[str]: ...


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _closing(draft: Draft) -> str:
    figures = f" Give the answer to {draft.sig_figs} significant figures." if draft.sig_figs else ""
    return f"{layout_note(draft)}{figures}{not_possible_note(draft)}"


def or_list(items: list[str]) -> str:
    """``a``, ``a or b``, ``a, b or c``."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} or {items[-1]}"


def not_possible_note(draft: Draft) -> str:
    """When this question must be answered "not possible", in its own words: only the cases that can arise for its
    type, and for a count, that an empty selection is "not possible", never 0 (the paper's convention)."""
    t = draft.type
    if t in ("readme", "extension"):
        return ""  # always answerable
    if t == "title":
        return f" If there is no README, or the README does not give the title, answer {NOT_POSSIBLE_TEXT}."
    if t == "abstract":
        return f" If there is no README, or the README has no abstract, answer {NOT_POSSIBLE_TEXT}."
    cases: list[str] = []
    factor = _is_factor(draft)
    if draft.first_run:
        cases.append("no data file meets the path conditions")
        cases.append("their dates (and run numbers) do not show which of them is the first run")
    elif t in ("count_rows", "univariate_single_file"):
        cases.append("there is no such file")
    elif t == "prefix":
        cases.append("there is no such directory")
    elif t == "condition":
        cases.append("no data file meets these conditions")
    else:
        cases.append("no data file meets the path conditions")
    if draft.row_conditions:
        cases.append("no row meets the row conditions")
    if t in ("count_rows", "prefix", "condition"):
        return f" If {or_list(cases)}, answer {NOT_POSSIBLE_TEXT} (not 0)."
    name = draft.statistic or (draft.test or {}).get("name", "")
    least = MIN_ROWS_TEXT.get(name)
    if t.startswith("univariate"):
        cases.append(f"the column `{draft.columns[0]}` is not recorded in those files")
        cases.append(
            "the column is not numeric (the statistic is defined for numeric columns only; a categorical column, "
            "even one with ordered levels, has none)"
        )
        if least:
            cases.append(f"fewer than {least} rows remain")
        return f" Answer {NOT_POSSIBLE_TEXT} if {or_list(cases)}."
    if factor:
        a = draft.columns[0]
        cases[-1] = "either group has no data file"
        other = (
            "another path field or in the researcher"
            if "researcher" in draft.spec.template.placeholders
            else ("another path field")
        )
        cases.append(
            f"the two groups of files also differ in {other} (no value of it is shared by the two groups, so that "
            f"its effect cannot be told apart from that of `{a}`; dates and run numbers do not count)"
        )
    if name in ("welch", "welch_factor"):
        cases.append("either group has fewer than 2 rows")
        cases.append("both groups take a single value each")
    else:
        cases.append("either column is of a type the statistic is not defined for (see its definition)")
        if least:
            cases.append(f"fewer than {least} rows remain")
        cases.append("either column takes a single value over the selected rows")
    return f" Answer {NOT_POSSIBLE_TEXT} if {or_list(cases)}."


def layout_note(draft: Draft) -> str:
    """Where the repository does not show the path layout (it has no README), a question with path conditions
    states it, so that every placeholder it names can be found in the paths."""
    factor = _is_factor(draft)
    if draft.spec.readme.present or not (draft.path_conditions or draft.first_run or factor):
        return ""
    meanings: list[str] = []
    named = [c["variable"] for c in draft.path_conditions]
    if draft.first_run:
        named += [n for n in ("date", "seq_number") if n in draft.spec.template.placeholders]
    if factor:
        named.append(draft.columns[0])
    for name in named:
        if name in PLACEHOLDER_MEANINGS:
            meaning = f"`{{{name}}}` is {PLACEHOLDER_MEANINGS[name]} as written in the path"
        else:
            rendered = _rendered_example(draft, name)
            meaning = f"`{{{name}}}` appears as `{rendered}` when `{name}` is {draft.path_display[rendered]}"
        if meaning not in meanings:
            meanings.append(meaning)
    return f" Data file paths here follow the layout `{layout_template(draft.spec)}`, where {'; '.join(meanings)}."


def _rendered_example(draft: Draft, name: str) -> str:
    """A value of path field ``name`` as the question names it (its condition's or its test's first group)."""
    for condition in draft.path_conditions:
        if condition["variable"] == name:
            return str(condition["value"] if condition["op"] == "eq" else condition["values"][0])
    return str((draft.test or {})["groups"][0])


# -- conditions ---------------------------------------------------------------------------------------
def _path_name(draft: Draft, variable: str, readable: bool) -> str:
    if not readable:
        return f"`{variable}`"
    if variable in PLACEHOLDER_MEANINGS:
        label = PLACEHOLDER_MEANINGS[variable].replace("'s name", "")
    else:
        pv = draft.spec.path_variable(variable)
        label = f"the {pv.name}" + (f" ({pv.unit})" if pv.unit else "")
    return f"{label} [path field `{variable}`]"  # the exact name next to the label, as for columns


def path_phrase(draft: Draft, readable: bool = False) -> str:
    parts = []
    for c in draft.path_conditions:
        name = _path_name(draft, c["variable"], readable)
        if c["op"] == "eq":
            parts.append(f"{name} is {draft.path_display[c['value']]}")
        else:
            values = [draft.path_display[v] for v in c["values"]]
            parts.append(f"{name} is one of {or_list(values)}")
    return " and ".join(parts)


def run_note(draft: Draft) -> str:
    """How runs are ordered, for a question about the first run."""
    return RUN_NOTE + (RUN_NUMBER_NOTE if "seq_number" in draft.spec.template.placeholders else "")


def files_phrase(draft: Draft, readable: bool = False) -> str:
    """The files a question pools: those whose path meets its conditions, or all of them."""
    paths = path_phrase(draft, readable)
    return f"the data files whose path shows that {paths}" if paths else "all data files of this repository"


def _is_factor(draft: Draft) -> bool:
    return (draft.test or {}).get("name") == "welch_factor"


def _column_name(draft: Draft, column: str, readable: bool) -> str:
    if not readable:
        return f"`{column}`"
    variable = draft.extra_variables.get(column) or draft.spec.variable(column)
    return f"{variable.name}" + (f" ({variable.unit})" if variable.unit else "") + f" [column `{column}`]"


def row_phrase(draft: Draft, readable: bool = False) -> str:
    parts = []
    for c in draft.row_conditions:
        name = _column_name(draft, c["column"], readable)
        op = c["op"]
        if op == "eq":
            parts.append(f"{name} is {c['value']}")
        elif op == "in":
            parts.append(f"{name} is one of {or_list(list(c['values']))}")
        elif op == "between":
            parts.append(f"{name} is between {_number(c['low'])} and {_number(c['high'])} (inclusive)")
        else:
            words = {"gt": "is greater than", "lt": "is less than", "ge": "is at least", "le": "is at most"}
            parts.append(f"{name} {words[op]} {_number(c['value'])}")
    return " and ".join(parts)


# -- templated ----------------------------------------------------------------------------------------
def templated(draft: Draft) -> str:
    t = draft.type
    rows = row_phrase(draft)
    where = f" where {rows}" if rows else ""
    using = f", using only the rows where {rows}" if rows else ""
    paths = path_phrase(draft)
    if t == "readme":
        text = "Does this repository contain a README file at its top level? Answer yes or no."
    elif t == "title":
        text = (
            "If this repository has a README that gives the research project's title, what is that title? "
            f"{TITLE_NOTE} Give it exactly."
        )
    elif t == "abstract":
        text = (
            "If this repository has a README with an abstract of the project, what is the abstract's first "
            "sentence? Quote it exactly."
        )
    elif t == "extension":
        text = (
            "What file extension do the data files in this repository use? Answer with one of: csv, json, "
            "jsonl, xlsx, txt, log."
        )
    elif t == "count_rows" and draft.first_run:
        text = (
            f"{run_note(draft)} Among {files_phrase(draft)}, how many data rows (records, not counting any header "
            f"line) does the first run contain{where}?"
        )
    elif t == "count_rows":
        text = f"How many data rows (records, not counting any header line) does the file {{path}} contain{where}?"
    elif t == "prefix":
        text = (
            "How many data files are stored under the directory {path}, counting all of its subdirectories "
            "(README files do not count)?"
        )
    elif t == "condition":
        text = f"How many data files in this repository have a path in which {paths}?"
    elif t == "univariate_single_file":
        assert draft.statistic
        text = (
            f"In the file {{path}}, what is the {STAT_TEMPLATED[draft.statistic]} of the column "
            f"`{draft.columns[0]}`{using}?"
        )
    elif t == "univariate_condition":
        assert draft.statistic
        text = (
            f"Across all data files whose path shows that {paths}, pooling their rows, what is the "
            f"{STAT_TEMPLATED[draft.statistic]} of the column `{draft.columns[0]}`{using}?"
        )
    elif t == "bivariate_statistic":
        assert draft.statistic
        a, b = draft.columns
        text = (
            f"Across all data files whose path shows that {paths}, pooling their rows, what is "
            f"{BIVARIATE_TEMPLATED[draft.statistic]} between the columns `{a}` and `{b}`{using}?"
        )
    elif t == "bivariate_hypothesis" and _is_factor(draft):
        a, b = draft.columns
        text = (
            f"Does the path field `{a}` affect `{b}`? Among {files_phrase(draft)}, does {_test_text(draft)} Answer "
            "yes or no."
        )
    elif t == "bivariate_hypothesis":
        assert draft.test
        text = (
            f"Across all data files whose path shows that {paths}, pooling their rows{using}: does "
            f"{_test_text(draft)} Answer yes or no."
        )
    else:
        raise ValueError(t)
    return text + _closing(draft)


def _test_text(draft: Draft, readable: bool = False) -> str:
    assert draft.test is not None
    name = draft.test["name"]
    description, null = TESTS[name]
    a, b = draft.columns
    groups = draft.test.get("groups", [None, None])
    if name == "welch" and not all(groups):
        raise ValueError("a Welch question must name its two groups")
    if name == "welch_factor":
        groups = [draft.path_display[g] for g in groups]
    null_text = null.format(a=a, b=b, g1=groups[0], g2=groups[1])
    description = description.format(a=a, g1=groups[0], g2=groups[1]) if name == "welch_factor" else description
    if readable:
        first = _path_name(draft, a, True) if name == "welch_factor" else _column_name(draft, a, readable=True)
        null_text = null_text.replace(f"`{a}`", first).replace(f"`{b}`", _column_name(draft, b, readable=True))
        description = description.replace(f"`{a}`", first)
    return f"{description} reject, at significance level {draft.test['alpha']}, the null hypothesis that {null_text}?"


# -- paraphrases --------------------------------------------------------------------------------------
class ProceduralParaphraser:
    """Three deterministic rewordings with readable names, units and other sentence structures."""

    def paraphrase(self, draft: Draft) -> list[str]:
        return [style(draft) + _answer_instruction(draft, i) + _closing(draft) for i, style in enumerate(_STYLES)]


def _answer_instruction(draft: Draft, style: int) -> str:
    """The yes/no instruction of a hypothesis question, kept in every paraphrase."""
    if draft.type != "bivariate_hypothesis":
        return ""
    return (" Answer yes or no.", " Reply yes or no.", " Yes or no?")[style]


def _readable_column(draft: Draft, i: int = 0) -> str:
    return _column_name(draft, draft.columns[i], readable=True)


def _topic(draft: Draft) -> str:
    """The repository's data as a noun phrase: the study design's topic ("catalyst screening"), else the
    subdomain inside a sentence."""
    return data_topic(draft.spec.context.topic or lower_name(draft.spec.context.subdomain))


def _plain(draft: Draft) -> str:
    t = draft.type
    rows = row_phrase(draft, readable=True)
    only = f", counting only rows where {rows}" if rows else ""
    paths = path_phrase(draft, readable=True)
    area = _topic(draft)
    if t == "readme":
        return "Is there a README file in the root folder of this dataset? Reply yes or no."
    if t == "title":
        return (
            f"According to the README, if there is one, what is this project called? {TITLE_NOTE} Reproduce the "
            "title exactly."
        )
    if t == "abstract":
        return "Quote, word for word, the opening sentence of the abstract given in the README, if there is one."
    if t == "extension":
        return (
            "Which format are the data tables saved in? Give the file extension (csv, json, jsonl, xlsx, txt or log)."
        )
    if t == "count_rows" and draft.first_run:
        return (
            f"{run_note(draft)} How many records does the first run among {files_phrase(draft, readable=True)} "
            f"hold{only}? Do not count any header line."
        )
    if t == "count_rows":
        return f"How many records are in {{path}}{only}? Do not count any header line."
    if t == "prefix":
        return "Counting every subfolder, how many data files sit inside {path}? Ignore README files."
    if t == "condition":
        return f"How many of the {area} data files have a path showing that {paths}?"
    if t == "univariate_single_file":
        assert draft.statistic
        return f"What is the {STAT_PLAIN[draft.statistic]} of {_readable_column(draft)} in {{path}}{only}?"
    if t == "univariate_condition":
        assert draft.statistic
        return (
            f"Pooling every record from the files where {paths}, what is the {STAT_PLAIN[draft.statistic]} "
            f"of {_readable_column(draft)}{only}?"
        )
    if t == "bivariate_statistic":
        assert draft.statistic
        return (
            f"Pooling every record from the files where {paths}, what is the {BIVARIATE_PLAIN[draft.statistic]} "
            f"between {_readable_column(draft, 0)} and {_readable_column(draft, 1)}{only}?"
        )
    if t == "bivariate_hypothesis" and _is_factor(draft):
        factor = _path_name(draft, draft.columns[0], True)
        return (
            f"Does {factor} make a difference to {_readable_column(draft, 1)}? Taking "
            f"{files_phrase(draft, readable=True)}, does {_test_text(draft, readable=True)}"
        )
    if t == "bivariate_hypothesis":
        return f"Pooling every record from the files where {paths}{only}, does {_test_text(draft, readable=True)}"
    raise ValueError(t)


def _restructured(draft: Draft) -> str:
    t = draft.type
    rows = row_phrase(draft, readable=True)
    keep = f" Keep only the rows where {rows}." if rows else ""
    paths = path_phrase(draft, readable=True)
    if t == "readme":
        return "Check the top level of the repository: is a README file present (yes or no)?"
    if t == "title":
        return f"Look for a README and the project's title in it. {TITLE_NOTE} What is the title, exactly as written?"
    if t == "abstract":
        return "Look for a README and an abstract in it. What is the abstract's first sentence, verbatim?"
    if t == "extension":
        return "Look at the data files: what is their file extension (csv, json, jsonl, xlsx, txt or log)?"
    if t == "count_rows" and draft.first_run:
        return (
            f"Select {files_phrase(draft, readable=True)}. {run_note(draft)} Take the first of these runs.{keep} "
            "How many data rows remain (any header line excluded)?"
        )
    if t == "count_rows":
        return f"Open {{path}}.{keep} How many data rows remain (any header line excluded)?"
    if t == "prefix":
        return (
            "Take the folder {path} and everything beneath it. How many data files does it hold "
            "(README files excluded)?"
        )
    if t == "condition":
        return f"Select the data files whose folder and file names show that {paths}. How many are there?"
    if t == "univariate_single_file":
        assert draft.statistic
        return f"Take the file {{path}}.{keep} Compute the {STAT_PLAIN[draft.statistic]} of {_readable_column(draft)}."
    if t == "univariate_condition":
        assert draft.statistic
        return (
            f"Select the data files whose paths show that {paths} and combine their rows.{keep} Compute "
            f"the {STAT_PLAIN[draft.statistic]} of {_readable_column(draft)}."
        )
    if t == "bivariate_statistic":
        assert draft.statistic
        return (
            f"Select the data files whose paths show that {paths} and combine their rows.{keep} Compute "
            f"the {BIVARIATE_PLAIN[draft.statistic]} between {_readable_column(draft, 0)} and "
            f"{_readable_column(draft, 1)}."
        )
    if t == "bivariate_hypothesis" and _is_factor(draft):
        factor = _path_name(draft, draft.columns[0], True)
        return (
            f"Select {files_phrase(draft, readable=True)} and split them into two groups by {factor}. Does "
            f"{_test_text(draft, readable=True)}"
        )
    if t == "bivariate_hypothesis":
        return (
            f"Select the data files whose paths show that {paths} and combine their rows.{keep} Does "
            f"{_test_text(draft, readable=True)}"
        )
    raise ValueError(t)


def _request(draft: Draft) -> str:
    t = draft.type
    rows = row_phrase(draft, readable=True)
    only = f", restricted to rows where {rows}," if rows else ""
    paths = path_phrase(draft, readable=True)
    project = _topic(draft)
    if t == "readme":
        return f"Before I start on this {project} dataset: does it ship a README at the top level? Yes or no."
    if t == "title":
        return (
            f"I need to cite this project. What title does its README give, if it has one? {TITLE_NOTE} Please copy "
            "it exactly."
        )
    if t == "abstract":
        return "For my notes I need the opening sentence of the abstract in the README, if any, copied exactly."
    if t == "extension":
        return (
            "I want to pick the right parser: what extension do the data files have "
            "(csv, json, jsonl, xlsx, txt or log)?"
        )
    if t == "count_rows" and draft.first_run:
        return (
            f"I'm checking the first run among {files_phrase(draft, readable=True)}: how many data rows does it "
            f"hold{only.rstrip(',')}? Any header line excluded. {run_note(draft)}"
        )
    if t == "count_rows":
        return (
            f"I'm checking sample sizes: how many data rows does {{path}} hold{only.rstrip(',')}? "
            "Any header line excluded."
        )
    if t == "prefix":
        return "I'm auditing a folder: how many data files are in {path}, subfolders included? Leave README files out."
    if t == "condition":
        return f"I'm planning a subset analysis on runs where {paths}. How many data files qualify?"
    if t == "univariate_single_file":
        assert draft.statistic
        return f"For {{path}}{only} I need the {STAT_PLAIN[draft.statistic]} of {_readable_column(draft)}."
    if t == "univariate_condition":
        assert draft.statistic
        return (
            f"For my {project} summary I need the {STAT_PLAIN[draft.statistic]} of {_readable_column(draft)} "
            f"over all records in files where {paths}{only.rstrip(',')}."
        )
    if t == "bivariate_statistic":
        assert draft.statistic
        return (
            f"I want to know how {_readable_column(draft, 0)} relates to {_readable_column(draft, 1)} in the "
            f"files where {paths}{only.rstrip(',')}: what is the {BIVARIATE_PLAIN[draft.statistic]}?"
        )
    if t == "bivariate_hypothesis" and _is_factor(draft):
        factor = _path_name(draft, draft.columns[0], True)
        return (
            f"I want to know whether {factor} changes {_readable_column(draft, 1)}, using "
            f"{files_phrase(draft, readable=True)}: does {_test_text(draft, readable=True)}"
        )
    if t == "bivariate_hypothesis":
        return f"Using the records from files where {paths}{only.rstrip(',')}, does {_test_text(draft, readable=True)}"
    raise ValueError(t)


_STYLES = (_plain, _restructured, _request)
