"""The Inspect AI task end to end with Inspect's mock model driven by a script (tool calls, then an answer):
scoring, metrics, the log's token and tool-call counts, and the log turned into result records. No real model
is involved: every "model" output below is written by this test."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from qa.prior import default_table
from tests.helpers import repo

inspect_ai = pytest.importorskip("inspect_ai")
# Inspect's own retry helper warns about a tenacity deprecation on every model call: not ours to fix
pytestmark = pytest.mark.filterwarnings("ignore:The 'initial' parameter is deprecated:DeprecationWarning")

from inspect_ai.model import (  # noqa: E402
    ChatMessage,
    ChatMessageTool,
    ChatMessageUser,
    ModelOutput,
    ModelUsage,
    get_model,
)

from qa.generate import Options  # noqa: E402
from qa.records import QuestionRecord, expand_variants, generated_records, render  # noqa: E402
from qa.result_record import RECORD_KEYS, ResultRecord  # noqa: E402
from sgfs.agents.inspect_task.dataset import to_samples  # noqa: E402
from sgfs.agents.inspect_task.results import _status, records_from_log  # noqa: E402
from sgfs.errors import SgfsError  # noqa: E402

SEED = 34
MODEL = "mockllm/model"
ROWS_FILE = "yamada_aggregation=SKUstore/forecast_model=Prophet/horizon_wk=4.csv"
ROWS_CODE = f"import pandas as pd; print(len(pd.read_csv('{ROWS_FILE}')))"
# question id -> the tool calls the scripted model makes, in order, then its final text (None: it crashes;
# "{tool}": the text of the last tool result)
SCRIPT: dict[str, tuple[list[tuple[str, dict[str, Any]]], str | None]] = {
    "34-readme-1": (
        [("read_text_file", {"path": "34/nope.md"}), ("read_text_file", {"path": "34/README.md", "head": 5})],
        'The README exists. {"answer": "yes"}',
    ),
    "34-title-1": ([("list_directory", {"path": "34"})], '{"answer": "{title}"}'),
    "34-count_rows-1": ([("run_python_code", {"code": ROWS_CODE})], '{"answer": {tool}}'),
    "34-prefix-1": ([], '{"answer": "not possible"}'),
    "34-extension-1": ([], ""),
    "34-abstract-1": ([], None),
}


def generated(seed: int, per_type: int) -> list[QuestionRecord]:
    return generated_records([repo(seed)], Options(per_type=per_type, unanswerable=0.28))


def as_json(records: list[ResultRecord]) -> list[dict[str, Any]]:
    """The records as `sgfs report` reads them from a results file."""
    return [record.to_json() for record in records]


def usage(messages: list[ChatMessage]) -> ModelUsage:
    """Token counts the script reports: 10 per input message in, 7 out (set, so nothing is estimated)."""
    return ModelUsage(input_tokens=10 * len(messages), output_tokens=7, total_tokens=10 * len(messages) + 7)


def scripted_model() -> Any:
    questions = {
        sample.input: str(sample.id) for sample in to_samples(expand_variants(generated(SEED, 1), ["template"]))
    }

    def respond(messages: list[ChatMessage], tools: Any, tool_choice: Any, config: Any) -> ModelOutput:
        question = next(m.text for m in messages if isinstance(m, ChatMessageUser))
        calls, answer = SCRIPT[questions[question]]
        step = sum(isinstance(m, ChatMessageTool) for m in messages)
        if step < len(calls):
            output = ModelOutput.for_tool_call(MODEL, calls[step][0], calls[step][1], tool_call_id=f"call-{step}")
        elif answer is None:
            raise RuntimeError("scripted failure")
        else:
            last_tool = [m.text for m in messages if isinstance(m, ChatMessageTool)][-1:] or [""]
            answer = answer.replace("{title}", repo(SEED).spec.project.title)
            output = ModelOutput.from_content(MODEL, answer.replace("{tool}", last_tool[0].strip()))
        output.usage = usage(messages)
        return output

    return get_model(MODEL, custom_outputs=respond)


@pytest.fixture(scope="module")
def eval_log(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from inspect_ai import eval as inspect_eval

    from sgfs.agents.inspect_task.task import infinite_science

    log_dir = tmp_path_factory.mktemp("logs")
    logs = inspect_eval(
        infinite_science(seeds=SEED, per_type=1),
        model=scripted_model(),
        sample_id=list(SCRIPT),
        log_dir=str(log_dir),
        display="none",
        fail_on_error=False,
    )
    assert len(logs) == 1
    return logs[0]


def test_scores_and_metrics(eval_log: Any) -> None:
    assert eval_log.status == "success", eval_log.error
    metrics = {name: m.value for name, m in eval_log.results.scores[0].metrics.items()}
    # scored: readme, title, count_rows right, prefix (no such directory) abstained; extension empty; abstract crashed
    assert metrics["accuracy"] == pytest.approx(4 / 5)
    assert metrics["Repository Metadata"] == 1.0 and metrics["File Metadata"] == pytest.approx(1 / 2)
    assert metrics["Directory Traversal"] == 1.0
    assert metrics["readme"] == 1.0 and metrics["prefix"] == 1.0 and metrics["count_rows"] == 1.0
    assert metrics["abstention_precision"] == 1.0 and metrics["abstention_recall"] == 1.0


def test_log_counts_tokens_and_tool_calls(eval_log: Any) -> None:
    samples = {sample.id: sample for sample in eval_log.samples}
    readme = samples["34-readme-1"]
    # system + user, then one more assistant + tool pair per call: 2, 4, 6 input messages
    assert readme.model_usage[MODEL].input_tokens == 10 * (2 + 4 + 6)
    assert readme.model_usage[MODEL].output_tokens == 7 * 3
    tool_messages = [m for m in readme.messages if isinstance(m, ChatMessageTool)]
    assert "no such file or directory: 34/nope.md" in tool_messages[0].error.message
    assert tool_messages[1].text == "".join(repo(SEED).read("README.md").decode().splitlines(keepends=True)[:5])
    rows = next(m for m in samples["34-count_rows-1"].messages if isinstance(m, ChatMessageTool))
    assert rows.text.strip() == str(repo(SEED).read(ROWS_FILE).count(b"\n") - 1)
    assert samples["34-abstract-1"].error is not None


def test_records_from_the_log(eval_log: Any) -> None:
    records = {r["id"]: r for r in as_json(records_from_log(eval_log.location))}
    assert set(records) == set(SCRIPT)
    # The records of both harnesses have the same keys, so that one report reads both.
    assert all(set(r) == set(RECORD_KEYS) for r in records.values())
    readme = records["34-readme-1"]
    assert readme | {"time_s": None} == {
        "id": "34-readme-1",
        "seed": SEED,
        "type": "readme",
        "category": "Repository Metadata",
        "answer_kind": "yes_no",
        "variant": "template",
        "answerable": True,
        "answer": "yes",
        "correct": True,
        "abstained": False,
        "status": "ok",
        "time_s": None,
        "usage": {"input_tokens": 120, "output_tokens": 21},
        "tool_calls": 2,
        "files_read": ["README.md"],  # the failed read of nope.md is not a read
        "evidence_read": ["README.md"],
        "evidence_recall": 1.0,
        "repeat": 1,
        "truth": "yes",
        "prior": None,  # the readme question tests no relation of the study design
        # the floor agents on this item: abstaining is wrong; the prior policy is right when its readme answer is
        "floors": {"abstain": False, "prior": default_table().answer("readme") == "yes"},
    }
    assert isinstance(readme["time_s"], float)
    title = records["34-title-1"]
    assert title["correct"] and not title["abstained"] and title["answerable"] and title["files_read"] == []
    assert title["evidence_recall"] == 0.0
    prefix = records["34-prefix-1"]
    assert prefix["abstained"] and prefix["correct"] and not prefix["answerable"] and prefix["truth"] == "not possible"
    rows = records["34-count_rows-1"]
    assert rows["correct"] and rows["answer"] == "142" and rows["tool_calls"] == 1
    # what the Python code opened, as its audit hook saw it
    assert rows["files_read"] == [ROWS_FILE] and rows["evidence_recall"] == 1.0
    assert records["34-extension-1"]["status"] == "no_answer"
    crashed = records["34-abstract-1"]
    assert crashed["status"] == "crash" and crashed["correct"] is None
    json.dumps(list(records.values()))  # plain JSON


ENTRY_POINT_SCRIPT = """
import sys
from inspect_ai import eval
from inspect_ai.model import ModelOutput, ModelUsage, get_model

def answer(messages, tools, tool_choice, config):
    output = ModelOutput.from_content("mockllm/model", '{"answer": "yes"}')
    output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
    return output

model = get_model("mockllm/model", custom_outputs=answer)
log = eval("sgfs/infinite_science", task_args={"seeds": 34, "per_type": 1}, model=model,
           sample_id=["34-readme-1"], log_dir=sys.argv[1], display="none")[0]
print(log.eval.task, log.results.scores[0].metrics["accuracy"].value)
"""


def test_report_reads_the_inspect_log(eval_log: Any, tmp_path: Path) -> None:
    """One report format for both harnesses: `sgfs report` on an Inspect log, with the gate."""
    from sgfs.cli import main

    def sgfs(*args: str) -> int:
        try:
            main(list(args))
        except SystemExit as exc:
            return int(exc.code or 0)
        return 0

    log = eval_log.location
    records = as_json(records_from_log(log))
    accuracy = sum(bool(r["correct"]) for r in records) / len(records)
    assert sgfs("report", log, "--out", str(tmp_path / "report"), "--min-accuracy", f"{accuracy - 0.01:.2f}") == 0
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert f"{len(records)}" in markdown and "inspect_ai" in markdown
    html = (tmp_path / "report" / "report.html").read_text()
    images = re.findall(r'href="([^"]+\.png)"', html)
    assert images and all((tmp_path / "report" / name).is_file() for name in images)
    assert sgfs("report", log, "--out", str(tmp_path / "gated"), "--min-accuracy", f"{accuracy + 0.01:.2f}") == 1
    (tmp_path / "broken.eval").write_bytes(b"not a log")
    assert sgfs("report", str(tmp_path / "broken.eval"), "--out", str(tmp_path / "x")) == 2


def test_task_is_found_by_name(tmp_path: Path) -> None:
    """``sgfs/infinite_science`` resolves through the package's ``inspect_ai`` entry point. Run elsewhere than
    the source tree: there, a build's ``sgfs.egg-info`` shadows the installed metadata Inspect reads."""
    import subprocess
    import sys

    command = [sys.executable, "-c", ENTRY_POINT_SCRIPT, str(tmp_path / "logs")]
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["sgfs/infinite_science", "1.0"]


def test_status_of_a_timed_out_sample() -> None:
    limited = SimpleNamespace(error=None, limit=SimpleNamespace(type="time"))
    assert _status(limited, "") == "timeout"  # type: ignore[arg-type]
    messages = SimpleNamespace(error=None, limit=SimpleNamespace(type="message"))
    assert _status(messages, "") == "no_answer" and _status(messages, "42") == "ok"  # type: ignore[arg-type]


def test_samples_and_parameters() -> None:
    from sgfs.agents.inspect_task.task import infinite_science

    records = generated(SEED, 1)
    samples = to_samples(expand_variants(records, ["template", "paraphrase_2"]))
    assert len(samples) == 2 * len(records)
    rows = next(s for s in samples if s.id == "34-count_rows-1:paraphrase_2")
    assert ROWS_FILE in str(rows.input) and "{path}" not in str(rows.input)
    assert rows.metadata is not None and rows.metadata["record"]["answer"] == 142
    assert render("{path} and {other}", {"path": "a/b"}) == "a/b and {other}"
    assert len(infinite_science(seeds="34", variant="all", per_type=1).dataset) == 4 * len(records)
    for arguments, message in (
        ({"tools": "nope"}, "tools must be one of"),
        ({"variant": "paraphrase_9"}, "variant must be one of"),
        ({"seeds": "x"}, "invalid seed"),
        ({"questions": "/nonexistent/q.jsonl"}, "cannot read questions file"),
    ):
        with pytest.raises(SgfsError, match=message):
            infinite_science(**arguments)


def test_questions_file(tmp_path: Path) -> None:
    from sgfs.agents.inspect_task.task import infinite_science

    records = [record.question.to_dict() for record in generated(SEED, 1)[:3]]
    path = tmp_path / "q.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    task = infinite_science(questions=str(path))
    assert [s.id for s in task.dataset] == [r["id"] for r in records]


@pytest.mark.fuse
def test_shell_tools_on_a_real_mount(tmp_path: Path) -> None:
    """``tools=shell``: bash and Python on a FUSE mount of the repository, unmounted after the sample."""
    from inspect_ai import eval as inspect_eval

    from sgfs.agents.inspect_task.task import infinite_science
    from tests.helpers.mounts import require_fuse

    require_fuse()
    calls = [
        ("bash", {"command": "head -n 3 README.md; pwd"}),
        ("bash", {"command": "touch new.txt"}),
        ("run_python_code", {"code": "import os; print(sorted(os.listdir('.'))[0])"}),
    ]

    def respond(messages: list[ChatMessage], tools: Any, tool_choice: Any, config: Any) -> ModelOutput:
        assert sorted(t.name for t in tools) == ["bash", "run_python_code"]
        step = sum(isinstance(m, ChatMessageTool) for m in messages)
        if step < len(calls):
            output = ModelOutput.for_tool_call(MODEL, calls[step][0], calls[step][1], tool_call_id=f"call-{step}")
        else:
            output = ModelOutput.from_content(MODEL, '{"answer": "yes"}')
        output.usage = usage(messages)
        return output

    log = inspect_eval(
        infinite_science(seeds=SEED, per_type=1, tools="shell"),
        model=get_model(MODEL, custom_outputs=respond),
        sample_id=["34-readme-1"],
        log_dir=str(tmp_path / "logs"),
        display="none",
    )[0]
    assert log.status == "success", log.error
    tools = [m.text for m in log.samples[0].messages if isinstance(m, ChatMessageTool)]
    head, _, cwd = tools[0].rpartition("\n")
    assert head + "\n" == "".join(repo(SEED).read("README.md").decode().splitlines(keepends=True)[:3])
    assert cwd.endswith(f"/{SEED}")
    assert "Read-only file system" in tools[1]
    assert tools[2].strip() == "README.md"
    assert log.results.scores[0].metrics["accuracy"].value == 1.0
    mounts = Path("/proc/mounts").read_text()
    assert cwd.rpartition("/")[0] not in mounts  # unmounted after the sample


# -- the counterfactual world -----------------------------------------------------------------------------
COUNTERFACTUAL_SEED = 12  # a text-format repository whose counterfactual world turns relations its questions ask about


def test_counterfactual_task_asks_the_counterfactual_worlds_questions() -> None:
    """``counterfactual=True``: the samples are `sgfs qa --counterfactual`'s questions with their answers, and the
    task's metadata names the world (so `sgfs report` keeps worlds apart)."""
    from sgfs.agents.inspect_task.task import infinite_science
    from tests.helpers.commands import cli

    seed = COUNTERFACTUAL_SEED
    lines = cli("qa", seed, "--counterfactual", "--out", "-").stdout.splitlines()
    expected = {record["id"]: record for record in map(json.loads, lines)}
    task = infinite_science(seeds=seed, counterfactual=True)
    assert task.metadata is not None and task.metadata["counterfactual"] is True
    samples = {str(sample.id): sample for sample in task.dataset}
    assert set(samples) == set(expected)
    for question_id, sample in samples.items():
        assert sample.target == json.dumps(expected[question_id]["answer"]), question_id
        assert sample.metadata is not None and sample.metadata["record"]["counterfactual"] is True
    assert any(record["prior"] == "violating" for record in expected.values())
    plain = {str(sample.id): sample.target for sample in infinite_science(seeds=seed).dataset}
    assert any(plain.get(question_id) not in (None, sample.target) for question_id, sample in samples.items())
    assert infinite_science(seeds=seed).metadata["counterfactual"] is False  # type: ignore[index]


def test_counterfactual_task_refuses_questions_of_another_world(tmp_path: Path) -> None:
    from sgfs.agents.inspect_task.task import infinite_science

    path = tmp_path / "q.jsonl"
    path.write_text("".join(json.dumps(r.question.to_dict()) + "\n" for r in generated(SEED, 1)[:2]))
    with pytest.raises(SgfsError, match=r"made in the plain world: drop -T counterfactual=true$"):
        infinite_science(questions=str(path), counterfactual=True)
    with pytest.raises(SgfsError, match="counterfactual must be true or false, got 'yes'"):
        infinite_science(seeds=SEED, counterfactual="yes")  # type: ignore[arg-type]


def is_text(data: bytes) -> bool:
    try:
        data.decode()
    except UnicodeDecodeError:
        return False
    return True


def test_counterfactual_task_serves_the_counterfactual_bytes(tmp_path: Path) -> None:
    """The file tools of a counterfactual task read the counterfactual world's files; the log's records carry
    each question's prior, and `sgfs report` shows the split and names the world."""
    from inspect_ai import eval as inspect_eval

    import generators
    from generators.builders.procedural import build_spec
    from generators.repository import Repository
    from generators.spec import World
    from sgfs.agents.inspect_task.task import infinite_science
    from sgfs.eval.results import load_results
    from tests.helpers.commands import cli

    seed = COUNTERFACTUAL_SEED
    world, plain = Repository(build_spec(seed, world=World(counterfactual=True))), generators.repository(seed)
    changed = next(p for p in world.file_paths() if world.read(p) != plain.read(p) and is_text(world.read(p)))
    task = infinite_science(seeds=seed, counterfactual=True)
    violating = next(
        s
        for s in task.dataset
        if s.metadata and s.metadata["record"]["prior"] == "violating" and s.metadata["answerable"]
    )

    def respond(messages: list[ChatMessage], tools: Any, tool_choice: Any, config: Any) -> ModelOutput:
        if not any(isinstance(m, ChatMessageTool) for m in messages):
            output = ModelOutput.for_tool_call(MODEL, "read_text_file", {"path": f"{seed}/{changed}"}, "call-0")
        else:
            output = ModelOutput.from_content(MODEL, json.dumps({"answer": json.loads(str(violating.target))}))
        output.usage = usage(messages)
        return output

    log = inspect_eval(
        task,
        model=get_model(MODEL, custom_outputs=respond),
        sample_id=[str(violating.id)],
        log_dir=str(tmp_path / "logs"),
        display="none",
    )[0]
    assert log.status == "success", log.error
    read = [m.text for m in log.samples[0].messages if isinstance(m, ChatMessageTool)]
    assert read == [world.read(changed).decode()] and read[0] != plain.read(changed).decode()
    assert log.results.scores[0].metrics["accuracy"].value == 1.0
    [record] = records_from_log(log.location)
    assert record.prior == "violating" and record.correct
    loaded = load_results([log.location])
    assert [run.counterfactual for run in loaded.runs] == [True]
    assert cli("report", log.location, "--out", tmp_path / "report").returncode == 0
    report = (tmp_path / "report" / "report.md").read_text()
    assert "Accuracy on questions consistent with / violating domain priors" in report
    assert "| violating | 1 | 1 | 1 | 100.0 % |" in report
