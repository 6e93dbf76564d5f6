"""The Inspect task with ``ambiguous=True``: the twin pairs of ``sgfs qa --ambiguous`` in the conditions full,
ambig and ask, the ``ask_clarification`` tool only where the channel exists, and the exchange and the wrong-target
check in the score and in the log's result records. The "model" is Inspect's mock model driven by a script."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from qa.clarify import CONDITIONS, NOTHING_OPEN, in_scope
from qa.generate import Options
from qa.records import QuestionRecord, expand_variants, generated_records
from tests.helpers import repo

inspect_ai = pytest.importorskip("inspect_ai")
pytestmark = pytest.mark.filterwarnings("ignore:The 'initial' parameter is deprecated:DeprecationWarning")

from inspect_ai.event import ModelEvent  # noqa: E402
from inspect_ai.model import (  # noqa: E402
    ChatMessage,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
    ModelOutput,
    ModelUsage,
    get_model,
)

from qa.result_record import CONDITION_KEYS, RECORD_KEYS, ResultRecord  # noqa: E402
from sgfs.agents.inspect_task.results import records_from_log  # noqa: E402
from sgfs.errors import SgfsError  # noqa: E402

SEED = 34  # its questions at --per-type 1 have two ambiguous twins
MODEL = "mockllm/model"


@pytest.fixture(scope="module")
def records() -> list[QuestionRecord]:
    return generated_records([repo(SEED)], Options(per_type=1, ambiguous=True))


def twin_pairs(records: list[QuestionRecord]) -> list[tuple[QuestionRecord, QuestionRecord]]:
    """(full twin, ambiguous twin) of each pair."""
    by_id = {record.id: record for record in records}
    pairs = [(by_id[r.question.ambiguity.full_id], r) for r in records if r.question.ambiguity is not None]
    assert len(pairs) >= 2, "the seed must give two twins"
    return pairs


def scripted_model(records: list[QuestionRecord], seen: dict[str, list[str]]) -> Any:
    """Asks about the open decision wherever it can, then answers: the intended answer where the channel exists,
    the first decoy's where it does not (on the twin: a literal agent). ``seen`` gets each question's tool
    names and system prompt."""
    by_text = {asked.text(): asked.record for asked in expand_variants(records, ["template"])}

    def respond(messages: list[ChatMessage], tools: Any, tool_choice: Any, config: Any) -> ModelOutput:
        record = by_text[next(m.text for m in messages if isinstance(m, ChatMessageUser))]
        names = sorted(tool.name for tool in tools)
        system = next(m.text for m in messages if isinstance(m, ChatMessageSystem))
        seen.setdefault(record.id, []).append(" ".join(names) + " | " + system)
        asked = any(isinstance(m, ChatMessageTool) for m in messages)
        twin = record.question.ambiguity
        if "ask_clarification" in names and not asked:
            keyword = twin.keywords[0] if twin else "statistic"
            output = ModelOutput.for_tool_call(
                MODEL, "ask_clarification", {"question": f"Which {keyword} do you mean?"}, tool_call_id="call-0"
            )
        else:
            literal = twin is not None and "ask_clarification" not in names
            answer = twin.decoy_answers[0].answer if twin is not None and literal else record.question.answer
            output = ModelOutput.from_content(MODEL, json.dumps({"answer": answer}))
        output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)  # nothing to estimate
        return output

    return get_model(MODEL, custom_outputs=respond)


@pytest.fixture(scope="module")
def run(records: list[QuestionRecord], tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, dict[str, list[str]]]:
    from inspect_ai import eval as inspect_eval

    from sgfs.agents.inspect_task.task import infinite_science

    seen: dict[str, list[str]] = {}
    log = inspect_eval(
        infinite_science(seeds=SEED, per_type=1, ambiguous=True),
        model=scripted_model(records, seen),
        log_dir=str(tmp_path_factory.mktemp("logs")),
        display="none",
    )[0]
    assert log.status == "success", log.error
    return log, seen


def test_samples_are_the_pairs_in_three_conditions(records: list[QuestionRecord]) -> None:
    from sgfs.agents.inspect_task.task import infinite_science

    task = infinite_science(seeds=SEED, per_type=1, ambiguous=True)
    expected = []
    for full, twin in twin_pairs(records):
        expected += [(f"{full.id}@full", full.id), (f"{twin.id}@ambig", twin.id), (f"{twin.id}@ask", twin.id)]
    samples = list(task.dataset)
    assert [(s.id, s.metadata["question_id"]) for s in samples if s.metadata] == expected
    for sample in samples:
        assert sample.metadata is not None
        condition = str(sample.id).rpartition("@")[2]
        assert sample.metadata["condition"] == condition
        full_id = sample.metadata["question_id"].removesuffix("-ambig")
        assert sample.metadata["pair"] == full_id
        assert ("ambiguity" in sample.metadata["record"]) == (condition != "full")
    assert task.metadata is not None and task.metadata["conditions"] == list(CONDITIONS)
    only = infinite_science(seeds=SEED, per_type=1, ambiguous=True, conditions="ask, ambig")
    assert [str(s.id).rpartition("@")[2] for s in only.dataset] == ["ambig", "ask"] * len(twin_pairs(records))
    plain = infinite_science(seeds=SEED, per_type=1)
    assert all(s.metadata and "condition" not in s.metadata for s in plain.dataset)


def test_tool_and_prompt_only_where_the_channel_exists(run: tuple[Any, dict[str, list[str]]]) -> None:
    log, seen = run
    assert {sample.metadata["condition"] for sample in log.samples} == set(CONDITIONS)
    assert len(log.samples) == 3 * len({sample.metadata["pair"] for sample in log.samples})
    for sample in log.samples:
        offered = sample.metadata["condition"] in ("full", "ask")
        generations = [event for event in sample.events if isinstance(event, ModelEvent)]
        assert generations and all(
            ("ask_clarification" in {tool.name for tool in event.tools}) == offered for event in generations
        ), sample.id
        system = next(m.text for m in sample.messages if isinstance(m, ChatMessageSystem))
        assert ("ask_clarification" in system) == offered, (sample.id, system)
        asked = [m for m in sample.messages if isinstance(m, ChatMessageTool)]
        assert [m.function for m in asked] == (["ask_clarification"] if offered else []), sample.id
    # what the model itself was given: the twin's question with the tool (ask) and without it (ambig)
    twin_tools = {
        call.partition(" | ")[0] for question, calls in seen.items() if question.endswith("-ambig") for call in calls
    }
    assert any("ask_clarification" in names for names in twin_tools)
    assert any("ask_clarification" not in names for names in twin_tools)


def test_scores_record_the_exchange_and_the_wrong_target(
    run: tuple[Any, dict[str, list[str]]], records: list[QuestionRecord]
) -> None:
    log, _ = run
    by_id = {record.id: record for record in records}
    for sample in log.samples:
        meta = next(iter(sample.scores.values())).metadata
        condition = sample.metadata["condition"]
        record = by_id[sample.metadata["question_id"]]
        assert meta["condition"] == condition and meta["pair"] == sample.metadata["pair"]
        if condition == "ambig":  # the literal agent took the decoy reading
            assert meta == meta | {"asked": False, "ask_text": None, "ask_reply": None, "wrong_target": True}
            assert meta["correct"] is False
            continue
        assert meta["asked"] is True and meta["correct"] is True
        if condition == "full":
            assert meta["ask_reply"] == NOTHING_OPEN and meta["wrong_target"] is None
        else:
            twin = record.question.ambiguity
            assert twin is not None and in_scope(twin, meta["ask_text"])
            assert meta["ask_reply"] == twin.clarification and meta["wrong_target"] is False
    metrics = {name: m.value for name, m in log.results.scores[0].metrics.items()}
    assert metrics["accuracy_full"] == 1.0 and metrics["accuracy_ask"] == 1.0 and metrics["accuracy_ambig"] == 0.0
    assert metrics["ask_rate_full"] == 1.0 and metrics["ask_rate_ask"] == 1.0 and metrics["ask_rate_ambig"] == 0.0
    assert metrics["ask_calibration"] == 0.0  # asked everywhere: as uncalibrated as never asking
    assert metrics["wrong_target_rate_ambig"] == 1.0 and metrics["wrong_target_rate_ask"] == 0.0
    assert "wrong_target_rate_full" not in metrics


def test_records_from_the_log_carry_the_condition(run: tuple[Any, dict[str, list[str]]]) -> None:
    """The log's result records have the condition fields of ``sgfs eval --ambiguous``, equal to the scores'."""
    log, _ = run
    results = records_from_log(log.location)
    assert len(results) == len(log.samples)
    for result, sample in zip(results, log.samples, strict=True):
        meta = next(iter(sample.scores.values())).metadata
        assert result.id == sample.metadata["question_id"] and result.correct == meta["correct"]
        as_json = result.to_json()
        assert set(as_json) == {*RECORD_KEYS, *CONDITION_KEYS}
        assert {key: as_json[key] for key in CONDITION_KEYS} == {key: meta[key] for key in CONDITION_KEYS}
        assert ResultRecord.from_json(as_json).unit == (result.id, "template", 1, meta["condition"])
    assert {(r.condition, r.wrong_target) for r in results} == {("full", None), ("ambig", True), ("ask", False)}


def test_ambiguous_parameters_are_checked(records: list[QuestionRecord], tmp_path: Path) -> None:
    from sgfs.agents.inspect_task.task import infinite_science

    plain = tmp_path / "plain.jsonl"
    plain.write_text("".join(json.dumps(r.question.to_dict()) + "\n" for r in records if not r.question.ambiguity))
    full, twin = twin_pairs(records)[0]
    orphan = tmp_path / "orphan.jsonl"
    orphan.write_text(json.dumps(twin.question.to_dict()) + "\n")
    both = tmp_path / "both.jsonl"
    both.write_text("".join(json.dumps(r.question.to_dict()) + "\n" for r in (full, twin)))
    task = infinite_science(questions=str(both), ambiguous=True, variant="paraphrase_1")
    asked = [f"{full.id}:paraphrase_1@full", f"{twin.id}:paraphrase_1@ambig", f"{twin.id}:paraphrase_1@ask"]
    assert [s.id for s in task.dataset] == asked
    for arguments, message in (
        ({"conditions": "ask"}, "conditions only applies with -T ambiguous=true"),
        (
            {"ambiguous": True, "conditions": "ask,often"},
            "conditions must be a comma list of full, ambig, ask, got often",
        ),
        ({"ambiguous": True, "conditions": " , "}, "conditions must be a comma list"),
        ({"ambiguous": "yes"}, "ambiguous must be true or false, got 'yes'"),
        ({"ambiguous": True, "questions": str(plain)}, "no ambiguous twins among the questions"),
        ({"ambiguous": True, "questions": str(orphan)}, f"ambiguous twin of {full.id}, which is not among"),
    ):
        with pytest.raises(SgfsError, match=message):
            infinite_science(seeds=SEED, per_type=1, **arguments)
