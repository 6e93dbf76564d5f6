"""The report's PNG plots (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sgfs.eval.stats import wilson


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def accuracy_bars(
    path: Path,
    title: str,
    groups: dict[str, tuple[int, int]],
    measure: str = "accuracy",
    intervals_of: dict[str, tuple[float, float] | None] | None = None,
) -> None:
    """Horizontal bars of a proportion per group with 95 % intervals; ``groups``: name -> (successes, n);
    ``intervals_of``: name -> interval (clustered by question), else Wilson intervals of the counts."""
    plt = _pyplot()
    names = list(groups)
    values = [groups[k][0] / groups[k][1] if groups[k][1] else 0.0 for k in names]
    if intervals_of is None:
        intervals = [wilson(*groups[k]) or (0.0, 0.0) for k in names]
    else:
        intervals = [intervals_of.get(k) or (0.0, 0.0) for k in names]
    low = [max(0.0, v - i[0]) for v, i in zip(values, intervals, strict=True)]
    high = [max(0.0, i[1] - v) for v, i in zip(values, intervals, strict=True)]
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(names) + 1.2))
    ax.barh(range(len(names)), values, xerr=[low, high], color="#4c78a8", capsize=3)
    ax.set_yticks(range(len(names)), [f"{k} (n={groups[k][1]})" for k in names])
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    kind = "Wilson" if intervals_of is None else "clustered by question"
    ax.set_xlabel(f"{measure} (95 % interval, {kind})")
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def evidence_vs_correct(path: Path, shown: list[tuple[float, bool]]) -> None:
    """Evidence recall of correct and wrong answers as histograms; ``shown``: (evidence recall, correct) of each
    answerable question with evidence, in an audited run."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 3.2))
    for correct, colour in ((True, "#54a24b"), (False, "#e45756")):
        values = [recall for recall, right in shown if right == correct]
        if values:
            label = f"{'correct' if correct else 'wrong'} (n={len(values)})"
            ax.hist(values, bins=[i / 10 for i in range(11)], alpha=0.6, color=colour, label=label)
    if not shown:
        ax.text(0.5, 0.5, "not recorded (run without the audit)", ha="center", va="center", transform=ax.transAxes)
    else:
        ax.legend()
    ax.set_xlabel("evidence recall (evidence files read / evidence files)")
    ax.set_ylabel("questions")
    ax.set_title("Evidence recall against correctness")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def distributions(path: Path, series: dict[str, list[float]]) -> None:
    """One histogram per series (time, tokens, tool calls); an empty series says it was not recorded."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(series), figsize=(4 * len(series), 3))
    for ax, (name, values) in zip(axes, series.items(), strict=True):
        if values:
            ax.hist(values, bins=20, color="#72b7b2")
        else:
            ax.text(0.5, 0.5, "not recorded", ha="center", va="center", transform=ax.transAxes)
        ax.set_title(name)
        ax.set_ylabel("questions")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def difference_bars(path: Path, rows: dict[str, tuple[float, float, float]]) -> None:
    """Per-type accuracy difference against the baseline with paired bootstrap 95 % intervals."""
    plt = _pyplot()
    names = list(rows)
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(names) + 1.2))
    values = [rows[k][0] for k in names]
    low = [rows[k][0] - rows[k][1] for k in names]
    high = [rows[k][2] - rows[k][0] for k in names]
    colours = ["#54a24b" if v >= 0 else "#e45756" for v in values]
    ax.barh(range(len(names)), values, xerr=[low, high], color=colours, capsize=3)
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_yticks(range(len(names)), names)
    ax.invert_yaxis()
    ax.set_xlim(-1, 1)
    ax.set_xlabel("accuracy difference, run - baseline (95 % paired bootstrap interval)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
