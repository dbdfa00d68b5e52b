"""Issue 16, item 4: a stop is bounded in every backend. Under a sustained overload the rings never
empty, so a read loop that drained until empty would never return; each loop looks at the stop flag
before every packet and drains within a budget (cap.h: CAP_DRAIN_FRAMES, CAP_DRAIN_NS). On a real veth
test bed: the generator sends unpaced while a counter slowed to ~20 kpps reads, SIGTERM stops the
counter, and it must end in time with its summary, its counts adding up.

Issue 27, item 3: every process a trial starts ends with it. A capture program, what it starts and
its adapter's post command run in cgroups of capbench (testbed.cgroups): a child that ignores every
signal is killed after the program's grace, a post command's background child when it exits, and
the programs of a SIGKILLed capbench (tcpdump changed its user, so the kernel dropped its parent-
death signal) by the next run and by `capbench testbed down`."""

from __future__ import annotations

import glob
import json
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from capbench import declared
from capbench.declared import backend_names, names_where
from capbench.owners import process_start_ticks
from capbench.testbed import cgroups
from capbench.testbed.procs import ChildSet

from e2e_env import decided_trials, assert_ended_measured, assert_run_measured, as_nobody_argv, capbench_cmd, capbench_env, capbench_namespaces, run_capbench, start_run

BACKENDS = backend_names()
KERNEL_COUNTER_BACKENDS = names_where(lambda b: b.kernel_counter)

# 50 us of work per frame: the counter reads ~20 kpps while the afpacket engine sends ~0.5 Mpps,
# so every ring is full at the stop and stays full while the counter drains.
SPIN = "spin:50000"
OVERLOAD_S = 1.2  # enough to fill the largest default ring (afp-v3: 32 MiB) at that rate
# The drain's budget is 250 ms (cap.h); after it come the join, the last statistics, the summary and
# close() (afxdp: detaching the program, deleting the socket and UMEM). Measured here on 2 vCPUs, the
# generator spinning on one and the counter on the other, in 9 runs of every backend while other test
# suites kept the load average at 4-6: 0.29-0.35 s, raw up to 0.45 s, xdp (no drain) 0.03-0.07 s. A stop
# that drained until empty never ends here (the counter is killed after 10 s). The bound is the issue's
# 1 s plus that worst case, for a vCPU stall of the kind the other e2e tests allow for.
STOP_BOUND_S = 1.5


def start_counter(kids: ChildSet, binaries, tb, backend: str):
    argv = [str(binaries.cap), "--iface", tb.cap_if, "--backend", backend, "--cpu", "1"]
    if backend not in KERNEL_COUNTER_BACKENDS:
        argv += ["--app-load", SPIN]
    cap = kids.start("capbench-cap", argv, netns_name=tb.cap_ns)
    cap.wait_for("ready", 10)
    return cap


def not_read(backend: str, s: dict) -> int:
    """Frames the kernel handed to the counter's socket or rings that it did not read: what was left
    in the ring at the stop (the application layer's share in capbench's accounting)."""
    k = s["kernel"]
    if declared.backend(backend).xsk_stats:  # kernel.packets: the frames the program redirected to the socket
        return k["packets"] - k["rx_dropped"] - k["rx_ring_full"] - s["packets"]
    return k["packets"] - k["drops"] - s["packets"]  # PACKET_STATISTICS (libpcap: ps_recv, ps_drop)


@pytest.mark.parametrize("backend", BACKENDS)
def test_sigterm_under_sustained_overload_ends_in_time_with_a_summary(binaries, tb, backend):
    with ChildSet() as kids:
        cap = start_counter(kids, binaries, tb, backend)
        gen = kids.start("capbench-gen", [str(binaries.gen), "--iface", tb.gen_if, "--engine", "afpacket",
                                          "--rate", "max", "--duration", "30", "--cpu", "0", "--trailer", "0",
                                          "--dst-mac", tb.dst_mac], netns_name=tb.gen_ns)
        gen.wait_for("interval", 10)
        time.sleep(OVERLOAD_S)
        assert cap.running and gen.running, (cap.stderr_lines, gen.stderr_lines)
        t0 = time.monotonic()
        cap.signal(signal.SIGTERM)
        rc = cap.stop(timeout_s=10.0, signalled=True)
        took_s = time.monotonic() - t0
        assert gen.running  # the overload lasted until the counter had stopped
        gen.stop()
        sent = gen.summary()["sent"]
    assert rc == 0, cap.stderr_lines
    assert took_s < STOP_BOUND_S, f"{backend} took {took_s:.3f} s to stop"
    s = cap.summary()
    print(f"{backend}: stopped in {took_s:.3f} s; packets {s['packets']}, kernel {s['kernel']}")
    assert s["backend"] == backend
    assert s["packets"] >= s["received"] + s["foreign"] > 0
    if backend in KERNEL_COUNTER_BACKENDS:
        # The ceiling counts in its XDP program: no ring, nothing to drain. Its statistics are read
        # once more after the read loop ended, while the traffic goes on.
        assert s["drained"] is True
        assert s["packets"] <= s["xdp"]["packets"] and s["received"] <= s["delivered"] <= sent
        return
    # The counter could not keep up: the kernel dropped, and the drain ended on its budget with
    # frames left in the ring, which the kernel counted as queued and the counter did not read.
    assert s["kernel_drops"] > 0 and s["drained"] is False, s
    left = not_read(backend, s)
    assert left > 0, s
    # Every frame that reached the socket is somewhere: read, dropped by the kernel, or left unread;
    # none of them is a frame the generator did not send.
    assert s["packets"] + s["kernel_drops"] + left <= sent + s["foreign"]
    # The sequence numbers agree with what was read: one stream, each number read once or lost.
    assert s["received"] + s["lost"] == s["max_seq"] + 1 and s["duplicates"] == 0, s


# --- nothing outlives a trial (issue 27, item 3)

needs_cgroups = pytest.mark.skipif(cgroups.run_group() is None, reason=f"here capbench holds its programs with "
                                   f"{cgroups.containment()}")


def pids_of(pattern: str) -> list[int]:
    """The processes whose command line `pattern` (pgrep -f) finds."""
    out = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def wait_for_pids(pattern: str, timeout_s: float) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while not (found := pids_of(pattern)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return found


def uid_of(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except FileNotFoundError:
        return None


def last_line(p: subprocess.CompletedProcess) -> str:
    return (p.stderr.strip().splitlines() or ["(no stderr)"])[-1]


@needs_cgroups
@pytest.mark.parametrize("ended_by", ["next run", "testbed down", "testbed down ID"])
def test_the_programs_of_a_killed_capbench_are_ended_by_the_next_run_and_testbed_down(tmp_path, ended_by):
    proc, tb_id = start_run(tmp_path / "killed", "--backends", "tcpdump", "--sizes", "64", "--duration", "3",
                            "--no-report")
    try:
        # The trial's tcpdump (its file in the trial's folder, not the dry start's), while the generator sends.
        trial_tcpdump = f"tcpdump -i cb{tb_id}c .*capbench-trial-{proc.pid}-"
        assert wait_for_pids(f"capbench-gen .*--iface cb{tb_id}g", 60), "the trial never sent"
        (tcpdump,) = pids_of(trial_tcpdump)
        os.kill(proc.pid, signal.SIGKILL)  # capbench alone: no finally, no atexit
        proc.wait()
        time.sleep(0.5)
        # tcpdump outlives it: it changed its user (-Z), so the kernel dropped its parent-death signal.
        assert process_start_ticks(tcpdump) is not None and uid_of(tcpdump) != 0, "tcpdump should outlive capbench"
        if ended_by == "next run":
            p = run_capbench("run", "--backends", "pcap", "--sizes", "64", "--duration", "1", "--no-report",
                             "--results", str(tmp_path / "next"), timeout=300)
            assert_run_measured(p)
            out = p.stderr
        else:
            status = run_capbench("testbed", "status").stdout
            assert f"of capbench pid {proc.pid}, which no longer runs: tcpdump -i cb{tb_id}c" in status, status
            p = run_capbench("testbed", "down", *([tb_id] if ended_by == "testbed down ID" else []))
            assert p.returncode == 0, p.stderr
            out = p.stdout
        assert f"of capbench pid {proc.pid}, which no longer runs: tcpdump -i cb{tb_id}c" in out, out
        assert process_start_ticks(tcpdump) is None and pids_of(f"tcpdump -i cb{tb_id}c") == []
        assert not [g for g, pid, _ in cgroups.run_groups(cgroups.hierarchy_root()) if pid == proc.pid]
        if ended_by != "next run":  # the killed run's folders go with it
            assert f"removed the trial folder /tmp/capbench-trial-{proc.pid}-" in out, out
            assert glob.glob(f"/tmp/capbench-trial-{proc.pid}-*") == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        run_capbench("testbed", "down", tb_id)
        for pid in pids_of(f"tcpdump -i cb{tb_id}c"):
            os.kill(pid, signal.SIGKILL)
    assert not {f"capbench-{tb_id}-gen", f"capbench-{tb_id}-cap"} & capbench_namespaces()


def stubborn_adapter(tmp_path: Path, program_child: str, post_child: str) -> Path:
    """tcpdump started by a shell that first starts `program_child` in the background, deaf to SIGTERM
    (and to SIGINT, as every background job of a shell without job control): it outlives tcpdump's
    stop. Its post command starts `post_child` and prints the capture interface's index, which only
    the capture namespace has."""
    path = tmp_path / "stubborn.toml"
    path.write_text(f"""
[stubborn]
command = "sh -c 'trap \\"\\" TERM; {program_child} & exec tcpdump -i {{iface}} -n -p -w {{out}}'"
summary = "tcpdump with a child that ignores SIGTERM"
stop = {{ signal = "SIGINT", grace_s = 1 }}
ready = {{ pattern = "listening on", stream = "stderr", delay_s = 0.1 }}
settle_s = 0.5
file_format = "pcap"
post = "sh -c '{post_child} & ip -o link show dev {{iface}} | cut -d: -f1'"
[stubborn.counts.captured]
source = "stderr"
pattern = '^(\\d+) packets? captured'
meaning = "frames tcpdump wrote"
[stubborn.counts.ifindex]
source = "post"
pattern = '^(\\d+)$'
meaning = "the capture interface's index, as the post command saw it"
""")
    return path


def most_alive_at_once(proc: subprocess.Popen, patterns: list[str], timeout_s: float) -> list[int]:
    """For each pattern, the most processes whose whole command line it is (pgrep -f '^…$', every
    50 ms) while `proc` ran: not the shell that starts one (`sh -c 'sleep … & ip …'` holds the
    pattern too while it runs, a few ms, which a poll caught once)."""
    most = [0] * len(patterns)
    deadline = time.monotonic() + timeout_s
    while proc.poll() is None and time.monotonic() < deadline:
        most = [max(m, len(pids_of(f"^{p}$"))) for m, p in zip(most, patterns)]
        time.sleep(0.05)
    return most


@needs_cgroups
def test_a_program_child_that_ignores_sigterm_and_a_post_command_child_leave_nothing(tmp_path):
    """Three starts of the program (its dry start and two trials), each leaving a child that ignores
    SIGTERM and SIGINT, and three post commands that leave a child: each is gone before the next
    start. (The test bed's namespaces end them all with the run, so only their number at once during
    the run tells whether each trial ended its own.)"""
    mark = secrets.randbelow(10**6)
    program_child, post_child = f"sleep 7770{mark}", f"sleep 7771{mark}"  # unique to this test
    results = tmp_path / "r"
    proc = subprocess.Popen(capbench_cmd("run", "--apps-file", str(stubborn_adapter(tmp_path, program_child, post_child)),
                                         "--backends", "stubborn", "--sizes", "64,128", "--rate", "10kpps", "--link",
                                         "10g", "--duration", "1", "--no-report", "--results", str(results)),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=capbench_env())
    try:
        most = most_alive_at_once(proc, [program_child, post_child], 300)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert_ended_measured(proc, "", err)
    assert most[0] == 1 and most[1] <= 1, most
    (d,) = [x for x in results.iterdir() if x.is_dir()]
    trials = decided_trials(d / "trials.jsonl")
    assert len(trials) == 2
    for trial in trials:
        (prog,) = trial["raw"]["programs"]
        assert not trial["failure"], trial["failure"]
        assert prog["processes"] == 2, prog  # tcpdump and its stubborn child, during the load
        assert not prog["killed"]  # tcpdump stopped on its signal: its child was killed after the grace
        # The post command ran in the capture namespace: the capture interface exists there only.
        assert trial["app_counts"]["ifindex"] > 0, trial["app_counts"]
    assert pids_of(program_child) == [] and pids_of(post_child) == []


def test_without_a_writable_cgroup_capbench_falls_back_and_says_why():
    """A user who may not make a cgroup (no root, no delegated subtree): the programs still start,
    held by their process group and parent-death signal, and run.json's line says so and why."""
    code = ("from capbench.testbed import cgroups, procs\n"
            "print(procs.Child('true', ['true']).wait(10))\n"
            "print(cgroups.containment())\n")
    p = subprocess.run(as_nobody_argv([sys.executable, "-c", code]), capture_output=True, text=True,
                       env=capbench_env(), timeout=60, cwd="/")
    assert p.returncode == 0, p.stderr
    status, held = p.stdout.splitlines()
    assert status == "0"
    assert held.startswith(cgroups.FALLBACK + " (cannot make a cgroup in ") and "Permission denied" in held, held
