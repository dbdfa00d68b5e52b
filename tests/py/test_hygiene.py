"""What run.json records of the system, --tune's set-and-restore, on fake sysfs/procfs, and what a killed
capbench left behind, on fake cgroup and /tmp trees."""

import os
import tempfile
from pathlib import Path

import pytest
from capbench.testbed import cgroups
from capbench.testbed import hygiene
from capbench.testbed import host_sysctl
from capbench.owners import Holder, HostSettings, process_start_ticks


@pytest.fixture
def fake_system(tmp_path, monkeypatch):
    proc = tmp_path / "proc_sys"
    for key, value in ((host_sysctl.BACKLOG, "1000"), ("net.core.rmem_max", "212992")):
        f = proc / key.replace(".", "/")
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(value + "\n")
    monkeypatch.setattr(host_sysctl, "PROC_SYS", proc)
    govs = []
    for cpu in (0, 1):
        g = tmp_path / f"cpu{cpu}" / "cpufreq" / "scaling_governor"
        g.parent.mkdir(parents=True)
        g.write_text("powersave\n")
        govs.append(g)
    monkeypatch.setattr(hygiene, "GOVERNORS", str(tmp_path / "cpu*" / "cpufreq" / "scaling_governor"))
    return proc, govs


def test_tune_then_restore(fake_system, tmp_path):
    proc, govs = fake_system
    registry, me = HostSettings(tmp_path / "run"), Holder.of_this_process("aaaaaa")
    records = [registry.hold(me, s) for s in hygiene.tuned_settings()]
    assert [r["set"] for r in records] == ["performance", "performance", "10000", str(64 << 20)]
    assert [g.read_text().strip() for g in govs] == ["performance", "performance"]
    assert host_sysctl.read(host_sysctl.BACKLOG) == "10000"
    assert host_sysctl.read("net.core.rmem_max") == str(64 << 20)
    assert hygiene.governors() == {"0": "performance", "1": "performance"}
    registry.release(me.id)
    assert [g.read_text().strip() for g in govs] == ["powersave", "powersave"]
    assert host_sysctl.read(host_sysctl.BACKLOG) == "1000"
    assert host_sysctl.read("net.core.rmem_max") == "212992"


def test_snapshot_without_cpufreq(tmp_path, monkeypatch):
    monkeypatch.setattr(hygiene, "GOVERNORS", str(tmp_path / "none*"))
    snap = hygiene.snapshot()
    assert "not exposed" in snap["cpu_governors"] and host_sysctl.BACKLOG in snap["sysctls"]


def test_quiet_repetitions_warn_nothing():
    assert hygiene.noisy([("a", [100.0, 101.0, 99.0]), ("b", [5.0])]) == []


def test_irq_time_accounting_names_how_the_kernel_load_is_measured():
    assert hygiene.irq_time_accounting("CONFIG_IRQ_TIME_ACCOUNTING=y\nCONFIG_HZ=250\n").startswith("exact")
    sampled = hygiene.irq_time_accounting("# CONFIG_IRQ_TIME_ACCOUNTING is not set\nCONFIG_HZ=250\n")
    assert sampled.startswith("sampled at every 4 ms timer tick") and "may read 0" in sampled
    assert hygiene.irq_time_accounting(None).startswith("unknown")


def test_snapshot_records_this_kernels_irq_time_accounting():
    # This host's kernel says one way or the other (or that it cannot be read): never missing.
    assert hygiene.snapshot()["irq_time_accounting"].split()[0] in ("exact", "sampled", "unknown")


def test_snapshot_records_how_the_programs_are_held():
    # Their cgroup, or the fallback and why (no root and no delegated subtree, say).
    held = hygiene.snapshot()["programs_held_by"]
    group = cgroups.run_group()
    assert held.startswith(f"cgroup v2 {group.path} ") if group is not None else held.startswith(cgroups.FALLBACK + " (")


def test_tune_interface_turns_merging_offloads_off(monkeypatch):
    ran = []
    monkeypatch.setattr(hygiene, "offloads", lambda ns, ifname: {
        "generic-receive-offload": "on", "rx-gro-list": "off", "large-receive-offload": "off [fixed]"})
    monkeypatch.setattr(hygiene.netns, "sh", lambda ns, cmd: ran.append((ns, cmd)) or "")
    done = hygiene.tune_interface("ns1", "eth9")
    assert done == {"generic-receive-offload": "turned off", "rx-gro-list": "off already"}
    assert ran == [("ns1", "ethtool -K eth9 gro off")]
    monkeypatch.setattr(hygiene, "offloads", lambda ns, ifname: "ethtool not installed (apt-get install ethtool)")
    assert hygiene.tune_interface("ns1", "eth9") == {"offloads": "ethtool not installed (apt-get install ethtool)"}


# --- what a killed capbench left behind


def test_stale_run_groups_are_those_of_capbench_processes_that_no_longer_run(tmp_path):
    """A run group is found wherever it is in the hierarchy (under whatever cgroup capbench ran
    in); its owner is the pid, start time and pid namespace in its name, so a reused pid does not
    keep it."""
    me, my_ticks = os.getpid(), process_start_ticks(os.getpid())
    live = tmp_path / "user.slice" / cgroups.run_group_name(me, my_ticks)
    reused = tmp_path / "user.slice" / "session-1.scope" / cgroups.run_group_name(me, my_ticks + 1)
    dead = tmp_path / cgroups.run_group_name(2**22 + 1, 5)  # above the kernel's pid_max limit: no such process
    # A dead-looking owner in another pid namespace (a container's, sharing the hierarchy): not ours to judge.
    elsewhere = tmp_path / cgroups.run_group_name(2**22 + 1, 5, cgroups.pid_namespace() + 1)
    for d in (live / "1-tcpdump", reused / "2-tcpdump" / "inner", dead, elsewhere, tmp_path / "capbench-x",
              tmp_path / "other"):
        d.mkdir(parents=True)
    (live / "1-tcpdump" / cgroups.run_group_name(2**22 + 2, 1)).mkdir()  # inside a run group: its programs'
    found = hygiene.stale_run_groups(tmp_path)
    assert sorted((g.path, pid) for g, pid in found) == sorted([(reused, me), (dead, 2**22 + 1)])
    assert hygiene.stale_run_groups(None) == []  # no cgroup v2 mounted


def test_folders_of_a_capbench_by_its_pid(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    me, gone = os.getpid(), 2**22 + 1
    mine, killed, ssh_killed = (tmp_path / f"capbench-trial-{me}-ab", tmp_path / f"capbench-trial-{gone}-cd",
                                tmp_path / f"capbench-ssh-{gone}-ef")
    for d in (mine, killed, ssh_killed, tmp_path / "capbench-trial-x-1", tmp_path / "capbench-ssh-abcdefgh"):
        d.mkdir()
    (tmp_path / f"capbench-trial-{gone}-file").write_text("")  # not a folder
    (tmp_path / f"capbench-trial-{gone}-link").symlink_to(tmp_path / "capbench-trial-x-1")  # a plant
    assert hygiene.folders_of("capbench-trial-") == [killed]  # of every capbench that no longer runs
    assert hygiene.folders_of("capbench-trial-", me) == [mine]
    assert hygiene.folders_of("capbench-ssh-", gone) == [ssh_killed]


def test_what_a_run_group_holds_is_named_by_command_line(tmp_path):
    group = cgroups.Group(tmp_path / cgroups.run_group_name(2**22 + 1, 5))
    (group.path / "1-tcpdump").mkdir(parents=True)
    assert hygiene.left_running(group, 2**22 + 1) == ""  # nothing runs: nothing to say
    (group.path / "1-tcpdump" / "cgroup.procs").write_text(f"{os.getpid()}\n")
    me = " ".join(Path("/proc/self/cmdline").read_text().rstrip("\0").split("\0"))
    assert hygiene.left_running(group, 2**22 + 1) == f"1 process(es) of capbench pid {2**22 + 1}, which no longer runs: {me}"
    assert hygiene.left_running(group, 7, gone=False) == f"1 process(es) of capbench pid 7: {me}"
