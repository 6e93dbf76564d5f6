"""Texts of a procedural project: title, repository name, description and abstract.

Everything said names the spec's real variables, and every hypothesis states the direction of the
coefficient actually used in the dependent variable's expression.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

from generators.rng import Stream
from generators.spec import Description, PathVariable, Project, Spec, Variable


class TermLike(Protocol):
    outcome: str  # column of the dependent variable the term belongs to
    source: str
    direction: int
    shape: str


_TITLES = (
    "Effects of {a} and {b} on {y} in {area}",
    "{Y} under varying {a}: a {design} study",
    "How {a} shapes {y} and {y2}",
    "Linking {a} to {y} across {cond} conditions",
    "{Area}: {y} as a function of {a} and {b}",
    "Quantifying the influence of {a} on {y}",
    "Drivers of {y} in {area}: the role of {a}",
    "A {design} study of {y} across {cond} levels",
    "Do {a} and {b} jointly determine {y}?",
    "Variation in {y} with {a} and {cond}",
    "{Y} and {y2} in {area}: a {design} dataset",
    "Disentangling {a} and {cond} effects on {y}",
    "Predicting {y} from {a} in {area}",
    "Sensitivity of {y} to {a} under {cond} manipulation",
)
_DESIGNS = (
    "controlled",
    "longitudinal",
    "multi-site",
    "factorial",
    "replicated",
    "field",
    "laboratory",
    "observational",
    "randomised",
    "pilot",
)
_OPENERS = (
    "{Area} remains difficult to characterise quantitatively.",
    "Quantitative measurements of {y} in {area} are still scarce.",
    "How {a} shapes {y} is an open question in {area}.",
    "Understanding what drives {y} is central to {area}.",
    "Reliable data on {y} under realistic conditions are rare.",
    "Reported effects of {a} on {y} disagree across studies of {area}.",
    "Work in {area} depends on predicting {y} from measurable conditions.",
    "Few open datasets in {area} record {y} together with {a}.",
)
_SHAPE_PHRASES = {
    "linear": "changes roughly linearly with",
    "saturating": "saturates as {x} increases",
    "threshold": "shifts once {x} passes a threshold",
    "decay": "decays with increasing {x}",
    "logarithmic": "grows with diminishing returns in",
    "optimum": "peaks at an intermediate value of",
    "categorical": "differs between levels of",
    "interaction": "depends on the interaction of",
}


def placeholder_project() -> Project:
    """Stand-in texts while the variables are still being chosen."""
    empty = Description("-", (), (), (), (), "-")
    return Project("-", "pending", empty, "-")


def _cap(value: str) -> str:
    return value[:1].upper() + value[1:]


def _and(items: Sequence[str]) -> str:
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _with_unit(v: Variable | PathVariable) -> str:
    return f"{v.name} ({v.unit})" if v.unit else v.name


def _hypothesis(outcome: Variable, term: TermLike) -> str:
    if term.shape in ("linear", "saturating", "decay", "logarithmic", "threshold") and term.direction:
        verb = "increases" if term.direction > 0 else "decreases"
        return f"Higher {term.source} {verb} {outcome.name}."
    phrase = _SHAPE_PHRASES[term.shape]
    if "{x}" in phrase:
        return f"{_cap(outcome.name)} {phrase.format(x=term.source)}."
    return f"{_cap(outcome.name)} {phrase} {term.source}."


def project(spec: Spec, terms: Sequence[TermLike], rs: Stream) -> Project:
    outcomes = [v for v in spec.variables if v.role == "dependent"]
    covariates = [v for v in spec.variables if v.role == "independent"]
    conditions = list(spec.path_variables)
    y, y2 = outcomes[0].name, outcomes[-1].name if len(outcomes) > 1 else outcomes[0].name
    drivers = [c.name for c in conditions] + [v.name for v in covariates]
    picked = rs.sample(drivers, min(2, len(drivers)))
    a, b = (picked + picked)[:2] if picked else ("the experimental conditions", "time")
    cond = conditions[0].name if conditions else a
    area = spec.context.subdomain.lower()
    title = rs.pick(_TITLES).format(
        a=a,
        b=b,
        y=y,
        y2=y2,
        Y=_cap(y),
        cond=cond,
        area=area,
        Area=spec.context.subdomain,
        design=rs.pick(_DESIGNS),
    )
    year = spec.start_date[:4]
    slug_words = re.findall(r"[a-z0-9]+", f"{outcomes[0].column} {a}".lower())[:5]
    repo_name = "-".join([*slug_words, year])

    hypotheses = tuple(_hypothesis(spec.variable(t.outcome), t) for t in terms) or (f"{_cap(y)} varies with {a}.",)

    placeholders = spec.template.placeholders
    confounders = []
    if "researcher" in placeholders:
        confounders.append("Systematic differences between the researchers who ran the sessions.")
    if "date" in placeholders:
        confounders.append("Day-to-day drift in instruments and ambient conditions between measurement dates.")
    if "seq_number" in placeholders:
        confounders.append("Order effects across consecutive runs (fatigue, reagent ageing, warm-up).")
    unused = [v.name for v in covariates if v.name not in {t.source for t in terms}]
    if unused:
        confounders.append(f"Covariates recorded but not manipulated: {_and(unused)}.")
    confounders.append(f"Unmeasured sources of variation typical of {area}.")

    cond_text = _and([f"{c.name} ({_and([str(v) for v in c.values])})" for c in conditions])
    plan = (
        f"We study {area} ({spec.context.domain.lower()}) by measuring {_and([o.name for o in outcomes])} "
        f"under controlled variation of {cond_text or 'the experimental conditions'}, while recording "
        f"{_and([v.name for v in covariates]) or 'no additional covariates'} for every observation."
    )
    people = f"{len(spec.researchers)} researchers" if spec.researchers else "the project team"
    setup = (
        f"Data were collected by {people} starting {spec.start_date}. Each file holds one run of about "
        f"{int(spec.params.rows_mean)} records with the columns {_and([v.column for v in spec.variables])}, "
        f"stored as .{spec.extension} files in folders named by {_and(list(placeholders))}."
    )
    description = Description(
        plan=plan,
        hypotheses=hypotheses,
        independent=tuple(f"{_with_unit(c)}: {c.description}" for c in conditions)
        + tuple(f"{_with_unit(v)}: {v.description}" for v in covariates),
        dependent=tuple(f"{_with_unit(o)}: {o.description}" for o in outcomes),
        confounders=tuple(confounders),
        setup=setup,
    )
    finding = hypotheses[0].rstrip(".")
    opener = rs.pick(_OPENERS).format(area=area, Area=_cap(area), y=y, a=a, field=spec.context.field.lower())
    abstract = (
        f"{opener} "
        f"In this {rs.pick(_DESIGNS)} study we "
        f"measured {_and([o.name for o in outcomes])} across {cond_text or 'a range of conditions'}. "
        f"Our central hypothesis is that {finding[0].lower() + finding[1:]}. "
        f"We release the raw run-level tables so that the effects of {a} and {b} can be re-analysed."
    )
    return Project(title=title, repo_name=repo_name[:80], description=description, abstract=abstract)
