"""A mount's options, written once: ``sgfs mount`` fills them from click, the daemon from its argv, and
``serve()`` reads them; ``to_argv`` and ``from_argv`` are the one way they travel to a detached daemon."""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, replace

from generators.spec import MAX_MESS, World
from sgfs.errors import SgfsError
from sgfs.store.diskcache import DEFAULT_DISK_CACHE_MB
from sgfs.store.repositories import check_world, format_seed_list, parse_seed_list
from sgfs.store.source import DEFAULT_CACHE_MB


@dataclass(frozen=True)
class MountOptions:
    """What a mount serves and how. Paths are absolute once ``checked`` (the daemon runs from "/")."""

    seeds: tuple[int, ...] = ()  # listed at the root; any seed resolves on lookup
    cache_mb: int = DEFAULT_CACHE_MB  # bound of the in-memory cache of synthesised files
    log_file: str | None = None  # None: stderr in the foreground, nothing in the background
    audit_file: str | None = None  # every listing, open and read appended here; the kernel caches none
    specs: str | None = None  # spec pack served instead of the procedural builder
    fallback: str | None = None  # "procedural": seeds outside the pack get the procedural spec
    cache_dir: str | None = None  # disk cache folder; None: the default folder; "": no disk cache
    disk_cache_mb: int = DEFAULT_DISK_CACHE_MB
    workers: int | None = None  # synthesis processes; None: one per core; 0: none
    cache_listings: bool = True  # False: every listing reaches the daemon (tests, benchmarks)
    exit_with: int | None = None  # unmount once the process with this pid is gone
    key_file: str | None = None  # universe key FILE (its path travels to the daemon, never the key)
    counterfactual: bool = False  # procedural repositories in the counterfactual world
    mess: int = 0  # --mess LEVEL of the procedural repositories (generators.mess)

    def checked(self, mountpoint: str) -> MountOptions:
        """These options with absolute paths, or an SgfsError naming the first one that cannot work."""
        if self.cache_mb < 0:
            raise SgfsError(f"invalid --cache-mb {self.cache_mb}: must be 0 or more")
        if self.fallback is not None and self.specs is None:
            raise SgfsError("--fallback only applies with --specs PACK")
        check_world(self.specs, World(counterfactual=self.counterfactual, mess=self.mess))
        mnt = os.path.abspath(mountpoint)
        log_file = None if self.log_file is None else os.path.abspath(self.log_file)
        audit_file = None if self.audit_file is None else os.path.abspath(self.audit_file)
        if audit_file is not None and (audit_file == mnt or audit_file.startswith(mnt + os.sep)):
            raise SgfsError(f"--audit {audit_file} must lie outside the mount point")
        for what, path in (("log", log_file), ("audit", audit_file)):
            if path is not None:
                try:
                    with open(path, "a", encoding="utf-8"):
                        pass
                except OSError as exc:
                    raise SgfsError(f"cannot write {what} file {path}: {exc.strerror or exc}") from None
        return replace(
            self,
            log_file=log_file,
            audit_file=audit_file,
            specs=None if self.specs is None else os.path.abspath(self.specs),
            key_file=None if self.key_file is None else os.path.abspath(self.key_file),
            cache_dir=self.cache_dir if not self.cache_dir else os.path.abspath(self.cache_dir),
        )

    def to_argv(self) -> list[str]:
        """The daemon's command-line arguments for these options (``from_argv`` reads them back)."""
        argv = ["--seeds", format_seed_list(self.seeds), "--cache-mb", str(self.cache_mb)]
        argv += ["--disk-cache-mb", str(self.disk_cache_mb)]
        for flag, value in (
            ("--log", self.log_file),
            ("--audit", self.audit_file),
            ("--specs", self.specs),
            ("--fallback", self.fallback),
            ("--cache-dir", self.cache_dir),
            ("--workers", self.workers),
            ("--exit-with", self.exit_with),
            ("--key", self.key_file),
        ):
            if value is not None:
                argv += [flag, str(value)]
        if not self.cache_listings:
            argv.append("--no-listing-cache")
        if self.counterfactual:
            argv.append("--counterfactual")
        if self.mess:
            argv += ["--mess", str(self.mess)]
        return argv

    @classmethod
    def from_argv(cls, argv: list[str]) -> tuple[str, MountOptions, bool]:
        """(mount point, options, whether to leave stderr once mounted) from the daemon's arguments."""
        parser = argparse.ArgumentParser(prog="python -m sgfs.mount.daemon", description="Serve repositories at MNT.")
        parser.add_argument("mountpoint", metavar="MNT")
        parser.add_argument("--seeds", default="", help="seeds listed at the root, e.g. 1-100,118")
        parser.add_argument("--cache-mb", type=int, default=DEFAULT_CACHE_MB)
        parser.add_argument("--log", default=None, help="log file (default: stderr)")
        parser.add_argument("--background", action="store_true", help="stop writing to stderr once mounted")
        parser.add_argument("--specs", default=None, help="spec pack to serve")
        parser.add_argument("--fallback", default=None, choices=["procedural"], help="for seeds outside the pack")
        parser.add_argument("--audit", default=None, help="append an audit event per listing and read to this file")
        parser.add_argument("--exit-with", type=int, default=None, help="unmount when the process with this pid exits")
        parser.add_argument("--cache-dir", default=None, help="disk cache folder; empty: no disk cache")
        parser.add_argument("--disk-cache-mb", type=int, default=DEFAULT_DISK_CACHE_MB)
        parser.add_argument("--workers", type=int, default=None, help="synthesis processes (0: none; default: cores)")
        parser.add_argument("--no-listing-cache", action="store_true", help="every listing reaches the daemon")
        parser.add_argument("--key", default=None, help="universe key file (the daemon reads the key from it)")
        parser.add_argument("--counterfactual", action="store_true", help="serve the counterfactual world")
        parser.add_argument("--mess", type=int, default=0, choices=range(MAX_MESS + 1), help="messiness level")
        args = parser.parse_args(argv)
        options = cls(
            seeds=tuple(parse_seed_list(args.seeds)) if args.seeds.strip() else (),
            cache_mb=args.cache_mb,
            log_file=args.log,
            audit_file=args.audit,
            specs=args.specs,
            fallback=args.fallback,
            cache_dir=args.cache_dir,
            disk_cache_mb=args.disk_cache_mb,
            workers=args.workers,
            cache_listings=not args.no_listing_cache,
            exit_with=args.exit_with,
            key_file=args.key,
            counterfactual=args.counterfactual,
            mess=args.mess,
        )
        return args.mountpoint, options, args.background
