"""The privileged question generator: questions of eleven types with exact ground truth.

Each sampled question is drawn from its own stream ``(seed, "qa", type, k)``. It is built answerable, or,
with the probability set by the unanswerable-share knob, unanswerable by construction for a reason that
type allows (a missing file, a filter that keeps no file or no row, a statistic undefined for the column,
too few rows, constant input) or for a scientific reason (a variable not measured, a "first run" the files do not
define, a factor's effect confounded by the design). Ground truth is computed with :mod:`qa.stats` on exactly
the selected rows of exactly the selected files (:mod:`qa.view`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from generators import Repository, expr
from generators.data_files import taxonomy
from generators.designs import Design, designs
from generators.rng import Stream, root_stream
from generators.spec import EXTENSIONS, Spec, Variable, render_number
from qa import stats
from qa.conventions import conventions
from qa.model import CATEGORIES, FIXED_TYPES, NOT_POSSIBLE, SAMPLED_TYPES, Answer, Question
from qa.twins import twin_of
from qa.view import Condition, RepoView, row_mask
from qa.wording import Draft, Paraphraser, ProceduralParaphraser, templated

MAX_ATTEMPTS = 30
ALPHAS = (0.01, 0.05, 0.1)


@dataclass(frozen=True)
class Options:
    per_type: int = 5
    unanswerable: float = 0.28
    max_pooled_files: int = 60  # files a pooled-statistics question may select (agents read them all)
    ambiguous: bool = False  # add each answerable question's ambiguous twin after it, where one is made (qa.twins)
    # Made in the counterfactual world (--counterfactual): a repository with no relation to turn is the plain one,
    # but its questions belong to the run's world, which `sgfs eval --questions` checks.
    counterfactual: bool = False


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
        self.asked: set[str] = set()  # what each question asks (its type and query): no repeats in one repository
        self.strict = True  # while true, a hypothesis question must give the answer it was drawn to give
        self.relations = _relations(self.spec)
        self.run_order = _run_order(self.view)
        self.factors = _factors(self.view)
        self.mess = repository.mess

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
                if built is None:
                    continue  # a repository too small for this many different questions of the type
                owed += want and built.reason is None
                question = self._finish(qtype, k, built)
                out.append(question)
                if self.options.ambiguous:
                    twin = twin_of(self, question, built.draft)
                    if twin is not None:
                        out.append(twin)
        return out

    def _sampled(self, qtype: str, rs: Stream, want_unanswerable: bool) -> Built | None:
        sampler = _SAMPLERS[qtype]
        reasons = _REASONS[qtype]
        if qtype == "univariate_single_file" and self.mess is not None and self.mess.dead_rate:
            reasons = (*reasons, "missing_values")  # a messy file with a column left empty
        repeated = False
        for attempt in range(MAX_ATTEMPTS):
            reason = rs.pick(reasons) if want_unanswerable and attempt < MAX_ATTEMPTS // 2 else None
            self.strict = attempt < MAX_ATTEMPTS - 5
            try:
                built = sampler(self, rs.child("attempt", attempt), reason)
                if self.mess is not None:
                    _check_rows_reason(self, qtype, built)
            except Retry:
                continue
            asked = _asked(qtype, built.query)
            if asked in self.asked:
                repeated = True
                continue  # the same question twice in one repository would count twice
            self.asked.add(asked)
            return built
        if repeated:
            return None
        raise RuntimeError(f"seed {self.spec.seed}: could not build a {qtype} question")

    def _finish(self, qtype: str, k: int, built: Built) -> Question:
        draft = built.draft
        query = {"type": qtype, **built.query}
        if draft.sig_figs:
            query["sig_figs"] = draft.sig_figs
        said = conventions(self.mess, qtype, self.spec.extension)
        paraphrases = self.paraphraser.paraphrase(draft)
        if said:  # a messy repository: the question states the reading convention it relies on
            paraphrases = [f"{text} {said}" for text in paraphrases]
        return Question(
            id=f"{self.spec.seed}-{qtype}-{k}",
            seed=self.spec.seed,
            category=CATEGORIES[qtype],
            type=qtype,
            question=f"{templated(draft)} {said}" if said else templated(draft),
            variables=built.variables,
            answer=NOT_POSSIBLE if built.reason else built.answer,
            answer_kind=built.answer_kind,
            choices=built.choices,
            sig_figs=draft.sig_figs,
            answerable=built.reason is None,
            unanswerable_reason=built.reason,
            evidence=built.evidence,
            query=query,
            paraphrases=paraphrases,
            prior=_prior(self.spec, query),
            counterfactual=self.options.counterfactual or bool(self.spec.counterfactual),
            mess=self.spec.mess,
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
        named = [condition["variable"] for condition in fields.get("path_conditions", [])]
        if (fields.get("test") or {}).get("name") == "welch_factor":
            named.append(fields["columns"][0])  # the factor's groups are path values too
        for name in named:
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
        """1-3 path conditions and the files they select: some (at most the cap) or, if ``empty``, none. Each
        condition leaves out some file on its own: a condition every file meets would filter nothing."""
        view = self.view
        names = view.placeholders
        for _ in range(MAX_ATTEMPTS):
            chosen = rs.sample(names, rs.randint(1, min(3, len(names))))
            if empty:
                conditions = [self._any_value(name, rs) for name in chosen]
            else:
                anchor = rs.randint(0, len(view.paths) - 1)
                conditions = [self._anchored(name, anchor, rs) for name in chosen]
            if any(bool(view.select([condition]).all()) for condition in conditions):
                continue
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
        if len(others) >= 2 and rs.chance(0.3):
            return {"variable": name, "op": "in", "values": sorted([own, rs.pick(others)], key=texts.index)}
        return {"variable": name, "op": "eq", "value": own}

    def _any_value(self, name: str, rs: Stream) -> Condition:
        return {"variable": name, "op": "eq", "value": rs.pick(self.view.rendered(name))}

    def row_conditions(self, rs: Stream, paths: list[str], keep: int, exclude: tuple[str, ...] = ()) -> list[Condition]:
        """0-2 row conditions on different columns, each of which leaves out some of the rows the others keep,
        together keeping at least ``keep`` rows; thresholds and windows are drawn from the observed values."""
        count = rs.pick_weighted((0, 1, 2), (0.35, 0.45, 0.2))
        candidates = [v for v in self.spec.variables if v.type in ("categorical", "integer", "continuous")]
        candidates = [v for v in candidates if v.column not in exclude]
        conditions: list[Condition] = []
        for _ in range(count):
            for _ in range(10):
                used = {c["column"] for c in conditions}
                free = [v for v in candidates if v.column not in used]
                if not free:
                    break
                variable = rs.pick(free)
                values = self.view.pooled(paths, [variable.column], conditions)[variable.column]
                if values.size == 0:
                    break
                condition = _inside_condition(variable, values, rs)
                if condition is None:
                    continue
                kept = self.view.pooled(paths, [variable.column], [*conditions, condition])[variable.column]
                if keep <= kept.size < values.size:
                    conditions.append(condition)
                    break
        return conditions

    def empty_rows(self, rs: Stream, paths: list[str], exclude: tuple[str, ...] = ()) -> list[Condition]:
        """One row condition that keeps no row and reads like any other: a threshold a little beyond the values
        of the selected rows, or a category of the column that these rows never take."""
        for _ in range(10):
            candidates = [v for v in (*self.numeric_columns(), *self.categorical_columns()) if v.column not in exclude]
            if not candidates:
                raise Retry
            variable = rs.pick(candidates)
            values = self.view.pooled(paths, [variable.column], [])[variable.column]
            if values.size == 0:
                raise Retry
            condition: Condition | None
            if variable.type == "categorical":
                unseen = [c for c in variable.categories if c not in set(values.tolist())]
                condition = {"column": variable.column, "op": "eq", "value": rs.pick(unseen)} if unseen else None
            else:
                condition = self._beyond(rs, variable, paths, values.astype(np.float64))
            if condition is None:
                continue
            if self.view.pooled(paths, [variable.column], [condition])[variable.column].size == 0:
                return [condition]
        raise Retry

    def _beyond(
        self, rs: Stream, variable: Variable, paths: list[str], selected: np.ndarray[Any, Any]
    ) -> Condition | None:
        """A threshold past every selected value but inside the values other files of the repository take, so
        that nothing in the question (a negative count, a share above one) tells that no row meets it."""
        chosen = set(paths)
        others = [p for p in rs.sample(self.view.paths, min(12, len(self.view.paths))) if p not in chosen]
        if not others:
            return None
        seen = self.view.pooled(others, [variable.column], [])[variable.column].astype(np.float64)
        low, high = float(selected.min()), float(selected.max())
        above, below = seen[seen > high], seen[seen < low]
        for side in rs.shuffled(["above", "below"]):
            room = above if side == "above" else below
            if room.size == 0:
                continue
            edge = float(rs.pick(room.tolist()))
            middle = (high + edge) / 2 if side == "above" else (low + edge) / 2
            for digits in (3, 4):  # as many figures as the thresholds of answerable questions have
                value = _sig(middle, digits)
                if variable.type == "integer":
                    value = float(math.floor(middle) if side == "above" else math.ceil(middle))
                if side == "above" and high < value <= edge:
                    return {"column": variable.column, "op": rs.pick(("gt", "ge")), "value": value}
                if side == "below" and edge <= value < low:
                    return {"column": variable.column, "op": rs.pick(("lt", "le")), "value": value}
        return None

    def few_rows(self, rs: Stream, paths: list[str], wanted: int, exclude: tuple[str, ...] = ()) -> list[Condition]:
        """One condition that keeps exactly ``wanted`` rows (1 <= wanted): the top or bottom of a column."""
        for _ in range(10):
            numeric = [v for v in self.numeric_columns() if v.column not in exclude]
            if not numeric:
                raise Retry
            variable = rs.pick(numeric)
            values = np.sort(self.view.pooled(paths, [variable.column], [])[variable.column].astype(np.float64))
            if values.size <= wanted:
                continue
            top, bottom = values[-wanted - 1 :][:2], values[wanted - 1 : wanted + 1]
            if rs.chance(0.5) and top[0] < top[1]:
                op, middle = "gt", float(top.mean())
            elif bottom[0] < bottom[1]:
                op, middle = "lt", float(bottom.mean())
            else:
                continue
            for digits in (3, 4, 6):
                condition = {"column": variable.column, "op": op, "value": _sig(middle, digits)}
                if self.view.pooled(paths, [variable.column], [condition])[variable.column].size == wanted:
                    return [condition]
        raise Retry

    def unmeasured_variable(self, rs: Stream) -> Variable:
        """A numeric variable that studies of this subdomain measure (its study design; else the sister
        subdomains' designs) and that this repository did not record (no file has it)."""
        present = {v.column for v in self.spec.variables} | {v.name for v in self.spec.variables}
        present |= set(self.view.placeholders) | {pv.column for pv in self.spec.path_variables}
        for pool in _unmeasured_pools(self.spec):
            entries = [v for v in pool if v.column not in present and v.name not in present]
            if entries:
                return rs.pick(entries)
        raise Retry

    def first_run(self, mask: np.ndarray[Any, Any]) -> int | None:
        """The first run of the selection (docs/questions.md): the file with the earliest date; among files of that
        date, the lowest run number if they all belong to one group (the run number counts the runs of a group,
        files that agree in every other placeholder). None when the files do not show which run came first."""
        rows = np.flatnonzero(mask)
        dates = self.run_order["date"][rows]
        tied = rows[dates == dates.min()]
        if tied.size == 1:
            return int(tied[0])
        if "seq_number" not in self.run_order:
            return None
        view = self.view
        groups = [k for k, name in enumerate(view.placeholders) if name not in ("date", "seq_number")]
        if any(np.unique(view.digits[tied, k]).size > 1 for k in groups):
            return None  # same-day runs of different groups: their run numbers do not order them
        runs = self.run_order["seq_number"][tied]
        return int(tied[runs == runs.min()][0])  # one group, one date: run numbers differ

    def confounded(self, first: np.ndarray[Any, Any], second: np.ndarray[Any, Any], factor: str) -> bool:
        """Whether another factor or the researcher takes no value in one group of files that it takes in the
        other (dates and run numbers are not factors)."""
        for k, name in enumerate(self.view.placeholders):
            if name in (factor, "date", "seq_number"):
                continue
            column = self.view.digits[:, k]
            if not set(column[first].tolist()) & set(column[second].tolist()):
                return True
        return False


def _run_order(view: RepoView) -> dict[str, np.ndarray[Any, Any]]:
    """Each file's rank by date and by run number (those of the two the layout has), or nothing where the layout
    has no date: without one, run numbers that count within groups order no runs across groups."""
    if "date" not in view.placeholders:
        return {}
    keys: dict[str, np.ndarray[Any, Any]] = {}
    for name in ("date", "seq_number"):
        if name in view.placeholders:
            k = view.placeholders.index(name)
            raw = view.tree.values[k]  # ISO dates or run numbers: both sort in the order runs were made
            rank = np.argsort(np.argsort(np.asarray([str(v) if name == "date" else int(v) for v in raw])))
            keys[name] = rank[view.digits[:, k]]
    return keys


def first_sentence(text: str) -> str:
    end = text.find(". ")
    return text if end < 0 else text[: end + 1]


def _asked(qtype: str, query: dict[str, Any]) -> str:
    """What a question asks, whatever the order its conditions are listed in."""
    canonical: dict[str, Any] = {"type": qtype, **query}
    for key in ("path_conditions", "row_conditions"):
        if key in canonical:
            canonical[key] = sorted(json.dumps(c, sort_keys=True, default=str) for c in canonical[key])
    return json.dumps(canonical, sort_keys=True, default=str)


def _relations(spec: Spec) -> dict[str, set[str]]:
    """Each column's ancestors among the columns (the columns its expression uses, and theirs)."""
    parents: dict[str, set[str]] = {}
    for variable in spec.variables:
        used = expr.names_used(expr.parse(variable.expression)) if variable.expression else set()
        parents[variable.column] = {name for name in used if name != variable.column}
    ancestors: dict[str, set[str]] = {}
    for variable in spec.variables:  # expressions use earlier columns only: one pass in order suffices
        found: set[str] = set()
        for parent in parents[variable.column]:
            found |= {parent, *ancestors.get(parent, set())}
        ancestors[variable.column] = found
    return ancestors


def _related(relations: dict[str, set[str]], a: str, b: str) -> bool:
    """Whether the generator made one column depend on the other, or both on a shared column."""
    first, second = relations.get(a, set()), relations.get(b, set())
    return a in second or b in first or bool(first & second)


def _prior(spec: Spec, query: dict[str, Any]) -> str | None:
    """Whether a question over two columns tests a relation of the design that the data follow
    ("consistent") or that the counterfactual world turned around ("violating"); None for other questions."""
    columns = query.get("columns")
    if query.get("type") not in ("bivariate_statistic", "bivariate_hypothesis") or not isinstance(columns, list):
        return None
    a, b = (str(c) for c in columns[:2])
    flipped = {(f.outcome, f.cause) for f in spec.counterfactual}
    for outcome, cause in ((a, b), (b, a)):
        try:
            variable = spec.variable(outcome)
        except KeyError:
            continue
        if variable.expression is not None and cause in expr.names_used(expr.parse(variable.expression)):
            return "violating" if (outcome, cause) in flipped else "consistent"
    return None


def _unmeasured_pools(spec: Spec) -> list[list[Variable]]:
    """Candidates for a variable the repository did not record, nearest first: the numeric measures and
    outcomes of its subdomain's study design, then those of the other subdomains of its domain. A spec of a
    context without designs (an edited spec file) has none."""
    own = designs().get((spec.context.field, spec.context.subdomain))
    sisters: list[Design] = []
    for field_ in taxonomy():
        if field_.name != spec.context.field:
            continue
        for domain in field_.domains:
            if domain.name == spec.context.domain:
                sisters = [d for s in domain.subdomains if (d := designs().get((field_.name, s.name))) is not None]
    return [_numeric_of(own) if own is not None else [], [v for d in sisters if d is not own for v in _numeric_of(d)]]


def _numeric_of(design: Design) -> list[Variable]:
    out = [
        Variable(m.name, m.column, "unmeasured", m.type, m.description, unit=m.unit)
        for m in design.measures
        if m.type != "categorical"
    ]
    return out + [
        Variable(o.name, o.column, "unmeasured", "continuous", o.description, unit=o.unit) for o in design.outcomes
    ]


def _sig(value: float, digits: int = 4) -> float:
    return float(f"{float(value):.{digits}g}")


def _inside_condition(variable: Variable, values: np.ndarray[Any, Any], rs: Stream) -> Condition | None:
    """A condition inside the observed values (None: this draw would make a window of one value)."""
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
        digits = rs.pick((3, 4))
        low, high = _sig(low, digits), _sig(high, digits)
        if not low < high:
            return None
        return {"column": variable.column, "op": "between", "low": low, "high": high}
    return {
        "column": variable.column,
        "op": op,
        "value": _sig(float(np.quantile(numeric, rs.uniform_range(0.15, 0.85, 1)[0])), rs.pick((3, 4))),
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
    if reason == "ambiguous_definition" or (reason is None and g.run_order and rs.chance(0.4)):
        return _first_run_rows(g, rs, reason)
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


def _first_run_rows(g: Generator, rs: Stream, reason: str | None) -> Built:
    """The rows of "the first run" of a selection: answerable where ordering the files by date and by run number
    names the same file, else not possible (``ambiguous_definition``). The wording is the same either way."""
    if not g.run_order:
        raise Retry
    conditions, paths = g.path_conditions(rs, empty=False)
    if len(paths) < 2:
        raise Retry  # one file is trivially the first run
    if any(c["variable"] in ("date", "seq_number") and c["op"] == "eq" for c in conditions):
        raise Retry  # fixing the date or the run number would show a tie in the question's own words
    mask = g.view.select(conditions)
    first = g.first_run(mask)
    if (first is None) != (reason == "ambiguous_definition"):
        raise Retry
    target = [g.view.paths[first]] if first is not None else paths
    rows = g.row_conditions(rs, target, keep=1)
    count = 0
    if first is not None:
        count = int(row_mask(g.view.table(target[0]), rows).sum())
        if count == 0:
            raise Retry
    draft = g.draft("count_rows", path_conditions=conditions, row_conditions=rows, first_run=True)
    query = {"first_run": True, "path_conditions": conditions, "layout": g.view.layout(), "row_conditions": rows}
    return Built(draft, count, "integer", reason, evidence=paths, query=query)


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
        if len(evidence) == len(g.view.paths):  # a folder of one level (a condition held at one value) filters nothing
            raise Retry
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


def _statistic_rows(
    g: Generator, rs: Stream, reason: str | None, paths: list[str], statistic: str, exclude: tuple[str, ...] = ()
) -> list[Condition]:
    """Row conditions for a statistic question, shaped by the wanted reason."""
    need = stats.MIN_ROWS[statistic]
    if reason == "no_row":
        return g.empty_rows(rs, paths, exclude)
    if reason == "too_few_rows":
        if need < 2:
            raise Retry
        return g.few_rows(rs, paths, rs.randint(1, need - 1), exclude)
    return g.row_conditions(rs, paths, keep=need, exclude=exclude)


def _univariate(g: Generator, rs: Stream, reason: str | None, single: bool) -> Built:
    qtype = "univariate_single_file" if single else "univariate_condition"
    path_conditions: list[Condition] = []
    if reason == "no_file":
        if single:
            paths: list[str] = []
            target = g.missing_file(rs)
        else:
            path_conditions, paths = g.path_conditions(rs, empty=True)
    elif reason == "missing_values":
        target, empty = _empty_column(g, rs)
        paths = [target]
    elif single:
        target = rs.pick(g.view.paths)
        paths = [target]
    else:
        path_conditions, paths = g.path_conditions(rs, empty=False)
    statistic = rs.pick(("std", "variance")) if reason == "too_few_rows" else rs.pick(tuple(stats.UNIVARIATE))
    extra: dict[str, Variable] = {}
    if reason == "missing_values":
        column = g.spec.variable(empty)
    elif reason == "undefined_statistic":
        # Categorical and identifier columns only: the earliest or median timestamp of a datetime column is
        # well defined, so a datetime column would make a poor "not possible".
        column = rs.pick([v for v in g.spec.variables if v.type in ("categorical", "string")])
    elif reason == "not_measured":
        column = g.unmeasured_variable(rs)
        extra[column.column] = column
    else:
        column = rs.pick(g.numeric_columns())
    if reason == "no_file":
        rows: list[Condition] = []
    elif reason == "not_measured":
        rows = g.row_conditions(rs, paths, keep=1)
    elif reason == "missing_values":
        rows = g.row_conditions(rs, paths, keep=1, exclude=(column.column,))
    else:
        rows = _statistic_rows(g, rs, reason, paths, statistic)
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
        extra_variables=extra,
    )
    query: dict[str, Any] = {"column": column.column, "statistic": statistic, "row_conditions": rows}
    variables: dict[str, str] = {}
    if single:
        query["path"] = target
        variables["path"] = target
    else:
        query.update(path_conditions=path_conditions, layout=g.view.layout())
    return Built(draft, answer, "continuous", reason, evidence=paths, query=query, variables=variables)


def _empty_column(g: Generator, rs: Stream) -> tuple[str, str]:
    """A messy data file with a numeric column left wholly empty, and that column (Retry where none is found)."""
    numeric = {v.column for v in g.numeric_columns()}
    for path in rs.sample(g.view.paths, min(len(g.view.paths), 40)):
        table = g.view.table(path)
        empty = [c.name for c in table.columns if c.name in numeric and c.present is not None and not c.present.any()]
        if empty:
            return path, rs.pick(empty)
    raise Retry


_ROW_REASONS = (None, "no_row", "missing_values", "too_few_rows", "constant_input")


def _check_rows_reason(g: Generator, qtype: str, built: Built) -> None:
    """In a messy repository, the reason a statistic question was built for must be the one its rows give once
    missing cells are left out (docs/questions.md, the order of reasons); Retry where they differ."""
    query = built.query
    if qtype in ("count_rows", "prefix", "condition") or built.reason not in _ROW_REASONS:
        return
    test = query.get("test") or {}
    if test.get("name") == "welch_factor":
        return  # its groups and reasons are decided on pooled values, which leave missing cells out
    columns = [query["column"]] if "column" in query else list(query["columns"])
    if any(g.spec.variable(c).type not in ("integer", "continuous", "categorical") for c in columns):
        return
    rows = query["row_conditions"]
    paths = built.evidence
    selected = sum(int(row_mask(g.view.table(p), rows).sum()) for p in paths)
    pooled = g.view.pooled(paths, columns, rows)
    name = str(query.get("statistic") or test.get("name"))
    need = stats.MIN_ROWS[name]
    size = pooled[columns[0]].size
    if selected == 0:
        found: str | None = "no_row"
    elif size == 0:
        found = "missing_values"
    elif name == "welch":
        groups = test.get("groups") or []
        parts = [pooled[columns[1]][pooled[columns[0]] == group] for group in groups]
        if len(parts) < 2 or min(p.size for p in parts) < 2:
            found = "too_few_rows"
        elif all(stats.is_constant(p.astype(np.float64)) for p in parts):
            found = "constant_input"
        else:
            found = None
    elif size < need:
        found = "too_few_rows"
    elif len(columns) == 2 and any(stats.is_constant(pooled[c]) for c in columns):
        found = "constant_input"
    else:
        found = None
    if found != built.reason:
        raise Retry


def _bivariate(g: Generator, rs: Stream, reason: str | None, hypothesis: bool) -> Built:
    qtype = "bivariate_hypothesis" if hypothesis else "bivariate_statistic"
    numeric, categorical = g.numeric_columns(), g.categorical_columns()
    # No chi-square hypothesis: the generator makes no categorical column depend on another, so its answer would
    # always be "no".
    names = ["pearson", "spearman"] + (["chi2"] if len(categorical) >= 2 and not hypothesis else [])
    if hypothesis and categorical:
        names.append("welch")
    if hypothesis and reason is None and g.factors:
        names.append("welch_factor")
    if reason == "confounded":
        names = ["welch_factor"]
    # A hypothesis question is drawn to reject its null half of the time: it then tests a relation the generator
    # made (a column and one it depends on), else two columns it made independent; the data decide, and a draw
    # whose data disagree is drawn again (while ``g.strict``), so that "yes" and "no" are equally likely.
    want_yes = hypothesis and reason is None and rs.chance(0.5)
    balanced = hypothesis and reason is None and g.strict
    if balanced:
        names = [n for n in names if _pairs(g, n, numeric, categorical, related=want_yes)]
        if not names:
            raise Retry
    name = rs.pick(names)
    if name == "welch_factor":
        return _factor_test(g, rs, reason, want_yes if balanced else None)
    if name == "welch" and reason in ("constant_input", "undefined_statistic"):
        raise Retry  # a Welch question always names two groups of a categorical column
    path_conditions, paths = g.path_conditions(rs, empty=reason == "no_file")
    if balanced:
        chosen: tuple[str, str] = rs.pick(_pairs(g, name, numeric, categorical, related=want_yes))
        pair = list(chosen)
        columns = pair if name == "welch" else rs.shuffled(pair)
    else:
        columns = _bivariate_columns(g, rs, name, reason, numeric, categorical)
    groups: list[str] = []
    if name == "welch" and reason != "undefined_statistic":
        observed = sorted(set(g.view.pooled(paths, [columns[0]], [])[columns[0]].tolist()))
        if len(observed) < 2:
            raise Retry
        groups = sorted(rs.sample(observed, 2), key=g.spec.variable(columns[0]).categories.index)
    rows: list[Condition] = []
    if reason == "constant_input":
        rows = _constant_rows(g, paths, name, columns)
    elif reason != "no_file":
        # Never a filter on an analysed column: fixing one would tell that the input is constant (or the groups).
        rows = _statistic_rows(g, rs, reason, paths, name, exclude=tuple(columns))
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
        if hypothesis and g.strict and (answer == "yes") != want_yes:
            raise Retry
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


def _pairs(
    g: Generator, name: str, numeric: list[Variable], categorical: list[Variable], related: bool
) -> list[tuple[str, str]]:
    """The column pairs a test ``name`` can take whose relation in the generator is ``related``."""
    if name == "welch_factor":
        return [
            (factor, v.column)
            for factor in g.factors
            for v in numeric
            if _related(g.relations, factor, v.column) == related
        ]
    if name == "chi2":
        pairs = [(a.column, b.column) for i, a in enumerate(categorical) for b in categorical[i + 1 :]]
    elif name == "welch":
        pairs = [(a.column, b.column) for a in categorical for b in numeric]
    else:
        pairs = [(a.column, b.column) for i, a in enumerate(numeric) for b in numeric[i + 1 :]]
    return [pair for pair in pairs if _related(g.relations, *pair) == related]


def _factors(view: RepoView) -> list[str]:
    """Path variables with at least two values in the repository's files: the experimental factors."""
    names = [pv.column for pv in view.spec.path_variables]
    return [n for n in names if np.unique(view.digits[:, view.placeholders.index(n)]).size >= 2]


def _factor_test(g: Generator, rs: Stream, reason: str | None, want_yes: bool | None) -> Built:
    """Does an experimental factor (a path variable) change a column's mean? Welch's test between the files with
    one value of the factor and those with another; not possible when the design confounds the two groups with
    another factor or the researcher (``confounded``). Draws selections until the design gives the wanted case."""
    view = g.view
    if not g.factors or not g.numeric_columns():
        raise Retry
    if want_yes is None:
        factor, column = rs.pick(g.factors), rs.pick(g.numeric_columns()).column
    else:
        factor, column = rs.pick(_pairs(g, "welch_factor", g.numeric_columns(), [], related=want_yes))
    kf = view.placeholders.index(factor)
    others = [n for n in view.placeholders if n != factor]
    for _ in range(MAX_ATTEMPTS):
        chosen = rs.sample(others, rs.randint(0, min(2, len(others))))
        anchor = rs.randint(0, len(view.paths) - 1)
        conditions = [g._anchored(name, anchor, rs) for name in chosen]
        if any(bool(view.select([c]).all()) for c in conditions):
            continue
        mask = view.select(conditions)
        codes = np.unique(view.digits[mask, kf]).tolist()
        if len(codes) < 2:
            continue
        pair = sorted(rs.sample(codes, 2))
        first, second = (mask & (view.digits[:, kf] == code) for code in pair)
        if int(first.sum() + second.sum()) > g.options.max_pooled_files:
            continue
        if g.confounded(first, second, factor) != (reason == "confounded"):
            continue
        break
    else:
        raise Retry
    texts = view.rendered(factor)
    groups = [texts[code] for code in pair]
    evidence = sorted(view.selected_paths(first) + view.selected_paths(second))
    alpha = rs.pick(ALPHAS)
    answer: Answer = 0.0
    if reason is None:
        a = view.pooled(view.selected_paths(first), [column], [])[column].astype(np.float64)
        b = view.pooled(view.selected_paths(second), [column], [])[column].astype(np.float64)
        if min(a.size, b.size) < 2 or (stats.is_constant(a) and stats.is_constant(b)):
            raise Retry
        _, p_value = stats.welch(a, b)
        if not math.isfinite(p_value) or abs(math.log(max(p_value, 1e-300) / alpha)) < 0.05:
            raise Retry
        answer = "yes" if p_value < alpha else "no"
        if want_yes is not None and (answer == "yes") != want_yes:
            raise Retry
    test = {"name": "welch_factor", "alpha": alpha, "groups": groups}
    draft = g.draft("bivariate_hypothesis", columns=[factor, column], path_conditions=conditions, test=test)
    query: dict[str, Any] = {
        "columns": [factor, column],
        "factor": factor,
        "path_conditions": conditions,
        "row_conditions": [],
        "layout": view.layout(),
        "test": test,
    }
    return Built(draft, answer, "yes_no", reason, choices=["yes", "no"], evidence=evidence, query=query)


def _constant_rows(g: Generator, paths: list[str], name: str, columns: list[str]) -> list[Condition]:
    """A threshold on a third column that keeps a few rows (enough for the test) over which one of the two
    analysed columns takes a single value. The condition names neither analysed column, so the question reads
    like any other; only the data show that the input is constant."""
    need = max(stats.MIN_ROWS[name], 2)
    others = [v.column for v in g.numeric_columns() if v.column not in columns]
    for other in others:
        pooled = g.view.pooled(paths, [*columns, other], [])
        key = pooled[other].astype(np.float64)
        order = np.argsort(key, kind="stable")
        ordered = key[order]
        for kept in range(need, min(need + 6, key.size)):
            for top in (True, False):
                rows = order[-kept:] if top else order[:kept]
                inside, outside = (ordered[-kept], ordered[-kept - 1]) if top else (ordered[kept - 1], ordered[kept])
                if inside == outside:
                    continue
                if not any(np.unique(pooled[c][rows]).size == 1 for c in columns):
                    continue
                for digits in (3, 4, 6):
                    value = _sig((inside + outside) / 2, digits)
                    condition = {"column": other, "op": "gt" if top else "lt", "value": value}
                    if g.view.pooled(paths, [other], [condition])[other].size == kept:
                        return [condition]
    raise Retry


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
    "count_rows": ("no_file", "no_row", "ambiguous_definition"),
    "prefix": ("no_file",),
    "condition": ("no_file",),
    "univariate_single_file": (*_STAT_REASONS, "not_measured"),
    "univariate_condition": (*_STAT_REASONS, "not_measured"),
    "bivariate_statistic": (*_STAT_REASONS, "constant_input"),
    "bivariate_hypothesis": (*_STAT_REASONS, "constant_input", "confounded"),
}


def generate(repository: Repository, options: Options | None = None) -> list[Question]:
    """All questions of one repository."""
    return Generator(repository, options or Options()).questions()
