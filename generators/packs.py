"""Spec packs: many specs keyed by seed in one SQLite file, with metadata, integrity digests and resumable writes.

Why SQLite: it is in the standard library, one file is the whole pack (easy to copy and share), every seed
is written in its own atomic transaction (an interrupted build keeps every finished seed, so a rerun simply
continues), and a reader can fetch one seed without parsing the rest.

A pack is untrusted input. Opening one checks, before any query on the data, that the file is within
:data:`MAX_PACK_BYTES` and that ``sqlite_master`` holds exactly the expected plain tables with exactly the
expected SQL (a view, a trigger, an extra index or column is refused: a recursive view would otherwise hang
every read); then that the row counts and the lengths of the stored texts are within bounds, and the format.
Readers connect read-only (``mode=ro`` and ``PRAGMA query_only``) with a cap on the length of any value, and
every query is aborted past :data:`MAX_QUERY_SECONDS` (a progress handler), so no content can make a read hang.
Every spec is checked when it is read:
its stored canonical JSON must match its xxh3-128 digest, parse and pass the full spec validation, carry the
seed it is filed under, and stay within size limits. Errors name the pack, the seed and the field.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from types import TracebackType
from typing import Any

import xxhash

from generators.builders.procedural import build_spec
from generators.keys import Key
from generators.repository import MAX_SEED, PathNotFound, Repository
from generators.spec import GENERATOR_VERSION, Spec, SpecError, from_json

PACK_FORMAT = "sgfs-spec-pack"
PACK_VERSION = 1
STATUSES = ("generated", "repaired", "fallback", "added")
MAX_SPEC_BYTES = 1 << 20
# Bounds checked when a pack is opened, before anything is loaded from it.
MAX_PACK_BYTES = 64 << 30
MAX_PACK_SPECS = 10_000_000
MAX_META_ROWS = 1000
MAX_META_BYTES = 1 << 16
MAX_NOTE_BYTES = 1 << 16
MAX_FIELD_BYTES = 256  # status, digest
# No SQLite statement on a pack may run longer than this (a progress handler aborts it).
MAX_QUERY_SECONDS = 30.0
_PROGRESS_STEPS = 10_000
# A hand-written or generated spec may change the generation parameters; a hostile one could ask for files of
# billions of cells. Bound the cells of one file (the default is at most 300 rows x 40 columns).
MAX_CELLS_PER_FILE = 500_000

_SCHEMA = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE specs ("
    " seed INTEGER PRIMARY KEY,"
    " status TEXT NOT NULL,"
    " spec TEXT NOT NULL,"
    " digest TEXT NOT NULL,"
    " attempts INTEGER NOT NULL,"
    " prompt_tokens INTEGER NOT NULL,"
    " completion_tokens INTEGER NOT NULL,"
    " note TEXT NOT NULL)",
)
# Everything sqlite_master may hold, as (type, name, table) -> SQL: two plain tables and meta's primary-key index.
_MASTER: dict[tuple[str, str, str], str | None] = {
    ("table", "meta", "meta"): _SCHEMA[0],
    ("index", "sqlite_autoindex_meta_1", "meta"): None,
    ("table", "specs", "specs"): _SCHEMA[1],
}


class PackError(Exception):
    """A pack that cannot be opened, is corrupt, or holds a spec that is refused."""


class SeedNotInPack(PathNotFound):
    """The pack has no spec for this seed (and no fallback was asked for)."""


@dataclass(frozen=True)
class PackEntry:
    """What the pack records about one seed, besides the spec itself."""

    seed: int
    status: str
    digest: str
    attempts: int
    prompt_tokens: int
    completion_tokens: int
    note: str


def spec_digest(canonical: str) -> str:
    """The integrity key of a spec's canonical JSON text."""
    return xxhash.xxh3_128_hexdigest(canonical.encode("utf-8"))


def canonical_json(spec: Spec) -> str:
    return spec.to_json()


def check_untrusted(spec: Spec) -> None:
    """Limits beyond the spec validation, for specs that come from outside this process."""
    cells = spec.params.rows_max * len(spec.variables)
    if cells > MAX_CELLS_PER_FILE:
        raise SpecError(
            f"params.rows_max: {spec.params.rows_max} rows x {len(spec.variables)} columns exceeds "
            f"{MAX_CELLS_PER_FILE} cells per file"
        )


class SpecPack:
    """One pack file. Thread-safe (one connection behind a lock), so the mount's threads can share it."""

    def __init__(self, path: Path, connection: sqlite3.Connection, writable: bool) -> None:
        self.path = path
        self.writable = writable
        self._db = connection
        self._lock = threading.Lock()
        self._deadline = math.inf  # of the query running now (writes, which are ours, are not bounded)
        connection.set_progress_handler(self._over_time, _PROGRESS_STEPS)

    def _over_time(self) -> int:
        return int(time.monotonic() > self._deadline)

    # -- opening --------------------------------------------------------------------------------------
    @classmethod
    def create(cls, path: str | Path, metadata: Mapping[str, Any]) -> SpecPack:
        """A new, empty pack with ``metadata``; refuses to overwrite an existing file."""
        target = Path(path)
        if target.exists():
            raise PackError(f"{target}: already exists")
        try:
            db = sqlite3.connect(target, check_same_thread=False, isolation_level=None)
            with _transaction(db):
                for statement in _SCHEMA:
                    db.execute(statement)
                # The generator's version is recorded (its specs record it too); a pack's repositories follow from
                # its specs, so a pack of another generator version is still served as written.
                values = {
                    "format": PACK_FORMAT,
                    "format_version": PACK_VERSION,
                    "generator_version": GENERATOR_VERSION,
                    **metadata,
                }
                db.executemany(
                    "INSERT INTO meta VALUES (?, ?)", [(k, json.dumps(v, sort_keys=True)) for k, v in values.items()]
                )
        except sqlite3.Error as exc:
            with contextlib.suppress(OSError):  # nothing to remove where the folder itself is unusable
                target.unlink(missing_ok=True)
            raise PackError(f"{target}: cannot create the pack: {exc}") from None
        return cls(target, db, writable=True)

    @classmethod
    def open(cls, path: str | Path, *, writable: bool = False) -> SpecPack:
        target = Path(path)
        if not target.is_file():
            raise PackError(f"{target}: no such pack file")
        try:
            size = target.stat().st_size
        except OSError as exc:
            raise PackError(f"{target}: cannot read the pack ({exc.strerror or exc})") from None
        if size > MAX_PACK_BYTES:
            raise PackError(f"{target}: refused: the file is larger than {MAX_PACK_BYTES} bytes")
        journal = target.with_name(target.name + "-journal")
        try:
            if not writable and journal.exists() and os.access(target, os.W_OK):
                # A writer was killed inside a transaction: its journal holds the pages to restore. A read-only
                # connection cannot roll it back, so a writable one does (restoring the last committed state).
                with contextlib.closing(cls(target, cls._connect(target, "rw"), writable=True)) as recovering:
                    recovering._query("SELECT COUNT(*) FROM sqlite_master")
            db = cls._connect(target, "rw" if writable else "ro")
            if not writable:
                db.execute("PRAGMA query_only = ON")
                db.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 4 * MAX_SPEC_BYTES)
        except sqlite3.Error as exc:
            raise PackError(f"{target}: not an sgfs spec pack ({exc})") from None
        pack = cls(target, db, writable)
        try:
            pack._check_schema()
        except BaseException:
            pack.close()
            raise
        return pack

    @staticmethod
    def _connect(target: Path, mode: str) -> sqlite3.Connection:
        db = sqlite3.connect(
            f"{target.resolve().as_uri()}?mode={mode}", uri=True, check_same_thread=False, isolation_level=None
        )
        # Untrusted file: no code in the schema (triggers, views) may call functions, and check cells.
        db.execute("PRAGMA trusted_schema = OFF")
        db.execute("PRAGMA cell_size_check = ON")
        return db

    def _check_schema(self) -> None:
        """Plain tables of exactly the expected schema, checked through sqlite_master before any query on the
        data; then the bounds on rows and stored texts; then the format."""
        found: dict[tuple[str, str, str], object] = {}
        for kind, name, table, sql in self._query("SELECT type, name, tbl_name, sql FROM sqlite_master", bad="not"):
            found[(str(kind), str(name), str(table))] = sql
        for key, sql in _MASTER.items():
            if key not in found or _normal(found[key]) != _normal(sql):
                raise PackError(f"{self.path}: not an sgfs spec pack ({key[0]} {key[1]!r} missing or different)")
        for kind, name, _ in sorted(set(found) - set(_MASTER)):
            raise PackError(f"{self.path}: not an sgfs spec pack (unexpected {kind} {name!r})")
        meta_rows, meta_bytes = self._query(
            "SELECT COUNT(*), MAX(length(CAST(key AS BLOB)) + length(CAST(value AS BLOB))) FROM meta"
        )[0]
        if meta_rows > MAX_META_ROWS or (meta_bytes or 0) > MAX_META_BYTES:
            raise PackError(
                f"{self.path}: refused: metadata exceeds {MAX_META_ROWS} keys or {MAX_META_BYTES} bytes per key"
            )
        rows, notes, fields = self._query(
            "SELECT COUNT(*), MAX(length(CAST(note AS BLOB))),"
            " MAX(MAX(length(CAST(status AS BLOB)), length(CAST(digest AS BLOB)))) FROM specs"
        )[0]
        if rows > MAX_PACK_SPECS:
            raise PackError(f"{self.path}: refused: {rows} specs exceed {MAX_PACK_SPECS}")
        if (notes or 0) > MAX_NOTE_BYTES or (fields or 0) > MAX_FIELD_BYTES:
            raise PackError(
                f"{self.path}: refused: a note exceeds {MAX_NOTE_BYTES} bytes, or a status or digest "
                f"{MAX_FIELD_BYTES} bytes"
            )
        meta = self.metadata
        if meta.get("format") != PACK_FORMAT:
            raise PackError(f"{self.path}: not an sgfs spec pack (format {meta.get('format')!r})")
        if meta.get("format_version") != PACK_VERSION:
            raise PackError(
                f"{self.path}: pack format version {meta.get('format_version')!r} is not supported "
                f"(this sgfs reads {PACK_VERSION})"
            )

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> SpecPack:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    # -- reading --------------------------------------------------------------------------------------
    def _query(
        self, sql: str, args: tuple[object, ...] = (), *, bad: str = "cannot read", where: str = ""
    ) -> list[tuple[Any, ...]]:
        """Rows of one read, aborted past :data:`MAX_QUERY_SECONDS`; any SQLite error is one PackError."""
        with self._lock:
            self._deadline = time.monotonic() + MAX_QUERY_SECONDS
            try:
                return self._db.execute(sql, args).fetchall()
            except sqlite3.Error as exc:
                where = where or str(self.path)
                if self._over_time():
                    raise PackError(f"{where}: refused: a read took longer than {MAX_QUERY_SECONDS:g} s") from None
                what = "not an sgfs spec pack" if bad == "not" else "cannot read the pack"
                reason = " ".join(str(exc).split())  # one line, and short: SQLite may quote the stored text
                reason = reason if len(reason) <= 160 else reason[:160] + "..."
                raise PackError(f"{where}: {what} ({reason})") from None
            finally:
                self._deadline = math.inf

    @property
    def metadata(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in self._query("SELECT key, value FROM meta ORDER BY key"):
            try:
                out[str(key)] = json.loads(value)
            except (TypeError, ValueError, RecursionError):  # ValueError: JSONDecodeError, int's digit limit
                raise PackError(f"{self.path}: metadata {key!r} is not valid JSON") from None
        return out

    def seeds(self) -> list[int]:
        return [int(row[0]) for row in self._query("SELECT seed FROM specs ORDER BY seed")]

    def __len__(self) -> int:
        return int(self._query("SELECT COUNT(*) FROM specs")[0][0])

    def __contains__(self, seed: object) -> bool:
        return isinstance(seed, int) and bool(self._query("SELECT 1 FROM specs WHERE seed = ?", (seed,)))

    def entries(self) -> Iterator[PackEntry]:
        rows = self._query(
            "SELECT seed, status, digest, attempts, prompt_tokens, completion_tokens, note FROM specs ORDER BY seed"
        )
        for row in rows:
            yield self._entry(row)

    def entry(self, seed: int) -> PackEntry:
        rows = self._query(
            "SELECT seed, status, digest, attempts, prompt_tokens, completion_tokens, note FROM specs WHERE seed = ?",
            (seed,),
        )
        if not rows:
            raise SeedNotInPack(f"seed {seed} is not in pack {self.path}")
        return self._entry(rows[0])

    def _entry(self, row: tuple[Any, ...]) -> PackEntry:
        seed, status, digest, attempts, prompt_tokens, completion_tokens, note = row
        if not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
            raise PackError(f"{self.path}: seed {seed!r} is outside [0, 2^63)")
        if status not in STATUSES:
            raise PackError(f"{self.path}: seed {seed}: status {status!r} is not one of {', '.join(STATUSES)}")
        counts = (attempts, prompt_tokens, completion_tokens)
        if not all(isinstance(v, int) and v >= 0 for v in counts):
            raise PackError(f"{self.path}: seed {seed}: attempts and token counts must be integers >= 0")
        return PackEntry(seed, str(status), str(digest), attempts, prompt_tokens, completion_tokens, str(note))

    def spec(self, seed: int) -> Spec:
        """The validated spec of ``seed``; :class:`PackError` names the seed and field of any problem."""
        where = f"{self.path}: seed {seed}"
        # Type and length first, the text itself only when it is within bounds.
        rows = self._query(
            "SELECT typeof(spec), length(CAST(spec AS BLOB)) FROM specs WHERE seed = ?", (seed,), where=where
        )
        if not rows:
            raise SeedNotInPack(f"seed {seed} is not in pack {self.path}")
        kind, length = rows[0]
        if kind != "text" or not isinstance(length, int) or length > MAX_SPEC_BYTES:
            raise PackError(f"{where}: the stored spec is not text or is larger than {MAX_SPEC_BYTES} bytes")
        rows = self._query("SELECT spec, digest FROM specs WHERE seed = ?", (seed,), where=where)
        if not rows:
            raise SeedNotInPack(f"seed {seed} is not in pack {self.path}")
        text, digest = rows[0]
        if not isinstance(text, str) or len(text) > MAX_SPEC_BYTES:
            raise PackError(f"{where}: the stored spec is not text or is larger than {MAX_SPEC_BYTES} bytes")
        if spec_digest(text) != digest:
            raise PackError(f"{where}: digest mismatch (the spec was changed outside `sgfs specs add`, or corrupted)")
        try:
            spec = from_json(text)
            check_untrusted(spec)
        except SpecError as exc:
            raise PackError(f"{where}: refused: {exc}") from None
        if spec.seed != seed:
            raise PackError(f"{where}: refused: seed: the spec says {spec.seed}")
        return spec

    def pack_digest(self) -> str:
        """One key for the whole content: xxh3-128 over every (seed, spec digest) in seed order."""
        h = xxhash.xxh3_128()
        for seed, digest in self._query("SELECT seed, digest FROM specs ORDER BY seed"):
            h.update(f"{seed}:{digest}\n".encode())
        return h.hexdigest()

    def verify(self) -> list[str]:
        """Every problem of the pack, one message each (empty when it is sound)."""
        problems: list[str] = []
        for seed in self.seeds():
            try:
                self.entry(seed)
                self.spec(seed)
            except PackError as exc:
                problems.append(str(exc))
        return problems

    # -- writing --------------------------------------------------------------------------------------
    def put(
        self,
        spec: Spec,
        status: str,
        *,
        attempts: int = 0,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
        note: str = "",
    ) -> PackEntry:
        """Store (or replace) the spec of ``spec.seed`` in one committed transaction."""
        if not self.writable:
            raise PackError(f"{self.path}: opened read-only")
        if status not in STATUSES:
            raise ValueError(f"status {status!r}")
        check_untrusted(spec)
        text = canonical_json(spec)
        digest = spec_digest(text)
        row = (spec.seed, status, text, digest, attempts, prompt_tokens, completion_tokens, note)
        with self._lock:
            try:
                with _transaction(self._db):
                    self._db.execute("INSERT OR REPLACE INTO specs VALUES (?, ?, ?, ?, ?, ?, ?, ?)", row)
            except sqlite3.Error as exc:
                raise PackError(f"{self.path}: cannot write seed {spec.seed} ({exc})") from None
        return PackEntry(spec.seed, status, digest, attempts, prompt_tokens, completion_tokens, note)

    def set_metadata(self, key: str, value: Any) -> None:
        with self._lock, _transaction(self._db):
            self._db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, json.dumps(value, sort_keys=True)))


def _normal(sql: object) -> object:
    """SQL text with runs of white space made one space (as a CREATE statement is stored); other values as is."""
    return " ".join(sql.split()) if isinstance(sql, str) else sql


class _transaction:
    """BEGIN IMMEDIATE ... COMMIT, or ROLLBACK on any exception (the connection runs in autocommit mode)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.db.execute("COMMIT" if kind is None else "ROLLBACK")


class PackRepositories:
    """``seed -> Repository`` from a pack; seeds outside it raise :class:`SeedNotInPack`, or with
    ``fallback`` get the procedural spec. With ``key`` every spec gets the seed's salt (``universe``): the
    pack's formulas stay as written, the tree, the data and the questions become those of the keyed universe."""

    def __init__(self, pack: SpecPack, *, fallback: bool = False, key: Key | None = None) -> None:
        self.pack = pack
        self.fallback = fallback
        self.key = key

    def spec(self, seed: int) -> Spec:
        universe = "" if self.key is None else self.key.salt(seed)
        if seed not in self.pack:
            if self.fallback:
                return build_spec(seed, universe=universe)
            raise SeedNotInPack(f"seed {seed} is not in pack {self.pack.path}")
        spec = self.pack.spec(seed)
        return spec if self.key is None else replace(spec, universe=universe)

    def __call__(self, seed: int) -> Repository:
        return Repository(self.spec(seed))
