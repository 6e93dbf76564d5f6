"""Seeds and seed lists as the user writes them (``118``, ``1-100,118``), and spec files."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import replace

from generators import MAX_SEED, Repository, SpecError, build_spec
from generators.keys import Key, KeyFileError, exposed
from generators.packs import MAX_SPEC_BYTES, PackError, PackRepositories, SeedNotInPack, SpecPack, check_untrusted
from generators.spec import World, from_json
from sgfs.errors import SgfsError

MAX_LIST = 1_000_000


def parse_seed(text: str) -> int:
    """One seed: a decimal integer in [0, 2^63)."""
    value = text.strip()
    if not value.isdigit() or not value.isascii():
        raise SgfsError(f"invalid seed {text!r}: expected an integer in [0, 2^63)")
    seed = int(value)
    if seed > MAX_SEED:
        raise SgfsError(f"invalid seed {text!r}: must be below 2^63")
    return seed


def parse_seed_list(text: str) -> list[int]:
    """A comma-separated list of seeds and inclusive ranges, in the order given, without repeats."""
    seeds: dict[int, None] = {}
    for part in text.split(","):
        part = part.strip()
        if not part:
            raise SgfsError(f"invalid seed list {text!r}: empty item")
        if "-" in part:
            low_text, _, high_text = part.partition("-")
            low, high = parse_seed(low_text), parse_seed(high_text)
            if high < low:
                raise SgfsError(f"invalid seed range {part!r}: the end is below the start")
            if high - low + 1 + len(seeds) > MAX_LIST:
                raise SgfsError(f"seed list {text!r} is too long (at most {MAX_LIST} seeds)")
            seeds.update(dict.fromkeys(range(low, high + 1)))
        else:
            seeds[parse_seed(part)] = None
    return list(seeds)


def format_seed_list(seeds: Sequence[int]) -> str:
    """The shortest text ``parse_seed_list`` reads back as ``seeds``, in order: runs become ranges."""
    parts: list[str] = []
    i = 0
    while i < len(seeds):
        j = i
        while j + 1 < len(seeds) and seeds[j + 1] == seeds[j] + 1:
            j += 1
        parts.append(str(seeds[i]) if j == i else f"{seeds[i]}-{seeds[j]}")
        i = j + 1
    return ",".join(parts)


def load_spec_file(path: str) -> Repository:
    """A spec JSON file, held to the limits of a pack's specs: its size is checked before it is read."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_SPEC_BYTES + 1)
        if len(raw) > MAX_SPEC_BYTES:
            raise SgfsError(f"invalid spec file {path}: larger than {MAX_SPEC_BYTES} bytes")
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SgfsError(f"cannot read spec file {path}: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        spec = from_json(text)
        check_untrusted(spec)
        return Repository(spec)
    except SpecError as exc:
        raise SgfsError(f"invalid spec file {path}: {exc}") from None


RepositoryFactory = Callable[[int], Repository]


def load_key(path: str | None, *, warn: bool = True) -> Key | None:
    """The universe key in ``path`` (``--key FILE``), None without one; a bad key file is one SgfsError. A key
    file others can read gets a one-line warning on stderr (a published key is fine to reuse)."""
    if path is None:
        return None
    try:
        key = Key.load(path)
    except KeyFileError as exc:
        raise SgfsError(str(exc)) from None
    if warn and exposed(path):
        sys.stderr.write(f"sgfs: warning: key file {path} is readable by others (fine for a published key)\n")
    return key


def procedural_repository(seed: int) -> Repository:
    try:
        return Repository(build_spec(seed))
    except SpecError as exc:  # a builder bug, reported rather than hidden
        raise SgfsError(f"seed {seed}: generated spec is invalid: {exc}", exit_code=1) from None


def keyed_procedural(key: Key | None, world: World | None = None) -> RepositoryFactory:
    """The procedural builder in ``key``'s universe (the open one without a key), in ``world`` (the plain
    study without one)."""
    if key is None and (world is None or world == World()):
        return procedural_repository

    def keyed(seed: int) -> Repository:
        try:
            return Repository(build_spec(seed, universe="" if key is None else key.salt(seed), world=world))
        except SpecError as exc:
            raise SgfsError(f"seed {seed}: generated spec is invalid: {exc}", exit_code=1) from None

    return keyed


def open_pack(path: str) -> SpecPack:
    try:
        return SpecPack.open(path)
    except PackError as exc:
        raise SgfsError(str(exc)) from None


def repository_factory(
    specs: str | None, fallback: str | None = None, key: Key | None = None, world: World | None = None
) -> RepositoryFactory:
    """Where specs come from: the procedural builder, or a spec pack (``--specs``, ``--fallback``); with ``key``,
    in that key's universe; with ``world``, departing from the plain study (procedural builder only)."""
    check_world(specs, world)
    if specs is None:
        if fallback is not None:
            raise SgfsError("--fallback only applies with --specs PACK")
        return keyed_procedural(key, world)
    repositories = PackRepositories(open_pack(specs), fallback=fallback == "procedural", key=key)

    def from_pack(seed: int) -> Repository:
        try:
            return repositories(seed)
        except SeedNotInPack as exc:
            raise SgfsError(f"{exc} (use --fallback procedural for seeds outside the pack)") from None
        except PackError as exc:
            raise SgfsError(str(exc)) from None

    return from_pack


def check_world(specs: str | None, world: World | None) -> None:
    """A world (``--counterfactual``, ``--mess``) is built from the procedural builder's study designs: refused with
    a pack."""
    if specs is not None and world is not None and world.counterfactual:
        raise SgfsError("--counterfactual applies to procedural repositories, not to a spec pack (--specs)")
    if specs is not None and world is not None and world.mess:
        raise SgfsError("--mess applies to procedural repositories, not to a spec pack (--specs)")


def open_repository(
    source: str, factory: RepositoryFactory = procedural_repository, key: Key | None = None, world: World | None = None
) -> Repository:
    """``source`` is a seed, or the path of a spec JSON file (as written by ``sgfs spec``); with ``key`` a spec
    file's repository is put in the key's universe (its seed's salt replaces the file's ``universe``). A spec file
    records its own world: ``world`` (``--counterfactual``) is refused with one."""
    if source.endswith(".json"):
        if world is not None and world.counterfactual:
            raise SgfsError(
                f"--counterfactual applies to seeds, not to spec file {source} (its 'counterfactual' field says "
                "which relations it turns around)"
            )
        if world is not None and world.mess:
            raise SgfsError(f"--mess applies to seeds, not to spec file {source} (set its 'mess' field instead)")
        repo = load_spec_file(source)
        if key is None:
            return repo
        return Repository(replace(repo.spec, universe=key.salt(repo.spec.seed)))
    return factory(parse_seed(source))


def mount_repositories(specs: str, fallback: str | None, key: Key | None = None) -> PackRepositories:
    """The mount's repository factory over a pack, checked whole before serving: a hostile or corrupt pack is
    refused at mount time (seed and field named) rather than answering EIO later. Seeds outside the pack
    raise PathNotFound (ENOENT through the mount) unless ``fallback``."""
    pack = open_pack(specs)
    problems = pack.verify()
    if problems:
        more = f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""
        raise SgfsError(f"{problems[0]}{more}")
    return PackRepositories(pack, fallback=fallback == "procedural", key=key)
