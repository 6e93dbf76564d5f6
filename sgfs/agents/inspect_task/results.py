"""An Inspect eval log as the per-question result records of ``sgfs eval`` (one format for ``sgfs report``).

Each sample becomes a :class:`~qa.result_record.ResultRecord` built like those of ``sgfs eval``, with the keys of
``RECORD_KEYS``: id, seed, type, category, answer_kind, variant, answerable, answer, correct, abstained, status
(ok | timeout | crash | no_answer), time_s, usage {input_tokens, output_tokens}, tool_calls, files_read,
evidence_read, evidence_recall; a sample of an ambiguous run also its ``condition``, ``pair``, ``asked``,
``ask_text``, ``ask_reply`` (the exchange its ``ask_clarification`` tool kept in the sample's store) and
``wrong_target``, as ``sgfs eval --ambiguous`` records them.

Files read are those of successful read_text_file / read_binary_file calls and those the code of
run_python_code opened (Python's "open" audit events, kept in the sample's store). What a bash
command read is unknown: when a sample ran bash, the three file fields are null.
"""

from __future__ import annotations

import json
from pathlib import PurePosixPath
from typing import Any

from inspect_ai.log import EvalLog, EvalSample, read_eval_log
from inspect_ai.model import ChatMessageAssistant, ChatMessageTool

from qa.grading import TEMPLATE, extract_answer
from qa.records import QuestionRecord
from qa.result_record import ResultRecord
from sgfs.agents.inspect_task.tools import ASK_KEY, PYTHON_FILES_KEY, exchange_of

FILE_TOOLS = ("read_text_file", "read_binary_file")
PYTHON_TOOL = "run_python_code"
UNAUDITED_TOOLS = ("bash",)
TIMEOUT_LIMITS = ("time", "working")


def records_from_log(log: str | EvalLog) -> list[ResultRecord]:
    """One record per sample of the log (a path or a log already read), in the log's order."""
    eval_log = read_eval_log(log) if isinstance(log, str) else log
    return [sample_record(sample) for sample in eval_log.samples or []]


def _repository_path(path: str, seed: int) -> str | None:
    """A tool path (``118/a/b.csv``) as a path inside repository ``seed``, or None when it is elsewhere."""
    parts = [p for p in PurePosixPath("/" + path).parts[1:] if p != "."]
    if len(parts) < 2 or parts[0] != str(seed) or ".." in parts:
        return None
    return "/".join(parts[1:])


def _tool_calls(sample: EvalSample) -> list[tuple[str, dict[str, Any], bool]]:
    """(function, arguments, succeeded) for every tool call the model made."""
    failed = {m.tool_call_id for m in sample.messages if isinstance(m, ChatMessageTool) and m.error is not None}
    calls: list[tuple[str, dict[str, Any], bool]] = []
    for message in sample.messages:
        if isinstance(message, ChatMessageAssistant):
            calls += [(c.function, dict(c.arguments), c.id not in failed) for c in message.tool_calls or []]
    return calls


def _status(sample: EvalSample, completion: str) -> str:
    if sample.error is not None:
        return "crash"
    if sample.limit is not None and sample.limit.type in TIMEOUT_LIMITS:
        return "timeout"
    return "ok" if completion.strip() else "no_answer"


def sample_record(sample: EvalSample) -> ResultRecord:
    """The record of one sample; its question is the record the dataset put in the sample's metadata (a
    ``QuestionsError`` when it is not there)."""
    metadata = sample.metadata or {}
    record = QuestionRecord.from_line(json.dumps(metadata.get("record")), f"sample {sample.id}")
    question = record.question
    score = next(iter((sample.scores or {}).values()), None)
    score_meta = (score.metadata or {}) if score is not None else {}
    completion = sample.output.completion if sample.output is not None else ""

    calls = _tool_calls(sample)
    files_read: list[str] | None = None
    names = {name for name, _, _ in calls}
    python_files = (sample.store or {}).get(PYTHON_FILES_KEY)
    if not names & set(UNAUDITED_TOOLS) and (PYTHON_TOOL not in names or python_files is not None):
        read = {
            _repository_path(str(arguments.get("path", "")), question.seed)
            for name, arguments, succeeded in calls
            if name in FILE_TOOLS and succeeded
        }
        files_read = sorted({path for path in read if path is not None} | set(python_files or []))

    usage = {"input_tokens": 0, "output_tokens": 0}
    for model_usage in (sample.model_usage or {}).values():
        usage["input_tokens"] += model_usage.input_tokens
        usage["output_tokens"] += model_usage.output_tokens

    status = _status(sample, completion)
    condition = metadata.get("condition")
    return ResultRecord.of(
        question,
        str(metadata.get("variant", TEMPLATE)),
        answer=score.answer if score is not None else None,
        correct=score_meta.get("correct") if score is not None else None,
        abstained=score_meta.get("abstained") if score is not None else None,
        status=status,
        time_s=sample.total_time,
        usage=usage,
        tool_calls=len(calls),
        files_read=files_read,
        graded=record.graded,  # the floor agents' grades, as sgfs eval records them
        condition=None if condition is None else str(condition),
        exchange=exchange_of((sample.store or {}).get(ASK_KEY)),
        # as sgfs eval: only an answer given (status ok) is checked for another reading
        graded_answer=extract_answer(completion) if status == "ok" else None,
    )
