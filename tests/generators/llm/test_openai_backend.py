"""The ``openai`` backend end to end against a stand-in model: a local HTTP server in the test that speaks the
OpenAI chat-completions protocol on 127.0.0.1 and answers from a script chosen by the repository seed in the
prompt: valid specs, an invalid one repaired after the validation message, hostile content, a timeout,
429s and a 5xx."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

import generators
from generators import build_spec
from generators.llm.draft import draft_of
from generators.packs import SpecPack
from tests.helpers.commands import cli, one_line_error

pytest.importorskip("openai")

MODEL = "stand-in-spec-writer"
VALID, REPAIRED, HOSTILE, TIMEOUT, RATE_LIMITED, SERVER_ERROR = 1, 2, 3, 4, 5, 6
CLIENT_TIMEOUT_S = 1.0


def model_title(seed: int) -> str:
    return f"A Model-Written Study Number {seed}"


def draft(seed: int, *, expression: str | None = None, path_value: str | None = None) -> str:
    data = draft_of(build_spec(seed))
    data["project"]["title"] = model_title(seed)
    if expression is not None:
        dependent = next(v for v in data["variables"] if v["role"] == "dependent")
        dependent["expression"] = expression
    if path_value is not None:
        data["path_variables"][0]["values"][0] = path_value
    return json.dumps(data)


@dataclass
class StandIn:
    """What the stand-in model saw and how it answers."""

    requests: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    refuse_all: int | None = None  # an HTTP status for every request (credentials, unknown model)

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any], dict[str, str]]:
        if self.refuse_all is not None:
            return self.refuse_all, {"error": {"message": "invalid api key", "type": "auth"}}, {}
        user = next(m["content"] for m in body["messages"] if m["role"] == "user")
        seed = int(re.search(r"^Repository: (\d+)$", user, re.M).group(1))  # type: ignore[union-attr]
        with self.lock:
            seen = self.requests.setdefault(seed, [])
            seen.append(body)
            calls = len(seen)
        repairing = body["messages"][-1]["content"].startswith("That specification was rejected")
        if seed == REPAIRED and not repairing:
            return self.ok(draft(seed, expression="nonexistent_column * 2"))
        if seed == HOSTILE:  # code instead of an expression, twice, then a path traversal
            if calls <= 2:
                return self.ok(draft(seed, expression="__import__('os').system('touch pwned')"))
            return self.ok(draft(seed, path_value="../../etc"))
        if seed == TIMEOUT and calls == 1:
            time.sleep(CLIENT_TIMEOUT_S * 3)
        if seed == RATE_LIMITED and calls <= 2:
            return 429, {"error": {"message": "slow down", "type": "rate_limit"}}, {"retry-after": "0"}
        if seed == SERVER_ERROR and calls == 1:
            return 503, {"error": {"message": "overloaded", "type": "server"}}, {"retry-after": "0"}
        return self.ok(draft(seed))

    @staticmethod
    def ok(text: str) -> tuple[int, dict[str, Any], dict[str, str]]:
        return (
            200,
            {
                "id": "chatcmpl-test",
                "object": "chat.completion",
                "created": 0,
                "model": MODEL,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1000, "completion_tokens": 500, "total_tokens": 1500},
            },
            {},
        )


def handler_for(model: StandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", 0))
            body = json.loads(self.rfile.read(length))
            if self.path != "/v1/chat/completions":
                status, payload, headers = 404, {"error": {"message": "no such route"}}, {}
            else:
                status, payload, headers = model.answer(body)
            data = json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (the timeout scenario)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@pytest.fixture
def stand_in() -> Iterator[tuple[StandIn, str]]:
    model = StandIn()
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler_for(model))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield model, f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def build(pack: Path, base_url: str, *extra: object) -> Any:
    return cli(
        "specs", "build", "1-6", "--backend", "openai", "--model", MODEL, "--base-url", base_url,
        "--api-key", "test-key", "--out", pack, "--timeout", CLIENT_TIMEOUT_S, "--retries", 3,
        "--concurrency", 4, "--quiet", *extra,
    )  # fmt: skip


def test_build_against_the_stand_in(stand_in: tuple[StandIn, str], tmp_path: Path) -> None:
    model, base_url = stand_in
    pack_path = tmp_path / "llm.sgfspack"
    result = build(pack_path, base_url)
    assert result.returncode == 0, result.stderr
    assert "6 specs built (4 generated, 1 repaired, 1 fell back)" in result.stderr
    with SpecPack.open(pack_path) as pack:
        assert pack.verify() == []
        meta = pack.metadata
        assert (meta["backend"], meta["model"], meta["prompt_version"]) == ("openai", MODEL, "v2")
        entries = {e.seed: e for e in pack.entries()}
        for seed in (VALID, TIMEOUT, RATE_LIMITED, SERVER_ERROR):
            assert entries[seed].status == "generated" and entries[seed].attempts == 1
            assert pack.spec(seed).project.title == model_title(seed)
        # Invalid, then repaired with the validation message fed back.
        assert (entries[REPAIRED].status, entries[REPAIRED].attempts) == ("repaired", 2)
        assert entries[REPAIRED].prompt_tokens == 2000 and entries[REPAIRED].completion_tokens == 1000
        repair_turn = model.requests[REPAIRED][1]["messages"]
        assert repair_turn[-2]["role"] == "assistant" and "nonexistent_column" in repair_turn[-2]["content"]
        assert "unknown name 'nonexistent_column'" in repair_turn[-1]["content"]
        # Hostile every time: three attempts (1 + 2 repairs), then the procedural spec, recorded as a fallback.
        hostile = entries[HOSTILE]
        assert (hostile.status, hostile.attempts) == ("fallback", 3)
        assert "path_variables[0].values[0]" in hostile.note
        assert "expression" in model.requests[HOSTILE][1]["messages"][-1]["content"]
        assert pack.spec(HOSTILE) == build_spec(HOSTILE)
    assert not Path("pwned").exists() and not (tmp_path / "pwned").exists()
    # Retries: the timeout, the two 429s and the 503 were sent again by the backend, not counted as attempts.
    assert len(model.requests[TIMEOUT]) == 2
    assert len(model.requests[RATE_LIMITED]) == 3
    assert len(model.requests[SERVER_ERROR]) == 2
    # What the stand-in received: the model, a per-request seed, and the JSON schema as response_format.
    first = model.requests[VALID][0]
    assert first["model"] == MODEL and isinstance(first["seed"], int)
    assert first["response_format"]["type"] == "json_schema"
    assert first["response_format"]["json_schema"]["schema"]["required"] == [
        "project",
        "path_variables",
        "template",
        "variables",
    ]
    seeds_sent = {body["seed"] for bodies in model.requests.values() for body in bodies}
    assert len(seeds_sent) > 3  # per-request seeds differ between repositories and attempts
    # The pack drives every command: the model's title reaches the spec, the fallback seed is procedural.
    spec = json.loads(cli("spec", VALID, "--specs", pack_path).stdout)
    assert spec["project"]["title"] == model_title(VALID)
    assert cli("digest", HOSTILE, "--specs", pack_path).stdout.strip() == generators.repository(HOSTILE).digest()
    listing = cli("specs", "ls", pack_path).stdout
    assert "# statuses: generated 4, repaired 1, fallback 1, added 0" in listing
    assert "# tokens: prompt 9000, completion 4500" in listing  # 9 answers: 4 valid, 2 (repaired), 3 (hostile)
    # A rerun finds everything done and sends nothing.
    before = sum(len(v) for v in model.requests.values())
    again = build(pack_path, base_url)
    assert again.returncode == 0 and "0 specs built" in again.stderr and "6 already there" in again.stderr
    assert sum(len(v) for v in model.requests.values()) == before


def test_environment_defaults_and_refused_credentials(
    stand_in: tuple[StandIn, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model, base_url = stand_in
    model.refuse_all = 401
    monkeypatch.setenv("OPENAI_BASE_URL", base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "wrong")
    pack = tmp_path / "p.sgfspack"
    result = cli("specs", "build", "1-3", "--backend", "openai", "--model", MODEL, "--out", pack, "--quiet")
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and "HTTP 401" in lines[0] and "invalid api key" in lines[0], result.stderr
    assert SpecPack.open(pack).seeds() == []


def test_unreachable_endpoint_stops_the_build(tmp_path: Path) -> None:
    result = cli(
        "specs", "build", "1", "--backend", "openai", "--model", MODEL, "--base-url", "http://127.0.0.1:9/v1",
        "--out", tmp_path / "p", "--retries", 0, "--quiet",
    )  # fmt: skip
    assert result.returncode == 1 and "unreachable" in result.stderr, result.stderr


def test_missing_openai_package_names_the_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "openai", None)  # import openai now raises ImportError
    line = one_line_error(cli("specs", "build", "1", "--backend", "openai", "--model", "m", "--out", tmp_path / "p"))
    assert "sgfs[openai]" in line
