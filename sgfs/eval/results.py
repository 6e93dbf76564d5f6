"""The files of a run directory (docs/eval.md): ``results.jsonl`` (one :class:`~qa.result_record.ResultRecord`
per line), ``run.json`` and ``summary.json``, and the one loader of the report and the gate."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TextIO

from generators.spec import GENERATOR_VERSION
from qa.model import QUESTION_FORMAT, Json
from qa.records import QuestionsError
from qa.result_record import ResultRecord, ResultRecordError
from sgfs.errors import SgfsError
from sgfs.eval.questions import parse_shard, shard_of

RESULTS = "results.jsonl"
SUMMARY = "summary.json"
RUN = "run.json"
# Inspect AI writes .eval logs by default and .json ones on request.
INSPECT_LOG_SUFFIXES = (".eval", ".json")


def write_error(path: Path | str, exc: OSError) -> SgfsError:
    """The one-line error for an output that cannot be written (read-only directory, full disk...)."""
    return SgfsError(f"cannot write {path}: {exc.strerror or exc}", exit_code=1)


class ResultsWriter:
    """Appends records to DIR/results.jsonl, each flushed and fsynced: a kill loses only questions in flight."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self._handle: TextIO = open(path, "a", encoding="utf-8")  # noqa: SIM115 (closed by close())
        except OSError as exc:
            raise write_error(path, exc) from None

    def write(self, record: ResultRecord) -> None:
        try:
            self._handle.write(json.dumps(record.to_json(), ensure_ascii=False) + "\n")
            self._handle.flush()
            os.fsync(self._handle.fileno())
        except OSError as exc:
            raise write_error(self.path, exc) from None

    def close(self) -> None:
        try:
            self._handle.close()
        except OSError as exc:  # what a full disk left unwritten
            raise write_error(self.path, exc) from None


def read_json_lines(path: Path, repair: bool = False) -> list[dict[str, Json]]:
    """The JSON objects of a results file. A last line cut short by a kill is dropped (and, with ``repair``,
    cut off the file so appending continues cleanly); any other line that is not an object with an ``id`` is
    an SgfsError."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise SgfsError(f"cannot read {path}: {exc.strerror or exc}") from None
    # Records are written whole, newline last: an unterminated last line is what a kill mid-write leaves.
    good_end = data.rfind(b"\n") + 1
    objects: list[dict[str, Json]] = []
    for number, line in enumerate(data[:good_end].split(b"\n")[:-1], 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            obj = None
        if not isinstance(obj, dict) or "id" not in obj:
            raise SgfsError(f"{path}:{number}: not a result record")
        objects.append(obj)
    if repair and good_end < len(data):
        with open(path, "r+b") as handle:
            handle.truncate(good_end)
    return objects


def read_results(path: Path, repair: bool = False) -> list[ResultRecord]:
    """The records of a results file (see ``read_json_lines``)."""
    try:
        return [ResultRecord.from_json(obj) for obj in read_json_lines(path, repair)]
    except ResultRecordError as exc:
        raise SgfsError(f"{path}: {exc}") from None


def read_run(directory: Path) -> dict[str, Json] | None:
    """DIR/run.json as written (by this or an earlier version), or None when there is none."""
    path = directory / RUN
    try:
        meta = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise SgfsError(f"cannot read {path}: {exc}") from None
    if not isinstance(meta, dict):
        raise SgfsError(f"{path} is not a run description")
    return meta


def write_json(path: Path, value: Mapping[str, Any]) -> None:
    """Writes ``value`` as indented JSON, through a temporary file renamed into place."""
    temporary = path.with_name(f".{path.name}.tmp")
    try:
        temporary.write_text(json.dumps(value, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        os.replace(temporary, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise write_error(path, exc) from None


@dataclass(frozen=True)
class RunDescription:
    """``run.json`` (docs/eval.md): what a run was made of; ``--resume`` checks the digest and the agent."""

    sgfs_version: str
    agent: str
    questions_digest: str
    run_digest: str  # every item of the whole run, before sharding: the same in each shard of one run
    questions: int
    source: dict[str, Json]  # {"questions_file"} or {"seeds", "per_type", "unanswerable"}
    variant: str
    shard: str | None
    timeout_s: float
    jobs: int
    mount: str
    sandbox: dict[str, Json] | None = None  # what agents could see beyond the default; None: --no-sandbox
    key_fingerprint: str | None = None  # the universe key's fingerprint (never the key); None: the open universe
    repeats: int = 1  # --repeats K
    question_format: int = QUESTION_FORMAT  # qa.model.QUESTION_FORMAT of the sgfs that asked the questions
    generator_version: int = GENERATOR_VERSION  # the generator that made the repositories
    counterfactual: bool = False  # --counterfactual: repositories of the counterfactual world
    mess: int = 0  # --mess LEVEL of the repositories
    conditions: list[str] | None = None  # --ambiguous: the conditions of the twin pairs; None: none

    def to_json(self) -> dict[str, Json]:
        # "conditions" only in a run with them: run.json of other runs is what it was before they existed.
        conditions: dict[str, Json] = {} if self.conditions is None else {"conditions": list(self.conditions)}
        return {
            "sgfs_version": self.sgfs_version,
            "agent": self.agent,
            "questions_digest": self.questions_digest,
            "run_digest": self.run_digest,
            "questions": self.questions,
            "source": self.source,
            "variant": self.variant,
            "shard": self.shard,
            "timeout_s": self.timeout_s,
            "jobs": self.jobs,
            "mount": self.mount,
            "sandbox": self.sandbox,
            "key_fingerprint": self.key_fingerprint,
            "repeats": self.repeats,
            "question_format": self.question_format,
            "generator_version": self.generator_version,
            "counterfactual": self.counterfactual,
            "mess": self.mess,
            **conditions,
        }


# What makes directories shards of one run (besides the split): fields of run.json that must all agree.
IDENTITY_FIELDS = (
    "agent",
    "run_digest",
    "variant",
    "key_fingerprint",
    "repeats",
    "question_format",
    "generator_version",
    "counterfactual",
    "mess",
    "conditions",
)


def question_format(meta: Mapping[str, Json] | None) -> int:
    """The question format a run.json (or an Inspect log's metadata) records; 1 for runs made before it was
    recorded (``qa.model.QUESTION_FORMAT``)."""
    value = (meta or {}).get("question_format")
    return value if isinstance(value, int) and not isinstance(value, bool) else 1


def generator_version(meta: Mapping[str, Json] | None) -> int:
    """The generator version a run.json records; 3 for runs made before it was recorded (the version then)."""
    value = (meta or {}).get("generator_version")
    return value if isinstance(value, int) and not isinstance(value, bool) else 3


def sandbox_text(meta: Mapping[str, Json] | None) -> str:
    """The sandbox policy a run.json records, in words."""
    if meta is None or "sandbox" not in meta:
        return "not recorded"
    sandbox = meta["sandbox"]
    if not isinstance(sandbox, dict):
        return "none (--no-sandbox: agents ran unsealed)"
    binds = sandbox.get("binds")
    shown = ", ".join(str(b) for b in binds) if isinstance(binds, list) and binds else "none"
    return f"sealed (extra binds: {shown}; network: {'yes' if sandbox.get('network') else 'no'})"


@dataclass(frozen=True)
class RunInfo:
    """What the report says of one run: its directory (or Inspect log), its agent and sgfs version; and what
    ``load_results`` needs to tell shards of one run from different runs."""

    dir: str
    agent: str | None
    sgfs_version: str | None
    identity: str | None = None  # equal for the shards of one run; None: a run of its own (an Inspect log...)
    shard: tuple[int, int] | None = None  # (index, count) of a shard
    key_fingerprint: str | None = None  # the universe key's (run.json); None: the open universe
    question_format: int = QUESTION_FORMAT  # run.json's; 1 when it records none
    repeats: int = 1  # --repeats K
    sandbox: str = "not recorded"  # the sandbox policy, in words (``sandbox_text``)
    generator_version: int = GENERATOR_VERSION  # run.json's; 3 when it records none
    counterfactual: bool = False  # run.json's: repositories of the counterfactual world
    mess: int = 0  # run.json's --mess level; 0 when it records none

    @classmethod
    def of(cls, directory: Path | str, meta: Mapping[str, Json] | None) -> RunInfo:
        """From a run's ``run.json`` (or what an Inspect log says of its run); None: nothing known."""
        agent = (meta or {}).get("agent")
        version = (meta or {}).get("sgfs_version")
        identity = None
        if meta is not None:
            fields: dict[str, Json] = {name: meta.get(name) for name in IDENTITY_FIELDS}
            fields["repeats"] = _repeats(meta.get("repeats"))
            fields["question_format"] = question_format(meta)
            fields["generator_version"] = generator_version(meta)
            fields["counterfactual"] = meta.get("counterfactual") is True
            fields["mess"] = mess_level(meta)
            if fields["run_digest"] is None:  # written before run_digest: what the run was asked
                fields["run_digest"] = json.dumps([meta.get("source"), meta.get("variant")], sort_keys=True)
            identity = json.dumps(fields, sort_keys=True)
        return cls(
            str(directory),
            None if agent is None else str(agent),
            str(version) if version else None,
            identity,
            _shard((meta or {}).get("shard")),
            _fingerprint((meta or {}).get("key_fingerprint")),
            question_format(meta),
            _repeats((meta or {}).get("repeats")),
            sandbox_text(meta),
            generator_version(meta),
            (meta or {}).get("counterfactual") is True,
            mess_level(meta),
        )


def mess_level(meta: Mapping[str, Json] | None) -> int:
    """The ``--mess`` level a run.json records; 0 for runs made before it was recorded."""
    value = (meta or {}).get("mess")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _repeats(value: Json) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else 1


def _fingerprint(value: Json) -> str | None:
    return value if isinstance(value, str) and value else None


def check_same_universe(first: RunInfo, other: RunInfo, what: str = "runs") -> None:
    """Refuses (one line, exit 2) to put together runs made in different universes (different keys, or a key
    and none): their questions and answers are different even where the ids agree."""
    if first.key_fingerprint != other.key_fingerprint:
        raise SgfsError(
            f"{other.dir} ({_universe(other.key_fingerprint)}) and {first.dir} ({_universe(first.key_fingerprint)}) "
            f"were made in different universes: {what} with different keys are never compared"
        )


def check_same_format(first: RunInfo, other: RunInfo, what: str = "runs") -> None:
    """Refuses (one line, exit 2) to put together runs whose questions are of different formats
    (``qa.model.QUESTION_FORMAT``): the same ids mean other questions, graded otherwise."""
    if first.question_format != other.question_format:
        raise SgfsError(
            f"{other.dir} (question format {other.question_format}) and {first.dir} (question format "
            f"{first.question_format}) have different question formats: {what} of different formats are never "
            "compared"
        )
    if first.generator_version != other.generator_version:
        raise SgfsError(
            f"{other.dir} (generator version {other.generator_version}) and {first.dir} (generator version "
            f"{first.generator_version}) were made by different generators: their repositories differ, so {what} "
            "of different generator versions are never compared"
        )
    if first.counterfactual != other.counterfactual:
        raise SgfsError(
            f"{other.dir} and {first.dir}: one was made in the counterfactual world and one was not: {what} of "
            "different worlds are never compared"
        )
    if first.mess != other.mess:
        raise SgfsError(
            f"{other.dir} (--mess {other.mess}) and {first.dir} (--mess {first.mess}) read repositories of different "
            f"messiness: {what} of different levels are never compared"
        )


def _universe(fingerprint: str | None) -> str:
    return f"key {fingerprint}" if fingerprint else "no key"


def _shard(value: Json) -> tuple[int, int] | None:
    """The shard a run.json names; None for none, or for one that is not ``I/N`` (hand-edited)."""
    if not isinstance(value, str):
        return None
    try:
        return parse_shard(value)
    except SgfsError:
        return None


def run_info(directory: Path) -> RunInfo:
    return RunInfo.of(directory, read_run(directory))


@dataclass
class LoadedRuns:
    """Records merged from one run directory, or from the shard directories of one run."""

    records: list[ResultRecord]
    runs: list[RunInfo] = field(default_factory=list)


def load_results(directories: list[str | Path]) -> LoadedRuns:
    """The one loader of the report and the gate: every record of every DIR (a run directory of ``sgfs eval``, or
    an Inspect AI log file of the ``sgfs/infinite_science`` task). Refuses (SgfsError) a record that appears twice
    and records of more than one run: several DIRs must be distinct shards of one run (same agent, questions and
    split, see ``IDENTITY_FIELDS``), each holding only records of its shard."""
    merged: dict[tuple[str, str, int, str | None], ResultRecord] = {}
    runs: list[RunInfo] = []
    for entry in directories:
        directory = Path(entry)
        if directory.is_file() and directory.suffix in INSPECT_LOG_SUFFIXES:
            records, run = _inspect_log(directory)
        else:
            if not directory.exists():
                raise SgfsError(f"{directory}: no such run directory or Inspect log")
            if not (directory / RESULTS).is_file():
                raise SgfsError(f"{directory} holds no {RESULTS} (not a run directory of sgfs eval nor an Inspect log)")
            run = run_info(directory)
            records = read_results(directory / RESULTS)
        if runs:
            _check_same_run(runs, run)
        runs.append(run)
        for record in records:
            if record.unit in merged:
                repeat = "" if record.repeat == 1 else f", repeat {record.repeat}"
                repeat += "" if record.condition is None else f", condition {record.condition}"
                raise SgfsError(
                    f"{directory}: record {record.id} ({record.variant}{repeat}) appears more than once: "
                    "a run records each question once"
                )
            # A twin pair's records are in one shard: that of the pair (the full twin's id).
            shard_key = record.pair if record.condition is not None and record.pair else record.id
            if run.shard is not None and shard_of(shard_key, run.shard[1]) != run.shard[0]:
                raise SgfsError(
                    f"{directory}: record {record.id} ({record.variant}) is not a question of shard "
                    f"{run.shard[0]}/{run.shard[1]}"
                )
            merged[record.unit] = record
    return LoadedRuns(list(merged.values()), runs)


def _check_same_run(runs: list[RunInfo], run: RunInfo) -> None:
    """Refuses ``run`` unless it is another shard of the run the shards in ``runs`` come from."""
    first = runs[0]
    check_same_universe(first, run)
    check_same_format(first, run)
    if run.identity is None or first.identity is None or run.identity != first.identity:
        raise SgfsError(
            f"{run.dir} and {first.dir} are not shards of one run (agent, questions or variant differ, or one "
            "is not a run directory of sgfs eval): report each run on its own, or one with --baseline"
        )
    if run.shard is None or first.shard is None or run.shard[1] != first.shard[1]:
        raise SgfsError(
            f"{run.dir} and {first.dir} are not shards of one split (--shard I/N with the same N): "
            "report each run on its own"
        )
    for other in runs:
        if other.shard == run.shard:
            raise SgfsError(f"{run.dir} and {other.dir} are both shard {run.shard[0]}/{run.shard[1]} of the run")


def _inspect_log(path: Path) -> tuple[list[ResultRecord], RunInfo]:
    """The records of an Inspect log, as ``results.jsonl`` would hold them, and what the report says of the run."""
    try:
        from inspect_ai.log import read_eval_log

        from sgfs.agents.inspect_task.results import records_from_log
    except ImportError:
        needs = "needs the inspect extra: pip install 'sgfs[inspect]'"
        raise SgfsError(f"reading the Inspect log {path} {needs}") from None
    try:
        log = read_eval_log(str(path))
    except Exception as exc:  # any unreadable log: Inspect raises many kinds
        raise SgfsError(f"cannot read Inspect log {path}: {' '.join(str(exc).split())[:200]}") from None
    try:
        records = records_from_log(log)
    except QuestionsError as exc:
        raise SgfsError(f"cannot read Inspect log {path}: {exc}") from None
    # A sample that errored before scoring counts as wrong, like a crashed agent.
    graded = [replace(r, correct=bool(r.correct), abstained=bool(r.abstained)) for r in records]
    metadata = getattr(log.eval, "metadata", None) or {}
    fingerprint = _fingerprint(metadata.get("key_fingerprint"))
    agent = f"inspect_ai {log.eval.task} on {log.eval.model}"
    return graded, RunInfo(
        str(path),
        agent,
        None,
        key_fingerprint=fingerprint,
        question_format=question_format(metadata),
        counterfactual=metadata.get("counterfactual") is True,
    )
