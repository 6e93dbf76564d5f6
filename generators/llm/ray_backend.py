"""The ``ray`` backend: the same generation as ``vllm``, scaled out over a Ray cluster with Ray Data's LLM
processor (``ray.data.llm.build_processor`` with a ``vLLMEngineProcessorConfig``): each round of the pipeline
becomes one dataset of requests that vLLM replicas on the cluster's GPUs consume in batches.

Not exercised by the test suite (it needs Ray, vLLM and GPUs); see docs/specs.md for how to run it.
Engine options are passed to vLLM, except ``concurrency`` (vLLM replicas, default 1) and
``accelerator_type``, which configure the processor.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from generators.llm.base import BackendError, ChatRequest, Completion, Sampling, require


class RayBackend:
    name = "ray"

    def __init__(self, model: str, *, engine_options: Mapping[str, Any] | None = None, batch_size: int = 32) -> None:
        self._ray = require("ray", "ray")
        self._llm = require("ray.data.llm", "ray")
        require("vllm", "ray")
        options = dict(engine_options or {})
        processor_options = {k: options.pop(k) for k in ("concurrency", "accelerator_type") if k in options}
        self.model = model
        self._config = self._llm.vLLMEngineProcessorConfig(
            model_source=model, engine_kwargs=options, batch_size=batch_size, **processor_options
        )

    def complete(self, requests: Sequence[ChatRequest], sampling: Sampling) -> list[Completion]:
        if not requests:
            return []
        schema = dict(requests[0].schema)
        rows = [{"key": r.key, "seed": r.seed, "messages": json.dumps([dict(m) for m in r.messages])} for r in requests]

        def preprocess(row: dict[str, Any]) -> dict[str, Any]:
            return {
                "key": row["key"],
                "messages": json.loads(row["messages"]),
                "sampling_params": {
                    "temperature": sampling.temperature,
                    "top_p": sampling.top_p,
                    "max_tokens": sampling.max_tokens,
                    "seed": row["seed"],
                    "structured_outputs": {"json": schema},
                },
            }

        def postprocess(row: dict[str, Any]) -> dict[str, Any]:
            return {
                "key": row["key"],
                "text": row.get("generated_text"),
                "prompt_tokens": int(row.get("num_input_tokens") or 0),
                "completion_tokens": int(row.get("num_generated_tokens") or 0),
            }

        processor = self._llm.build_processor(self._config, preprocess=preprocess, postprocess=postprocess)
        results = {row["key"]: row for row in processor(self._ray.data.from_items(rows)).take_all()}
        missing = [r.key for r in requests if r.key not in results]
        if missing:
            raise BackendError(f"the Ray processor returned no row for seeds {missing[:5]}")
        out = []
        for r in requests:
            row = results[r.key]
            text = row["text"] if isinstance(row["text"], str) else None
            error = None if text is not None else "no generated text"
            out.append(Completion(text, row["prompt_tokens"], row["completion_tokens"], error))
        return out

    def close(self) -> None:
        pass
