"""A port's NIC knobs (nic-ring, nic-rx-usecs, nic-channels: testbed.nic.NIC_KNOBS) and its receive
IRQs without root: candidates from what drivers print (tests/py/fixtures/nic), the refusals in one
line with ethtool's own reason, /proc/interrupts and the IRQs' CPUs read from real layouts, and the
knobs in the tune's space, the campaign and the report. ethtool itself runs on a port only (the
e2e tests: tests/e2e/test_e2e_port_knobs.py); here its printed output stands in for it."""

from __future__ import annotations

from pathlib import Path

import pytest
from capbench.campaign import matrix as cmod
from capbench.campaign.results import RunWriter
from capbench.cli import run as run_cli
from capbench.cli import tune as tune_cli
from capbench.cli.parser import build_parser
from capbench.cli.testbed import rx_mode_of
from capbench.errors import UsageError
from capbench.owners import HostSettings
from capbench.report import keys
from capbench.report.load import Trial
from capbench.testbed import nic, ports
from capbench.testbed.veth_pair import Testbed as Bed
from capbench.tune import knobs, output, search
from records import make_result

FIX = Path(__file__).parent / "fixtures" / "nic"


def text(name: str) -> str:
    return (FIX / name).read_text()


# --- the receive IRQs and where they ran ---------------------------------------------------------


def fake_proc(tmp_path: Path, interrupts: str, affinity: str = "0-3") -> Path:
    """A /proc with `interrupts` and each numbered IRQ's smp_affinity_list."""
    (tmp_path / "interrupts").write_text(interrupts)
    for irq in nic.parse_interrupts(interrupts):
        d = tmp_path / "irq" / str(irq)
        d.mkdir(parents=True)
        (d / "smp_affinity_list").write_text(affinity + "\n")
    return tmp_path


def test_per_cpu_counts_of_real_layouts():
    virtio = nic.parse_interrupt_counts(text("virtio-proc-interrupts.txt"))
    assert virtio[38] == {0: 0, 1: 42376} and virtio[39] == {0: 31025, 1: 0}
    assert all(isinstance(i, int) for i in virtio)  # NMI, LOC, ERR ... are not IRQs of a device
    igb = nic.parse_interrupt_counts(text("igb-proc-interrupts.txt"))
    assert igb[122] == {0: 0, 1: 170554, 2: 0, 3: 0}
    # An offline CPU has no column: the header names the CPU of each.
    assert nic.parse_interrupt_counts("      CPU0   CPU2\n 40:  5  7  PCI-MSI 1-edge eth0-TxRx-0\n") == \
        {40: {0: 5, 2: 7}}


@pytest.mark.parametrize("ifname, driver, device, msi, rx", [
    ("eth1", "igb", "/sys/devices/pci0000:00/0000:02:00.0", set(), [121, 122, 123, 124]),  # TxRx; not the link IRQ
    ("eth2", "igb", "/sys/devices/pci0000:00/0000:02:00.1", set(), [126, 127]),  # rx vectors, not tx ones
])
def test_the_receive_irqs_of_igb(tmp_path, ifname, driver, device, msi, rx):
    proc = fake_proc(tmp_path, text("igb-proc-interrupts.txt"))
    found = nic.rx_irqs(nic.irqs(ifname, {"device": device, "msi_irqs": msi}, driver, proc))
    assert [e["irq"] for e in found] == rx
    assert {e["affinity"] for e in found} == {"0-3"}


def test_the_receive_irq_of_virtio_is_its_input_vector_among_its_msi_irqs(tmp_path):
    proc = fake_proc(tmp_path, text("virtio-proc-interrupts.txt"), "0-1")
    found = nic.irqs("eth0", {"device": "/sys/devices/pci0000:00/0000:00:03.0/virtio2", "msi_irqs": {37, 38, 39}},
                     "virtio_net", proc)
    assert [e["irq"] for e in found] == [38, 39]  # config left out
    assert [(e["irq"], e["queue"]) for e in nic.rx_irqs(found)] == [(38, 0)]  # output.0 transmits only


def test_a_device_without_queue_names_runs_its_receive_work_on_each_irq():
    one = [{"irq": 10, "name": "eth0", "queue": None}]
    assert nic.rx_irqs(one) == one


def test_where_the_receive_interrupts_ran(tmp_path):
    proc = fake_proc(tmp_path, text("igb-proc-interrupts.txt"))
    desc = {"irqs": nic.irqs("eth1", {"device": "/sys/devices/x/0000:02:00.0", "msi_irqs": set()}, "igb", proc)}
    before = nic.interrupt_counts(proc)
    after = {i: dict(c) for i, c in before.items()}
    after[122][1] += 5000  # queue 1 on CPU 1
    after[123][1] += 700  # queue 2, steered to CPU 1 too
    after[126][0] += 99  # eth2's: not eth1's
    after[124] = {0: 3, 1: 0, 2: 0, 3: 0}  # went down (freed and requested again): counts from 0
    assert nic.rx_interrupts(desc, before, after) == {"cpu0": 3, "cpu1": 5700}
    veth = {"irqs": nic.irqs("veth0", {}, "veth")}
    assert nic.rx_interrupts(veth, before, after).startswith("none: a veth has no IRQ")


def test_an_irq_s_cpus_are_a_declared_host_setting():
    s = nic.irq_affinity(121, 1)
    assert (s.path, s.value, s.at_least, s.kind) == ("/proc/irq/121/smp_affinity_list", "1", False, "file")
    assert nic.is_irq_affinity(s.path, "0-3,8") and nic.is_irq_affinity(s.path, "1")
    assert not nic.is_irq_affinity("/proc/irq/121/smp_affinity", "1")
    assert not nic.is_irq_affinity(s.path, "1\n2") and not nic.is_irq_affinity("/proc/irq/x/smp_affinity_list", "1")


def test_a_port_without_irqs_says_so_and_steers_nothing(tmp_path):
    tb = Bed(id="ptest1", gen_ns="a", cap_ns="b", gen_if="pa", cap_if="pb", gen_mac="", cap_mac="", rx_cpu=None,
                 rx_mode=ports.NIC_RX_MODE, ports=True)
    reason = nic.irqs("pb", {}, "veth")
    held = ports.StepSettings(tb, HostSettings(tmp_path), rx_irqs=reason)
    held.apply((), 1)
    assert held.irq_cpu is None and HostSettings(tmp_path).held() == {}
    assert held.no_irqs_line() == f"pb has no receive IRQ to steer ({reason}): --pin places the counter only"


# --- the NIC knobs -------------------------------------------------------------------------------------


@pytest.fixture
def ethtool_prints(monkeypatch):
    """ethtool's output as a driver prints it: {flag: (ok, text)} (-i always the driver's)."""
    printed: dict[str, tuple[bool, str]] = {}

    def run(ns, argv):
        if "--json" in argv:  # ethtool 6.1 has no JSON for -g/-l/-c
            return nic.Ran(False, "", "ethtool: bad command line argument(s)")
        ok, out = printed.get(argv[1], (False, "netlink error: Operation not supported"))
        return nic.Ran(ok, out if ok else "", "" if ok else out)

    monkeypatch.setattr(nic, "_run", run)
    return printed


def veth(printed):
    printed.update({"-i": (True, text("veth-ethtool-i.txt")), "-l": (True, text("veth-ethtool-l.txt")),
                    "-g": (False, text("veth-ethtool-g.err")), "-c": (False, text("veth-ethtool-c.err"))})


def test_candidates_from_what_the_driver_reports(ethtool_prints):
    ethtool_prints.update({"-i": (True, text("igb-i.txt")), "-g": (True, text("ring-4096-g.txt")),
                           "-c": (True, text("virtio-ethtool-c.txt")), "-l": (True, text("virtio-ethtool-l.txt"))})
    ring = nic.read_knob(None, "eth1", "nic-ring")
    assert (ring.param, ring.current, ring.maximum) == ("rx", 256, 4096)
    assert ring.candidates() == ("64", "128", "256", "512", "1024", "2048", "4096")
    usecs = nic.read_knob(None, "eth1", "nic-rx-usecs")
    assert (usecs.param, usecs.current, usecs.maximum) == ("rx-usecs", 0, None)
    assert usecs.candidates() == ("0", "8", "32", "128")
    channels = nic.read_knob(None, "eth1", "nic-channels")
    assert channels.param == "combined" and channels.candidates()[0] == "1"
    with pytest.raises(UsageError, match=r"knob nic-ring 8192: eth1's maximum is 4096 \(igb, ethtool -g\)"):
        ring.check("8192")
    ring.check("4096")


def test_a_maximum_that_is_no_power_of_two_is_a_candidate():
    k = nic.KnobReading(nic.NIC_KNOBS["nic-channels"], "eth1", "ixgbe", "combined", 6, 6)
    assert k.candidates() == ("1", "2", "4", "6")


def test_veth_has_rx_channels_and_refuses_the_rest_with_ethtool_s_reason(ethtool_prints):
    veth(ethtool_prints)
    channels = nic.read_knob("ns", "pb0", "nic-channels")
    assert (channels.param, channels.current, channels.maximum) == ("rx", 4, 4)  # no combined: rx
    assert channels.item("2") == nic.NicSetting("channels", "rx", "2")
    for name, flag in (("nic-ring", "-g"), ("nic-rx-usecs", "-c")):
        with pytest.raises(UsageError) as e:
            nic.read_knob("ns", "pb0", name)
        assert str(e.value).endswith(f"`ethtool {flag} pb0` says: netlink error: Operation not supported")
        assert "(veth)" in str(e.value)


@pytest.mark.parametrize("name, value, says", [
    ("nic-ring", "x", "whole number from 64"), ("nic-channels", "0", "from 1"), ("nic-rx-usecs", "-1", "from 0"),
    ("nic-ring", str(2**32), "to 4294967295"),
])
def test_a_knob_value_is_a_whole_number(name, value, says):
    with pytest.raises(UsageError, match=says):
        cmod.check_knob_value(name, value, ())


def test_the_tune_space_on_a_port_has_the_nic_knobs_the_driver_can_change(ethtool_prints):
    veth(ethtool_prints)
    space = {k.name: k for k in knobs.space("afp-v3", None, ("ns", "pb0"))}
    assert "nic-channels" in space and "nic-ring" not in space and "rx-ring" not in space  # rx-ring: the veth bed's
    k = space["nic-channels"]
    assert (k.scope, k.flag, k.default, k.candidates) == ("port", "ethtool -L rx", "4", ("1", "2", "4"))
    with pytest.raises(UsageError, match="ethtool -g pb0` says: netlink error"):
        knobs.space("afp-v3", ["nic-ring"], ("ns", "pb0"))


def test_a_nic_knob_on_the_veth_test_bed_is_one_line():
    with pytest.raises(UsageError, match=r"knob nic-ring sets a real port's receive ring \(ethtool -G\): the veth "
                                         r"test bed has none; give your ports"):
        knobs.space("afp-v3", ["nic-ring", "rx-ring"])
    assert all(k.scope != "port" for k in knobs.space("afp-v3"))


def test_a_campaign_varies_nic_knobs_as_any_knob():
    c = cmod.build({"backends": ["afp-v3"], "sizes": [64], "vary": {"nic-ring": ["512", "1024"]}}, [],
                   backends_known=("afp-v3",))
    steps = c.steps()
    assert [s.knobs for s in steps] == [(("nic-ring", "512"),), (("nic-ring", "1024"),)]
    assert ports.knob_values(s.knobs for s in steps) == {"nic-ring": ["512", "1024"]}
    assert steps[0].knob_args == ()  # not a capbench-cap option
    t = Trial(None, {"knobs": {"nic-ring": "512", "afp-v3:block-size": "1M", "pin": "A:B"}})
    assert keys._backend_knobs(t) == "nic-ring=512 block-size=1M"  # its own series in a report's tables


def test_a_value_the_driver_refuses_is_one_line_and_nothing_stays_held(ethtool_prints, tmp_path):
    veth(ethtool_prints)
    ethtool_prints["-L"] = (False, "netlink error: Invalid argument")
    # "lo" in this namespace: a link that exists (the registry reads and writes only those).
    tb = Bed(id="ptest2", gen_ns=None, cap_ns=None, gen_if="pa", cap_if="lo", gen_mac="", cap_mac="",
                 rx_cpu=None, rx_mode=ports.NIC_RX_MODE, ports=True)
    held = ports.StepSettings(tb, HostSettings(tmp_path), rx_irqs="none: test")
    with pytest.raises(UsageError) as e:
        held.apply((("nic-channels", "2"), ("pin", "A:A")), None)
    assert str(e.value) == "knob nic-channels 2: cannot set lo's rx channels to 2 (ethtool -L): netlink error: " \
                           "Invalid argument"
    assert HostSettings(tmp_path).held() == {}


def test_a_queue_s_rps_cpus_are_a_declared_host_setting_of_their_own_kind():
    s = nic.rps_setting("ns-b", "pb0", "rx-1", 5)
    assert (s.path, s.value, s.kind, s.key) == ("rps/ns-b/pb0/rx-1", "20", "rps", "pb0 rx-1 rps_cpus")
    assert nic.is_rps_setting(s.path, "0") and nic.is_rps_setting("rps//eth1/rx-0", "ff")
    assert not nic.is_rps_setting("rps//eth1/tx-0", "1") and not nic.is_rps_setting("rps//eth1/rx-0", "00000000,2")
    assert not nic.is_rps_setting("rps//eth1/../rx-0", "1") and not nic.is_rps_setting("rps//eth1/rx-0", "g")


def test_a_tune_on_ports_searches_the_nic_knobs_and_its_run_line_names_the_ports(ethtool_prints):
    veth(ethtool_prints)  # "lo": a link that exists here, with a veth's ethtool output
    args = build_parser().parse_args(["tune", "--backends", "afp-v3", "--gen-iface", "lo", "--cap-iface", "lo",
                                      "--link", "10g", "--knobs", "nic-channels"])
    t = tune_cli.tune_of(args)
    assert [k.name for k in t.spaces[0].knobs] == ["nic-channels"]
    assert t.spaces[0].configs == ({}, {"nic-channels": "1"}, {"nic-channels": "2"})  # 4: what it has now
    assert t.run_args == ("--gen-iface", "lo", "--cap-iface", "lo")
    t.results["afp-v3"] = search.Outcome(final_rung=2)  # as a search ends
    line = output.run_line(t, t.spaces[0], 1)
    assert line[-2:] == ["--vary", "nic-channels=1"] and line[line.index("--cap-iface") + 1] == "lo"
    assert 'vary = { "nic-channels" = ["1"] }' in output.matrix_toml(t.spaces[0], 1)


# --- the advice at a run's end, on ports ------------------------------------------------------------


def test_the_advice_on_a_port_names_the_nic_knobs_its_driver_showed_and_the_runs_ports():
    # virtio_net shows its ring (256 of 256), coalescing (rx-usecs) and combined channels; veth
    # refuses `ethtool -g` and `-c` and has rx/tx channels only.
    virtio = {"name": "eth2", "rings": nic.parse_max_current(text("virtio-ethtool-g.txt")),
              "channels": nic.parse_max_current(text("virtio-ethtool-l.txt")),
              "coalescing": nic.parse_coalesce(text("virtio-ethtool-c.txt"))}
    veth = {"name": "eth2", "rings": "ethtool -g: Operation not supported",
            "channels": nic.parse_max_current(text("veth-ethtool-l.txt")), "coalescing": "ethtool -c: not supported"}
    assert nic.knobs_described(virtio) == ("nic-ring", "nic-rx-usecs", "nic-channels")
    assert nic.knobs_described(veth) == ("nic-channels",)
    assert nic.knobs_described({}) == ()

    def missed(desc):  # 3,000 of 100,000 the NIC had no room for, by its own counter
        return make_result(backend="afp-v3", sent=100_000, received=97_000, delivered=97_000, ports=True,
                           rx_mode=ports.NIC_RX_MODE, nic=desc, nic_counters={"link.rx_missed_errors": 3_000},
                           step="iperf|afp-v3|64|pin=A:A|load=touch|procs=1|rep=1")

    port_args = ["--gen-iface", "eth1", "--cap-iface", "eth2", "--link", "10g"]
    (line,) = knobs.advice_lines([missed(virtio)], port_args)
    assert "the NIC layer lost 3,000 (the capture interface rx_missed_errors" in line
    assert line.endswith("capbench tune --backends afp-v3 --sizes 64 --gen-iface eth1 --cap-iface eth2 --link 10g "
                         "--knobs nic-ring,nic-rx-usecs,nic-channels"), line
    (line,) = knobs.advice_lines([missed(veth)], port_args)
    assert line.endswith("--knobs nic-channels"), line
    assert knobs.advice_lines([missed({})], port_args) == []  # no knob the driver showed governs the NIC


def run_folder(path: Path, command: list[str], testbed: dict) -> Path:
    """A results folder whose run.json holds `command` and `testbed`, as a run writes them."""
    w = RunWriter.create(path, {}, command=command)
    w.meta["testbed"] = testbed
    w.finish("interrupted")
    return w.path


def test_a_resumed_run_on_ports_takes_its_receive_model_and_ports_from_the_command_that_started_it(tmp_path):
    # The test bed of a run on ports records the NIC's model ("nic"), which is no --rx-mode.
    command = ["capbench", "run", "--gen-iface", "eth1", "--cap-iface", "eth2", "--rx-mode", "rps"]
    on_ports = run_folder(tmp_path / "ports", command, {"rx_mode": ports.NIC_RX_MODE, "ports": True})
    started = run_cli.started_args(build_parser().parse_args(["run", "--resume", str(on_ports)]), on_ports)
    assert (started.gen_iface, started.cap_iface) == ("eth1", "eth2")
    assert rx_mode_of(started, on_ports)[0] == "rps"
    assert run_cli.port_args(started) == ("--gen-iface", "eth1", "--cap-iface", "eth2")
    # on the test bed the resumed run's own model, whatever the flags say
    bed = run_folder(tmp_path / "bed", ["capbench", "run"], {"rx_mode": "napi", "ports": False})
    assert rx_mode_of(build_parser().parse_args(["run"]), bed)[0] == "napi"
    assert run_cli.port_args(build_parser().parse_args(["run"])) == ()
