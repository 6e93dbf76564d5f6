"""The CI gate: minimum accuracy, and maximum drop against a baseline run."""

from __future__ import annotations

from typing import Any


def check_gate(
    summary: dict[str, Any], min_accuracy: float | None, baseline: dict[str, Any] | None, max_drop: float | None
) -> str | None:
    """The one-line reason the run fails the gate, or None when it passes (or no gate was asked for)."""
    accuracy = summary.get("accuracy")
    if min_accuracy is not None and (accuracy is None or accuracy < min_accuracy):
        return f"gate failed: accuracy {_fmt(accuracy)} is below --min-accuracy {min_accuracy:g}"
    if baseline is not None and max_drop is not None:
        before = baseline.get("accuracy")
        if before is not None and (accuracy is None or before - accuracy > max_drop + 1e-12):
            return (
                f"gate failed: accuracy dropped from {_fmt(before)} (baseline) to {_fmt(accuracy)}, "
                f"more than --max-drop {max_drop:g}"
            )
    return None


def _fmt(value: float | None) -> str:
    return "none" if value is None else f"{value:.4f}"
