"""Listing pages answered in C (sgfs/_fastpages.c, sgfs.fast_pages): the bytes and the lookups of the Python
path, every other request handed back, claims that keep a book's numbers, and a real mount walked through it."""

from __future__ import annotations

import ctypes
import errno
import logging
import shutil
import socket
import struct
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from test_listing_pages import TIMEOUT, filesystem, folders, warm_cache
from test_lowlevel import CountingFilesystem, serving, walk
from test_mount import repo, small_seeds

import generators
from sgfs import fast_pages, inodes
from sgfs.diskcache import DiskCache
from sgfs.fast_pages import PageReader, load_reader
from sgfs.inodes import InodeTable, path_ino
from sgfs.listing_pages import DIRENTPLUS_HEADER, ListingBook
from sgfs.request_loop import DRAIN
from sgfs.source import MIB, MountSource

READDIRPLUS, GETATTR = 44, 3


def reader_lib() -> Any:
    """The compiled reader; a machine with a C compiler must have built it (setup.py), one without skips."""
    lib = load_reader()
    if lib is None:
        if shutil.which("cc") or shutil.which("gcc"):
            pytest.fail("sgfs/_fastpages.c is not built although a C compiler is here: run scripts/setup.sh")
        pytest.skip("no C compiler: the daemon answers every page from Python")
    return lib


def request(opcode: int, nodeid: int, offset: int = 0, size: int = 4096, unique: int = 9) -> bytes:
    """A request as the kernel sends it: fuse_in_header, then fuse_read_in (fh, offset, size, flags...)."""
    body = struct.pack("<QQIIQII", 0, offset, size, 0, 0, 0, 0)
    return struct.pack("<IIQQIIIHH", 40 + len(body), opcode, unique, nodeid, 0, 0, 0, 0, 0) + body


def reply(page: bytes, unique: int = 9) -> bytes:
    return struct.pack("<IiQ", 16 + len(page), 0, unique) + page


class KeptBooks:
    """What PageReader asks of ListingBooks: the books kept now, with a mark that moves when they change."""

    def __init__(self, books: list[ListingBook]) -> None:
        self.books, self.mark = books, 0

    def set(self, books: list[ListingBook]) -> None:
        self.books, self.mark = books, self.mark + 1

    def kept(self, since: int) -> tuple[int, list[ListingBook]] | None:
        return None if since == self.mark else (self.mark, list(self.books))


@contextmanager
def device() -> Iterator[tuple[socket.socket, socket.socket]]:
    """A stand-in for /dev/fuse: one message per read and per write, as the device has."""
    ours, kernel = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        yield ours, kernel
    finally:
        ours.close()
        kernel.close()


def book_of(tmp_path: Path, seed: int) -> ListingBook:
    tree = filesystem(warm_cache(tmp_path, [seed]), [seed]).source.known_tree(seed)
    assert tree is not None
    return ListingBook(f"/{seed}", tree, TIMEOUT, 0, 0)


def test_pages_from_c_are_the_books_bytes_and_lookups(tmp_path: Path) -> None:
    """Every directory at offsets before, at and past its end, with pages too small for one record, usual and
    large: the reply is the Python book's page, and the lookups counted are the ones the Python path counts."""
    lib = reader_lib()
    seed = small_seeds()["csv"][0]
    book = book_of(tmp_path, seed)
    table, expected_table = InodeTable(), InodeTable()
    reader = PageReader(lib, KeptBooks([book]), table)  # type: ignore[arg-type]
    buffer = bytearray(1 << 16)
    memory = (ctypes.c_char * len(buffer)).from_buffer(buffer)
    with device() as (ours, kernel):
        reader.settle()
        assert reader.registered == len(book.folders)
        sent = 0
        for path in folders(seed):
            lo, hi = book.folders[path]
            for offset in sorted({0, 1, 2, hi - lo - 1, hi - lo, hi - lo + 5}):
                for size in (DIRENTPLUS_HEADER, DIRENTPLUS_HEADER + 8, 600, 4096, 1 << 17):
                    page, lookups = book.page((lo, hi), offset, size)
                    kernel.send(request(READDIRPLUS, path_ino(path), offset, size, unique=sent))
                    kernel.send(request(GETATTR, path_ino(path), unique=sent))  # hands control back
                    assert reader.receive(ours.fileno(), memory, len(buffer)) == 80
                    assert bytes(buffer[:80]) == request(GETATTR, path_ino(path), unique=sent)
                    assert kernel.recv(1 << 18) == reply(page, unique=sent), (path, offset, size)
                    reader.settle()
                    assert expected_table.acquire_hashed(lookups)
                    assert table._counts == expected_table._counts and table._paths == expected_table._paths
                    sent += 1
        assert reader.served == sent and reader.write_errors == 0
    reader.close()
    assert not table._claimed, "claims go with the reader"


def test_what_c_does_not_answer_goes_back_to_python(tmp_path: Path) -> None:
    """Unregistered directories and other opcodes come back whole; a full log asks to be counted first; a
    short read is an error; an exited session ends the reading; a registered book that went is not answered."""
    lib = reader_lib()
    seed = small_seeds()["log"][1]
    book = book_of(tmp_path, seed)
    top = path_ino(f"/{seed}")
    exited = [0]
    exited_function = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)(lambda session: exited[0])
    books = KeptBooks([book])
    table = InodeTable()
    reader = PageReader(lib, books, table, exited_function, None, log_pages=2)  # type: ignore[arg-type]
    memory = ctypes.create_string_buffer(1 << 16)
    with device() as (ours, kernel):
        fd = ours.fileno()
        reader.settle()
        for other in (request(READDIRPLUS, 987654321), request(GETATTR, top), request(17, top)):
            kernel.send(other)
            assert reader.receive(fd, memory, len(memory)) == len(other)
            assert memory.raw[: len(other)] == other
        for _ in range(3):
            kernel.send(request(READDIRPLUS, top))
        assert reader.receive(fd, memory, len(memory)) == DRAIN  # two pages logged: count them first
        assert not table._counts
        reader.settle()
        assert len(table._counts) == len(repo(seed).listings[""])
        assert reader.served == 2 and kernel.recv(1 << 18) and kernel.recv(1 << 18)
        kernel.send(request(GETATTR, top))
        assert reader.receive(fd, memory, len(memory)) == 80 and reader.served == 3
        assert set(table._counts.values()) == {2}, "the third page is not counted until settled"
        reader.settle()
        assert set(table._counts.values()) == {3}
        kernel.send(b"short")
        assert reader.receive(fd, memory, len(memory)) == -errno.EIO
        exited[0] = 1
        assert reader.receive(fd, memory, len(memory)) == 0  # returns before reading
        exited[0] = 0
        books.set([])  # the book was evicted: its directories go to Python
        reader.settle()
        assert reader.registered == 0 and not table._claimed
        kernel.send(request(READDIRPLUS, top))
        assert reader.receive(fd, memory, len(memory)) == 80 and reader.served == 3
        books.set([book])
        reader.settle()
        assert reader.registered == len(book.folders)
        kernel.close()
        assert reader.receive(fd, memory, len(memory)) < 0  # the far end went: an error, not a request
    reader.close()


def test_claims_keep_a_books_numbers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A registered book's numbers are its paths' until released: another path hashing to one is moved (and
    the reader stops, as the Python path does once anything collided). A book one of whose numbers another path
    holds is never registered."""
    lib = reader_lib()
    seed = small_seeds()["csv"][0]
    book = book_of(tmp_path, seed)
    first_path, first_number = book.lookups(0, len(book.paths))[0]

    table = InodeTable()
    table._paths[first_number] = "/elsewhere"
    reader = PageReader(lib, KeptBooks([book]), table)  # type: ignore[arg-type]
    reader.settle()
    assert reader.registered == 0 and not table._claimed and reader.enabled
    reader.close()

    table = InodeTable()
    assert table.claim([("/a", 5), ("/b", 6)]) and not table.claim([("/c", 6)])
    assert table.claim([("/a", 5)]), "claiming again for the same path is fine"
    table.release([("/c", 6), ("/a", 5)])
    assert table._claimed == {6: "/b"}, "a release gives up only its own claims"
    table.forget(6, 1)
    assert table._claimed == {6: "/b"}, "a claim is not a lookup: FORGET leaves it"

    table = InodeTable()
    reader = PageReader(lib, KeptBooks([book]), table)  # type: ignore[arg-type]
    reader.settle()
    assert reader.registered == len(book.folders) and len(table._claimed) == len(book.lookups(0, len(book.paths)))
    monkeypatch.setattr(inodes, "path_ino", lambda path: first_number)
    moved = table.acquire("/another/path")
    assert moved != first_number and table.collided
    assert not table.acquire_hashed([("/another/path", first_number)])
    reader.settle()
    assert not reader.enabled and reader.registered == 0 and not table._claimed
    reader.close()
    assert table.acquire(first_path) == first_number, "the book's path keeps its number; the other one moved"


@pytest.mark.fuse
@pytest.mark.parametrize("in_c", [True, False])
def test_a_walk_answered_in_c_counts_and_forgets_every_lookup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, in_c: bool
) -> None:
    """A fresh mount over a warm disk cache: `ls -lRi` and every file read the same with the reader and
    without it (SGFS_PAGES_IN_C=0); with it, no listing reaches Python. Every lookup the pages handed the
    kernel is counted, and when the kernel drops its inodes the FORGETs take them all back."""
    if in_c:
        reader_lib()
    else:
        monkeypatch.setenv(fast_pages.ENV_SWITCH, "0")
    seeds = [small_seeds()["csv"][0], small_seeds()["xlsx"][0]]
    cache = warm_cache(tmp_path, seeds)
    fs = CountingFilesystem(
        MountSource(seeds, factory=generators.repository, disk=DiskCache(cache, 64 * MIB)), cache_listings=True
    )
    with serving(tmp_path / "mnt", fs) as mount:
        assert mount.books is not None
        listings = {}
        for seed in seeds:
            mount.books.prepare(seed)  # what `sgfs mount --seeds` does before it answers
        for seed in seeds:
            listings[seed] = subprocess.run(
                ["ls", "-lRi"], cwd=tmp_path / "mnt" / str(seed), capture_output=True, text=True, check=True
            ).stdout
            sizes = walk(tmp_path / "mnt" / str(seed))
            assert sizes == {p: len(repo(seed).read(p)) for p in repo(seed).file_paths()}
            assert all((tmp_path / "mnt" / str(seed) / p).read_bytes() == repo(seed).read(p) for p in sizes)
        assert fs.calls["readdir"] == 0, "every listing came from a book"
        entries = sum(len(book.lookups(0, len(book.paths))) for book in mount.books._books.values())
        subprocess.run(["stat", str(tmp_path / "mnt")], capture_output=True, check=False)  # a request to Python
        if in_c:
            assert mount.reader is not None and mount.reader.served >= 2 * len(
                [f for seed in seeds for f in folders(seed)]
            )
        else:
            assert mount.reader is None
        assert len(fs.inodes) >= entries, "every entry the pages handed the kernel is counted"
        # The kernel drops what it can: its FORGETs take back every lookup the pages handed it.
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and len(fs.inodes) > 1 + len(seeds):
            Path("/proc/sys/vm/drop_caches").write_text("2\n")
            time.sleep(0.2)
            subprocess.run(["stat", str(tmp_path / "mnt")], capture_output=True, check=False)
        assert len(fs.inodes) <= 1 + len(seeds), len(fs.inodes)
        again = {
            seed: subprocess.run(
                ["ls", "-lRi"], cwd=tmp_path / "mnt" / str(seed), capture_output=True, text=True, check=True
            ).stdout
            for seed in seeds
        }
        assert again == listings


def test_the_loop_reads_through_a_reader_and_falls_back_to_libfuse(caplog: pytest.LogCaptureFixture) -> None:
    """After INIT (read and answered through libfuse) the loop reads through the reader: its lookups are counted
    (``settle``) before each dispatch, a full log is counted and read again, a signal goes on reading; when the
    kernel refuses the reader's buffer (EINVAL) the reader is closed and libfuse reads the rest."""
    from sgfs.request_loop import RequestLoop

    libfuse_reads = [100, 100, 0]  # INIT; after the fallback, one request and the unmount
    events: list[str] = []

    class FakeLib:
        def fuse_session_exited(self, session: Any) -> int:
            return 0

        def fuse_session_fd(self, session: Any) -> int:
            return 5

        def fuse_session_receive_buf(self, session: Any, buf: Any) -> int:
            events.append("libfuse read")
            buf._obj.size = libfuse_reads.pop(0)
            return int(buf._obj.size)

    class FakeReader:
        def __init__(self) -> None:
            self.reads = [DRAIN, 80, -errno.EINTR, 80, -errno.EINVAL]

        def settle(self) -> None:
            events.append("settle")

        def receive(self, fd: int, buffer: Any, size: int) -> int:
            assert fd == 5 and size >= 256 * 4096
            result = self.reads.pop(0)
            events.append(f"reader {result}")
            return result

        def close(self) -> None:
            events.append("close")

    def dispatch(session: Any, buf: Any) -> None:
        events.append(f"dispatch {buf._obj.size}")

    loop = RequestLoop(FakeLib(), reader_for=lambda session: FakeReader())  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING, logger="sgfs.mount"):
        loop.run(7, dispatch)
    assert events == [
        "libfuse read", "dispatch 100", "settle",  # INIT, then the reader's books registered
        f"reader {DRAIN}", "settle",
        "reader 80", "settle", "dispatch 80",
        f"reader {-errno.EINTR}", "settle",
        "reader 80", "settle", "dispatch 80",
        f"reader {-errno.EINVAL}", "settle", "close",
        "libfuse read", "dispatch 100", "libfuse read",
    ]  # fmt: skip
    assert "libfuse reads instead" in caplog.text


def test_a_reader_that_cannot_be_made_leaves_the_reading_to_libfuse(caplog: pytest.LogCaptureFixture) -> None:
    from sgfs.request_loop import RequestLoop

    reads = [100, 100, 0]
    dispatched: list[int] = []

    class FakeLib:
        def fuse_session_exited(self, session: Any) -> int:
            return 0

        def fuse_session_receive_buf(self, session: Any, buf: Any) -> int:
            buf._obj.size = reads.pop(0)
            return int(buf._obj.size)

    def no_reader(session: int) -> Any:
        raise MemoryError("cannot allocate the listing page reader")

    loop = RequestLoop(FakeLib(), reader_for=no_reader)  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING, logger="sgfs.mount"):
        loop.run(7, lambda session, buf: dispatched.append(buf._obj.size))
    assert dispatched == [100, 100] and not reads
    assert "no request reader: libfuse reads every request" in caplog.text
