"""The embedded default spec builder: a realistic research project from a seed, with no LLM.

Steps (paper §3.1): scientific context from the taxonomy; variables from the field's vocabulary; a path
template; dependent variables written in the expression language with relationships of several shapes,
calibrated on a reference sample so that every term moves the outcome by a share of its typical spread;
finally the texts (title, description, abstract) that name those variables and state hypotheses whose
directions follow the coefficients actually used.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import date, timedelta
from typing import Any

import numpy as np

from generators import expr
from generators.builders import text
from generators.data_files import Field, names, taxonomy, vocabularies
from generators.rng import Stream, root_stream
from generators.spec import (
    DATE_FORMATS,
    EXTENSIONS,
    VALUE_STYLES,
    Context,
    Distribution,
    Params,
    PathTemplate,
    PathVariable,
    Readme,
    Spec,
    Variable,
    expression_scope,
    validate,
)
from generators.synth import sample_independent

REFERENCE_ROWS = 256
_SPECIAL_RANK = {"researcher": 0.0, "date": 0.6, "seq_number": 2.2}


@dataclass
class _Input:
    """A name an expression may use, with its behaviour on the reference sample."""

    name: str  # column or placeholder name
    label: str  # readable name for texts
    categories: tuple[str, ...] = ()  # non-empty when categorical
    mean: float = 0.0
    sd: float = 0.0
    low: float = 0.0


@dataclass
class _Term:
    source: str  # label of the driving input
    code: str  # expression text, starting with " + " or " - "
    direction: int  # +1 increases, -1 decreases, 0 categorical / non-monotone
    shape: str
    outcome: str = ""


def build_spec(seed: int, params: Params | None = None, universe: str = "") -> Spec:
    """The procedural spec of repository ``seed``; with ``universe`` (the seed's salt under a key,
    ``generators.keys.Key.salt``) that of the keyed universe."""
    params = params or Params()
    rs = root_stream(seed, universe, "spec")
    context, field = _context(rs.child("context"))
    vocab = vocabularies()[field.slug]
    extension = rs.child("extension").pick(EXTENSIONS)
    start = date(2015, 1, 1) + timedelta(days=rs.child("start").randint(0, 3650))

    placement = rs.child("template")
    specials = [s for s, p in (("researcher", 0.55), ("date", 0.5), ("seq_number", 0.6)) if placement.chance(p)]
    sizes = _component_sizes(placement)
    total = sum(sizes)
    specials = specials[: max(0, total - 1)]  # at least one experimental condition in every path
    conditions = placement.sample(vocab["conditions"], min(total - len(specials), len(vocab["conditions"])))
    sizes = _fit_sizes(sizes, len(specials) + len(conditions))
    path_variables = tuple(_path_variable(c, rs.child("levels", c["column"])) for c in conditions)
    order = _placeholder_order(specials, [c["column"] for c in conditions], placement)
    components: list[tuple[str, ...]] = []
    for size in sizes:
        components.append(tuple(order[:size]))
        order = order[size:]
    seq_count = placement.randint(3, 24)
    template = PathTemplate(
        components=tuple(components),
        joiners=tuple(placement.pick(("-", "_", "_")) for _ in components),
        value_style=placement.pick(VALUE_STYLES),
        date_format=placement.pick(DATE_FORMATS),
        seq_width=max(len(str(seq_count)), placement.pick((1, 2, 3, 3))),
    )
    people = rs.child("people")
    researchers = _researchers(people, people.randint(2, 5))
    day_stream = rs.child("dates")
    offsets = sorted(day_stream.sample(list(range(365)), day_stream.randint(3, 14)))
    dates = tuple((start + timedelta(days=o)).isoformat() for o in offsets)

    base = Spec(
        seed=seed,
        context=context,
        project=text.placeholder_project(),
        readme=_readme(rs.child("readme")),
        extension=extension,
        template=template,
        researchers=researchers if "researcher" in specials else (),
        dates=dates if "date" in specials else (),
        seq_count=seq_count if "seq_number" in specials else 0,
        path_variables=path_variables,
        variables=(),
        start_date=start.isoformat(),
        params=params,
        universe=universe,
    )
    variables, terms = _variables(base, vocab, rs.child("variables"))
    spec = replace(base, variables=tuple(variables))
    spec = replace(spec, project=text.project(spec, terms, rs.child("text")))
    validate(spec)
    return spec


# --------------------------------------------------------------------------------------------------
# Context, template, placeholders
# --------------------------------------------------------------------------------------------------
def _context(rs: Stream) -> tuple[Context, Field]:
    field = rs.pick(taxonomy())
    domain = rs.pick(field.domains)
    sub = rs.pick(domain.subdomains)
    return Context(field.name, domain.name, sub.name, sub.description), field


def _component_sizes(rs: Stream) -> list[int]:
    levels = rs.pick_weighted((2, 3, 4), (0.45, 0.35, 0.2))
    dirs = [rs.pick_weighted((1, 2, 3), (0.65, 0.27, 0.08)) for _ in range(levels)]
    return [*dirs, rs.pick_weighted((1, 2, 3), (0.35, 0.45, 0.2))]


def _fit_sizes(sizes: list[int], available: int) -> list[int]:
    """Shrink components (never below one placeholder) when the vocabulary has fewer conditions."""
    sizes = list(sizes)
    while sum(sizes) > available and any(s > 1 for s in sizes):
        largest = max(range(len(sizes)), key=lambda i: (sizes[i], i))
        sizes[largest] -= 1
    while sum(sizes) > available:
        sizes.pop(0)
    return sizes


def _placeholder_order(specials: list[str], conditions: list[str], rs: Stream) -> list[str]:
    """Researchers and dates tend to be folders, run numbers file names; conditions anywhere."""
    ranked = [(_SPECIAL_RANK[s] + rs.random() * 1.5, s) for s in specials]
    ranked += [(0.8 + rs.random() * 1.6, c) for c in conditions]
    return [name for _, name in sorted(ranked)]


def _path_variable(condition: dict[str, Any], rs: Stream) -> PathVariable:
    values = list(condition["values"])
    k = rs.randint(2, min(6, len(values)))
    chosen = sorted(rs.sample(list(range(len(values))), k))  # keep the vocabulary's natural order
    picked = [values[i] for i in chosen]
    typed: tuple[str, ...] | tuple[float, ...]
    typed = tuple(str(v) for v in picked) if isinstance(picked[0], str) else tuple(float(v) for v in picked)
    return PathVariable(condition["name"], condition["column"], condition["description"], condition["unit"], typed)


def _researchers(rs: Stream, k: int) -> tuple[str, ...]:
    pool = names()
    style = rs.randint(0, 3)
    out: list[str] = []
    for first, last in zip(rs.sample(pool["first"], k), rs.sample(pool["last"], k), strict=True):
        out.append((f"{first[0]}{last}".lower(), last.lower(), f"{first[0]}{last}", f"{first}.{last}".lower())[style])
    return tuple(dict.fromkeys(out))  # distinct, order kept


def _readme(rs: Stream) -> Readme:
    # The paper shows the title and the abstract with probability 0.5 each; at 0.75 each, the title and abstract
    # questions are answerable in more than half of the repositories with a README (issue 23: no free points).
    present = rs.chance(0.5)
    title = present and rs.chance(0.75)
    abstract = title and rs.chance(0.75)
    return Readme(present, title, abstract)


# --------------------------------------------------------------------------------------------------
# Columns
# --------------------------------------------------------------------------------------------------
_DATETIME_NAMES = (
    ("timestamp", "measurement time", "Date and time at which the record was taken."),
    ("measured_at", "measurement time", "When the measurement was made (local instrument clock)."),
    ("recorded_at", "recording time", "When the observation was recorded."),
    ("sample_time", "sampling time", "Date and time the sample was taken."),
)


def _variables(spec: Spec, vocab: dict[str, Any], rs: Stream) -> tuple[list[Variable], list[_Term]]:
    total = rs.randint(7, 19)
    ident = rs.pick(vocab["identifiers"])
    column, label, description = rs.pick(_DATETIME_NAMES)
    variables = [
        Variable(
            ident["name"],
            ident["column"],
            "identifier",
            "string",
            ident["description"],
            prefix=ident["prefix"],
        ),
        Variable(label, column, "datetime", "datetime", description),
    ]
    remaining = total - 2
    n_dep = min(len(vocab["outcomes"]), max(2, round(remaining * rs.uniform_range(0.25, 0.45, 1)[0])))
    n_ind = remaining - n_dep
    shares = rs.uniform(3) + 0.3
    n_cat = min(len(vocab["categorical"]), max(1, round(n_ind * shares[0] / shares.sum())))
    n_int = min(len(vocab["integer"]), max(1, round(n_ind * shares[1] / shares.sum())))
    n_cont = min(len(vocab["continuous"]), max(1, n_ind - n_cat - n_int))
    independents: list[Variable] = []
    for entry in rs.sample(vocab["categorical"], n_cat):
        independents.append(
            Variable(
                entry["name"],
                entry["column"],
                "independent",
                "categorical",
                entry["description"],
                categories=tuple(entry["values"]),
                probs=tuple(float(p) for p in entry["probs"]),
            )
        )
    for kind, entries in (
        ("integer", rs.sample(vocab["integer"], n_int)),
        ("continuous", rs.sample(vocab["continuous"], n_cont)),
    ):
        for entry in entries:
            params = {k: float(v) for k, v in entry["params"].items()}
            independents.append(
                Variable(
                    entry["name"],
                    entry["column"],
                    "independent",
                    kind,
                    entry["description"],
                    unit=entry["unit"],
                    distribution=Distribution(entry["dist"], params),
                )
            )
    variables += rs.shuffled(independents)
    terms: list[_Term] = []
    reference = _Reference(spec, rs.child("reference"))
    for variable in variables:
        reference.add(variable)
    for outcome in rs.sample(vocab["outcomes"], n_dep):
        scope_spec = replace(spec, variables=tuple(variables))
        dependent, new_terms = _dependent(outcome, reference, scope_spec, rs.child("dep", outcome["column"]))
        variables.append(dependent)
        reference.add(dependent)
        terms += new_terms
    return variables, terms


class _Reference:
    """A synthetic sample over all path values, used to centre and scale the dependent expressions."""

    def __init__(self, spec: Spec, rs: Stream) -> None:
        self.rs = rs
        self.n = REFERENCE_ROWS
        self.env: dict[str, expr.Column] = {}
        self.inputs: list[_Input] = []
        placeholders = set(spec.template.placeholders)
        if "researcher" in placeholders:
            self._categorical("researcher", "the researcher", spec.researchers)
        if "date" in placeholders:
            start = date.fromisoformat(spec.start_date)
            days = [float((date.fromisoformat(d) - start).days) for d in spec.dates]
            self._numeric("date", "the measurement date", np.array(days)[rs.integers(0, len(days), self.n)])
        if "seq_number" in placeholders:
            self._numeric("seq_number", "the run number", rs.integers(1, spec.seq_count + 1, self.n).astype(float))
        for pv in spec.path_variables:
            if pv.numeric:
                values = np.array(pv.values, dtype=np.float64)
                self._numeric(pv.column, pv.name, values[rs.integers(0, len(values), self.n)])
            else:
                self._categorical(pv.column, pv.name, tuple(str(v) for v in pv.values))

    def _categorical(self, name: str, label: str, categories: tuple[str, ...]) -> None:
        codes = self.rs.integers(0, len(categories), self.n)
        self.env[name] = expr.Categorical(codes, categories)
        self.inputs.append(_Input(name, label, categories=categories))

    def _numeric(self, name: str, label: str, values: np.ndarray[Any, np.dtype[np.float64]]) -> None:
        self.env[name] = values
        self.inputs.append(
            _Input(name, label, mean=float(values.mean()), sd=float(values.std()), low=float(values.min()))
        )

    def add(self, variable: Variable) -> None:
        if variable.role == "identifier":
            return
        if variable.role == "datetime":
            self._numeric(variable.column, "time since the study start", self.rs.uniform_range(0.0, 365.0, self.n))
        elif variable.type == "categorical":
            codes = self.rs.categorical(np.asarray(variable.probs), self.n)
            self.env[variable.column] = expr.Categorical(codes, variable.categories)
            self.inputs.append(_Input(variable.column, variable.name, categories=variable.categories))
        elif variable.role == "independent":
            values = np.asarray(sample_independent(variable, self.rs, self.n), dtype=np.float64)
            self._numeric(variable.column, variable.name, values)
        else:
            assert variable.expression is not None
            values = expr.evaluate(variable.expression, self.env, self.n) + self.rs.normal(0, variable.noise_sd, self.n)
            low, high = variable.bounds
            self._numeric(
                variable.column,
                variable.name,
                np.clip(values, low if low is not None else -np.inf, high if high is not None else np.inf),
            )

    def evaluate(self, expression: str) -> np.ndarray[Any, np.dtype[np.float64]]:
        return expr.evaluate(expression, self.env, self.n)


def _num(value: float) -> str:
    """A coefficient as short, exact text (4 significant digits)."""
    rounded = float(f"{value:.4g}")
    return repr(rounded) if not rounded.is_integer() else str(int(rounded))


def _signed(value: float, body: str) -> str:
    return f" - {_num(-value)}{body}" if value < 0 else f" + {_num(value)}{body}"


def _dependent(outcome: dict[str, Any], reference: _Reference, spec: Spec, rs: Stream) -> tuple[Variable, list[_Term]]:
    center, spread = float(outcome["center"]), float(outcome["spread"])
    low = None if outcome["min"] is None else float(outcome["min"])
    high = None if outcome["max"] is None else float(outcome["max"])
    scope = expression_scope(spec)
    usable = [i for i in reference.inputs if i.name in scope.numeric or i.name in scope.categorical]
    usable = [i for i in usable if i.categories or i.sd > 0]
    drivers = rs.sample(usable, min(len(usable), rs.randint(1, 4)))
    terms = [_term(i, spread, rs) for i in drivers]
    numeric = [i for i in drivers if not i.categories]
    if len(numeric) >= 2 and rs.chance(0.3):
        a, b = numeric[:2]
        coef = rs.pick((-1, 1)) * rs.uniform_range(0.2, 0.5, 1)[0] * spread / (a.sd * b.sd)
        code = _signed(coef, f"*({a.name} - {_num(a.mean)})*({b.name} - {_num(b.mean)})")
        terms.append(_Term(f"{a.label} and {b.label}", code, 0, "interaction"))
    body = "".join(t.code for t in terms)
    # Centre the deterministic part on the vocabulary's typical value.
    varying = reference.evaluate("0" + body)
    offset = float(_num(center - float(varying.mean())))
    expression = f"{_num(offset)}{body}"
    deterministic = varying + offset
    if rs.chance(0.15) and (low is None or low <= 0):
        expression = f"max({expression}, 0)"
        deterministic = np.maximum(deterministic, 0.0)
    spread_seen = float(np.std(deterministic))
    noise = spec.params.noise_fraction * (spread_seen if spread_seen > 0 else spread)
    variable = Variable(
        outcome["name"],
        outcome["column"],
        "dependent",
        "continuous",
        outcome["description"],
        unit=outcome["unit"],
        expression=expression,
        noise_sd=float(_num(noise)),
        bounds=(low, high),
    )
    return variable, [replace(t, outcome=variable.column) for t in terms]


def _term(source: _Input, spread: float, rs: Stream) -> _Term:
    """One driver's contribution, worth a random share of the outcome's spread."""
    weight = rs.uniform_range(0.4, 1.2, 1)[0] * spread
    sign = rs.pick((-1, 1))
    if source.categories:
        effects = rs.normal(0.0, weight, len(source.categories))
        effects -= effects.mean()
        table = ", ".join(f'"{c}": {_num(e)}' for c, e in zip(source.categories, effects, strict=True))
        return _Term(source.label, f" + lookup({source.name}, {{{table}}})", 0, "categorical")
    x, m, s = source.name, source.mean, source.sd
    shape = rs.pick_weighted(("linear", "saturating", "threshold", "decay", "optimum", "log"), (4, 2, 1.5, 1, 1, 1))
    positive = source.low >= 0 and m > 0
    if shape == "saturating" and positive:
        amplitude = sign * 2.5 * weight
        return _Term(source.label, _signed(amplitude, f"*{x}/({x} + {_num(m)})"), sign, "saturating")
    if shape == "decay" and positive:
        amplitude = sign * 2.0 * weight
        return _Term(source.label, _signed(amplitude, f"*exp(-{x}/{_num(m)})"), -sign, "decay")
    if shape == "log" and positive:
        amplitude = sign * 1.5 * weight
        return _Term(source.label, _signed(amplitude, f"*log1p({x}/{_num(m)})"), sign, "logarithmic")
    if shape == "threshold":
        return _Term(source.label, _signed(sign * 1.5 * weight, f"*where({x} > {_num(m)}, 1, 0)"), sign, "threshold")
    if shape == "optimum":
        # A bounded bell: the outcome peaks near the input's typical value (e.g. a temperature optimum).
        bump = f"*exp(-0.5*(({x} - {_num(m)})/{_num(s)})**2)"
        return _Term(source.label, _signed(2.0 * weight, bump), 0, "optimum")
    return _Term(source.label, _signed(sign * weight / s, f"*({x} - {_num(m)})"), sign, "linear")
