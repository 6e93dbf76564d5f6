"""The ``procedural`` backend: answers every request with the procedural builder's own draft, so that a pack
built with it holds exactly the specs of the embedded builder (and every command works with no model)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from generators.builders.procedural import build_spec
from generators.llm.base import ChatRequest, Completion, Sampling
from generators.llm.draft import draft_of


class ProceduralBackend:
    name = "procedural"
    model = "builtin"

    def complete(self, requests: Sequence[ChatRequest], sampling: Sampling) -> list[Completion]:
        return [Completion(json.dumps(draft_of(build_spec(r.key)))) for r in requests]

    def close(self) -> None:
        pass
