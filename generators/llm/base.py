"""The interface every spec-writing backend implements, and the values that cross it."""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from types import ModuleType
from typing import Any, Protocol

Message = Mapping[str, str]  # {"role": "system" | "user" | "assistant", "content": ...}


class BackendError(Exception):
    """The backend cannot go on (unreachable endpoint, refused credentials, unknown model): the build stops."""


class BackendUnavailable(BackendError):
    """An optional dependency is missing or too old."""


@dataclass(frozen=True)
class Sampling:
    """Sampling settings, recorded in the pack's metadata."""

    temperature: float = 0.7
    top_p: float = 0.95
    max_tokens: int = 6000

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ChatRequest:
    """One chat completion to run: ``key`` is the repository seed, ``seed`` the sampling seed of this attempt."""

    key: int
    messages: tuple[Message, ...]
    seed: int
    schema: Mapping[str, Any] = field(repr=False)


@dataclass(frozen=True)
class Completion:
    """The model's text, or ``error`` when this request failed after the backend's own retries."""

    text: str | None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    error: str | None = None


class Backend(Protocol):
    name: str
    model: str

    def complete(self, requests: Sequence[ChatRequest], sampling: Sampling) -> list[Completion]:
        """One completion per request, in the same order."""
        ...

    def close(self) -> None: ...


def require(module: str, extra: str) -> ModuleType:
    """Import an optional dependency, or fail with one line naming the extra that provides it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise BackendUnavailable(
            f"the {extra} backend needs the Python package {module!r} ({exc.msg}): install sgfs[{extra}]"
        ) from None
