"""The per-layer loss account in words (no root: trial records made by hand)."""

import dataclasses
import json
from pathlib import Path

import pytest
from capbench.trial import loss_layers
from capbench.trial.accounting import layer_drops
from capbench.trial.measure import TrialResult
from records import make_result

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "run-iperf" / "trials.jsonl"


def result(**kw) -> TrialResult:
    """A record whose `unexplained` follows from its stages, as the Measurer's does (accounting.account)."""
    r = make_result(**kw)  # its rows from its named drops and raw, as a record before issue 29 had them
    unexplained = r.lost - r.link_drops - r.backlog_drops - layer_drops(r.layers) - r.app_drops
    return dataclasses.replace(r, unexplained=unexplained)


def counts(r: TrialResult) -> list[tuple[str, int]]:
    return [(n, c) for n, c, _ in loss_layers.layers(r)]


def assert_identity(r: TrialResult) -> None:
    """The layers hold every lost packet the counters explain, and none twice."""
    assert sum(c for _, c in counts(r)) + r.unexplained == r.lost, loss_layers.layers(r)


def test_every_layer_with_its_counter():
    r = result(backend="pcap", sent=100_000, received=90_000, delivered=99_000, backlog_drops=6_000,
               socket_drops=3_000, gen_late=12, gen_max_lag_ns=2_000_000, seq_lost=10_000,
               raw={"cap": {"kernel": {"packets": 93_000, "drops": 3_000}}, "xdpcount": {}})
    assert counts(r) == [("interface", 1_000), ("backlog", 6_000), ("socket", 3_000)]
    assert_identity(r)
    line = loss_layers.explain(r)
    assert line.startswith("lost 10,000 = interface 1,000 (sent − delivered (capbench-xdpcount")
    assert "softnet_stat" in line
    # libpcap's blind spot is named: its own counter never sees the backlog.
    assert "ps_drop counted 3,000 of the 10,000 lost" in line and "6,000 dropped before the socket" in line
    assert "12 frames left more than one gap late" in line


def test_pcap_socket_drops_are_named_as_libpcaps_ps_drop():
    r = result(backend="pcap", sent=1000, received=990, socket_drops=10, seq_lost=10)
    [(name, n, counter)] = loss_layers.layers(r)
    assert (name, n) == ("socket", 10)
    assert "ps_drop" in counter and "PACKET_STATISTICS" not in counter and "tp_drops" not in counter


@pytest.mark.parametrize("backend", ["raw", "afp-v2", "afp-v3", "fanout"])
def test_packet_socket_drops_are_tp_drops(backend):
    r = result(backend=backend, sent=1000, received=990, socket_drops=10, seq_lost=10,
               raw={"cap": {"kernel": {"packets": 1000, "drops": 10, "freeze_q": 4}}})
    [(_, _, counter)] = loss_layers.layers(r)
    assert counter == "PACKET_STATISTICS tp_drops; the ring froze 4 times (tp_freeze_q_cnt)"


def test_no_sequence_check_no_disagreement():
    """--app-load none reads no stamps: the kernel's drops are not compared with gaps nobody counted."""
    r = result(backend="afp-v3", sent=1000, received=990, socket_drops=10, seq_lost=None, duplicates=None,
               reordered=None, foreign=None, app_load="none")
    text = loss_layers.explain(r)
    assert "sequence numbers show" not in text
    assert "app load none: the counter read no stamps" in text


def test_nothing_lost_says_nothing():
    assert loss_layers.explain(make_result()) == ""


def test_disagreeing_counters_are_said():
    r = make_result(sent=1000, received=990)  # 10 lost, no counter saw them
    assert "10 lost packets no counter explains" in loss_layers.explain(r)
    r = make_result(sent=1000, received=990, backlog_drops=25)
    assert "claim 15 more drops than packets were lost" in loss_layers.explain(r)


def test_application_drops_are_a_layer_and_not_unexplained():
    # The socket took 990 frames and dropped 10; the counter read 985: 5 never read.
    r = result(backend="afp-v3", sent=1000, received=985, socket_drops=10, app_drops=5, seq_lost=10,
               raw={"cap": {"packets": 985, "kernel": {"packets": 1000, "drops": 10}}})
    assert r.unexplained == 0
    assert counts(r) == [("socket", 10), ("application", 5)]
    assert_identity(r)
    line = loss_layers.explain(r)
    assert "application 5 (taken by the socket, never read by the counter" in line
    assert "no counter explains" not in line and "claim" not in line


def test_an_old_record_keeps_its_own_account():
    # Written before app_drops was a stage: its application drops are in its `unexplained`,
    # and the account says so rather than counting them twice.
    record = result(backend="afp-v3", sent=1000, received=985, socket_drops=10,
                    raw={"cap": {"packets": 985, "kernel": {"packets": 1000, "drops": 10}}}).to_record()
    for name in ("app_drops", "iface_rx_dropped", "gen_tx_dropped"):
        del record[name]
    r = TrialResult.from_record(json.loads(json.dumps(record)))
    assert (r.app_drops, r.iface_rx_dropped, r.gen_tx_dropped, r.unexplained) == (0, None, None, 5)
    assert counts(r) == [("socket", 10)]
    assert_identity(r)
    assert "5 lost packets no counter explains" in loss_layers.explain(r)


def test_the_stored_trials_still_read_and_add_up():
    records = [json.loads(line) for line in FIXTURE.read_text().splitlines() if line.strip()]
    assert records and all("app_drops" not in rec for rec in records)  # written before the field existed
    for rec in records:
        r = TrialResult.from_record(rec)
        assert (r.app_drops, r.iface_rx_dropped, r.gen_tx_dropped) == (0, None, None)
        assert_identity(r)
        loss_layers.explain(r)  # draws without the new fields
        for remark in loss_layers.remarks(r):
            assert "\n" not in remark


# --- AF_XDP ------------------------------------------------------------------------


def afxdp(xsk_drops, kernel, not_redirected=0, **kw):
    cap = {"queue": 0, "queues": [0], "xdp": {"not_redirected": not_redirected}, "kernel": kernel}
    return result(backend="afxdp", xsk_drops=xsk_drops, raw={"cap": cap}, **kw)


def test_afxdp_ring_drops_and_unbound_queues_apart():
    # 100 frames found the fill ring empty, 200 the RX ring full; 700 arrived on receive
    # queue 1, which no socket was bound to.
    r = afxdp(1_000, {"rx_dropped": 100, "rx_ring_full": 200, "rx_fill_ring_empty_descs": 100, "drops": 1_000},
              not_redirected=700, sent=10_000, received=9_000)
    layers = loss_layers.layers(r)
    assert counts(r) == [("AF_XDP fill ring", 100), ("AF_XDP RX ring", 200), ("AF_XDP queues", 700)]
    assert "rx_fill_ring_empty_descs" in layers[0][2] and "XDP_STATISTICS rx_dropped" in layers[0][2]
    assert "XDP_STATISTICS rx_ring_full" in layers[1][2]
    assert "bound: 0" in layers[2][2] and "--queue all" in layers[2][2]
    assert_identity(r)


def test_afxdp_rx_dropped_without_an_empty_fill_ring_has_its_own_line():
    r = afxdp(300, {"rx_dropped": 250, "rx_ring_full": 50, "rx_fill_ring_empty_descs": 200},
              sent=10_000, received=9_700)
    assert counts(r) == [("AF_XDP fill ring", 200), ("AF_XDP rx_dropped", 50), ("AF_XDP RX ring", 50)]
    assert_identity(r)


@pytest.mark.parametrize("kernel, lines", [
    ({"rx_dropped": 0, "rx_ring_full": 300, "rx_fill_ring_empty_descs": 0}, [("AF_XDP RX ring", 300)]),
    ({"rx_dropped": 300, "rx_ring_full": 0, "rx_fill_ring_empty_descs": 300}, [("AF_XDP fill ring", 300)]),
    # empty polls counted beyond the frames dropped: no more than rx_dropped is put on the fill ring
    ({"rx_dropped": 300, "rx_ring_full": 0, "rx_fill_ring_empty_descs": 900}, [("AF_XDP fill ring", 300)]),
    # counters that do not add up to the ring drops, or none at all: one line, never a wrong split
    ({"rx_dropped": 10, "rx_ring_full": 10}, [("AF_XDP rings", 300)]),
    ({}, [("AF_XDP rings", 300)]),
])
def test_afxdp_lines_only_for_counters_that_counted(kernel, lines):
    r = afxdp(300, kernel, sent=10_000, received=9_700)
    assert counts(r) == lines
    assert_identity(r)


# --- the kernel's drop counters against the sequence numbers -----------------------


def test_kernel_drops_below_the_sequence_numbers_are_said():
    r = result(backend="afp-v3", sent=10_000, received=9_000, backlog_drops=600, socket_drops=300, seq_lost=1_000,
               app_drops=100)
    (remark,) = [x for x in loss_layers.remarks(r) if "sequence numbers" in x]
    assert remark == ("the kernel's drop counters count 900 (backlog 600 + socket 300), the sequence numbers "
                      "show 1,000 missing: 100 more than the kernel counted")


def test_kernel_drops_above_the_sequence_numbers_are_said():
    # The last frames were dropped: the counter never saw a higher sequence number, so no gap.
    r = result(backend="afxdp", sent=10_000, received=9_500, xsk_drops=500, seq_lost=420)
    (remark,) = [x for x in loss_layers.remarks(r) if "sequence numbers" in x]
    assert remark == ("the kernel's drop counters count 500 (AF_XDP 500), the sequence numbers show 420 missing: "
                      "80 fewer than the kernel counted (80 lost after the last frame received leave no gap)")


def test_link_drops_are_named_where_the_kernel_counters_cannot_see_them():
    r = result(sent=10_000, received=9_000, delivered=9_000, seq_lost=1_000)
    (remark,) = [x for x in loss_layers.remarks(r) if "sequence numbers" in x]
    assert remark.startswith("the kernel's drop counters count 0, the sequence numbers show 1,000 missing")
    assert remark.endswith("(the link layer lost 1,000 before those counters could see them)")


def test_kernel_drops_that_agree_with_the_sequence_numbers_say_nothing():
    r = result(backend="afp-v3", sent=10_000, received=9_000, socket_drops=1_000, seq_lost=1_000)
    assert not [x for x in loss_layers.remarks(r) if "sequence numbers" in x]
    assert loss_layers.remarks(result()) == []


# --- the interfaces' own drop counters ---------------------------------------------


def veth(**kw):
    raw = {"gen": {"iface": "cb0001g"}, "cap": {"iface": "cb0001c"}, "xdpcount": {}}
    return result(raw=kw.pop("raw", raw), **kw)


def test_link_drops_the_capture_interface_counted():
    # The xdp engine filled the capture veth's ring: both ends of the veth counted the frames.
    r = veth(sent=300_000, delivered=96_176, received=96_176, seq_lost=203_824, iface_rx_dropped=203_824,
             gen_tx_dropped=203_824)
    [(name, n, counter)] = loss_layers.layers(r)
    assert (name, n) == ("interface", 203_824)
    assert "cb0001c rx_dropped" in counter and "the sender's cb0001g tx_dropped: 203,824" in counter
    assert_identity(r)
    assert not [x for x in loss_layers.remarks(r) if "rx_dropped" in x or "tx_dropped" in x]


def test_link_drops_no_interface_counter_saw_are_apart():
    r = veth(sent=10_000, delivered=9_000, received=9_000, iface_rx_dropped=700, gen_tx_dropped=700)
    assert counts(r) == [("interface", 700), ("link", 300)]
    assert "in no interface counter (cb0001c rx_dropped 700 during the trial)" in loss_layers.layers(r)[1][2]
    assert_identity(r)
    # the sender's count disagrees with the link layer: both numbers
    assert "the sender's cb0001g tx_dropped counted 700, the link layer lost 1,000" in loss_layers.remarks(r)


def test_interface_counters_not_read_leave_the_link_layer_whole():
    r = veth(sent=10_000, delivered=9_000, received=9_000)
    assert loss_layers.layers(r) == [("interface", 1_000, "sent − delivered (capbench-xdpcount on the capture veth)")]


def test_rx_dropped_of_the_later_layers_is_not_the_links():
    # On a veth a failed redirect into a full AF_XDP ring counts in rx_dropped as well, and so does
    # a frame the backlog refused: neither is counted again at the interface.
    r = afxdp(405_026, {"rx_dropped": 405_026, "rx_ring_full": 0, "rx_fill_ring_empty_descs": 405_026},
              sent=497_110, received=92_084, iface_rx_dropped=405_026, gen_tx_dropped=0)
    assert counts(r) == [("AF_XDP fill ring", 405_026)]
    assert not [x for x in loss_layers.remarks(r) if "rx_dropped" in x]
    r = veth(backend="pcap", sent=300_000, received=299_697, backlog_drops=303, seq_lost=303, iface_rx_dropped=303,
             gen_tx_dropped=0)
    assert counts(r) == [("backlog", 303)]
    assert not [x for x in loss_layers.remarks(r) if "rx_dropped" in x]


def test_rx_dropped_beyond_the_layers_is_said():
    r = veth(sent=1_000, delivered=900, received=850, iface_rx_dropped=150, seq_lost=150)
    assert counts(r) == [("interface", 100)]
    assert ("cb0001c rx_dropped counted 150: 50 more than the link, backlog and AF_XDP layers hold "
            "(dropped after the XDP count, or other traffic)") in loss_layers.remarks(r)
    r = veth(sent=1_000, received=970, backlog_drops=30, iface_rx_dropped=10, seq_lost=30)
    assert any(x.startswith("cb0001c rx_dropped counted 10, fewer than the 30 backlog and AF_XDP drops")
               for x in loss_layers.remarks(r))


def test_frames_the_afpacket_engine_sent_again_are_not_lost():
    r = veth(gen_engine="afpacket", sent=300_000, iface_rx_dropped=0, gen_tx_dropped=139_169)
    assert loss_layers.layers(r) == [] and r.lost == 0
    assert loss_layers.remarks(r) == ["cb0001g refused 139,169 frames (tx_dropped); capbench-gen's afpacket engine "
                                      "sent them again: not lost"]


def test_what_becomes_of_a_refused_frame_is_the_engines_declaration():
    # Records name it (gen_refusals, from capbench-gen --describe); older ones by their engine.
    retried = veth(gen_engine="xdploop", gen_refusals="retried", sent=300_000, iface_rx_dropped=0,
                   gen_tx_dropped=5)
    assert loss_layers.remarks(retried) == ["cb0001g refused 5 frames (tx_dropped); capbench-gen's xdploop engine "
                                            "sent them again: not lost"]
    lost = veth(gen_engine="xdploop", gen_refusals="lost", sent=300_000, iface_rx_dropped=0, gen_tx_dropped=5)
    assert loss_layers.remarks(lost) == ["the sender's cb0001g tx_dropped counted 5, the link layer lost 0"]
    assert loss_layers.remarks(veth(gen_engine="xdp", sent=300_000, iface_rx_dropped=0, gen_tx_dropped=5)) == \
        loss_layers.remarks(dataclasses.replace(lost, gen_engine="xdp", gen_refusals=""))


def test_frames_the_engine_could_not_hand_over_are_said_not_lost():
    r = veth(gen_engine="xdploop", gen_refusals="lost", sent=300_000, gen_refused=17)
    assert r.lost == 0
    assert loss_layers.remarks(r) == ["capbench-gen's xdploop engine could not hand 17 frames due to cb0001g "
                                      "(refused: not sent, so not lost; the generator fell short by them)"]


def test_every_remark_is_one_line_and_every_account_adds_up():
    cases = [
        veth(sent=10_000, delivered=9_000, received=8_000, backlog_drops=400, socket_drops=300, app_drops=50,
             seq_lost=777, iface_rx_dropped=1_900, gen_tx_dropped=950, gen_late=3),
        veth(backend="pcap", sent=10_000, received=9_000, backlog_drops=600, socket_drops=300, seq_lost=2_000,
             iface_rx_dropped=5),
        afxdp(1_000, {"rx_dropped": 100, "rx_ring_full": 200, "rx_fill_ring_empty_descs": 50}, not_redirected=700,
              sent=10_000, delivered=9_900, received=8_000, iface_rx_dropped=3_000, gen_tx_dropped=100),
    ]
    for r in cases:
        assert_identity(r)
        for remark in loss_layers.remarks(r):
            assert "\n" not in remark and remark


def test_backlog_drops_with_other_test_beds_in_use_are_said_to_be_shared():
    r = result(backend="afp-v3", sent=1000, received=990, backlog_drops=10, seq_lost=10,
               other_testbeds=("1a2b3c",))
    assert any("other capbench test beds were in use during this trial (1a2b3c)" in x
               for x in loss_layers.remarks(r))
    assert not any("other capbench" in x for x in loss_layers.remarks(dataclasses.replace(r, other_testbeds=())))


def test_the_cpumap_ring_and_the_veth_ring_are_layers_of_their_own():
    # The cpumap model counts "delivered" after its ring: sent − delivered holds both rings' overflow.
    r = result(backend="afp-v3", sent=100_000, received=95_000, delivered=95_000, ring_drops=1_000,
               rx_ring_drops=3_500, rx_ring=1024, rx_mode="cpumap", seq_lost=5_000,
               raw={"xdpcount": {}, "cap": {"iface": "cbc", "kernel": {"packets": 95_000, "drops": 0}},
                    "gen": {"iface": "cbg"}})
    assert counts(r) == [("rx ring", 3_500), ("veth ring", 1_000), ("link", 500)]
    assert_identity(r)
    line = loss_layers.explain(r)
    assert "1,024-frame receive ring" in line and "xdp:xdp_cpumap_enqueue" in line
    assert "cbg tx_queue_N_xdp_xmit_errors" in line and "drained on the generator's CPU" in line
    # The rings' counters are the kernel's: both in the sum the sequence numbers are held against.
    assert loss_layers.kernel_drops(r) == (4_500, ["rx ring 4,500"])


def test_an_older_record_had_the_veths_ring():
    r = make_result()
    assert (r.rx_ring, r.rx_ring_drops) == (256, None)


def test_a_poller_on_the_rings_cpu_is_named_with_its_ring_counter_and_the_fix():
    # dpdk at A:A on two CPUs: its worker polls CPU 1, where the veth's NAPI thread drains the ring.
    lossy = dict(backend="dpdk", sent=100_000, received=60_000, delivered=60_000, ring_drops=40_000, rx_mode="napi",
                 seq_lost=40_000)
    (remark,) = [x for x in loss_layers.remarks(result(polls=True, **lossy)) if "polls" in x]
    assert remark.startswith("dpdk polls on CPU 1, where the kernel thread that drains the receive ring runs only when "
                             "the scheduler takes the CPU from the poller: the rx ring lost 40,000 by its counter, "
                             "sent − delivered"), remark
    assert "xdp_xmit_errors" in remark and remark.endswith("--pin A:B or --cap-cpu"), remark
    # Not for a counter that sleeps, nor for a poller on a CPU of its own, nor without ring loss.
    assert not [x for x in loss_layers.remarks(result(**lossy)) if "polls" in x]
    assert not [x for x in loss_layers.remarks(result(polls=True, cap_cpu=2, **lossy)) if "polls" in x]
    clean = result(backend="dpdk", sent=100_000, polls=True, ring_drops=0)
    assert loss_layers.polling_remarks(clean) == []
