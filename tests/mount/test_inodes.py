"""Inode numbers (sgfs.mount.inodes): deterministic, counted, distinct on a collision."""

from __future__ import annotations

import pytest

from sgfs.mount import inodes
from sgfs.mount.inodes import ROOT_INO, InodeTable, path_ino


def test_inode_numbers_are_deterministic_and_counted() -> None:
    table = InodeTable()
    assert path_ino("/") == ROOT_INO and table.path(ROOT_INO) == "/"
    ino = table.acquire("/7/a.csv")
    assert ino == path_ino("/7/a.csv") == table.number("/7/a.csv") > ROOT_INO
    assert path_ino("/7/a.csv") != path_ino("/7/b.csv")
    assert table.acquire("/7/a.csv") == ino and table.path(ino) == "/7/a.csv"
    table.forget(ino, 1)
    assert table.path(ino) == "/7/a.csv"  # one lookup left
    table.forget(ino, 1)
    with pytest.raises(KeyError):
        table.path(ino)
    table.forget(ROOT_INO, 5)
    assert table.path(ROOT_INO) == "/" and len(table) == 1
    table.forget(123, 1)  # unknown numbers are ignored


def test_inode_collisions_get_distinct_numbers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inodes, "path_ino", lambda path: ROOT_INO if path == "/" else 42)
    table = InodeTable()
    first, second = table.acquire("/1/x"), table.acquire("/1/y")
    assert first == 42 and second == 43 and table.number("/1/y") == 43
    assert table.path(42) == "/1/x" and table.path(43) == "/1/y"
    table.forget(43, 1)
    assert table.number("/1/y") == 42  # gone: it would hash again
