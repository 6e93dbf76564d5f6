"""Red team for the sealed Python tool (issue 22): each attack below must fail, with real bubblewrap (no skip:
CI installs it; without it these tests fail)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

import sgfs
from sgfs.agents.limits import GroupLimits, create_group
from sgfs.agents.pytool import PythonLimits, Workspaces, run_python, run_python_async, run_shell
from sgfs.agents.sandbox import check_sandbox

SEED = 34
FAST = PythonLimits(timeout_s=20)


@pytest.fixture(scope="module")
def workspace() -> Iterator[Path]:
    check_sandbox()  # raises (fails the tests) where bubblewrap is missing
    spaces = Workspaces()
    try:
        yield spaces.path(SEED)
    finally:
        spaces.close()


def _processes_with(marker: str) -> list[int]:
    """Host processes whose command line holds ``marker`` (zombies have none)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _marker() -> str:
    return f"sgfs-redteam-{uuid.uuid4().hex}"


def test_sealed_status(workspace: Path) -> None:
    result = run_python("print('ok')", workspace, FAST)
    assert result.output == "ok\n" and result.sealed
    assert result.network_isolated and result.read_only == "mounts" and result.capabilities_dropped
    assert result.process_limits.startswith("cgroup v"), result.process_limits


@pytest.mark.parametrize("module", ["sgfs", "qa", "generators", "sgfs.qa"])
def test_the_truth_cannot_be_imported(workspace: Path, module: str) -> None:
    result = run_python(f"import {module}\nprint('imported')", workspace, FAST)
    assert "imported" not in result.output and "ModuleNotFoundError" in result.output, result.output


def test_sgfs_cannot_run(workspace: Path) -> None:
    code = textwrap.dedent("""
        import subprocess, sys
        for argv in (['sgfs', 'qa', '7501'], [sys.executable, '-m', 'sgfs', 'qa', '7501']):
            try:
                done = subprocess.run(argv, capture_output=True, text=True, timeout=10)
                print(argv[-3], 'exit', done.returncode, done.stdout[:200])
            except OSError as exc:
                print(argv[-3], 'refused', type(exc).__name__)
    """)
    result = run_python(code, workspace, FAST)
    lines = result.output.splitlines()
    assert len(lines) == 2, result.output
    assert lines[0].startswith("sgfs refused") or " exit 0" not in lines[0], result.output
    assert " exit 0" not in lines[1], result.output
    assert run_shell("sgfs qa 7501", workspace, FAST).exit_code != 0


def test_the_source_tree_is_hidden(workspace: Path) -> None:
    checkout = Path(sgfs.__file__).resolve().parents[1]
    assert (checkout / "generators").is_dir()  # the test process sees it
    code = textwrap.dedent(f"""
        import os
        for path in ({str(checkout / "pyproject.toml")!r}, {str(checkout / "generators")!r}):
            try:
                print(path, 'found', os.listdir(path) if os.path.isdir(path) else open(path).read(20))
            except OSError as exc:
                print(path, 'refused', exc.errno)
    """)
    result = run_python(code, workspace, FAST)
    assert "found" not in result.output and result.output.count("refused") == 2, result.output


def test_host_unix_sockets_are_unreachable(workspace: Path, tmp_path: Path) -> None:
    path = str(tmp_path / "host.sock")
    abstract = f"\0sgfs-redteam-{uuid.uuid4().hex}"
    with socket.socket(socket.AF_UNIX) as named, socket.socket(socket.AF_UNIX) as hidden:
        named.bind(path)
        named.listen(1)
        hidden.bind(abstract)
        hidden.listen(1)
        code = textwrap.dedent(f"""
            import socket
            for address in ({path!r}, {abstract!r}):
                try:
                    socket.socket(socket.AF_UNIX).connect(address)
                    print('connected')
                except OSError as exc:
                    print('refused', exc.errno)
        """)
        result = run_python(code, workspace, FAST)
        assert "connected" not in result.output and result.output.count("refused") == 2, result.output
        control = run_python(code, workspace, PythonLimits(timeout_s=20, isolate=False))
        assert control.output.count("connected") == 2, control.output  # the same code reaches them unsealed


def test_host_block_devices_are_absent(workspace: Path) -> None:
    blocks = sorted(os.listdir("/sys/block")) if os.path.isdir("/sys/block") else []
    device = next((f"/dev/{b}" for b in blocks if os.path.exists(f"/dev/{b}")), "/dev/sda")
    code = textwrap.dedent(f"""
        import os
        for path in ({device!r}, '/dev/mem', '/dev/kmsg', '/sys/block'):
            try:
                fd = os.open(path, os.O_RDONLY)
                print(path, 'opened')
            except OSError as exc:
                print(path, 'refused', exc.errno)
        print(sorted(os.listdir('/dev')))
    """)
    result = run_python(code, workspace, FAST)
    assert "opened" not in result.output and result.output.count("refused") == 4, result.output


def test_host_processes_cannot_be_signalled(workspace: Path) -> None:
    with subprocess.Popen(["sleep", "60"]) as victim:
        try:
            code = textwrap.dedent(f"""
                import os
                for pid in ({os.getpid()}, {victim.pid}, 1):
                    try:
                        os.kill(pid, 9)
                        print(pid, 'signalled')
                    except OSError as exc:
                        print(pid, 'refused', exc.errno)
            """)
            result = run_python(code, workspace, FAST)
            assert victim.poll() is None  # it survives
            assert f"{victim.pid} signalled" not in result.output and f"{os.getpid()} signalled" not in result.output
        finally:
            victim.kill()


def test_a_fork_bomb_is_stopped_by_the_process_limit(workspace: Path) -> None:
    marker = _marker()
    counted = textwrap.dedent(f"""
        import os, time
        started = 0
        for _ in range(1000):
            try:
                pid = os.fork()
            except OSError:
                break
            if pid == 0:
                time.sleep(120)
                os._exit(0)
            started += 1
        print('started', started, {marker!r})
    """)
    begin = time.monotonic()
    result = run_python(counted, workspace, PythonLimits(timeout_s=30, processes=32))
    assert result.exit_code == 0, result.output
    assert 0 < int(result.output.split()[1]) < 32 and time.monotonic() - begin < 20
    assert any(note.startswith("process limit") for note in result.notes), result.notes
    bomb = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    result = run_python(bomb + f"# {marker}", workspace, PythonLimits(timeout_s=3, processes=32))
    assert result.timed_out and time.monotonic() - begin < 40
    assert not _processes_with(marker)


def test_memory_is_limited_in_total(workspace: Path) -> None:
    code = textwrap.dedent("""
        import os, time
        children = []
        for _ in range(4):
            pid = os.fork()
            if pid == 0:
                block = bytearray(b'x') * (100 * 2**20)  # written: charged to the group
                time.sleep(5)
                os._exit(0)
            children.append(pid)
        survived = sum(os.waitpid(pid, 0)[1] == 0 for pid in children)
        print('survived', survived)
    """)
    small = run_python(code, workspace, PythonLimits(timeout_s=30, memory_mb=256))
    assert small.output.startswith("survived") and int(small.output.split()[1]) < 4, small.output
    assert any(note.startswith("memory limit") for note in small.notes), small.notes
    large = run_python(code, workspace, PythonLimits(timeout_s=30, memory_mb=1024))
    assert large.output.strip() == "survived 4", large.output  # each child alone is within the limit


@pytest.mark.parametrize("timeout", [False, True])
def test_detached_children_are_gone_after_the_call(workspace: Path, timeout: bool) -> None:
    marker = _marker()
    code = textwrap.dedent(f"""
        import subprocess, time
        subprocess.Popen(['setsid', 'sh', '-c', 'sleep 300', {marker!r}], start_new_session=True)
        subprocess.Popen(['sh', '-c', 'sleep 300 & sleep 300', {marker!r}])
        time.sleep(0.5)
        print('detached', flush=True)
    """) + ("time.sleep(300)\n" if timeout else "")
    result = run_python(code, workspace, PythonLimits(timeout_s=3 if timeout else 20))
    assert "detached" in result.output and result.timed_out == timeout
    assert not _processes_with(marker)


def test_a_cancelled_call_kills_its_processes(workspace: Path) -> None:
    marker = _marker()
    code = f"import subprocess, time\nsubprocess.Popen(['sh', '-c', 'sleep 300', {marker!r}])\ntime.sleep(300)"

    async def cancelled() -> None:
        with anyio.move_on_after(2):
            await run_python_async(code, workspace, PythonLimits(timeout_s=60))
        assert not _processes_with(marker)  # gone before the cancellation went on

    begin = time.monotonic()
    anyio.run(cancelled)
    assert time.monotonic() - begin < 15


def test_the_sandbox_dies_with_its_server(workspace: Path) -> None:
    """A server killed with SIGKILL (no clean-up of its own) leaves nothing running: --die-with-parent."""
    marker = _marker()
    script = textwrap.dedent(f"""
        from sgfs.agents.pytool import PythonLimits, run_python
        code = "import subprocess, time\\n"
        code += "subprocess.Popen(['setsid', 'sh', '-c', 'sleep 300', {marker!r}])\\ntime.sleep(300)"
        run_python(code, {str(workspace)!r}, PythonLimits(timeout_s=300))
    """)
    with subprocess.Popen([sys.executable, "-c", script]) as server:
        deadline = time.monotonic() + 20
        while not _processes_with(marker) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _processes_with(marker), "the sandboxed child never started"
        server.send_signal(signal.SIGKILL)
        server.wait()
    deadline = time.monotonic() + 5
    while _processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _processes_with(marker)
    group, _ = create_group(GroupLimits(4, 64 * 2**20))  # and the next group removes the one it left
    assert group is not None and group.close()
    for directory in group.directories:
        left = [n for n in os.listdir(os.path.dirname(directory)) if n.startswith(f"sgfs-call-{server.pid}-")]
        assert not left, left


def test_numpy_pandas_and_the_repository_still_work(workspace: Path) -> None:
    code = textwrap.dedent("""
        import numpy as np, pandas as pd, scipy.stats, tempfile, os
        frame = pd.read_csv('quinn_aggregation=SKUstore/forecast_model=ARIMA/horizon_wk=4.csv')
        print(len(frame), float(np.mean(np.arange(10))))
        with tempfile.NamedTemporaryFile(dir=os.environ['TMPDIR']) as handle:
            handle.write(b'scratch')
        print('ok')
    """)
    result = run_python(code, workspace, FAST)
    assert result.exit_code == 0 and result.output.splitlines()[-1] == "ok", result.output
    assert result.files_opened == ["quinn_aggregation=SKUstore/forecast_model=ARIMA/horizon_wk=4.csv"]


def test_no_sandbox_means_nothing_runs(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sgfs.agents.sandbox as sandbox

    marker = _marker()
    monkeypatch.setattr(sandbox, "BWRAP", "sgfs-no-such-bwrap")
    result = run_python(f"open('/tmp/{marker}', 'w')", workspace, FAST)
    assert not result.sealed and result.exit_code is None and not os.path.exists(f"/tmp/{marker}")
    assert len(result.notes) == 1 and result.notes[0].startswith("not run: the Python sandbox cannot start")
    assert "\n" not in result.for_model()


def test_servers_refuse_to_start_unsealed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No bubblewrap: ``sgfs mcp --python`` says why in one line and exits 2, and so does the Inspect task,
    unless told to run unsealed."""
    env = {**os.environ, "PATH": str(tmp_path)}  # no bwrap on it
    done = subprocess.run(
        [sys.executable, "-m", "sgfs", "mcp", "--python"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "sandbox cannot start" in done.stderr and "--python-unsealed" in done.stderr
    import sgfs.agents.sandbox as sandbox
    from sgfs.agents.inspect_task.task import infinite_science
    from sgfs.agents.pytool import sandbox_problem
    from sgfs.errors import SgfsError

    monkeypatch.setattr(sandbox, "BWRAP", "sgfs-no-such-bwrap")
    sandbox.check_sandbox.cache_clear()
    try:
        assert sandbox_problem(PythonLimits(isolate=False), "--x") is None
        with pytest.raises(SgfsError, match="python_unsealed"):
            infinite_science(seeds="34", per_type=1)
    finally:
        sandbox.check_sandbox.cache_clear()
