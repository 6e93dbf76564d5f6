"""The low-level FUSE layer: inode numbers, paged listings, and what a real mount leaves to the kernel."""

from __future__ import annotations

import collections
import ctypes
import errno
import logging
import os
import struct
import threading
from pathlib import Path
from typing import Any

import pytest

import generators
from sgfs.mount.audit import AuditedFilesystem
from sgfs.mount.inodes import ROOT_INO, InodeTable, path_ino
from sgfs.mount.operations import DirEntry, SgfsFilesystem
from sgfs.store.source import MountSource
from tests.helpers import repo, small_csv_with_readme, small_seeds
from tests.helpers.mounts import CountingFilesystem, Sink, require_fuse, served, walk

# -- real mounts, served in this process so that the test sees every request that reaches Python ----------


@pytest.mark.fuse
@pytest.mark.parametrize("cache_listings", [True, False])
def test_warm_walks_stay_in_the_kernel(tmp_path: Path, cache_listings: bool) -> None:
    """A plain mount answers OPEN and OPENDIR with ENOSYS once: the kernel keeps listings and pages, so a
    second walk and a second read of every file never reach Python. Without the listing cache
    (--no-listing-cache) every listing does."""
    seed = small_csv_with_readme()
    fs = CountingFilesystem(MountSource([seed], factory=generators.repository), cache_listings=cache_listings)
    with served(tmp_path / "mnt", fs) as mnt:
        sizes = walk(mnt / str(seed))
        assert sizes == {p: len(repo(seed).read(p)) for p in repo(seed).file_paths()}
        contents = {p: (mnt / str(seed) / p).read_bytes() for p in sizes}
        assert contents == {p: repo(seed).read(p) for p in sizes}
        assert fs.calls["readdir"] > 0 and fs.calls["read"] > 0
        directories = 1 + len({str(Path(p).parent) for p in sizes} - {"."})
        # The test machines' host reclaims the guest's page cache continuously (pages and listings go within
        # seconds), so a page may go between two passes: the kernel keeps them if one of a few passes in a row
        # reaches the daemon for nothing (a kernel that kept nothing would send them all every time).
        passes = []
        for _ in range(4):
            fs.calls.clear()
            assert walk(mnt / str(seed)) == sizes
            assert {p: (mnt / str(seed) / p).read_bytes() for p in sizes} == contents
            passes.append(dict(fs.calls))
            if not cache_listings:  # listings reach the daemon on every pass
                assert fs.calls["readdir"] >= directories, passes
            if fs.calls["read"] == 0 and (not cache_listings or not fs.calls):
                break
        if cache_listings:
            assert passes[-1] == {}, passes
        else:  # pages stay in the kernel (only an audited mount drops them)
            assert set(passes[-1]) <= {"readdir"}, passes  # no read, no lookup
        assert len(fs.inodes) > 1  # the kernel holds what it looked up


@pytest.mark.fuse
def test_a_request_that_waits_holds_up_no_other(tmp_path: Path) -> None:
    """The request loop answers what is at hand in its own thread and hands waiting work to its threads: while
    one seed's repository takes its time to build for its first LOOKUP, another seed of the same root is
    walked and read in full. That needs the kernel told it may send LOOKUPs of one directory in parallel
    (FUSE_PARALLEL_DIROPS, which libfuse 3.14 leaves out of its INIT reply): otherwise it holds the root's
    lock for the waiting LOOKUP and the walk's first LOOKUP waits behind it."""
    slow, fast = small_csv_with_readme(), small_seeds()["log"][1]
    building, release = threading.Event(), threading.Event()

    def factory(seed: int) -> generators.Repository:
        if seed == slow:
            building.set()
            assert release.wait(30)
        return generators.repository(seed)

    fs = CountingFilesystem(MountSource([slow, fast], factory=factory))
    with served(tmp_path / "mnt", fs) as mnt:
        stuck: list[int] = []
        waiter = threading.Thread(target=lambda: stuck.append(len(os.listdir(mnt / str(slow)))), daemon=True)
        waiter.start()
        try:
            assert building.wait(30)  # the LOOKUP of the slow seed is in the daemon: the kernel waits on it
            sizes = walk(mnt / str(fast))
            assert waiter.is_alive() and not stuck  # still waiting for its repository
            assert sizes == {p: len(repo(fast).read(p)) for p in repo(fast).file_paths()}
            assert all((mnt / str(fast) / p).read_bytes() == repo(fast).read(p) for p in sizes)
            assert waiter.is_alive() and not stuck
        finally:
            release.set()
        waiter.join(timeout=30)
        assert stuck == [len(repo(slow).listings[""])]


def test_entry_sizes_match_libfuse() -> None:
    """Listings are packed with the kernel ABI's entry sizes: they must be libfuse's own."""
    from sgfs.mount.kernel.session import DIRENT_HEADER, DIRENTPLUS_HEADER, load_libfuse

    require_fuse()
    lib = load_libfuse()
    for length in (1, 2, 7, 8, 9, 100, 255):
        name = b"n" * length
        assert lib.fuse_add_direntry_plus(None, None, 0, name, None, 1) == (DIRENTPLUS_HEADER + length + 7) & ~7
        assert lib.fuse_add_direntry(None, None, 0, name, None, 1) == (DIRENT_HEADER + length + 7) & ~7


def libfuse_page(mount: Any, entries: list[DirEntry], offset: int, size: int, plus: bool) -> bytes:
    """The page libfuse's own fuse_add_direntry(_plus) writes for ``entries``: the reference for pack_entries."""
    from sgfs.mount.kernel.abi import EntryParam as FuseEntryParam
    from sgfs.mount.operations import DIR_MODE, FILE_MODE, Attributes

    buffer = ctypes.create_string_buffer(size)
    used = 0
    for index, entry in enumerate(entries, start=offset + 1):
        name = entry.name.encode("utf-8", "surrogateescape")
        number = entry.ino or path_ino(entry.path)
        mode = DIR_MODE if entry.is_dir else FILE_MODE
        if plus:
            found = entry.attributes
            if found is not None:
                param = mount._entry(Attributes(number, found.is_dir, found.size, found.nlink))
            else:
                param = FuseEntryParam()
                param.attr.st_ino, param.attr.st_mode = number, mode
            add = mount.lib.fuse_add_direntry_plus
            need = add(None, ctypes.addressof(buffer) + used, size - used, name, ctypes.byref(param), index)
        else:
            from sgfs.mount.kernel.abi import Stat as c_stat

            st = c_stat()
            st.st_ino, st.st_mode = number, mode
            add = mount.lib.fuse_add_direntry
            need = add(None, ctypes.addressof(buffer) + used, size - used, name, ctypes.byref(st), index)
        if need > size - used:
            break
        used += need
    return buffer.raw[:used]


@pytest.mark.parametrize("plus", [True, False])
@pytest.mark.parametrize("timeout", [3600.0, 1.25, 0.0])
def test_listing_pages_are_the_bytes_libfuse_writes(plus: bool, timeout: float) -> None:
    """pack_entries writes the kernel ABI itself: byte for byte what libfuse's helpers write, for directories,
    files with and without attributes, odd names, and a page that fills up; only the entries that fit and
    carry attributes count as lookups."""
    from sgfs.mount.kernel.session import LowLevelMount
    from sgfs.mount.operations import Attributes

    require_fuse()
    seed = small_csv_with_readme()
    fs = SgfsFilesystem(MountSource([seed], factory=generators.repository))
    mount = LowLevelMount(fs, timeout)
    entries = [
        DirEntry(".", f"/{seed}", True, 7),
        DirEntry("..", "/", True, ROOT_INO),
        DirEntry("sub", f"/{seed}/sub", True, 0, Attributes(0, True, 0, 5)),
        DirEntry("a.csv", f"/{seed}/a.csv", False, 0, Attributes(0, False, 1234567, 1)),
        DirEntry("b.csv", f"/{seed}/b.csv", False),  # size unknown: name and type only
        DirEntry("ünï\udcff.csv", f"/{seed}/ünï\udcff.csv", False, 0, Attributes(0, False, 0, 1)),
        *[
            DirEntry(f"{'n' * 200}{i}", f"/{seed}/{'n' * 200}{i}", False, 0, Attributes(0, False, i, 1))
            for i in range(40)
        ],
    ]
    for offset, size in ((0, 4096), (5, 4096), (0, 200), (3, 1 << 17)):
        fs.inodes = InodeTable()
        expected = libfuse_page(mount, entries, offset, size, plus)
        assert mount.pack_entries(entries, offset, size, plus) == expected
        fitted, used = 0, 0
        header = 152 if plus else 24
        for entry in entries:
            need = (header + len(entry.name.encode("utf-8", "surrogateescape")) + 7) & ~7
            if used + need > size:
                break
            fitted, used = fitted + 1, used + need
        with_attributes = sum(1 for e in entries[:fitted] if plus and e.attributes is not None)
        assert len(fs.inodes) == 1 + with_attributes


@pytest.mark.fuse
class CountingAuditedFilesystem(CountingFilesystem, AuditedFilesystem):
    """The audit wrapper, with the requests that reach Python counted."""


def test_an_audited_mount_sees_every_listing_open_and_read(tmp_path: Path) -> None:
    seed = small_seeds()["json"][0]
    sink = Sink()
    fs = CountingAuditedFilesystem(MountSource([seed]), sink)
    path = repo(seed).file_paths()[0]
    with served(tmp_path / "mnt", fs) as mnt:
        for _ in range(2):
            assert sorted(os.listdir(mnt / str(seed))) == sorted(e.name for e in repo(seed).list(""))
            assert (mnt / str(seed) / path).read_bytes() == repo(seed).read(path)
    kinds = collections.Counter((kind, where) for _pid, kind, where, _size in sink.events)
    assert kinds[("readdir", f"/{seed}")] == 2 and kinds[("open", f"/{seed}/{path}")] == 2
    reads = [size for _pid, kind, where, size in sink.events if kind == "read" and where == f"/{seed}/{path}"]
    assert sum(reads) == 2 * len(repo(seed).read(path))  # the second read is not served from the page cache
    assert {pid for pid, *_ in sink.events} == {os.getpid()}


class RecordingLib:
    """Stands in for libfuse's reply functions: records what each request was answered."""

    def __init__(self) -> None:
        self.replies: list[tuple[str, Any]] = []

    def fuse_reply_err(self, req: Any, code: int) -> int:
        self.replies.append(("err", code))
        return 0

    def fuse_reply_open(self, req: Any, fi: Any) -> int:
        info = fi.contents
        self.replies.append(("open", (info.keep_cache, info.cache_readdir)))
        return 0

    def fuse_req_ctx(self, req: Any) -> Any:
        from sgfs.mount.kernel.abi import Ctx as FuseCtx

        return ctypes.pointer(FuseCtx(0, 0, 4242, 0))


@pytest.mark.parametrize("audited", [False, True])
@pytest.mark.parametrize("kernel_skips", [True, False])
def test_open_and_opendir_answers(kernel_skips: bool, audited: bool) -> None:
    """ENOSYS only where the kernel takes it as "never ask again" (Linux >= 4.20 / 5.1); older kernels get the
    caching flags in the reply instead. An audited mount always answers, and never lets pages or listings stay."""
    from sgfs.mount.kernel import session as lowlevel
    from sgfs.mount.kernel.abi import FileInfo

    seed = small_csv_with_readme()
    sink = Sink()
    fs = AuditedFilesystem(MountSource([seed]), sink) if audited else SgfsFilesystem(MountSource([seed]))
    mount = lowlevel.LowLevelMount.__new__(lowlevel.LowLevelMount)
    mount.fs, mount.timeout, mount.lib = fs, 3600.0, RecordingLib()  # type: ignore[assignment]
    mount.loop = lowlevel.RequestLoop(mount.lib)  # type: ignore[arg-type]
    mount.kernel_skips_open = mount.kernel_skips_opendir = kernel_skips
    top = fs.lookup(ROOT_INO, str(seed))
    name = repo(seed).file_paths()[0]
    assert top is not None and "/" not in name
    file = fs.lookup(top.ino, name)
    assert file is not None
    for handler, ino in ((mount._open, file.ino), (mount._opendir, top.ino)):
        mount._guard(handler)(None, ino, ctypes.pointer(FileInfo()))
    replies = mount.lib.replies  # type: ignore[attr-defined]
    if audited:
        assert replies == [("open", (0, 0)), ("open", (0, 0))]
        assert [(kind, where) for _pid, kind, where, _size in sink.events] == [("open", f"/{seed}/{name}")]
    elif kernel_skips:
        assert replies == [("err", errno.ENOSYS), ("err", errno.ENOSYS)]
    else:
        assert replies == [("open", (1, 0)), ("open", (1, 1))]


@pytest.mark.parametrize("last", [0, -errno.EIO])
def test_the_request_loop_reads_until_the_session_ends(last: int, caplog: pytest.LogCaptureFixture) -> None:
    """A signal (EINTR) does not end the loop; an unmount (0) or a read error does, the error logged. Requests
    handed to the loop's threads are all answered before ``run`` returns, and none is handed on after."""
    from sgfs.mount.kernel.loop import RequestLoop

    reads = [100, -errno.EINTR, 100, last, 100]
    answered: list[str] = []

    class FakeLib:
        def fuse_session_exited(self, session: Any) -> int:
            return 0

        def fuse_session_receive_buf(self, session: Any, buf: Any) -> int:
            return reads.pop(0)

    loop = RequestLoop(FakeLib())  # type: ignore[arg-type]

    def slow_answer(name: str) -> None:
        threading.Event().wait(0.2)
        answered.append(name)

    def dispatch(session: Any, buf: Any) -> None:
        assert loop.later is not None
        loop.later.submit(slow_answer, f"request {len(answered)}")

    with caplog.at_level(logging.ERROR, logger="sgfs.mount"):
        loop.run(7, dispatch)
    assert reads == [100] and len(answered) == 2 and loop.later is None
    assert ("reading the FUSE device failed" in caplog.text) == (last != 0)


def init_request(flags: int, opcode: int = 26) -> bytes:
    """A request as the kernel sends it: fuse_in_header (40 bytes), then fuse_init_in's first four fields."""
    return struct.pack("<IIQQIIII", 56, opcode, 2, 0, 0, 0, 0, 0) + struct.pack("<IIII", 7, 45, 1 << 17, flags)


def init_reply(flags: int, error: int = 0) -> bytes:
    """fuse_out_header, then fuse_init_out's first fields (what libfuse writes back)."""
    body = struct.pack("<IIII", 7, 31, 1 << 17, flags) + bytes(48) if error == 0 else b""
    return struct.pack("<IiQ", 16 + len(body), error, 2) + body


def test_parallel_dirops_join_the_init_reply() -> None:
    """The flag is added when the kernel offered it, and only then; a reply that is an error, short, or whose
    length disagrees with its header is passed on untouched."""
    from sgfs.mount.kernel.abi import Buf
    from sgfs.mount.kernel.loop import FUSE_PARALLEL_DIROPS, init_request_flags, with_parallel_dirops

    offered = 0x73FFFFFB
    patched = with_parallel_dirops(init_reply(0x4040B029), offered)
    assert patched == init_reply(0x4040B029 | FUSE_PARALLEL_DIROPS)
    assert with_parallel_dirops(init_reply(0x4040B029), offered & ~FUSE_PARALLEL_DIROPS) == init_reply(0x4040B029)
    for untouched in (init_reply(0, error=-71), init_reply(0x29)[:20], init_reply(0x29) + b"x"):
        assert with_parallel_dirops(untouched, offered) == untouched

    def buf_of(data: bytes, flags: int = 0) -> tuple[Buf, Any]:
        memory = ctypes.create_string_buffer(data, len(data))
        return Buf(size=len(data), flags=flags, mem=ctypes.addressof(memory)), memory

    for data, flags, expected in (
        (init_request(offered), 0, offered),
        (init_request(offered, opcode=1), 0, None),  # a LOOKUP
        (init_request(offered)[:50], 0, None),  # too short to be an INIT
        (init_request(offered), 2, None),  # the request sits in a pipe (FUSE_BUF_IS_FD), not in memory
    ):
        buf, _memory = buf_of(data, flags)
        assert init_request_flags(buf) == expected
    assert init_request_flags(Buf()) is None


def test_writes_to_catches_a_reply_and_restores_the_descriptor() -> None:
    """What the call writes to the descriptor lands in the catch, not at the descriptor's target; afterwards the
    descriptor writes where it did before, with its close-on-exec flag as it was, also when the call fails."""
    import fcntl

    from sgfs.mount.kernel.loop import writes_to

    read_end, write_end = os.pipe()
    try:
        for cloexec in (True, False):
            os.set_inheritable(write_end, not cloexec)
            assert writes_to(write_end, lambda: os.write(write_end, b"caught")) == b"caught"
            with pytest.raises(RuntimeError):
                writes_to(write_end, lambda: (_ for _ in ()).throw(RuntimeError("boom")))
            assert bool(fcntl.fcntl(write_end, fcntl.F_GETFD) & fcntl.FD_CLOEXEC) == cloexec
            os.write(write_end, b"through")
            assert os.read(read_end, 100) == b"through"  # nothing caught leaked to the pipe's reader
    finally:
        os.close(read_end)
        os.close(write_end)


def test_the_request_loop_sends_init_with_parallel_dirops() -> None:
    """The first request, INIT, is answered through libfuse's dispatcher with its reply caught and sent on
    with FUSE_PARALLEL_DIROPS; requests after it go to the dispatcher as they are, an INIT look-alike too."""
    from sgfs.mount.kernel.loop import FUSE_PARALLEL_DIROPS, RequestLoop

    libc = ctypes.CDLL(None)
    libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
    device_reader, device = os.pipe()
    requests = [init_request(0x73FFFFFB), init_request(0x73FFFFFB)]
    dispatched: list[bytes] = []

    class FakeLib:
        def fuse_session_exited(self, session: Any) -> int:
            return 0

        def fuse_session_fd(self, session: Any) -> int:
            return device

        def fuse_session_receive_buf(self, session: Any, buf: Any) -> int:
            if not requests:
                return 0
            data = requests.pop(0)
            buf_ = buf._obj
            if not buf_.mem:  # libfuse allocates on the first read; run() frees it with free(3)
                buf_.mem = libc.malloc(4096)
            ctypes.memmove(buf_.mem, data, len(data))
            buf_.size = len(data)
            return len(data)

    def dispatch(session: Any, buf: Any) -> None:
        dispatched.append(ctypes.string_at(buf._obj.mem, buf._obj.size))
        os.write(device, init_reply(0x4040B029))

    try:
        RequestLoop(FakeLib()).run(7, dispatch)  # type: ignore[arg-type]
        os.close(device)
        device = -1
        sent = os.read(device_reader, 4096)
    finally:
        os.close(device_reader)
        if device >= 0:
            os.close(device)
    assert len(dispatched) == 2
    assert sent == init_reply(0x4040B029 | FUSE_PARALLEL_DIROPS) + init_reply(0x4040B029)
