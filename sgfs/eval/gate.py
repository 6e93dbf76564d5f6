"""The CI gate: minimum accuracy, and maximum drop against a baseline run."""

from __future__ import annotations

from dataclasses import dataclass

from sgfs.eval.summary import RunSummary


@dataclass(frozen=True)
class Gate:
    """``--min-accuracy`` and ``--max-drop`` (the latter against a baseline run)."""

    min_accuracy: float | None = None
    max_drop: float | None = None


def check_gate(summary: RunSummary, gate: Gate, baseline: RunSummary | None) -> str | None:
    """The one-line reason the run fails the gate, or None when it passes (or no gate was asked for)."""
    accuracy = summary.accuracy
    min_accuracy, max_drop = gate.min_accuracy, gate.max_drop
    if min_accuracy is not None and (accuracy is None or accuracy < min_accuracy):
        return f"gate failed: accuracy {_fmt(accuracy)} is below --min-accuracy {min_accuracy:g}"
    if baseline is not None and max_drop is not None:
        before = baseline.accuracy
        if before is not None and (accuracy is None or before - accuracy > max_drop + 1e-12):
            return (
                f"gate failed: accuracy dropped from {_fmt(before)} (baseline) to {_fmt(accuracy)}, "
                f"more than --max-drop {max_drop:g}"
            )
    return None


def _fmt(value: float | None) -> str:
    return "none" if value is None else f"{value:.4f}"
