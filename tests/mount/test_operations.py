"""The filesystem contract (sgfs.mount.operations) without mounting: errno for every failure, listings paged
through offsets and audited once, answers at hand that never build or synthesise."""

from __future__ import annotations

import errno
import logging

import pytest

import generators
from generators.paths import README_NAME
from sgfs.mount.audit import AuditedFilesystem
from sgfs.mount.inodes import ROOT_INO
from sgfs.mount.operations import DirEntry, SgfsFilesystem
from sgfs.store.source import MountSource
from tests.helpers import FailingRepository, at_hand, repo, small_csv_with_readme, small_seeds
from tests.helpers.mounts import Sink


def test_fuse_layer_maps_errors_to_errno(caplog: pytest.LogCaptureFixture) -> None:
    """The FUSE-free layer answers inode-numbered requests: every failure is an errno, never an exception."""
    from sgfs.mount.inodes import ROOT_INO
    from sgfs.mount.operations import DIR_MODE, FILE_MODE, FuseError, SgfsFilesystem

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
    assert fs.cache_listings and not AuditedFilesystem(MountSource([seed]), Sink()).cache_listings
    fs.source = None  # type: ignore[assignment]  # a bug in the layer itself must still answer EIO, never raise
    with caplog.at_level(logging.ERROR, logger="sgfs.mount"):
        assert code(fs.getattr, good_ino) == errno.EIO


def test_listings_page_through_offsets_and_audit_once() -> None:
    seed = small_csv_with_readme()
    sink = Sink()
    fs = AuditedFilesystem(MountSource([seed]), sink)
    top = fs.lookup(ROOT_INO, str(seed))
    assert top is not None
    paged: list[DirEntry] = []
    while True:  # what the kernel does: ask again from the offset after the last entry it got
        page = fs.readdir(top.ino, len(paged), 3, 99)
        assert len(page) <= 3
        if not page:
            break
        paged += page
    names = [e.name for e in paged]
    expected = [e.name for e in repo(seed).list("")]
    assert names == [".", "..", *expected]
    assert paged[1].ino == ROOT_INO and paged[0].ino == top.ino
    assert [e.path for e in paged[2:]] == [f"/{seed}/{name}" for name in expected]
    assert sink.events == [(99, "readdir", f"/{seed}", 0)]  # audited once per listing, not per page
    assert fs.readdir(top.ino, len(paged) + 10, 3, 99) == []
    # READDIRPLUS: attributes for what costs nothing (directories, the README the repository holds), none for
    # files not synthesised yet.
    plus = fs.readdir(top.ino, 2, 1000, 99, True)
    assert all((e.attributes is not None) == (e.is_dir or e.name == README_NAME) for e in plus), plus
    assert all(e.attributes.is_dir and e.attributes.nlink >= 2 for e in plus if e.is_dir and e.attributes)
    assert [e.attributes.size for e in plus if e.name == README_NAME and e.attributes] == [
        len(repo(seed).read(README_NAME))
    ]
    size = len(repo(seed).read(plus[-1].name)) if not plus[-1].is_dir else 0
    fs.lookup(top.ino, plus[-1].name)  # now its size is known
    last = fs.readdir(top.ino, len(plus) + 1, 1, 99, True)[0]
    assert last.attributes is not None and last.attributes.size == size


def test_answers_at_hand_never_build_or_synthesise() -> None:
    """What the request loop's thread answers itself (``*_known``) comes from memos and memory only: None until
    the full request has run, then the same answer as the full request, and never for a malformed path."""
    seed = small_csv_with_readme()
    fs = SgfsFilesystem(MountSource([seed], factory=generators.repository))
    source = fs.source
    assert at_hand(fs.lookup, ROOT_INO, str(seed)) is None and source.cache_info().repositories == 0
    top = fs.lookup(ROOT_INO, str(seed))
    assert top is not None and at_hand(fs.lookup, ROOT_INO, str(seed)) == top
    # The README comes with the repository: at hand once it is built, with nothing synthesised.
    readme = at_hand(fs.lookup, top.ino, README_NAME)
    assert readme is not None and readme.size == len(repo(seed).read(README_NAME))
    assert at_hand(fs.read, readme.ino, 1 << 20, 0, 0) == repo(seed).read(README_NAME)
    name = next(p for p in repo(seed).file_paths() if p != README_NAME)
    assert at_hand(fs.lookup, top.ino, name) is None and source.cache_info().generated == 0
    file = fs.lookup(top.ino, name)
    assert file is not None and at_hand(fs.lookup, top.ino, name) == file
    assert at_hand(fs.getattr, file.ino) == fs.getattr(file.ino)
    generated = source.cache_info().generated
    assert at_hand(fs.read, file.ino, 1 << 20, 3, 0) == fs.read(file.ino, 1 << 20, 3, 0) == repo(seed).read(name)[3:]
    assert at_hand(fs.read, top.ino, 10, 0, 0) is None  # a directory has no bytes
    assert source.cache_info().generated == generated
    for path in (f"/{seed}/../{seed}", f"/{seed}/./{name}", f"/{seed}//{name}", "/not-a-seed", f"/{seed}/missing"):
        assert at_hand(source.stat, path) is None and at_hand(source.read, path, 10, 0) is None
    assert at_hand(source.read, f"/{seed}/{name}", -1, 0) is None
