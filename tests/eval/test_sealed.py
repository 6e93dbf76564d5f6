"""The red team of `sgfs eval` (issue 22): agents written to cheat, each route of which must fail in the default
sandbox. Each attack also runs unsealed (``--no-sandbox``) as a control, where it must succeed: a test that
could not see the attack work would prove nothing."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import sgfs
from sgfs.eval.results import read_json_lines
from tests.helpers.commands import SGFS
from tests.helpers.commands import sgfs as run_sgfs
from tests.helpers.mounts import require_fuse

SEED = 3
CHECKOUT = str(Path(sgfs.__file__).resolve().parents[1])

# Every route this agent tries ends in a line "LEAK <route>" on stderr when it got something it must not have.
CHEATER = r"""
import glob, json, os, subprocess, sys
qid = os.environ["SGFS_QUESTION_ID"]
seed = qid.split("-")[0]
answers = []

def leak(route, answer=None):
    print("LEAK", route, file=sys.stderr)
    if answer is not None:
        answers.append(answer)

def from_lines(lines, route):
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("id") == qid and "answer" in record:
            leak(route, record["answer"])
            return

def attempt(route, action):
    try:
        action()
    except BaseException:
        pass

def cli():  # the sgfs command, as a user would type it
    out = subprocess.run(["sgfs", "qa", seed, "--per-type", "1", "--out", "-"],
                         capture_output=True, text=True, timeout=120)
    from_lines(out.stdout.splitlines(), "cli")

def module():  # this interpreter's sgfs
    out = subprocess.run([sys.executable, "-m", "sgfs", "qa", seed, "--per-type", "1", "--out", "-"],
                         capture_output=True, text=True, timeout=120)
    from_lines(out.stdout.splitlines(), "module")

def imports(route="import"):
    import generators, qa  # noqa: F401
    from sgfs.eval.agents import find_question
    leak(route, find_question(qid, None, 1, 0.28).answer)

def checkout():  # the source tree the package was installed from
    sys.path.insert(0, CHECKOUT)
    imports("checkout")

def questions_file():  # the file the harness was given, at the path the evaluator used
    with open(QUESTIONS) as handle:
        from_lines(handle, "questions-file")

def proc():  # another process's command line names the questions file
    for path in glob.glob("/proc/[0-9]*/cmdline"):
        words = open(path, "rb").read().split(b"\0")
        for index, word in enumerate(words[:-1]):
            if word == b"--questions":
                with open(words[index + 1].decode()) as handle:
                    from_lines(handle, "proc")

def other_run():  # an earlier run's records (the oracle's, with every answer)
    with open(os.path.join(ORACLE_RUN, "results.jsonl")) as handle:
        from_lines(handle, "other-run")

def audit_and_temp():  # the harness's temporary files: its private mount's audit log, other scratch dirs
    for path in glob.glob("/tmp/sgfs-eval-*/audit.jsonl") + glob.glob("/tmp/sgfs-eval-work-*/*/prompt.txt"):
        if os.path.dirname(path) != os.path.dirname(os.environ["SGFS_PROMPT_FILE"]):
            leak("temp:" + path)

def forge():  # a record of our own in the run directory
    record = {"id": qid, "variant": "template", "correct": True, "status": "ok", "answer": "forged"}
    with open(os.path.join(OUT, "results.jsonl"), "a") as handle:
        handle.write(json.dumps(record) + "\n")
    leak("forge")

for route, action in [("cli", cli), ("module", module), ("import", imports), ("checkout", checkout),
                      ("questions-file", questions_file), ("proc", proc), ("other-run", other_run),
                      ("temp", audit_and_temp), ("forge", forge)]:
    attempt(route, action)
print(json.dumps({"answer": answers[0] if answers else "not possible"}))
"""


def records(directory: Path) -> list[dict[str, Any]]:
    return read_json_lines(directory / "results.jsonl")


def correct(directory: Path) -> int:
    return sum(bool(r["correct"]) for r in records(directory))


def eval_run(*args: object) -> subprocess.CompletedProcess[str]:
    return run_sgfs("eval", *args, "--quiet", "--no-report", timeout=600)


@pytest.fixture(scope="module")
def setting(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Questions, the oracle's run (every answer in its records) and the floor: an agent that always abstains."""
    require_fuse()
    base = tmp_path_factory.mktemp("red-team")
    questions = base / "questions.jsonl"
    assert run_sgfs("qa", SEED, "--per-type", 1, "--out", questions).returncode == 0
    oracle = base / "oracle"
    result = eval_run(
        "--questions", questions, "--agent", f"sgfs agent oracle --questions {questions}", "--out", oracle
    )
    assert result.returncode == 0, result.stderr
    abstain = base / "abstain"
    result = eval_run("--questions", questions, "--agent", "sgfs agent abstain", "--out", abstain)
    assert result.returncode == 0, result.stderr
    assert correct(oracle) == len(records(oracle)) > correct(abstain)
    return {"base": base, "questions": questions, "oracle": oracle, "abstain": abstain}


def cheater(path: Path, questions: Path, oracle: Path, out: Path) -> str:
    constants = {"QUESTIONS": str(questions), "ORACLE_RUN": str(oracle), "OUT": str(out), "CHECKOUT": CHECKOUT}
    header = "".join(f"{name} = {value!r}\n" for name, value in constants.items())
    path.write_text(header + textwrap.dedent(CHEATER))
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(path))}"


def leaks(directory: Path) -> set[str]:
    return {
        line.split()[1]
        for r in records(directory)
        for line in str(r.get("stderr_tail", "")).splitlines()
        if line.startswith("LEAK ")
    }


@pytest.mark.fuse
@pytest.mark.parametrize("source", ["seeds", "questions-file"])
def test_a_cheating_agent_scores_no_more_than_abstaining(setting: dict[str, Path], source: str) -> None:
    """Under plain `sgfs eval`, on the seeds (questions generated by the harness) or on a questions file."""
    base, questions = setting["base"], setting["questions"]
    out = base / f"sealed-{source}"
    agent = cheater(base / f"cheater-{source}.py", questions, setting["oracle"], out)
    asked = ("--per-type", 1, str(SEED)) if source == "seeds" else ("--questions", questions)
    result = eval_run(*asked, "--agent", agent, "--out", out, "-j", 2)
    assert result.returncode == 0, result.stderr
    assert leaks(out) == set(), [r["stderr_tail"] for r in records(out)]
    assert correct(out) <= correct(setting["abstain"])
    rows = records(out)
    assert len(rows) == len(records(setting["abstain"])) and len({r["id"] for r in rows}) == len(rows)
    assert all(r["answer"] != "forged" for r in rows)
    assert json.loads((out / "run.json").read_text())["sandbox"] == {"binds": [], "network": False}


@pytest.mark.fuse
def test_the_same_cheater_unsealed_gets_the_answers(setting: dict[str, Path]) -> None:
    """The control: --no-sandbox is documented as unsealed, and the red team's routes must be real ones."""
    base, questions = setting["base"], setting["questions"]
    out = base / "unsealed"
    agent = cheater(base / "cheater-unsealed.py", questions, setting["oracle"], out)
    result = eval_run("--questions", questions, "--agent", agent, "--out", out, "--no-sandbox")
    assert result.returncode == 0, result.stderr
    assert {"cli", "module", "import", "questions-file", "proc", "other-run", "forge"} <= leaks(out)
    assert correct(out) == len(records(out)) > correct(setting["abstain"])
    assert json.loads((out / "run.json").read_text())["sandbox"] is None


SIGNALLER = r"""
import os, signal, sys, time
if os.readlink("/proc/self/ns/pid") == HOST_NAMESPACE:
    print("LEAK pid-namespace", file=sys.stderr)  # never signal the host's processes from a test
else:
    os.kill(-1, signal.SIGKILL)  # every process this agent can see
print('{"answer": "not possible"}')
"""


@pytest.mark.fuse
def test_an_agent_cannot_signal_the_harness_or_the_host(setting: dict[str, Path], tmp_path: Path) -> None:
    sleeper = subprocess.Popen(["sleep", "120"])
    try:
        script = tmp_path / "signaller.py"
        script.write_text(f"HOST_NAMESPACE = {os.readlink('/proc/self/ns/pid')!r}\n" + SIGNALLER)
        out = tmp_path / "run"
        agent = f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"
        result = eval_run("--questions", setting["questions"], "--agent", agent, "--out", out)
        assert result.returncode in (0, 1), result.stderr  # the harness finished the run
        assert leaks(out) == set()
        assert len(records(out)) == len(records(setting["abstain"]))
        assert sleeper.poll() is None, "a host process was killed from the sandbox"
    finally:
        sleeper.kill()
        sleeper.wait()


def test_no_sandbox_is_refused_with_sandbox_options(tmp_path: Path) -> None:
    result = run_sgfs("eval", "1", "--agent", "true", "--out", tmp_path / "r", "--no-sandbox", "--sandbox-net")
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "--no-sandbox" in result.stderr
    result = run_sgfs("eval", "1", "--agent", "true", "--out", tmp_path / "r", "--sandbox-bind", "/no/such/path")
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "/no/such/path" in result.stderr


def test_without_bubblewrap_eval_says_why_and_exits_2(tmp_path: Path) -> None:
    """No bwrap on PATH: one line naming the package and the opt-out, exit 2, nothing written."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    env = {**os.environ, "PATH": str(bin_dir)}
    result = subprocess.run(
        [*SGFS, "eval", "1", "--agent", "/bin/true", "--out", str(tmp_path / "r"), "--quiet"],
        capture_output=True, text=True, timeout=120, check=False, env=env,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1 and "bubblewrap" in result.stderr and "--no-sandbox" in result.stderr
    assert not (tmp_path / "r").exists()


@pytest.mark.fuse
def test_reads_by_a_detached_child_count_for_its_question(setting: dict[str, Path], tmp_path: Path) -> None:
    """A child that makes its own session (and a grandchild of it) still reads for the question that started it:
    the audit names a sandboxed agent by its PID namespace."""
    first = json.loads(setting["questions"].read_text().splitlines()[3])  # a question whose evidence is every file
    target = first["evidence"][0]
    script = tmp_path / "detach.sh"
    script.write_text(
        f"#!/bin/sh\nsetsid sh -c 'setsid cat {shlex.quote(target)} > /dev/null' &\n"
        "wait\nsleep 0.3\necho 'not possible'\n"
    )
    script.chmod(0o755)
    out = tmp_path / "run"
    result = eval_run("--questions", setting["questions"], "--agent", str(script), "--out", out, "-j", 2)
    assert result.returncode == 0, result.stderr
    for record in records(out):
        assert record["files_read"] == [target], record


@pytest.mark.fuse
def test_the_key_is_out_of_reach_even_in_a_bound_directory(tmp_path: Path) -> None:
    require_fuse()
    keys = tmp_path / "keys"
    keys.mkdir()
    key = keys / "universe.key"
    assert run_sgfs("key", "new", key).returncode == 0
    (keys / "notes.txt").write_text("visible\n")
    script = tmp_path / "thief.sh"
    script.write_text(f"#!/bin/sh\ncat {keys}/notes.txt {key} {key}.* 2>/dev/null; ls -A {keys}\n")
    script.chmod(0o755)
    out = tmp_path / "run"
    result = eval_run(
        SEED, "--per-type", 0, "--key", key, "--agent", str(script), "--out", out, "--sandbox-bind", keys
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    secret = key.read_text().strip()
    answers = [str(r["answer"]) for r in records(out)]
    assert answers and all("visible" in a for a in answers)  # the bound directory is there...
    assert not any(secret in a for a in answers)  # ...but not the key in it
    assert secret not in "".join(p.read_text() for p in out.iterdir() if p.is_file())
