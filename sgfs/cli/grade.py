"""``sgfs grade --questions FILE --answers FILE``: grade answers against the question record."""

from __future__ import annotations

import contextlib
import json
import os
import stat
import sys
import tempfile
from collections.abc import Iterable
from typing import Any

import click

from qa.grading import GradingInputError, ItemResult, grade_answers, parse_questions, read_answers
from qa.metrics import summarize
from sgfs.cli.options import examples
from sgfs.errors import SgfsError

_SHOWN_IDS = 5
_SHOWN_LINE_ERRORS = 20


def _safe(text: str) -> str:
    """``text`` writable as UTF-8: a lone surrogate (a JSON string may hold one) becomes its escape ``\\ud800``,
    which inside a JSON string is the same JSON."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _fits(text: str, stream: Any) -> bool:
    """Whether ``stream`` can encode ``text`` (a terminal or pipe may not be UTF-8)."""
    try:
        text.encode(getattr(stream, "encoding", None) or "utf-8")
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def _warning(line: str) -> None:
    """One line on stderr, in what its encoding can write (other characters as backslash escapes)."""
    text = _safe(line)
    if not _fits(text, sys.stderr):
        text = text.encode("ascii", "backslashreplace").decode("ascii")
    click.echo(text, err=True)


def _write_stdout(text: str, ascii_text: str) -> None:
    """``text`` on stdout, or ``ascii_text`` (the same, escaped) where stdout cannot encode it."""
    text = _safe(text)
    sys.stdout.write(text if _fits(text, sys.stdout) else ascii_text)


def _read_bytes(path: str, what: str) -> bytes:
    try:
        if path == "-":
            return sys.stdin.buffer.read()
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise SgfsError(f"cannot read {what} file {_safe(path)}: {exc.strerror or exc}") from None


def _split_lines(data: bytes) -> list[bytes]:
    """Lines split on newlines only (JSON strings may hold other line separators such as U+2028), a leading
    byte-order mark and trailing CRs removed."""
    return [line.removesuffix(b"\r") for line in data.removeprefix(b"\xef\xbb\xbf").split(b"\n")]


def _read_lines(path: str, what: str) -> list[str]:
    """The lines of a UTF-8 file (``-``: standard input); a line that is not UTF-8 is an error for the file."""
    data = _read_bytes(path, what)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise SgfsError(f"{_safe(path)}:{line}: not valid UTF-8") from None
    text = text.removeprefix("\ufeff")
    return [line.removesuffix("\r") for line in text.split("\n")]


def _warn(message: str, ids: list[str]) -> None:
    """One warning line: the message (with its counts) and the first few ids."""
    shown = ", ".join(ids[:_SHOWN_IDS]) + (f", ... ({len(ids) - _SHOWN_IDS} more)" if len(ids) > _SHOWN_IDS else "")
    _warning(f"sgfs: warning: {message}: {shown}")


def _warn_lines(errors: list[str]) -> None:
    """One warning line per answers-file line that could not be read (the first few, then their count)."""
    for error in errors[:_SHOWN_LINE_ERRORS]:
        _warning(f"sgfs: warning: {error} (line not graded)")
    if len(errors) > _SHOWN_LINE_ERRORS:
        more = len(errors) - _SHOWN_LINE_ERRORS
        _warning(f"sgfs: warning: {_plural(more, 'more invalid line')} not shown (all are in --json)")


def _json_line(obj: dict[str, Any]) -> bytes:
    return _safe(json.dumps(obj, ensure_ascii=False) + "\n").encode("utf-8")


def write_results(path: str, items: Iterable[ItemResult]) -> None:
    """Write one JSON line per item to ``path`` atomically: into a temporary file beside it, renamed over ``path``
    once complete, so that a failure leaves no partial file. A path that is not a regular file (``/dev/stdout``, a
    pipe) is written directly. Raises OSError."""
    try:
        special = not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        special = False
    if special:
        with open(path, "wb") as handle:
            for item in items:
                handle.write(_json_line(item.to_dict()))
        return
    directory = os.path.dirname(os.path.abspath(path))
    descriptor, temporary = tempfile.mkstemp(prefix=".sgfs-grade-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            for item in items:
                handle.write(_json_line(item.to_dict()))
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(temporary, 0o666 & ~mask)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


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
    answered = summary["n"] - summary["missing_items"]
    lines = [
        f"graded {_plural(answered, 'answer')} to {_plural(summary['questions'], 'question')} "
        f"({_plural(summary['n'], 'item')}; variants: {', '.join(summary['variants'])})",
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
        f"duplicates: {len(summary['duplicates'])}, invalid lines: {len(summary.get('invalid', []))}"
    )
    return _safe("\n".join(lines) + "\n")


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
    except GradingInputError as exc:
        raise SgfsError(_safe(str(exc))) from None
    if not questions:
        raise SgfsError(f"no questions in {_safe(questions_path)}")
    read = read_answers(_split_lines(_read_bytes(answers_path, "answers")), answers_path)
    _warn_lines(read.errors)
    if read.errors and not read.answers:
        raise SgfsError(
            f"no answer could be read from {_safe(answers_path)} ({_plural(len(read.errors), 'invalid line')})"
        )

    run = grade_answers(questions, read.answers)
    summary = summarize(run)
    summary["answers"] = summary["n"] - summary["missing_items"]
    summary["invalid"] = read.errors
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
            write_results(out_path, run.items)
        except OSError as exc:
            raise SgfsError(f"cannot write {_safe(out_path)}: {exc.strerror or exc}", exit_code=1) from None

    if as_json:
        _write_stdout(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", json.dumps(summary, indent=2) + "\n")
    else:
        table = render_summary(summary)
        _write_stdout(table, table.encode("ascii", "backslashreplace").decode("ascii"))
