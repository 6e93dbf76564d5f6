"""``sgfs eval (SEEDS | --questions FILE) --agent CMD --out DIR``: run an agent on every question, grade, audit,
report and gate (docs/eval.md, docs/ci.md)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING

import click

from sgfs.cli.options import examples, key_option, mess_option, world_option
from sgfs.errors import SgfsError
from sgfs.store.repositories import parse_seed_list

if TYPE_CHECKING:
    from collections.abc import Sequence

    from qa.result_record import ResultRecord
    from sgfs.eval.summary import RunSummary

EVAL_HELP = f"""Run the agent CMD on every question of the repositories SEEDS (or of --questions FILE), grade
the answers like `sgfs grade`, record what each agent read, and write DIR/results.jsonl, DIR/summary.json,
DIR/run.json and DIR/report/.

With --ambiguous, each ambiguous twin runs with its full twin in the conditions full, ambig and ask; in full
and ask the agent may ask one clarifying question by running "$SGFS_ASK" "question".

CMD is a shell command run once per question in the repository's directory on the mount, the prompt on stdin;
{{prompt_file}}, {{repo}}, {{question_id}} and {{answer_file}} in it are replaced (shell-quoted), and relative
paths in it (./my-agent, scripts/agent.py) are those of your directory. Each agent runs in a sandbox
(bubblewrap): it sees the system, the Python environment without sgfs, its repository read-only and a scratch
directory; never the questions, DIR, the audit log or the key, and no network unless --sandbox-net. sgfs's own
reference agents (`sgfs agent oracle|literal|random|abstain`) run outside it. Protocol: docs/eval.md. Exit codes:
0 done, 1 the gate failed, no agent finished (all crashed or timed out) or an output could not be written,
2 bad input.

{
    examples(
        "sgfs eval 1-5 --agent 'sgfs agent oracle' --out runs/oracle",
        "sgfs qa 1-20 --out q.jsonl && sgfs eval --questions q.jsonl --agent ./agent.sh --out runs/a -j 4",
        "sgfs eval 1-20 --agent ./agent.sh --out runs/b --baseline runs/a --max-drop 0.05 --junit junit.xml",
        "sgfs eval 1-5 --ambiguous --agent 'sgfs agent literal' --out runs/literal",
    )
}
"""


@click.command("eval", help=EVAL_HELP, context_settings={"ignore_unknown_options": True})
@click.argument("seeds", required=False)
@click.option("--questions", "questions_file", metavar="FILE", help="Questions written by `sgfs qa` (JSONL).")
@click.option("--agent", required=True, metavar="CMD", help="The agent command (see above).")
@click.option("--out", "out", required=True, metavar="DIR", help="Run directory.")
@click.option("--mount", "mount", metavar="MNT", help="Use this running sgfs mount instead of a private one.")
@click.option("--audit", "audit_file", metavar="FILE", help="With --mount: the file given to `sgfs mount --audit`.")
@click.option("-j", "--jobs", type=click.IntRange(1, 256), default=1, show_default=True, help="Agents at once.")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=0, min_open=True), default=600, show_default=True,
              help="Seconds per question; the agent's process group is killed after it.")  # fmt: skip
@click.option("--resume", is_flag=True, help="Finish the run in DIR: run only the questions not yet recorded.")
@click.option("--shard", metavar="I/N", help="Run only shard I of N (a deterministic split by question id).")
@click.option("--per-type", type=click.IntRange(0, 1000), default=5, show_default=True, help="As in `sgfs qa`.")
@click.option("--unanswerable", type=click.FloatRange(0, 1), default=0.28, show_default=True, help="As in `sgfs qa`.")
@click.option("--repeats", type=int, default=1, show_default=True, metavar="K",
              help="Ask each question (and variant) K times (1..100): pass@k and run-to-run spread.")  # fmt: skip
@click.option("--variant", type=click.Choice(["template", "paraphrase_1", "paraphrase_2", "paraphrase_3", "all"]),
              default="template", show_default=True, help="Which wording of each question to ask.")  # fmt: skip
@click.option(
    "--ambiguous",
    is_flag=True,
    help="Run the ambiguous twins and their full twins in the conditions of --conditions (docs/eval.md, "
    '"Ambiguity and clarification"); questions from SEEDS are made with twins, a FILE must hold them.',
)
@click.option(
    "--conditions",
    metavar="LIST",
    help="With --ambiguous: which of full (the full twin, $SGFS_ASK offered), ambig (the twin, no channel) and ask "
    "(the twin, $SGFS_ASK offered) to run, comma-separated [default: full,ambig,ask].",
)
@click.option("--min-accuracy", type=click.FloatRange(0, 1), help="Gate: exit 1 below this accuracy.")
@click.option("--baseline", metavar="DIR", help="Gate and report against this earlier run.")
@click.option("--max-drop", type=click.FloatRange(0, 1), help="Gate: exit 1 when accuracy drops more than this.")
@click.option("--junit", "junit_file", metavar="FILE", help="Write JUnit XML, one test case per question.")
@click.option("--no-report", is_flag=True, help="Skip DIR/report/ (report.md, report.html and plots).")
@click.option(
    "--sandbox-bind",
    "sandbox_binds",
    multiple=True,
    metavar="SRC[:DST]",
    help="Also show SRC (read-only) to the agent, at DST (default SRC): an agent CLI, its config.",
)
@click.option(
    "--sandbox-bind-rw",
    "sandbox_binds_rw",
    multiple=True,
    metavar="SRC[:DST]",
    help="As --sandbox-bind, writable (a cache the agent keeps).",
)
@click.option("--sandbox-net", is_flag=True, help="Share the host's network with the agent (for a model API).")
@click.option(
    "--no-sandbox", is_flag=True, help="Run agents unsealed, as you: they can read the answers (see docs/eval.md)."
)
@world_option
@mess_option
@functools.partial(
    key_option,
    help="Universe key (`sgfs key new`): questions and the private mount are the keyed universe's; with --mount, "
    "mount with the same --key. Agents never see it; run.json records its fingerprint.",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def eval_command(
    seeds: str | None,
    questions_file: str | None,
    agent: str,
    out: str,
    mount: str | None,
    audit_file: str | None,
    jobs: int,
    timeout_s: float,
    resume: bool,
    shard: str | None,
    per_type: int,
    unanswerable: float,
    repeats: int,
    variant: str,
    ambiguous: bool,
    conditions: str | None,
    min_accuracy: float | None,
    baseline: str | None,
    max_drop: float | None,
    junit_file: str | None,
    no_report: bool,
    sandbox_binds: tuple[str, ...],
    sandbox_binds_rw: tuple[str, ...],
    sandbox_net: bool,
    no_sandbox: bool,
    key_file: str | None,
    counterfactual: bool,
    mess: int,
    quiet: bool,
) -> None:
    from sgfs.agents.sandbox import Bind, SandboxPolicy
    from sgfs.eval.finish import Baseline, finish
    from sgfs.eval.gate import Gate
    from sgfs.eval.harness import EvalConfig, check_repeats, key_fingerprint, run_eval
    from sgfs.eval.questions import parse_conditions, parse_shard
    from sgfs.eval.results import SUMMARY, RunInfo, run_info

    if (seeds is None) == (questions_file is None):
        raise SgfsError("give either SEEDS or --questions FILE (exactly one)")
    check_repeats(repeats)
    if conditions is not None and not ambiguous:
        raise SgfsError("--conditions goes with --ambiguous")
    chosen = parse_conditions(conditions) if ambiguous else None
    if audit_file is not None and mount is None:
        raise SgfsError("--audit goes with --mount (a private mount is always audited)")
    if max_drop is not None and baseline is None:
        raise SgfsError("--max-drop needs --baseline DIR")
    if no_sandbox and (sandbox_binds or sandbox_binds_rw or sandbox_net):
        raise SgfsError("--sandbox-bind, --sandbox-bind-rw and --sandbox-net go with the sandbox, not --no-sandbox")
    binds = [Bind.parse(text) for text in sandbox_binds] + [Bind.parse(text, True) for text in sandbox_binds_rw]
    sandbox = None if no_sandbox else SandboxPolicy(tuple(binds), network=sandbox_net)
    base = Baseline.load(baseline)
    config = EvalConfig(
        agent=agent,
        out=Path(out),
        seeds=parse_seed_list(seeds) if seeds is not None else None,
        seeds_text=seeds,
        questions_file=questions_file,
        per_type=per_type,
        unanswerable=unanswerable,
        variant=variant,
        shard=parse_shard(shard),
        jobs=jobs,
        timeout_s=timeout_s,
        resume=resume,
        mount=mount,
        audit_file=audit_file,
        quiet=quiet,
        sandbox=sandbox,
        key_file=key_file,
        counterfactual=counterfactual,
        mess=mess,
        repeats=repeats,
        conditions=chosen,
    )
    fingerprint = key_fingerprint(key_file)  # a bad key file is refused before anything else is done
    if base is not None:  # before any agent runs: a baseline from another universe is no baseline
        base.check_universe([RunInfo(str(config.out), agent, None, key_fingerprint=fingerprint)])
    summary, records = run_eval(config)
    click.echo(_one_line(summary, config.out), err=True)
    report_dir = None if no_report else config.out / "report"
    failed = _all_failed(records)
    gate = Gate() if failed else Gate(min_accuracy, max_drop)
    finish(records, summary, [run_info(config.out)], base, gate, junit_file, report_dir, config.out / SUMMARY)
    if failed:
        raise SgfsError(failed, exit_code=1)


def _all_failed(records: Sequence[ResultRecord]) -> str | None:
    """The one line for a run in which no agent finished (every item a crash or a timeout), else None: such a
    run measures the agent command, not the agent, and must not pass silently."""
    failures = {name: sum(r.status == name for r in records) for name in ("crash", "timeout")}
    if not records or sum(failures.values()) < len(records):
        return None
    counts = ", ".join(f"{count} {name}" for name, count in failures.items() if count)
    return f"no agent finished: {counts} of {len(records)} items (see stderr_tail in results.jsonl)"


def _one_line(summary: RunSummary, out: Path) -> str:
    accuracy = summary.accuracy
    recall = summary.evidence_recall_mean
    shown = "-" if accuracy is None else f"{accuracy:.3f}"
    interval = summary.accuracy_interval
    if interval.get("low") is not None:
        shown += f" (95 % {interval['low']:.3f}-{interval['high']:.3f})"
    split = summary.grading["by_answerable"]
    shown += f", answerable {_share(split['answerable']['accuracy'])}, unanswerable "
    shown += _share(split["unanswerable"]["accuracy"])
    floors = ", ".join(f"{name} {_share(floor.get('accuracy'))}" for name, floor in summary.floors.items())
    extra = f"; floors: {floors}" if floors else ""
    if summary.repeats > 1:
        extra += (
            f"; {summary.repeats} repeats, pass@{summary.repeats} {_share(summary.pass_at_k.get(str(summary.repeats)))}"
        )
    extra += "" if recall is None else f", evidence recall {recall:.3f}"
    if summary.ambiguity:
        by = summary.ambiguity["by_condition"]
        rates = summary.ambiguity["ask_rate"]
        accuracies = ", ".join(f"{name} {_share(entry['accuracy'])}" for name, entry in by.items())
        extra += (
            f"; conditions: {accuracies}; ask rate full {_share(rates['full'])}, ask {_share(rates['ask'])}; "
            f"wrong target ambig {_share(summary.ambiguity['wrong_target_rate']['ambig'])}"
        )
    return f"graded {summary.n} answers: accuracy {shown}{extra}; results in {out}"


def _share(value: object) -> str:
    return f"{value:.3f}" if isinstance(value, float | int) else "-"
