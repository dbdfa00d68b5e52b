"""capbench as a user who is not root but has been given the capabilities it needs: a real run works,
and with one capability missing it stops with one line naming that capability and leaves nothing
behind (docs/capabilities.md)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from capbench import owners
from capbench.testbed import preflight
from capbench.testbed import veth_pair as testbed

from e2e_env import (decided_trials, READ_INTERPRETER, as_nobody_argv, capbench_cmd, capbench_env, capbench_namespaces,
                     missing_prerequisite)

pytestmark = [
    pytest.mark.skipif(missing_prerequisite() is not None, reason=str(missing_prerequisite())),
    pytest.mark.skipif(shutil.which("setpriv") is None, reason="setpriv (util-linux) is needed to drop root"),
]


def as_nobody(tmp: Path, caps: tuple[str, ...], *args: str, prefix: tuple[str, ...] = ()
              ) -> tuple[subprocess.CompletedProcess, int]:
    """`capbench ARGS` as user nobody with `caps` (and READ_INTERPRETER), after `prefix` (a program
    that execs the rest); the result and its pid (setpriv execs, so the pid is capbench's, the
    owner its test bed's state file would name)."""
    env = capbench_env() | {"HOME": str(tmp)}
    argv = [*prefix, *as_nobody_argv(capbench_cmd(*args), caps + READ_INTERPRETER)]
    with subprocess.Popen(argv, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, env=env, stdin=subprocess.DEVNULL) as proc:
        out, err = proc.communicate(timeout=180)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), proc.pid


def nobodys_state(home: Path) -> Path:
    """Where user nobody's runs (HOME=home) keep their test beds' state (owners.state_folder)."""
    return home / ".local" / "state" / owners.STATE_NAME / testbed.STATE_SUBDIR


def beds_of(pid: int, home: Path) -> list[str]:
    """Test beds whose state file, root's or nobody's (HOME=home), names `pid` as owner."""
    states = [info.state for info in testbed.list_testbeds()]
    states += [json.loads(p.read_text()) for p in nobodys_state(home).glob("*.json")]
    return [s["id"] for s in states if (s or {}).get("owner_pid") == pid]


@pytest.fixture
def nobodys_dir() -> Iterator[Path]:
    """Where nobody writes its results and has its HOME (its own state folder): a folder of nobody's.
    capbench reads back only what the user who runs it may read (capbench.inputs), and pytest's
    tmp_path lies in /tmp/pytest-of-root, root's alone: READ_INTERPRETER would reach it, the user not."""
    path = Path(tempfile.mkdtemp(prefix="cbnobody-"))  # 0700
    os.chown(path, 65534, 65534)
    yield path
    shutil.rmtree(path)


def test_run_as_nobody_with_the_capabilities(nobodys_dir):
    results = nobodys_dir / "results"
    p, pid = as_nobody(nobodys_dir, preflight.RUN_CAPS, "run", "--sizes", "64", "--duration", "1",
                       "--backends", "afp-v3", "--results", str(results), "--no-report")
    assert p.returncode in (0, 3, 4), p.stderr  # 3: a lower bound (the generator fell short), said so
    bed = re.search(r"test bed ([0-9a-f]{6}):", p.stderr)
    assert bed, p.stderr
    trials = decided_trials(next(results.glob("*/trials.jsonl")))
    assert [t["backend"] for t in trials] == ["afp-v3"] and trials[0]["sent"] > 0
    assert not any(bed.group(1) in ns for ns in capbench_namespaces())
    assert beds_of(pid, nobodys_dir) == []


@pytest.mark.parametrize("missing", preflight.RUN_CAPS)
def test_run_without_one_capability(nobodys_dir, missing):
    results = nobodys_dir / "results"
    p, pid = as_nobody(nobodys_dir, tuple(c for c in preflight.RUN_CAPS if c != missing), "run", "--sizes", "64",
                       "--duration", "1", "--results", str(results))
    assert p.returncode == 2, p.stderr
    assert p.stderr.splitlines() == [p.stderr.strip()] and "Traceback" not in p.stderr
    assert p.stderr.startswith(f"capbench: capbench run needs CAP_{missing.upper()} ("), p.stderr
    assert "CAP_" not in p.stderr.split(")", 1)[1].split(":", 1)[0]  # that one only
    assert f"--ambient-caps {','.join('+' + c for c in preflight.RUN_CAPS)}" in p.stderr
    assert not results.exists() and beds_of(pid, nobodys_dir) == []
    assert "test bed" not in p.stdout + p.stderr


@pytest.mark.skipif(shutil.which("prlimit") is None, reason="prlimit (util-linux) is needed")
def test_run_afxdp_needs_ipc_lock_under_a_locked_memory_limit(nobodys_dir):
    # Its UMEM (32 MiB by default) is charged to RLIMIT_MEMLOCK without CAP_IPC_LOCK. (The branch
    # without a limit is not run here: this machine's hard limit cannot be raised.)
    results = nobodys_dir / "results"
    args = ("run", "--sizes", "64", "--duration", "1", "--backends", "afxdp", "--results", str(results),
            "--no-report")
    p, _ = as_nobody(nobodys_dir, preflight.RUN_CAPS, *args, prefix=("prlimit", "--memlock=8388608", "--"))
    assert p.returncode == 2 and p.stderr.startswith("capbench: capbench run needs CAP_IPC_LOCK ("), p.stderr
    assert "ulimit -l unlimited" in p.stderr and not results.exists()
    # Granted it, the run measures afxdp under the same limit.
    p, _ = as_nobody(nobodys_dir, (*preflight.RUN_CAPS, "ipc_lock"), *args,
                     prefix=("prlimit", "--memlock=8388608", "--"))
    assert p.returncode in (0, 3, 4), p.stderr
    trials = decided_trials(next(results.glob("*/trials.jsonl")))
    assert [t["backend"] for t in trials] == ["afxdp"] and trials[0]["sent"] > 0


def test_listing_needs_no_capabilities(nobodys_dir):
    backlog = int(Path("/proc/sys/net/core/netdev_max_backlog").read_text())
    # A test bed that holds a host setting: status lists both, reading what root wrote.
    with testbed.testbed(purpose="pytest listing", backlog=backlog + 1) as tb:
        p, _ = as_nobody(nobodys_dir, (), "testbed", "status")
        assert p.returncode == 0, p.stderr
        assert re.search(rf"^{tb.id} .* in use by pid \d+ \(pytest listing\)$", p.stdout, re.M), p.stdout
        assert re.search(rf"^net\.core\.netdev_max_backlog = \d+, held by test bed\(s\) [^:]*{tb.id}", p.stdout,
                         re.M), p.stdout
    p, _ = as_nobody(nobodys_dir, (), "backends")
    assert p.returncode == 0 and "needs CAP_" not in p.stderr, p.stderr


@pytest.mark.parametrize("action", ["up", "down"])
def test_testbed_up_down_name_their_capabilities(nobodys_dir, action):
    p, pid = as_nobody(nobodys_dir, (), "testbed", action)
    assert p.returncode == 2 and p.stderr.splitlines() == [p.stderr.strip()], p.stderr
    for cap in preflight.TESTBED_CAPS:
        assert f"CAP_{cap.upper()}" in p.stderr
    assert beds_of(pid, nobodys_dir) == []


def test_capture_in_a_namespace_as_nobody(nobodys_dir, tb):
    args = ("capture", "--netns", tb.cap_ns, "--iface", tb.cap_if, "--backend", "afp-v3", "--duration", "1")
    p, _ = as_nobody(nobodys_dir, (*preflight.NETNS_CAPS, "net_raw"), *args)
    assert p.returncode == 0 and json.loads(p.stdout.splitlines()[-1])["type"] == "summary", p.stderr
    for missing in preflight.NETNS_CAPS:
        p, _ = as_nobody(nobodys_dir, tuple(c for c in (*preflight.NETNS_CAPS, "net_raw") if c != missing), *args)
        assert p.returncode == 2 and p.stderr.splitlines() == [p.stderr.strip()], p.stderr
        assert p.stderr.startswith(f"capbench: capbench capture --netns needs CAP_{missing.upper()} ("), p.stderr
    p, _ = as_nobody(nobodys_dir, preflight.NETNS_CAPS, *args)  # the counter names its own
    assert p.returncode == 2 and "capbench-cap: packet capture needs CAP_NET_RAW" in p.stderr, p.stderr


def test_testbed_up_and_down_as_nobody_with_their_capabilities(nobodys_dir):
    p, _ = as_nobody(nobodys_dir, preflight.TESTBED_CAPS, "testbed", "up")
    assert p.returncode == 0, p.stderr
    tb_id = re.search(r"^test bed ([0-9a-f]{6})$", p.stdout, re.M).group(1)
    try:
        assert {f"capbench-{tb_id}-gen", f"capbench-{tb_id}-cap"} <= capbench_namespaces()
        assert (nobodys_state(nobodys_dir) / f"{tb_id}.json").exists()  # its own, not root's /run/capbench
        assert testbed.read_state(tb_id) is None
    finally:
        p, _ = as_nobody(nobodys_dir, preflight.TESTBED_CAPS, "testbed", "down", tb_id)
    assert p.returncode == 0 and f"removed test bed {tb_id}" in p.stdout, p.stderr
    assert not {f"capbench-{tb_id}-gen", f"capbench-{tb_id}-cap"} & capbench_namespaces()
    assert list(nobodys_state(nobodys_dir).glob("*.json")) == []
