"""The FUSE mount: MountSource without FUSE, then real mounts through the ``sgfs mount`` command line.

Tests marked ``fuse`` mount for real in a temporary directory and always unmount in teardown. Without
/dev/fuse they are skipped, or fail when the environment variable CI is "true" (a CI job that is meant to
mount must not pass by skipping).
"""

from __future__ import annotations

import collections
import contextlib
import errno
import functools
import hashlib
import io
import json
import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from generators import MAX_SEED
from sgfs.mount.control import FSTYPE, mount_type
from tests.helpers import EXTENSIONS, repo, small_csv_with_readme, small_seeds
from tests.helpers.commands import SGFS, cli, one_line_error, sgfs, wait_until
from tests.helpers.mounts import daemon_pid, files_under, force_unmount, is_mounted, mounted, require_fuse, rss_kib

# -- helpers ---------------------------------------------------------------------------------------------


# -- MountSource, without FUSE ---------------------------------------------------------------------------


# -- real mounts -----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    """``sgfs export`` of two small repositories per extension."""
    require_fuse()  # only the mount tests use these copies: skip (or fail in CI) before the work
    root = tmp_path_factory.mktemp("export")
    out = {seed: root / str(seed) for seeds in small_seeds().values() for seed in seeds}
    for seed, path in out.items():
        result = cli("export", seed, path, "--quiet")
        assert result.returncode == 0, result.stderr
    return out


@pytest.fixture(scope="module")
def mnt(tmp_path_factory: pytest.TempPathFactory, exported: dict[int, Path]) -> Iterator[Path]:
    listed = [*exported, 118]
    with mounted(tmp_path_factory.mktemp("mount") / "mnt", "--seeds", ",".join(map(str, listed))) as path:
        yield path


@pytest.mark.fuse
def test_root_lists_exactly_the_given_seeds(mnt: Path, exported: dict[int, Path]) -> None:
    expected = sorted(str(s) for s in [*exported, 118])
    assert sorted(os.listdir(mnt)) == expected
    ls = subprocess.run(["ls", str(mnt)], capture_output=True, text=True, check=True)
    assert sorted(ls.stdout.split()) == expected
    assert os.stat(mnt).st_nlink == 2 + len(expected)


@pytest.mark.fuse
def test_bad_seeds_and_paths_are_enoent(mnt: Path) -> None:
    for name in ("abc", "-1", "007", "9223372036854775808", "118/nope", "118/README.md/x", ".hidden"):
        with pytest.raises(FileNotFoundError):
            os.stat(mnt / name)
    assert (mnt / "123456789").is_dir() and os.listdir(mnt / "123456789")
    assert (mnt / str(MAX_SEED)).is_dir()
    assert "123456789" not in os.listdir(mnt)


@pytest.mark.fuse
def test_find_matches_sgfs_tree(mnt: Path, exported: dict[int, Path]) -> None:
    for seed in [*list(exported)[::3], 118]:
        found = subprocess.run(
            f"cd {mnt / str(seed)} && find . -type f | sed 's|^\\./||' | LC_ALL=C sort",
            shell=True,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        tree = cli("tree", seed)
        assert tree.returncode == 0, tree.stderr
        assert found == tree.stdout and found, seed


@pytest.mark.fuse
def test_bytes_equal_export_for_every_extension(mnt: Path, exported: dict[int, Path]) -> None:
    seen = set()
    for seed, local in exported.items():
        seen.add(repo(seed).spec.extension)
        paths = files_under(local)
        assert paths == files_under(mnt / str(seed))
        for path in paths:
            assert (mnt / str(seed) / path).read_bytes() == (local / path).read_bytes(), (seed, path)
        cat = subprocess.run(["cat", str(mnt / str(seed) / paths[-1])], capture_output=True, check=True)
        assert cat.stdout == (local / paths[-1]).read_bytes()
    assert seen == set(EXTENSIONS)


@pytest.mark.fuse
def test_pandas_reads_through_the_mount(mnt: Path, exported: dict[int, Path]) -> None:
    pd = pytest.importorskip("pandas")
    readers = {
        "csv": pd.read_csv,
        "json": pd.read_json,
        "jsonl": functools.partial(pd.read_json, lines=True),
        "txt": functools.partial(pd.read_csv, sep="\t"),
        "xlsx": pd.read_excel,
    }
    for ext, read in readers.items():
        seed = small_seeds()[ext][0]
        data_files = [p for p in files_under(exported[seed]) if p.endswith(f".{ext}")]
        for path in data_files[:2]:
            through_mount = read(mnt / str(seed) / path)
            assert len(through_mount) > 0 and len(through_mount.columns) >= 2
            pd.testing.assert_frame_equal(through_mount, read(exported[seed] / path))
            if ext != "xlsx":  # also from an open file object, as agents often do
                with open(mnt / str(seed) / path, encoding="utf-8") as handle:
                    pd.testing.assert_frame_equal(read(io.StringIO(handle.read())), through_mount)


@pytest.mark.fuse
def test_wc_matches_stat_and_export(mnt: Path, exported: dict[int, Path]) -> None:
    files = [mnt / str(seed) / p for seed, local in exported.items() for p in files_under(local)]
    assert len(files) > 60
    wc = subprocess.run(["wc", "-c", *map(str, files)], capture_output=True, text=True, check=True)
    sizes = subprocess.run(["stat", "-c", "%s", *map(str, files)], capture_output=True, text=True, check=True)
    wc_sizes = [int(line.split()[0]) for line in wc.stdout.splitlines()[: len(files)]]
    assert wc_sizes == [int(s) for s in sizes.stdout.split()]
    local = [exported[int(f.relative_to(mnt).parts[0])] / Path(*f.relative_to(mnt).parts[1:]) for f in files]
    assert wc_sizes == [p.stat().st_size for p in local]


@pytest.mark.fuse
def test_random_offset_reads(mnt: Path, exported: dict[int, Path]) -> None:
    rng = random.Random(118)
    for seed, local in exported.items():
        for path in files_under(local)[:3]:
            data = (local / path).read_bytes()
            fd = os.open(mnt / str(seed) / path, os.O_RDONLY)
            try:
                for _ in range(40):
                    offset = rng.randrange(len(data) + 100)
                    size = rng.choice([1, 7, 512, 4096, 65536, 200_000])
                    assert os.pread(fd, size, offset) == data[offset : offset + size]
                assert os.pread(fd, 10, len(data)) == b""
            finally:
                os.close(fd)


@pytest.mark.fuse
def test_attributes(mnt: Path) -> None:
    seed_dir = mnt / "118"
    r = repo(118)
    path = r.file_paths()[0]
    st = os.stat(seed_dir / path)
    assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o444
    assert st.st_nlink == 1 and st.st_size == len(r.read(path))
    assert (st.st_uid, st.st_gid) == (os.getuid(), os.getgid())
    assert st.st_mtime == st.st_atime == st.st_ctime == os.stat(seed_dir).st_mtime
    top = r.list("")
    dst = os.stat(seed_dir)
    assert stat.S_ISDIR(dst.st_mode) and stat.S_IMODE(dst.st_mode) == 0o555
    assert dst.st_nlink == 2 + sum(e.is_dir for e in top)
    with os.scandir(seed_dir) as entries:  # d_type from readdir, no stat needed
        kinds = {e.name: e.is_dir(follow_symlinks=False) for e in entries}
    assert kinds == {e.name: e.is_dir for e in top}
    vfs = os.statvfs(mnt)
    assert vfs.f_flag & os.ST_RDONLY and vfs.f_namemax == 255 and vfs.f_bsize > 0
    # No extended attributes: the kernel answers "not supported" (or, with other kernels, an empty list).
    no_xattr = (errno.ENODATA, errno.EOPNOTSUPP, getattr(errno, "ENOATTR", errno.ENODATA))
    try:
        assert os.listxattr(seed_dir / path) == []
    except OSError as exc:
        assert exc.errno in no_xattr
    with pytest.raises(OSError) as info:
        os.getxattr(seed_dir / path, "user.spec")
    assert info.value.errno in no_xattr


@pytest.mark.fuse
def test_extended_attributes_are_not_supported(mnt: Path) -> None:
    """No xattrs: reading or listing them is ENOTSUP (nothing privileged hides there), as getfattr shows it."""
    r = repo(118)
    for path in (mnt / "118" / r.file_paths()[0], mnt / "118", mnt):
        with pytest.raises(OSError) as info:
            os.getxattr(path, "user.sgfs")
        assert info.value.errno == errno.ENOTSUP, (path, info.value)
        with pytest.raises(OSError) as info:
            os.listxattr(path)
        assert info.value.errno == errno.ENOTSUP, (path, info.value)
    if shutil.which("getfattr"):
        result = subprocess.run(["getfattr", "-d", str(mnt / "118")], capture_output=True, text=True, check=False)
        assert result.returncode != 0 and "Operation not supported" in result.stderr, result


def test_writes_fail_with_erofs(mnt: Path) -> None:
    seed_dir = mnt / "118"
    r = repo(118)
    path = seed_dir / r.file_paths()[0]
    folder = seed_dir / next(e.name for e in r.list("") if e.is_dir)
    attempts: dict[str, Callable[[], object]] = {
        "O_WRONLY": lambda: os.open(path, os.O_WRONLY),
        "O_APPEND": lambda: os.open(path, os.O_WRONLY | os.O_APPEND),
        "O_RDWR": lambda: os.open(path, os.O_RDWR),
        "O_RDONLY|O_TRUNC": lambda: os.open(path, os.O_RDONLY | os.O_TRUNC),
        "create": lambda: os.open(seed_dir / "new.csv", os.O_WRONLY | os.O_CREAT, 0o644),
        "mkdir": lambda: os.mkdir(seed_dir / "newdir"),
        "remove": lambda: os.remove(path),
        "rmdir": lambda: os.rmdir(folder),
        "rename": lambda: os.rename(path, seed_dir / "moved.csv"),
        "chmod": lambda: os.chmod(path, 0o644),
        "chown": lambda: os.chown(path, os.getuid(), os.getgid()),
        "truncate": lambda: os.truncate(path, 0),
        "utime": lambda: os.utime(path, (0, 0)),
        "link": lambda: os.link(path, seed_dir / "hard"),
        "symlink": lambda: os.symlink(path, seed_dir / "soft"),
        "setxattr": lambda: os.setxattr(path, "user.x", b"1"),
        "removexattr": lambda: os.removexattr(path, "user.x"),
        "mkdir at root": lambda: os.mkdir(mnt / "newdir"),  # (a seed name would be EEXIST)
    }
    for name, attempt in attempts.items():
        with pytest.raises(OSError) as info:
            attempt()
        assert info.value.errno == errno.EROFS, (name, info.value)
    shell = {
        "touch": ["touch", str(seed_dir / "new.txt")],
        "rm": ["rm", "-f", str(path)],
        "mv": ["mv", str(path), str(seed_dir / "moved")],
        "chmod": ["chmod", "u+w", str(path)],
        "truncate": ["truncate", "-s", "0", str(path)],
        "mkdir": ["mkdir", str(seed_dir / "x")],
    }
    if shutil.which("setfattr"):
        shell["setfattr"] = ["setfattr", "-n", "user.x", "-v", "1", str(path)]
    for name, command in shell.items():
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        assert result.returncode != 0 and "Read-only file system" in result.stderr, (name, result.stderr)
    assert path.read_bytes() == r.read(r.file_paths()[0])


READER = """
import hashlib, json, random, sys
paths = json.loads(sys.stdin.read())
random.Random(int(sys.argv[1])).shuffle(paths)
out = {}
for p in paths:
    with open(p, "rb") as f:
        out[p] = hashlib.sha256(f.read()).hexdigest()
print(json.dumps(out))
"""


@pytest.mark.fuse
def test_parallel_readers_get_identical_bytes(mnt: Path, exported: dict[int, Path]) -> None:
    # Repositories not read by any other test: the eight readers race on cold files.
    seeds = [s for s in range(3000, 3400) if len(repo(s).file_paths()) <= 25][:4]
    paths = [str(mnt / str(s) / p) for s in seeds for p in repo(s).file_paths()]
    pipe = subprocess.PIPE
    command = [sys.executable, "-c", READER]
    readers = [subprocess.Popen([*command, str(i)], stdin=pipe, stdout=pipe, stderr=pipe, text=True) for i in range(8)]
    outputs = [r.communicate(json.dumps(paths), timeout=120) for r in readers]
    assert all(r.returncode == 0 for r in readers), [err for _, err in outputs]
    digests = [json.loads(out) for out, _ in outputs]
    assert all(d == digests[0] for d in digests) and len(digests[0]) == len(paths)
    expected = {
        str(mnt / str(s) / p): hashlib.sha256(repo(s).read(p)).hexdigest() for s in seeds for p in repo(s).file_paths()
    }
    assert digests[0] == expected


@pytest.mark.fuse
def test_daemon_memory_stays_bounded(tmp_path: Path) -> None:
    # 2 000 files of the largest csv/txt repositories (cheap formats) among a quick scan.
    sizes = sorted(
        ((len(repo(s).file_paths()), s) for s in range(1, 301) if repo(s).spec.extension in ("csv", "txt")),
        reverse=True,
    )
    seeds, total = [], 0
    for count, seed in sizes:
        seeds.append(seed)
        total += count
        if total >= 2000:
            break
    with mounted(tmp_path / "mnt", "--cache-mb", "2") as mnt:
        pid = daemon_pid(mnt)
        assert pid is not None
        files = [mnt / str(s) / p for s in seeds for p in repo(s).file_paths()][:2000]
        samples = {}
        for i, path in enumerate(files, 1):
            assert len(path.read_bytes()) == path.stat().st_size
            if i in (1000, len(files) - 1000, len(files)):
                samples[i] = rss_kib(pid)
        first, last = samples[1000], samples[len(files)]
        print(f"daemon RSS after 1000/{len(files) - 1000}/{len(files)} files: {samples} KiB")
        assert last < 300 * 1024, f"daemon RSS {last} KiB after {len(files)} files"
        assert last - first < 40 * 1024, f"daemon RSS grew from {first} to {last} KiB"


NO_EXTRAS = ("--cache-dir", "", "--workers", "0")
FAULTY_DAEMON = """
import sys
from generators import Repository
broken = sys.argv[1]
original = Repository.read
def read(self, path):
    if path == broken:
        raise RuntimeError("injected failure in " + path)
    return original(self, path)
Repository.read = read
from sgfs.mount.daemon import main
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.fuse
def test_generation_failure_answers_eio_and_keeps_serving(tmp_path: Path) -> None:
    require_fuse()
    seed = small_csv_with_readme()
    good, bad = repo(seed).file_paths()[:2]
    mnt, log = tmp_path / "mnt", tmp_path / "daemon.log"
    mnt.mkdir()
    daemon = subprocess.Popen(
        # No disk cache or worker processes: the failure is injected into this daemon process only.
        [sys.executable, "-c", FAULTY_DAEMON, bad, str(mnt), "--seeds", str(seed), "--log", str(log), *NO_EXTRAS],
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        assert wait_until(lambda: mount_type(str(mnt)) == FSTYPE or daemon.poll() is not None, 30)
        assert daemon.poll() is None, daemon.stderr.read() if daemon.stderr else ""
        for _ in range(2):  # failures are not cached: each attempt is EIO
            with pytest.raises(OSError) as info:
                (mnt / str(seed) / bad).read_bytes()
            assert info.value.errno == errno.EIO
        assert (mnt / str(seed) / good).read_bytes() == repo(seed).read(good)
        assert sorted(os.listdir(mnt / str(seed))) == sorted(e.name for e in repo(seed).list(""))
        text = log.read_text()
        assert f"seed {seed}" in text and bad in text and "injected failure" in text
    finally:
        if is_mounted(mnt):
            cli("unmount", mnt)
        force_unmount(mnt)
        daemon.wait(10)
    assert daemon.returncode == 0 and not is_mounted(mnt)


@pytest.mark.fuse
@pytest.mark.parametrize("busy", [False, True], ids=["idle", "busy"])
def test_sigterm_unmounts_cleanly(tmp_path: Path, busy: bool) -> None:
    """Idle, or while readers keep the request threads synthesising: the mount goes and the daemon exits."""
    with mounted(tmp_path / "mnt", "--seeds", "1", "--no-disk-cache") as mnt:
        assert os.listdir(mnt) == ["1"]
        pid = daemon_pid(mnt)
        assert pid is not None
        if busy:
            seed = small_seeds()["xlsx"][0]
            readers = [
                subprocess.Popen(["sh", "-c", f"find {mnt}/{seed} -type f | sort {order} | xargs cat"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                for order in ("", "-r")
            ]  # fmt: skip
            time.sleep(0.3)
        os.kill(pid, signal.SIGTERM)
        if busy:
            for reader in readers:
                reader.wait(20)
        assert wait_until(lambda: not is_mounted(mnt), 10), "SIGTERM left the mount behind"
        assert wait_until(lambda: daemon_pid(mnt) is None, 10), "the daemon outlived its mount"
        assert os.listdir(mnt) == []


@pytest.mark.fuse
def test_sgfs_unmount(tmp_path: Path) -> None:
    with mounted(tmp_path / "mnt", "--seeds", "2,1") as mnt:
        assert sorted(os.listdir(mnt)) == ["1", "2"]
        pid = daemon_pid(mnt)
        result = sgfs("unmount", mnt)
        assert result.returncode == 0, result.stderr
        assert not is_mounted(mnt) and os.listdir(mnt) == []  # gone when the command returns
        assert wait_until(lambda: pid is None or not Path(f"/proc/{pid}").exists(), 10)
    assert "not mounted" in one_line_error(cli("unmount", tmp_path / "mnt"))
    assert "does not exist" in one_line_error(cli("unmount", tmp_path / "missing"))
    assert "not an sgfs mount" in one_line_error(cli("unmount", "/proc"))


@pytest.mark.fuse
def test_mount_errors(tmp_path: Path, mnt: Path) -> None:
    require_fuse()
    assert "does not exist" in one_line_error(cli("mount", tmp_path / "missing"))
    full = tmp_path / "full"
    full.mkdir()
    (full / "x").write_text("x")
    assert "not empty" in one_line_error(cli("mount", full))
    assert "not a directory" in one_line_error(cli("mount", full / "x"))
    assert "already an sgfs mount" in one_line_error(sgfs("mount", mnt))
    assert "invalid seed" in one_line_error(cli("mount", tmp_path, "--seeds", "1,abc"))
    assert not is_mounted(tmp_path) and not is_mounted(full)


@pytest.mark.fuse
def test_foreground_mount_stops_on_sigint(tmp_path: Path) -> None:
    require_fuse()
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    server = subprocess.Popen(
        [*SGFS, "mount", str(mnt), "--foreground", "--seeds", "3"],
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert wait_until(lambda: is_mounted(mnt) or server.poll() is not None, 30)
        assert os.listdir(mnt) == ["3"]
        assert (mnt / "3" / repo(3).file_paths()[0]).read_bytes() == repo(3).read(repo(3).file_paths()[0])
        server.send_signal(signal.SIGINT)
        assert server.wait(10) == 0
        _, err = server.communicate()
        assert "mount is up" in err and "Traceback" not in err
    finally:
        if server.poll() is None:
            server.kill()
        force_unmount(mnt)
    assert not is_mounted(mnt)


@pytest.mark.fuse
def test_stale_mount_is_reported(tmp_path: Path) -> None:
    with mounted(tmp_path / "mnt") as mnt:
        pid = daemon_pid(mnt)
        assert pid is not None
        os.kill(pid, signal.SIGKILL)  # the daemon dies without unmounting
        assert wait_until(lambda: not Path(f"/proc/{pid}").exists(), 10)
        assert "stale" in one_line_error(cli("mount", mnt))
        result = cli("unmount", mnt)  # sgfs unmount clears a stale mount too
        assert result.returncode == 0, result.stderr


@pytest.mark.fuse
def test_a_stopped_synthesis_worker_does_not_hang_readers(tmp_path: Path) -> None:
    """SIGSTOP the daemon's only synthesis worker, list a folder (its sizes go to that worker) and `cat` a file
    in it: the worker is killed and replaced after the pool's task timeout and `cat` gets the exact bytes,
    instead of waiting for as long as the worker is stopped."""
    from sgfs.store.synthpool import TASK_TIMEOUT_S

    seed = small_seeds()["csv"][1]
    r = repo(seed)
    folders = collections.Counter(path.rpartition("/")[0] for path in r.file_paths())
    folder = folders.most_common(1)[0][0]
    path = next(p for p in r.file_paths() if p.rpartition("/")[0] == folder)
    log = tmp_path / "daemon.log"
    with mounted(tmp_path / "mnt", "--workers", 1, "--no-disk-cache", "--log", log) as mnt:
        daemon = daemon_pid(mnt)
        assert daemon is not None
        children = Path(f"/proc/{daemon}/task/{daemon}/children").read_text().split()
        workers = [int(c) for c in children if b"spawn_main" in Path(f"/proc/{c}/cmdline").read_bytes()]
        assert len(workers) == 1, children
        os.kill(workers[0], signal.SIGSTOP)
        started = time.monotonic()
        try:
            listed = subprocess.run(["ls", str(mnt / str(seed) / folder)], capture_output=True, timeout=60, check=False)
            read = subprocess.run(
                ["cat", str(mnt / str(seed) / path)], capture_output=True, timeout=TASK_TIMEOUT_S + 30, check=False
            )
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(workers[0], signal.SIGKILL)  # a leftover, if the daemon did not kill it
        took = time.monotonic() - started
        assert listed.returncode == 0 and read.returncode == 0 and read.stdout == r.read(path)
        assert took >= TASK_TIMEOUT_S - 1, took  # the read did wait for the stopped worker, then was served
        assert wait_until(lambda: "replaced by pid" in log.read_text(), 10), log.read_text()
        assert "answered nothing" in log.read_text(), log.read_text()
