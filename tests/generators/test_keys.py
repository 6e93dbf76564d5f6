"""Universe keys (generators.keys): salts, fingerprints, key files, and keyed repositories versus the open ones."""

from __future__ import annotations

import json
import os
import stat
from dataclasses import replace
from pathlib import Path

import pytest

import generators
from generators import Repository, build_spec
from generators.keys import Key, KeyFileError, exposed
from generators.packs import PackRepositories, SpecPack
from generators.paths import README_NAME
from generators.rng import Stream, root_stream
from generators.spec import SpecError, from_json
from tests.helpers.commands import cli

KEY_A = Key(bytes(range(32)))
KEY_B = Key(bytes(range(1, 33)))
SEEDS = (1, 2, 3, 118)


def test_salt_and_fingerprint_are_functions_of_the_key_and_never_the_key() -> None:
    assert KEY_A.salt(7) == Key(bytes(range(32))).salt(7)
    assert len({KEY_A.salt(seed) for seed in range(50)}) == 50  # one salt per seed
    assert KEY_A.salt(7) != KEY_B.salt(7)
    assert len(KEY_A.fingerprint) == 16 and KEY_A.fingerprint != KEY_B.fingerprint
    secret = KEY_A.secret.hex()
    for shown in (KEY_A.salt(7), KEY_A.fingerprint, repr(KEY_A), str(KEY_A)):
        assert secret not in shown and secret[:16] not in shown
    with pytest.raises(ValueError):
        KEY_A.salt(-1)
    with pytest.raises(KeyFileError):
        Key(b"short")


def test_root_streams_of_the_open_universe_are_todays() -> None:
    assert root_stream(118, "", "file", "a/b.csv").key == Stream(118, "file", "a/b.csv").key
    assert root_stream(118, KEY_A.salt(118), "spec").key != Stream(118, "spec").key


def test_new_key_file_is_private_and_never_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "universe.key"
    old_umask = os.umask(0)  # even a permissive umask gives 0600
    try:
        key = Key.new(path)
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and not exposed(path)
    text = path.read_text()
    assert text == key.secret.hex() + "\n" and len(text) == 65
    assert Key.load(path) == key
    with pytest.raises(KeyFileError, match="already exists"):
        Key.new(path)
    assert path.read_text() == text


@pytest.mark.parametrize(
    "content",
    [b"", b"abc\n", b"G" * 64 + b"\n", b"A" * 64 + b"\n", b"0" * 63, b"0" * 65, b"\xff" * 64, b"0" * 5000],
)
def test_malformed_key_files_are_refused(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "bad.key"
    path.write_bytes(content)
    with pytest.raises(KeyFileError, match="invalid key file"):
        Key.load(path)


def test_missing_unreadable_or_special_key_files_are_refused(tmp_path: Path) -> None:
    with pytest.raises(KeyFileError, match="cannot read key file"):
        Key.load(tmp_path / "missing.key")
    with pytest.raises(KeyFileError, match="not a regular file"):
        Key.load(tmp_path)
    fifo = tmp_path / "fifo.key"
    os.mkfifo(fifo)
    with pytest.raises(KeyFileError, match="not a regular file"):  # and it does not hang
        Key.load(fifo)


def test_open_universe_spec_json_is_unchanged() -> None:
    spec = build_spec(118)
    assert spec.universe == "" and '"universe"' not in spec.to_json()
    assert build_spec(118, universe="") == spec


@pytest.mark.parametrize("seed", SEEDS)
def test_keyed_repositories_differ_from_the_open_ones_and_between_keys(seed: int) -> None:
    open_repo = generators.repository(seed)
    a = Repository(build_spec(seed, universe=KEY_A.salt(seed)))
    b = Repository(build_spec(seed, universe=KEY_B.salt(seed)))
    assert a.spec != open_repo.spec and a.spec != b.spec
    assert a.file_paths() != open_repo.file_paths() or a.digest() != open_repo.digest()
    assert len({open_repo.digest(), a.digest(), b.digest()}) == 3
    # The same key and seed give the same repository again.
    assert Repository(build_spec(seed, universe=KEY_A.salt(seed))).digest() == a.digest()


def test_same_spec_in_another_universe_gives_other_tree_and_data() -> None:
    """The salt alone (same spec fields) changes the tree's sample and every file's data."""
    # A repository that holds every path of its template: both universes have the same paths, other bytes.
    seed = next(s for s in range(1, 500) if (t := generators.repository(s).tree).n_files == t.size)
    spec = generators.repository(seed).spec
    keyed = Repository(replace(spec, universe=KEY_A.salt(seed)))
    plain = Repository(spec)
    assert keyed.digest() != plain.digest()
    common = sorted(set(keyed.file_paths()) & set(plain.file_paths()) - {README_NAME})  # the README is the spec's
    assert common and all(keyed.read(p) != plain.read(p) for p in common[:5])


def test_keyed_spec_round_trips_and_holds_the_salt_not_the_key() -> None:
    spec = build_spec(5, universe=KEY_A.salt(5))
    text = spec.to_json()
    assert from_json(text) == spec
    assert KEY_A.salt(5) in text and KEY_A.secret.hex() not in text


@pytest.mark.parametrize("universe", ["xyz", "A" * 64, "0" * 63, 5, "0" * 64 + "\n"])
def test_malformed_universe_is_refused(universe: object) -> None:
    data = build_spec(5).to_dict()
    data["universe"] = universe
    with pytest.raises(SpecError, match="universe"):
        from_json(json.dumps(data))


def test_pack_specs_take_the_salt(tmp_path: Path) -> None:
    result = cli("specs", "build", "1-3", "--backend", "procedural", "--out", tmp_path / "p.sgfspack", "--quiet")
    assert result.returncode == 0, result.stderr
    pack = SpecPack.open(str(tmp_path / "p.sgfspack"))
    plain = PackRepositories(pack)
    keyed = PackRepositories(pack, key=KEY_A, fallback=True)
    for seed in (1, 2, 3):
        assert plain(seed).digest() == generators.repository(seed).digest()
        spec = keyed.spec(seed)
        assert spec.universe == KEY_A.salt(seed)
        assert replace(spec, universe="") == plain.spec(seed)  # the pack's formulas and text as written
        assert keyed(seed).digest() != plain(seed).digest()
    # Seeds outside the pack fall back to the keyed procedural spec.
    assert keyed.spec(40) == build_spec(40, universe=KEY_A.salt(40))
