"""`report.md` and a self-contained `report.html` (plots embedded, and written beside it as PNG files)."""

from __future__ import annotations

import base64
import html
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from qa.result_record import ResultRecord
from sgfs.errors import SgfsError
from sgfs.eval import plots
from sgfs.eval.results import RunInfo
from sgfs.eval.stats import newcombe, wilson
from sgfs.eval.summary import RunSummary

if TYPE_CHECKING:
    from sgfs.eval.finish import Comparison

GROUPS: dict[str, Callable[[ResultRecord], str]] = {
    "category": lambda record: record.category,
    "type": lambda record: record.type,
}


def _groups(records: Sequence[ResultRecord], key: str) -> dict[str, tuple[int, int]]:
    out: dict[str, list[int]] = {}
    for record in records:
        counts = out.setdefault(GROUPS[key](record), [0, 0])
        counts[0] += bool(record.correct)
        counts[1] += 1
    return {name: (out[name][0], out[name][1]) for name in sorted(out)}


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f} %"


def _interval(correct: int, n: int) -> str:
    bounds = wilson(correct, n)
    return "-" if bounds is None else f"{100 * bounds[0]:.1f}–{100 * bounds[1]:.1f} %"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _accuracy_rows(groups: dict[str, tuple[int, int]]) -> list[list[str]]:
    return [[name, str(n), str(c), _pct(c / n if n else None), _interval(c, n)] for name, (c, n) in groups.items()]


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


def build_markdown(
    records: Sequence[ResultRecord],
    summary: RunSummary,
    runs: Sequence[RunInfo],
    baseline: Comparison | None,
) -> str:
    """The report as markdown; the plots it shows are drawn by ``draw``."""
    agents = sorted({run.agent for run in runs if run.agent is not None})
    lines = ["# sgfs evaluation report", ""]
    lines += [f"- runs: {', '.join(run.dir for run in runs)}", f"- agent: {', '.join(agents) or '-'}"]
    versions = sorted({run.sgfs_version for run in runs if run.sgfs_version})
    lines += [f"- sgfs version: {', '.join(versions) or '-'}", f"- graded items: {summary.n}", ""]
    lines += ["## Accuracy", ""]
    grading = summary.grading
    overall = (summary.correct, summary.n)
    lines += _table(["", "n", "correct", "accuracy", "95 % interval"], _accuracy_rows({"all": overall}))
    for title, key in (("category", "category"), ("type", "type")):
        rows = _accuracy_rows(_groups(records, key))
        lines += ["", f"### By {title}", "", *_table([title, "n", "correct", "accuracy", "95 % interval"], rows)]
        lines += ["", f"![accuracy by {title}](accuracy_by_{key}.png)"]
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
    if baseline is not None:
        lines += _baseline_section(baseline)
    return "\n".join(lines) + "\n"


def _baseline_section(baseline: Comparison) -> list[str]:
    records, base = baseline.mine, baseline.theirs
    lines = [f"## Against the baseline ({baseline.name})", "", f"Compared on the {len(records)} items both runs "
             f"hold ({baseline.run_total} in this run, {baseline.baseline_total} in the baseline); the rest is "
             "not compared.", ""]  # fmt: skip
    mine, theirs = _groups(records, "type"), _groups(base, "type")
    rows = []
    for qtype in sorted(set(mine) | set(theirs)):
        a, b = mine.get(qtype, (0, 0)), theirs.get(qtype, (0, 0))
        diff = newcombe(a[0], a[1], b[0], b[1])
        shown = "-" if diff is None else f"{100 * diff[0]:+.1f} pts ({100 * diff[1]:+.1f} to {100 * diff[2]:+.1f})"
        rows.append([qtype, _pct(a[0] / a[1] if a[1] else None), _pct(b[0] / b[1] if b[1] else None), shown])
    overall = newcombe(sum(v[0] for v in mine.values()), len(records), sum(v[0] for v in theirs.values()), len(base))
    lines += _table(["type", "run", "baseline", "difference (95 % interval)"], rows)
    if overall is not None:
        lines += ["", f"Overall: {100 * overall[0]:+.1f} points (95 % interval {100 * overall[1]:+.1f} to "
                  f"{100 * overall[2]:+.1f})."]  # fmt: skip
    lines += ["", "![difference by type](baseline_difference.png)", "", "### Questions that flipped", ""]
    before = {r.key: bool(r.correct) for r in base}
    flipped = [
        (r.id, r.variant, before[r.key], bool(r.correct))
        for r in records
        if r.key in before and before[r.key] != bool(r.correct)
    ]
    if flipped:
        lines += _table(["id", "variant", "change"], [
            [i, v, "wrong → correct" if now else "correct → wrong"] for i, v, _, now in flipped
        ])  # fmt: skip
    else:
        lines.append("None.")
    lines.append("")
    return lines


def draw(directory: Path, records: Sequence[ResultRecord], summary: RunSummary, baseline: Comparison | None) -> None:
    plots.accuracy_bars(directory / "accuracy_by_category.png", "Accuracy by category", _groups(records, "category"))
    plots.accuracy_bars(directory / "accuracy_by_type.png", "Accuracy by question type", _groups(records, "type"))
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
        mine, theirs = _groups(baseline.mine, "type"), _groups(baseline.theirs, "type")
        rows = {}
        for qtype in sorted(set(mine) & set(theirs)):
            diff = newcombe(*mine[qtype], *theirs[qtype])
            if diff is not None:
                rows[qtype] = diff
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
