"""The FUSE mount: MountSource without FUSE, then real mounts through the ``sgfs mount`` command line.

Tests marked ``fuse`` mount for real in a temporary directory and always unmount in teardown. Without
/dev/fuse they are skipped, or fail when the environment variable CI is "true" (a CI job that is meant to
mount must not pass by skipping).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import io
import json
import logging
import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import generators
from generators import MAX_SEED, Repository
from generators.paths import README_NAME
from sgfs.cli import main
from sgfs.daemon import FSTYPE, check_fuse, mount_type
from sgfs.errors import SgfsError
from sgfs.source import GenerationError, MountSource, Stat, seed_from_name

EXTENSIONS = ("csv", "json", "jsonl", "xlsx", "txt", "log")
SGFS = [sys.executable, "-c", "import sys; from sgfs.cli import main; sys.argv[0] = 'sgfs'; main()"]
STRIDE = 10  # seeds scanned for small repositories: 1, 11, 21, ... keeps the scan short


# -- helpers ---------------------------------------------------------------------------------------------
@functools.cache
def repo(seed: int) -> Repository:
    return generators.repository(seed)


@functools.cache
def small_seeds(max_files: int = 40, per_extension: int = 2) -> dict[str, list[int]]:
    """A few seeds per extension whose repositories have at most ``max_files`` files."""
    found: dict[str, list[int]] = {ext: [] for ext in EXTENSIONS}
    for seed in range(1, 2000):
        r = repo(seed)
        bucket = found[r.spec.extension]
        if len(bucket) < per_extension and len(r.file_paths()) <= max_files:
            bucket.append(seed)
        if all(len(b) == per_extension for b in found.values()):
            return found
    raise AssertionError(f"not enough small repositories: {found}")


def sgfs(*args: object, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """The ``sgfs`` command line in a child process: exit code and stderr exactly as a user sees them."""
    command = [*SGFS, *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)


def cli(*args: object) -> subprocess.CompletedProcess[str]:
    """The same ``main`` in this process: no interpreter start-up, for the many calls that need no child."""
    out, err, code = io.StringIO(), io.StringIO(), 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main([str(a) for a in args])
        except SystemExit as exc:
            code = int(exc.code or 0)
    return subprocess.CompletedProcess(list(args), code, out.getvalue(), err.getvalue())


def require_fuse() -> None:
    problem = None
    if not os.path.exists("/dev/fuse"):
        problem = "/dev/fuse is missing"
    elif not (shutil.which("fusermount3") or shutil.which("fusermount")):
        problem = "neither fusermount3 nor fusermount is on PATH"
    if problem is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"FUSE mount tests cannot run in CI: {problem} (give the job /dev/fuse and fuse3)")
    pytest.skip(f"FUSE unavailable: {problem}")


def is_mounted(mnt: Path) -> bool:
    return mount_type(str(mnt)) is not None


def daemon_pid(mnt: Path) -> int | None:
    """The pid of the ``python -m sgfs.daemon`` process serving ``mnt``."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"sgfs.daemon" in argv and str(mnt).encode() in argv:
            return int(entry.name)
    return None


def wait_until(predicate: object, timeout: float = 10.0) -> bool:
    assert callable(predicate)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return bool(predicate())


def force_unmount(mnt: Path) -> None:
    """Last resort for teardown: lazy unmount, then stop whatever daemon is left."""
    if is_mounted(mnt):
        for tool in ("fusermount3", "fusermount"):
            if shutil.which(tool):
                subprocess.run([tool, "-uz", str(mnt)], capture_output=True, check=False)
                break
    pid = daemon_pid(mnt)
    if pid is not None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@contextlib.contextmanager
def mounted(mnt: Path, *options: str) -> Iterator[Path]:
    """``sgfs mount MNT OPTIONS`` in the background; always unmounted afterwards, even on failure."""
    require_fuse()
    mnt.mkdir(parents=True, exist_ok=True)
    try:
        result = sgfs("mount", mnt, *options, timeout=60)
        assert result.returncode == 0, result.stderr
        assert is_mounted(mnt) and os.path.isdir(mnt)
        yield mnt
    finally:
        try:
            if is_mounted(mnt):
                cli("unmount", mnt)
        finally:
            force_unmount(mnt)
            wait_until(lambda: daemon_pid(mnt) is None, 5)
    assert not is_mounted(mnt)


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("sgfs: error: "), result.stderr
    return lines[0]


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def files_under(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


# -- MountSource, without FUSE ---------------------------------------------------------------------------
class FailingRepository(Repository):
    """Repository whose files named in ``broken`` fail to synthesise."""

    broken: frozenset[str] = frozenset()

    def read(self, path: str) -> bytes:
        if path in self.broken:
            raise RuntimeError(f"injected failure for {path}")
        return super().read(path)


def test_seed_names() -> None:
    assert seed_from_name("0") == 0
    assert seed_from_name("118") == 118
    assert seed_from_name(str(MAX_SEED)) == MAX_SEED
    for bad in ("", "abc", "-1", "+1", "007", "00", "1.0", " 1", "٣", str(MAX_SEED + 1)):
        assert seed_from_name(bad) is None, bad


def test_source_root_and_lookup() -> None:
    source = MountSource([5, 118, 5, 3])
    assert source.listdir("/") == [("5", True), ("118", True), ("3", True)]
    assert source.stat("/") == Stat(True, 0, 2 + 3)
    r = repo(118)
    top = r.list("")
    assert source.listdir("/118") == [(e.name, e.is_dir) for e in top]
    assert source.stat("/118") == Stat(True, 0, 2 + sum(e.is_dir for e in top))
    # Unlisted seeds resolve too; anything that is not a canonical seed does not.
    assert source.stat("/123456789").is_dir
    assert source.stat(f"/{MAX_SEED}").is_dir
    for bad in ("/abc", "/-1", "/007", f"/{MAX_SEED + 1}", "/118/nope", "/118/../118", "/118/./x"):
        with pytest.raises(FileNotFoundError):
            source.stat(bad)
    path = r.file_paths()[0]
    assert source.stat(f"/118/{path}") == Stat(False, len(r.read(path)), 1)
    with pytest.raises(NotADirectoryError):
        source.listdir(f"/118/{path}")
    with pytest.raises(IsADirectoryError):
        source.read("/118", 10, 0)
    with pytest.raises(IsADirectoryError):
        source.read("/", 10, 0)
    with pytest.raises(FileNotFoundError):
        source.read("/118/nope.csv", 10, 0)


def test_source_reads_at_offsets() -> None:
    seed = small_seeds()["xlsx"][0]
    source = MountSource([seed])
    path = repo(seed).file_paths()[-1]
    data = repo(seed).read(path)
    rng = random.Random(7)
    cases = [(0, len(data)), (0, 1), (len(data) - 1, 10), (len(data), 10), (len(data) + 99, 5), (3, 0)]
    cases += [(rng.randrange(len(data)), rng.randrange(1, 70_000)) for _ in range(50)]
    for offset, size in cases:
        assert source.read(f"/{seed}/{path}", size, offset) == data[offset : offset + size]


def test_source_memoises_sizes_and_bounds_the_cache() -> None:
    seed = small_seeds()["csv"][0]
    paths = [p for p in repo(seed).file_paths() if p != README_NAME]  # the README comes with the repository
    biggest = max(len(repo(seed).read(p)) for p in paths)
    bound = 3 * biggest
    source = MountSource([seed], cache_bytes=bound)
    sizes = {p: source.stat(f"/{seed}/{p}").size for p in paths}
    assert sizes == {p: len(repo(seed).read(p)) for p in paths}
    info = source.cache_info()
    assert info.generated == len(paths)
    assert 0 < info.content_bytes <= bound and info.content_files < len(paths)
    # A second stat never regenerates, even for files evicted from the content cache.
    for p in paths:
        assert source.stat(f"/{seed}/{p}").size == sizes[p]
    assert source.cache_info().generated == len(paths)
    # A cache smaller than any file keeps nothing and still serves every byte.
    tiny = MountSource([seed], cache_bytes=10)
    assert tiny.read(f"/{seed}/{paths[0]}", 1 << 20, 0) == repo(seed).read(paths[0])
    assert tiny.cache_info().content_bytes == 0


def test_source_synthesises_once_under_concurrency() -> None:
    seed = small_seeds()["json"][0]
    path = f"/{seed}/{repo(seed).file_paths()[0]}"
    source = MountSource([seed])
    barrier = threading.Barrier(16)
    results: list[bytes] = []

    def reader() -> None:
        barrier.wait()
        results.append(source.read(path, 1 << 30, 0))

    threads = [threading.Thread(target=reader) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(results)) == 1 and len(results) == 16
    assert source.cache_info().generated == 1
    assert source.cache_info().repositories == 1


def test_source_wraps_generation_failures() -> None:
    seed = small_seeds()["txt"][0]
    good, bad = repo(seed).file_paths()[:2]

    class Broken(FailingRepository):
        broken = frozenset({bad})

    source = MountSource([seed], factory=lambda s: Broken(generators.build_spec(s)))
    with pytest.raises(GenerationError) as info:
        source.stat(f"/{seed}/{bad}")
    assert info.value.seed == seed and info.value.path == bad
    assert isinstance(info.value.cause, RuntimeError)
    with pytest.raises(GenerationError):  # not cached: every attempt fails the same way
        source.read(f"/{seed}/{bad}", 10, 0)
    assert source.read(f"/{seed}/{good}", 1 << 30, 0) == repo(seed).read(good)

    def no_spec(s: int) -> Repository:
        raise ValueError("spec builder bug")

    with pytest.raises(GenerationError):
        MountSource([], factory=no_spec).stat("/42")


def test_fuse_layer_maps_errors_to_errno(caplog: pytest.LogCaptureFixture) -> None:
    """The FUSE-free layer answers inode-numbered requests: every failure is an errno, never an exception."""
    from sgfs.fuse_ops import DIR_MODE, FILE_MODE, FuseError, SgfsFilesystem
    from sgfs.inodes import ROOT_INO

    seed = small_seeds()["log"][0]
    good, bad = repo(seed).file_paths()[:2]

    class Broken(FailingRepository):
        broken = frozenset({bad})

    fs = SgfsFilesystem(MountSource([seed], factory=lambda s: Broken(generators.build_spec(s))))

    def code(call: object, *args: object) -> int:
        assert callable(call)
        with pytest.raises(FuseError) as exc:
            call(*args)
        return int(exc.value.errno)

    def walk(path: str) -> int:
        ino = ROOT_INO
        for name in path.strip("/").split("/"):
            found = fs.lookup(ino, name)
            assert found is not None, path
            ino = found.ino
        return ino

    good_ino = walk(f"/{seed}/{good}")
    bad_dir, bad_name = f"/{seed}/{bad}".rsplit("/", 1)
    with caplog.at_level(logging.ERROR, logger="sgfs.mount"):  # an exact size needs the bytes: lookup fails
        assert code(fs.lookup, walk(bad_dir), bad_name) == errno.EIO
    assert f"seed {seed}" in caplog.text and bad in caplog.text and "injected failure" in caplog.text
    assert fs.read(good_ino, 100, 0, 0) == repo(seed).read(good)[:100]

    assert fs.lookup(ROOT_INO, "abc") is None  # a negative entry, not an error
    assert fs.lookup(walk(f"/{seed}"), "nope") is None
    assert code(fs.readdir, good_ino, 0, 100, 0) == errno.ENOTDIR
    assert code(fs.read, walk(f"/{seed}"), 10, 0, 0) == errno.EISDIR
    assert code(fs.getattr, 12345) == errno.ESTALE  # a number the kernel was never given
    attrs = fs.getattr(good_ino)
    assert attrs.mode == FILE_MODE and attrs.size == len(repo(seed).read(good)) and attrs.ino == good_ino
    assert fs.getattr(ROOT_INO).mode == DIR_MODE
    # A plain mount has no open/opendir (the kernel caches listings and pages); an audited one always does.
    assert fs.cache_listings and not SgfsFilesystem(MountSource([seed]), audit=object()).cache_listings  # type: ignore[arg-type]
    fs.source = None  # type: ignore[assignment]  # a bug in the layer itself must still answer EIO, never raise
    with caplog.at_level(logging.ERROR, logger="sgfs.mount"):
        assert code(fs.getattr, good_ino) == errno.EIO


def test_fuse_unavailable_is_a_clear_error() -> None:
    with pytest.raises(SgfsError, match="/dev/nonexistent-fuse is missing"):
        check_fuse(device="/dev/nonexistent-fuse")
    if os.path.exists("/dev/fuse"):
        with pytest.raises(SgfsError, match="fusermount"):
            check_fuse(which=lambda name: None)


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
from sgfs.daemon import main
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.fuse
def test_generation_failure_answers_eio_and_keeps_serving(tmp_path: Path) -> None:
    require_fuse()
    seed = small_seeds()["csv"][0]
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
