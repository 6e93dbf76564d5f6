"""One `sgfs eval` run end to end: items, run directory (resume), mount, agents, records, summary."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from types import FrameType

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from generators.spec import World
from qa.model import QUESTION_FORMAT, Json
from qa.records import QuestionSource
from qa.result_record import ResultRecord
from sgfs.agents.sandbox import SandboxPolicy, check_sandbox, hidden_paths
from sgfs.errors import SgfsError
from sgfs.eval.mount import RunMount, private_mount, user_mount
from sgfs.eval.protocol import check_agent, resolve_relative
from sgfs.eval.questions import PlannedItem, digest, load_questions, load_twin_items, select_shard
from sgfs.eval.results import (
    RESULTS,
    RUN,
    SUMMARY,
    ResultsWriter,
    RunDescription,
    generator_version,
    mess_level,
    question_format,
    read_results,
    read_run,
    write_json,
)
from sgfs.eval.runner import Interrupted, RunItem, Runner, RunSettings
from sgfs.eval.summary import RunSummary, summarize_records
from sgfs.mount.audit import AuditReader
from sgfs.store.repositories import load_key


@dataclass(frozen=True)
class EvalConfig:
    agent: str
    out: Path
    seeds: list[int] | None
    seeds_text: str | None
    questions_file: str | None
    per_type: int
    unanswerable: float
    variant: str
    shard: tuple[int, int] | None
    jobs: int
    timeout_s: float
    resume: bool
    mount: str | None
    audit_file: str | None
    quiet: bool
    # None: --no-sandbox (unsealed); a policy: every agent but sgfs's reference agents runs in a sandbox.
    sandbox: SandboxPolicy | None = field(default_factory=SandboxPolicy)
    # A universe key FILE (--key): questions and the private mount are the keyed universe's. With --mount, the
    # user's mount must have been started with the same key. Only its fingerprint is recorded.
    key_file: str | None = None
    repeats: int = 1  # --repeats K: each (question, variant) is asked K times
    counterfactual: bool = False  # --counterfactual: questions and the private mount are the counterfactual world's
    mess: int = 0  # --mess LEVEL: questions and the private mount are of that messiness level
    # --ambiguous: the conditions each twin pair runs in (qa.clarify.CONDITIONS); None: a run without them.
    conditions: tuple[str, ...] | None = None


MAX_REPEATS = 100


def check_repeats(repeats: int) -> None:
    """``--repeats K`` must be 1..100."""
    if not 1 <= repeats <= MAX_REPEATS:
        raise SgfsError(f"invalid --repeats {repeats}: expected an integer from 1 to {MAX_REPEATS}")


def run_items(items: list[PlannedItem], repeats: int) -> list[RunItem]:
    """The units of a run: every item ``repeats`` times, repeat by repeat (an interrupted run keeps whole
    repeats first)."""
    return [RunItem(item.asked, repeat, item.condition) for repeat in range(1, repeats + 1) for item in items]


def load_items(config: EvalConfig) -> tuple[list[PlannedItem], str]:
    """The items of this run (its shard) and the digest of every item of the whole run, before sharding."""
    source = QuestionSource(config.questions_file, config.seeds or [], config.per_type, config.unanswerable)
    key, world = load_key(config.key_file), World(counterfactual=config.counterfactual, mess=config.mess)

    def load(on_repository: Callable[[], None] | None) -> list[PlannedItem]:
        if config.conditions is not None:
            return load_twin_items(source, config.variant, config.conditions, on_repository, key=key, world=world)
        return [PlannedItem(item) for item in load_questions(source, config.variant, on_repository, key, world)]

    if config.questions_file is not None:
        items = load(None)
    else:
        with _progress(config.quiet or not sys.stderr.isatty()) as progress:
            task = progress.add_task("generating questions", total=len(source.seeds), accuracy="")
            items = load(lambda: progress.advance(task))
    run_digest = digest(items)
    items = select_shard(items, config.shard)
    if not items:
        raise SgfsError("no questions in this shard")
    return items, run_digest


def describe(config: EvalConfig, items: list[PlannedItem], run_digest: str) -> RunDescription:
    try:
        sgfs_version = version("sgfs")
    except PackageNotFoundError:
        sgfs_version = "unknown"
    source: dict[str, Json]
    if config.questions_file:
        source = {"questions_file": config.questions_file}
    else:
        source = {"seeds": config.seeds_text, "per_type": config.per_type, "unanswerable": config.unanswerable}
    return RunDescription(
        sgfs_version=sgfs_version,
        agent=config.agent,
        questions_digest=digest(items),
        run_digest=run_digest,
        questions=len(items),
        source=source,
        variant=config.variant,
        shard=None if config.shard is None else f"{config.shard[0]}/{config.shard[1]}",
        timeout_s=config.timeout_s,
        jobs=config.jobs,
        mount="private" if config.mount is None else "user",
        sandbox=None if config.sandbox is None else config.sandbox.describe(),
        key_fingerprint=key_fingerprint(config.key_file),
        repeats=config.repeats,
        question_format=QUESTION_FORMAT,
        counterfactual=config.counterfactual,
        mess=config.mess,
        conditions=None if config.conditions is None else list(config.conditions),
    )


def prepare_directory(
    config: EvalConfig, items: list[PlannedItem], run_digest: str
) -> tuple[RunDescription, list[ResultRecord]]:
    """run.json for this run and the records already there (with --resume); refuses a foreign DIR."""
    meta = describe(config, items, run_digest)
    out = config.out
    if out.exists() and not out.is_dir():
        raise SgfsError(f"--out {out} is not a directory")
    existing = read_run(out) if out.is_dir() else None
    has_results = (out / RESULTS).exists()
    if existing is None and has_results:
        raise SgfsError(f"{out} holds results but no {RUN}: not a directory written by sgfs eval")
    started = has_results and (out / RESULTS).stat().st_size > 0
    if existing is not None and started and not config.resume:
        raise SgfsError(f"{out} already holds a run: add --resume to finish it, or choose another --out")
    if existing is not None and (started or config.resume):
        theirs = question_format(existing)
        if theirs != QUESTION_FORMAT:
            raise SgfsError(
                f"cannot resume {out}: it was made with question format {theirs}, this sgfs asks format "
                f"{QUESTION_FORMAT} (runs of different question formats are never mixed)"
            )
        if generator_version(existing) != meta.generator_version:
            raise SgfsError(
                f"cannot resume {out}: it was made with generator version {generator_version(existing)}, this sgfs "
                f"generates version {meta.generator_version}"
            )
        if (existing.get("counterfactual") is True) != meta.counterfactual:
            raise SgfsError(f"cannot resume {out}: it was made in another world (--counterfactual differs)")
        if mess_level(existing) != meta.mess:
            theirs_mess = mess_level(existing)
            raise SgfsError(f"cannot resume {out}: it was made with --mess {theirs_mess}, not --mess {meta.mess}")
        if existing.get("conditions") != meta.conditions:
            theirs_conditions = existing.get("conditions")
            made = (
                f"with --ambiguous --conditions {','.join(map(str, theirs_conditions))}"
                if isinstance(theirs_conditions, list)
                else "without --ambiguous"
            )
            raise SgfsError(f"cannot resume {out}: it was made {made}")
        if existing.get("questions_digest") != meta.questions_digest:
            raise SgfsError(f"cannot resume {out}: it was made with other questions (digest differs)")
        if existing.get("key_fingerprint") != meta.key_fingerprint:
            raise SgfsError(f"cannot resume {out}: it was made with another universe key (fingerprints differ)")
        if existing.get("agent") != config.agent:
            raise SgfsError(f"cannot resume {out}: it was made with another agent ({existing.get('agent')!r})")
        if existing.get("repeats", 1) != config.repeats:
            raise SgfsError(f"cannot resume {out}: it was made with --repeats {existing.get('repeats', 1)}")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SgfsError(f"cannot create {out}: {exc.strerror or exc}") from None
    done = read_results(out / RESULTS, repair=True) if existing is not None else []
    write_json(out / RUN, meta.to_json())
    return meta, done


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    def handler(signum: int, frame: FrameType | None) -> None:
        raise Interrupted("terminated")

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _progress(quiet: bool) -> Progress:
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[accuracy]}"),
        TimeRemainingColumn(),
    )
    return Progress(*columns, disable=quiet, transient=True, console=Console(stderr=True))


def run_eval(config: EvalConfig) -> tuple[RunSummary, list[ResultRecord]]:
    """Run what is missing, write results, summary and run.json; the summary and every record, in item order."""
    check_repeats(config.repeats)
    check_agent(config.agent)
    if config.sandbox is not None:
        check_sandbox()  # one line saying why, exit 2, before anything is written
    asked, run_digest = load_items(config)
    meta, done = prepare_directory(config, asked, run_digest)
    items = run_items(asked, config.repeats)
    wanted = {item.unit for item in items}
    records = [r for r in done if r.unit in wanted]
    finished = {r.unit for r in records}
    todo = [item for item in items if item.unit not in finished]

    if todo:
        seeds = sorted({item.asked.seed for item in asked})
        with contextlib.ExitStack() as stack:
            stack.enter_context(sigterm_as_interrupt())
            mount: RunMount
            if config.mount is None:
                mount = stack.enter_context(
                    private_mount(
                        seeds,
                        None if config.key_file is None else os.path.abspath(config.key_file),
                        counterfactual=config.counterfactual,
                        mess=config.mess,
                    )
                )
            else:
                mount = user_mount(config.mount, config.audit_file)
                if mount.audit_file is None:
                    click.echo(
                        "sgfs: warning: --mount without --audit: evidence fields are null (mount with "
                        "`sgfs mount --audit FILE` and pass the same --audit FILE to record them)",
                        err=True,
                    )
            reader = AuditReader(mount.audit_file) if mount.audit_file else None
            workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="sgfs-eval-work-")))
            # Relative paths in the command are the caller's: the agent itself runs in the repository.
            command = resolve_relative(config.agent, os.getcwd())
            runner = Runner(RunSettings(command, mount.path, config.timeout_s, workdir, reader, _sealed(config, mount)))
            writer = ResultsWriter(config.out / RESULTS)
            stack.callback(writer.close)
            progress = stack.enter_context(_progress(config.quiet or not sys.stderr.isatty()))
            correct = sum(bool(r.correct) for r in records)
            task = progress.add_task(
                "questions", total=len(items), completed=len(records), accuracy=_accuracy(correct, len(records))
            )

            def on_record(record: ResultRecord) -> None:
                nonlocal correct
                writer.write(record)
                records.append(record)
                correct += bool(record.correct)
                progress.update(task, advance=1, accuracy=_accuracy(correct, len(records)))

            try:
                runner.run(todo, config.jobs, on_record)
            except (KeyboardInterrupt, Interrupted):
                runner.kill_all()
                raise SgfsError(
                    f"interrupted: {len(records)} of {len(items)} questions recorded in {config.out / RESULTS} "
                    "(finish with --resume)",
                    exit_code=130,
                ) from None

    order = {item.unit: index for index, item in enumerate(items)}
    records.sort(key=lambda r: order[r.unit])
    summary = replace(summarize_records(records, config.repeats), questions_digest=meta.questions_digest)
    write_json(config.out / SUMMARY, summary.to_json())
    return summary, records


def key_fingerprint(key_file: str | None) -> str | None:
    """The fingerprint run.json records for ``--key FILE`` (None without a key); never the key."""
    key = load_key(key_file, warn=False)
    return None if key is None else key.fingerprint


def _sealed(config: EvalConfig, mount: RunMount) -> SandboxPolicy | None:
    """The run's sandbox policy with what no agent may see: the run directory, the questions, the audit log,
    and the key, even through a directory the user binds. (Other questions' scratch directories are never bound.)"""
    if config.sandbox is None:
        return None
    secret = hidden_paths(config.out, config.questions_file, mount.audit_file, config.key_file)
    return replace(config.sandbox, hidden=(*config.sandbox.hidden, *secret))


def _accuracy(correct: int, total: int) -> str:
    return f"accuracy {100 * correct / total:.1f}%" if total else "accuracy -"
