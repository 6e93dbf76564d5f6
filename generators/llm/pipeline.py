"""Building a spec pack: prompt, generate, validate, repair a bounded number of times, fall back, commit.

Seeds go through in batches of ``batch_size``. Within a batch, every round sends the still-unfinished seeds to
the backend at once (so vLLM batches them and the OpenAI backend runs them concurrently); an answer that
fails the spec validation gets the validation message back and another round, up to ``repairs`` times; a seed
that still fails gets the procedural spec, marked ``fallback`` with the last error as its note. Each seed is
committed in its own transaction when its batch ends, so an interrupted build keeps every finished seed and
a rerun continues with the others.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from generators.builders.procedural import build_spec
from generators.llm.base import Backend, ChatRequest, Message, Sampling
from generators.llm.draft import DRAFT_SCHEMA, assemble
from generators.llm.prompting import PROMPT_VERSION, first_messages, prompt_digest, repair_messages
from generators.packs import PackError, SpecPack
from generators.rng import derive_key
from generators.spec import Spec, SpecError

MAX_NOTE = 500


@dataclass(frozen=True)
class BuildOptions:
    repairs: int = 2
    batch_size: int = 32
    sampling: Sampling = field(default_factory=Sampling)
    sampling_seed: int = 0  # per-request seeds derive from it, the repository seed and the attempt
    prompt_version: str = PROMPT_VERSION


@dataclass
class BuildReport:
    requested: int = 0
    resumed: int = 0  # already in the pack: not generated again
    statuses: dict[str, int] = field(default_factory=lambda: {"generated": 0, "repaired": 0, "fallback": 0})
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0

    @property
    def built(self) -> int:
        return sum(self.statuses.values())


def build_metadata(backend: Backend, options: BuildOptions, sgfs_version: str) -> dict[str, Any]:
    """What a pack records about how it was built; a resumed build must match it."""
    return {
        "backend": backend.name,
        "model": backend.model,
        "prompt_version": options.prompt_version,
        "prompt_digest": prompt_digest(options.prompt_version),
        "sampling": {**options.sampling.to_dict(), "seed": options.sampling_seed},
        "repairs": options.repairs,
        "sgfs_version": sgfs_version,
    }


def open_for_build(path: str | Path, metadata: dict[str, Any]) -> SpecPack:
    """A new pack, or the existing one when it was started with the same settings (resume)."""
    if not Path(path).exists():
        return SpecPack.create(path, metadata)
    pack = SpecPack.open(path, writable=True)
    found = pack.metadata
    for key in ("backend", "model", "prompt_version", "prompt_digest", "sampling", "repairs"):
        if found.get(key) != metadata[key]:
            pack.close()
            raise PackError(
                f"{path}: cannot resume: the pack was built with {key} {found.get(key)!r}, not {metadata[key]!r} "
                "(write to a new pack)"
            )
    return pack


@dataclass
class _Seed:
    base: Spec
    messages: tuple[Message, ...]
    attempts: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    spec: Spec | None = None
    error: str = ""


def build(
    seeds: Sequence[int],
    backend: Backend,
    pack: SpecPack,
    options: BuildOptions = BuildOptions(),
    on_seed: Callable[[int, str], None] | None = None,
) -> BuildReport:
    """Generate the specs of ``seeds`` missing from ``pack`` into it."""
    started = time.monotonic()
    report = BuildReport(requested=len(seeds))
    done = set(pack.seeds())
    pending = [seed for seed in dict.fromkeys(seeds) if seed not in done]
    report.resumed = len(seeds) - len(pending)
    for start in range(0, len(pending), max(options.batch_size, 1)):
        batch = pending[start : start + max(options.batch_size, 1)]
        states = _run_batch(batch, backend, options)
        for seed in batch:
            state = states[seed]
            if state.spec is not None:
                status = "generated" if state.attempts == 1 else "repaired"
                spec, note = state.spec, ""
            else:
                status, spec, note = "fallback", state.base, state.error[:MAX_NOTE]
            pack.put(
                spec,
                status,
                attempts=state.attempts,
                prompt_tokens=state.prompt_tokens,
                completion_tokens=state.completion_tokens,
                note=note,
            )
            report.statuses[status] += 1
            report.prompt_tokens += state.prompt_tokens
            report.completion_tokens += state.completion_tokens
            if on_seed is not None:
                on_seed(seed, status)
    report.seconds = time.monotonic() - started
    return report


def _run_batch(batch: list[int], backend: Backend, options: BuildOptions) -> dict[int, _Seed]:
    states: dict[int, _Seed] = {}
    for seed in batch:
        base = build_spec(seed)
        states[seed] = _Seed(base, first_messages(base, options.prompt_version))
    for attempt in range(options.repairs + 1):
        active = [seed for seed in batch if states[seed].spec is None]
        if not active:
            break
        requests = [
            ChatRequest(
                key=seed,
                messages=states[seed].messages,
                seed=derive_key("llm-spec", options.sampling_seed, seed, attempt) % 2**31,
                schema=DRAFT_SCHEMA,
            )
            for seed in active
        ]
        completions = backend.complete(requests, options.sampling)
        if len(completions) != len(requests):
            raise PackError(f"backend {backend.name} answered {len(completions)} of {len(requests)} requests")
        for seed, completion in zip(active, completions, strict=True):
            state = states[seed]
            state.attempts += 1
            state.prompt_tokens += completion.prompt_tokens
            state.completion_tokens += completion.completion_tokens
            if completion.text is None:
                state.error = f"request failed: {completion.error or 'no answer'}"
                continue  # a transport failure: ask again with the same conversation
            try:
                state.spec = assemble(state.base, completion.text)
            except SpecError as exc:
                state.error = str(exc)
                state.messages = (*state.messages, *repair_messages(completion.text, str(exc), options.prompt_version))
    return states
