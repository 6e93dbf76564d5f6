"""`sgfs eval`, `sgfs agent`, `sgfs report`: the harness on real mounts, its audit, gate, JUnit and report.

Every run here starts its own private, audited mount through `sgfs eval` (or uses one from ``mounted``), and
each test checks that no mount is left behind.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import mmap
import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

import generators
from qa.grading import VARIANTS
from qa.records import AskedQuestion, expand_variants, parse_question_lines
from qa.result_record import ResultRecord
from sgfs.eval.protocol import AnswerFileError, command_line, read_answer, resolve_relative
from sgfs.eval.questions import select_shard
from sgfs.eval.results import read_json_lines
from sgfs.eval.stats import newcombe, wilson
from sgfs.eval.summary import summarize_records
from sgfs.mount.control import mount_table
from tests.helpers.commands import SGFS, one_line_error, sgfs
from tests.helpers.mounts import mounted, require_fuse

SEED = 1
ABSTAIN = "sgfs agent abstain"


def eval_mounts() -> list[str]:
    """The private mounts of the runs this test started (their TMPDIR is the test's own)."""
    private = os.path.join(os.environ["TMPDIR"], "sgfs-eval-")
    return [point for point, kind in mount_table().items() if kind == "fuse.sgfs" and point.startswith(private)]


def records_of(directory: Path) -> list[dict[str, Any]]:
    return read_json_lines(directory / "results.jsonl")


def run_eval(*args: object, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    result = sgfs("eval", *args, "--quiet", timeout=timeout)
    assert not eval_mounts(), "a private mount was left behind"
    return result


@pytest.fixture(scope="module")
def questions(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("questions") / "q.jsonl"
    result = sgfs("qa", SEED, "--per-type", 1, "--out", path)
    assert result.returncode == 0, result.stderr
    return path


@pytest.fixture(autouse=True)
def agent_path(monkeypatch: pytest.MonkeyPatch, sgfs_bin: Path, tmp_path: Path) -> None:
    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))  # where the runs' private mounts go
    monkeypatch.setenv("PATH", str(sgfs_bin) + os.pathsep + os.environ.get("PATH", ""))


def write_agent(path: Path, body: str) -> str:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


# -- pure parts ------------------------------------------------------------------------------------------
def test_command_line_quotes_placeholders() -> None:
    values = {"prompt_file": "/t/p q.txt", "repo": "/m/1", "question_id": "1-x-1", "answer_file": "/t/a'b"}
    line = command_line("agent {prompt_file} --id {question_id} -o {answer_file} {repo} {not_ours}", values)
    assert line == "agent '/t/p q.txt' --id 1-x-1 -o '/t/a'\"'\"'b' /m/1 {not_ours}"


def test_read_answer_file_forms(tmp_path: Path) -> None:
    answer = tmp_path / "answer"
    plain = read_answer(str(answer), 'thinking...\n{"answer": 42}\n')
    assert (str(plain.value), plain.usage, plain.tool_calls, plain.empty) == ("42", None, None, False)
    assert read_answer(str(answer), "  \n").empty
    answer.write_text('{"answer": 0.125, "usage": {"input_tokens": 10, "output_tokens": 3}, "tool_calls": 4}')
    full = read_answer(str(answer), "ignored")
    assert (str(full.value), full.usage, full.tool_calls) == ("0.125", {"input_tokens": 10, "output_tokens": 3}, 4)
    answer.write_text("The answer is yes.")
    assert read_answer(str(answer), "").value == "yes"  # the final answer after its marker
    answer.write_text('{"answer": ""}')
    assert read_answer(str(answer), "stdout is not used").empty


def test_results_file_drops_a_cut_last_line(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_text('{"id": "a"}\n{"id": "b"}\n{"id": "c", "corr')
    assert [r["id"] for r in read_json_lines(path, repair=True)] == ["a", "b"]
    assert path.read_text() == '{"id": "a"}\n{"id": "b"}\n'
    path.write_text('{"id": "a"}\nnot json\n{"id": "b"}\n')
    with pytest.raises(Exception, match=r"results\.jsonl:2"):
        read_json_lines(path)


def test_shards_partition_the_questions(questions: Path) -> None:
    items = expand_variants(parse_question_lines(questions.read_text().splitlines(), "q"), VARIANTS)
    for count in (1, 2, 3, 7):
        parts = [select_shard(items, (index, count)) for index in range(1, count + 1)]
        keys = [item.key for part in parts for item in part]
        assert sorted(keys) == sorted(item.key for item in items) and len(set(keys)) == len(keys)
        for part in parts:  # every variant of a question lands in the same shard
            assert all(sum(i.id == item.id for i in part) == 4 for item in part)


def test_prompt_fills_placeholders(questions: Path) -> None:
    found = next(r for r in parse_question_lines(questions.read_text().splitlines(), "q") if r.question.variables)
    record, text = found.question.to_dict(), AskedQuestion(found, "paraphrase_2").text()
    assert "{path}" not in text and record["variables"]["path"] in text


def test_wilson_and_newcombe() -> None:
    low, high = wilson(8, 10) or (0, 0)
    assert round(low, 4) == 0.4902 and round(high, 4) == 0.9433  # the published Wilson interval of 8/10
    assert wilson(0, 0) is None
    d, lower, upper = newcombe(8, 10, 5, 10) or (0, 0, 0)
    assert round(d, 2) == 0.30 and lower < 0 < upper < 1


# -- bad input -------------------------------------------------------------------------------------------
def test_bad_input_is_one_line_exit_2(tmp_path: Path, questions: Path) -> None:
    assert "invalid seed" in one_line_error(sgfs("eval", "1-x", "--agent", ABSTAIN, "--out", tmp_path / "a"))
    missing = one_line_error(sgfs("eval", "1", "--agent", "no-such-agent-binary --x", "--out", tmp_path / "b"))
    assert "no-such-agent-binary" in missing
    broken = tmp_path / "broken.jsonl"
    broken.write_text(questions.read_text().splitlines()[0] + "\n{not json\n")
    assert "broken.jsonl:2" in one_line_error(
        sgfs("eval", "--questions", broken, "--agent", ABSTAIN, "--out", tmp_path / "c")
    )
    assert "exactly one" in one_line_error(sgfs("eval", "--agent", ABSTAIN, "--out", tmp_path / "d"))
    assert "shard" in one_line_error(sgfs("eval", "1", "--shard", "3/2", "--agent", ABSTAIN, "--out", tmp_path / "e"))
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "results.jsonl").write_text('{"id": "x"}\n')
    assert "not a directory written by sgfs eval" in one_line_error(
        sgfs("eval", "--questions", questions, "--agent", ABSTAIN, "--out", foreign)
    )
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


# -- real runs -------------------------------------------------------------------------------------------
@pytest.mark.fuse
def test_oracle_is_perfect_and_fully_audited_with_j4(tmp_path: Path, questions: Path) -> None:
    require_fuse()
    out = tmp_path / "run"
    agent = f"sgfs agent oracle --questions {questions}"
    result = run_eval("--questions", questions, "--agent", agent, "--out", out, "-j", 4, "--no-report")
    assert result.returncode == 0, result.stderr
    records = records_of(out)
    assert len(records) == 11 and len({r["id"] for r in records}) == 11
    summary = json.loads((out / "summary.json").read_text())
    assert summary["accuracy"] == 1.0 and summary["statuses"]["ok"] == 11
    assert summary["evidence_recall_mean_answerable"] == 1.0 and summary["correct_without_evidence"] == 0.0
    for key in ("input_tokens", "output_tokens", "tool_calls", "evidence_recall_mean", "abstained_after_evidence"):
        assert key in summary
    question_lines = {json.loads(line)["id"]: json.loads(line) for line in questions.read_text().splitlines()}
    for record in records:
        evidence = question_lines[record["id"]]["evidence"]
        assert record["evidence_read"] == evidence and sorted(record["files_read"]) == sorted(evidence)
        assert record["reads_outside"] == [] and record["status"] == "ok"
    run = json.loads((out / "run.json").read_text())
    assert run["agent"] == agent and run["questions"] == 11 and run["questions_digest"]


@pytest.mark.fuse
@pytest.mark.parametrize("sealed", [True, False], ids=["sandbox", "no-sandbox"])
def test_audit_attributes_each_extra_read_under_j4(tmp_path: Path, questions: Path, sealed: bool) -> None:
    """Each question's agent reads one file chosen for it (several questions share a file, so a page-cache hit
    would hide a read) and abstains; the audit must show exactly that file for each. One agent also reads
    another repository: unsealed it can; in the sandbox only its own repository exists."""
    require_fuse()
    ids = [json.loads(line)["id"] for line in questions.read_text().splitlines()]
    files = sorted(json.loads(questions.read_text().splitlines()[3])["evidence"])  # extension: every data file
    chosen = {qid: files[index % 3] for index, qid in enumerate(ids)}
    table = tmp_path / "chosen.txt"
    table.write_text("".join(f"{qid} {path}\n" for qid, path in chosen.items()))
    other = f"/{SEED + 1}/{generators.repository(SEED + 1).file_paths()[0]}"
    agent = write_agent(
        tmp_path / "reader.sh",
        f'path=$(grep "^$SGFS_QUESTION_ID " {table} | cut -d" " -f2)\ncat "$path" > /dev/null\n'
        f'if [ "$SGFS_QUESTION_ID" = "{ids[0]}" ]; then ls > /dev/null; cat "$SGFS_REPO/..{other}" > /dev/null; fi\n'
        'sleep 0.2\necho "not possible"\n',
    )
    out = tmp_path / "run"
    sandbox = ("--sandbox-bind", table) if sealed else ("--no-sandbox",)
    result = run_eval("--questions", questions, "--agent", agent, "--out", out, "-j", 4, "--no-report", *sandbox)
    assert result.returncode == 0, result.stderr
    records = records_of(out)
    assert len(records) == len(ids)
    for record in records:
        assert record["files_read"] == [chosen[record["id"]]], record
        if record["id"] == ids[0]:  # one question also listed its repository and read another repository's file
            assert record["dirs_listed"] == ["."] and record["reads_outside"] == ([] if sealed else [other])
        else:
            assert record["dirs_listed"] == [] and record["reads_outside"] == []
    summary = json.loads((out / "summary.json").read_text())
    assert summary["reads_outside_repository"] == (0 if sealed else 1)


@pytest.mark.fuse
def test_timeouts_crashes_and_silence_are_recorded(tmp_path: Path, questions: Path) -> None:
    require_fuse()
    marker = f"sgfs-test-{uuid.uuid4().hex}"
    first = questions.read_text().splitlines()[:4]
    small = tmp_path / "q4.jsonl"
    small.write_text("\n".join(first) + "\n")
    ids = [json.loads(line)["id"] for line in first]
    agent = write_agent(
        tmp_path / "agent.sh",
        f"""case "$SGFS_QUESTION_ID" in
  {ids[0]}) sh -c 'sleep 300; : {marker}' & sleep 300 ;;
  {ids[1]}) echo "partial" ; echo "boom" >&2 ; exit 3 ;;
  {ids[2]}) : ;;
  *) test "$SGFS_REPO" = "$PWD" && test -f "$SGFS_PROMPT_FILE" && cat > /dev/null && echo "$INHERITED" ;;
esac
""",
    )
    out = tmp_path / "run"
    env_result = subprocess.run(
        [*SGFS, "eval", "--questions", str(small), "--agent", agent, "--out", str(out), "--timeout", "2", "-j", "2",
         "--quiet", "--no-report"],
        capture_output=True, text=True, timeout=120, check=False, env={**os.environ, "INHERITED": "yes"},
    )  # fmt: skip
    assert env_result.returncode == 0, env_result.stderr
    by_id = {r["id"]: r for r in records_of(out)}
    assert [by_id[i]["status"] for i in ids] == ["timeout", "crash", "no_answer", "ok"]
    assert by_id[ids[1]]["exit_code"] == 3 and "boom" in by_id[ids[1]]["stderr_tail"]
    assert by_id[ids[3]]["answer"] == "yes"  # the environment was inherited
    assert not any(by_id[i]["correct"] for i in ids[:3])
    assert 2 <= by_id[ids[0]]["time_s"] < 60
    time.sleep(0.2)
    leftovers = [p for p in Path("/proc").iterdir() if p.name.isdigit() and marker in _cmdline(p)]
    assert not leftovers, "the timed-out agent's process group survived"
    assert not eval_mounts()


def _cmdline(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().decode("utf-8", "replace")
    except OSError:
        return ""


@pytest.mark.fuse
@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=["SIGINT", "SIGTERM", "SIGKILL"])
def test_killed_run_resumes_without_loss_or_duplicates(tmp_path: Path, questions: Path, sig: signal.Signals) -> None:
    """SIGINT (Ctrl-C) and SIGTERM: agents killed, mount removed, exit 130. SIGKILL gives the harness no chance:
    the daemon of its private mount notices its owner is gone and unmounts itself. Either way --resume finishes."""
    require_fuse()
    agent = write_agent(tmp_path / "slow.sh", 'sleep 0.4\necho "not possible"\n')
    out = tmp_path / "run"
    args = [*SGFS, "eval", "--questions", questions, "--agent", agent, "--out", out, "-j", 2, "--quiet"]
    proc = subprocess.Popen([*map(str, args), "--no-report"], stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while len(records_of(out)) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    if sig != signal.SIGKILL:
        assert proc.returncode == 130 and "--resume" in err, err
        assert not eval_mounts(), f"{sig.name} left the private mount behind"
    else:
        deadline = time.monotonic() + 10
        while eval_mounts() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not eval_mounts(), "the private mount outlived its killed harness"
    partial = records_of(out)
    assert 3 <= len(partial) < 11
    with open(out / "results.jsonl", "a") as handle:  # what a kill in the middle of a write leaves
        handle.write('{"id": "1-readme-1", "variant": "templ')
    again = run_eval("--questions", questions, "--agent", agent, "--out", out, "-j", 2, "--resume", "--no-report")
    assert again.returncode == 0, again.stderr
    final = records_of(out)
    assert len(final) == 11 and len({r["id"] for r in final}) == 11
    assert final[: len(partial)] == partial  # nothing recorded before was run again
    other = one_line_error(
        sgfs("eval", "--questions", questions, "--agent", ABSTAIN, "--out", out, "--resume", "--quiet")
    )
    assert "another agent" in other
    shorter = tmp_path / "q3.jsonl"
    shorter.write_text("\n".join(questions.read_text().splitlines()[:3]) + "\n")
    assert "other questions" in one_line_error(
        sgfs("eval", "--questions", shorter, "--agent", agent, "--out", out, "--resume", "--quiet")
    )
    assert "--resume" in one_line_error(sgfs("eval", "--questions", questions, "--agent", agent, "--out", out))


@pytest.mark.fuse
def test_shards_report_gate_and_junit(tmp_path: Path, questions: Path) -> None:
    require_fuse()
    shards = []
    for index in (1, 2):
        out = tmp_path / f"shard{index}"
        result = run_eval("--questions", questions, "--agent", ABSTAIN, "--out", out, "--shard", f"{index}/2",
                          "-j", 2, "--no-report")  # fmt: skip
        assert result.returncode == 0, result.stderr
        shards.append(out)
    ids = [r["id"] for s in shards for r in records_of(s)]
    assert sorted(ids) == sorted(json.loads(line)["id"] for line in questions.read_text().splitlines())

    report = tmp_path / "report"
    junit = tmp_path / "junit.xml"
    result = sgfs("report", *shards, "--out", report, "--junit", junit)
    assert result.returncode == 0, result.stderr
    page = (report / "report.html").read_text()
    linked = [part.split('"')[0] for part in page.split('<a href="')[1:]]
    assert linked and all((report / name).is_file() and name.endswith(".png") for name in linked)
    assert "data:image/png;base64," in page and "<script" not in page  # self-contained
    assert "### By type" in (report / "report.md").read_text()
    cases = ET.parse(junit).getroot().findall(".//testcase")
    assert len(cases) == len(ids)
    merged = [r for s in shards for r in records_of(s)]
    assert sum(case.find("failure") is not None for case in cases) == sum(not r["correct"] for r in merged)
    accuracy = summarize_records([ResultRecord.from_json(r) for r in merged]).accuracy
    unanswerable = sum(not json.loads(line)["answerable"] for line in questions.read_text().splitlines())
    assert accuracy == unanswerable / len(ids)  # abstaining scores exactly the unanswerable share

    failed = sgfs("report", *shards, "--out", report, "--min-accuracy", 0.9)
    assert failed.returncode == 1 and failed.stderr.count("\n") == 1 and "below --min-accuracy" in failed.stderr
    assert sgfs("report", *shards, "--out", report, "--min-accuracy", 0.1).returncode == 0

    oracle = tmp_path / "oracle"
    agent = f"sgfs agent oracle --questions {questions}"
    result = run_eval("--questions", questions, "--agent", agent, "--out", oracle, "-j", 2, "--min-accuracy", 1)
    assert result.returncode == 0, result.stderr
    assert (oracle / "report" / "report.html").is_file()
    dropped = sgfs("report", *shards, "--out", report, "--baseline", oracle, "--max-drop", 0.1)
    lines = dropped.stderr.splitlines()
    assert dropped.returncode == 1 and len(lines) == 2 and "dropped" in lines[1], dropped.stderr
    assert f"on the {len(ids)} items both runs hold" in lines[0]
    text = (report / "report.md").read_text()
    assert "Questions that flipped" in text and "correct → wrong" in text
    assert (report / "baseline_difference.png").is_file()
    gate = run_eval("--questions", questions, "--agent", ABSTAIN, "--out", tmp_path / "again", "--min-accuracy", 0.9,
                    "--no-report")  # fmt: skip
    assert gate.returncode == 1 and "below --min-accuracy" in gate.stderr.splitlines()[-1]

    # Records nobody can forge: each question once, and one run per report (its shards merge, nothing else).
    one = records_of(shards[0])
    forged = tmp_path / "forged"
    shutil.copytree(shards[0], forged)
    with open(forged / "results.jsonl", "a") as handle:  # the same question again, now answered correctly
        handle.write(json.dumps({**one[0], "correct": True, "status": "ok"}) + "\n")
    assert "appears more than once" in one_line_error(sgfs("report", forged, "--out", report))
    smuggled = tmp_path / "smuggled"
    shutil.copytree(shards[0], smuggled)
    with open(smuggled / "results.jsonl", "a") as handle:  # a record of the other shard
        handle.write(json.dumps(records_of(shards[1])[0]) + "\n")
    assert "not a question of shard 1/2" in one_line_error(sgfs("report", smuggled, "--out", report))
    assert "both shard 1/2" in one_line_error(sgfs("report", shards[0], shards[0], "--out", report))
    assert "not shards of one run" in one_line_error(sgfs("report", shards[0], oracle, "--out", report))
    assert "not shards of one run" in one_line_error(sgfs("report", oracle, tmp_path / "again", "--out", report))
    copy = tmp_path / "oracle-copy"
    shutil.copytree(oracle, copy)
    assert "not shards of one split" in one_line_error(sgfs("report", oracle, copy, "--out", report))
    # The baseline is compared on the questions both runs hold, and says how many; none shared is refused.
    part = sgfs("report", shards[0], "--out", report, "--baseline", oracle, "--max-drop", 1)
    assert part.returncode == 0, part.stderr
    said = f"on the {len(one)} items both runs hold (of {len(one)} in this run, {len(ids)} in the baseline)"
    assert said in part.stderr
    assert f"Compared on the {len(one)} items both runs hold" in (report / "report.md").read_text()
    flips = (report / "report.md").read_text().split("### Questions that flipped")[1]
    assert all(r["id"] in flips for r in one if not r["correct"]) and flips.count("correct → wrong") == sum(
        not r["correct"] for r in one
    )
    assert "shares no question" in one_line_error(sgfs("report", shards[0], "--out", report, "--baseline", shards[1]))


@pytest.mark.fuse
def test_user_mount_without_audit_gives_null_evidence(tmp_path: Path, questions: Path) -> None:
    small = tmp_path / "q2.jsonl"
    small.write_text("\n".join(questions.read_text().splitlines()[4:6]) + "\n")
    with mounted(tmp_path / "mnt") as mnt:
        result = sgfs("eval", "--questions", small, "--agent", ABSTAIN, "--out", tmp_path / "run", "--mount", mnt,
                      "--quiet", "--no-report")  # fmt: skip
        assert result.returncode == 0, result.stderr
        assert result.stderr.count("warning") == 1
        assert all(r["evidence_read"] is None and r["files_read"] is None for r in records_of(tmp_path / "run"))
    (tmp_path / "mnt2").mkdir()
    inside = one_line_error(sgfs("mount", tmp_path / "mnt2", "--audit", tmp_path / "mnt2" / "audit.jsonl"))
    assert "outside the mount point" in inside


@pytest.mark.fuse
def test_user_mount_with_audit(tmp_path: Path, questions: Path) -> None:
    small = tmp_path / "q2.jsonl"
    small.write_text("\n".join(questions.read_text().splitlines()[4:6]) + "\n")
    audit = tmp_path / "audit.jsonl"
    with mounted(tmp_path / "mnt", "--audit", audit) as mnt:
        assert "audit" not in " ".join(os.listdir(mnt / str(SEED))) + " ".join(os.listdir(mnt))
        first = json.loads(small.read_text().splitlines()[0])["evidence"][0]
        with open(mnt / str(SEED) / first, "rb") as handle, mmap.mmap(handle.fileno(), 0, prot=mmap.PROT_READ) as view:
            assert view[:100] == (mnt / str(SEED) / first).read_bytes()[:100]  # shared mappings work when audited
        agent = f"sgfs agent oracle --questions {small}"
        result = sgfs("eval", "--questions", small, "--agent", agent, "--out", tmp_path / "run", "--mount", mnt,
                      "--audit", audit, "--quiet", "--no-report")  # fmt: skip
        assert result.returncode == 0, result.stderr
        records = records_of(tmp_path / "run")
        assert all(r["evidence_recall"] == 1.0 and r["correct"] for r in records)


class _StubModel(http.server.BaseHTTPRequestHandler):
    """An OpenAI-compatible endpoint that first asks for one shell command, then answers."""

    shell_command = "true"  # (`command` is the HTTP method of the handler)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if body["messages"][-1]["role"] == "tool":
            message: dict[str, Any] = {"role": "assistant", "content": 'Done. {"answer": "not possible"}'}
        else:
            call = {"id": "c1", "type": "function", "function": {"name": "shell", "arguments": json.dumps(
                {"command": self.shell_command})}}  # fmt: skip
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
        reply = {"choices": [{"message": message}], "usage": {"prompt_tokens": 100, "completion_tokens": 7}}
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.mark.fuse
def test_openai_agent_script_against_a_stub_endpoint(
    tmp_path: Path, questions: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_fuse()
    lines = questions.read_text().splitlines()
    small = tmp_path / "q2.jsonl"
    small.write_text("\n".join(lines[4:6]) + "\n")
    target = json.loads(lines[3])["evidence"][0]
    _StubModel.shell_command = f"head -c 100 {target}"
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _StubModel)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{server.server_address[1]}/v1")
        script = Path(__file__).resolve().parents[2] / "scripts" / "openai_agent.py"
        agent = f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"
        result = run_eval(
            "--questions", small, "--agent", agent, "--out", tmp_path / "run", "--no-report", "--sandbox-net"
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
    finally:
        server.shutdown()
    for record in records_of(tmp_path / "run"):
        assert record["status"] == "ok" and record["answer"] == "not possible"
        assert record["usage"] == {"input_tokens": 200, "output_tokens": 14} and record["tool_calls"] == 1
        assert record["files_read"] == [target], record


@pytest.mark.fuse
def test_ci_job_script_runs_and_gates(tmp_path: Path) -> None:
    """scripts/ci_eval.sh as docs/ci.md shows it: passes with the oracle, exits 1 with the abstainer; either way
    the artifacts are collected and no mount is left."""
    require_fuse()
    script = Path(__file__).resolve().parents[2] / "scripts" / "ci_eval.sh"
    base = {**os.environ, "SGFS_CI_SEEDS": str(SEED), "SGFS_CI_PER_TYPE": "1", "SGFS_CI_MIN_ACCURACY": "0.9"}
    passed = subprocess.run(["bash", str(script)], cwd=tmp_path, env=base, capture_output=True, text=True,
                            timeout=300, check=False)  # fmt: skip
    assert passed.returncode == 0, passed.stderr
    assert (tmp_path / "artifacts" / "report" / "report.html").is_file()
    cases = ET.parse(tmp_path / "artifacts" / "junit.xml").getroot().findall(".//testcase")
    assert len(cases) == 11 and all(case.find("failure") is None for case in cases)
    summary = json.loads((tmp_path / "artifacts" / "summary.json").read_text())
    assert summary["accuracy"] == 1.0 and summary["evidence_recall_mean_answerable"] == 1.0

    failing = {**base, "SGFS_CI_AGENT": ABSTAIN, "SGFS_CI_OUT": "floor", "SGFS_CI_ARTIFACTS": "floor-artifacts"}
    failed = subprocess.run(["bash", str(script)], cwd=tmp_path, env=failing, capture_output=True, text=True,
                            timeout=300, check=False)  # fmt: skip
    assert failed.returncode == 1 and "below --min-accuracy" in failed.stderr
    assert (tmp_path / "floor-artifacts" / "junit.xml").is_file()
    assert not [p for p, kind in mount_table().items() if kind == "fuse.sgfs" and p.startswith(str(tmp_path))]


def test_reference_agents_answer_by_id(tmp_path: Path, questions: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    records = {json.loads(line)["id"]: json.loads(line) for line in questions.read_text().splitlines()}
    monkeypatch.delenv("SGFS_ANSWER_FILE", raising=False)
    guesses = {}
    for qid, record in records.items():
        result = sgfs("agent", "random", "--id", qid, "--questions", questions)
        assert result.returncode == 0, result.stderr
        guesses[qid] = json.loads(result.stdout)["answer"]
        if record["answer_kind"] == "yes_no" or len(record["choices"] or ()) > 1:
            assert guesses[qid] in record["choices"]
    again = sgfs("agent", "random", "--id", "1-prefix-1", "--questions", questions)
    assert json.loads(again.stdout)["answer"] == guesses["1-prefix-1"]  # seeded by the id
    answer_file = tmp_path / "answer"
    monkeypatch.setenv("SGFS_ANSWER_FILE", str(answer_file))
    monkeypatch.setenv("SGFS_QUESTION_ID", "1-readme-1")
    oracle = sgfs("agent", "oracle", "--per-type", 1)  # regenerated from the seed; no evidence to read
    assert oracle.returncode == 0, oracle.stderr
    assert json.loads(answer_file.read_text()) == {"answer": records["1-readme-1"]["answer"]}
    assert json.loads(sgfs("agent", "abstain").stdout) == {"answer": "not possible"}
    assert "no question 1-nothing-1" in one_line_error(sgfs("agent", "oracle", "--id", "1-nothing-1", "--per-type", 1))
    monkeypatch.delenv("SGFS_QUESTION_ID")
    assert "SGFS_QUESTION_ID" in one_line_error(sgfs("agent", "random"))


@pytest.mark.fuse
def test_every_variant_is_asked_and_compared(tmp_path: Path, questions: Path) -> None:
    require_fuse()
    small = tmp_path / "q2.jsonl"
    small.write_text("\n".join(questions.read_text().splitlines()[4:6]) + "\n")
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    # A random name: $$ is the same small number in every sandbox (each has its own PID namespace).
    unique = '$(od -An -N8 -tx1 /dev/urandom | tr -d " \\n")'
    agent = write_agent(tmp_path / "a.sh", f'cat > "{prompts}/$SGFS_QUESTION_ID.{unique}"\necho "not possible"\n')
    result = run_eval(
        "--questions", small, "--agent", agent, "--out", tmp_path / "run", "--variant", "all", "-j", 3,
        "--sandbox-bind-rw", prompts,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    records = records_of(tmp_path / "run")
    assert sorted((r["id"], r["variant"]) for r in records) == sorted(
        (json.loads(line)["id"], v) for line in small.read_text().splitlines() for v in VARIANTS
    )
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["variants"] == list(VARIANTS) and "krippendorff_alpha" in summary
    texts = [p.read_text() for p in prompts.iterdir()]
    assert len(set(texts)) == 8 and all("{path}" not in t and '{"answer": 42}' in t for t in texts)
    assert (tmp_path / "run" / "report" / "abstention.png").is_file()


# -- agents as people write them, and agents that try to hang the harness ----------------------------------
def test_relative_paths_in_the_command_are_the_callers(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "agent").write_text("")
    (tmp_path / "notes.txt").write_text("")
    line = "A=bin/agent ./bin/agent --in bin/x missing/y 'bin/agent' ./notes.txt {prompt_file} /abs/p && ./bin/agent"
    resolved = resolve_relative(line, str(tmp_path))
    agent = shlex.quote(str(tmp_path / "bin" / "agent"))
    assert resolved == (
        f"A={agent} {agent} --in bin/x missing/y 'bin/agent' {shlex.quote(str(tmp_path / 'notes.txt'))} "
        f"{{prompt_file}} /abs/p && {agent}"
    )


@pytest.mark.fuse
def test_relative_agent_program_and_script_run_from_the_callers_directory(tmp_path: Path, questions: Path) -> None:
    require_fuse()
    small = tmp_path / "q2.jsonl"
    small.write_text("\n".join(questions.read_text().splitlines()[:2]) + "\n")
    caller = tmp_path / "project"
    (caller / "scripts").mkdir(parents=True)
    write_agent(caller / "my-agent", 'test "$PWD" = "$SGFS_REPO" && cat "$1"\n')
    (caller / "scripts" / "answer.txt").write_text('{"answer": "not possible"}\n')
    (caller / "scripts" / "agent.py").write_text(
        "import os, sys\nassert os.getcwd() == os.environ['SGFS_REPO']\nprint('not possible')\n"
    )
    for index, agent in enumerate(("./my-agent scripts/answer.txt", f"{sys.executable} scripts/agent.py")):
        out = tmp_path / f"run{index}"
        result = subprocess.run(
            [*SGFS, "eval", "--questions", str(small), "--agent", agent, "--out", str(out), "--quiet", "--no-report"],
            cwd=caller, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        statuses = [(r["status"], r["answer"], r["stderr_tail"]) for r in records_of(out)]
        assert statuses == [("ok", "not possible", "")] * 2, statuses
        assert json.loads((out / "run.json").read_text())["agent"] == agent  # recorded as written
    assert not eval_mounts()


@pytest.mark.fuse
def test_a_run_where_no_agent_finishes_exits_1_and_junit_stays_valid(tmp_path: Path, questions: Path) -> None:
    """Crashes and timeouts only: the counts and exit 1. The agents' stderr holds colours and control
    characters, which XML 1.0 cannot carry: the JUnit file still parses."""
    require_fuse()
    lines = questions.read_text().splitlines()[:3]
    small = tmp_path / "q3.jsonl"
    small.write_text("\n".join(lines) + "\n")
    ids = [json.loads(line)["id"] for line in lines]
    agent = write_agent(
        tmp_path / "agent.sh",
        f"""printf '\\033[31mred\\033[0m \\001\\002\\013\\014 bell\\007 \\033]0;title\\007done\\n' >&2
case "$SGFS_QUESTION_ID" in
  {ids[0]}) sleep 300 ;;
  *) exit 3 ;;
esac
""",
    )
    junit = tmp_path / "junit.xml"
    result = run_eval("--questions", small, "--agent", agent, "--out", tmp_path / "run", "--timeout", 1,
                      "--junit", junit, "--min-accuracy", 0)  # fmt: skip
    assert result.returncode == 1, result.stderr
    last = result.stderr.splitlines()[-1]
    assert last.startswith("sgfs: error: no agent finished: 2 crash, 1 timeout of 3 items"), result.stderr
    assert (tmp_path / "run" / "report" / "report.html").is_file()
    failures = [case.find("failure") for case in ET.parse(junit).getroot().findall(".//testcase")]
    assert len(failures) == 3 and all(f is not None for f in failures)
    texts = [f.text or "" for f in failures if f is not None]
    assert all("red" in t and "done" in t and "\x1b" not in t and "\x01" not in t for t in texts), texts
    assert {f.get("type") for f in failures if f is not None} == {"crash", "timeout"}


def test_answer_file_that_is_not_a_regular_file_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "answer"
    os.mkfifo(fifo)
    outcome: list[BaseException | None] = []

    def read() -> None:
        try:
            read_answer(str(fifo), "")
        except BaseException as exc:
            outcome.append(exc)
        else:
            outcome.append(None)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(5)
    if reader.is_alive():  # unblock the reader so the test fails rather than hangs
        with open(fifo, "w"):
            pass
        reader.join(5)
    assert outcome and isinstance(outcome[0], AnswerFileError), outcome
    link = tmp_path / "link"
    (tmp_path / "secret").write_text('{"answer": 1}')
    link.symlink_to(tmp_path / "secret")
    with pytest.raises(AnswerFileError):
        read_answer(str(link), "")


def _processes_with(marker: str) -> list[int]:
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and marker in _cmdline(p)]


@pytest.mark.fuse
def test_fifo_answer_files_and_detached_children_cannot_outlast_the_timeout(tmp_path: Path, questions: Path) -> None:
    """An agent that makes its answer file a FIFO, or leaves a `setsid` child holding its stdout and stderr,
    is bounded by --timeout like any other, and leaves nothing running."""
    require_fuse()
    lines = questions.read_text().splitlines()[:4]
    small = tmp_path / "q4.jsonl"
    small.write_text("\n".join(lines) + "\n")
    ids = [json.loads(line)["id"] for line in lines]
    marker = f"{1000 + int(uuid.uuid4().int % 1000)}.{uuid.uuid4().int % 10**9:09d}"  # a unique `sleep` argument
    agent = write_agent(
        tmp_path / "agent.sh",
        f"""case "$SGFS_QUESTION_ID" in
  {ids[0]}) mkfifo "$SGFS_ANSWER_FILE" && echo 42 ;;
  {ids[1]}) mkfifo "$SGFS_ANSWER_FILE" && sleep 300 ;;
  {ids[2]}) setsid sleep {marker} & sleep 300 ;;
  *) setsid sleep {marker} & echo "not possible" ;;
esac
""",
    )
    out = tmp_path / "run"
    start = time.monotonic()
    try:
        result = run_eval("--questions", small, "--agent", agent, "--out", out, "--timeout", 2, "--no-report",
                          timeout=90)  # fmt: skip
        elapsed = time.monotonic() - start
        time.sleep(0.2)
        left = _processes_with(marker)
    finally:
        for pid in _processes_with(marker):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    assert result.returncode == 0, result.stderr
    by_id = {r["id"]: r for r in records_of(out)}
    assert [by_id[i]["status"] for i in ids] == ["crash", "timeout", "timeout", "ok"], by_id
    assert "not a regular file" in by_id[ids[0]]["stderr_tail"]
    assert all(by_id[i]["time_s"] < 5 for i in ids), [by_id[i]["time_s"] for i in ids]
    assert elapsed < 60
    assert not left, "a detached child of an agent survived its question"


# -- accuracy split by prior (the counterfactual world) ---------------------------------------------------
COUNTERFACTUAL_SEEDS = "1-5"


@pytest.fixture(scope="module")
def counterfactual_questions(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The questions `sgfs eval 1-5 --counterfactual` asks (written once, so the oracle reads them instead of
    generating its question again for each of the ~200 items)."""
    path = tmp_path_factory.mktemp("counterfactual") / "q.jsonl"
    result = sgfs("qa", COUNTERFACTUAL_SEEDS, "--counterfactual", "--out", path)
    assert result.returncode == 0, result.stderr
    return path


@pytest.mark.fuse
@pytest.mark.parametrize("agent", ["oracle", "abstain"])
def test_accuracy_by_prior_over_the_counterfactual_world(
    tmp_path: Path, counterfactual_questions: Path, agent: str
) -> None:
    """A real run in the counterfactual world: every record carries its question's prior, summary.json splits
    accuracy by it (``by_prior``) and the report shows the table. The oracle is right on both groups; an agent
    that abstains is wrong on every answerable one."""
    require_fuse()
    out = tmp_path / "run"
    command = f"sgfs agent oracle --questions {counterfactual_questions}" if agent == "oracle" else ABSTAIN
    result = run_eval(COUNTERFACTUAL_SEEDS, "--counterfactual", "--agent", command, "--out", out, "-j", 4)
    assert result.returncode == 0, result.stderr
    asked = {json.loads(line)["id"]: json.loads(line) for line in counterfactual_questions.read_text().splitlines()}
    records = records_of(out)
    assert {r["id"] for r in records} == set(asked)  # the eval generated the same questions as `sgfs qa`
    assert all(r["prior"] == asked[r["id"]]["prior"] for r in records)
    violating = [r for r in records if r["prior"] == "violating"]
    consistent = [r for r in records if r["prior"] == "consistent"]
    assert any(r["answerable"] for r in violating) and any(r["answerable"] for r in consistent)
    by_prior = json.loads((out / "summary.json").read_text())["by_prior"]
    assert set(by_prior) == {"consistent", "violating"}
    for name, group in (("consistent", consistent), ("violating", violating)):
        correct = sum(r["correct"] for r in group)
        assert by_prior[name] == {"n": len(group), "correct": correct, "accuracy": correct / len(group)}
        if agent == "oracle":
            assert by_prior[name]["accuracy"] == 1.0
        else:
            assert not any(r["correct"] for r in group if r["answerable"])
            assert all(r["correct"] for r in group if not r["answerable"])
    report = (out / "report" / "report.md").read_text()
    title = "Accuracy on questions consistent with / violating domain priors"
    assert f"### {title}" in report and f"<h3>{title}</h3>" in (out / "report" / "report.html").read_text()
    rows = {line.split(" | ")[0].strip("| "): line for line in report.splitlines() if line.startswith("| ")}
    assert rows["violating"].startswith(f"| violating | {len(violating)} |")
    assert rows["consistent"].startswith(f"| consistent | {len(consistent)} |")


def test_the_prior_table_is_shown_only_when_an_item_has_a_prior(tmp_path: Path) -> None:
    from sgfs.eval.report import PRIOR_TITLE, build_markdown
    from sgfs.eval.results import RunInfo

    def record(number: int, prior: str | None, correct: bool) -> ResultRecord:
        return ResultRecord.from_json(
            {"id": f"1-bivariate_statistic-{number}", "type": "bivariate_statistic", "category": "Data Analysis",
             "answerable": True, "correct": correct, "prior": prior, "status": "ok"}
        )  # fmt: skip

    plain = [record(1, None, True), record(2, None, False)]
    runs = [RunInfo("run", "agent", None)]
    assert PRIOR_TITLE not in build_markdown(plain, summarize_records(plain), runs, None)
    summary = summarize_records(plain)
    assert summary.grading["by_prior"] == {
        "consistent": {"n": 0, "correct": 0, "accuracy": None},
        "violating": {"n": 0, "correct": 0, "accuracy": None},
    }
    mixed = [*plain, record(3, "consistent", True), record(4, "violating", False), record(5, "violating", True)]
    summary = summarize_records(mixed)
    assert summary.grading["by_prior"] == {
        "consistent": {"n": 1, "correct": 1, "accuracy": 1.0},
        "violating": {"n": 2, "correct": 1, "accuracy": 0.5},
    }
    keys = list(summary.to_json())
    assert keys.index("by_prior") == keys.index("by_variant") + 1  # among the grader's splits
    markdown = build_markdown(mixed, summary, runs, None)
    assert f"### {PRIOR_TITLE}" in markdown
    assert "| violating | 2 | 2 | 1 | 50.0 % |" in markdown and "| consistent | 1 | 1 | 1 | 100.0 % |" in markdown
