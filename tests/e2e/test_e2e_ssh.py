"""The SSH layer against real OpenSSH servers in network namespaces (sshd_hosts): one login per
host however many commands, remote JSON Lines, stopping, a remote program that dies with its
connection (its ssh client killed, capbench killed, the link dropped), and one line for each way a
host can be wrong (unknown name, refused connection, refused key, other capbench version)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from capbench import __version__
from capbench.errors import UsageError
from capbench.remote import clock, version
from capbench.remote.ssh import ALIVE_COUNT, ALIVE_INTERVAL_S, KILL_GRACE_S, WATCHDOG_S, Host
from capbench.testbed.procs import ChildError
from capbench.testbed import netns

from e2e_env import REPO
from sshd_hosts import leftover_namespaces, missing, sshd_hosts

BUILD = REPO / "build"
TICKS = textwrap.dedent("""
    import json, signal, sys, time
    stop = []
    signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
    print(json.dumps({"type": "ready"}), flush=True)
    i = 0
    while not stop:
        print(json.dumps({"type": "tick", "i": i}), flush=True)
        i += 1
        time.sleep(0.05)
    print(json.dumps({"type": "summary", "ticks": i}), flush=True)
""")


@pytest.fixture(scope="module")
def hosts():
    why = missing()
    if why:
        pytest.skip(why)
    with sshd_hosts(3) as hs:
        yield hs
    assert not [ns for ns in hs.namespaces() if ns in netns.list_netns()]


def host(hs, i: int = 0, **kw) -> Host:
    kw.setdefault("build_dir", str(BUILD))
    return Host(f"h{i}", hs.destination(i), ssh_config=hs.ssh_config, **kw)


def alive(pid: int) -> bool:
    """The hosts are namespaces of this machine: their processes are in this /proc."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def gone_within(pid: int, seconds: float) -> float | None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        if not alive(pid):
            return time.monotonic() - t0
        time.sleep(0.05)
    return None


def test_one_login_carries_every_command(hosts):
    h0 = hosts.hosts[0]
    before = h0.accepted_logins()
    with host(hosts) as h:
        assert subprocess.run(h.ssh_argv("-O", "check", "--", h.destination), capture_output=True).returncode == 0
        for i in range(3):
            p = h.run(["echo", f"hello {i}"])
            assert (p.returncode, p.stdout) == (0, f"hello {i}\n")
        assert h.run(["sh", "-c", "exit 7"]).returncode == 7
        c = h.start("ticks", ["python3", "-c", TICKS])
        c.wait_for("ready", 10)
        c.stop(5)
    assert h0.accepted_logins() == before + 1
    assert h._dir is None and h._master is None


def test_remote_json_lines_and_stop(hosts):
    with host(hosts) as h:
        c = h.start("ticks", ["python3", "-c", TICKS])
        assert c.wait_for("ready", 10) == {"type": "ready"}
        assert c.wait_for("tick", 5)["i"] == 0
        assert c.remote_pid and alive(c.remote_pid)
        assert c.stop(5) == 0  # SIGTERM reached it: it printed its summary and ended well
        assert c.summary()["ticks"] >= 1
        assert c.stderr_lines == []
        assert not alive(c.remote_pid)


def test_remote_failure_is_the_programs_own_line(hosts):
    with host(hosts) as h:
        c = h.start("capbench-cap", ["capbench-cap", "--backend", "nosuch"])
        with pytest.raises(ChildError, match=r"capbench-cap on h0 ended before its 'ready' line \(exit status 2\): "
                                            r".*nosuch"):
            c.wait_for("ready", 10)


def test_sigkill_reaches_a_program_that_ignores_sigterm(hosts):
    with host(hosts) as h:
        c = h.start("stubborn", ["python3", "-c", "import signal, time, json\n"
                                 "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                                 "print(json.dumps({'type': 'ready'}), flush=True)\ntime.sleep(60)"])
        c.wait_for("ready", 10)
        pid = c.remote_pid
        c.stop(1)
        assert c.killed_after_s == 1
        assert gone_within(pid, 3) is not None


def test_remote_program_dies_with_its_ssh_client(hosts):
    """SIGKILL to the local ssh client: the master ends the session, the wrapper's watchdog
    reads the end of its stdin and kills the program's group."""
    with host(hosts) as h:
        c = h.start("sleeper", ["sleep", "60"])
        assert c._pid_seen.wait(10) and c.remote_pid
        pid = c.remote_pid
        assert alive(pid)
        os.kill(c.proc.pid, signal.SIGKILL)
        took = gone_within(pid, 5)
        assert took is not None, "the remote program outlived its ssh client"
        assert h.connected()  # the master and its other sessions are untouched


CAPBENCH_SCRIPT = """
import sys, time, json
sys.path.insert(0, {python!r})
from capbench.remote.ssh import Host
from capbench.testbed.procs import ChildError
h = Host("h", {dest!r}, ssh_config={config!r}).open()
c = h.start("sleeper", ["sleep", "60"])
c._pid_seen.wait(10)
print(c.remote_pid, h._dir, flush=True)
time.sleep(60)
"""


def test_remote_programs_die_with_capbench(hosts):
    """A killed capbench (SIGKILL: no finally runs): the kernel kills its ssh clients and master
    (pdeathsig), and the remote program goes."""
    code = CAPBENCH_SCRIPT.format(python=str(REPO / "python"), dest=hosts.destination(1),
                                  config=str(hosts.ssh_config))
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL)
    try:
        pid_text, control_dir = proc.stdout.readline().split()
        pid = int(pid_text)
        assert alive(pid)
        proc.kill()
        proc.wait()
        assert gone_within(pid, 5) is not None, "the remote program outlived capbench"
        deadline = time.monotonic() + 5
        while len(hosts.hosts[1].pids()) > 1 and time.monotonic() < deadline:  # only sshd's listener
            time.sleep(0.05)
        assert len(hosts.hosts[1].pids()) == 1, hosts.hosts[1].pids()
        shutil.rmtree(control_dir)  # what a SIGKILL leaves: the master's private folder (no finally ran)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_silent_host_is_lost_within_seconds(hosts):
    """No packet gets through (the link down): the host's sshd notices nothing, but the master's
    ServerAlive asks go unanswered, so it gives the host up within ALIVE_INTERVAL_S × ALIVE_COUNT
    and Host.lost() names it, as does a session waiting on it; on the host, the heartbeat stops and
    the watchdog kills the program after WATCHDOG_S. Capbench's own defaults throughout."""
    h2 = hosts.hosts[2]
    with host(hosts, 2) as h:
        c = h.start("sleeper", ["sleep", "60"])
        assert c._pid_seen.wait(10) and c.remote_pid
        pid = c.remote_pid
        netns.ip("link", "set", h2.client_if, "down")
        t0 = time.monotonic()
        try:
            while h.lost() is None and time.monotonic() - t0 < 10:
                time.sleep(0.05)
            took = time.monotonic() - t0
            assert h.lost() and took < ALIVE_INTERVAL_S * ALIVE_COUNT + 2, (took, h.lost())
            assert "lost the connection to h2" in h.lost()
            with pytest.raises(ChildError, match="sleeper on h2 ended before its 'summary' line: lost the connection "
                                                 "to h2"):
                c.wait_for("summary", 5)
            assert gone_within(pid, WATCHDOG_S + KILL_GRACE_S + 2) is not None, "the remote program outlived its link"
            c.stop(1)
        finally:
            netns.ip("link", "set", h2.client_if, "up")


def test_clock_offset_of_a_host_on_this_machine(hosts):
    with host(hosts) as h:
        off = clock.measure_offset(h)
    # the same kernel's clock: the offset is within its uncertainty (plus scheduling slack)
    assert abs(off.offset_ns) <= off.uncertainty_ns + 2_000_000, off
    assert off.uncertainty_ns < 100_000_000


def test_same_version_and_programs(hosts):
    with host(hosts) as h:
        version.check_programs(h, ["capbench-cap", "capbench-gen"])
        assert version.check_version(h) == __version__
        with pytest.raises(UsageError, match=r"has no nosuch-capture: install it there \(apt-get install "
                                             r"nosuch-capture\)"):
            version.check_programs(h, ["capbench-cap", "nosuch-capture"])


def test_version_mismatch_is_refused(hosts, tmp_path):
    fake = tmp_path / "build"
    fake.mkdir()
    for prog in ("capbench-cap", "capbench-gen"):
        (fake / prog).write_text('#!/bin/sh\necho \'{"program": "%s", "describe_version": 1, "version": "9.9.9"}\'\n'
                                 % prog)
        (fake / prog).chmod(0o755)
    with host(hosts, build_dir=str(fake)) as h:
        with pytest.raises(UsageError) as e:
            version.check_version(h)
    msg = str(e.value)
    assert "\n" not in msg and "capbench 9.9.9" in msg and f"capbench {__version__}" in msg
    assert f"install capbench {__version__} there" in msg


def test_missing_build_dir_names_the_fix(hosts, tmp_path):
    with host(hosts, build_dir=str(tmp_path / "nothing")) as h:
        with pytest.raises(UsageError, match=r"has no .*/nothing/capbench-cap: build capbench .* build_dir"):
            version.check_programs(h)


def one_line(e: pytest.ExceptionInfo, *words: str) -> str:
    msg = str(e.value)
    assert "\n" not in msg and e.value.exit_status == 2, msg
    for w in words:
        assert w in msg, (w, msg)
    return msg


def test_unknown_host(hosts):
    with pytest.raises(UsageError) as e:
        Host("x", "root@nosuchhost.invalid", ssh_config=hosts.ssh_config).open()
    one_line(e, "host 'x' (root@nosuchhost.invalid)", "cannot resolve", "~/.ssh/config")


def test_connection_refused(hosts):
    with pytest.raises(UsageError) as e:
        Host("x", hosts.destination(0), ssh_config=hosts.ssh_config, ssh_options=["Port=2222"]).open()
    one_line(e, "refused", "start sshd")


def test_wrong_key_is_refused(hosts, tmp_path):
    key = tmp_path / "other"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    # a config without the test's key (IdentityFile adds to the config's, it does not replace it)
    config = Path(str(hosts.ssh_config)).read_text().replace("IdentityFile", "#IdentityFile")
    (tmp_path / "config").write_text(config)
    with pytest.raises(UsageError) as e:
        Host("x", hosts.destination(0), ssh_config=tmp_path / "config", ssh_options=[f"IdentityFile={key}"]).open()
    one_line(e, "login was refused", f"ssh-copy-id {hosts.destination(0)}")


def test_unknown_host_key_is_refused(hosts, tmp_path):
    config = Path(str(hosts.ssh_config)).read_text().replace("UserKnownHostsFile ", f"UserKnownHostsFile "
                                                             f"{tmp_path}/empty #")
    (tmp_path / "config").write_text(config)
    with pytest.raises(UsageError) as e:
        Host("x", hosts.destination(0), ssh_config=tmp_path / "config").open()
    one_line(e, "host key is unknown", f"ssh {hosts.destination(0)}")


def test_nothing_left_behind(hosts):
    """Run last in this module: every session has ended; only each sshd's listener is left."""
    deadline = time.monotonic() + 5
    while any(len(h.pids()) > 1 for h in hosts.hosts) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [len(h.pids()) for h in hosts.hosts] == [1, 1, 1]


def test_the_harness_leaves_nothing():
    if missing():
        pytest.skip(missing())
    with sshd_hosts(2) as hs:
        hs.link(0, 1)
        names = hs.namespaces()
        pids = [h.proc.pid for h in hs.hosts]
    assert not set(names) & set(leftover_namespaces())
    assert not any(alive(p) for p in pids)
