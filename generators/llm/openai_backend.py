"""The ``openai`` backend: any OpenAI-compatible chat-completions endpoint (``vllm serve``, other servers,
hosted APIs), with a JSON-schema ``response_format``, a concurrency limit, timeouts and retries with
exponential backoff on 429 and 5xx answers, timeouts and dropped connections.

Requests that still fail after the retries come back as failed completions (the pipeline counts the attempt
and eventually falls back); answers that mean the whole build cannot work (bad credentials, unknown model,
an endpoint that never answers) stop the build with :class:`BackendError`.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from generators.llm.base import BackendError, ChatRequest, Completion, Sampling, require

MAX_RETRY_AFTER_S = 60.0


class OpenAIBackend:
    name = "openai"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        concurrency: int = 8,
        timeout: float = 300.0,
        retries: int = 4,
        backoff: float = 1.0,
    ) -> None:
        self._openai = require("openai", "openai")
        self.model = model
        self.concurrency = max(concurrency, 1)
        self.retries = max(retries, 0)
        self.backoff = backoff
        base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        # Local servers (vllm serve) accept any key, but the client insists on one.
        api_key = api_key or os.environ.get("OPENAI_API_KEY") or "none"
        # Our own retry loop (max_retries=0): it counts retries per request and can tell a failed request from a
        # dead endpoint.
        self._client = self._openai.OpenAI(base_url=base_url, api_key=api_key, timeout=timeout, max_retries=0)
        self._fatal: BackendError | None = None
        self._lock = threading.Lock()
        self.retried = 0  # requests sent again after a 429, 5xx or timeout (for reports and tests)

    def complete(self, requests: Sequence[ChatRequest], sampling: Sampling) -> list[Completion]:
        with ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="sgfs-openai") as pool:
            completions = list(pool.map(lambda r: self._one(r, sampling), requests))
        if self._fatal is not None:
            raise self._fatal
        return completions

    def close(self) -> None:
        self._client.close()

    def request_body(self, request: ChatRequest, sampling: Sampling) -> dict[str, Any]:
        """The keyword arguments of ``chat.completions.create`` for one request."""
        return {
            "model": self.model,
            "messages": [dict(m) for m in request.messages],
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "max_tokens": sampling.max_tokens,
            "seed": request.seed,
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "sgfs_spec_draft", "schema": dict(request.schema), "strict": False},
            },
        }

    def _one(self, request: ChatRequest, sampling: Sampling) -> Completion:
        errors = self._openai
        body = self.request_body(request, sampling)
        failure = ""
        for attempt in range(self.retries + 1):
            if self._fatal is not None:
                return Completion(None, error="build stopped")
            if attempt:
                with self._lock:
                    self.retried += 1
            try:
                response = self._client.chat.completions.create(**body)
            except errors.RateLimitError as exc:
                failure = f"rate limited (HTTP 429) {self.retries + 1} times"
                self._sleep(attempt, exc.response.headers.get("retry-after"))
                continue
            except errors.InternalServerError as exc:
                failure = f"server error (HTTP {exc.status_code})"
                self._sleep(attempt, exc.response.headers.get("retry-after"))
                continue
            except errors.APITimeoutError:
                failure = "timed out"
                self._sleep(attempt, None)
                continue
            except errors.APIConnectionError as exc:
                failure = f"cannot connect: {exc}"
                self._sleep(attempt, None)
                continue
            except errors.APIStatusError as exc:
                # 400 for this request only; anything else (401, 403, 404...) fails every request alike.
                message = f"HTTP {exc.status_code}: {_message(exc)}"
                if exc.status_code == 400:
                    return Completion(None, error=message)
                self._stop(BackendError(f"the endpoint refused the request: {message}"))
                return Completion(None, error=message)
            return _completion(response)
        if failure.startswith("cannot connect"):
            self._stop(BackendError(f"the endpoint is unreachable after {self.retries + 1} tries: {failure}"))
        return Completion(None, error=f"{failure} (after {self.retries + 1} tries)")

    def _sleep(self, attempt: int, retry_after: str | None) -> None:
        if attempt >= self.retries:
            return
        delay = self.backoff * 2**attempt
        if retry_after:
            with contextlib.suppress(ValueError):  # an HTTP date instead of seconds: keep our own delay
                delay = min(float(retry_after), MAX_RETRY_AFTER_S)
        time.sleep(delay)

    def _stop(self, error: BackendError) -> None:
        with self._lock:
            if self._fatal is None:
                self._fatal = error


def _message(exc: Exception) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return " ".join(inner["message"].split())[:200]
    return " ".join(str(exc).split())[:200]


def _completion(response: Any) -> Completion:
    usage = getattr(response, "usage", None)
    prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
    generated = int(getattr(usage, "completion_tokens", 0) or 0)
    choices = getattr(response, "choices", None) or []
    text = choices[0].message.content if choices else None
    if not isinstance(text, str):
        return Completion(None, prompt, generated, error="the answer has no text")
    return Completion(text, prompt, generated)
