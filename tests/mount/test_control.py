"""Mount control (sgfs.mount.control) and mount options (sgfs.mount.options) without mounting."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sgfs.errors import SgfsError
from sgfs.mount.control import check_fuse
from sgfs.mount.options import MountOptions
from sgfs.store.repositories import format_seed_list, parse_seed_list


def test_fuse_unavailable_is_a_clear_error() -> None:
    with pytest.raises(SgfsError, match="/dev/nonexistent-fuse is missing"):
        check_fuse(device="/dev/nonexistent-fuse")
    if os.path.exists("/dev/fuse"):
        with pytest.raises(SgfsError, match="fusermount"):
            check_fuse(which=lambda name: None)


def test_mount_options_travel_to_the_daemon_and_back(tmp_path: Path) -> None:
    """``to_argv`` and ``from_argv`` are inverse: a detached daemon serves exactly the options ``sgfs mount`` read."""
    every = MountOptions(
        seeds=(1, 2, 3, 118, 7),
        cache_mb=9,
        log_file=str(tmp_path / "log"),
        audit_file=str(tmp_path / "audit"),
        specs=str(tmp_path / "pack"),
        fallback="procedural",
        cache_dir="",
        disk_cache_mb=5,
        workers=0,
        cache_listings=False,
        exit_with=4242,
    )
    for options in (MountOptions(), every):
        mountpoint, back, background = MountOptions.from_argv(["/mnt/x", *options.to_argv(), "--background"])
        assert (mountpoint, back, background) == ("/mnt/x", options, True)
    assert "1-3,118,7" in every.to_argv()


def test_mount_options_are_checked(tmp_path: Path) -> None:
    mnt = tmp_path / "mnt"
    with pytest.raises(SgfsError, match="--fallback only applies"):
        MountOptions(fallback="procedural").checked(str(mnt))
    with pytest.raises(SgfsError, match="must lie outside the mount point"):
        MountOptions(audit_file=str(mnt / "audit")).checked(str(mnt))
    with pytest.raises(SgfsError, match="cannot write log file"):
        MountOptions(log_file=str(tmp_path / "missing" / "log")).checked(str(mnt))
    checked = MountOptions(cache_dir="rel", specs="pack.sgfspack").checked(str(mnt))
    assert Path(checked.cache_dir or "").is_absolute() and Path(checked.specs or "").is_absolute()
    assert MountOptions(cache_dir="").checked(str(mnt)).cache_dir == ""  # no disk cache stays no disk cache


@pytest.mark.parametrize(
    ("seeds", "text"),
    [
        ([], ""),
        ([0], "0"),
        ([5, 4, 3], "5,4,3"),
        ([1, 2, 3, 118, 119, 7], "1-3,118-119,7"),
        (list(range(10_000)), "0-9999"),
    ],
)
def test_seed_lists_are_written_short_and_read_back(seeds: list[int], text: str) -> None:
    assert format_seed_list(seeds) == text
    assert (parse_seed_list(text) if text else []) == seeds
