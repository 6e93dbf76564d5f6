"""The summary of a run (``summary.json``, docs/eval.md): the grader's summary over the records, plus the
harness's keys. Built once per run and shared by the one-line result, the report and the gate."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from qa.clarify import CONDITIONS, WITH_CHANNEL, calibration
from qa.grading import VARIANTS, GradingRun
from qa.metrics import summarize
from qa.prior import PriorError
from qa.result_record import FLOORS, PRIORS, STATUSES, ResultRecord, prior_table
from sgfs.eval.stats import PairedComparison, clustered_proportion, paired_comparison, pass_at_k

INTERVAL_METHOD = (
    "Wilson score interval at the effective sample size n / deff, deff the cluster-robust variance over question "
    "ids relative to independent items (docs/eval.md)"
)


@dataclass(frozen=True)
class RunSummary:
    """``grading``: every key of ``sgfs grade --json`` (``qa.metrics.summarize``); the rest: the harness's."""

    grading: dict[str, Any]
    statuses: dict[str, int]
    audited: int
    evidence_recall_mean: float | None
    evidence_recall_mean_answerable: float | None
    correct_without_evidence: float | None
    correct_without_evidence_n: int
    abstained_after_evidence: int
    reads_outside_repository: int
    input_tokens: int | None
    output_tokens: int | None
    tool_calls: int | None
    time_s_total: float
    time_s_mean: float | None
    questions_digest: str | None = None  # set by `sgfs eval` (as in run.json)
    repeats: int = 1
    pass_at_k: dict[str, float | None] = field(default_factory=dict)  # "k" -> pass@k, k = 1..repeats
    pass_all_k: float | None = None  # share of question-variants right in every repeat
    per_question: dict[str, float] = field(default_factory=dict)  # question id -> success rate
    run_to_run_sd: float | None = None  # standard deviation of the accuracy of each repeat; None for one
    accuracy_interval: dict[str, Any] = field(default_factory=dict)  # clustered by question id
    floors: dict[str, dict[str, Any]] = field(default_factory=dict)  # "abstain", "prior": floor agents
    baseline: dict[str, Any] | None = None  # the paired comparison with --baseline, when given
    # ``ambiguity_metrics``: by_condition, condition_differences, wrong_target_rate, ask_rate and calibration, for
    # a run with conditions (--ambiguous); None for any other.
    ambiguity: dict[str, Any] | None = None

    @property
    def n(self) -> int:
        return int(self.grading["n"])

    @property
    def correct(self) -> int:
        return int(self.grading["correct"])

    @property
    def accuracy(self) -> float | None:
        accuracy = self.grading["accuracy"]
        return None if accuracy is None else float(accuracy)

    def to_json(self) -> dict[str, Any]:
        """``summary.json``: the grader's keys, then the harness's, then ``questions_digest`` when set."""
        harness = {
            "statuses": dict(self.statuses),
            "audited": self.audited,
            "evidence_recall_mean": self.evidence_recall_mean,
            "evidence_recall_mean_answerable": self.evidence_recall_mean_answerable,
            "correct_without_evidence": self.correct_without_evidence,
            "correct_without_evidence_n": self.correct_without_evidence_n,
            "abstained_after_evidence": self.abstained_after_evidence,
            "reads_outside_repository": self.reads_outside_repository,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "tool_calls": self.tool_calls,
            "time_s_total": self.time_s_total,
            "time_s_mean": self.time_s_mean,
            "accuracy_interval": self.accuracy_interval,
            "repeats": self.repeats,
            "pass_at_k": dict(self.pass_at_k),
            "pass_all_k": self.pass_all_k,
            "run_to_run_sd": self.run_to_run_sd,
            "per_question": dict(self.per_question),
            "floors": self.floors,
            **(self.ambiguity or {}),
        }
        digest = {} if self.questions_digest is None else {"questions_digest": self.questions_digest}
        baseline = {} if self.baseline is None else {"baseline": self.baseline}
        return {**self.grading, **harness, **digest, **baseline}


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _total(records: Sequence[ResultRecord], get: Callable[[ResultRecord], int | None]) -> int | None:
    values = [value for value in map(get, records) if value is not None]
    return sum(values) if values else None


def _tokens(name: str) -> Callable[[ResultRecord], int | None]:
    return lambda record: (record.usage or {}).get(name)


def cluster_of(record: ResultRecord) -> str:
    """What a record's interval is clustered by: its question id, or in a condition its twin pair (the full and
    the ambiguous twin of one pair are not independent draws)."""
    return record.pair if record.condition is not None and record.pair else record.id


def accuracy_interval(records: Sequence[ResultRecord]) -> dict[str, Any]:
    """The accuracy of ``records`` with its 95 % interval clustered by question id, or by twin pair in an
    ambiguous run (``clustered_proportion``)."""
    found = clustered_proportion([bool(r.correct) for r in records], [cluster_of(r) for r in records])
    low, high = found.interval if found.interval is not None else (None, None)
    return {
        "accuracy": found.value,
        "low": low,
        "high": high,
        "n": found.n,
        "questions": found.clusters,
        "design_effect": found.design_effect,
        "method": INTERVAL_METHOD,
    }


def repeat_statistics(records: Sequence[ResultRecord], repeats: int) -> dict[str, Any]:
    """pass@k (k = 1..repeats), pass_all_k, the per-question success rates and the run-to-run standard deviation
    of the accuracy across repeats (None for a single repeat)."""
    tried: dict[tuple[str, str, str | None], list[int]] = {}
    for record in records:
        counts = tried.setdefault((*record.key, record.condition), [0, 0])
        counts[0] += 1
        counts[1] += bool(record.correct)
    n = np.array([v[0] for v in tried.values()], dtype=np.int64)
    c = np.array([v[1] for v in tried.values()], dtype=np.int64)
    rates: dict[str, list[int]] = {}
    for record in records:
        counts = rates.setdefault(_question_label(record), [0, 0])
        counts[0] += 1
        counts[1] += bool(record.correct)
    by_repeat: dict[int, list[int]] = {}
    for record in records:
        counts = by_repeat.setdefault(record.repeat, [0, 0])
        counts[0] += 1
        counts[1] += bool(record.correct)
    accuracies = np.array([right / total for total, right in by_repeat.values()], dtype=np.float64)
    return {
        "pass_at_k": {str(k): pass_at_k(n, c, k) for k in range(1, repeats + 1)} if tried else {},
        "pass_all_k": float(np.mean(c == n)) if tried else None,
        "per_question": {qid: right / total for qid, (total, right) in rates.items()},
        "run_to_run_sd": float(np.std(accuracies, ddof=1)) if repeats > 1 and accuracies.size > 1 else None,
    }


def _question_label(record: ResultRecord) -> str:
    """``per_question``'s key: the question id, with the condition after it in an ambiguous run (the twin is
    asked in two)."""
    return record.id if record.condition is None else f"{record.id} [{record.condition}]"


def _round(record: ResultRecord) -> int:
    """What pairs the wordings of one question in Krippendorff's alpha (``qa.metrics.paraphrase_agreement``): its
    repeat, and its condition (the twin is asked in two conditions, each with every wording)."""
    condition = 0 if record.condition is None else CONDITIONS.index(record.condition) + 1
    return record.repeat * (len(CONDITIONS) + 1) + condition


def _share(flags: Sequence[bool], clusters: Sequence[str]) -> dict[str, Any]:
    found = clustered_proportion(flags, clusters)
    low, high = found.interval if found.interval is not None else (None, None)
    return {"count": found.successes, "rate": found.value, "low": low, "high": high}


# The paired differences of accuracy the summary gives: (run, against).
CONDITION_DIFFERENCES = (("ambig", "full"), ("ask", "ambig"))


def _difference(found: PairedComparison, mine: str, theirs: str) -> dict[str, Any]:
    """A paired difference of accuracy between two conditions, as ``condition_differences`` gives it."""
    return {
        "items": found.pairs,
        "pairs": found.clusters,
        mine: found.accuracy,
        theirs: found.baseline_accuracy,
        "difference": found.difference,
        "low": found.interval[0],
        "high": found.interval[1],
        "interval_method": f"paired bootstrap over twin pairs ({found.resamples} resamples, seed {found.seed})",
        "better": found.improved,  # items right in the first condition and wrong in the second
        "worse": found.worsened,
        "mcnemar_p": found.mcnemar_p,
    }


def ambiguity_metrics(records: Sequence[ResultRecord]) -> dict[str, Any] | None:
    """``summary.json``'s keys for a run with conditions (docs/eval.md, "Ambiguity and clarification"), None when
    no record has a condition:

    - ``by_condition``: per condition run, ``n``, ``pairs`` (twin pairs), ``correct``, ``accuracy`` with its 95 %
      interval (``low``, ``high``: clustered by twin pair, as ``accuracy_interval``), and the counts, rates and
      intervals of asking (``asked``, ``ask_rate``...) and of wrong-target answers (``wrong_target``...);
    - ``condition_differences``: accuracy ambig − full and ask − ambig on the items both conditions hold (same
      pair, variant and repeat), with the paired bootstrap over twin pairs of ``stats.paired_comparison``;
    - ``wrong_target_rate``: per condition, the share of answers graded correct under an unintended reading only
      (null on ``full``: a full twin has no other reading);
    - ``ask_rate``: per condition, the share of items on which the agent asked (null on ``ambig``: no channel);
      asking on ``full`` is over-asking;
    - ``calibration``: ``calibration(ask_rate["ask"], ask_rate["full"])``.
    """
    conditioned = [r for r in records if r.condition is not None]
    if not conditioned:
        return None
    groups = {c: [r for r in conditioned if r.condition == c] for c in CONDITIONS}
    by_condition: dict[str, Any] = {}
    wrong_target_rate: dict[str, float | None] = {}
    ask_rate: dict[str, float | None] = {}
    for condition, group in groups.items():
        if not group:
            wrong_target_rate[condition] = ask_rate[condition] = None
            continue
        clusters = [cluster_of(r) for r in group]
        accuracy = accuracy_interval(group)
        asked = _share([bool(r.asked) for r in group], clusters)
        wrong = _share([bool(r.wrong_target) for r in group], clusters)
        channel = condition in WITH_CHANNEL
        decoys = condition != "full"
        by_condition[condition] = {
            "n": len(group),
            "pairs": accuracy["questions"],
            "correct": sum(bool(r.correct) for r in group),
            "accuracy": accuracy["accuracy"],
            "low": accuracy["low"],
            "high": accuracy["high"],
            "asked": asked["count"],
            "ask_rate": asked["rate"] if channel else None,
            "ask_low": asked["low"] if channel else None,
            "ask_high": asked["high"] if channel else None,
            "wrong_target": wrong["count"] if decoys else None,
            "wrong_target_rate": wrong["rate"] if decoys else None,
            "wrong_target_low": wrong["low"] if decoys else None,
            "wrong_target_high": wrong["high"] if decoys else None,
        }
        wrong_target_rate[condition] = by_condition[condition]["wrong_target_rate"]
        ask_rate[condition] = by_condition[condition]["ask_rate"]
    differences: dict[str, Any] = {}
    for mine, theirs in CONDITION_DIFFERENCES:
        against = {(cluster_of(r), r.variant, r.repeat): r for r in groups[theirs]}
        paired = [(r, against[key]) for r in groups[mine] if (key := (cluster_of(r), r.variant, r.repeat)) in against]
        found = paired_comparison(
            [bool(a.correct) for a, _ in paired],
            [bool(b.correct) for _, b in paired],
            [cluster_of(a) for a, _ in paired],
        )
        differences[f"{mine}-{theirs}"] = None if found is None else _difference(found, mine, theirs)
    return {
        "by_condition": by_condition,
        "condition_differences": differences,
        "wrong_target_rate": wrong_target_rate,
        "ask_rate": ask_rate,
        "calibration": calibration(ask_rate["ask"], ask_rate["full"]),
    }


def floor_summary(records: Sequence[ResultRecord]) -> dict[str, dict[str, Any]]:
    """The floor agents over exactly these items: ``abstain`` ("not possible" to every item) and ``prior`` (the
    shipped prior table's answer for each question type), each graded like the agent's answers when the run
    was made; ``{"accuracy": None, "reason"}`` where a floor cannot be given."""
    out: dict[str, dict[str, Any]] = {}
    for name in FLOORS:
        graded = [r.floors.get(name) if r.floors is not None else None for r in records]
        reason = None
        if name == "prior":
            try:
                trained = set(prior_table().seeds)
            except PriorError as exc:
                trained, reason = set(), f"the shipped prior table cannot be used: {exc}"
            seen = sorted({r.seed for r in records if r.seed in trained})
            if seen:
                shown = ", ".join(map(str, seen[:5])) + (" ..." if len(seen) > 5 else "")
                reason = f"not applicable: the prior table was learned on evaluated seed(s) {shown}"
        if reason is None and (not records or any(value is None for value in graded)):
            reason = "not recorded: records without floor grades (written by another harness or an older sgfs)"
        if reason is not None:
            out[name] = {"n": len(records), "correct": None, "accuracy": None, "reason": reason}
            continue
        correct = sum(bool(value) for value in graded)
        out[name] = {"n": len(records), "correct": correct, "accuracy": correct / len(records)}
    return out


def prior_split(records: Sequence[ResultRecord]) -> dict[str, dict[str, Any]]:
    """``summary.json``'s ``by_prior``: ``{"n", "correct", "accuracy"}`` (as ``by_type``) over the items whose
    question tests a relation of the study design the data follow (``consistent``) and those whose relation the
    counterfactual world turned around (``violating``); both keys always, accuracy null for no items. Items of
    questions without a prior are in neither."""
    split: dict[str, dict[str, Any]] = {}
    for prior in PRIORS:
        group = [record for record in records if record.prior == prior]
        correct = sum(bool(record.correct) for record in group)
        split[prior] = {"n": len(group), "correct": correct, "accuracy": correct / len(group) if group else None}
    return split


def _with_prior_split(grading: dict[str, Any], records: Sequence[ResultRecord]) -> dict[str, Any]:
    """The grader's summary with ``by_prior`` among its splits, right after ``by_variant``."""
    out: dict[str, Any] = {}
    for name, value in grading.items():
        out[name] = value
        if name == "by_variant":
            out["by_prior"] = prior_split(records)
    out.setdefault("by_prior", prior_split(records))
    return out


def summarize_records(records: Sequence[ResultRecord], repeats: int | None = None) -> RunSummary:
    """The grader's summary (qa.metrics.summarize) over the records, plus the harness's keys; ``repeats`` is
    ``--repeats K`` (default: the highest repeat among the records)."""
    repeats = repeats if repeats is not None else max((r.repeat for r in records), default=1)
    seen = {record.variant for record in records}
    variants = [v for v in VARIANTS if v in seen] or ["template"]
    items = GradingRun([record.item_result() for record in records], variants, [])
    grading = _with_prior_split(summarize(items, [_round(record) for record in records]), records)
    audited = [r for r in records if r.evidence_read is not None]
    with_evidence = [(r, r.evidence_recall) for r in audited if r.evidence_recall is not None]
    correct_with_evidence = [r for r, _ in with_evidence if r.correct and r.answerable]
    times = [r.time_s or 0.0 for r in records]
    return RunSummary(
        grading=grading,
        statuses={status: sum(r.status == status for r in records) for status in STATUSES},
        audited=len(audited),
        evidence_recall_mean=_mean([recall for _, recall in with_evidence]),
        evidence_recall_mean_answerable=_mean([recall for r, recall in with_evidence if r.answerable]),
        correct_without_evidence=_mean([float(not r.evidence_read) for r in correct_with_evidence]),
        correct_without_evidence_n=sum(not r.evidence_read for r in correct_with_evidence),
        abstained_after_evidence=sum(
            bool(r.answerable and r.abstained and recall == 1.0) for r, recall in with_evidence
        ),
        reads_outside_repository=sum(bool(r.reads_outside) for r in audited),
        input_tokens=_total(records, _tokens("input_tokens")),
        output_tokens=_total(records, _tokens("output_tokens")),
        tool_calls=_total(records, lambda record: record.tool_calls),
        time_s_total=sum(times),
        time_s_mean=_mean(times),
        repeats=repeats,
        accuracy_interval=accuracy_interval(records),
        floors=floor_summary(records),
        ambiguity=ambiguity_metrics(records),
        **repeat_statistics(records, repeats),
    )
