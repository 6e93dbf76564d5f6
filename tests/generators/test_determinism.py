"""Same seed, same bytes: golden digests, and equality across processes, hash seeds and time zones."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from generators.rng import Stream, derive_key
from tests.helpers import repo

GOLDEN = json.loads((Path(__file__).parent / "golden_digests.json").read_text())["digests"]
# The two largest golden repositories are checked in the slow lane only.
HEAVY = {"10", "118"}


@pytest.mark.parametrize("seed", [s for s in GOLDEN if s not in HEAVY])
def test_golden_digest(seed: str) -> None:
    assert repo(int(seed)).digest() == GOLDEN[seed]


@pytest.mark.slow
@pytest.mark.parametrize("seed", sorted(HEAVY))
def test_golden_digest_large(seed: str) -> None:
    assert repo(int(seed)).digest() == GOLDEN[seed]


def test_stream_golden_values() -> None:
    """The bit stream and its transforms are ours: these numbers must never change silently."""
    stream = Stream(42, "golden")
    assert derive_key(42, "golden") == stream.key
    assert stream.raw(2).tolist() == _GOLDEN_RAW
    assert [round(v, 12) for v in Stream(42, "golden").uniform(2).tolist()] == _GOLDEN_UNIFORM


_GOLDEN_RAW = json.loads((Path(__file__).parent / "golden_digests.json").read_text())["stream"]["raw"]
_GOLDEN_UNIFORM = json.loads((Path(__file__).parent / "golden_digests.json").read_text())["stream"]["uniform"]

_CHILD = """
import json, sys
import generators
seeds = [int(s) for s in sys.argv[1:]]
print(json.dumps({s: generators.repository(s).digest() for s in seeds}))
"""


@pytest.mark.parametrize(
    "environment",
    [
        {"PYTHONHASHSEED": "0", "TZ": "UTC"},
        {"PYTHONHASHSEED": "12345", "TZ": "Asia/Kathmandu"},
        {"PYTHONHASHSEED": "random", "TZ": "America/St_Johns", "LC_ALL": "C"},
    ],
)
def test_digest_is_the_same_in_other_processes(environment: dict[str, str]) -> None:
    seeds = ["2", "8", "17", "9223372036854775807"]
    env = {**os.environ, **environment}
    result = subprocess.run(
        [sys.executable, "-c", _CHILD, *seeds],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert json.loads(result.stdout) == {s: GOLDEN[s] for s in seeds}


def _reference_uniform(stream: Stream, n: int) -> list[float]:
    """``uniform`` by its definition: the top 53 bits of the raw draws, as doubles in (0, 1)."""
    return [((bits >> 11) + 0.5) / 2.0**53 for bits in stream.raw(n).tolist()]


@pytest.mark.parametrize("n", [1, 2, 4, 5, 300])
def test_uniform_is_its_definition_for_any_count(n: int) -> None:
    assert Stream(7, "u").uniform(n).tolist() == _reference_uniform(Stream(7, "u"), n)


def test_children_are_the_child_streams() -> None:
    parent = Stream(2**63 - 1, "file", "a/b.csv")
    names = ["x", "temp_c", "é", ""]
    assert [s.key for s in parent.children(names)] == [parent.child(name).key for name in names]


@pytest.mark.parametrize("ahead", [0, 1, 50, 100, 10_000])
def test_prefetched_uniforms_change_no_draw(ahead: int) -> None:
    """Draws computed ahead (too few, some, more than used) equal the draws computed on demand."""
    from generators.rng import prefetch_uniforms

    def draws(prefetch: bool) -> list[list[float]]:
        streams = [Stream(11, "p", i) for i in range(3)]
        streams[2].uniform(3)  # a stream that already drew is left alone
        if prefetch:
            prefetch_uniforms(streams, [ahead, ahead, ahead])
        return [
            [*s.normal(1.0, 2.0, 40).tolist(), *s.uniform(3).tolist(), *s.beta(0.7, 3.0, 60).tolist()] for s in streams
        ]

    assert draws(True) == draws(False)
