"""Cold work spread over processes: synthesise batches of files of one repository in a pool sized to the cores.

Workers rebuild the repository from its spec (sent pickled with every batch, pickled once per repository in the
parent and unpickled only by a worker that does not hold that repository yet), synthesise every
path of the batch with the same code as the daemon, store each file in the disk cache when one is
configured, and send back the sizes and the contents the disk cache did not keep. Bytes are identical to
in-process synthesis by construction: same functions, same inputs.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
from collections.abc import Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from generators import Repository, Spec
from sgfs.diskcache import DiskCache


@dataclass(frozen=True)
class Synthesised:
    path: str
    size: int  # -1 when synthesis failed
    content: bytes | None  # None when the disk cache holds it (or on failure)
    error: str = ""


_MAX_PICKLED_SPECS = 64
_disks: dict[tuple[str, int], DiskCache] = {}
_repositories: dict[str, Repository] = {}


def _start_worker() -> None:
    import generators

    generators.repository(0)  # load the data files once, before the first real request


def _synthesise(
    repo_key: str,
    pickled_spec: bytes,
    paths: Sequence[str],
    disk_place: tuple[str, int] | None,
    sizes_only: bool = False,
) -> list[Synthesised]:
    _disk = None
    if disk_place is not None:
        _disk = _disks.get(disk_place)
        if _disk is None:
            _disk = _disks[disk_place] = DiskCache(Path(disk_place[0]), disk_place[1])
    repo = _repositories.get(repo_key)
    if repo is None:
        if len(_repositories) >= 8:
            _repositories.clear()
        spec: Spec = pickle.loads(pickled_spec)  # only here: a known repository skips the unpickling
        repo = _repositories[repo_key] = Repository(spec)
    results: list[Synthesised] = []
    if sizes_only:  # exact sizes from the cell texts, the whole batch measured together; no file is assembled
        for path, size in zip(paths, repo.sizes(list(paths)), strict=True):
            if isinstance(size, Exception):
                results.append(Synthesised(path, -1, None, f"{type(size).__name__}: {size}"))
            else:
                results.append(Synthesised(path, size, None))
        return results
    for path in paths:
        try:
            content = repo.read(path)
        except Exception as exc:  # reported to the caller, who synthesises in process and maps the error
            results.append(Synthesised(path, -1, None, f"{type(exc).__name__}: {exc}"))
            continue
        stored = _disk is not None and _disk.put(repo_key, path, content) > len(content)
        results.append(Synthesised(path, len(content), None if stored else content))
    return results


def _nothing() -> None:
    return None


class SynthesisPool:
    """A process pool for batches of one repository's files."""

    def __init__(self, workers: int | None = None) -> None:
        self.workers = max(1, workers or os.cpu_count() or 1)
        # spawn: the daemon is multithreaded when the pool starts, and fork would copy held locks.
        self._executor = ProcessPoolExecutor(
            self.workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_start_worker,
        )
        self._pickled_specs: dict[str, bytes] = {}  # repo_key -> pickled spec: pickled once, not per batch

    def warm(self) -> None:
        """Start every worker now rather than on the first cold request."""
        for _ in range(self.workers):
            self._executor.submit(_nothing)

    def submit(
        self,
        repo_key: str,
        spec: Spec,
        paths: Sequence[str],
        disk: DiskCache | None = None,
        sizes_only: bool = False,
    ) -> Future[list[Synthesised]]:
        """Synthesise ``paths``; with ``disk``, the worker stores each file there and returns its size only."""
        place = (str(disk.root.parent), disk.max_bytes) if disk is not None else None
        return self._executor.submit(
            _synthesise, repo_key, self._pickled(repo_key, spec), list(paths), place, sizes_only
        )

    def _pickled(self, repo_key: str, spec: Spec) -> bytes:
        pickled = self._pickled_specs.get(repo_key)
        if pickled is None:
            if len(self._pickled_specs) >= _MAX_PICKLED_SPECS:
                self._pickled_specs.clear()
            pickled = self._pickled_specs[repo_key] = pickle.dumps(spec, protocol=pickle.HIGHEST_PROTOCOL)
        return pickled

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
