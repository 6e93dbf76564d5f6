"""The ``vllm`` backend without vLLM: fake module objects stand in for the installed package, to test the
structured-output check (current API accepted, old or silently-ignoring APIs refused loudly), the request
building (per-request seeds, the JSON schema) and a whole build through the pipeline. The real engine is
exercised by scripts/gpu_smoke.sh on a GPU machine."""

from __future__ import annotations

import json
import re
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from generators import build_spec
from generators.llm.base import BackendUnavailable, ChatRequest, Sampling
from generators.llm.draft import DRAFT_SCHEMA, draft_of
from generators.llm.vllm_backend import sampling_params, structured_output_api
from generators.packs import SpecPack
from tests.helpers.commands import cli, one_line_error


@dataclass
class StructuredOutputsParams:
    json: Any = None
    regex: str | None = None


@dataclass
class SamplingParams:
    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 16
    seed: int | None = None
    structured_outputs: StructuredOutputsParams | None = None


@dataclass
class OldSamplingParams:  # the guided_* era: no structured_outputs field
    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 16
    seed: int | None = None
    guided_decoding: Any = None


class LenientSamplingParams:  # takes any keyword and keeps none of the unknown ones: the silent failure
    def __init__(self, temperature: float = 1.0, **ignored: Any) -> None:
        self.temperature = temperature


@dataclass
class Output:
    text: str
    token_ids: list[int]
    finish_reason: str = "stop"


@dataclass
class RequestOutput:
    prompt_token_ids: list[int]
    outputs: list[Output]


@dataclass
class FakeLLM:
    """Answers each conversation with the procedural draft of its seed; records what it was given."""

    model: str
    options: dict[str, Any] = field(default_factory=dict)
    calls: list[tuple[list[Any], list[Any]]] = field(default_factory=list)

    def chat(self, conversations: list[Any], sampling_params: list[Any], use_tqdm: bool = True) -> list[Any]:
        self.calls.append((conversations, sampling_params))
        outputs = []
        for conversation in conversations:
            seed = int(re.search(r"^Repository: (\d+)$", conversation[1]["content"], re.M).group(1))  # type: ignore[union-attr]
            if seed == 3:
                outputs.append(RequestOutput([1] * 40, [Output('{"project": {"tit', [1] * 6000, "length")]))
            else:
                outputs.append(RequestOutput([1] * 40, [Output(json.dumps(draft_of(build_spec(seed))), [1] * 25)]))
        return outputs


def fake_vllm(params_class: Any = SamplingParams) -> tuple[types.ModuleType, types.ModuleType, list[FakeLLM]]:
    engines: list[FakeLLM] = []
    vllm = types.ModuleType("vllm")
    sampling = types.ModuleType("vllm.sampling_params")
    vllm.__version__ = "0.0-fake"  # type: ignore[attr-defined]
    vllm.SamplingParams = params_class  # type: ignore[attr-defined]
    sampling.SamplingParams = params_class  # type: ignore[attr-defined]
    sampling.StructuredOutputsParams = StructuredOutputsParams  # type: ignore[attr-defined]

    def make_llm(model: str, **options: Any) -> FakeLLM:
        engines.append(FakeLLM(model, options))
        return engines[-1]

    vllm.LLM = make_llm  # type: ignore[attr-defined]
    vllm.sampling_params = sampling  # type: ignore[attr-defined]
    return vllm, sampling, engines


def install(monkeypatch: pytest.MonkeyPatch, params_class: Any = SamplingParams) -> list[FakeLLM]:
    vllm, sampling, engines = fake_vllm(params_class)
    monkeypatch.setitem(sys.modules, "vllm", vllm)
    monkeypatch.setitem(sys.modules, "vllm.sampling_params", sampling)
    return engines


def test_structured_output_check_and_request_building() -> None:
    vllm, sampling, _ = fake_vllm()
    params_class, structured_class = structured_output_api(vllm, sampling)
    request = ChatRequest(key=7, messages=({"role": "user", "content": "x"},), seed=1234, schema=DRAFT_SCHEMA)
    params = sampling_params(params_class, structured_class, request, Sampling(0.3, 0.9, 5000))
    assert (params.temperature, params.top_p, params.max_tokens, params.seed) == (0.3, 0.9, 5000, 1234)
    assert params.structured_outputs.json == DRAFT_SCHEMA


@pytest.mark.parametrize("params_class", [OldSamplingParams, LenientSamplingParams])
def test_old_or_ignoring_vllm_is_refused(params_class: Any) -> None:
    vllm, sampling, _ = fake_vllm(params_class)
    with pytest.raises(BackendUnavailable, match="structured_outputs"):
        structured_output_api(vllm, sampling)
    del sampling.StructuredOutputsParams
    with pytest.raises(BackendUnavailable, match="StructuredOutputsParams"):
        structured_output_api(*fake_vllm()[:1], sampling)


def test_params_that_drop_the_schema_are_refused() -> None:
    @dataclass
    class Dropping(SamplingParams):
        def __post_init__(self) -> None:
            self.structured_outputs = None

    request = ChatRequest(key=1, messages=(), seed=1, schema=DRAFT_SCHEMA)
    with pytest.raises(BackendUnavailable, match="dropped"):
        sampling_params(Dropping, StructuredOutputsParams, request, Sampling())


def test_build_through_the_fake_engine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    engines = install(monkeypatch)
    pack_path = tmp_path / "v.sgfspack"
    result = cli(
        "specs", "build", "1-4", "--backend", "vllm", "--model", "/models/tiny", "--out", pack_path,
        "--engine-option", "load_format=dummy", "--engine-option", "gpu_memory_utilization=0.5",
        "--repairs", 1, "--quiet",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "4 specs built (3 generated, 0 repaired, 1 fell back)" in result.stderr
    (engine,) = engines
    assert engine.model == "/models/tiny"
    assert engine.options == {"load_format": "dummy", "gpu_memory_utilization": 0.5}
    conversations, params = engine.calls[0]
    assert len(conversations) == 4 and conversations[0][0]["role"] == "system"
    assert all(p.structured_outputs.json == DRAFT_SCHEMA for p in params)
    assert len({p.seed for p in params}) == 4
    with SpecPack.open(pack_path) as pack:
        assert pack.metadata["backend"] == "vllm" and pack.metadata["model"] == "/models/tiny"
        cut = pack.entry(3)
        assert (cut.status, cut.attempts) == ("fallback", 2) and "--max-tokens" in cut.note
        assert pack.entry(1).prompt_tokens == 40 and pack.entry(1).completion_tokens == 25
        assert pack.spec(2) == build_spec(2)


def test_old_vllm_fails_the_build_in_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    install(monkeypatch, OldSamplingParams)
    line = one_line_error(cli("specs", "build", "1", "--backend", "vllm", "--model", "m", "--out", tmp_path / "p"))
    assert "structured_outputs" in line and "vllm>=0.11" in line
    assert not (tmp_path / "p").exists()


@pytest.mark.parametrize(("backend", "module"), [("vllm", "vllm"), ("ray", "ray")])
def test_missing_packages_name_the_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, backend: str, module: str
) -> None:
    monkeypatch.setitem(sys.modules, module, None)
    line = one_line_error(cli("specs", "build", "1", "--backend", backend, "--model", "m", "--out", tmp_path / "p"))
    assert f"sgfs[{backend}]" in line
