"""`sgfs eval --ambiguous` (issue 25): twin pairs in the conditions full, ambig and ask, the `$SGFS_ASK`
clarification channel (in the sandbox and outside it), the records and metrics of a run, the reference agents
that ask (oracle) and that take another reading (literal), and bad input.

The runs here are real: `sgfs eval` on its private, audited mount, over twins made by `sgfs qa --ambiguous`.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import threading
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from qa.clarify import NOTHING_OPEN, ONE_QUESTION, REFUSAL, Oracle
from qa.model import Ambiguity, Decoy, Question
from qa.result_record import CONDITION_KEYS, ResultRecord
from sgfs.eval.agents import clarifying_question, literal_answer, reading_answer
from sgfs.eval.channel import SOCKET_NAME, Channel
from sgfs.eval.protocol import ASK_INSTRUCTIONS, prompt
from sgfs.eval.results import read_json_lines
from sgfs.eval.summary import calibration
from sgfs.mount.control import mount_table
from tests.helpers.commands import one_line_error, sgfs
from tests.helpers.mounts import require_fuse

SEED = 1


def eval_mounts() -> list[str]:
    private = os.path.join(os.environ["TMPDIR"], "sgfs-eval-")
    return [point for point, kind in mount_table().items() if kind == "fuse.sgfs" and point.startswith(private)]


def run_eval(*args: object, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    result = sgfs("eval", *args, "--quiet", timeout=timeout)
    assert not eval_mounts(), "a private mount was left behind"
    return result


def records_of(directory: Path) -> list[dict[str, Any]]:
    return read_json_lines(directory / "results.jsonl")


def summary_of(directory: Path) -> dict[str, Any]:
    summary: dict[str, Any] = json.loads((directory / "summary.json").read_text())
    return summary


@pytest.fixture(scope="module")
def twins(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The questions of one repository with their ambiguous twins."""
    path = tmp_path_factory.mktemp("twins") / "q.jsonl"
    result = sgfs("qa", SEED, "--per-type", 1, "--ambiguous", "--out", path, timeout=300)
    assert result.returncode == 0, result.stderr
    return path


def twin_records(path: Path) -> dict[str, dict[str, Any]]:
    """The twins of a questions file, by id."""
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return {r["id"]: r for r in records if "ambiguity" in r}


@pytest.fixture(autouse=True)
def agent_path(monkeypatch: pytest.MonkeyPatch, sgfs_bin: Path, tmp_path: Path) -> None:
    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))  # where the runs' private mounts go
    monkeypatch.setenv("PATH", str(sgfs_bin) + os.pathsep + os.environ.get("PATH", ""))
    monkeypatch.delenv("SGFS_ASK", raising=False)


def write_agent(path: Path, body: str) -> str:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


# -- pure parts ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("ask", "full", "expected"),
    # Ambig-DS, Table 13: ask rate on ambiguous tasks / on full tasks (%) and the calibration score.
    [(100, 0, 1.00), (95, 95, 0.10), (79, 87, 0.22), (16, 5, 0.27), (0, 0, 0.0), (0, 40, 0.0), (0, 100, 0.0)],
)
def test_calibration_reproduces_table_13(ask: int, full: int, expected: float) -> None:
    score = calibration(ask / 100, full / 100)
    assert score is not None and round(score, 2) == expected


def test_calibration_is_undefined_without_a_rate() -> None:
    assert calibration(None, 0.0) is None and calibration(1.0, None) is None


AMBIGUITY = Ambiguity(
    kind="objective",
    decision="statistic",
    full_id="7-univariate_single_file-1",
    open="the typical value",
    intended="the mean (arithmetic average)",
    clarification='By "the typical value" the question means the mean (arithmetic average).',
    keywords=["typical", "mean", "median", "statistic"],
    decoy_answers=[Decoy("the median", 4.5, {}), Decoy("the mode", 4, {})],
)
TWIN = Question(
    id="7-univariate_single_file-1-ambig",
    seed=7,
    category="Univariate",
    type="univariate_single_file",
    question="What is the typical value of `x` in `a.csv`?",
    variables={},
    answer=5.25,
    answer_kind="continuous",
    choices=None,
    sig_figs=3,
    answerable=True,
    unanswerable_reason=None,
    evidence=[],
    query={},
    ambiguity=AMBIGUITY,
)


def test_the_oracle_answers_the_reading_the_reply_names() -> None:
    assert clarifying_question(TWIN) == "Which reading of 'the typical value' do you mean?"
    assert reading_answer(TWIN, AMBIGUITY.clarification) == 5.25
    assert reading_answer(TWIN, "It means THE MEDIAN of x.") == 4.5
    assert reading_answer(TWIN, "the mode, not the mean (arithmetic average)") == 4
    assert reading_answer(TWIN, REFUSAL) == 5.25  # no reading named: the ceiling answers the intended one


def test_the_literal_agent_takes_the_first_other_reading(tmp_path: Path) -> None:
    assert literal_answer(TWIN, tmp_path) == 4.5
    full = Question(**{**TWIN.__dict__, "id": AMBIGUITY.full_id, "ambiguity": None})
    assert literal_answer(full, tmp_path) == 5.25


def test_the_prompt_tells_of_the_channel_only_where_it_exists() -> None:
    assert ASK_INSTRUCTIONS in prompt("Q?", channel=True) and "$SGFS_ASK" in prompt("Q?", channel=True)
    assert "SGFS_ASK" not in prompt("Q?") and "clarifying" not in prompt("Q?")


def test_result_records_keep_the_exchange_and_old_records_read() -> None:
    from qa.clarify import Exchange
    from qa.grading import parse_question

    graded = parse_question(json.loads(json.dumps(TWIN.to_dict()), parse_float=Decimal, parse_int=Decimal), "twin")
    common: dict[str, Any] = {
        "answer": "4.5",
        "correct": False,
        "abstained": False,
        "status": "ok",
        "time_s": 1.0,
        "usage": None,
        "tool_calls": None,
        "files_read": None,
    }
    exchange = Exchange(True, "which typical value?", AMBIGUITY.clarification)
    record = ResultRecord.of(
        TWIN, "template", **common, graded=graded, condition="ask", exchange=exchange, graded_answer="4.5"
    )
    assert (record.pair, record.asked, record.wrong_target) == (AMBIGUITY.full_id, True, True)
    written = record.to_json()
    assert list(written)[-len(CONDITION_KEYS) :] == list(CONDITION_KEYS)
    assert ResultRecord.from_json(json.loads(json.dumps(written))) == record
    assert record.unit == (TWIN.id, "template", 1, "ask")
    right = ResultRecord.of(TWIN, "template", **common, graded=graded, condition="ambig", graded_answer="5.25")
    assert right.wrong_target is False and right.asked is False and right.ask_text is None
    plain = ResultRecord.of(TWIN, "template", **common, graded=graded)
    assert not set(CONDITION_KEYS) & set(plain.to_json())  # a run without conditions writes what it did before
    old = ResultRecord.from_json({"id": "q", "type": "t", "category": "c", "answerable": True, "correct": True})
    assert (old.condition, old.pair, old.asked, old.wrong_target) == (None, None, None, None)
    assert old.unit == ("q", "template", 1, None)
    with pytest.raises(ValueError, match="condition"):
        ResultRecord.from_json({**written, "condition": "bogus"})


def ask(command: str, *question: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([command, *question], capture_output=True, text=True, timeout=60, check=False)


def test_the_channel_answers_once_and_never_hangs(tmp_path: Path) -> None:
    oracle = Oracle(AMBIGUITY)
    with Channel(oracle, tmp_path) as channel:
        usage = ask(channel.command)
        assert usage.returncode == 2 and "usage" in usage.stderr and not usage.stdout
        # A client that connects and never writes holds the channel for a bounded time only.
        import socket

        silent = socket.socket(socket.AF_UNIX)
        silent.connect(str(tmp_path / SOCKET_NAME))
        first = ask(channel.command, "Which", "typical value?")
        assert first.returncode == 0 and first.stdout == AMBIGUITY.clarification + "\n"
        assert ask(channel.command, "the mean?").stdout.strip() == ONE_QUESTION
        silent.close()
    assert oracle.exchange.ask_text == "Which typical value?" and oracle.exchange.asked
    assert not (tmp_path / SOCKET_NAME).exists()
    gone = ask(channel.command, "anyone?")
    assert gone.returncode == 1 and "cannot be reached" in gone.stderr


def test_closing_the_channel_is_bounded_with_a_client_connected(tmp_path: Path) -> None:
    import socket

    channel = Channel(Oracle(None), tmp_path).__enter__()
    silent = socket.socket(socket.AF_UNIX)
    silent.connect(str(tmp_path / SOCKET_NAME))
    time.sleep(0.3)  # the server is now reading from the silent client
    started = time.monotonic()
    closing = threading.Thread(target=channel.__exit__, args=(None, None, None))
    closing.start()
    closing.join(30)
    silent.close()
    assert not closing.is_alive() and time.monotonic() - started < 15


def test_a_deep_scratch_directory_still_gets_a_channel(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 100) / ("e" * 100)
    deep.mkdir(parents=True)
    assert len(os.fsencode(str(deep / SOCKET_NAME))) > 108
    with Channel(Oracle(None), deep) as channel:
        assert ask(channel.command, "anything open?").stdout.strip() == NOTHING_OPEN


# -- bad input -------------------------------------------------------------------------------------------
def test_bad_conditions_and_files_without_twins_are_one_line(tmp_path: Path, twins: Path) -> None:
    out = tmp_path / "run"
    common = ("--agent", "sgfs agent literal", "--out", out)
    assert "--conditions" in one_line_error(
        run_eval("--questions", twins, "--ambiguous", "--conditions", "bogus", *common)
    )
    assert "--conditions" in one_line_error(run_eval("--questions", twins, "--ambiguous", "--conditions", "", *common))
    assert "--ambiguous" in one_line_error(run_eval("--questions", twins, "--conditions", "full", *common))
    lines = twins.read_text().splitlines()
    plain = tmp_path / "plain.jsonl"
    plain.write_text("\n".join(line for line in lines if '"ambiguity"' not in line) + "\n")
    assert "no ambiguous twins" in one_line_error(run_eval("--questions", plain, "--ambiguous", *common))
    orphans = tmp_path / "orphans.jsonl"
    orphans.write_text("\n".join(line for line in lines if '"ambiguity"' in line) + "\n")
    assert "full twin" in one_line_error(run_eval("--questions", orphans, "--ambiguous", *common))
    assert not out.exists()


# -- runs ------------------------------------------------------------------------------------------------
def test_the_oracle_scores_on_ask_what_it_scores_on_full(tmp_path: Path) -> None:
    """Generated from the seed (the agent regenerates each twin by id): it asks on every ask item, never on a
    full one, and answers the reading the reply names."""
    require_fuse()
    out = tmp_path / "oracle"
    result = run_eval(SEED, "--per-type", 1, "--ambiguous", "--agent", "sgfs agent oracle --per-type 1", "--out", out)
    assert result.returncode == 0, result.stderr
    records = records_of(out)
    by = {c: [r for r in records if r["condition"] == c] for c in ("full", "ambig", "ask")}
    assert by["full"] and len(by["full"]) == len(by["ambig"]) == len(by["ask"])
    assert all(r["correct"] for r in records)
    assert all(r["asked"] and r["ask_reply"] and r["ask_text"].startswith("Which reading") for r in by["ask"])
    assert not any(r["asked"] for r in by["full"] + by["ambig"])
    assert {r["pair"] for r in by["ask"]} == {r["id"] for r in by["full"]} == {r["pair"] for r in by["full"]}
    summary = summary_of(out)
    assert summary["by_condition"]["full"]["accuracy"] == summary["by_condition"]["ask"]["accuracy"] == 1.0
    assert summary["ask_rate"] == {"full": 0.0, "ambig": None, "ask": 1.0}
    assert summary["wrong_target_rate"] == {"full": None, "ambig": 0.0, "ask": 0.0}
    assert summary["calibration"] == 1.0
    assert summary["condition_differences"]["ask-ambig"]["difference"] == 0.0
    assert json.loads((out / "run.json").read_text())["conditions"] == ["full", "ambig", "ask"]
    report = (out / "report" / "report.md").read_text()
    assert "## Ambiguity and clarification" in report and "Calibration of asking: 1.00" in report


def test_the_literal_agent_takes_the_wrong_target_on_every_ambiguous_twin(tmp_path: Path, twins: Path) -> None:
    require_fuse()
    out = tmp_path / "literal"
    result = run_eval("--questions", twins, "--ambiguous", "--agent", f"sgfs agent literal --questions {twins}",
                      "--out", out)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "wrong target ambig 1.000" in result.stderr
    summary = summary_of(out)
    assert summary["wrong_target_rate"] == {"full": None, "ambig": 1.0, "ask": 1.0}
    assert summary["ask_rate"] == {"full": 0.0, "ambig": None, "ask": 0.0} and summary["calibration"] == 0.0
    assert summary["by_condition"]["full"]["accuracy"] == 1.0 and summary["by_condition"]["ambig"]["accuracy"] == 0.0
    difference = summary["condition_differences"]["ambig-full"]
    assert difference["difference"] == -1.0 and difference["pairs"] == len(twin_records(twins))
    assert not any(r["asked"] for r in records_of(out))
    # sgfs report on the run directory shows the same.
    report = sgfs("report", out, "--out", tmp_path / "report")
    assert report.returncode == 0, report.stderr
    assert "| ambig | ambiguous twin, no channel |" in (tmp_path / "report" / "report.md").read_text()


def test_over_asking_a_second_question_and_no_channel_in_ambig(tmp_path: Path, twins: Path) -> None:
    """A sandboxed shell agent that always asks "hello", then asks again, and reports what it saw: asking on
    full items is counted, the reply there is the fixed text, the second question is refused, and in ambig there
    is neither $SGFS_ASK nor a word of it in the prompt."""
    require_fuse()
    agent = write_agent(
        tmp_path / "asker.sh",
        'first=$("$SGFS_ASK" hello 2>/dev/null)\n'
        'second=$("$SGFS_ASK" "which one?" 2>/dev/null)\n'
        'told=$(grep -c SGFS_ASK "$SGFS_PROMPT_FILE")\n'
        'printf \'%s|%s|%s|%s\\n\' "${SGFS_ASK:-none}" "$told" "$first" "$second" > "$SGFS_ANSWER_FILE"\n',
    )
    out = tmp_path / "asker"
    result = run_eval("--questions", twins, "--ambiguous", "--conditions", "full,ambig", "--agent", agent,
                      "--out", out)  # fmt: skip
    assert result.returncode == 0, result.stderr
    records = records_of(out)
    assert {r["condition"] for r in records} == {"full", "ambig"}
    for record in records:
        channel, told, first, second = record["answer"].split("|")
        if record["condition"] == "full":
            assert channel.endswith("/ask") and told == "1"
            assert (first, second) == (NOTHING_OPEN, ONE_QUESTION)
            assert (record["asked"], record["ask_text"], record["ask_reply"]) == (True, "hello", NOTHING_OPEN)
        else:
            assert (channel, told, first, second) == ("none", "0", "", "")
            assert (record["asked"], record["ask_text"], record["ask_reply"]) == (False, None, None)
    summary = summary_of(out)
    assert summary["ask_rate"] == {"full": 1.0, "ambig": None, "ask": None} and summary["calibration"] is None
    assert "ask" not in summary["by_condition"]


# Connects to the Unix socket named by its argument (from its directory: the path may be too long for an address),
# sends one question and prints the reply.
RAW_CLIENT = (
    "import os, socket, sys; os.chdir(os.path.dirname(sys.argv[1])); c = socket.socket(socket.AF_UNIX); "
    "c.settimeout(3); c.connect(os.path.basename(sys.argv[1])); c.sendall(b'Which statistic or file is meant?'); "
    "c.shutdown(socket.SHUT_WR); print(c.recv(65536).decode())"
)


def test_attack_no_channel_in_ambig_and_one_question_past_the_client(tmp_path: Path, twins: Path) -> None:
    """Attacks that must fail, by sandboxed agents running side by side (-j 4): in ambig, an agent searches the
    whole visible filesystem for any Unix socket (another item's channel) and asks through every one it finds; in
    ask, an agent skips $SGFS_ASK and speaks to its channel's socket directly, twice, to get a second answer."""
    require_fuse()
    python = shlex.quote(sys.executable)
    agent = write_agent(
        tmp_path / "attacker.sh",
        f"client={shlex.quote(RAW_CLIENT)}\n"
        'if [ -z "${SGFS_ASK:-}" ]; then\n'
        "  got=none\n"
        '  for s in $(timeout 120 find / \\( -path /proc -o -path /sys -o -path /dev -o -path "$PWD" \\) -prune '
        "-o -type s -print 2>/dev/null); do\n"
        f'    r=$({python} -I -c "$client" "$s" 2>/dev/null) && got="reached $s: $r"\n'
        "  done\n"
        "else\n"
        '  sock="$(dirname "$SGFS_ASK")/ask.sock"\n'
        f'  {python} -I -c "$client" "$sock" > /dev/null\n'
        f'  got=$({python} -I -c "$client" "$sock")\n'
        "fi\n"
        'printf \'{"answer": "%s"}\\n\' "$(printf %s "$got" | tr -d \'"\\n\')" > "$SGFS_ANSWER_FILE"\n',
    )
    out = tmp_path / "attack"
    result = run_eval("--questions", twins, "--ambiguous", "--conditions", "ambig,ask", "-j", 4, "--agent", agent,
                      "--out", out)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert json.loads((out / "run.json").read_text())["sandbox"] is not None
    clarification = {qid: r["ambiguity"]["clarification"] for qid, r in twin_records(twins).items()}
    records = records_of(out)
    assert {r["condition"] for r in records} == {"ambig", "ask"}
    for record in records:
        if record["condition"] == "ambig":
            assert record["answer"] == "none", record  # no socket of any channel was reachable
            assert not record["asked"]
        else:
            assert record["answer"] == ONE_QUESTION, record  # the second question, past the client: refused
            assert record["asked"] and record["ask_reply"] == clarification[record["id"]]


def test_a_sandboxed_agent_gets_the_clarification(tmp_path: Path, twins: Path) -> None:
    """In the sandbox (the default) the channel works: a question in the twin's scope gets its clarification."""
    require_fuse()
    agent = write_agent(
        tmp_path / "clarify.sh",
        'reply=$("$SGFS_ASK" "Which file, spread, statistic or correlation coefficient is meant?")\n'
        'echo "{\\"answer\\": \\"$(echo "$reply" | tr -d \'"\')\\"}" > "$SGFS_ANSWER_FILE"\n',
    )
    out = tmp_path / "clarify"
    result = run_eval("--questions", twins, "--ambiguous", "--conditions", "ask", "--agent", agent, "--out", out)
    assert result.returncode == 0, result.stderr
    assert json.loads((out / "run.json").read_text())["sandbox"] is not None  # it ran sealed
    expected = {qid: r["ambiguity"]["clarification"] for qid, r in twin_records(twins).items()}
    records = records_of(out)
    assert {r["id"] for r in records} == set(expected)
    for record in records:
        assert record["asked"] and record["ask_reply"] == expected[record["id"]], record
        assert record["answer"] == expected[record["id"]].replace('"', "")


def test_shards_resume_and_merge_by_twin_pair(tmp_path: Path, twins: Path) -> None:
    """--shard keeps a twin pair in one shard; the shards merge in sgfs report; --resume with other conditions
    is refused."""
    require_fuse()
    agent = f"sgfs agent literal --questions {twins}"
    shards = []
    for index in (1, 2):
        out = tmp_path / f"shard{index}"
        result = run_eval("--questions", twins, "--ambiguous", "--conditions", "full,ambig", "--agent", agent,
                          "--out", out, "--shard", f"{index}/2")  # fmt: skip
        assert result.returncode in (0, 2), result.stderr  # a shard may hold no pair ("no questions in this shard")
        if result.returncode == 0:
            shards.append(out)
            pairs = {r["pair"] for r in records_of(out)}
            assert all({"full", "ambig"} == {r["condition"] for r in records_of(out) if r["pair"] == p} for p in pairs)
    merged = sgfs("report", *shards, "--out", tmp_path / "report")
    assert merged.returncode == 0, merged.stderr
    assert f"({2 * len(twin_records(twins))} items)" in merged.stderr
    again = run_eval("--questions", twins, "--ambiguous", "--agent", agent, "--out", shards[0], "--resume",
                     "--shard", shards[0].name[-1] + "/2")  # fmt: skip
    assert "--conditions full,ambig" in one_line_error(again)
