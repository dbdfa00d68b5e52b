"""A root `capbench run` of a capture program on a shared host (issue 27, items 2 and 4), end to
end: another user (made here with useradd) who plants symbolic links and FIFOs at every path of
the trial's scratch folders they can guess achieves nothing, and a program that prints without
bound leaves capbench's memory under its bound."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import textwrap
import time
from pathlib import Path

import pytest
from capbench.trial.measure import SCRATCH_PREFIX

from e2e_env import (assert_run_measured, capbench_cmd, decided_trials, capbench_env, missing_prerequisite, second_user,
                     unprotected_links)

pytestmark = pytest.mark.skipif(missing_prerequisite() is not None, reason=str(missing_prerequisite()))

VICTIM_TEXT = "a root-owned file nobody may change\n"
RUN_TIMEOUT_S = 240
PYTHON = "/usr/bin/python3"  # the system's, which any user may run (the test's may be in /root)
# capbench's resident memory while a program floods it: the interpreter and its modules (about
# 30 MiB for a run without its report) and at most testbed/procs.OUTPUT_MAX_BYTES (4.25 MiB of
# characters, a few times that as Python objects) of each program's output. Measured: 34 MiB; the
# code before the bound went past 1 GiB within the first flood's trial.
RSS_BOUND_KIB = 96 * 1024

# Every ~2 ms: each file and folder of a tcpdump trial capbench's pid's scratch folders may hold
# (a side's folder, its capture file, its outdir and a file: count in it, a profile's data) made a
# symbolic link to the victim, or a FIFO; what it managed is printed at SIGTERM.
WATCHER = textwrap.dedent("""
    import glob, json, os, signal, sys, time
    victim, prefix = sys.argv[1], sys.argv[2]
    files = ["tcpdump-0.pcap", "tcpdump-0.d", "tcpdump-0.d/eve.json", "tcpdump-0.d/stats.log",
             "tcpdump-1.pcap", "tcpdump-1.d", "perf.data", "perf.ctl", "perf.ack"]
    # The dry start's files are in its folder, a trial's in its side's (0, 1, ...).
    names = ["0", "1"] + [side + name for side in ("", "0/", "1/") for name in files]
    stop, planted, refused, folders, rounds = [], [], set(), set(), 0
    signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
    while not stop:
        for d in glob.glob(prefix + "*"):
            folders.add(d)
            for n in names:
                p = os.path.join(d, n)
                try:
                    os.symlink(victim, p) if rounds % 2 else os.mkfifo(p)
                    planted.append(p)
                except OSError as e:
                    refused.add(e.strerror)
        rounds += 1
        time.sleep(0.002)
    print(json.dumps({"planted": planted, "refused": sorted(refused), "folders": sorted(folders), "rounds": rounds}))
""")


@pytest.fixture
def other_user():
    """A second, unprivileged user (cbsc...), removed with its home whatever happens."""
    with second_user("cbsc") as pw:
        yield pw.pw_name


@pytest.fixture
def unprotected():
    """The kernel's link protections off (e2e_env.unprotected_links), put back after."""
    with unprotected_links():
        yield


def as_user(name: str, argv: list[str]) -> list[str]:
    return ["setpriv", f"--reuid={name}", f"--regid={name}", "--init-groups", "--reset-env", *argv]


def rss_kib(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def run_sampled(args: list[str], during=None) -> tuple[subprocess.CompletedProcess, int]:
    """`capbench ARGS` as root; its result and its peak resident memory (KiB), sampled every 20 ms.
    `during(pid)` runs as soon as it has started, and returns a function called once it has ended."""
    proc = subprocess.Popen(capbench_cmd(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=capbench_env(), stdin=subprocess.DEVNULL)
    after = during(proc.pid) if during else None
    peak, deadline = 0, time.monotonic() + RUN_TIMEOUT_S
    out = err = ""
    try:
        while proc.poll() is None:
            assert time.monotonic() < deadline, "capbench run did not finish"
            peak = max(peak, rss_kib(proc.pid) or 0)
            time.sleep(0.02)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if after:
            after()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), peak


def test_a_watcher_planting_links_and_fifos_in_the_scratch_folders_achieves_nothing(tmp_path, other_user,
                                                                                    unprotected):
    victim = tmp_path / "victim.conf"
    victim.write_text(VICTIM_TEXT)
    victim.chmod(0o644)  # the watcher cannot reach it (tmp_path is root's), but a link to it needs no access
    before = victim.stat()
    watcher: dict = {}

    def watch(pid: int):
        w = subprocess.Popen(as_user(other_user, [PYTHON, "-c", WATCHER, str(victim),
                                                  f"/tmp/{SCRATCH_PREFIX}{pid}-"]),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

        def stop():
            w.send_signal(signal.SIGTERM)
            out, err = w.communicate(timeout=30)
            assert w.returncode == 0, err
            watcher.update(json.loads(out))
        return stop

    p, _ = run_sampled(["run", "--backends", "tcpdump", "--sizes", "64", "--duration", "0.5", "--no-report",
                        "--results", str(tmp_path / "r")], during=watch)
    # It looked into the run's scratch folders (the dry start's and the trial's) all along, and
    # planted nothing in them: they are root's, 0700 (0711 while tcpdump, as user tcpdump, needs
    # to reach its own file).
    assert len(watcher["folders"]) >= 2 and watcher["rounds"] > 100, watcher
    assert watcher["planted"] == [], watcher
    # (a folder may go between the glob and the plant; a name capbench made is there already)
    assert "Permission denied" in watcher["refused"] and set(watcher["refused"]) <= {
        "Permission denied", "No such file or directory", "File exists"}, watcher
    after = victim.stat()
    assert victim.read_text() == VICTIM_TEXT
    assert (after.st_uid, after.st_gid, after.st_mode, after.st_mtime_ns) == \
        (before.st_uid, before.st_gid, before.st_mode, before.st_mtime_ns)
    # The run is unaffected: tcpdump's trial has both witnesses and no failure.
    assert_run_measured(p)
    (trials,) = (tmp_path / "r").glob("*/trials.jsonl")
    (record,) = decided_trials(trials)  # a trial the host disturbed is run again
    assert record["backend"] == "tcpdump" and not record["failure"], record["failure"]
    assert record["file_frames"] and record["app_counts"]["captured"] == record["file_frames"]


FLOODS = {
    # Lines as fast as a pipe takes them, on stdout.
    "flood-lines": 'yes "$1"',
    # No line end at all, on stderr.
    "flood-noeol": "cat /dev/zero >&2",
}


def flood_adapters(tmp_path: Path) -> Path:
    text = []
    for name, body in FLOODS.items():
        script = tmp_path / f"{name}.sh"
        # Both programs stop with status 0 on SIGINT (sh runs its trap once its child has ended).
        script.write_text(f"#!/bin/sh\ntrap 'exit 0' INT TERM\n{body}\n")
        script.chmod(0o755)
        text.append(f'[{name}]\ncommand = "{script} {{iface}}"\nready = {{ delay_s = 0.5 }}\n'
                    f'[{name}.counts.captured]\nsource = "stdout"\npattern = \'^(\\d+) frames\'\nrequired = false\n'
                    f'absent_means_zero = true\nmeaning = "nothing: it floods"\n')
    path = tmp_path / "floods.toml"
    path.write_text("\n".join(text))
    return path


def test_a_program_that_floods_capbench_leaves_its_memory_under_the_bound(tmp_path):
    p, peak = run_sampled(["run", "--apps-file", str(flood_adapters(tmp_path)), "--backends", ",".join(FLOODS),
                           "--sizes", "64", "--duration", "3", "--no-report", "--results", str(tmp_path / "r")])
    assert p.returncode in (0, 1, 3, 4), p.stderr  # 4: the host disturbed the floods' trials
    (trials,) = (tmp_path / "r").glob("*/trials.jsonl")
    records = {r["backend"]: r for r in decided_trials(trials)}
    assert set(records) == set(FLOODS), p.stderr
    print(f"capbench's peak RSS during the floods: {peak / 1024:.1f} MiB (bound {RSS_BOUND_KIB / 1024:.0f} MiB)")
    assert 0 < peak < RSS_BOUND_KIB, f"{peak / 1024:.1f} MiB"
    # capbench read the floods (their tails are in the records), and kept only the tail, each line cut.
    lines = records["flood-lines"]["raw"]["programs"][0]
    assert lines["stdout_tail"] and all(line == lines["argv"][-1] for line in lines["stdout_tail"]), lines
    zeros = records["flood-noeol"]["raw"]["programs"][0]
    assert [len(line) for line in zeros["stderr_tail"]] == [1024], zeros["stderr_tail"]
    assert all(len(json.dumps(r)) < 64 * 1024 for r in records.values())


FIFO_MAKER = textwrap.dedent("""
    import os, signal, sys
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGINT])
    os.mkfifo(os.path.join(sys.argv[1], "eve.json"))
    print("listening", file=sys.stderr, flush=True)
    signal.sigwait([signal.SIGINT])
""")


def test_a_fifo_at_a_file_count_fails_the_run_in_one_line_at_once(tmp_path):
    # The program itself leaves a FIFO where its adapter's count reads (a program that drops to
    # another user owns its {outdir}; no one else can reach it): capbench neither waits on it nor
    # reads it, and says so.
    script = tmp_path / "fifo.py"
    script.write_text(FIFO_MAKER)
    adapters = tmp_path / "fifo.toml"
    adapters.write_text(f'[fifo]\ncommand = "{PYTHON} {script} {{outdir}} {{iface}}"\n'
                        'ready = { pattern = "listening" }\n'
                        '[fifo.counts.captured]\nsource = "file:{outdir}/eve.json"\njson_path = "stats.pkts"\n'
                        'meaning = "m"\n')
    t0 = time.monotonic()
    p, _ = run_sampled(["run", "--apps-file", str(adapters), "--backends", "fifo", "--sizes", "64", "--duration", "1",
                        "--no-report", "--results", str(tmp_path / "r")])
    assert time.monotonic() - t0 < 120
    # After the run's own lines (the campaign, the test bed), one error line, exit status 2.
    errors = [line for line in p.stderr.splitlines() if line.startswith("capbench: ")]
    assert p.returncode == 2 and errors == p.stderr.splitlines()[-1:], p.stderr
    assert "failed its dry start" in errors[0] and \
        "count 'captured' reads {outdir}/eve.json, which capbench did not read: it is a FIFO" in errors[0]
