"""capbench.testbed.nic without root: real ethtool and ip outputs (tests/py/fixtures/nic, where
each comes from), the --nic-set grammar and its errors, the ethtool kind of held host setting,
and the send checks against a fake route table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from capbench import owners
from capbench.errors import RunError, UsageError
from capbench.owners import Holder, HostSettings, Setting
from capbench.testbed import nic
from capbench.testbed.nic import NicSetting

FIX = Path(__file__).parent / "fixtures" / "nic"


def text(name: str) -> str:
    return (FIX / name).read_text()


# --- parsing --------------------------------------------------------------------------------


def test_info_of_veth_and_of_a_real_nic():
    veth = nic.parse_info(text("veth-ethtool-i.txt"))
    assert veth["driver"] == "veth" and veth["firmware-version"] == "" and veth["bus-info"] == ""
    igb = nic.parse_info(text("igb-i.txt"))
    assert (igb["driver"], igb["firmware-version"], igb["bus-info"]) == ("igb", "1.61, 0x8000090e", "0000:02:00.0")


def test_channels_of_veth_have_rx_and_tx_but_no_combined():
    ch = nic.parse_max_current(text("veth-ethtool-l.txt"))
    assert ch["max"] == {"rx": 4, "tx": 4, "other": None, "combined": None}
    assert ch["current"]["rx"] == 4


def test_rings_of_virtio_and_of_an_older_ethtool():
    virtio = nic.parse_max_current(text("virtio-ethtool-g.txt"))
    assert virtio["max"]["rx"] == 256 and virtio["max"]["rx-mini"] is None
    assert virtio["current"]["tx-push"] == "off" and virtio["current"]["rx-buf-len"] is None
    old = nic.parse_max_current(text("ring-4096-g.txt"))
    assert (old["max"]["rx"], old["current"]["rx"], old["max"]["rx-jumbo"]) == (4096, 256, 0)


def test_ring_and_channel_json_of_a_newer_ethtool():
    data = [{"ifname": "eth1", "rx-max": 4096, "tx-max": 4096, "rx": 256, "tx": 256, "tx-push": False}]
    assert nic.parse_max_current_json(data) == {"max": {"rx": 4096, "tx": 4096},
                                                "current": {"rx": 256, "tx": 256, "tx-push": "off"}}


def test_coalescing_text_and_json():
    c = nic.parse_coalesce(text("virtio-ethtool-c.txt"))
    assert c["adaptive-rx"] == "off" and c["adaptive-tx"] is None
    assert c["rx-usecs"] == 0 and c["rx-frames"] == 1 and c["rx-usecs-irq"] is None
    assert "rx-frames-low" in c and "rx-frame-low" not in c  # -C's name, not -c's
    assert nic.parse_coalesce_json([{"ifname": "x", "adaptive-rx": True, "rx-usecs": 50}]) == \
        {"adaptive-rx": "on", "rx-usecs": 50}


def test_offloads_json_and_text():
    js = nic.parse_features_json(json.loads(text("veth-ethtool-k.json")))
    assert js["generic-receive-offload"] == "off" and js["large-receive-offload"] == "off [fixed]"
    lo = nic.parse_features(text("lo-ethtool-k.txt"))
    assert lo["loopback"] == "on [fixed]" and "Features for lo" not in " ".join(lo)


def test_link_speed_of_veth_and_unknown_of_virtio():
    assert nic.parse_link(text("veth-ethtool.txt"))["speed"] == "10000Mb/s"
    virtio = nic.parse_link(text("virtio-ethtool.txt"))
    assert virtio["speed"].startswith("unknown") and virtio["link-detected"] == "yes"


def test_link_stats_keep_the_kernel_names():
    st = nic.parse_link_stats(json.loads(text("veth-ip-link-stats.json")))
    for name in ("rx_dropped", "rx_missed_errors", "rx_fifo_errors", "rx_over_errors", "rx_crc_errors",
                 "rx_length_errors", "rx_errors", "tx_dropped", "multicast", "collisions"):
        assert name in st
    assert set(nic.COUNTER_MEANINGS) - {"rx_nohandler", "rx_otherhost_dropped"} <= set(st) | {"tx_fifo_errors"}
    assert nic.parse_link_stats(json.loads(text("lo-ip-link-stats.json")))["rx_packets"] >= 0


def test_driver_stats_and_queues_of_each_naming():
    veth = nic.parse_stats(text("veth-ethtool-S.txt"))
    assert veth["tx_queue_3_xdp_xmit_errors"] == 0 and veth["peer_ifindex"] == 2
    grouped = nic.per_queue({f"nic.{k}": v for k, v in veth.items()})
    assert sorted(grouped["rx"]) == [0, 1, 2, 3] and "drops" in grouped["rx"][0]
    assert grouped["tx"][1] == {"xdp_xmit": 0, "xdp_xmit_errors": 0}
    assert nic.queue_of("rx0_drops") == ("rx", 0, "drops")  # virtio_net, mlx5
    assert nic.queue_of("rx_drops") is None
    assert nic.queue_of("rx-3.packets") == ("rx", 3, "packets")  # i40e
    be = nic.parse_stats(text("be2net-S.txt"))
    assert be["rxq0: rx_drops_no_frags"] == 3885606854 and nic.queue_of("rxq0: rx_pkts") == ("rx", 0, "rx_pkts")
    bnx = nic.parse_stats(text("bnx2x-S.txt"))
    assert nic.queue_of("[1]: rx_discards") == ("queue", 1, "rx_discards") and len(bnx) == 4
    ixgbe = nic.parse_stats(text("ixgbe-S.txt"))
    assert ixgbe["rx_missed_errors"] == 0 and nic.queue_of("rx_queue_1_bytes") == ("rx", 1, "bytes")
    assert nic.parse_stats(text("igb-S.txt"))["rx_no_buffer_count"] == 0


def test_a_name_printed_twice_keeps_both():
    assert nic.parse_stats("NIC statistics:\n     rx_pkts: 1\n     rx_pkts: 2\n") == {"rx_pkts": 1, "rx_pkts#2": 2}


def test_standard_stats_json():
    assert nic.parse_std_stats_json(json.loads(text("veth-ethtool-S-groups.json"))) == {}
    data = [{"ifname": "eth1", "eth-mac": {"FramesReceivedOK": 10, "FrameCheckSequenceErrors": 1},
             "rmon": {"undersize_pkts": 0, "rx-pktsNtoM": [{"low": 0, "high": 64, "val": 7}]}}]
    assert nic.parse_std_stats_json(data) == {"eth-mac.FramesReceivedOK": 10, "eth-mac.FrameCheckSequenceErrors": 1,
                                              "rmon.undersize_pkts": 0, "rmon.rx-pktsNtoM.0-64": 7}


def test_deltas_and_resets():
    before = {"link.rx_dropped": 5, "nic.rx_queue_3_drops": 1, "nic.x": 10}
    after = {"link.rx_dropped": 8, "nic.x": 4}
    assert nic.counter_deltas(before, after) == {"link.rx_dropped": 3, "nic.x": 4}
    assert nic.counter_resets(before, after) == ["nic.x"]


def test_irqs_named_after_the_interface_or_its_virtio_device():
    names = nic.parse_interrupts("           CPU0\n 38:  1  PCI-MSIX-0000:00:03.0   1-edge      virtio2-input.0\n"
                                 " 37:  0  PCI-MSIX-0000:00:03.0   0-edge      virtio2-config\n"
                                 " 50:  9  IR-PCI-MSI 1-edge eth1-TxRx-0\n 51:  9  IR-PCI-MSI 2-edge eth10-TxRx-0\n"
                                 "NMI:  0  Non-maskable interrupts\n")
    assert nic.match_irqs("eth1", names) == {50: "eth1-TxRx-0"}
    assert nic.match_irqs("eth0", names, {37, 38, 39}, "/sys/devices/pci0000:00/0000:00:03.0/virtio2") == \
        {38: "virtio2-input.0"}
    assert nic.QUEUE_IN_IRQ_NAME.search("eth1-TxRx-3").group(2) == "3"


# --- --nic-set ----------------------------------------------------------------------------


def test_nic_set_grammar():
    assert nic.parse_nic_set("rx=4096,tx=4096") == [NicSetting("ring", "rx", "4096"), NicSetting("ring", "tx", "4096")]
    assert nic.parse_nic_set("combined=2") == [NicSetting("channels", "combined", "2")]
    assert nic.parse_nic_set("rx-usecs=50, adaptive-rx=OFF") == [NicSetting("coalesce", "rx-usecs", "50"),
                                                                 NicSetting("coalesce", "adaptive-rx", "off")]
    assert nic.parse_nic_set("rx-channels=2,channels.tx=1,ring.rx=512") == [
        NicSetting("channels", "rx", "2"), NicSetting("channels", "tx", "1"), NicSetting("ring", "rx", "512")]


@pytest.mark.parametrize("text, says", [
    ("rx=4096,", "empty item"),
    ("rx", "has no value"),
    ("speed=1000", "unknown key 'speed'"),
    ("ring.combined=2", "unknown key 'ring.combined'"),
    ("rx=big", "whole number"),
    ("rx=-1", "whole number"),
    ("rx=99999999999", "whole number"),
    ("adaptive-rx=1", "on or off"),
    ("rx=256,ring.rx=512", "twice"),
])
def test_nic_set_errors_are_one_line_naming_the_item(text, says):
    with pytest.raises(UsageError) as e:
        nic.parse_nic_set(text)
    assert says in str(e.value) and "\n" not in str(e.value)


VETH = {"driver": "veth", "rings": "not supported by veth", "coalescing": "not supported by veth",
        "channels": nic.parse_max_current(text("veth-ethtool-l.txt"))}
VIRTIO = {"driver": "virtio_net", "rings": nic.parse_max_current(text("virtio-ethtool-g.txt")),
          "channels": nic.parse_max_current(text("virtio-ethtool-l.txt")),
          "coalescing": {k: v for k, v in nic.parse_coalesce(text("virtio-ethtool-c.txt")).items() if v is not None}}


@pytest.mark.parametrize("desc, setting, says", [
    (VETH, "rx=512", "cannot change its ring sizes (not supported by veth)"),
    (VETH, "rx-usecs=50", "cannot change its coalescing (not supported by veth)"),
    (VETH, "combined=2", "veth on if0 has no combined channels (its maximum reads n/a): leave it out, or set rx, tx"),
    (VETH, "rx-channels=5", "maximum is 4"),
    (VETH, "tx-channels=0", "at least one"),
    (VIRTIO, "rx=4096", "maximum is 256"),
    (VIRTIO, "rx-mini=1", "no rx-mini ring sizes"),
    (VIRTIO, "adaptive-tx=on", "has no adaptive-tx"),
])
def test_nic_set_against_the_driver(desc, setting, says):
    with pytest.raises(UsageError) as e:
        nic.check_nic_set(nic.parse_nic_set(setting), desc, "if0")
    assert says in str(e.value), str(e.value)


def test_nic_set_within_the_driver_passes():
    nic.check_nic_set(nic.parse_nic_set("rx-channels=2,tx-channels=4"), VETH, "if0")
    nic.check_nic_set(nic.parse_nic_set("rx=128,combined=1,rx-usecs=8,adaptive-rx=off"), VIRTIO, "if0")


def test_a_nic_setting_is_a_host_setting_of_kind_ethtool():
    s = NicSetting("channels", "rx", "2").setting("ns-a", "veth0")
    assert (s.path, s.kind, s.key, s.at_least) == ("ethtool/ns-a/veth0/channels/rx", "ethtool", "veth0 channels rx", False)
    assert NicSetting("ring", "rx", "512").setting(None, "eth1").path == "ethtool//eth1/ring/rx"
    assert owners.ACCESSORS["ethtool"].read is nic.read_setting


# --- the registry with a kind of its own ---------------------------------------------------------------


@pytest.fixture
def fake_kind():
    values: dict[str, str] = {"k/a": "1"}

    def read(path):
        if path not in values:
            raise owners.SettingGone(path)
        return values[path]

    def write(path, value):
        if path not in values:
            raise owners.SettingGone(path)
        values[path] = value

    owners.register_accessor("fake", read, write)
    owners.declare("fake", lambda path, value: path.startswith("k/"))
    yield values
    owners.ACCESSORS.pop("fake", None)
    owners.DECLARED.pop("fake", None)


def dead_holder(hid: str) -> Holder:
    return Holder(hid, 2**22 + 12345, None)  # no such pid (above pid_max's default), no namespaces


def test_a_dead_holder_of_another_kind_is_put_back_by_whoever_comes_next(tmp_path, fake_kind):
    reg = HostSettings(tmp_path)
    reg.hold(dead_holder("dead"), Setting("k/a", "2", at_least=False, key="k a", kind="fake"))
    assert fake_kind["k/a"] == "2" and json.loads(reg.path.read_text())["settings"]["k/a"]["kind"] == "fake"
    assert reg.held() == {}  # found dead: put back
    assert fake_kind["k/a"] == "1"


def test_a_gone_object_has_nothing_to_put_back(tmp_path, fake_kind):
    reg = HostSettings(tmp_path)
    reg.hold(dead_holder("dead"), Setting("k/a", "2", at_least=False, kind="fake"))
    del fake_kind["k/a"]  # the interface went with its namespace
    assert reg.held() == {}


def test_an_unknown_kind_is_kept_for_a_capbench_that_knows_it(tmp_path, fake_kind):
    reg = HostSettings(tmp_path)
    reg.hold(dead_holder("dead"), Setting("k/a", "2", at_least=False, kind="fake"))
    owners.ACCESSORS.pop("fake")
    with pytest.raises(RunError, match="kind 'fake'"):
        reg.held()
    assert "k/a" in json.loads(reg.path.read_text())["settings"]


def test_two_living_holders_never_want_two_values(tmp_path, fake_kind):
    reg = HostSettings(tmp_path)
    me = Holder.of_this_process("one")
    reg.hold(me, Setting("k/a", "2", at_least=False, key="eth1 channels rx", kind="fake"))
    with pytest.raises(UsageError, match="eth1 channels rx is held at 2 by one"):
        reg.hold(Holder.of_this_process("two"), Setting("k/a", "3", at_least=False, key="eth1 channels rx", kind="fake"))
    reg.hold(Holder.of_this_process("two"), Setting("k/a", "2", at_least=False, kind="fake"))  # the same value: shared
    reg.release("one")
    assert fake_kind["k/a"] == "2"
    reg.release("two")
    assert fake_kind["k/a"] == "1"


# --- before sending ----------------------------------------------------------------------------------------


def fake_ip(routes4=(), routes6=(), addrs=(), route_get=()):
    def ip_json(ns, *args):
        table = {("-4", "route", "show", "default"): list(routes4), ("-6", "route", "show", "default"): list(routes6),
                 ("addr", "show"): list(addrs)}
        if args[:2] == ("route", "get"):
            return list(route_get)
        return table[args]
    return ip_json


def test_the_default_route_interface_is_refused_unless_forced():
    ip = fake_ip(routes4=[{"dst": "default", "gateway": "192.0.2.1", "dev": "eth0", "flags": []}],
                 routes6=[{"dst": "default", "nexthops": [{"dev": "eth2"}, {"dev": "eth3"}]}])
    for dev in ("eth0", "eth2", "eth3"):
        with pytest.raises(UsageError, match=f"{dev} carries the default route.*--force-iface"):
            nic.check_safe_to_send(None, dev, force=False, env={}, ip_json=ip)
        nic.check_safe_to_send(None, dev, force=True, env={}, ip_json=ip)
    nic.check_safe_to_send(None, "eth1", force=False, env={}, ip_json=ip)


def test_the_ssh_session_interface_is_refused():
    ip = fake_ip(addrs=[{"ifname": "lo", "addr_info": [{"local": "127.0.0.1"}]},
                        {"ifname": "mgmt0", "addr_info": [{"local": "198.51.100.7"}]}],
                 route_get=[{"dst": "203.0.113.9", "dev": "mgmt1"}])
    env = {"SSH_CONNECTION": "203.0.113.9 50022 198.51.100.7 22"}
    for dev in ("mgmt0", "mgmt1"):
        with pytest.raises(UsageError, match=f"{dev} carries this SSH session"):
            nic.check_safe_to_send(None, dev, force=False, env=env, ip_json=ip)
    nic.check_safe_to_send(None, "eth1", force=False, env=env, ip_json=ip)
    nic.check_safe_to_send("other-ns", "mgmt0", force=False, env=env, ip_json=ip)  # not this namespace's session


def test_an_unbounded_send_is_refused():
    with pytest.raises(UsageError, match="explicit --rate"):
        nic.check_bounded_send("eth1", rate=None, duration_s=1.0, count=None)
    with pytest.raises(UsageError, match="bounded --duration or --count"):
        nic.check_bounded_send("eth1", rate="1kpps", duration_s=None, count=None)
    nic.check_bounded_send("eth1", rate="1kpps", duration_s=None, count=10)


def test_a_holder_asking_for_another_value_keeps_what_it_held_when_that_fails(tmp_path, fake_kind):
    # A run on ports sets a NIC knob per configuration: the next value is asked for by the same holder.
    reg, me = HostSettings(tmp_path), Holder.of_this_process("one")
    reg.hold(me, Setting("k/a", "2", at_least=False, kind="fake"))
    reg.hold(me, Setting("k/a", "3", at_least=False, kind="fake"))
    assert fake_kind["k/a"] == "3" and reg.held()["k/a"]["original"] == "1"
    works = owners.ACCESSORS["fake"]

    def refuse(path, value):
        raise RunError("netlink error: Invalid argument")

    owners.register_accessor("fake", works.read, refuse)  # the driver refuses the next value
    with pytest.raises(RunError, match="Invalid argument"):
        reg.hold(me, Setting("k/a", "9", at_least=False, kind="fake"))
    owners.register_accessor("fake", works.read, works.write)
    held = reg.held()["k/a"]
    assert (held["set"], held["original"], held["holders"]["one"]["wants"]) == ("3", "1", "3")
    reg.release("one")
    assert fake_kind["k/a"] == "1"  # put back, not left at 3
