"""The ``vllm`` backend: offline batched generation in this process (``vllm.LLM.chat``) on the local GPUs.

Structured output uses the API of current vLLM releases, ``SamplingParams(structured_outputs=
StructuredOutputsParams(json=schema))``. Older releases had ``guided_decoding``/``guided_json`` fields instead,
and a field a release does not know may be ignored without a word, which would let the model write free
text: so the installed vLLM is checked before the engine starts, and the build stops with one clear error
when the field is missing. Every request carries its own sampling seed.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any

from generators.llm.base import BackendUnavailable, ChatRequest, Completion, Sampling, require


def structured_output_api(vllm: ModuleType, sampling_module: ModuleType) -> tuple[Any, Any]:
    """``(SamplingParams, StructuredOutputsParams)`` of the installed vLLM, or :class:`BackendUnavailable`."""
    found = getattr(vllm, "__version__", "unknown")
    params_class = getattr(vllm, "SamplingParams", None) or getattr(sampling_module, "SamplingParams", None)
    structured_class = getattr(sampling_module, "StructuredOutputsParams", None)
    if params_class is None or structured_class is None or not _has_field(params_class, "structured_outputs"):
        raise BackendUnavailable(
            f"vLLM {found} has no SamplingParams.structured_outputs / StructuredOutputsParams, so the JSON schema "
            "would not be applied: install a current vLLM (sgfs[vllm], vllm>=0.11)"
        )
    if not _has_field(structured_class, "json"):
        raise BackendUnavailable(f"vLLM {found}: StructuredOutputsParams has no 'json' field")
    return params_class, structured_class


def _has_field(cls: Any, name: str) -> bool:
    struct_fields = getattr(cls, "__struct_fields__", None)  # msgspec.Struct (vLLM's SamplingParams)
    if struct_fields is not None:
        return name in struct_fields
    if dataclasses.is_dataclass(cls):
        return name in {f.name for f in dataclasses.fields(cls)}
    try:
        return name in inspect.signature(cls).parameters
    except (TypeError, ValueError):
        return False


def sampling_params(params_class: Any, structured_class: Any, request: ChatRequest, sampling: Sampling) -> Any:
    """The vLLM ``SamplingParams`` of one request, checked to carry the JSON schema."""
    params = params_class(
        temperature=sampling.temperature,
        top_p=sampling.top_p,
        max_tokens=sampling.max_tokens,
        seed=request.seed,
        structured_outputs=structured_class(json=dict(request.schema)),
    )
    applied = getattr(params, "structured_outputs", None)
    if applied is None or getattr(applied, "json", None) is None:
        raise BackendUnavailable("the installed vLLM dropped the structured-output request (SamplingParams)")
    return params


class VLLMBackend:
    name = "vllm"

    def __init__(self, model: str, *, engine_options: Mapping[str, Any] | None = None, batch_size: int = 32) -> None:
        vllm = require("vllm", "vllm")
        self._params_class, self._structured_class = structured_output_api(
            vllm, require("vllm.sampling_params", "vllm")
        )
        self.model = model
        self.batch_size = batch_size
        self._llm = vllm.LLM(model=model, **dict(engine_options or {}))

    def complete(self, requests: Sequence[ChatRequest], sampling: Sampling) -> list[Completion]:
        if not requests:
            return []
        conversations = [[dict(m) for m in r.messages] for r in requests]
        params = [sampling_params(self._params_class, self._structured_class, r, sampling) for r in requests]
        outputs = self._llm.chat(conversations, sampling_params=params, use_tqdm=False)
        return [_completion(output) for output in outputs]

    def close(self) -> None:
        self._llm = None


def _completion(output: Any) -> Completion:
    prompt_tokens = len(getattr(output, "prompt_token_ids", None) or [])
    choices = getattr(output, "outputs", None) or []
    if not choices:
        return Completion(None, prompt_tokens, 0, error="vLLM returned no output")
    first = choices[0]
    generated = len(getattr(first, "token_ids", None) or [])
    reason = getattr(first, "finish_reason", None)
    if reason == "length":
        # Cut at max_tokens: the JSON is unfinished; say so rather than report a parse error.
        return Completion(None, prompt_tokens, generated, error="the answer reached --max-tokens")
    return Completion(str(first.text), prompt_tokens, generated)
