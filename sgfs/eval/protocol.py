"""The agent protocol (docs/eval.md): the prompt, the command line, the environment, and reading the answer."""

from __future__ import annotations

import errno
import json
import os
import re
import shlex
import shutil
import stat
import sys
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from qa.grading import JsonValue, extract_answer
from sgfs.errors import SgfsError

PLACEHOLDERS = ("prompt_file", "repo", "question_id", "answer_file")
MAX_ANSWER_BYTES = 1 << 20
INSTRUCTIONS = (
    "The repository is your current working directory; the paths above are relative to it. It is read-only: "
    "explore it with any tools you like. End your reply with your final answer as JSON on its own line, "
    'e.g. {"answer": 42} or {"answer": "not possible"}.'
)
# Appended to the instructions in the conditions of ``--ambiguous`` that offer the clarification channel.
ASK_INSTRUCTIONS = (
    'You may ask one clarifying question by running $SGFS_ASK "your question"; it prints the reply. Ask only if '
    "the question leaves something open that you cannot decide from the repository."
)
# Words a POSIX shell runs itself: a command starting with one needs no binary on PATH.
SHELL_WORDS = frozenset(
    (
        *("!", "{", "(", "[", "[[", ".", ":", "true", "false", "exec", "env", "cd", "echo", "printf", "test"),
        *("command", "eval", "set", "export", "read", "if", "for", "while", "case"),
    )
)


def prompt(question_text: str, channel: bool = False) -> str:
    """The prompt of one item; ``channel``: the agent may ask through ``$SGFS_ASK`` (and is told so)."""
    instructions = f"{INSTRUCTIONS} {ASK_INSTRUCTIONS}" if channel else INSTRUCTIONS
    return f"{question_text}\n\n{instructions}\n"


def command_line(template: str, values: dict[str, str]) -> str:
    """The agent command with its placeholders replaced by shell-quoted values (other braces are left alone,
    so commands may contain JSON or awk programs)."""
    line = template
    for name in PLACEHOLDERS:
        line = line.replace("{" + name + "}", shlex.quote(values[name]))
    return line


# A plain shell word (no quotes, expansions or operators) that contains a slash: a path.
_PATH_WORD = re.compile(r"(?<![^\s;&|()<>])([\w.+@%,=:~-]*/[\w./+@%,:~-]*)(?![^\s;&|()<>])")


def resolve_relative(template: str, caller_dir: str) -> str:
    """The command with each relative path in it (a plain word containing ``/``, like ``./my-agent`` or
    ``scripts/openai_agent.py``) that names an existing file or directory of ``caller_dir`` made absolute: the
    agent runs in the repository, but its command was written where the caller stands."""

    def absolute(match: re.Match[str]) -> str:
        word = match.group(1)
        prefix = ""
        if "=" in word.split("/", 1)[0]:  # VAR=path
            prefix, _, word = word.partition("=")
            prefix += "="
        if not word or word.startswith(("/", "~", "-")) or "{" in word:
            return match.group(0)
        path = os.path.normpath(os.path.join(caller_dir, word))
        if not os.path.exists(path):
            return match.group(0)
        return prefix + shlex.quote(path)

    return _PATH_WORD.sub(absolute, template)


REFERENCE_AGENTS = ("abstain", "prior", "random", "oracle", "literal")
_SAFE_WORD = re.compile(r"[\w./+@%,:=~-]+")
# Options that make a reference agent do something else than answer (``sgfs agent prior --learn SEEDS --out FILE``
# writes a file): such a command is no reference agent and goes the way of any other.
_NOT_ANSWERING = ("--learn", "--out")


def reference_agent(command: str) -> list[str] | None:
    """The argv of one of sgfs's own reference agents (``sgfs agent oracle|random|prior|abstain|literal`` with plain
    options) run by this installation's interpreter, or None. These are trusted code, and some must read the
    truth (the oracle is the ceiling that checks the audit), so they run outside the sandbox: without a shell, so
    that nothing else can ride along."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if len(words) < 3 or words[0] != "sgfs" or words[1] != "agent" or words[2] not in REFERENCE_AGENTS:
        return None
    if not all(_SAFE_WORD.fullmatch(word) for word in words[3:]):
        return None
    if any(word.split("=", 1)[0] in _NOT_ANSWERING for word in words[3:]):
        return None
    return [sys.executable, "-m", "sgfs", *words[1:]]


def check_agent(template: str) -> None:
    """An SgfsError when the command's program cannot be found (the first word after VAR=value words)."""
    try:
        words = shlex.split(template)
    except ValueError as exc:
        raise SgfsError(f"invalid --agent command {template!r}: {exc}") from None
    words = [w for w in words if not (("=" in w) and w.split("=", 1)[0].isidentifier())]
    if not words:
        raise SgfsError("--agent is empty")
    program = words[0]
    if program in SHELL_WORDS or any(c in program for c in "{$`"):
        return
    if "/" in program:
        if not (os.path.isfile(program) and os.access(program, os.X_OK)):
            raise SgfsError(f"agent program {program} does not exist or is not executable")
    elif shutil.which(program) is None:
        raise SgfsError(f"agent program {program!r} is not on PATH")


@dataclass(frozen=True)
class AgentAnswer:
    value: JsonValue
    usage: dict[str, int] | None
    tool_calls: int | None
    empty: bool


def _count(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, Decimal)):
        return None
    if isinstance(value, Decimal) and value != value.to_integral_value():
        return None
    return int(value) if value >= 0 else None


class AnswerFileError(Exception):
    """The answer file is there but is not a regular file the harness may read (a FIFO, a link, a device...)."""


def read_answer_file(answer_file: str) -> str | None:
    """The text of the answer file (its first MAX_ANSWER_BYTES), None when the agent wrote none. Never blocks and
    never follows a link: anything but a regular file is an AnswerFileError."""
    try:
        fd = os.open(answer_file, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_NOCTTY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise AnswerFileError("the answer file is a symbolic link") from None
        raise AnswerFileError(f"cannot read the answer file: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise AnswerFileError(f"the answer file is not a regular file (mode {stat.filemode(mode)})")
        chunks: list[bytes] = []
        left = MAX_ANSWER_BYTES
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks).decode("utf-8", "replace")
    except OSError as exc:
        raise AnswerFileError(f"cannot read the answer file: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def read_answer(answer_file: str, stdout: str) -> AgentAnswer:
    """The answer file when the agent wrote one (plain text, or JSON with answer/usage/tool_calls), else stdout.
    An answer file that is not a regular file is an AnswerFileError."""
    text = read_answer_file(answer_file)
    if text is None:
        return AgentAnswer(extract_answer(stdout), None, None, not stdout.strip())
    try:
        obj = json.loads(text, parse_float=Decimal, parse_int=Decimal)
    except ValueError:
        obj = None
    if isinstance(obj, dict) and "answer" in obj:
        usage = None
        if isinstance(obj.get("usage"), dict):
            tokens = {k: _count(obj["usage"].get(k)) for k in ("input_tokens", "output_tokens")}
            usage = {k: v for k, v in tokens.items() if v is not None} or None
        value: JsonValue = obj["answer"]
        empty = value is None or (isinstance(value, str) and not value.strip())
        return AgentAnswer(value, usage, _count(obj.get("tool_calls")), empty)
    return AgentAnswer(extract_answer(text), None, None, not text.strip())
