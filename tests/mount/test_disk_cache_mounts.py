"""Real mounts with the disk cache: a second mount starts warm, damage is regenerated, --no-disk-cache writes
nothing, long listings show exact sizes, export and mounts share the cache."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sgfs.store.diskcache import INDEX_NAME, DiskCache
from sgfs.store.source import MIB, MountSource
from tests.helpers import data_files, entry_files, repo, small_csv_with_readme, small_seeds
from tests.helpers.commands import cli, one_line_error
from tests.helpers.mounts import files_under, mounted


@pytest.mark.fuse
def test_a_second_mount_starts_warm_and_damage_is_regenerated(tmp_path: Path) -> None:
    seed = small_seeds()["jsonl"][0]
    r = repo(seed)
    cache = tmp_path / "cache"
    with mounted(tmp_path / "first", "--seeds", str(seed), "--cache-dir", cache) as mnt:
        first = {p: (mnt / str(seed) / p).read_bytes() for p in r.file_paths()}
    entries = sorted(p for p in cache.rglob("*") if p.is_file() and p.name != INDEX_NAME)
    assert len(entries) == len(data_files(r)), "every data file read is kept (the README comes with the repository)"
    for entry in entries[::2]:  # damage every other entry: truncated or flipped
        raw = entry.read_bytes()
        entry.write_bytes(raw[:-3] if len(raw) % 2 else raw[:-1] + bytes([raw[-1] ^ 1]))
    with mounted(tmp_path / "second", "--seeds", str(seed), "--cache-dir", cache) as mnt:
        assert {p: (mnt / str(seed) / p).stat().st_size for p in r.file_paths()} == {
            p: len(r.read(p)) for p in r.file_paths()
        }
        assert {p: (mnt / str(seed) / p).read_bytes() for p in r.file_paths()} == first
    assert first == {p: r.read(p) for p in r.file_paths()}


@pytest.mark.fuse
def test_no_disk_cache_writes_nothing(tmp_path: Path) -> None:
    seed = small_csv_with_readme()
    home = tmp_path / "home"
    os.environ["XDG_CACHE_HOME"], previous = str(home), os.environ["XDG_CACHE_HOME"]
    try:
        with mounted(tmp_path / "mnt", "--seeds", str(seed), "--no-disk-cache") as mnt:
            assert len(files_under(mnt / str(seed))) == len(repo(seed).file_paths())
            for p in repo(seed).file_paths():
                (mnt / str(seed) / p).read_bytes()
    finally:
        os.environ["XDG_CACHE_HOME"] = previous
    assert not home.exists()


@pytest.mark.fuse
def test_long_listings_show_exact_sizes(tmp_path: Path) -> None:
    """`ls -l`/`find -printf` take sizes from READDIRPLUS answers: they must be the exact byte counts."""
    import subprocess

    seeds = [small_seeds()[ext][0] for ext in ("csv", "xlsx", "log")]
    with mounted(tmp_path / "mnt", "--seeds", ",".join(map(str, seeds)), "--no-disk-cache") as mnt:
        for seed in seeds:
            found = subprocess.run(
                ["find", str(mnt / str(seed)), "-type", "f", "-printf", "%s %P\\n"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            listed = dict(line.split(" ", 1)[::-1] for line in found.splitlines())
            assert listed == {p: str(len(repo(seed).read(p))) for p in repo(seed).file_paths()}


def test_export_and_mounts_share_the_disk_cache(tmp_path: Path) -> None:
    seed = small_seeds()["json"][0]
    r = repo(seed)
    cache = tmp_path / "cache"
    first = cli("export", seed, tmp_path / "a", "--quiet", "--cache-dir", cache)
    assert first.returncode == 0, first.stderr
    assert len(entry_files(DiskCache(cache, 64 * MIB))) == len(r.file_paths())
    source = MountSource([seed], disk=DiskCache(cache, 64 * MIB))
    assert all(source.read(f"/{seed}/{p}", 1 << 30, 0) == r.read(p) for p in r.file_paths())
    assert source.cache_info().generated == 0, "the mount found every file the export kept"
    second = cli("export", seed, tmp_path / "b", "--quiet", "--cache-dir", cache)
    assert second.returncode == 0, second.stderr
    assert files_under(tmp_path / "a") == files_under(tmp_path / "b")
    assert all((tmp_path / "b" / p).read_bytes() == r.read(p) for p in r.file_paths())


def test_mount_refuses_an_empty_cache_dir(tmp_path: Path) -> None:
    (tmp_path / "mnt").mkdir()
    assert "--no-disk-cache" in one_line_error(cli("mount", tmp_path / "mnt", "--cache-dir", ""))
