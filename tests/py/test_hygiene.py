"""What run.json records of the system, and --tune's set-and-restore, on fake sysfs/procfs."""

import pytest
from capbench.testbed import hygiene
from capbench.testbed import host_sysctl
from capbench.owners import Holder, HostSettings


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
