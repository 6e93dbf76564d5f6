"""The privileged question generator: questions of eleven types with exact ground truth.

Each sampled question is drawn from its own stream ``(seed, "qa", type, k)``. It is built answerable, or,
with the probability set by the unanswerable-share knob, unanswerable by construction for a reason that
type allows (a missing file, a filter that keeps no file or no row, a statistic undefined for the column,
too few rows, constant input). Ground truth is computed with :mod:`qa.stats` on exactly the selected rows
of exactly the selected files (:mod:`qa.view`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from generators import Repository
from generators.paths import render_number
from generators.rng import Stream, root_stream
from generators.spec import EXTENSIONS, Variable
from qa import stats
from qa.model import CATEGORIES, FIXED_TYPES, NOT_POSSIBLE, SAMPLED_TYPES, Answer, Question
from qa.view import Condition, RepoView, row_mask
from qa.wording import Draft, Paraphraser, ProceduralParaphraser, templated

MAX_ATTEMPTS = 30
ALPHAS = (0.01, 0.05, 0.1)


@dataclass(frozen=True)
class Options:
    per_type: int = 5
    unanswerable: float = 0.28
    max_pooled_files: int = 60  # files a pooled-statistics question may select (agents read them all)


@dataclass
class Built:
    draft: Draft
    answer: Answer
    answer_kind: str
    reason: str | None = None
    choices: list[str] | None = None
    evidence: list[str] = field(default_factory=list)
    query: dict[str, Any] = field(default_factory=dict)
    variables: dict[str, str] = field(default_factory=dict)


class Retry(Exception):
    """This draw cannot give the wanted question; draw again."""


class Generator:
    def __init__(self, repository: Repository, options: Options, paraphraser: Paraphraser | None = None) -> None:
        self.repository = repository
        self.view = RepoView(repository)
        self.spec = repository.spec
        self.options = options
        self.paraphraser = paraphraser or ProceduralParaphraser()

    # -- the whole set for one repository --------------------------------------------------------
    def questions(self) -> list[Question]:
        fixed = [self._finish(t, 1, self._fixed(t)) for t in FIXED_TYPES]
        n_sampled = len(SAMPLED_TYPES) * self.options.per_type
        total = len(fixed) + n_sampled
        already = sum(not q.answerable for q in fixed)
        # The fixed questions' answerability is decided by the repository; the sampled ones make up the rest.
        share = (self.options.unanswerable * total - already) / n_sampled if n_sampled else 0.0
        share = min(1.0, max(0.0, share))
        out = list(fixed)
        owed = 0  # unanswerable questions wanted but impossible for their type here (e.g. every path exists)
        for qtype in SAMPLED_TYPES:
            for k in range(1, self.options.per_type + 1):
                rs = root_stream(self.spec.seed, self.spec.universe, "qa", qtype, k)
                want = rs.chance(share)
                if not want and owed:
                    want, owed = True, owed - 1
                built = self._sampled(qtype, rs, want)
                owed += want and built.reason is None
                out.append(self._finish(qtype, k, built))
        return out

    def _sampled(self, qtype: str, rs: Stream, want_unanswerable: bool) -> Built:
        sampler = _SAMPLERS[qtype]
        reasons = _REASONS[qtype]
        for attempt in range(MAX_ATTEMPTS):
            reason = rs.pick(reasons) if want_unanswerable and attempt < MAX_ATTEMPTS // 2 else None
            try:
                return sampler(self, rs.child("attempt", attempt), reason)
            except Retry:
                continue
        raise RuntimeError(f"seed {self.spec.seed}: could not build a {qtype} question")

    def _finish(self, qtype: str, k: int, built: Built) -> Question:
        draft = built.draft
        query = {"type": qtype, **built.query}
        if draft.sig_figs:
            query["sig_figs"] = draft.sig_figs
        return Question(
            id=f"{self.spec.seed}-{qtype}-{k}",
            seed=self.spec.seed,
            category=CATEGORIES[qtype],
            type=qtype,
            question=templated(draft),
            variables=built.variables,
            answer=NOT_POSSIBLE if built.reason else built.answer,
            answer_kind=built.answer_kind,
            choices=built.choices,
            sig_figs=draft.sig_figs,
            answerable=built.reason is None,
            unanswerable_reason=built.reason,
            evidence=built.evidence,
            query=query,
            paraphrases=self.paraphraser.paraphrase(draft),
        )

    # -- fixed questions -------------------------------------------------------------------------
    def _fixed(self, qtype: str) -> Built:
        spec, readme = self.spec, self.spec.readme
        draft = Draft(qtype, spec)
        evidence = ["README.md"] if readme.present else []
        no_readme = None if readme.present else "no_readme"
        if qtype == "readme":
            return Built(draft, "yes" if readme.present else "no", "yes_no", choices=["yes", "no"], evidence=evidence)
        if qtype == "title":
            title = spec.project.title
            reason = no_readme or (None if readme.show_title else "title_not_in_readme")
            return Built(draft, title, "categorical", reason, [title], evidence, {"title": title})
        if qtype == "abstract":
            sentence = first_sentence(spec.project.abstract)
            reason = no_readme or (None if readme.show_abstract else "abstract_not_in_readme")
            return Built(draft, sentence, "categorical", reason, [sentence], evidence, {"first_sentence": sentence})
        return Built(
            draft,
            spec.extension,
            "categorical",
            None,
            list(EXTENSIONS),
            sorted(self.view.paths),
            {"extension": spec.extension},
        )

    # -- shared pieces ---------------------------------------------------------------------------
    def draft(self, qtype: str, **fields: Any) -> Draft:
        view = self.view
        display: dict[str, str] = {}
        for condition in fields.get("path_conditions", []):
            name = condition["variable"]
            k = view.placeholders.index(name)
            for i, text in enumerate(view.tree.texts[k]):
                raw = view.tree.values[k][i]
                is_path_variable = name not in ("researcher", "date", "seq_number")
                display[text] = (raw if isinstance(raw, str) else render_number(raw)) if is_path_variable else text
        return Draft(qtype, self.spec, path_display=display, **fields)

    def numeric_columns(self) -> list[Variable]:
        return [v for v in self.spec.variables if v.type in ("integer", "continuous")]

    def categorical_columns(self) -> list[Variable]:
        return [v for v in self.spec.variables if v.type == "categorical"]

    def missing_file(self, rs: Stream) -> str:
        tree = self.view.tree
        if tree.size <= tree.n_files:
            raise Retry
        present = set(tree.indices.tolist())
        for _ in range(50):
            number = int(rs.integers(0, tree.size, 1)[0])
            if number not in present:
                return tree.path_of(number)
        raise Retry

    def path_conditions(self, rs: Stream, empty: bool) -> tuple[list[Condition], list[str]]:
        """1-3 path conditions and the files they select: some (at most the cap) or, if ``empty``, none."""
        view = self.view
        names = view.placeholders
        for _ in range(MAX_ATTEMPTS):
            chosen = rs.sample(names, rs.randint(1, min(3, len(names))))
            if empty:
                conditions = [self._any_value(name, rs) for name in chosen]
            else:
                anchor = rs.randint(0, len(view.paths) - 1)
                conditions = [self._anchored(name, anchor, rs) for name in chosen]
            mask = view.select(conditions)
            count = int(mask.sum())
            if (empty and count == 0) or (not empty and 0 < count <= self.options.max_pooled_files):
                return conditions, view.selected_paths(mask)
        raise Retry

    def _anchored(self, name: str, anchor: int, rs: Stream) -> Condition:
        """A condition that the anchor file meets: its own value, sometimes with another one."""
        texts = self.view.rendered(name)
        own = texts[int(self.view.digits[anchor, self.view.placeholders.index(name)])]
        others = [t for t in texts if t != own]
        if others and rs.chance(0.3):
            return {"variable": name, "op": "in", "values": sorted([own, rs.pick(others)], key=texts.index)}
        return {"variable": name, "op": "eq", "value": own}

    def _any_value(self, name: str, rs: Stream) -> Condition:
        return {"variable": name, "op": "eq", "value": rs.pick(self.view.rendered(name))}

    def row_conditions(self, rs: Stream, paths: list[str], keep: int, exclude: tuple[str, ...] = ()) -> list[Condition]:
        """0-2 row conditions that keep at least ``keep`` rows, thresholds inside the observed range."""
        count = rs.pick_weighted((0, 1, 2), (0.35, 0.45, 0.2))
        candidates = [v for v in self.spec.variables if v.type in ("categorical", "integer", "continuous")]
        candidates = [v for v in candidates if v.column not in exclude]
        conditions: list[Condition] = []
        for _ in range(count):
            for _ in range(10):
                variable = rs.pick(candidates)
                values = self.view.pooled(paths, [variable.column], conditions)[variable.column]
                if values.size == 0:
                    break
                condition = _inside_condition(variable, values, rs)
                kept = self.view.pooled(paths, [variable.column], [*conditions, condition])[variable.column]
                if kept.size >= keep:
                    conditions.append(condition)
                    break
        return conditions

    def empty_rows(self, rs: Stream, paths: list[str]) -> list[Condition]:
        """Row conditions that keep no row but look like any other filter."""
        numeric = self.numeric_columns()
        for _ in range(10):
            variable = rs.pick(numeric)
            values = np.unique(self.view.pooled(paths, [variable.column], [])[variable.column].astype(np.float64))
            if values.size >= 2:
                gaps = np.diff(values)
                i = int(np.argmax(gaps)) if rs.chance(0.5) else rs.randint(0, gaps.size - 1)
                low, high = _sig(values[i] + gaps[i] / 3), _sig(values[i] + 2 * gaps[i] / 3)
                condition = {"column": variable.column, "op": "between", "low": low, "high": high}
                if low < high and self.view.pooled(paths, [variable.column], [condition])[variable.column].size == 0:
                    return [condition]
        raise Retry

    def few_rows(self, rs: Stream, paths: list[str], wanted: int) -> list[Condition]:
        """One condition that keeps exactly ``wanted`` rows (1 <= wanted)."""
        for _ in range(10):
            variable = rs.pick(self.numeric_columns())
            values = np.sort(self.view.pooled(paths, [variable.column], [])[variable.column].astype(np.float64))
            if values.size > wanted and values[-wanted - 1] < values[-wanted]:
                threshold = _sig((values[-wanted - 1] + values[-wanted]) / 2)
                condition = {"column": variable.column, "op": "gt", "value": threshold}
                if self.view.pooled(paths, [variable.column], [condition])[variable.column].size == wanted:
                    return [condition]
        raise Retry


def first_sentence(text: str) -> str:
    end = text.find(". ")
    return text if end < 0 else text[: end + 1]


def _sig(value: float, digits: int = 4) -> float:
    return float(f"{float(value):.{digits}g}")


def _inside_condition(variable: Variable, values: np.ndarray[Any, Any], rs: Stream) -> Condition:
    if variable.type == "categorical":
        observed = sorted(set(values.tolist()), key=variable.categories.index)
        if len(observed) > 1 and rs.chance(0.4):
            return {
                "column": variable.column,
                "op": "in",
                "values": sorted(rs.sample(observed, 2), key=observed.index),
            }
        return {"column": variable.column, "op": "eq", "value": rs.pick(observed)}
    numeric = values.astype(np.float64)
    op = rs.pick(("gt", "lt", "ge", "le", "between"))
    if op == "between":
        low, high = sorted(np.quantile(numeric, rs.uniform_range(0.1, 0.9, 2)).tolist())
        return {"column": variable.column, "op": "between", "low": _sig(low, 3), "high": _sig(high, 3)}
    return {
        "column": variable.column,
        "op": op,
        "value": _sig(float(np.quantile(numeric, rs.uniform_range(0.15, 0.85, 1)[0])), 3),
    }


# --------------------------------------------------------------------------------------------------
# Samplers, one per sampled type: (generator, stream, wanted reason or None) -> Built
# --------------------------------------------------------------------------------------------------
def _count_rows(g: Generator, rs: Stream, reason: str | None) -> Built:
    if reason == "no_file":
        path = g.missing_file(rs)
        draft = g.draft("count_rows", row_conditions=[])
        return Built(
            draft,
            0,
            "integer",
            reason,
            evidence=[],
            query={"path": path, "row_conditions": []},
            variables={"path": path},
        )
    path = rs.pick(g.view.paths)
    conditions = g.empty_rows(rs, [path]) if reason == "no_row" else g.row_conditions(rs, [path], keep=1)
    count = int(row_mask(g.view.table(path), conditions).sum())
    if (count == 0) != (reason == "no_row"):
        raise Retry
    draft = g.draft("count_rows", row_conditions=conditions)
    return Built(
        draft,
        count,
        "integer",
        reason,
        evidence=[path],
        query={"path": path, "row_conditions": conditions},
        variables={"path": path},
    )


def _prefix(g: Generator, rs: Stream, reason: str | None) -> Built:
    tree = g.view.tree
    # Shallow directories hold many files: those are the interesting counts.
    depth = rs.pick_weighted(tuple(range(1, tree.depth)), tuple(0.5**d for d in range(1, tree.depth)))
    if reason == "no_file":
        path = g.missing_file(rs)
        prefix = "/".join(path.split("/")[:depth])
        if tree.is_dir(prefix.split("/")):
            raise Retry
        evidence: list[str] = []
    else:
        prefix = "/".join(rs.pick(g.view.paths).split("/")[:depth])
        evidence = sorted(p for p in g.view.paths if p.startswith(prefix + "/"))
    draft = g.draft("prefix")
    return Built(
        draft,
        len(evidence),
        "integer",
        reason,
        evidence=evidence,
        query={"prefix": prefix},
        variables={"path": prefix},
    )


def _condition(g: Generator, rs: Stream, reason: str | None) -> Built:
    conditions, paths = g.path_conditions(rs, empty=reason == "no_file")
    if reason is None and len(paths) > g.options.max_pooled_files:
        raise Retry
    draft = g.draft("condition", path_conditions=conditions)
    return Built(
        draft,
        len(paths),
        "integer",
        reason,
        evidence=paths,
        query={"path_conditions": conditions, "layout": g.view.layout()},
    )


def _statistic_rows(g: Generator, rs: Stream, reason: str | None, paths: list[str], statistic: str) -> list[Condition]:
    """Row conditions for a statistic question, shaped by the wanted reason."""
    need = stats.MIN_ROWS[statistic]
    if reason == "no_row":
        return g.empty_rows(rs, paths)
    if reason == "too_few_rows":
        if need < 2:
            raise Retry
        return g.few_rows(rs, paths, rs.randint(1, need - 1))
    return g.row_conditions(rs, paths, keep=need)


def _univariate(g: Generator, rs: Stream, reason: str | None, single: bool) -> Built:
    qtype = "univariate_single_file" if single else "univariate_condition"
    path_conditions: list[Condition] = []
    if reason == "no_file":
        if single:
            paths: list[str] = []
            target = g.missing_file(rs)
        else:
            path_conditions, paths = g.path_conditions(rs, empty=True)
    elif single:
        target = rs.pick(g.view.paths)
        paths = [target]
    else:
        path_conditions, paths = g.path_conditions(rs, empty=False)
    statistic = rs.pick(("std", "variance")) if reason == "too_few_rows" else rs.pick(tuple(stats.UNIVARIATE))
    if reason == "undefined_statistic":
        # Categorical and identifier columns only: the earliest or median timestamp of a datetime column is
        # well defined, so a datetime column would make a poor "not possible".
        column = rs.pick([v for v in g.spec.variables if v.type in ("categorical", "string")])
    else:
        column = rs.pick(g.numeric_columns())
    rows = [] if reason == "no_file" else _statistic_rows(g, rs, reason, paths, statistic)
    answer: Answer = 0.0
    if reason is None:
        values = g.view.pooled(paths, [column.column], rows)[column.column].astype(np.float64)
        if values.size < stats.MIN_ROWS[statistic]:
            raise Retry
        answer = stats.univariate(statistic, values)
        if not math.isfinite(answer):
            raise Retry
    draft = g.draft(
        qtype,
        statistic=statistic,
        columns=[column.column],
        path_conditions=path_conditions,
        row_conditions=rows,
        sig_figs=rs.randint(2, 4),
    )
    query: dict[str, Any] = {"column": column.column, "statistic": statistic, "row_conditions": rows}
    variables: dict[str, str] = {}
    if single:
        query["path"] = target
        variables["path"] = target
    else:
        query.update(path_conditions=path_conditions, layout=g.view.layout())
    return Built(draft, answer, "continuous", reason, evidence=paths, query=query, variables=variables)


def _bivariate(g: Generator, rs: Stream, reason: str | None, hypothesis: bool) -> Built:
    qtype = "bivariate_hypothesis" if hypothesis else "bivariate_statistic"
    numeric, categorical = g.numeric_columns(), g.categorical_columns()
    names = ["pearson", "spearman"] + (["chi2"] if len(categorical) >= 2 else [])
    if hypothesis and categorical:
        names.append("welch")
    name = rs.pick(names)
    if name == "welch" and reason in ("constant_input", "undefined_statistic"):
        raise Retry  # a Welch question always names two groups of a categorical column
    path_conditions, paths = g.path_conditions(rs, empty=reason == "no_file")
    columns = _bivariate_columns(g, rs, name, reason, numeric, categorical)
    groups: list[str] = []
    if name == "welch" and reason != "undefined_statistic":
        observed = sorted(set(g.view.pooled(paths, [columns[0]], [])[columns[0]].tolist()))
        if len(observed) < 2:
            raise Retry
        groups = sorted(rs.sample(observed, 2), key=g.spec.variable(columns[0]).categories.index)
    rows: list[Condition] = []
    if reason == "constant_input":
        rows = _constant_rows(g, rs, paths, name, columns)
    elif reason != "no_file":
        rows = _statistic_rows(g, rs, reason, paths, name)
        if name == "welch":
            rows = [r for r in rows if r["column"] != columns[0]]
    if reason == "too_few_rows" and name == "welch":
        raise Retry  # few rows overall does not say which group is short; keep welch for other reasons
    alpha = rs.pick(ALPHAS)
    test: dict[str, Any] | None = {"name": name, "alpha": alpha, **({"groups": groups} if groups else {})}
    answer: Answer = 0.0
    if reason is None:
        statistic, p_value = _bivariate_answer(g, paths, rows, name, columns, groups)
        answer = ("yes" if p_value < alpha else "no") if hypothesis else statistic
        if hypothesis and abs(math.log(max(p_value, 1e-300) / alpha)) < 0.05:
            raise Retry  # too close to the significance level to grade fairly
    if not hypothesis:
        test = None
    draft = g.draft(
        qtype,
        statistic=None if hypothesis else name,
        columns=columns,
        path_conditions=path_conditions,
        row_conditions=rows,
        test=test,
        sig_figs=None if hypothesis else rs.randint(2, 4),
    )
    query: dict[str, Any] = {
        "columns": columns,
        "path_conditions": path_conditions,
        "row_conditions": rows,
        "layout": g.view.layout(),
    }
    if hypothesis:
        query["test"] = test
    else:
        query["statistic"] = name
    kind = "yes_no" if hypothesis else "continuous"
    return Built(
        draft,
        answer,
        kind,
        reason,
        choices=["yes", "no"] if hypothesis else None,
        evidence=paths,
        query=query,
    )


def _bivariate_columns(
    g: Generator,
    rs: Stream,
    name: str,
    reason: str | None,
    numeric: list[Variable],
    categorical: list[Variable],
) -> list[str]:
    if reason == "undefined_statistic":
        if name in ("pearson", "spearman"):
            if not categorical:
                raise Retry
            pair = [rs.pick(categorical), rs.pick(numeric)]
            return [v.column for v in rs.shuffled(pair)]
        if name == "chi2":
            continuous = [v for v in numeric if v.type == "continuous"]
            return [rs.pick(categorical).column, rs.pick(continuous).column]
        raise Retry  # welch is never asked undefined (see _bivariate)
    if name == "chi2":
        return [v.column for v in rs.sample(categorical, 2)]
    if name == "welch":
        return [rs.pick(categorical).column, rs.pick(numeric).column]
    if len(numeric) < 2:
        raise Retry
    return [v.column for v in rs.sample(numeric, 2)]


def _constant_rows(g: Generator, rs: Stream, paths: list[str], name: str, columns: list[str]) -> list[Condition]:
    """A row filter that leaves one of the two columns constant (and enough rows)."""
    need = stats.MIN_ROWS[name]
    column = rs.pick(columns)
    values = g.view.pooled(paths, [column], [])[column]
    unique, counts = np.unique(values, return_counts=True)
    candidates = [u for u, c in zip(unique.tolist(), counts.tolist(), strict=True) if c >= need]
    if not candidates:
        raise Retry
    value = rs.pick(candidates)
    if name == "chi2":
        return [{"column": column, "op": "eq", "value": value}]
    if g.spec.variable(column).type != "integer":
        raise Retry  # a continuous column rarely repeats a value
    return [{"column": column, "op": "between", "low": float(value), "high": float(value)}]


def _bivariate_answer(
    g: Generator, paths: list[str], rows: list[Condition], name: str, columns: list[str], groups: list[str]
) -> tuple[float, float]:
    """The statistic and its p-value on the selected rows; Retry when they are not defined."""
    pooled = g.view.pooled(paths, columns, rows)
    a, b = pooled[columns[0]], pooled[columns[1]]
    if name == "welch":
        first = b[a == groups[0]].astype(np.float64)
        second = b[a == groups[1]].astype(np.float64)
        if min(first.size, second.size) < 2 or (stats.is_constant(first) and stats.is_constant(second)):
            raise Retry
        statistic, p = stats.welch(first, second)
    else:
        if a.size < stats.MIN_ROWS[name] or stats.is_constant(a) or stats.is_constant(b):
            raise Retry
        if name == "chi2":
            statistic, p = stats.chi2(a.tolist(), b.tolist())
        else:
            x, y = a.astype(np.float64), b.astype(np.float64)
            statistic, p = stats.pearson(x, y) if name == "pearson" else stats.spearman(x, y)
    if not (math.isfinite(statistic) and math.isfinite(p)):
        raise Retry
    return statistic, p


_SAMPLERS: dict[str, Callable[[Generator, Stream, str | None], Built]] = {
    "count_rows": _count_rows,
    "prefix": _prefix,
    "condition": _condition,
    "univariate_single_file": lambda g, rs, r: _univariate(g, rs, r, single=True),
    "univariate_condition": lambda g, rs, r: _univariate(g, rs, r, single=False),
    "bivariate_statistic": lambda g, rs, r: _bivariate(g, rs, r, hypothesis=False),
    "bivariate_hypothesis": lambda g, rs, r: _bivariate(g, rs, r, hypothesis=True),
}
_STAT_REASONS = ("no_file", "no_row", "undefined_statistic", "too_few_rows")
_REASONS: dict[str, tuple[str, ...]] = {
    "count_rows": ("no_file", "no_row"),
    "prefix": ("no_file",),
    "condition": ("no_file",),
    "univariate_single_file": _STAT_REASONS,
    "univariate_condition": _STAT_REASONS,
    "bivariate_statistic": (*_STAT_REASONS, "constant_input"),
    "bivariate_hypothesis": (*_STAT_REASONS, "constant_input"),
}


def generate(repository: Repository, options: Options | None = None) -> list[Question]:
    """All questions of one repository."""
    return Generator(repository, options or Options()).questions()
