"""Metrics over graded items: accuracy and its breakdowns, abstention precision and recall, and
Krippendorff's alpha between templated and paraphrased correctness (docs/grading.md)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from fractions import Fraction
from typing import Any

from qa.grading import TEMPLATE, VARIANTS, GradingRun, ItemResult


def _ratio(numerator: int, denominator: int) -> float | None:
    return None if denominator == 0 else numerator / denominator


def tally(items: Iterable[ItemResult]) -> dict[str, Any]:
    """``{"n", "correct", "accuracy"}``; accuracy is null for no items."""
    listed = list(items)
    correct = sum(item.correct for item in listed)
    return {"n": len(listed), "correct": correct, "accuracy": _ratio(correct, len(listed))}


def breakdown(items: Sequence[ItemResult], key: str, order: Sequence[str] | None = None) -> dict[str, dict[str, Any]]:
    """``tally`` per value of the item attribute ``key``; keys in ``order`` first, the rest sorted."""
    groups: dict[str, list[ItemResult]] = {}
    for item in items:
        groups.setdefault(str(getattr(item, key)), []).append(item)
    first = [name for name in order or () if name in groups]
    names = first + sorted(name for name in groups if name not in first)
    return {name: tally(groups[name]) for name in names}


def abstention(items: Sequence[ItemResult]) -> dict[str, Any]:
    """Abstention as detection of unanswerable questions: precision = correct abstentions / all
    abstentions, recall = correct abstentions / unanswerable items (missing answers included, as not
    abstaining). Null when the denominator is zero."""
    abstentions = sum(item.abstained for item in items)
    right = sum(item.abstained and not item.answerable for item in items)
    unanswerable = sum(not item.answerable for item in items)
    return {
        "abstentions": abstentions,
        "correct_abstentions": right,
        "unanswerable": unanswerable,
        "abstention_precision": _ratio(right, abstentions),
        "abstention_recall": _ratio(right, unanswerable),
    }


def krippendorff_alpha_nominal(units: Iterable[Sequence[Hashable]]) -> float | None:
    """Krippendorff's alpha for nominal data; every unit lists the values its coders gave (missing
    values simply left out). Units with fewer than two values are not pairable and are dropped.

    Coincidences: o[c][k] = sum over units of (number of ordered pairs of values (c, k) from different
    coders) / (m_u - 1). n_c = sum_k o[c][k], n = sum_c n_c. Then
    alpha = 1 - (n - 1) * sum_{c != k} o[c][k] / sum_{c != k} n_c * n_k.
    Computed exactly (fractions). None when undefined: no pairable unit, or a single value overall
    (no expected disagreement)."""
    coincidences: dict[tuple[Hashable, Hashable], Fraction] = {}
    for unit in units:
        values = list(unit)
        m = len(values)
        if m < 2:
            continue
        counts = Counter(values)
        for c, nc in counts.items():
            for k, nk in counts.items():
                pairs = nc * (nc - 1) if c == k else nc * nk
                if pairs:
                    coincidences[(c, k)] = coincidences.get((c, k), Fraction(0)) + Fraction(pairs, m - 1)
    marginals: dict[Hashable, Fraction] = {}
    for (c, _), o in coincidences.items():
        marginals[c] = marginals.get(c, Fraction(0)) + o
    n = sum(marginals.values(), Fraction(0))
    observed = sum((o for (c, k), o in coincidences.items() if c != k), Fraction(0))
    expected = sum((marginals[c] * marginals[k] for c in marginals for k in marginals if c != k), Fraction(0))
    if n == 0 or expected == 0:
        return None
    return float(1 - (n - 1) * observed / expected)


def paraphrase_agreement(items: Sequence[ItemResult], repeats: Sequence[int] | None = None) -> dict[str, Any]:
    """Alpha between templated and paraphrased correctness. A unit is one (question, paraphrase) pair
    where both the templated and that paraphrased question were answered: its two values are the
    templated correctness and the paraphrased correctness (0/1). Missing answers are left out. With
    ``repeats`` (each item's repeat, for a question asked several times) a unit pairs the two wordings
    of one repeat."""
    rounds = list(repeats) if repeats is not None else [1] * len(items)
    if len(rounds) != len(items):
        raise ValueError("repeats must give one repeat per item")
    template = {
        (item.id, r): item.correct
        for item, r in zip(items, rounds, strict=True)
        if item.variant == TEMPLATE and not item.missing
    }
    units: dict[str, list[tuple[int, int]]] = {}
    for item, r in zip(items, rounds, strict=True):
        if item.variant != TEMPLATE and not item.missing and (item.id, r) in template:
            units.setdefault(item.variant, []).append((int(template[(item.id, r)]), int(item.correct)))
    pooled = [unit for variant in sorted(units) for unit in units[variant]]
    return {
        "krippendorff_alpha": krippendorff_alpha_nominal(pooled),
        "krippendorff_units": len(pooled),
        "krippendorff_alpha_by_variant": {
            variant: krippendorff_alpha_nominal(units[variant]) for variant in sorted(units)
        },
    }


def summarize(run: GradingRun, repeats: Sequence[int] | None = None) -> dict[str, Any]:
    """The summary ``sgfs grade`` prints: counts, accuracy and breakdowns over every (question, variant)
    item (missing answers count as wrong), abstention metrics, the ids that could not be graded and,
    when paraphrase variants were answered, Krippendorff's alpha (``repeats``: as in
    ``paraphrase_agreement``)."""
    items = run.items
    overall = tally(items)
    answerable = {
        "answerable": tally(item for item in items if item.answerable),
        "unanswerable": tally(item for item in items if not item.answerable),
    }
    summary: dict[str, Any] = {
        "n": overall["n"],
        "correct": overall["correct"],
        "accuracy": overall["accuracy"],
        "questions": len({item.id for item in items}),
        "variants": list(run.variants),
        "by_category": breakdown(items, "category"),
        "by_type": breakdown(items, "type"),
        "by_answerable": answerable,
        "by_variant": breakdown(items, "variant", VARIANTS),
        **abstention(items),
        "missing": list(run.missing),
        "missing_items": sum(item.missing for item in items),
        "unknown": list(run.unknown),
        "duplicates": list(run.duplicates),
    }
    if any(variant != TEMPLATE for variant in run.variants):
        summary.update(paraphrase_agreement(items, repeats))
    return summary
