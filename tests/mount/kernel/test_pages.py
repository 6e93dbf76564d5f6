"""Listing books: a seed's pages packed ahead once the disk cache knows every size, the same bytes and the same
lookups as the page-by-page path, never used when they could be wrong."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

import generators
from sgfs.mount.audit import AuditedFilesystem
from sgfs.mount.inodes import path_ino
from sgfs.mount.kernel.pages import DIRENTPLUS_HEADER, ListingBook, ListingBooks
from sgfs.mount.operations import SgfsFilesystem
from sgfs.store.diskcache import DiskCache
from sgfs.store.source import MIB, MountSource
from tests.helpers import at_hand, repo, small_csv_with_readme, small_seeds
from tests.helpers.mounts import mounted, require_fuse

TIMEOUT = 86400.0


def warm_cache(tmp_path: Path, seeds: list[int]) -> Path:
    """A disk cache whose size index knows every file of ``seeds`` (as a first mount leaves it)."""
    cache = tmp_path / "cache"
    source = MountSource(seeds, disk=DiskCache(cache, 64 * MIB))
    for seed in seeds:
        for path in repo(seed).file_paths():
            source.stat(f"/{seed}/{path}")
    return cache


def folders(seed: int) -> list[str]:
    return [f"/{seed}/{rel}" if rel else f"/{seed}" for rel in repo(seed).listings]


def filesystem(cache: Path | None, seeds: list[int]) -> SgfsFilesystem:
    disk = None if cache is None else DiskCache(cache, 64 * MIB)
    return SgfsFilesystem(MountSource(seeds, factory=generators.repository, disk=disk))


def open_folder(fs: SgfsFilesystem, path: str) -> int:
    """The number of ``path`` once the kernel would hold it (a lookup of each component)."""
    ino = 1
    for name in path.strip("/").split("/"):
        found = fs.lookup(ino, name)
        assert found is not None
        ino = found.ino
    return ino


def test_book_pages_and_lookups_are_the_page_by_page_ones(tmp_path: Path) -> None:
    """Every page of every directory, at every offset and for small, usual and large pages: the same bytes as
    SgfsFilesystem.readdir + pack_entries (the bytes libfuse writes: test_session.py), the same lookups counted."""
    from sgfs.mount.kernel.session import LowLevelMount

    require_fuse()
    seeds = [small_csv_with_readme(), small_seeds()["log"][1]]
    cache = warm_cache(tmp_path, seeds)
    for timeout in (TIMEOUT, 1.5):
        booked, paged = filesystem(cache, seeds), filesystem(cache, seeds)
        books, mount = ListingBooks(booked, timeout), LowLevelMount(paged, timeout)
        for seed in seeds:
            for path in folders(seed):
                ino = open_folder(booked, path)
                assert open_folder(paged, path) == ino == path_ino(path)
                count = len(paged.source.listdir(path)) + 2
                for offset in sorted({0, 1, 2, 3, count - 1, count, count + 3}):
                    for size in (DIRENTPLUS_HEADER + 8, 600, 4096, 1 << 17):
                        entries = paged.readdir(ino, offset, size // (DIRENTPLUS_HEADER + 8) + 1, 0, True)
                        expected = mount.pack_entries(entries, offset, size, True) if entries else b""
                        assert books.page(ino, offset, size) == expected, (path, offset, size)
                        assert booked.inodes._counts == paged.inodes._counts, (path, offset, size)


def test_a_book_carries_exact_sizes_and_numbers(tmp_path: Path) -> None:
    seed = small_seeds()["xlsx"][0]
    cache = warm_cache(tmp_path, [seed])
    fs = filesystem(cache, [seed])
    tree = fs.source.known_tree(seed)
    assert tree is not None
    book = ListingBook(f"/{seed}", tree, TIMEOUT, 0, 0)
    r = repo(seed)
    for rel, entries in r.listings.items():
        path = f"/{seed}/{rel}" if rel else f"/{seed}"
        page, children = book.page(book.folders[path], 0, 1 << 20)
        assert [name for name, _ in children] == [f"{path}/{name}" for name, _ in entries]
        assert [number for _, number in children] == [path_ino(f"{path}/{name}") for name, _ in entries]
        sizes = [int.from_bytes(page[i + 48 : i + 56], "little") for i in record_starts(page)][2:]
        assert sizes == [0 if is_dir else len(r.read(f"{rel}/{name}" if rel else name)) for name, is_dir in entries]
        assert book.by_number[path_ino(path)] == book.folders[path]


def record_starts(page: bytes) -> list[int]:
    starts, at = [], 0
    while at < len(page):
        starts.append(at)
        namelen = int.from_bytes(page[at + 144 : at + 148], "little")
        at += (DIRENTPLUS_HEADER + namelen + 7) & ~7
    return starts


def test_no_book_until_every_size_is_known(tmp_path: Path) -> None:
    seed = small_seeds()["json"][0]
    paths = repo(seed).file_paths()
    cold = filesystem(tmp_path / "cache", [seed])
    books = ListingBooks(cold, TIMEOUT)
    top = open_folder(cold, f"/{seed}")
    assert cold.source.known_tree(seed) is None and books.page(top, 0, 4096) is None
    for path in paths[:-1]:
        cold.source.stat(f"/{seed}/{path}")
    assert books.page(top, 0, 4096) is None, "one size is still unknown"
    cold.source.stat(f"/{seed}/{paths[-1]}")
    assert books.page(top, 0, 4096), "the index now knows every size: the next listing builds the book"
    without_disk = filesystem(None, [seed])
    assert ListingBooks(without_disk, TIMEOUT).page(open_folder(without_disk, f"/{seed}"), 0, 4096) is None
    assert books.page(1, 0, 4096) is None, "the root lists seeds: the page-by-page path"
    assert books.page(987654321, 0, 4096) is None, "a number the kernel does not hold: ESTALE there"


def test_an_audited_mount_has_no_books() -> None:
    from sgfs.mount.kernel.session import LowLevelMount

    require_fuse()

    class Sink:
        def record(self, pid: int, kind: str, path: str, size: int) -> None:
            pass

    seed = small_csv_with_readme()
    source = MountSource([seed], factory=generators.repository)
    assert LowLevelMount(SgfsFilesystem(source), TIMEOUT).books is not None
    assert LowLevelMount(AuditedFilesystem(source, Sink()), TIMEOUT).books is None
    assert LowLevelMount(SgfsFilesystem(source, cache_listings=False), TIMEOUT).books is None


def test_books_stay_within_their_budget(tmp_path: Path) -> None:
    seeds = [small_csv_with_readme(), small_seeds()["txt"][0]]
    cache = warm_cache(tmp_path, seeds)
    sizes = []
    for seed in seeds:
        tree = filesystem(cache, [seed]).source.known_tree(seed)
        assert tree is not None
        sizes.append(ListingBook(f"/{seed}", tree, TIMEOUT, 0, 0).nbytes)
    fs = filesystem(cache, seeds)
    books = ListingBooks(fs, TIMEOUT, max_bytes=max(sizes) + 1)
    first, second = (open_folder(fs, f"/{seed}") for seed in seeds)
    assert books.page(first, 0, 4096) and books.page(second, 0, 4096)
    assert first not in books._books.by_number, "the first book made room for the second"
    assert second in books._books.by_number and len(books._books) == 1
    assert books.page(first, 0, 4096), "built again when listed again"
    tiny = ListingBooks(fs, TIMEOUT, max_bytes=min(sizes) // 2)
    assert tiny.page(first, 0, 4096) is None and tiny.page(second, 0, 4096) is None, "too large: no book"
    assert f"/{seeds[0]}" in tiny._refused, "and not built again for each listing"


def test_collisions_take_the_page_by_page_path(tmp_path: Path) -> None:
    """A book's records carry hashed numbers: where a path holds another number, or a number another path, the
    book stands aside and counts nothing."""
    seed = small_csv_with_readme()
    cache = warm_cache(tmp_path, [seed])
    fs = filesystem(cache, [seed])
    books = ListingBooks(fs, TIMEOUT)
    top = open_folder(fs, f"/{seed}")
    name = repo(seed).listings[""][0][0]
    taken = path_ino(f"/{seed}/{name}")
    fs.inodes._paths[taken] = "/elsewhere"  # the number of the first entry is another path's
    before = dict(fs.inodes._counts)
    assert books.page(top, 0, 4096) is None and fs.inodes._counts == before
    del fs.inodes._paths[taken]
    assert books.page(top, 0, 4096)
    fs.inodes._moved["/x"] = 5  # some path was moved off its hashed number
    assert books.page(top, 0, 4096) is None


def test_a_tree_whose_numbers_collide_gets_no_book(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sgfs.mount.kernel.pages

    seed = small_csv_with_readme()
    cache = warm_cache(tmp_path, [seed])
    fs = filesystem(cache, [seed])
    top = open_folder(fs, f"/{seed}")
    monkeypatch.setattr(sgfs.mount.kernel.pages, "path_ino", lambda path: 1 if path == "/" else 42 + len(path) % 2)
    books = ListingBooks(fs, TIMEOUT)
    assert books.page(top, 0, 4096) is None and f"/{seed}" in books._refused


@pytest.mark.fuse
def test_a_second_mount_lists_from_books_what_the_first_listed(tmp_path: Path) -> None:
    """`ls -lRi` and `find -printf` of a fresh mount over a warm disk cache (answered from books) equal those of
    a mount without a disk cache (page by page), sizes and inode numbers included; every file reads right."""
    seeds = [small_csv_with_readme(), small_seeds()["xlsx"][0]]
    cache = tmp_path / "cache"
    walks = []
    for name, option in (("plain", "--no-disk-cache"), ("first", "--cache-dir"), ("second", "--cache-dir")):
        store = [] if option == "--no-disk-cache" else [cache]
        log = tmp_path / f"{name}.log"
        with mounted(tmp_path / name, "--seeds", ",".join(map(str, seeds)), option, *store, "--log", str(log)) as mnt:
            # Only the second mount finds both listed seeds whole in the cache: their books are built before it
            # answers, and the walk below is answered from them.
            assert ("listings of 2 listed seed(s) ready" in log.read_text()) == (name == "second")
            walk = []
            for seed in seeds:
                for command in (["ls", "-lRi"], ["find", ".", "-printf", "%i %s %n %m %y %P\\n"]):
                    walk.append(
                        subprocess.run(command, cwd=mnt / str(seed), capture_output=True, text=True, check=True).stdout
                    )
                r = repo(seed)
                assert all((mnt / str(seed) / p).read_bytes() == r.read(p) for p in r.file_paths())
            walks.append(walk)
    assert walks[0] == walks[1] == walks[2]
    assert all(walks[2])


def test_listed_seeds_are_prepared_before_the_mount_answers(tmp_path: Path) -> None:
    """``LowLevelMount.prepare``: books and the seed folders' stats of the listed seeds the disk cache knows
    whole, in order, until the time budget is spent; nothing on a mount without books (audited)."""
    from sgfs.mount.kernel.session import LowLevelMount

    require_fuse()  # LowLevelMount loads libfuse
    known, unknown = small_csv_with_readme(), small_seeds()["log"][1]
    cache = warm_cache(tmp_path, [known])
    fs = filesystem(cache, [unknown, known])
    mount = LowLevelMount(fs, TIMEOUT)
    assert at_hand(fs.source.stat, f"/{known}") is None
    assert mount.prepare([unknown, known], budget_s=60) == 1  # the seed it does not know whole is skipped
    assert mount.books is not None and f"/{known}" in mount.books._books
    assert f"/{unknown}" not in mount.books._books
    assert at_hand(fs.source.stat, f"/{known}") == fs.source.stat(f"/{known}")
    fresh = LowLevelMount(filesystem(cache, [known]), TIMEOUT)
    assert fresh.prepare([known], budget_s=0) == 0  # no time left: nothing built
    assert fresh.books is not None and not fresh.books._books
    audited = filesystem(cache, [known])
    audited.cache_listings = False
    assert LowLevelMount(audited, TIMEOUT).prepare([known], budget_s=60) == 0
