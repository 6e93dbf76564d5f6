"""Running the agent on each item: one sandbox (or, unsealed, one session) per question, timeouts, statuses,
grading."""

from __future__ import annotations

import contextlib
import os
import secrets
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from qa.clarify import WITH_CHANNEL, Oracle
from qa.grading import grade
from qa.records import AskedQuestion
from qa.result_record import EvalDetails, ResultRecord
from sgfs.agents.sandbox import Layout, SandboxedProcess, SandboxPolicy, command_paths, start
from sgfs.errors import SgfsError
from sgfs.eval.channel import ASK_VARIABLE, Channel, ChannelError
from sgfs.eval.protocol import AgentAnswer, AnswerFileError, command_line, prompt, read_answer, reference_agent
from sgfs.mount.audit import Access, AuditReader, Origin, evidence_fields

STDERR_TAIL = 2000
KILL_GRACE_S = 2.0
STDOUT_LIMIT = 1 << 20  # the end of stdout that is kept (the answer is its last {"answer": ...})
STDERR_LIMIT = 16 * STDERR_TAIL
# Every process an agent starts inherits this variable: how its leftovers are found, whatever sessions they made.
TOKEN_VARIABLE = "SGFS_AGENT_RUN"
REAP_ROUNDS = 20


@dataclass(frozen=True)
class RunSettings:
    agent: str
    mount: str
    timeout_s: float
    workdir: Path  # private scratch space outside the mount: prompt and answer files
    audit: AuditReader | None
    sandbox: SandboxPolicy | None = None  # None: --no-sandbox (unsealed)


@dataclass(frozen=True)
class RunItem:
    """One unit of a run: a (question, variant) asked for the ``repeat``-th time (1..K with ``--repeats K``), in
    a condition of ``--ambiguous`` (``qa.clarify.CONDITIONS``; None without it)."""

    asked: AskedQuestion
    repeat: int = 1
    condition: str | None = None

    @property
    def unit(self) -> tuple[str, str, int, str | None]:
        """(question id, variant, repeat, condition), as ``ResultRecord.unit``."""
        return (self.asked.id, self.asked.variant, self.repeat, self.condition)

    @property
    def channel(self) -> bool:
        """Whether the agent may ask a clarifying question (``$SGFS_ASK``)."""
        return self.condition in WITH_CHANNEL


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

    def run(self, items: list[RunItem], jobs: int, on_record: Callable[[ResultRecord], None]) -> None:
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

    def run_item(self, unit: RunItem) -> ResultRecord:
        settings = self.settings
        item = unit.asked
        scratch = settings.workdir / f"q{threading.get_ident()}-{time.monotonic_ns()}"
        scratch.mkdir()
        prompt_file = scratch / "prompt.txt"
        answer_file = scratch / "answer"
        text = prompt(item.text(), unit.channel)
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
        env[TOKEN_VARIABLE] = secrets.token_hex(16)
        env.pop(ASK_VARIABLE, None)  # set below in the conditions with a channel only, whatever the caller's says
        command = command_line(settings.agent, values)
        argv = reference_agent(command)
        layout = None
        if argv is None:
            argv = ["/bin/sh", "-c", command]
            if settings.sandbox is not None:
                words = _words(command)
                layout = Layout(settings.sandbox, repo, str(scratch), command_paths(words), _home())
        # A fresh oracle for each (record, condition): the full twin's has nothing open.
        oracle = Oracle(item.question.ambiguity)
        start = time.monotonic()
        try:
            with contextlib.ExitStack() as channel:
                if unit.channel:
                    env[ASK_VARIABLE] = channel.enter_context(Channel(oracle, scratch)).command
                stdout, stderr, exit_code, timed_out, access = _execute(
                    argv, layout, repo, env, prompt_file, settings, self._lock, self._groups
                )
        except ChannelError as exc:  # before the agent started: the item is a crash that says why
            stdout, stderr, exit_code, timed_out, access = "", f"sgfs eval: {exc}", None, False, None
        elapsed = time.monotonic() - start
        refused = None
        try:
            answer = read_answer(str(answer_file), stdout)
        except AnswerFileError as exc:  # a FIFO, a link, a device: never read, the item is a crash
            refused = str(exc)
            answer = AgentAnswer(None, None, None, True)
            stderr = f"{stderr}\nsgfs eval: {refused}" if stderr else f"sgfs eval: {refused}"
        shutil.rmtree(scratch, ignore_errors=True)  # with whatever else the agent left there

        if timed_out:
            status = "timeout"
        elif exit_code != 0 or refused is not None:
            status = "crash"
        elif answer.empty:
            status = "no_answer"
        else:
            status = "ok"
        verdict = grade(item.graded, answer.value) if not answer.empty else None
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
            repeat=unit.repeat,
            graded=item.graded,
            condition=unit.condition,
            exchange=oracle.exchange,
            graded_answer=answer.value if counted is not None else None,
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


def _words(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


def _home() -> str:
    return os.environ.get("HOME") or "/root"


def _execute(
    argv: list[str],
    layout: Layout | None,
    cwd: str,
    env: dict[str, str],
    stdin_file: Path,
    settings: RunSettings,
    lock: threading.Lock,
    groups: set[int],
) -> tuple[str, str, int | None, bool, Access | None]:
    """Run ``argv`` in a new session, in the sandbox ``layout`` unless None; (stdout, stderr, exit code, timed
    out, what the audit saw it do: None when the run is not audited).

    Nothing here waits on the agent's pipes: stdin is the prompt file and stdout and stderr are unlinked files,
    so a detached descendant that keeps them open cannot hold the harness past ``--timeout``. When the agent
    exits or is killed, every process it started goes too: a sandbox's PID namespace dies with it; outside one,
    its group, its session, and whatever carries its token in its environment, whatever session it made."""
    token = env[TOKEN_VARIABLE]
    sandboxed: SandboxedProcess | None = None
    with contextlib.ExitStack() as stack:
        out_file = stack.enter_context(tempfile.TemporaryFile(dir=settings.workdir))
        err_file = stack.enter_context(tempfile.TemporaryFile(dir=settings.workdir))
        stdin = stack.enter_context(open(stdin_file, "rb"))
        try:
            if layout is not None:
                sandboxed = start(layout, argv, env=env, stdin=stdin, stdout=out_file, stderr=err_file)
                stack.callback(sandboxed.close)  # after the audit was taken (below): the namespace is held
                proc = sandboxed.process
            else:
                proc = subprocess.Popen(
                    argv,
                    cwd=cwd,
                    env=env,
                    stdin=stdin,
                    stdout=out_file,
                    stderr=err_file,
                    start_new_session=True,  # its own session and process group: attribution and clean kills
                )
        except SgfsError as exc:
            return "", f"cannot start the sandbox: {exc}", None, False, None
        except OSError as exc:
            return "", f"cannot start the agent in {cwd}: {exc.strerror or exc}", None, False, None
        with lock:
            groups.add(proc.pid)
        timed_out = False
        try:
            try:
                proc.wait(timeout=settings.timeout_s)
            except subprocess.TimeoutExpired:
                timed_out = True
                _signal_group(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=KILL_GRACE_S)
                except subprocess.TimeoutExpired:
                    _signal_group(proc.pid, signal.SIGKILL)
        finally:
            # Whatever the agent left running goes with it: nothing reads the mount on its behalf later.
            _signal_group(proc.pid, signal.SIGKILL)
            reap_descendants(proc.pid, token)
            with lock:
                groups.discard(proc.pid)
            if proc.poll() is None:
                proc.kill()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=KILL_GRACE_S)  # a process stuck in the kernel is not waited for forever
        stdout = _tail(out_file, STDOUT_LIMIT)
        stderr = _tail(err_file, STDERR_LIMIT)
        access = None
        if settings.audit is not None:
            origin: Origin = ("pidns", sandboxed.namespace) if sandboxed is not None else ("sid", proc.pid)
            access = settings.audit.take(origin)
    return stdout, stderr, proc.returncode, timed_out, access


def _tail(handle: IO[bytes], limit: int) -> str:
    """The last ``limit`` bytes written to ``handle``, decoded."""
    size = os.fstat(handle.fileno()).st_size
    handle.seek(max(0, size - limit))
    return handle.read(limit).decode("utf-8", "replace")


def _agent_processes(session: int, token: str) -> list[int]:
    """Processes of an agent: in its session, or carrying its token in their environment."""
    found = []
    marker = f"{TOKEN_VARIABLE}={token}".encode()
    me = os.getpid()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        pid = int(entry.name)
        try:
            if os.getsid(pid) == session:
                found.append(pid)
                continue
            with open(f"/proc/{pid}/environ", "rb") as handle:
                environ = handle.read()
        except OSError:
            continue
        if marker in environ.split(b"\0"):
            found.append(pid)
    return found


def reap_descendants(session: int, token: str) -> None:
    """SIGKILL every process of the agent (see ``_agent_processes``), again until none is left (they may fork)."""
    for _ in range(REAP_ROUNDS):
        pids = _agent_processes(session, token)
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)
