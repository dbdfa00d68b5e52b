import json

import pytest
from capbench import declared
from capbench.testbed import veth_pair as tbmod
from capbench.binaries import find_binaries
from capbench.testbed.procs import ChildError
from capbench.rates import parse_rate
from capbench.trial.accounting import LayerCount, layer_drops
from capbench.trial.measure import Measurer, TrialResult, TrialSetup
from calls import read_calls

REQUIRED_FIELDS = (
    "schema backend frame_len link_bps offered_pps duration_s sent delivered backlog_drops layers "
    "received lost duplicates reordered foreign unexplained rx_pps rx_gbps loss_pct app_cpu_pct "
    "kernel_cpu_pct gen_cpu cap_cpu kernel_rx_cpu link_drops achieved_pps gen_engine app_load started_at raw"
).split()


def record_rows(record: dict) -> list[LayerCount]:
    return [LayerCount(**row) for row in record["layers"]]


def local_testbed(rx_cpu=None) -> tbmod.Testbed:
    """Names only, no namespaces: the fake programs run in our own."""
    return tbmod.Testbed(id="000000", gen_ns=None, cap_ns=None, gen_if="vethg", cap_if="vethc",
                   gen_mac="02:cb:00:00:01:01", cap_mac="02:cb:00:00:01:02", rx_cpu=rx_cpu)


def measurer(frame_len=64, **kw) -> Measurer:
    setup = TrialSetup(backend="afp-v3", frame_len=frame_len, settle_s=0.05, **kw)
    return Measurer(find_binaries(), local_testbed(rx_cpu=1), setup)


def test_trial_accounts_for_every_packet(fake_build, monkeypatch):
    monkeypatch.setenv("FAKE_SENT", "10000")
    monkeypatch.setenv("FAKE_DELIVERED", "9990")
    monkeypatch.setenv("FAKE_KDROPS", "30")
    monkeypatch.setenv("FAKE_RECEIVED", "9950")
    r = measurer().measure(0.2, parse_rate("100%"))
    assert (r.sent, r.delivered, r.received) == (10000, 9990, 9950)
    # A summary without account rows (an older capbench-cap): its kernel drops are the socket's.
    assert r.layers == (LayerCount("socket", "PACKET_STATISTICS tp_drops", 30),)
    assert r.link_drops == 10
    assert r.lost == 50
    # backlog drops come from the real /proc/net/softnet_stat (normally 0 here)
    assert r.unexplained == 50 - 10 - 30 - r.backlog_drops
    assert r.loss_pct == pytest.approx(0.5)
    assert r.rx_pps == pytest.approx(9950 / 0.2)
    assert r.rx_gbps == pytest.approx(9950 / 0.2 * 84 * 8 / 1e9)
    assert r.offered_pps == pytest.approx(1e9 / 672)
    assert r.achieved_pps == pytest.approx(10000 / 0.2)  # far below 1,488,095 pps
    assert r.invalid_offered_load
    assert (r.duplicates, r.reordered, r.foreign) == (1, 2, 3)
    assert (r.gen_cpu, r.cap_cpu, r.kernel_rx_cpu) == (0, 1, 1)
    assert set(r.raw) == {"gen", "cap", "xdpcount"}
    assert 0 <= r.app_cpu_pct <= 100 and 0 <= r.kernel_cpu_pct <= 100


def test_trial_record_has_the_contract_fields_and_round_trips(fake_build):
    r = measurer(app_load="spin:100").measure(0.1, 5000.0)
    record = r.to_record()
    for name in REQUIRED_FIELDS:
        assert name in record, name
    assert record["schema"] == 2
    assert record["app_load"] == "spin:100"
    assert record["rate"] == "5000pps" and record["offered_pps"] == 5000
    assert record["invalid_offered_load"] is False  # 1000 frames in 0.1 s: above 5000 pps
    assert TrialResult.from_record(json.loads(json.dumps(record))) == r
    assert TrialResult.from_record(record | {"field_from_the_future": 1}) == r


def test_programs_get_the_documented_options(fake_build):
    measurer(frame_len=1518, app_load="touch").measure(0.1, parse_rate("50%"))
    calls = {c[0]: c[1:] for c in read_calls(fake_build)}
    assert calls["capbench-xdpcount"] == ["--iface", "vethc"]
    assert calls["capbench-cap"] == ["--iface", "vethc", "--backend", "afp-v3", "--cpu", "1", "--app-load", "touch"]
    assert calls["capbench-gen"] == [
        "--iface", "vethg", "--engine", "xdp", "--size", "1518", "--rate", "50%", "--link", "1g",
        "--duration", "0.1", "--cpu", "0", "--dst-mac", "02:cb:00:00:00:02", "--trailer", "0",
    ]
    order = [c[0] for c in read_calls(fake_build)]
    assert order == ["capbench-xdpcount", "capbench-cap", "capbench-gen"]


@pytest.mark.parametrize("program", ["capbench-xdpcount", "capbench-cap", "capbench-gen"])
def test_a_failing_program_fails_the_trial_with_its_message(fake_build, monkeypatch, program):
    monkeypatch.setenv("FAKE_FAIL", program)
    with pytest.raises(ChildError, match=f"{program}.*exit status 2.*No such device"):
        measurer().measure(0.1, parse_rate("100%"))


def test_missing_ready_line_fails_the_trial(fake_build, monkeypatch):
    monkeypatch.setenv("FAKE_NO_READY", "capbench-cap")
    # The timeout is xdpcount's too: a fake (a Python script) takes 0.1-0.4 s to start on a busy host.
    m = Measurer(find_binaries(), local_testbed(),
                 TrialSetup(backend="pcap", frame_len=64, ready_timeout_s=2.0, settle_s=0))
    with pytest.raises(ChildError, match="capbench-cap sent no 'ready' line within 2 s"):
        m.measure(0.1, parse_rate("1g"))


def test_rate_above_wire_rate_is_refused_before_starting_anything(fake_build):
    from capbench.errors import UsageError

    with pytest.raises(UsageError):
        measurer(frame_len=1518).measure(0.1, parse_rate("1Mpps"))
    assert read_calls(fake_build) == []


def test_kernel_rx_cpu_is_the_senders_without_rps(fake_build):
    m = Measurer(find_binaries(), local_testbed(rx_cpu=None), TrialSetup(backend="pcap", frame_len=64, settle_s=0))
    assert m.kernel_rx_cpu == 0
    assert m.measure(0.1, parse_rate("10kpps")).kernel_rx_cpu == 0


def test_a_profile_trial_takes_its_mix_from_the_generator(fake_build, monkeypatch):
    monkeypatch.setenv("FAKE_SENT", "20000")
    monkeypatch.setenv("FAKE_RECEIVED", "20000")
    monkeypatch.setenv("FAKE_DELIVERED", "20000")
    setup = TrialSetup(backend="afp-v3", frame_len=0, size_profile="imix:seed", settle_s=0.05)
    r = Measurer(find_binaries(), local_testbed(rx_cpu=1), setup).measure(0.2, parse_rate("100kpps"))
    calls = {c[0]: c[1:] for c in read_calls(fake_build)}
    assert calls["capbench-gen"][calls["capbench-gen"].index("--size") + 1] == "imix:seed"
    assert (r.size, r.size_label, r.frame_len, r.mean_frame_len) == ("imix:seed", "imix:seed", 791, 791.0)
    assert r.offered_pps == 100000
    # 20,000 frames in 0.2 s of 811 wire bytes each.
    assert r.rx_gbps == pytest.approx(100_000 * 811 * 8 / 1e9)
    assert r.rx_gbps_from == "sent mix"  # the fake counter gave no length histogram
    assert not r.invalid_offered_load


def test_a_profile_trial_takes_the_captured_gbps_from_what_was_received(fake_build, monkeypatch):
    # Of 20,000 frames sent, 10,000 arrived, all 1518 B (the small ones were lost): the
    # captured bit rate is theirs, not the sent mix's. One duplicate is in the histogram.
    monkeypatch.setenv("FAKE_SENT", "20000")
    monkeypatch.setenv("FAKE_RECEIVED", "10000")
    monkeypatch.setenv("FAKE_DELIVERED", "20000")
    monkeypatch.setenv("FAKE_LENGTHS", json.dumps({"1518": 10001}))
    setup = TrialSetup(backend="afp-v3", frame_len=0, size_profile="imix:seed", settle_s=0.05)
    r = Measurer(find_binaries(), local_testbed(rx_cpu=1), setup).measure(0.2, parse_rate("100kpps"))
    assert r.rx_gbps_from == "received"
    assert r.rx_gbps == pytest.approx(10_000 / 0.2 * 1538 * 8 / 1e9)


def test_a_program_refusing_its_input_is_bad_input(fake_build, monkeypatch):
    monkeypatch.setenv("FAKE_FAIL", "capbench-gen")
    with pytest.raises(ChildError) as e:
        measurer().measure(0.1, parse_rate("100%"))
    assert e.value.exit_status == 2


@pytest.mark.parametrize("backend", ["afxdp", "xdp"])
def test_backends_with_their_own_xdp_program_count_delivered_themselves(fake_build, monkeypatch, backend):
    monkeypatch.setenv("FAKE_SENT", "10000")
    monkeypatch.setenv("FAKE_DELIVERED", "9990")
    monkeypatch.setenv("FAKE_KDROPS", "40")
    monkeypatch.setenv("FAKE_RECEIVED", "9950")
    m = Measurer(find_binaries(), local_testbed(rx_cpu=1), TrialSetup(backend=backend, frame_len=64, settle_s=0.05))
    r = m.measure(0.2, parse_rate("100%"))
    # no capbench-xdpcount: the interface holds one XDP program, the backend's
    assert [c[0] for c in read_calls(fake_build)] == ["capbench-cap", "capbench-gen"]
    assert set(r.raw) == {"gen", "cap"}
    assert (r.delivered, r.link_drops, r.backlog_drops) == (9990, 10, 0)
    # afxdp's kernel drops are AF_XDP ring drops (without their causes in its summary, one row);
    # the ceiling's are in the socket's row, as a summary without account rows had them
    assert [(x.layer, x.packets) for x in r.layers] == [("AF_XDP rings" if backend == "afxdp" else "socket", 40)]
    assert r.unexplained == 0
    assert r.kernel_rx_cpu == 0  # rps mode: XDP runs on the sender's CPU on a veth; RPS does not apply


def test_a_version_1_record_without_xsk_drops_has_the_socket_row_only(fake_build):
    record = measurer().measure(0.1, 5000.0).to_record()
    record.update(schema=1, socket_drops=layer_drops(record_rows(record)), layers=None)
    r = TrialResult.from_record(record)
    assert r.layers == (LayerCount("socket", "PACKET_STATISTICS tp_drops", 0),) and r.schema == 2


def test_the_xdp_ceiling_gets_no_app_load(fake_build):
    m = Measurer(find_binaries(), local_testbed(rx_cpu=1),
                 TrialSetup(backend="xdp", frame_len=64, settle_s=0, app_load="spin:100"))
    r = m.measure(0.1, parse_rate("10kpps"))
    calls = {c[0]: c[1:] for c in read_calls(fake_build)}
    assert "--app-load" not in calls["capbench-cap"]
    assert r.app_load is None


def test_several_capture_processes_each_count(fake_build, monkeypatch):
    monkeypatch.setenv("FAKE_SENT", "1000")
    monkeypatch.setenv("FAKE_RECEIVED", "990")
    m = Measurer(find_binaries(), local_testbed(rx_cpu=1),
                 TrialSetup(backend="afp-v3", frame_len=64, settle_s=0.05, procs=3, proc_cpus=(1, 0, 1)))
    r = m.measure(0.1, parse_rate("10kpps"))
    caps = [c[1:] for c in read_calls(fake_build) if c[0] == "capbench-cap"]
    assert sorted(c[c.index("--cpu") + 1] for c in caps) == ["0", "1", "1"]  # they start side by side
    assert (r.procs, r.proc_cpus, r.proc_received) == (3, (1, 0, 1), (990, 990, 990))
    assert len(r.proc_app_cpu_pct) == 3 and r.app_cpu_pct == pytest.approx(sum(r.proc_app_cpu_pct))
    assert TrialResult.from_record(json.loads(json.dumps(r.to_record()))) == r


def test_one_xdp_program_per_interface(fake_build):
    from capbench.errors import UsageError

    m = Measurer(find_binaries(), local_testbed(rx_cpu=1), TrialSetup(backend="afxdp", frame_len=64, procs=2))
    with pytest.raises(UsageError, match="one XDP program"):
        m.measure(0.1, parse_rate("10kpps"))
    assert read_calls(fake_build) == []


@pytest.mark.parametrize("backend, ring, args", [
    ("pcap", 4 << 20, ("--buffer-size", str(4 << 20))),
    ("raw", 4 << 20, ("--buffer-size", str(4 << 20))),
    ("afp-v3", 32 << 20, ("--block-size", str(1 << 20), "--block-count", "32")),
    ("fanout", 256 << 10, ("--block-size", str(256 << 10), "--block-count", "1")),
    ("afp-v2", 8 << 20, ("--frame-count", "4096")),
    ("afxdp", 3 << 20, ("--ring-size", "1024", "--frame-count", "1024")),
    ("xdp", 8 << 20, ()),
    ("afp-v3", 0, ()),
])
def test_ring_sizes_become_each_backends_options(backend, ring, args):
    from capbench import declared

    assert declared.ring_args(backend, ring) == args


def test_a_ring_size_reaches_the_counter_and_the_record(fake_build):
    m = Measurer(find_binaries(), local_testbed(rx_cpu=1),
                 TrialSetup(backend="afp-v3", frame_len=64, settle_s=0, ring_bytes=2 << 20))
    r = m.measure(0.1, parse_rate("10kpps"))
    (cap,) = [c for c in read_calls(fake_build) if c[0] == "capbench-cap"]
    assert cap[cap.index("--block-count") + 1] == "2" and r.ring_bytes == 2 << 20


def test_frames_the_counter_never_read_are_the_application_layer(fake_build, monkeypatch):
    # The socket took 1,000 frames (kernel packets) and dropped 50; the counter read 903
    # (900 capbench frames and 3 foreign): 47 queued and never read.
    monkeypatch.setenv("FAKE_SENT", "1000")
    monkeypatch.setenv("FAKE_DELIVERED", "1000")
    monkeypatch.setenv("FAKE_KDROPS", "50")
    monkeypatch.setenv("FAKE_RECEIVED", "900")
    r = measurer().measure(0.1, parse_rate("10kpps"))
    assert (r.lost, layer_drops(r.layers), r.app_drops) == (100, 50, 47)
    # The 3 foreign frames the counter read stand in for 3 capbench frames it did not:
    # backlog drops come from the real softnet_stat (normally 0 here).
    assert r.unexplained == 100 - 50 - 47 - r.backlog_drops
    assert r.lost == r.link_drops + r.backlog_drops + layer_drops(r.layers) + r.app_drops + r.unexplained
    assert ("application", 47) in [(n, c) for n, c, _ in r.loss_layers]
    assert r.to_record()["app_drops"] == 47


@pytest.mark.parametrize("backend, cap, drops", [
    ("afp-v3", {"packets": 903, "kernel": {"packets": 1000, "drops": 50}}, 47),
    ("fanout", {"packets": 950, "kernel": {"packets": 1000, "drops": 50}}, 0),
    ("raw", {"packets": 960, "kernel": {"packets": 1000, "drops": 50}}, 0),  # read more than queued: not < 0
    ("afp-v2", {"packets": 10}, 0),  # no kernel count
    ("pcap", {"packets": 903, "kernel": {"packets": 1000, "drops": 50}}, 0),  # ps_recv says nothing of the queue
    ("afxdp", {"packets": 903, "kernel": {"packets": 1000, "drops": 50}}, 0),
])
def test_application_drops_of_each_backend(backend, cap, drops):
    from capbench.trial.measure import application_drops

    assert application_drops(declared.backend(backend), cap) == drops


def test_the_interfaces_drop_counters_are_read_around_the_trial(fake_build, monkeypatch):
    from capbench.trial import measure as trial

    seen: dict[str, list] = {"vethc": [(5, 1), (25, 1)], "vethg": [(0, 7), (0, 27)]}
    calls = []

    def read(ns, iface):
        calls.append((ns, iface))
        return seen[iface].pop(0)

    monkeypatch.setattr(trial, "read_link_drops", read)
    monkeypatch.setenv("FAKE_SENT", "1000")
    monkeypatch.setenv("FAKE_DELIVERED", "980")
    monkeypatch.setenv("FAKE_RECEIVED", "980")
    m = Measurer(find_binaries(), local_testbed(rx_cpu=1), TrialSetup(backend="pcap", frame_len=64, settle_s=0.05))
    r = m.measure(0.1, parse_rate("10kpps"))
    assert calls == [(None, "vethc"), (None, "vethg")] * 2  # before the generator starts, after the settling
    assert (r.iface_rx_dropped, r.gen_tx_dropped) == (20, 20)
    # They split the link layer, they add no stage: the identity is that of the stages.
    assert r.unexplained == 20 - 20 - r.backlog_drops
    assert [n for n, _, _ in r.loss_layers] == ["interface"] and r.loss_layers[0][1] == 20
    record = r.to_record()
    assert (record["iface_rx_dropped"], record["gen_tx_dropped"]) == (20, 20)
    assert TrialResult.from_record(json.loads(json.dumps(record))) == r


def test_interface_counters_that_cannot_be_read_are_none(fake_build):
    # The fake test bed's interfaces do not exist: nothing is read, and nothing is made up.
    r = measurer().measure(0.1, 5000.0)
    assert (r.iface_rx_dropped, r.gen_tx_dropped) == (None, None)


def test_read_link_drops_asks_ip_in_the_namespace(monkeypatch):
    from capbench.testbed import netns
    from capbench.trial import measure as trial
    from capbench.errors import RunError

    asked = []

    def ip(*args, check=True):
        asked.append(args)
        return json.dumps([{"ifname": "cb0001c", "stats64": {"rx": {"packets": 9, "dropped": 203824},
                                                             "tx": {"packets": 0, "dropped": 3}}}])

    monkeypatch.setattr(netns, "ip", ip)
    assert trial.read_link_drops("capbench-0001-cap", "cb0001c") == (203824, 3)
    assert asked == [("-n", "capbench-0001-cap", "-s", "-j", "link", "show", "dev", "cb0001c")]

    def fails(*args, check=True):
        raise RunError("`ip link show dev x` failed: Device \"x\" does not exist.")

    monkeypatch.setattr(netns, "ip", fails)
    assert trial.read_link_drops(None, "x") is None
    monkeypatch.setattr(netns, "ip", lambda *a, check=True: "[]")
    assert trial.read_link_drops(None, "x") is None


def test_new_account_fields_default_in_old_records(fake_build):
    record = measurer().measure(0.1, 5000.0).to_record()
    for name in ("app_drops", "iface_rx_dropped", "gen_tx_dropped"):
        del record[name]
    r = TrialResult.from_record(record)
    assert (r.app_drops, r.iface_rx_dropped, r.gen_tx_dropped) == (0, None, None)


@pytest.mark.parametrize("lag_ms, burst, slipped", [(0, 0, False), (50, 250, False), (60, 300, True)])
def test_a_catch_up_burst_is_judged_by_its_frames_against_the_ring(fake_build, monkeypatch, lag_ms, burst, slipped):
    # 1,000 frames in 0.2 s at 5,000 pps: a generator 60 ms behind owed 300 frames, more than
    # the 256 it may send faster than the link (--catch-up). The rate was held: the trial stays
    # valid, the lag is recorded and remarked.
    monkeypatch.setenv("FAKE_MAX_LAG_NS", str(lag_ms * 1_000_000))
    r = measurer().measure(0.2, 5000.0)
    assert (r.catchup_burst_frames, r.schedule_slipped) == (burst, slipped)
    assert r.invalid_offered_load is False
    assert r.gen_max_lag_ns == lag_ms * 1_000_000
    assert any("owing about 300 frames; it sends at most 256 of them faster" in x for x in r.loss_remarks) is slipped


def test_backlog_comes_from_the_capture_interface_not_the_host():
    from capbench.trial.measure import backlog_from_device

    # rx_dropped holds the ring's overflow and the backlog's refusals: softnet_stat is not read
    assert backlog_from_device(1000, 600, 600, host_softnet_drops=25_000) == 400
    # the ring's counter not read: the link layer (before the XDP count) is the ring's
    assert backlog_from_device(1000, None, 600, host_softnet_drops=25_000) == 400
    assert backlog_from_device(1000, 1200, 1200, host_softnet_drops=0) == 0  # never below 0
    assert backlog_from_device(None, None, 0, host_softnet_drops=7) == 7  # no device counter: the host's
