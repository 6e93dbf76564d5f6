"""``sgfs specs build|add|ls|show|verify``: spec packs, the cache of LLM-written (or hand-written) specs."""

from __future__ import annotations

import json
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from generators.packs import STATUSES, PackError, SpecPack
from generators.spec import SpecError, from_json
from sgfs.cli.options import examples
from sgfs.errors import SgfsError
from sgfs.store.repositories import open_pack, parse_seed, parse_seed_list

SPECS_HELP = "Build, fill and inspect spec packs (see docs/specs.md); use one with --specs PACK.\n\n" + examples(
    "sgfs specs build 1-50 --backend openai --model M --out llm.sgfspack",
    "sgfs specs ls llm.sgfspack",
    "sgfs qa 1-50 --specs llm.sgfspack --out questions.jsonl",
)
BUILD_HELP = "Generate the specs of SEEDS (like 1-200) into PACK; rerun to resume an interrupted build.\n\n" + examples(
    "sgfs specs build 1-200 --backend procedural --out procedural.sgfspack",
    "sgfs specs build 1-200 --backend openai --model NAME --base-url http://127.0.0.1:8000/v1 --out llm.sgfspack",
    "sgfs specs build 1-5000 --backend vllm --model ./model --batch-size 512 --out llm.sgfspack",
)
ADD_HELP = "Put hand-written or edited specs into PACK (created if missing), validated like any other.\n\n" + examples(
    "sgfs spec 17 > s.json                 # then edit s.json",
    "sgfs specs add my.sgfspack s.json",
    "sgfs tree 17 --specs my.sgfspack",
)
LS_HELP = (
    "Print PACK's metadata, then one line per seed: seed, status, attempts, tokens, digest, title.\n\n"
    + examples(
        "sgfs specs ls llm.sgfspack",
        "sgfs specs ls llm.sgfspack | grep -v '^#' | cut -f1,2   # each seed and its status",
    )
)
SHOW_HELP = "Print the spec of SEED in PACK as JSON (validated), with its record on stderr.\n\n" + examples(
    "sgfs specs show llm.sgfspack 17",
    "sgfs specs show llm.sgfspack 17 > s.json && sgfs tree s.json",
)
VERIFY_HELP = "Recompute every digest and validate every spec of PACK; exit 1 on any problem.\n\n" + examples(
    "sgfs specs verify llm.sgfspack",
)


@click.group("specs", help=SPECS_HELP)
def specs_group() -> None:
    pass


def _engine_option(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for item in values:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"{item!r} is not KEY=VALUE")
        try:
            options[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            options[key.strip()] = raw  # a bare word: a string
    return options


@specs_group.command("build", help=BUILD_HELP)
@click.argument("seeds")
@click.option("--backend", type=click.Choice(["procedural", "openai", "vllm", "ray"]), required=True)
@click.option("--model", default=None, help="Model name (openai) or path/name (vllm, ray).")
@click.option("--out", "out", required=True, metavar="PACK", help="Pack file to write, or to resume.")
@click.option("--repairs", type=click.IntRange(0, 10), default=2, show_default=True, help="Repair rounds per seed.")
@click.option("--batch-size", type=click.IntRange(1, 100_000), default=32, show_default=True)
@click.option("--temperature", type=click.FloatRange(0, 2), default=0.7, show_default=True)
@click.option("--top-p", type=click.FloatRange(0, 1, min_open=True), default=0.95, show_default=True)
@click.option("--max-tokens", type=click.IntRange(256, 1_000_000), default=6000, show_default=True)
@click.option("--sampling-seed", type=click.IntRange(0, 2**31 - 1), default=0, show_default=True)
@click.option("--base-url", default=None, help="openai: endpoint (default: $OPENAI_BASE_URL, else OpenAI's).")
@click.option("--api-key", default=None, help="openai: key (default: $OPENAI_API_KEY).")
@click.option("--concurrency", type=click.IntRange(1, 1024), default=8, show_default=True, help="openai: requests.")
@click.option("--timeout", type=click.FloatRange(0.1), default=300.0, show_default=True, help="openai: seconds.")
@click.option("--retries", type=click.IntRange(0, 20), default=4, show_default=True, help="openai: on 429/5xx.")
@click.option(
    "--engine-option",
    "engine_options",
    multiple=True,
    metavar="KEY=VALUE",
    callback=_engine_option,
    help="vllm/ray: engine argument, VALUE as JSON (e.g. tensor_parallel_size=2, load_format=dummy).",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def build_command(
    seeds: str,
    backend: str,
    model: str | None,
    out: str,
    repairs: int,
    batch_size: int,
    temperature: float,
    top_p: float,
    max_tokens: int,
    sampling_seed: int,
    base_url: str | None,
    api_key: str | None,
    concurrency: int,
    timeout: float,
    retries: int,
    engine_options: dict[str, Any],
    quiet: bool,
) -> None:
    from generators.llm import BackendError, make_backend
    from generators.llm.base import Sampling
    from generators.llm.pipeline import BuildOptions, build, build_metadata, open_for_build

    seed_list = parse_seed_list(seeds)
    if Path(out).is_dir():
        raise SgfsError(f"--out {out} is a directory")
    options = BuildOptions(repairs, batch_size, Sampling(temperature, top_p, max_tokens), sampling_seed)
    backend_options: dict[str, Any] = {}
    if backend == "openai":
        backend_options = {
            "base_url": base_url,
            "api_key": api_key,
            "concurrency": concurrency,
            "timeout": timeout,
            "retries": retries,
        }
    elif backend in ("vllm", "ray"):
        backend_options = {"engine_options": engine_options, "batch_size": batch_size}
    try:
        engine = make_backend(backend, model, **backend_options)
    except BackendError as exc:
        raise SgfsError(str(exc)) from None
    try:
        pack = open_for_build(out, build_metadata(engine, options, version("sgfs")))
    except PackError as exc:
        engine.close()
        raise SgfsError(str(exc)) from None
    except OSError as exc:  # a read-only directory, a file where a directory should be...
        engine.close()
        raise SgfsError(f"cannot write --out {out}: {exc.strerror or exc}", exit_code=1) from None
    columns = (TextColumn("specs"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    try:
        with Progress(*columns, disable=quiet or not sys.stderr.isatty(), transient=True) as progress:
            task = progress.add_task("specs", total=len(seed_list), completed=len(set(seed_list) & set(pack.seeds())))
            report = build(seed_list, engine, pack, options, on_seed=lambda seed, status: progress.advance(task))
    except (BackendError, PackError) as exc:
        raise SgfsError(f"{exc} (finished seeds are kept: rerun to resume)", exit_code=1) from None
    except OSError as exc:
        raise SgfsError(
            f"cannot write --out {out}: {exc.strerror or exc} (finished seeds are kept: rerun to resume)", exit_code=1
        ) from None
    finally:
        engine.close()
        pack.close()
    s = report.statuses
    rate = report.built / report.seconds * 60 if report.seconds > 0 else 0.0
    click.echo(
        f"{out}: {report.built} specs built ({s['generated']} generated, {s['repaired']} repaired, "
        f"{s['fallback']} fell back), {report.resumed} already there; "
        f"{report.prompt_tokens} prompt and {report.completion_tokens} completion tokens; "
        f"{report.seconds:.1f} s ({rate:.1f} specs/min)",
        err=True,
    )


@specs_group.command("add", help=ADD_HELP)
@click.argument("pack_path", metavar="PACK")
@click.argument("files", metavar="SPEC.json...", nargs=-1, required=True)
def add_command(pack_path: str, files: tuple[str, ...]) -> None:
    specs = []
    for name in files:
        try:
            text = Path(name).read_text("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise SgfsError(f"cannot read spec file {name}: {getattr(exc, 'strerror', None) or exc}") from None
        try:
            specs.append(from_json(text))
        except SpecError as exc:
            raise SgfsError(f"invalid spec file {name}: {exc}") from None
    try:
        if Path(pack_path).exists():
            pack = SpecPack.open(pack_path, writable=True)
        else:
            pack = SpecPack.create(pack_path, {"backend": "manual", "model": "", "sgfs_version": version("sgfs")})
        with pack:
            for name, spec in zip(files, specs, strict=True):
                try:
                    pack.put(spec, "added", note=f"added from {Path(name).name}")
                except SpecError as exc:
                    raise SgfsError(f"invalid spec file {name}: {exc}") from None
    except PackError as exc:
        raise SgfsError(str(exc)) from None
    except OSError as exc:  # a read-only directory, a file where a directory should be...
        raise SgfsError(f"cannot write {pack_path}: {exc.strerror or exc}", exit_code=1) from None
    click.echo(f"added {len(specs)} spec{'s' * (len(specs) != 1)} to {pack_path}", err=True)


@specs_group.command("ls", help=LS_HELP)
@click.argument("pack_path", metavar="PACK")
def ls_command(pack_path: str) -> None:
    with open_pack(pack_path) as pack:
        try:
            for key, value in pack.metadata.items():
                click.echo(f"# {key}: {json.dumps(value, sort_keys=True)}")
            entries = list(pack.entries())
            statuses = {status: sum(e.status == status for e in entries) for status in STATUSES}
            click.echo(f"# specs: {len(entries)}; digest: {pack.pack_digest()}")
            click.echo("# statuses: " + ", ".join(f"{k} {v}" for k, v in statuses.items()))
            prompt, completion = sum(e.prompt_tokens for e in entries), sum(e.completion_tokens for e in entries)
            click.echo(f"# tokens: prompt {prompt}, completion {completion}")
            click.echo("# seed\tstatus\tattempts\ttokens\tdigest\ttitle")
            for entry in entries:
                title = _title(pack, entry.seed)
                tokens = entry.prompt_tokens + entry.completion_tokens
                click.echo(f"{entry.seed}\t{entry.status}\t{entry.attempts}\t{tokens}\t{entry.digest[:16]}\t{title}")
        except PackError as exc:
            raise SgfsError(str(exc)) from None


def _title(pack: SpecPack, seed: int) -> str:
    try:
        return pack.spec(seed).project.title
    except PackError:
        return "(refused: run sgfs specs verify)"


@specs_group.command("show", help=SHOW_HELP)
@click.argument("pack_path", metavar="PACK")
@click.argument("seed")
def show_command(pack_path: str, seed: str) -> None:
    number = parse_seed(seed)
    with open_pack(pack_path) as pack:
        try:
            spec = pack.spec(number)
            entry = pack.entry(number)
        except (PackError, LookupError) as exc:
            raise SgfsError(str(exc).strip("'\"")) from None
    note = f"; {entry.note}" if entry.note else ""
    click.echo(f"seed {number}: {entry.status}, {entry.attempts} attempts{note}", err=True)
    sys.stdout.write(spec.to_json())


@specs_group.command("verify", help=VERIFY_HELP)
@click.argument("pack_path", metavar="PACK")
def verify_command(pack_path: str) -> None:
    with open_pack(pack_path) as pack:
        problems = pack.verify()
        count, digest = len(pack), pack.pack_digest()
    for problem in problems:
        click.echo(problem, err=True)
    if problems:
        raise SgfsError(f"{pack_path}: {len(problems)} of {count} specs refused", exit_code=1)
    click.echo(f"ok: {count} specs, digest {digest}")
