"""`report.md` and a self-contained `report.html` (plots embedded, and written beside it as PNG files)."""

from __future__ import annotations

import base64
import html
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qa.grading import VARIANTS
from qa.result_record import PRIORS, ResultRecord
from sgfs.errors import SgfsError
from sgfs.eval import plots
from sgfs.eval.results import RunInfo
from sgfs.eval.stats import ClusteredProportion, PairedComparison, clustered_proportion, paired_comparison, wilson
from sgfs.eval.summary import RunSummary

if TYPE_CHECKING:
    from sgfs.eval.finish import Comparison

GROUPS: dict[str, Callable[[ResultRecord], str]] = {
    "category": lambda record: record.category,
    "type": lambda record: record.type,
    "variant": lambda record: record.variant,
    "answerable": lambda record: "answerable" if record.answerable else "unanswerable",
}
PRIOR_TITLE = "Accuracy on questions consistent with / violating domain priors"
WRONG_SHOWN = 50  # wrong answers listed in the report; the rest are counted


def _grouped(records: Sequence[ResultRecord], key: str) -> dict[str, list[ResultRecord]]:
    out: dict[str, list[ResultRecord]] = {}
    for record in records:
        out.setdefault(GROUPS[key](record), []).append(record)
    if key == "variant":
        return {name: out[name] for name in [*VARIANTS, *sorted(set(out) - set(VARIANTS))] if name in out}
    return {name: out[name] for name in sorted(out)}


def _groups(records: Sequence[ResultRecord], key: str) -> dict[str, tuple[int, int]]:
    return {name: (sum(bool(r.correct) for r in group), len(group)) for name, group in _grouped(records, key).items()}


def _clustered(records: Sequence[ResultRecord]) -> ClusteredProportion:
    return clustered_proportion([bool(r.correct) for r in records], [r.id for r in records])


def _intervals(records: Sequence[ResultRecord], key: str) -> dict[str, tuple[float, float] | None]:
    return {name: _clustered(group).interval for name, group in _grouped(records, key).items()}


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f} %"


def _interval(correct: int, n: int) -> str:
    bounds = wilson(correct, n)
    return "-" if bounds is None else f"{100 * bounds[0]:.1f}–{100 * bounds[1]:.1f} %"


def _bounds(bounds: tuple[float, float] | None) -> str:
    return "-" if bounds is None else f"{100 * bounds[0]:.1f}–{100 * bounds[1]:.1f} %"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines


def _cell(text: str) -> str:
    """A table cell: one line, no column separator."""
    return " ".join(text.split()).replace("|", "/")


def _accuracy_row(name: str, group: Sequence[ResultRecord]) -> list[str]:
    found = _clustered(group)
    return [name, str(found.n), str(found.clusters), str(found.successes), _pct(found.value), _bounds(found.interval)]


ACCURACY_HEADER = ["n", "questions", "correct", "accuracy", "95 % interval"]


def _numbers(records: Sequence[ResultRecord], get: Callable[[ResultRecord], float | None]) -> list[float]:
    return [float(value) for value in map(get, records) if value is not None]


def _tokens(name: str) -> Callable[[ResultRecord], float | None]:
    return lambda record: (record.usage or {}).get(name)


def _all_tokens(record: ResultRecord) -> float | None:
    return sum(record.usage.values()) if record.usage else None


def _stat_line(name: str, values: list[float]) -> list[str]:
    if not values:
        return [name, "0", "-", "-", "-"]
    ordered = sorted(values)
    middle = len(ordered) // 2
    median = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    return [name, str(len(values)), f"{sum(values) / len(values):.3g}", f"{median:.3g}", f"{ordered[-1]:.3g}"]


def _alpha(value: object) -> str:
    return f"{value:.3f}" if isinstance(value, float) else "-"


def _run_lines(runs: Sequence[RunInfo], summary: RunSummary) -> list[str]:
    agents = sorted({run.agent for run in runs if run.agent is not None})
    versions = sorted({run.sgfs_version for run in runs if run.sgfs_version})
    formats = sorted({run.question_format for run in runs})
    generators = sorted({run.generator_version for run in runs})
    worlds = sorted({"counterfactual (--counterfactual)" if run.counterfactual else "plain" for run in runs})
    levels = sorted({run.mess for run in runs})
    sandboxes = sorted({run.sandbox for run in runs})
    keys = sorted({run.key_fingerprint or "none (the open universe)" for run in runs})
    return [
        f"- runs: {', '.join(run.dir for run in runs)}",
        f"- agent: {', '.join(agents) or '-'}",
        f"- sgfs version: {', '.join(versions) or '-'}",
        f"- question format: {', '.join(map(str, formats))}",
        f"- generator version: {', '.join(map(str, generators))}; world: {', '.join(worlds)}; "
        f"mess level: {', '.join(map(str, levels))}",
        f"- sandbox: {'; '.join(sandboxes)}",
        f"- key fingerprint: {', '.join(keys)}",
        f"- graded items: {summary.n} ({summary.grading.get('questions', '-')} questions, "
        f"{summary.repeats} repeat{'s' if summary.repeats != 1 else ''})",
        "",
    ]


def build_markdown(
    records: Sequence[ResultRecord],
    summary: RunSummary,
    runs: Sequence[RunInfo],
    baseline: Comparison | None,
) -> str:
    """The report as markdown; the plots it shows are drawn by ``draw``."""
    lines = ["# sgfs evaluation report", "", *_run_lines(runs, summary)]
    lines += ["## Accuracy", ""]
    grading = summary.grading
    lines += _table(["", *ACCURACY_HEADER], [_accuracy_row("all", records)])
    lines += ["", "Intervals are clustered by question id: the wordings and repeats of one question count as one "
              "draw (docs/eval.md, \"Statistics\")."]  # fmt: skip
    answerable = _grouped(records, "answerable")
    lines += ["", "### Answerable and unanswerable questions", ""]
    lines += _table(["kind", *ACCURACY_HEADER], [_accuracy_row(k, v) for k, v in answerable.items()])
    alphas = grading.get("krippendorff_alpha_by_variant") or {}
    variants = _grouped(records, "variant")
    rows = [[*_accuracy_row(name, group), _alpha(alphas.get(name))] for name, group in variants.items()]
    lines += ["", "### By wording (variant)", "", *_table(["variant", *ACCURACY_HEADER, "α with template"], rows)]
    if "krippendorff_alpha" in grading:
        alpha, units = _alpha(grading["krippendorff_alpha"]), grading.get("krippendorff_units", 0)
        lines += ["", f"Krippendorff's alpha between templated and paraphrased correctness: {alpha} ({units} units)."]
    else:
        lines += ["", "Krippendorff's alpha: - (only one wording was asked)."]
    for title, key in (("category", "category"), ("type", "type")):
        rows = [_accuracy_row(name, group) for name, group in _grouped(records, key).items()]
        lines += ["", f"### By {title}", "", *_table([title, *ACCURACY_HEADER], rows)]
        lines += ["", f"![accuracy by {title}](accuracy_by_{key}.png)"]
    lines += _prior_section(records)
    lines += _ambiguity_section(summary)
    lines += ["", "## Floors", "", "What an agent that reads nothing scores on exactly these items, graded like the "
              "agent's answers.", ""]  # fmt: skip
    floor_rows = []
    for name, what in (("abstain", "\"not possible\" to every question"),
                       ("prior", "each question type's most common answer (the shipped prior table)")):  # fmt: skip
        floor = summary.floors.get(name, {})
        floor_rows.append([name, what, _pct(floor.get("accuracy")), str(floor.get("reason") or "")])
    lines += _table(["floor", "answers", "accuracy", "note"], [
        ["this run", "the agent's answers", _pct(summary.accuracy), ""], *floor_rows
    ])  # fmt: skip
    if summary.repeats > 1:
        lines += _repeats_section(summary)
    lines += ["", "## Abstention", ""]
    abst = [
        ["precision (correct abstentions / abstentions)", _pct(grading["abstention_precision"]),
         _interval(grading["correct_abstentions"], grading["abstentions"])],
        ["recall (correct abstentions / unanswerable)", _pct(grading["abstention_recall"]),
         _interval(grading["correct_abstentions"], grading["unanswerable"])],
    ]  # fmt: skip
    lines += _table(["measure", "value", "95 % interval"], abst)
    lines += ["", "![abstention](abstention.png)"]
    lines += ["", "## Evidence access", ""]
    if summary.audited:
        lines += [
            f"- mean evidence recall: {_pct(summary.evidence_recall_mean)} "
            f"(answerable questions: {_pct(summary.evidence_recall_mean_answerable)})",
            f"- correct answers given without reading any evidence file: "
            f"{summary.correct_without_evidence_n} ({_pct(summary.correct_without_evidence)})",
            f"- abstentions on answerable questions after reading all evidence: {summary.abstained_after_evidence}",
            f"- items that read outside their repository: {summary.reads_outside_repository}",
        ]
    else:
        lines.append("Not recorded: the run used a mount without the audit.")
    lines += ["", "![evidence recall](evidence_recall.png)", "", "## Cost", ""]
    cost = [
        _stat_line("time (s)", _numbers(records, lambda r: r.time_s)),
        _stat_line("input tokens", _numbers(records, _tokens("input_tokens"))),
        _stat_line("output tokens", _numbers(records, _tokens("output_tokens"))),
        _stat_line("tool calls", _numbers(records, lambda r: r.tool_calls)),
    ]
    lines += _table(["per question", "recorded", "mean", "median", "max"], cost)
    lines += ["", f"Statuses: {', '.join(f'{k} {v}' for k, v in summary.statuses.items())}.", ""]
    lines += ["![distributions](distributions.png)", ""]
    lines += _wrong_section(records)
    if baseline is not None:
        lines += _baseline_section(baseline)
    return "\n".join(lines) + "\n"


def _prior_section(records: Sequence[ResultRecord]) -> list[str]:
    """Accuracy on the questions over a cause and its outcome in the study design, split by whether the data
    follow the design's expected direction (``consistent``) or a counterfactual world turned it around
    (``violating``); nothing when no item has a prior."""
    groups = {prior: [r for r in records if r.prior == prior] for prior in PRIORS}
    if not any(groups.values()):
        return []
    rows = [_accuracy_row(prior, group) for prior, group in groups.items() if group]
    return [
        "",
        f"### {PRIOR_TITLE}",
        "",
        "Questions over a cause and its outcome in the study design (a correlation or hypothesis test of two "
        "columns): consistent when the data follow the design's expected direction, violating when the "
        "counterfactual world turned it around. An agent that answers from domain knowledge rather than the data "
        "does well on the first and badly on the second.",
        "",
        *_table(["prior", *ACCURACY_HEADER], rows),
    ]


AMBIGUITY_TITLE = "Ambiguity and clarification"
CONDITION_TEXT = {
    "full": "full twin, channel offered",
    "ambig": "ambiguous twin, no channel",
    "ask": "ambiguous twin, channel offered",
}


def _rate(entry: dict[str, Any], name: str) -> str:
    """A rate of ``by_condition`` with its interval, or "-" where it is not defined."""
    value = entry.get(f"{name}_rate")
    if value is None:
        return "-"
    return f"{_pct(value)} ({_bounds((entry[f'{name}_low'], entry[f'{name}_high']))})"


def _ambiguity_section(summary: RunSummary) -> list[str]:
    """The conditions of an ambiguous run (summary.json's ``by_condition`` and the rest); nothing for another."""
    metrics = summary.ambiguity
    if not metrics:
        return []
    rows = []
    for condition, entry in metrics["by_condition"].items():
        interval = _bounds((entry["low"], entry["high"])) if entry["low"] is not None else "-"
        rows.append([
            condition, CONDITION_TEXT.get(condition, ""), str(entry["n"]), str(entry["pairs"]), _pct(entry["accuracy"]),
            interval, _rate(entry, "ask"), _rate(entry, "wrong_target"),
        ])  # fmt: skip
    header = ["condition", "what runs", "n", "twin pairs", "accuracy", "95 % interval", "ask rate", "wrong-target rate"]
    lines = [
        "",
        f"## {AMBIGUITY_TITLE}",
        "",
        "Each ambiguous twin ran with its full twin (docs/eval.md): ask rate is the share of items on which the agent "
        "asked its one clarifying question (on full items, over-asking); wrong-target rate the share of answers "
        "right under another reading than the intended one. Intervals are clustered by twin pair.",
        "",
        *_table(header, rows),
    ]
    differences = []
    for name, found in metrics["condition_differences"].items():
        if found is None:
            continue
        shown = f"{100 * found['difference']:+.1f} pts ({100 * found['low']:+.1f} to {100 * found['high']:+.1f})"
        differences.append([name.replace("-", " − "), str(found["items"]), str(found["pairs"]), shown])
    if differences:
        lines += [
            "",
            "Paired differences of accuracy between conditions, over the items both hold (the same twin pair, wording "
            "and repeat):",
            "",
            *_table(["difference", "items", "twin pairs", "accuracy (paired 95 % interval)"], differences),
        ]
    score = metrics.get("calibration")
    lines += [
        "",
        f"Calibration of asking: {'-' if score is None else f'{score:.2f}'} (the harmonic mean of the ask rate on "
        "ambiguous items and the rate of not asking on full ones; 1 asks exactly when something is open, 0 never or "
        "always).",
    ]
    return lines


def _repeats_section(summary: RunSummary) -> list[str]:
    rows = [[f"pass@{k}", _pct(value)] for k, value in summary.pass_at_k.items()]
    rows.append([f"right in all {summary.repeats} repeats (pass_all_k)", _pct(summary.pass_all_k)])
    sd = summary.run_to_run_sd
    rows.append(["run-to-run standard deviation of accuracy", "-" if sd is None else f"{100 * sd:.1f} points"])
    lines = ["", "## Repeats", "", f"Each question (and wording) was asked {summary.repeats} times; pass@k is the "
             "unbiased estimator of Chen et al. (2021), averaged over question-variants.", ""]  # fmt: skip
    return lines + _table(["measure", "value"], rows)


def _truth(record: ResultRecord) -> str:
    return "-" if record.truth is None else str(record.truth)


def _wrong_section(records: Sequence[ResultRecord]) -> list[str]:
    wrong = [r for r in records if not r.correct]
    lines = ["## Wrong answers", ""]
    if not wrong:
        return [*lines, "None.", ""]
    rows = [
        [r.id, r.variant, str(r.repeat), "-" if r.answer is None else r.answer[:80], _truth(r), r.status or "-"]
        for r in wrong[:WRONG_SHOWN]
    ]
    lines += _table(["id", "variant", "repeat", "answer", "truth", "status"], rows)
    if len(wrong) > WRONG_SHOWN:
        lines += ["", f"... and {len(wrong) - WRONG_SHOWN} more wrong answers (results.jsonl lists them all)."]
    return [*lines, ""]


def _by_type(comparison: Comparison) -> dict[str, PairedComparison]:
    groups: dict[str, tuple[list[bool], list[bool], list[str]]] = {}
    for mine, theirs in zip(comparison.mine, comparison.theirs, strict=True):
        a, b, ids = groups.setdefault(mine.type, ([], [], []))
        a.append(bool(mine.correct))
        b.append(bool(theirs.correct))
        ids.append(mine.id)
    out = {}
    for qtype in sorted(groups):
        found = paired_comparison(*groups[qtype])
        if found is not None:
            out[qtype] = found
    return out


def _baseline_section(baseline: Comparison) -> list[str]:
    records, base = baseline.mine, baseline.theirs
    lines = [f"## Against the baseline ({baseline.name})", "", f"Compared on the {len(records)} items both runs "
             f"hold ({baseline.run_total} in this run, {baseline.baseline_total} in the baseline), paired by "
             f"question id, variant and repeat. Unpaired, not compared: {baseline.run_only} items of this run and "
             f"{baseline.baseline_only} of the baseline.", ""]  # fmt: skip
    rows = []
    for qtype, found in _by_type(baseline).items():
        shown = f"{100 * found.difference:+.1f} pts ({100 * found.interval[0]:+.1f} to {100 * found.interval[1]:+.1f})"
        rows.append([qtype, str(found.pairs), _pct(found.accuracy), _pct(found.baseline_accuracy), shown])
    lines += _table(["type", "pairs", "run", "baseline", "difference (paired 95 % interval)"], rows)
    overall = baseline.paired
    if overall is not None:
        mcnemar = (
            f"McNemar's exact test p = {overall.mcnemar_p:.3g}"
            if overall.mcnemar_p is not None
            else "McNemar's test not given: a question has several pairs (wordings or repeats), which are not "
            "independent"
        )
        lines += ["", f"Overall: {100 * overall.difference:+.1f} points (paired 95 % interval "
                  f"{100 * overall.interval[0]:+.1f} to {100 * overall.interval[1]:+.1f}, a bootstrap over the "
                  f"{overall.clusters} question ids, {overall.resamples} resamples, seed {overall.seed}); "
                  f"{overall.improved} pairs wrong → correct, {overall.worsened} correct → wrong; "
                  f"{mcnemar}."]  # fmt: skip
    lines += ["", "![difference by type](baseline_difference.png)", "", "### Questions that flipped", ""]
    flipped = [
        (r.id, r.variant, r.repeat, bool(r.correct))
        for r, b in zip(records, base, strict=True)
        if bool(b.correct) != bool(r.correct)
    ]
    if flipped:
        lines += _table(["id", "variant", "repeat", "change"], [
            [i, v, str(k), "wrong → correct" if now else "correct → wrong"] for i, v, k, now in flipped
        ])  # fmt: skip
    else:
        lines.append("None.")
    lines.append("")
    return lines


def draw(directory: Path, records: Sequence[ResultRecord], summary: RunSummary, baseline: Comparison | None) -> None:
    for key, title in (("category", "Accuracy by category"), ("type", "Accuracy by question type")):
        plots.accuracy_bars(
            directory / f"accuracy_by_{key}.png", title, _groups(records, key), intervals_of=_intervals(records, key)
        )
    grading = summary.grading
    abstention = {
        "precision": (int(grading["correct_abstentions"]), int(grading["abstentions"])),
        "recall": (int(grading["correct_abstentions"]), int(grading["unanswerable"])),
    }
    plots.accuracy_bars(directory / "abstention.png", "Abstention on unanswerable questions", abstention, "share")
    recalls = [(r.evidence_recall, bool(r.correct)) for r in records if r.evidence_recall is not None and r.answerable]
    plots.evidence_vs_correct(directory / "evidence_recall.png", recalls)
    plots.distributions(
        directory / "distributions.png",
        {
            "time (s)": _numbers(records, lambda r: r.time_s),
            "tokens (in + out)": _numbers(records, _all_tokens),
            "tool calls": _numbers(records, lambda r: r.tool_calls),
        },
    )
    if baseline is not None:
        rows = {
            qtype: (found.difference, found.interval[0], found.interval[1])
            for qtype, found in _by_type(baseline).items()
        }
        plots.difference_bars(directory / "baseline_difference.png", rows)


def markdown_to_html(markdown: str, directory: Path) -> str:
    """A small converter for the markdown written above (headings, lists, tables, images); images are embedded
    as data URIs and link to the PNG files beside the page."""
    body: list[str] = []
    table: list[list[str]] = []

    def flush() -> None:
        if table:
            head, rows = table[0], table[2:]
            body.append("<table><tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in head) + "</tr>")
            body.extend(["<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows])
            body.append("</table>")
            table.clear()

    for line in markdown.splitlines():
        if line.startswith("|"):
            table.append([cell.strip() for cell in line.strip("|").split("|")])
            continue
        flush()
        if line.startswith("#"):
            level = len(line) - len(line.lstrip("#"))
            body.append(f"<h{level}>{html.escape(line[level:].strip())}</h{level}>")
        elif line.startswith("!["):
            alt, _, rest = line[2:].partition("](")
            name = rest.rstrip(")")
            data = base64.b64encode((directory / name).read_bytes()).decode("ascii")
            body.append(
                f'<p><a href="{html.escape(name)}"><img alt="{html.escape(alt)}" '
                f'src="data:image/png;base64,{data}"></a></p>'
            )
        elif line.startswith("- "):
            body.append(f"<ul><li>{html.escape(line[2:])}</li></ul>")
        elif line.strip():
            body.append(f"<p>{html.escape(line)}</p>")
    flush()
    style = (
        "body{font-family:sans-serif;max-width:60em;margin:2em auto;padding:0 1em}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}"
        "img{max-width:100%}ul{margin:0}"
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>sgfs evaluation report</title>'
        f"<style>{style}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n"
    )


def write_report(
    directory: Path,
    records: Sequence[ResultRecord],
    summary: RunSummary,
    runs: Sequence[RunInfo],
    baseline: Comparison | None,
) -> None:
    """Writes report.md, report.html and the PNG plots into ``directory``."""
    if not records:
        raise SgfsError("no results to report")
    try:
        directory.mkdir(parents=True, exist_ok=True)
        markdown = build_markdown(records, summary, runs, baseline)
        draw(directory, records, summary, baseline)
        (directory / "report.md").write_text(markdown, encoding="utf-8")
        (directory / "report.html").write_text(markdown_to_html(markdown, directory), encoding="utf-8")
    except OSError as exc:
        raise SgfsError(f"cannot write the report in {directory}: {exc.strerror or exc}", exit_code=1) from None
