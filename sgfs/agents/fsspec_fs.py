"""``sgfs://`` for fsspec: ``pandas.read_csv("sgfs://118/a/b.csv")`` reads the bytes ``sgfs cat 118 a/b.csv`` writes.

Registered through the ``fsspec.specs`` entry point (the ``fsspec`` extra). The first path component is the
seed, as at the mount's root; every write answers ``OSError(EROFS)``.
"""

from __future__ import annotations

import errno
from typing import Any

from fsspec.spec import AbstractBufferedFile, AbstractFileSystem

from sgfs.store.source import DEFAULT_CACHE_MB, MIB, MountSource


def _read_only(path: object) -> OSError:
    return OSError(errno.EROFS, "sgfs repositories are read-only", str(path))


class SgfsFileSystem(AbstractFileSystem):  # type: ignore[misc]
    """Repositories by seed, read-only. ``seeds`` only decides what the root lists; any seed opens by name."""

    protocol = "sgfs"
    root_marker = ""

    def __init__(self, seeds: tuple[int, ...] | list[int] = (), cache_mb: int = DEFAULT_CACHE_MB, **kwargs: Any):
        super().__init__(**kwargs)
        self.source = MountSource(list(seeds), cache_mb * MIB)

    @classmethod
    def _strip_protocol(cls, path: Any) -> Any:
        if isinstance(path, list):
            return [cls._strip_protocol(p) for p in path]
        text = str(path)
        for prefix in ("sgfs://", "sgfs::"):
            text = text.removeprefix(prefix)
        return "/".join(p for p in text.split("/") if p not in ("", "."))

    def _mount_path(self, path: str) -> str:
        return "/" + str(self._strip_protocol(path))

    def _entry(self, path: str) -> dict[str, Any]:
        try:
            stat = self.source.stat(self._mount_path(path))
        except (FileNotFoundError, NotADirectoryError):
            raise FileNotFoundError(errno.ENOENT, "no such file or directory", path) from None
        kind = "directory" if stat.is_dir else "file"
        return {"name": self._strip_protocol(path), "size": stat.size, "type": kind}

    # -- reading ---------------------------------------------------------------------------------------
    def ls(self, path: str, detail: bool = True, **kwargs: Any) -> list[Any]:
        path = self._strip_protocol(path)
        try:
            entries = self.source.listdir(self._mount_path(path))
        except FileNotFoundError:
            raise FileNotFoundError(errno.ENOENT, "no such file or directory", path) from None
        except NotADirectoryError:
            return [self._entry(path)] if detail else [path]  # fsspec lists a file as itself
        names = [f"{path}/{name}" if path else name for name, _ in entries]
        if not detail:
            return names
        return [self._entry(name) for name in names]

    def info(self, path: str, **kwargs: Any) -> dict[str, Any]:
        return self._entry(path)

    def cat_file(self, path: str, start: int | None = None, end: int | None = None, **kwargs: Any) -> bytes:
        data = self._bytes(path)
        return data[slice(start, end)]

    def _bytes(self, path: str) -> bytes:
        mount = self._mount_path(path)
        try:
            stat = self.source.stat(mount)
            if stat.is_dir:
                raise IsADirectoryError(errno.EISDIR, "is a directory", path)
            return self.source.read(mount, stat.size, 0)
        except (FileNotFoundError, NotADirectoryError):
            raise FileNotFoundError(errno.ENOENT, "no such file or directory", path) from None

    def _open(self, path: str, mode: str = "rb", block_size: Any = None, **kwargs: Any) -> AbstractBufferedFile:
        if mode != "rb":
            raise _read_only(path)
        entry = self._entry(path)
        if entry["type"] == "directory":
            raise IsADirectoryError(errno.EISDIR, "is a directory", path)
        return SgfsFile(self, entry["name"], mode, size=entry["size"], cache_type="none")

    # -- writing: refused --------------------------------------------------------------------------------
    def mkdir(self, path: str, create_parents: bool = True, **kwargs: Any) -> None:
        raise _read_only(path)

    def makedirs(self, path: str, exist_ok: bool = False) -> None:
        raise _read_only(path)

    def rmdir(self, path: str) -> None:
        raise _read_only(path)

    def _rm(self, path: str) -> None:
        raise _read_only(path)

    def rm(self, path: Any, recursive: bool = False, maxdepth: int | None = None) -> None:
        raise _read_only(path)

    def pipe_file(self, path: str, value: bytes, mode: str = "overwrite", **kwargs: Any) -> None:
        raise _read_only(path)

    def touch(self, path: str, truncate: bool = True, **kwargs: Any) -> None:
        raise _read_only(path)

    def cp_file(self, path1: str, path2: str, **kwargs: Any) -> None:
        raise _read_only(path2)

    def mv(self, path1: Any, path2: Any, recursive: bool = False, maxdepth: int | None = None, **kwargs: Any) -> None:
        raise _read_only(path2)

    def put_file(self, lpath: str, rpath: str, callback: Any = None, mode: str = "overwrite", **kwargs: Any) -> None:
        raise _read_only(rpath)


class SgfsFile(AbstractBufferedFile):  # type: ignore[misc]
    """A file opened for reading; ranges come from the (cached) synthesised bytes."""

    fs: SgfsFileSystem

    def _fetch_range(self, start: int, end: int) -> bytes:
        return self.fs.source.read(self.fs._mount_path(self.path), end - start, start)
