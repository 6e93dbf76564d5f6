"""Running the agent on each item: one process group (and session) per question, timeouts, statuses, grading."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

from qa.grading import grade
from qa.records import AskedQuestion
from qa.result_record import EvalDetails, ResultRecord
from sgfs.eval.protocol import command_line, prompt, read_answer
from sgfs.mount.audit import AuditReader, evidence_fields

STDERR_TAIL = 2000
KILL_GRACE_S = 2.0


@dataclass(frozen=True)
class RunSettings:
    agent: str
    mount: str
    timeout_s: float
    workdir: Path  # private scratch space outside the mount: prompt and answer files
    audit: AuditReader | None


class Interrupted(Exception):
    """SIGTERM during a run: handled like Ctrl-C (agents killed, mount removed)."""


class Runner:
    """Runs items, possibly in parallel; remembers the live process groups so an interrupt can kill them."""

    def __init__(self, settings: RunSettings) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        self._groups: set[int] = set()

    def kill_all(self) -> None:
        with self._lock:
            groups = sorted(self._groups)
        for group in groups:
            _signal_group(group, signal.SIGKILL)

    def run(self, items: list[AskedQuestion], jobs: int, on_record: Callable[[ResultRecord], None]) -> None:
        """Run every item; ``on_record`` is called in this thread as each finishes."""
        if jobs <= 1:
            for item in items:
                on_record(self.run_item(item))
            return
        pending = iter(items)
        with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="agent") as pool:
            running: set[Future[ResultRecord]] = set()
            try:
                for item in pending:
                    running.add(pool.submit(self.run_item, item))
                    if len(running) >= jobs:
                        done, running = _wait_some(running)
                        for future in done:
                            on_record(future.result())
                while running:
                    done, running = _wait_some(running)
                    for future in done:
                        on_record(future.result())
            except BaseException:
                self.kill_all()
                for future in running:
                    future.cancel()
                raise

    def run_item(self, item: AskedQuestion) -> ResultRecord:
        settings = self.settings
        scratch = settings.workdir / f"q{threading.get_ident()}-{time.monotonic_ns()}"
        scratch.mkdir()
        prompt_file = scratch / "prompt.txt"
        answer_file = scratch / "answer"
        text = prompt(item.text())
        prompt_file.write_text(text, encoding="utf-8")
        repo = os.path.join(settings.mount, str(item.seed))
        values = {
            "prompt_file": str(prompt_file),
            "repo": repo,
            "question_id": item.id,
            "answer_file": str(answer_file),
        }
        env = dict(os.environ)
        env.update(
            SGFS_REPO=repo,
            SGFS_PROMPT_FILE=str(prompt_file),
            SGFS_QUESTION_ID=item.id,
            SGFS_ANSWER_FILE=str(answer_file),
        )
        start = time.monotonic()
        stdout, stderr, exit_code, timed_out, session = _execute(
            command_line(settings.agent, values), repo, env, text, settings.timeout_s, self._lock, self._groups
        )
        elapsed = time.monotonic() - start
        answer = read_answer(str(answer_file), stdout)
        shutil.rmtree(scratch, ignore_errors=True)  # with whatever else the agent left there

        if timed_out:
            status = "timeout"
        elif exit_code != 0:
            status = "crash"
        elif answer.empty:
            status = "no_answer"
        else:
            status = "ok"
        verdict = grade(item.graded, answer.value) if not answer.empty else None
        access = None
        if settings.audit is not None and session is not None:
            access = settings.audit.take(session)
        question = item.question
        audit = evidence_fields(access, question.seed, question.evidence)
        counted = verdict if status == "ok" else None  # only an answer given in time by a clean exit counts
        return ResultRecord.of(
            question,
            item.variant,
            answer=verdict.parsed.strip() if verdict else None,
            correct=counted is not None and counted.correct,
            abstained=counted is not None and counted.abstained,
            status=status,
            time_s=round(elapsed, 4),
            usage=answer.usage,
            tool_calls=answer.tool_calls,
            files_read=audit["files_read"],
            details=EvalDetails(
                extracted=verdict.extracted if verdict else None,
                exit_code=exit_code,
                stderr_tail=stderr[-STDERR_TAIL:],
                evidence_files=len(question.evidence),
                bytes_read=audit["bytes_read"],
                dirs_listed=audit["dirs_listed"],
                reads_outside=audit["reads_outside"],
            ),
        )


def _wait_some(running: set[Future[ResultRecord]]) -> tuple[set[Future[ResultRecord]], set[Future[ResultRecord]]]:
    # A bounded wait keeps the main thread responsive to signals.
    while True:
        done, left = wait(running, timeout=0.5, return_when=FIRST_COMPLETED)
        if done:
            return done, left


def _signal_group(group: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, sig)


def _execute(
    command: str, cwd: str, env: dict[str, str], stdin: str, timeout_s: float, lock: threading.Lock, groups: set[int]
) -> tuple[str, str, int | None, bool, int | None]:
    """Run ``command`` with ``sh -c`` in a new session; (stdout, stderr, exit code, timed out, session id)."""
    try:
        proc = subprocess.Popen(
            ["/bin/sh", "-c", command],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its own session and process group: attribution and clean kills
        )
    except OSError as exc:
        return "", f"cannot start the agent in {cwd}: {exc.strerror or exc}", None, False, None
    with lock:
        groups.add(proc.pid)
    timed_out = False
    try:
        try:
            out, err = proc.communicate(stdin.encode("utf-8"), timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            _signal_group(proc.pid, signal.SIGTERM)
            try:
                out, err = proc.communicate(timeout=KILL_GRACE_S)
            except subprocess.TimeoutExpired:
                _signal_group(proc.pid, signal.SIGKILL)
                out, err = proc.communicate()
    finally:
        # Whatever the agent left running in its group goes with it: nothing reads the mount on its behalf later.
        _signal_group(proc.pid, signal.SIGKILL)
        with lock:
            groups.discard(proc.pid)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return (
        out.decode("utf-8", "replace"),
        err.decode("utf-8", "replace"),
        proc.returncode,
        timed_out,
        proc.pid,
    )
