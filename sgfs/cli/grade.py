"""``sgfs grade --questions FILE --answers FILE``: grade answers against the question record."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from qa.grading import GradingInputError, grade_answers, parse_answers, parse_questions
from qa.metrics import summarize
from sgfs.cli.options import examples
from sgfs.errors import SgfsError

_SHOWN_IDS = 5


def _read_lines(path: str, what: str) -> list[str]:
    """The lines of a UTF-8 file (``-``: standard input), split on newlines only (JSON strings may hold
    other line separators such as U+2028), a leading byte-order mark and trailing CRs removed."""
    try:
        if path == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(path, "rb") as handle:
                data = handle.read()
    except OSError as exc:
        raise SgfsError(f"cannot read {what} file {path}: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise SgfsError(f"{path}:{line}: not valid UTF-8") from None
    text = text.removeprefix("\ufeff")
    return [line.removesuffix("\r") for line in text.split("\n")]


def _warn(message: str, ids: list[str]) -> None:
    """One warning line: the message (with its counts) and the first few ids."""
    shown = ", ".join(ids[:_SHOWN_IDS]) + (f", ... ({len(ids) - _SHOWN_IDS} more)" if len(ids) > _SHOWN_IDS else "")
    click.echo(f"sgfs: warning: {message}: {shown}", err=True)


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _table(title: str, rows: dict[str, dict[str, Any]]) -> list[str]:
    width = max([len(title), *(len(name) for name in rows)])
    lines = [f"{title:<{width}}  {'n':>6}  {'correct':>7}  {'accuracy':>8}"]
    for name, row in rows.items():
        lines.append(f"{name:<{width}}  {row['n']:>6}  {row['correct']:>7}  {_percent(row['accuracy']):>8}")
    return lines


def render_summary(summary: dict[str, Any]) -> str:
    """The readable report: overall accuracy, the breakdowns, abstention and agreement figures."""
    overall = {"all": {k: summary[k] for k in ("n", "correct", "accuracy")}}
    lines = [
        f"graded {summary['n']} answers to {summary['questions']} questions "
        f"(variants: {', '.join(summary['variants'])})",
        "",
        *_table("overall", overall),
        "",
        *_table("category", summary["by_category"]),
        "",
        *_table("type", summary["by_type"]),
        "",
        *_table("answerable", summary["by_answerable"]),
    ]
    if len(summary["variants"]) > 1:
        lines += ["", *_table("variant", summary["by_variant"])]
    lines += [
        "",
        f"abstentions: {summary['abstentions']} ({summary['correct_abstentions']} on the "
        f"{summary['unanswerable']} unanswerable items)",
        f"abstention precision: {_number(summary['abstention_precision'])}",
        f"abstention recall:    {_number(summary['abstention_recall'])}",
    ]
    if "krippendorff_alpha" in summary:
        by_variant = ", ".join(
            f"{variant} {_number(alpha)}" for variant, alpha in summary["krippendorff_alpha_by_variant"].items()
        )
        lines.append(
            f"Krippendorff's alpha (template vs paraphrase, {summary['krippendorff_units']} pairs): "
            f"{_number(summary['krippendorff_alpha'])}" + (f" ({by_variant})" if by_variant else "")
        )
    lines.append(
        f"missing: {summary['missing_items']}, unknown: {len(summary['unknown'])}, "
        f"duplicates: {len(summary['duplicates'])}"
    )
    return "\n".join(lines) + "\n"


@click.command(
    "grade",
    help="Grade answers against questions written by `sgfs qa`.\n\n"
    "The questions FILE holds one question record per line; the answers FILE one "
    '{"id": ..., "response": "..."} or {"id": ..., "answer": ...} per line, with an optional "variant" '
    '("template", "paraphrase_1" .. "paraphrase_3"). Prints a summary table, or the summary as JSON with '
    "--json. Rules and metrics: docs/grading.md.\n\n"
    + examples(
        "sgfs grade --questions questions.jsonl --answers answers.jsonl",
        "my-agent | sgfs grade --questions questions.jsonl --answers - --json",
        "sgfs grade --questions questions.jsonl --answers answers.jsonl --out graded.jsonl",
    ),
)
@click.option("--questions", "questions_path", required=True, metavar="FILE", help="Questions (JSONL).")
@click.option("--answers", "answers_path", required=True, metavar="FILE", help="Answers (JSONL); - for stdin.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("--out", "out_path", metavar="FILE", help="Write the per-question results to FILE (JSONL).")
def grade_command(questions_path: str, answers_path: str, as_json: bool, out_path: str | None) -> None:
    if questions_path == "-":
        raise SgfsError("--questions must name a file (only --answers may be -)")
    try:
        questions = parse_questions(_read_lines(questions_path, "questions"), questions_path)
        answers = parse_answers(_read_lines(answers_path, "answers"), answers_path)
    except GradingInputError as exc:
        raise SgfsError(str(exc)) from None
    if not questions:
        raise SgfsError(f"no questions in {questions_path}")

    run = grade_answers(questions, answers)
    summary = summarize(run)
    if run.missing:
        _warn(
            f"missing: {_plural(summary['missing_items'], 'answer')} (counted as wrong) to "
            f"{_plural(len(run.missing), 'question')}",
            run.missing,
        )
    if run.duplicates:
        _warn(
            f"duplicates: {_plural(len(run.duplicates), 'id')} answered more than once for the same "
            "variant (the first answer is graded)",
            run.duplicates,
        )
    if run.unknown:
        _warn(f"unknown: {_plural(len(run.unknown), 'answer id')} not among the questions (not graded)", run.unknown)

    if out_path is not None:
        try:
            with open(out_path, "w", encoding="utf-8") as handle:
                for item in run.items:
                    handle.write(json.dumps(item.to_dict(), ensure_ascii=False) + "\n")
        except OSError as exc:
            raise SgfsError(f"cannot write {out_path}: {exc.strerror or exc}", exit_code=1) from None

    if as_json:
        sys.stdout.write(json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(render_summary(summary))
