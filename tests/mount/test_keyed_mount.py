"""A mount with ``--key FILE`` serves the keyed universe; the daemon gets the key file's path, never the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from generators import Repository, build_spec
from generators.keys import Key
from generators.paths import README_NAME
from sgfs.mount.options import MountOptions
from tests.helpers import repo
from tests.helpers.commands import cli
from tests.helpers.mounts import daemon_pid, mounted


def test_mount_options_carry_the_key_path_only(tmp_path: Path) -> None:
    key = tmp_path / "universe.key"
    options = MountOptions(seeds=(1, 2), key_file=str(key)).checked(str(tmp_path / "mnt"))
    argv = options.to_argv()
    assert argv[argv.index("--key") + 1] == str(key)
    mountpoint, back, _ = MountOptions.from_argv([str(tmp_path / "mnt"), *argv])
    assert back == options and mountpoint == str(tmp_path / "mnt")
    assert "--key" not in MountOptions(seeds=(1,)).to_argv()


@pytest.mark.fuse
def test_keyed_mount_serves_the_keyed_bytes(tmp_path: Path) -> None:
    key_file = tmp_path / "universe.key"
    assert cli("key", "new", key_file).returncode == 0
    key = Key.load(key_file)
    seeds = (2, 3)
    with mounted(tmp_path / "mnt", "--seeds", "2,3", "--key", key_file, "--cache-dir", tmp_path / "cache") as mnt:
        pid = daemon_pid(mnt)
        assert pid is not None
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        secret = key.secret.hex()
        assert secret.encode() not in cmdline and secret[:16].encode() not in cmdline
        assert str(key_file).encode() in cmdline
        assert sorted(p.name for p in mnt.iterdir()) == ["2", "3"]  # directories stay named by the public seed
        for seed in seeds:
            keyed = Repository(build_spec(seed, universe=key.salt(seed)))
            served = sorted(str(p.relative_to(mnt / str(seed))) for p in (mnt / str(seed)).rglob("*") if p.is_file())
            assert served == sorted(keyed.file_paths())
            data = [p for p in keyed.file_paths() if p != README_NAME][:3]
            for path in data:
                content = (mnt / str(seed) / path).read_bytes()
                assert content == keyed.read(path)
                if path in repo(seed).file_paths():
                    assert content != repo(seed).read(path)
    # The same cache folder, now without the key: the open universe's bytes, never the keyed ones.
    with mounted(tmp_path / "mnt2", "--seeds", "3", "--cache-dir", tmp_path / "cache") as mnt:
        for path in [p for p in repo(3).file_paths() if p != README_NAME][:3]:
            assert (mnt / "3" / path).read_bytes() == repo(3).read(path)
