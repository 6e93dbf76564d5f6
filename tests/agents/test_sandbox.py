"""The agents' sandbox (sgfs/agents/sandbox.py): options, what a sandbox shows and hides, attribution."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

import sgfs
from sgfs.agents.sandbox import Bind, Layout, SandboxPolicy, check_sandbox, command_paths, installation_paths, start
from sgfs.errors import SgfsError


def run_in(layout: Layout, script: str) -> subprocess.CompletedProcess[bytes]:
    with open(os.devnull, "rb") as devnull:
        sandbox = start(layout, ["/bin/sh", "-c", script], env=os.environ, stdin=devnull,
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
        try:
            out, err = sandbox.process.communicate(timeout=60)
        finally:
            sandbox.close()
    return subprocess.CompletedProcess(script, sandbox.process.returncode, out, err)


def test_bind_parsing(tmp_path: Path) -> None:
    assert Bind.parse(str(tmp_path)) == Bind(str(tmp_path), str(tmp_path), False)
    assert Bind.parse(f"{tmp_path}:/opt/x", writable=True) == Bind(str(tmp_path), "/opt/x", True)
    for bad in ("", f"{tmp_path}:", "/no/such/path", f"{tmp_path}:/", f"{tmp_path}:/proc/x", f"{tmp_path}:/dev"):
        with pytest.raises(SgfsError):
            Bind.parse(bad)


def test_command_paths_binds_named_programs_only(tmp_path: Path) -> None:
    program = tmp_path / "agent.sh"
    program.write_text("#!/bin/sh\n")
    words = [str(program), "--flag", "X=/usr/bin/env", f"CONFIG={tmp_path}", "/no/such", "relative/path"]
    assert command_paths(words) == (str(program), str(tmp_path))  # /usr is a system path, bound anyway


def test_the_installation_is_hidden_and_found() -> None:
    package = str(Path(sgfs.__file__).resolve().parent)
    assert package in installation_paths()


def test_hidden_paths_are_covered_even_nested_inside_a_bound_directory(tmp_path: Path) -> None:
    """A hidden directory, a hidden file inside it and a hidden file elsewhere in a bound directory: none is
    readable, the rest of the bound directory is, and nested covers do not break the start."""
    check_sandbox()
    shared = tmp_path / "shared"
    (shared / "secret").mkdir(parents=True)
    (shared / "secret" / "answers.jsonl").write_text("the answers\n")
    (shared / "key").write_text("0" * 64 + "\n")
    (shared / "data.txt").write_text("visible\n")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    hidden = (str(shared / "secret"), str(shared / "secret" / "answers.jsonl"), str(shared / "key"))
    policy = SandboxPolicy(binds=(Bind(str(shared), str(shared)),), hidden=hidden)
    layout = Layout(policy, workdir=str(scratch), scratch=str(scratch), home=str(scratch))
    result = run_in(
        layout,
        f"cat {shared}/data.txt; ls -A {shared}/secret; cat {shared}/secret/answers.jsonl {shared}/key; "
        f"echo x > {shared}/data.txt && echo WROTE; echo done",
    )
    out = result.stdout.decode()
    assert out.splitlines()[0] == "visible" and out.splitlines()[-1] == "done"
    assert "the answers" not in out and "0" * 64 not in out and "WROTE" not in out
    assert (shared / "data.txt").read_text() == "visible\n"


def test_writable_binds_and_scratch(tmp_path: Path) -> None:
    check_sandbox()
    cache, scratch = tmp_path / "cache", tmp_path / "scratch"
    cache.mkdir()
    scratch.mkdir()
    layout = Layout(SandboxPolicy(binds=(Bind(str(cache), "/opt/cache", True),)), str(scratch), str(scratch))
    result = run_in(layout, 'echo kept > /opt/cache/f && echo scratch > "$TMPDIR/g" && echo tmp > /tmp/h && id -u')
    assert result.returncode == 0, result.stderr
    assert (cache / "f").read_text() == "kept\n" and (scratch / "g").read_text() == "scratch\n"
    assert not Path("/tmp/h").exists() or Path("/tmp/h").read_text() != "tmp\n"  # the sandbox's /tmp is its own


def test_each_sandbox_has_its_own_pid_namespace_held_until_closed(tmp_path: Path) -> None:
    check_sandbox()
    layout = Layout(SandboxPolicy(), str(tmp_path), str(tmp_path), home=str(tmp_path))
    with open(os.devnull, "rb") as devnull:
        first = start(layout, ["/bin/true"], env=os.environ, stdin=devnull, stdout=None, stderr=None)
        first.process.wait(timeout=60)
        second = start(layout, ["/bin/true"], env=os.environ, stdin=devnull, stdout=None, stderr=None)
        second.process.wait(timeout=60)
    try:
        # the first namespace is gone (its processes exited) but held open: its number cannot be reused
        assert first.namespace != second.namespace
        assert first.namespace != os.stat("/proc/self/ns/pid").st_ino
    finally:
        first.close()
        second.close()
