"""Questions in a keyed universe: a function of (key, seed), other than the open universe's."""

from __future__ import annotations

import pytest

import generators
from generators import Repository, build_spec
from generators.keys import Key
from qa.generate import Options, generate

KEY = Key(b"\x07" * 32)
OTHER = Key(b"\x08" * 32)


def _answers(repo: Repository) -> list[tuple[str, str, object]]:
    return [(q.id, q.question, q.answer) for q in generate(repo, Options(per_type=2))]


@pytest.mark.parametrize("seed", [1, 2, 118])
def test_keyed_questions_are_reproducible_and_differ(seed: int) -> None:
    keyed = _answers(Repository(build_spec(seed, universe=KEY.salt(seed))))
    assert keyed == _answers(Repository(build_spec(seed, universe=KEY.salt(seed))))
    open_set = _answers(generators.repository(seed))
    other = _answers(Repository(build_spec(seed, universe=OTHER.salt(seed))))
    assert [q[0] for q in keyed] == [q[0] for q in open_set]  # ids stay <seed>-<type>-<k>
    assert keyed != open_set and keyed != other


def test_salt_alone_changes_the_questions() -> None:
    """Same spec fields, another universe: the question stream itself is keyed too."""
    from dataclasses import replace

    spec = generators.repository(2).spec
    plain = [q.question for q in generate(Repository(spec), Options(per_type=3))]
    keyed = [q.question for q in generate(Repository(replace(spec, universe=KEY.salt(2))), Options(per_type=3))]
    assert plain != keyed
