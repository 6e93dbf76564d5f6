"""``--key`` for the agent interfaces: the Inspect task's ``key`` parameter and ``sgfs mcp --key``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from generators import Repository, build_spec
from generators.keys import Key
from generators.paths import README_NAME
from tests.helpers.commands import cli

pytest.importorskip("inspect_ai")


def test_inspect_task_asks_the_keyed_universe(tmp_path: Path) -> None:
    from sgfs.agents.inspect_task.task import infinite_science

    key_file = tmp_path / "universe.key"
    assert cli("key", "new", key_file).returncode == 0
    fingerprint = Key.load(key_file).fingerprint
    keyed = infinite_science(seeds="2", per_type=1, key=str(key_file))
    plain = infinite_science(seeds="2", per_type=1)
    expected = [
        json.loads(line) for line in cli("qa", 2, "--per-type", 1, "--out", "-", "--key", key_file).stdout.splitlines()
    ]
    records = [sample.metadata["record"] for sample in keyed.dataset]
    assert [r["answer"] for r in records] == [q["answer"] for q in expected]
    assert [s.metadata["record"]["answer"] for s in plain.dataset] != [r["answer"] for r in records]
    assert keyed.metadata["key_fingerprint"] == fingerprint and plain.metadata["key_fingerprint"] is None
    secret = key_file.read_text().strip()
    assert all(secret not in str(sample.input) for sample in keyed.dataset)


def test_mcp_tools_read_the_keyed_universe() -> None:
    from sgfs.agents.mcp.tools import RepositoryTools
    from sgfs.store.repositories import keyed_procedural
    from sgfs.store.source import MountSource

    key = Key(b"\x05" * 32)
    seed = next(s for s in range(1, 50) if build_spec(s, universe=key.salt(s)).extension in ("csv", "txt"))
    tools = RepositoryTools(MountSource([seed], factory=keyed_procedural(key)))
    keyed = Repository(build_spec(seed, universe=key.salt(seed)))
    path = next(p for p in keyed.file_paths() if p != README_NAME)
    first_line = keyed.read(path).decode().splitlines()[1]
    assert first_line in str(tools.read_text_file(f"{seed}/{path}"))
