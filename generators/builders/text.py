"""Texts of a procedural project: title, repository name, description and abstract.

Sentences come from grammatical templates fed by the study design: variable names as the design writes them
(acronyms kept), the subdomain's topic and unit of observation, and levels printed as the paths print them.
Every hypothesis states the design's expected direction of a relation that the data really contain (in a
counterfactual world the data may contradict it: a hypothesis is what the researchers expected).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

from generators.paths import Tree
from generators.rng import Stream
from generators.spec import Description, PathVariable, Project, Spec, Variable, render_number


class TermLike(Protocol):
    outcome: str  # column of the dependent variable the term belongs to
    source: str  # label of the cause ("a|b" for an interaction)
    direction: int  # the design's expected direction
    shape: str
    nuisance: bool
    cause: str  # the driving column or placeholder ("" for an interaction)
    levels: tuple[tuple[str, float], ...]  # categorical cause with expected effects: (level, effect), highest first


_TITLES = (
    "Effects of {a} and {b} on {y} in {area}",
    "{Y} under varying {a}: {design_a} study",
    "How {a} shapes {y} and {y2}",
    "{Y} across {cond} levels in {area}",
    "{Area}: {y} as a function of {a} and {b}",
    "Quantifying the influence of {a} on {y}",
    "Drivers of {y} in {area}: the role of {a}",
    "{Design_a} {topic_study} of {y}",
    "Do {a} and {b} jointly determine {y}?",
    "Variation in {y} with {a} and {cond}",
    "{Y} and {y2} in {area}: {design_a} dataset",
    "Disentangling the effects of {a} and {cond} on {y}",
    "Predicting {y} from {a} in {area}",
    "Sensitivity of {y} to {a}",
)
# Words for the kind of study that hold whatever the design: every repository compares conditions in replicated
# files; "factorial" needs two crossed conditions. ("laboratory" for radar scans, "observational" for a manipulated
# design and "longitudinal" for a one-visit record were claims the data could contradict.)
_DESIGNS = {
    "lab": ("comparative", "replicated", "systematic", "factorial"),
    "life": ("comparative", "replicated", "systematic", "factorial"),
    "social": ("comparative", "systematic", "factorial"),
    "compute": ("benchmark", "comparative", "systematic", "factorial"),
}
_OPENERS = (
    "Quantitative data on {y} in {area} remain scarce.",
    "How {a} shapes {y} is an open question in {area}.",
    "Understanding what drives {y} is central to {area}.",
    "Reported effects of {a} on {y} disagree across studies in {area}.",
    "Few open {topic} datasets record {y} together with {a}.",
    "Work in {area} depends on predicting {y} from conditions that can be measured.",
)
# "{s}" is the verb's ending after the outcome: "s" for a singular name, "" for a plural one ("missed votes").
_UP = ("{Y} increase{s} with {x}.", "Higher {x} raises {y}.", "{Y} rise{s} as {x} increases.")
_DOWN = ("{Y} decrease{s} as {x} increases.", "Higher {x} lowers {y}.", "{Y} fall{s} with increasing {x}.")
_SHAPED = {
    ("saturating", 1): "{Y} increase{s} with {x} and level{s} off at high {x}.",
    ("saturating", -1): "{Y} decrease{s} with {x} and level{s} off at high {x}.",
    ("logarithmic", 1): "{Y} increase{s} with {x}, with diminishing returns.",
    ("logarithmic", -1): "{Y} decrease{s} with {x}, less steeply at high {x}.",
    ("threshold", 1): "{Y} rise{s} once {x} exceeds a threshold.",
    ("threshold", -1): "{Y} drop{s} once {x} exceeds a threshold.",
    ("decay", 1): "{Y} increase{s} with {x}, steeply at first.",
    ("decay", -1): "{Y} decrease{s} with {x}, steeply at first.",
}
_SINGULAR_ENDINGS = ("ss", "us", "is", "ics", "as", "ness")


def placeholder_project() -> Project:
    """Stand-in texts while the variables are still being chosen."""
    empty = Description("-", (), (), (), (), "-")
    return Project("-", "pending", empty, "-")


def cap(value: str) -> str:
    """Capitalised for the start of a sentence, unless the first word already has capitals ("pH", "EEG")."""
    first = value.split(" ", 1)[0]
    return value if first != first.lower() else value[:1].upper() + value[1:]


def uncap(value: str) -> str:
    """A sentence's start inside another sentence: the first letter lowered unless the word is an acronym."""
    first = value.split(" ", 1)[0]
    return value if first[1:] != first[1:].lower() else value[:1].lower() + value[1:]


def data_topic(topic: str) -> str:
    """A topic to put before "data" or "files": a final "data" or "dataset" is dropped ("sensor data" -> "sensor")."""
    words = topic.split(" ")
    return " ".join(words[:-1]) if len(words) > 1 and words[-1].lower() in ("data", "dataset", "datasets") else topic


def lower_name(value: str) -> str:
    """A taxonomy name inside a sentence: capitalised words lowered, acronyms and mixed case kept
    ("EEG Signal Processing" -> "EEG signal processing")."""
    return " ".join(w.lower() if w[:1].isupper() and w[1:] == w[1:].lower() else w for w in value.split(" "))


def article(phrase: str) -> str:
    """``a`` or ``an`` before ``phrase``, by its first sound (vowel letters, and acronyms read letter by letter)."""
    word = phrase.split(" ", 1)[0]
    if word.isupper() and len(word) > 1:
        return "an" if word[0] in "AEFHILMNORSX" else "a"
    return "an" if word[:1].lower() in "aeio" or word.lower().startswith(("un", "hour")) else "a"


def with_article(phrase: str) -> str:
    return f"{article(phrase)} {phrase}"


def and_list(items: Sequence[str]) -> str:
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def levels(pv: PathVariable) -> str:
    """The levels as the paths print them, with the unit: ``200, 250 and 300 °C``; ``PtAl2O3 and NiSiO2``."""
    texts = [render_number(float(v)) if pv.numeric else str(v) for v in pv.values]
    return and_list(texts) + (f" {pv.unit}" if pv.unit and pv.numeric else "")


def _with_unit(v: Variable | PathVariable) -> str:
    return f"{v.name} ({v.unit})" if v.unit else v.name


def _design_kind(spec: Spec) -> str:
    field = spec.context.field.lower()
    if field.startswith("social"):
        return "social"
    if field.startswith(("computer", "math")):
        return "compute"
    if field.startswith("life"):
        return "life"
    return "lab"


def verb_ending(name: str) -> str:
    """``s`` when ``name`` is singular ("conversion increases"), nothing when plural ("missed votes increase")."""
    last = name.rsplit(" ", 1)[-1]
    plural = last.endswith("s") and not last.lower().endswith(_SINGULAR_ENDINGS) and not last.isupper()
    return "" if plural else "s"


def hypothesis(
    outcome: Variable, term: TermLike, rs: Stream, n_levels: int = 0, held: Sequence[object] | None = None
) -> str:
    """One sentence stating the expected effect of the term's cause on ``outcome``; ``n_levels``: how many levels
    the cause has when it is a condition of the paths (0 otherwise); ``held``: those levels that some file holds
    (the highest and lowest named are among them)."""
    y, s = outcome.name, verb_ending(outcome.name)
    if term.shape == "interaction":
        a, b = term.source.split("|", 1)
        return f"The effect of {a} on {y} depends on {b}."
    x = term.source
    ranked = [(level, effect) for level, effect in term.levels if held is None or level in held]
    if term.shape == "categorical" and len(ranked) >= 2 and ranked[0][1] > ranked[-1][1]:
        high, low = ranked[0][0], ranked[-1][0]
        be = "is" if s else "are"
        return f"{cap(y)} {be} expected to be highest for {x} {high} and lowest for {x} {low}."
    if term.shape == "categorical":
        return f"{cap(y)} differ{s} between levels of {x}."
    if term.shape == "optimum" and 0 < n_levels < 3:  # two levels cannot show an optimum
        return f"{cap(y)} differ{s} between the {x} levels tested."
    if term.shape == "optimum":
        return f"{cap(y)} peak{s} at an intermediate {x}."
    key = (term.shape, term.direction)
    shaped = key in _SHAPED and rs.chance(0.5)
    template = _SHAPED[key] if shaped else rs.pick(_UP if term.direction > 0 else _DOWN)
    return template.format(Y=cap(y), y=y, x=x, s=s)


def _name_years(dates: Sequence[str | int | float]) -> tuple[str, ...]:
    """The years a repository's name carries: those of the first and last dates its files are named by ("2016",
    "2016-2017"), else none. A name never claims a year its data contradict: reviewers read "...-2017" over
    interviews of 2018, and "...-2016" over folders dated 2017 (issue 24)."""
    if not dates:
        return ()
    first, last = str(min(dates))[:4], str(max(dates))[:4]
    return (first,) if first == last else (first, last)


def project(spec: Spec, terms: Sequence[TermLike], rs: Stream) -> Project:
    outcomes = [v for v in spec.variables if v.role == "dependent"]
    covariates = [v for v in spec.variables if v.role == "independent"]
    # What the files hold: a small tree may lack a level or a date the spec lists, which no README or name claims.
    tree = Tree(spec)
    held = {placeholder: tree.held_values(placeholder) for placeholder in tree.placeholders}
    conditions = list(tree.held_path_variables())
    # What the study is about: its responses (outcomes with a stated cause), not a definition computed from other
    # columns (a cross-section, an air temperature from the calendar), which no title should claim to explain.
    stated_outcomes = {t.outcome for t in terms if not t.nuisance}
    responses = [o for o in outcomes if o.column in stated_outcomes] or outcomes
    lead = responses[0] if responses else None
    y = lead.name if lead else "the measured responses"
    y2 = responses[-1].name if len(responses) > 1 else y
    causes = [t.source for t in terms if not t.nuisance and t.shape != "interaction"]
    # Titles and the abstract name conditions and covariates as the effects studied, never an outcome; the lead
    # response's own causes first, so "Effects of a and b on y" names what moves y.
    outcome_names = {o.name for o in outcomes}
    own = [
        t.source
        for t in terms
        if lead is not None and t.outcome == lead.column and not t.nuisance and t.shape != "interaction"
    ]
    own = [d for d in dict.fromkeys(own) if d not in outcome_names]
    drivers = [d for d in dict.fromkeys(causes + [c.name for c in conditions]) if d not in outcome_names]
    picked = rs.sample(own, min(2, len(own)))
    rest = [d for d in drivers if d not in picked]
    picked += rs.sample(rest, min(2 - len(picked), len(rest)))
    others = [v.name for v in covariates if v.name not in picked] + ["the measurement conditions"]
    a, b = (picked + others)[:2] if picked else ("the experimental conditions", "the measurement conditions")
    cond = next((c.name for c in conditions if c.name not in (a, b)), "")
    titles = [t for t in _TITLES if ("{cond}" not in t or cond) and ("{y2}" not in t or y2 != y)]
    area = lower_name(spec.context.subdomain)
    topic = data_topic(spec.context.topic or area)
    record = spec.context.record or "record"
    kinds = _DESIGNS[_design_kind(spec)]
    design = rs.pick(kinds if len(conditions) >= 2 else tuple(k for k in kinds if k != "factorial"))
    title = rs.pick(titles).format(
        a=a,
        b=b,
        y=y,
        y2=y2,
        Y=cap(y),
        cond=cond,
        area=area,
        Area=cap(area),
        topic=topic,
        topic_study=topic if topic.endswith("study") else f"{topic} study",
        design_a=with_article(design),
        Design_a=cap(with_article(design)),
    )
    words = re.findall(r"[a-z0-9]+", f"{topic} {lead.column if lead else ''}".lower())
    slug_words = list(dict.fromkeys(words))[:5]  # "looking-time-s", not "looking-time-looking-time"
    repo_name = "-".join([*slug_words, *_name_years(held.get("date", ()))])

    stated = [t for t in terms if not t.nuisance]
    text_rs = rs.child("hypotheses")
    n_levels = {c.column: len(c.values) for c in conditions}
    hypotheses = tuple(
        dict.fromkeys(
            hypothesis(spec.variable(t.outcome), t, text_rs.child(i), n_levels.get(t.cause, 0), held.get(t.cause))
            for i, t in enumerate(stated)
        )
    ) or (f"{cap(y)} var{'ies' if verb_ending(y) else 'y'} with {a}.",)

    placeholders = spec.template.placeholders
    confounders = []
    if "researcher" in placeholders:
        confounders.append("Systematic differences between the researchers who recorded the files.")
    if "date" in placeholders:
        confounders.append("Day-to-day drift in instruments and ambient conditions between measurement dates.")
    if "seq_number" in placeholders:
        confounders.append("Order effects across consecutive runs (fatigue, reagent ageing, warm-up).")
    unused = [v.name for v in covariates if v.name not in set(causes)]
    if unused:
        confounders.append(f"Covariates recorded but not varied by design: {and_list(unused)}.")
    confounders.append(f"Unmeasured sources of variation typical of {area}.")

    cond_text = and_list([f"{c.name} ({levels(c)})" for c in conditions])
    measured = and_list([o.name for o in outcomes]) or "the responses"
    recorded = f", and records {and_list([v.name for v in covariates])} alongside" if covariates else ""
    plan = (
        f"This {topic if topic.endswith('study') else topic + ' study'} measures {measured} for each {record} across "
        f"{cond_text or 'a range of conditions'}{recorded}."
    )
    people = f"{len(spec.researchers)} researchers" if spec.researchers else "the project team"
    setup = (
        f"Data were collected by {people} starting {spec.start_date}. Each file holds the records of one "
        f"combination of conditions: about {int(spec.params.rows_mean)} rows, one per {record}, with the columns "
        f"{and_list([v.column for v in spec.variables])}, stored as .{spec.extension} files in folders named by "
        f"{and_list(list(placeholders))}."
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
    opener = rs.pick(_OPENERS).format(area=area, y=y, a=a, topic=topic)
    abstract = (
        f"{opener} "
        f"In this {design} study we measured {measured} across {cond_text or 'a range of conditions'}. "
        + (f"{finding}. " if " expected " in f" {finding} " else f"We expected that {uncap(finding)}. ")
        # Not "one file per combination of conditions": run numbers, researchers and dates put several files in
        # one combination, and a small tree misses some (a reader checked the claim against the tree)
        + f"We release the raw {topic} data, each file named by its conditions, so that the effects of {a} "
        f"and {b} can be re-analysed."
    )
    return Project(title=title, repo_name=repo_name[:80], description=description, abstract=abstract)
