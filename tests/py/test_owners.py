"""One owner at a time (capbench.owners): the results folder's flock and the host-settings registry,
with real files, real flock(2) and real processes as owners (no root needed)."""

from __future__ import annotations

import errno
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest
from capbench import owners
from capbench.errors import RunError, Terminated, UsageError
from capbench.owners import Holder, HostSettings, Setting
from capbench.testbed.veth_pair import sigterm_raises

PYTHON_DIR = str(Path(__file__).resolve().parents[2] / "python")


def python(script: str) -> tuple[subprocess.Popen, str]:
    """A child Python process running `script` with capbench importable, once it printed its
    `ready ...` line; (the process, the rest of that line)."""
    p = subprocess.Popen([sys.executable, "-c", textwrap.dedent(script)], stdout=subprocess.PIPE, text=True,
                         env=dict(os.environ, PYTHONPATH=PYTHON_DIR))
    assert p.stdout is not None
    word, _, rest = p.stdout.readline().strip().partition(" ")
    assert word == "ready", p.wait()
    return p, rest


def kill(p: subprocess.Popen) -> None:
    p.kill()
    p.wait()


# --- the results folder ---------------------------------------------------------------


def test_a_results_folder_has_one_writer_and_a_killed_one_frees_it(tmp_path):
    owner, _ = python(f"""
        import time
        from capbench import owners
        lock = owners.lock_results({str(tmp_path)!r})
        print("ready", flush=True)
        time.sleep(60)
    """)
    try:
        with pytest.raises(UsageError, match=rf"is being written by the run of pid {owner.pid}: "):
            owners.lock_results(tmp_path)
    finally:
        kill(owner)  # SIGKILL: no cleanup; the kernel drops the flock with the process
    lock = owners.lock_results(tmp_path)
    assert (tmp_path / owners.RESULTS_LOCK).read_text() == f"{os.getpid()}\n"
    lock.release()
    owners.lock_results(tmp_path).release()


def test_the_lock_does_not_outlive_capbench_in_its_children(tmp_path):
    # The owner starts a long-lived program (as a run starts capbench-gen and -cap), then is
    # killed: the descriptor is close-on-exec, so the program does not keep the folder locked.
    owner, rest = python(f"""
        import subprocess, time
        from capbench import owners
        lock = owners.lock_results({str(tmp_path)!r})
        child = subprocess.Popen(["sleep", "60"])
        print("ready", child.pid, flush=True)
        time.sleep(60)
    """)
    program = int(rest)
    try:
        kill(owner)
        owners.lock_results(tmp_path).release()
    finally:
        os.kill(program, signal.SIGKILL)


def test_a_folder_that_cannot_be_locked_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="cannot lock"):
        owners.lock_results(tmp_path / "missing")


@pytest.mark.parametrize("kind", ["fifo", "link", "device link", "directory"])
def test_a_lock_file_that_is_no_regular_file_is_refused_and_left_alone(tmp_path, kind):
    """Issue 15's check: a FIFO or device named run.lock made --resume a traceback (ftruncate:
    EINVAL), and a link named run.lock had root truncate and write the file it led to."""
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    d = tmp_path / "run"
    d.mkdir()
    lock = d / owners.RESULTS_LOCK
    {"fifo": lambda: os.mkfifo(lock), "link": lambda: lock.symlink_to(victim),
     "device link": lambda: lock.symlink_to("/dev/null"), "directory": lock.mkdir}[kind]()
    with pytest.raises(UsageError, match="cannot lock") as e:
        owners.lock_results(d)
    assert "\n" not in str(e.value)
    assert victim.read_text() == "precious\n"


# --- host settings -----------------------------------------------------------------------


@pytest.fixture(autouse=True)
def stand_ins_are_settings(tmp_path, monkeypatch):
    """The stand-in files of these tests (in tmp_path, named as the real ones) count as settings
    capbench makes; other files there do not."""
    def stand_in(path: str, value: str) -> bool:
        return path.startswith(f"{tmp_path}/") and Path(path).name in STAND_INS and value.isalnum()

    monkeypatch.setitem(owners.DECLARED, owners.FILE, [*owners.DECLARED.get(owners.FILE, []), stand_in])


STAND_INS = ("netdev_max_backlog", "scaling_governor")


@pytest.fixture
def backlog(tmp_path):
    """A sysctl-like file at the kernel's default, and a registry beside it."""
    f = tmp_path / "netdev_max_backlog"
    f.write_text("1000\n")
    return f, HostSettings(tmp_path / "run")


def at_least(f: Path, value: int) -> Setting:
    return Setting(path=str(f), value=str(value), at_least=True, key="net.core.netdev_max_backlog")


def sleeper() -> tuple[subprocess.Popen, Holder]:
    """A real process to own a holder (a run), and the holder."""
    p = subprocess.Popen(["sleep", "60"])
    for _ in range(100):
        start = owners.process_start_ticks(p.pid)
        if start is not None:
            break
        time.sleep(0.01)
    return p, Holder(f"{p.pid:06x}"[-6:], p.pid, start)


def test_a_setting_two_runs_raised_goes_back_when_the_last_one_ends(backlog):
    f, reg = backlog
    (run_a, a), (run_b, b) = sleeper(), sleeper()
    try:
        assert reg.hold(a, at_least(f, 10_000)) == {"key": "net.core.netdev_max_backlog", "was": "1000",
                                                     "set": "10000", "restores_to": "1000"}
        # B needs less than A set: it changes nothing, but it holds the setting too.
        assert reg.hold(b, at_least(f, 5000)) == {"key": "net.core.netdev_max_backlog", "was": "10000",
                                                   "set": "10000", "restores_to": "1000"}
        reg.release(a.id)  # `testbed down A`
        assert f.read_text() == "10000\n"  # B still measures with it
        reg.release(b.id)
        assert f.read_text() == "1000\n"
        assert reg.held() == {}
    finally:
        kill(run_a)
        kill(run_b)


def test_a_killed_holder_is_dropped_at_the_next_access(backlog):
    f, reg = backlog
    (run_a, a), (run_b, b) = sleeper(), sleeper()
    try:
        reg.hold(a, at_least(f, 10_000))
        reg.hold(b, at_least(f, 20_000))  # raises it further; the original stays the first holder's find
        kill(run_a)  # SIGKILLed: it never releases
        assert set(reg.held()[str(f)]["holders"]) == {b.id}
        assert f.read_text() == "20000\n"
        kill(run_b)
        assert reg.held() == {}
        assert f.read_text() == "1000\n"
    finally:
        kill(run_a)
        kill(run_b)


def test_a_holder_lives_while_its_test_bed_namespaces_exist(backlog, tmp_path, monkeypatch):
    # `capbench testbed up` exits at once; its test bed holds the setting until `down`.
    f, reg = backlog
    monkeypatch.setattr(owners, "NETNS_DIR", tmp_path / "netns")
    (tmp_path / "netns").mkdir()
    (tmp_path / "netns" / "capbench-abcdef-cap").write_text("")
    run, h = sleeper()
    kill(run)
    bed = Holder("abcdef", h.pid, h.start_ticks, ("capbench-abcdef-gen", "capbench-abcdef-cap"))
    reg.hold(bed, at_least(f, 10_000))
    assert list(reg.held()[str(f)]["holders"]) == ["abcdef"]
    (tmp_path / "netns" / "capbench-abcdef-cap").unlink()  # `ip netns delete`
    assert reg.held() == {}
    assert f.read_text() == "1000\n"


def test_a_value_set_by_hand_meanwhile_stands(backlog):
    f, reg = backlog
    me = Holder.of_this_process("aaaaaa")
    reg.hold(me, at_least(f, 10_000))
    f.write_text("7000\n")
    reg.release(me.id)
    assert f.read_text() == "7000\n"


def test_an_exact_value_setting(tmp_path):
    gov = tmp_path / "scaling_governor"
    gov.write_text("powersave\n")
    reg = HostSettings(tmp_path / "run")
    perf = Setting(path=str(gov), value="performance", at_least=False)
    a, b = Holder.of_this_process("aaaaaa"), Holder.of_this_process("bbbbbb")
    assert reg.hold(a, perf) == {"path": str(gov), "was": "powersave", "set": "performance",
                                 "restores_to": "powersave"}
    assert reg.hold(b, perf)["set"] == "performance"
    reg.release(b.id)
    assert gov.read_text() == "performance\n"
    reg.release(a.id)
    assert gov.read_text() == "powersave\n"
    gov.write_text("performance\n")
    assert reg.hold(a, perf) is None  # already so, and held by nobody: nothing to put back


HOLD_RELEASE = """
    import random, sys, time
    from capbench import owners
    from capbench.owners import Holder, HostSettings, Setting
    path, directory, name = sys.argv[1:4]
    reg = HostSettings(directory)
    owners.declare(owners.FILE, lambda p, value: p == path)
    print("ready", flush=True)
    for i in range(25):
        me = Holder.of_this_process(f"{name}{i:02d}")
        want = random.randint(1001, 50000)
        reg.hold(me, Setting(path=path, value=str(want), at_least=True))
        time.sleep(random.random() / 500)
        # While it holds, nobody puts the setting back under it. (A write to this stand-in file
        # truncates it first, so a read can catch it empty; a sysctl write is one step.)
        while not (now := open(path).read()):
            pass
        assert int(now) >= want, (now, want)
        reg.release(me.id)
"""


def test_concurrent_runs_never_lower_a_setting_one_of_them_holds(backlog):
    f, reg = backlog
    procs = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(HOLD_RELEASE), str(f), str(reg.directory),
                               f"p{n}"], env=dict(os.environ, PYTHONPATH=PYTHON_DIR), stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True) for n in range(4)]
    errors = [p.communicate(timeout=60)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0, 0], errors
    assert reg.held() == {}
    assert f.read_text() == "1000\n"


def test_a_registry_that_is_not_one_is_a_clear_error(backlog):
    f, reg = backlog
    reg.directory.mkdir()
    reg.path.write_bytes(b"\xff not json")
    with pytest.raises(RunError, match="is not capbench's host-settings registry"):
        reg.hold(Holder.of_this_process("aaaaaa"), at_least(f, 10_000))
    assert f.read_text() == "1000\n"


# --- a signal while something is made --------------------------------------------------------


def test_a_signal_while_something_is_made_is_raised_where_it_is_undone():
    undone = []

    def make() -> str:
        os.kill(os.getpid(), signal.SIGTERM)  # held back until `make` returns
        for _ in range(100_000):  # (a handler would run between these bytecodes)
            pass
        return "made"

    with pytest.raises(Terminated), sigterm_raises():
        with owners.owned(make, undone.append):
            pytest.fail("the block should not run: the signal came first")
    assert undone == ["made"]


def test_a_hold_holds_a_signal_the_kernel_gave_to_another_thread():
    # capbench runs threads (a reader per child program); the kernel gives a signal sent to
    # the process to any thread that does not block it. Here the main thread blocks SIGTERM
    # while it is sent, so another thread takes it: the hold must still keep it back.
    import threading

    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    undone = []

    def make() -> str:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
        for _ in range(100_000):  # a handler that raised would do so between these bytecodes
            pass
        return "made"

    try:
        with pytest.raises(Terminated), sigterm_raises():
            with owners.owned(make, undone.append):
                pytest.fail("the block should not run: the signal came first")
    finally:
        stop.set()
        other.join()
    assert undone == ["made"]


def test_a_program_started_during_a_hold_can_be_stopped_with_sigterm():
    # A held signal is noted by Python, not blocked: a blocked mask would be inherited by the
    # program and make it ignore SIGTERM for its whole life.
    from capbench import held_signals

    with held_signals.held():
        child = subprocess.Popen(["sleep", "30"])
    try:
        status = Path(f"/proc/{child.pid}/status").read_text()
        blocked = int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigBlk:")), 16)
        assert blocked & (1 << (signal.SIGTERM - 1)) == 0
        child.terminate()
        assert child.wait(timeout=5) == -signal.SIGTERM
    finally:
        child.kill()
        child.wait()


def test_listed_shows_living_holders_and_changes_nothing(backlog):
    # `testbed status` lists without the lock and without privileges: a killed holder is left out
    # but its setting is not put back (that is held()'s, under the lock).
    f, reg = backlog
    (run_a, a), (run_b, b) = sleeper(), sleeper()
    try:
        reg.hold(a, at_least(f, 10_000))
        reg.hold(b, at_least(f, 20_000))
        kill(run_a)
        before = reg.path.read_bytes()
        assert set(reg.listed()[str(f)]["holders"]) == {b.id}
        assert reg.path.read_bytes() == before and f.read_text() == "20000\n"
        kill(run_b)
        assert reg.listed() == {}
        assert f.read_text() == "20000\n"  # still: nothing was put back
        assert reg.held() == {} and f.read_text() == "1000\n"
    finally:
        kill(run_a)
        kill(run_b)


# --- whose registry, and what may be in it (issue 27) ---------------------------------------------


def plant(reg: HostSettings, path: str, original: str, now: str) -> None:
    """An entry whose holder is dead and whose `set` the file reads now: the next access would
    write `original` into `path` if the entry were trusted (the audit's plant)."""
    reg.held()  # the folder, the lock and an empty registry, made by capbench
    registry = json.loads(reg.path.read_text())
    registry["settings"][path] = {"original": original, "set": now, "holders": {}}
    reg.path.write_text(json.dumps(registry))


@pytest.mark.parametrize("entry", ["victim.conf", "dotdot", "bad value", "not an entry"])
def test_an_entry_that_is_no_setting_capbench_makes_is_dropped_unwritten(backlog, tmp_path, capsys, entry):
    f, reg = backlog
    victim = tmp_path / "victim.conf"
    victim.write_text("precious\n")
    path, original = {"victim.conf": (str(victim), "PWNED"),
                      # a declared name, reached through '..' from elsewhere
                      "dotdot": (f"{tmp_path}/x/../victim.conf", "PWNED"),
                      "bad value": (str(f), "PWNED\nroot::0:0::/:/bin/sh"),
                      "not an entry": (str(f), "1")}[entry]
    plant(reg, path, original, "precious" if entry != "bad value" else "1000")
    if entry == "not an entry":
        registry = json.loads(reg.path.read_text())
        registry["settings"][path] = ["not", "a", "dict"]
        reg.path.write_text(json.dumps(registry))
    capsys.readouterr()
    assert reg.held() == {}
    assert victim.read_text() == "precious\n" and f.read_text() == "1000\n"
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"capbench: warning: {reg.path} names {path!r}"), err
    assert err[0].endswith("dropped, never read or written")
    assert json.loads(reg.path.read_text())["settings"] == {}  # gone for good


def test_a_declared_entry_is_still_put_back(backlog):
    f, reg = backlog
    f.write_text("10000\n")
    plant(reg, str(f), "1000", "10000")  # a run that died holding it
    assert reg.held() == {} and f.read_text() == "1000\n"


def test_capbench_declares_the_settings_it_makes_and_nothing_else():
    # In a fresh interpreter, importing only what destroys a test bed: every kind of setting a run
    # can hold is declared there (a setting no declaration claims would be dropped, never put back).
    script = """
        import json
        from capbench import owners
        from capbench.testbed import veth_pair
        def ok(path, value, kind=owners.FILE):
            return owners.undeclared(path, {"kind": kind, "original": value, "set": value, "holders": {}}) is None
        print(json.dumps([
            ok("/proc/sys/net/core/netdev_max_backlog", "1000"), ok("/proc/sys/net/core/rmem_max", "212992"),
            ok("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "schedutil"),
            ok("/sys/devices/system/cpu/cpu17/cpufreq/scaling_governor", "performance"),
            ok("ethtool/capbench-abcdef-cap/eth1/ring/rx", "4096", "ethtool"),
            ok("ethtool//eth0/channels/combined", "2", "ethtool"),
            ok("ethtool//eth0/coalesce/adaptive-rx", "off", "ethtool"),
            ok("/proc/irq/42/smp_affinity_list", "0-3,8"), ok("/proc/irq/7/smp_affinity_list", "1"),
            ok("rps/capbench-abcdef-cap/eth1/rx-3", "2", "rps"),
            # and not:
            ok("/proc/sys/net/core/netdev_max_backlog", "1000 "), ok("/proc/sys/kernel/core_pattern", "|/x"),
            ok("/proc/sys/net/core/rmem_default", "212992"), ok("/etc/passwd", "root"),
            ok("/sys/devices/system/cpu/cpu0/../../../../../etc/x/cpufreq/scaling_governor", "x"),
            ok("/sys/devices/system/cpu/cpu0/x/cpufreq/scaling_governor", "performance"),
            ok("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "a/b"),
            ok("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "x" * 16),
            ok("/sys/class/net/eth0/threaded", "1"),
            ok("ethtool//eth0/ring/bogus", "1", "ethtool"), ok("ethtool//eth0/ring/rx", "on", "ethtool"),
            ok("ethtool//eth0/coalesce/adaptive-rx", "1", "ethtool"),
            ok("ethtool//eth0/ring/rx", str(2**32), "ethtool"), ok("ethtool/../eth0/ring/rx", "1", "ethtool"),
            ok("ethtool//eth0/ring/rx/x", "1", "ethtool"), ok("ethtool//" + "e" * 16 + "/ring/rx", "1", "ethtool"),
            ok("/proc/sys/net/core/netdev_max_backlog", "1000", "ethtool"),
            ok("/proc/irq/42/smp_affinity", "3"), ok("/proc/irq/42/smp_affinity_list", "1 2"),
            ok("/proc/irq/../smp_affinity_list", "1"), ok("/proc/irq/42/smp_affinity_list", "1", "ethtool"),
            ok("rps//eth1/rx-0", "1"), ok("rps//eth1/rx-0/../x", "1", "rps"),
        ]))
    """
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=PYTHON_DIR), check=True).stdout
    assert json.loads(out) == [True] * 10 + [False] * 23


@pytest.mark.parametrize("what", [owners.REGISTRY, owners.REGISTRY_LOCK, "folder"])
def test_a_registry_another_user_owns_is_refused_in_one_line(backlog, what):
    # As root this is a real chown; the owner a registry must have is a parameter, so any user can
    # check the same refusal by expecting another.
    f, reg = backlog
    reg.held()
    target = reg.directory if what == "folder" else reg.directory / what
    if os.geteuid() == 0:
        os.chown(target, 65534, 65534)
        refused, named = reg, target
    else:  # expecting another owner: the folder is the first thing refused
        refused, named = HostSettings(reg.directory, owner=os.geteuid() + 1), reg.directory
    with pytest.raises(UsageError) as e:
        refused.hold(Holder.of_this_process("aaaaaa"), at_least(f, 10_000))
    line = str(e.value)
    assert "\n" not in line and line.startswith(f"{named} is owned by uid "), line
    assert f"(rm {'-r ' if named == reg.directory else ''}{named})" in line
    assert f.read_text() == "1000\n"


@pytest.mark.parametrize("what", [owners.REGISTRY, owners.REGISTRY_LOCK, "folder"])
def test_a_registry_others_can_write_is_refused(backlog, what):
    f, reg = backlog
    reg.held()
    target = reg.directory if what == "folder" else reg.directory / what
    target.chmod(0o777 if what == "folder" else 0o666)
    with pytest.raises(UsageError, match=r"can be written by group and others \(mode 0(777|666)\): .*\(rm "):
        reg.hold(Holder.of_this_process("aaaaaa"), at_least(f, 10_000))
    target.chmod(0o775 if what == "folder" else 0o664)
    with pytest.raises(UsageError, match="can be written by its group"):
        reg.held()
    assert f.read_text() == "1000\n"


@pytest.mark.parametrize("what", [owners.REGISTRY, owners.REGISTRY_LOCK, "folder"])
def test_a_registry_through_a_link_is_refused_and_what_it_leads_to_left_alone(backlog, tmp_path, what):
    f, reg = backlog
    elsewhere = tmp_path / "elsewhere"
    if what == "folder":
        elsewhere.mkdir()
        reg.directory.symlink_to(elsewhere)
    else:
        reg.held()
        elsewhere.write_text("precious\n")
        (reg.directory / what).unlink()
        (reg.directory / what).symlink_to(elsewhere)
    with pytest.raises(UsageError, match=r"is a symbolic link: .*then remove it \(rm "):
        reg.hold(Holder.of_this_process("aaaaaa"), at_least(f, 10_000))
    assert (list(elsewhere.iterdir()) == [] if what == "folder" else elsewhere.read_text() == "precious\n")


def test_a_fifo_for_a_registry_is_refused_at_once(backlog):
    f, reg = backlog
    reg.held()
    reg.path.unlink()
    os.mkfifo(reg.path)
    with pytest.raises(UsageError, match="is a FIFO .*, not a regular file"):
        reg.held()  # no hang: opened O_NONBLOCK


def test_the_registry_is_0644_and_its_folder_0755_whatever_the_umask(backlog):
    f, reg = backlog
    old = os.umask(0o077)
    try:
        reg.hold(Holder.of_this_process("aaaaaa"), at_least(f, 10_000))
    finally:
        os.umask(old)
        reg.release("aaaaaa")
    assert oct(reg.directory.stat().st_mode & 0o777) == oct(0o755)
    assert oct(reg.path.stat().st_mode & 0o777) == oct(0o644)
    assert reg.directory.stat().st_uid == reg.path.stat().st_uid == os.geteuid()


def test_a_registry_of_another_boot_is_started_afresh(backlog, monkeypatch, tmp_path):
    # A user's state folder outlives a reboot, which put every setting back: its entries are stale.
    f, reg = backlog
    boot = tmp_path / "boot_id"
    boot.write_text("one\n")
    monkeypatch.setattr(owners, "BOOT_ID", boot)
    f.write_text("10000\n")
    plant(reg, str(f), "1000", "10000")
    boot.write_text("two\n")
    assert reg.held() == {} and f.read_text() == "10000\n"  # not "put back": this boot never held it
    assert json.loads(reg.path.read_text())["boot"] == "two"


def test_whose_state_folder(monkeypatch, tmp_path):
    assert owners.state_folder(0) == Path("/run/capbench")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert owners.state_folder(1000) == tmp_path / "state" / "capbench"
    monkeypatch.setenv("XDG_STATE_HOME", "relative/state")  # invalid by the spec: ignored
    monkeypatch.setenv("HOME", str(tmp_path))
    assert owners.state_folder(1000) == tmp_path / ".local" / "state" / "capbench"
    monkeypatch.delenv("XDG_STATE_HOME")
    monkeypatch.delenv("HOME")  # then the passwd database's home
    nobody = pwd.getpwnam("nobody")
    assert owners.state_folder(nobody.pw_uid) == Path(nobody.pw_dir) / ".local" / "state" / "capbench"


# --- the results folder: links on the way ------------------------------------------------------


def test_a_link_of_this_user_or_root_is_followed(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "mine").symlink_to("real")
    assert owners.reach_folder(tmp_path / "mine" / "new", "--results") == tmp_path / "real" / "new"
    assert owners.reach_folder(tmp_path / "mine" / ".." / "x", "--results") == tmp_path / "x"


def test_a_link_of_another_user_is_refused_in_one_line(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "theirs").symlink_to("real")
    who = os.lstat(tmp_path / "theirs").st_uid
    follower = who + 1 if who else 1000  # the link is not the follower's (nor root's, unless made by root)
    if who == 0:
        # Root's links are trusted by every user; another user's are the point: make one as root.
        if os.geteuid() != 0:
            pytest.skip("needs a link owned by a user other than root and the follower")
        os.lchown(tmp_path / "theirs", 65534, 65534)
    with pytest.raises(UsageError) as e:
        owners.reach_folder(tmp_path / "theirs" / "results", "--results", euid=follower)
    assert str(e.value) == (f"--results {tmp_path}/theirs/results: {tmp_path}/theirs is a symbolic link of "
                            f"{owners._who(os.lstat(tmp_path / 'theirs').st_uid)}: capbench follows a link on the "
                            f"way to its results only if you or root made it; remove it, or give a folder of yours")


def test_a_loop_of_links_is_one_line(tmp_path):
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    with pytest.raises(UsageError, match="more than 40 symbolic links"):
        owners.reach_folder(tmp_path / "a", "--results")


def test_make_folder_makes_what_is_missing_and_never_goes_through_a_link(tmp_path):
    os.close(owners.make_folder(tmp_path / "a" / "b"))
    assert (tmp_path / "a" / "b").is_dir()
    (tmp_path / "c").symlink_to("a")  # put on the way after reach_folder looked
    with pytest.raises(OSError) as e:
        owners.make_folder(tmp_path / "c" / "b" / "new")
    # (O_NOFOLLOW with O_DIRECTORY fails ENOTDIR on a link)
    assert e.value.errno in (errno.ELOOP, errno.ENOTDIR) and not (tmp_path / "a" / "b" / "new").exists()


def test_a_state_folder_is_made_only_inside_a_folder_of_the_user(tmp_path):
    # A user's $HOME may not be theirs (nobody's /nonexistent; HOME left as root's): nothing is made.
    theirs = tmp_path / "home" / ".local" / "state" / owners.STATE_NAME
    with pytest.raises(UsageError, match=rf"cannot make {theirs} .*: {tmp_path} is not yours \(uid "):
        HostSettings(theirs, owner=os.geteuid() + 1).held()
    assert list(tmp_path.iterdir()) == []
    HostSettings(theirs).held()  # its own: made, 0700 above the folder
    assert oct((tmp_path / "home" / ".local").stat().st_mode & 0o777) == oct(0o700)


# --- the results folder is one the user who runs capbench may write in ----------------------------

REACH = """
from capbench import owners
from capbench.errors import UsageError
try:
    print(owners.reach_folder({path!r}, "--results"))
except UsageError as e:
    print(e)
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="a real uid other than the effective one needs root")
@pytest.mark.parametrize("mode, said", [(0o755, "--results {path}: you (uid 65534) may not make a folder in {at}: "
                                                 "give a folder of yours"),
                                        (0o777, "{path}")])
def test_a_results_folder_the_real_user_may_not_write_in_is_refused(mode, said):
    # The real uid another user's, the effective root's: every capability, as a granted run has.
    at = Path(tempfile.mkdtemp(prefix="cbreach-"))
    try:
        at.chmod(mode)
        path = at / "results" / "run"
        p = subprocess.run([sys.executable, "-c", REACH.format(path=str(path))], capture_output=True, text=True,
                           timeout=60, env=dict(os.environ, PYTHONPATH=PYTHON_DIR),
                           preexec_fn=lambda: os.setresuid(65534, 0, 0))
        assert p.returncode == 0, p.stderr
        assert p.stdout.strip() == said.format(path=path, at=at)
    finally:
        shutil.rmtree(at)
