"""``sgfs mount MNT`` and ``sgfs unmount MNT``: serve repositories as a read-only FUSE filesystem."""

from __future__ import annotations

import os

import click

from sgfs.cli.options import examples, key_option, mess_option, specs_options, world_option
from sgfs.errors import SgfsError
from sgfs.mount.control import FSTYPE, check_fuse, check_mount_point, mount_type, start_daemon, unmount
from sgfs.mount.daemon import serve, setup_logging
from sgfs.mount.options import MountOptions
from sgfs.store.diskcache import DEFAULT_DISK_CACHE_MB
from sgfs.store.repositories import load_key, mount_repositories, parse_seed_list
from sgfs.store.source import DEFAULT_CACHE_MB

MOUNT_HELP = """Serve repositories at MNT as a read-only FUSE filesystem.

MNT/<seed>/ is repository <seed> for any integer seed in [0, 2^63); the root lists the seeds given with
--seeds (none by default: `ls MNT/118` works, `ls MNT` is empty). Runs in the background and returns once
the mount answers; stop it with `sgfs unmount MNT`.

""" + examples(
    "mkdir -p /mnt/sgfs && sgfs mount /mnt/sgfs --seeds 1-100,118",
    "ls /mnt/sgfs/118 && cat /mnt/sgfs/3/README.md",
    "sgfs unmount /mnt/sgfs",
    "sgfs mount /mnt/sgfs --seeds 1 --foreground   # log on stderr; Ctrl-C unmounts",
    "sgfs mount /mnt/sealed --key universe.key     # the keyed universe (same seeds, other repositories)",
)
UNMOUNT_HELP = "Unmount an sgfs mount and return once it is gone.\n\n" + examples(
    "sgfs unmount /mnt/sgfs",
    "fusermount3 -uz /mnt/sgfs             # still busy (a shell inside it): detach lazily",
)


@click.command("mount", help=MOUNT_HELP)
@click.argument("mountpoint", metavar="MNT")
@click.option("--seeds", default="", metavar="LIST", help="Seeds listed at the root, e.g. 1-100,118.")
@click.option("--foreground", "-f", is_flag=True, help="Serve in this process until unmounted.")
@click.option(
    "--cache-mb",
    type=click.IntRange(min=0),
    default=DEFAULT_CACHE_MB,
    show_default=True,
    help="Size bound of the daemon's cache of synthesised files, in MiB.",
)
@click.option(
    "--log",
    "log_file",
    metavar="FILE",
    default=None,
    help="Write the daemon's log here (default: stderr with --foreground, discarded in the background).",
)
@click.option(
    "--audit",
    "audit_file",
    metavar="FILE",
    default=None,
    help="Append every listing and read, with the caller's session, to FILE (for `sgfs eval --audit`); "
    "turns off the kernel's page cache.",
)
@specs_options
@key_option
@world_option
@mess_option
@click.option(
    "--cache-dir",
    metavar="DIR",
    default=None,
    help="Persistent cache of sizes and contents, shared by mounts (default: $XDG_CACHE_HOME/sgfs or ~/.cache/sgfs).",
)
@click.option("--no-disk-cache", is_flag=True, help="Keep nothing on disk.")
@click.option(
    "--disk-cache-mb",
    type=click.IntRange(min=0),
    default=DEFAULT_DISK_CACHE_MB,
    show_default=True,
    help="Size bound of the disk cache, in MiB.",
)
@click.option(
    "--workers",
    type=click.IntRange(min=0),
    default=None,
    help="Processes that synthesise cold files in parallel (default: one per core; 0: none).",
)
def mount_command(
    mountpoint: str,
    seeds: str,
    foreground: bool,
    cache_mb: int,
    log_file: str | None,
    audit_file: str | None,
    specs: str | None,
    fallback: str | None,
    key_file: str | None,
    counterfactual: bool,
    mess: int,
    cache_dir: str | None,
    no_disk_cache: bool,
    disk_cache_mb: int,
    workers: int | None,
) -> None:
    seed_list = parse_seed_list(seeds) if seeds.strip() else []
    listed = len(seed_list)
    load_key(key_file)  # a bad key file is refused here, in one line, not by the daemon
    if specs is not None:
        pack = mount_repositories(specs, fallback)  # refuses a corrupt or hostile pack before mounting
        listed = listed or len(pack.pack.seeds())  # the root lists the pack's seeds unless --seeds says otherwise
    if no_disk_cache:
        cache_dir = ""
    elif cache_dir == "":
        raise SgfsError("--cache-dir must not be empty (use --no-disk-cache)")
    options = MountOptions(
        seeds=tuple(seed_list),
        cache_mb=cache_mb,
        log_file=log_file,
        audit_file=audit_file,
        specs=specs,
        fallback=fallback,
        cache_dir=cache_dir,
        disk_cache_mb=disk_cache_mb,
        workers=workers,
        key_file=key_file,
        counterfactual=counterfactual,
        mess=mess,
    )
    check_fuse()
    mnt = check_mount_point(mountpoint)
    options = options.checked(mnt)
    if foreground:
        setup_logging(options.log_file)
        serve(mnt, options)
        return
    pid = start_daemon(mnt, options)
    what = f"{listed} seed{'s' * (listed != 1)} listed" if listed else "no seed listed"
    click.echo(f"mounted sgfs at {mnt} ({what}; daemon pid {pid})", err=True)


@click.command("unmount", help=UNMOUNT_HELP)
@click.argument("mountpoint", metavar="MNT")
def unmount_command(mountpoint: str) -> None:
    mnt = os.path.abspath(mountpoint)
    kind = mount_type(mnt)
    if kind is None:
        if not os.path.lexists(mnt):
            raise SgfsError(f"{mountpoint} does not exist")
        raise SgfsError(f"{mountpoint} is not mounted")
    if kind != FSTYPE:
        raise SgfsError(f"{mountpoint} is not an sgfs mount (it is a {kind} mount)")
    unmount(mnt)
    click.echo(f"unmounted {mnt}", err=True)
