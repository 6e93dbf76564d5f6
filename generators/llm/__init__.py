"""LLM-written specs: backends that write drafts, the generation pipeline, versioned prompts.

Imports no optional dependency at import time: ``openai``, ``vllm`` and ``ray`` are imported by their backend
only when it is created, and a missing one is one clear error naming the extra to install.
"""

from __future__ import annotations

from typing import Any

from generators.llm.base import Backend, BackendError, BackendUnavailable, Sampling

BACKENDS = ("procedural", "openai", "vllm", "ray")

__all__ = ["BACKENDS", "Backend", "BackendError", "BackendUnavailable", "Sampling", "make_backend"]


def make_backend(name: str, model: str | None, **options: Any) -> Backend:
    """The backend called ``name``; ``options`` are the ones that backend takes (see each module)."""
    if name == "procedural":
        from generators.llm.procedural import ProceduralBackend

        return ProceduralBackend()
    if not model:
        raise BackendError(f"the {name} backend needs a model (--model)")
    if name == "openai":
        from generators.llm.openai_backend import OpenAIBackend

        return OpenAIBackend(model, **options)
    if name == "vllm":
        from generators.llm.vllm_backend import VLLMBackend

        return VLLMBackend(model, **options)
    if name == "ray":
        from generators.llm.ray_backend import RayBackend

        return RayBackend(model, **options)
    raise BackendError(f"unknown backend {name!r} (one of {', '.join(BACKENDS)})")
