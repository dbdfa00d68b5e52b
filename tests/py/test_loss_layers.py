"""The per-layer loss account in words (no root: trial records made by hand)."""

from capbench import loss_layers
from records import make_result


def test_every_layer_with_its_counter():
    r = make_result(backend="pcap", sent=100_000, received=90_000, delivered=99_000, backlog_drops=6_000,
                    socket_drops=3_000, gen_late=12, gen_max_lag_ns=2_000_000)
    r = r.__class__(**{**r.__dict__, "raw": {"cap": {"kernel": {"packets": 93_000, "drops": 3_000}},
                                             "xdpcount": {}}})
    assert [(n, c) for n, c, _ in loss_layers.layers(r)] == [("interface", 1_000), ("backlog", 6_000),
                                                             ("socket", 3_000)]
    line = loss_layers.explain(r)
    assert line.startswith("lost 10,000 = interface 1,000 (sent − delivered (capbench-xdpcount")
    assert "softnet_stat" in line and "PACKET_STATISTICS" in line
    # libpcap's blind spot is named: its own counter never sees the backlog.
    assert "ps_drop counted 3,000 of the 10,000 lost" in line and "6,000 dropped before the socket" in line
    assert "12 frames left more than one gap late" in line


def test_nothing_lost_says_nothing():
    assert loss_layers.explain(make_result()) == ""


def test_disagreeing_counters_are_said():
    r = make_result(sent=1000, received=990)  # 10 lost, no counter saw them
    assert "10 lost packets no counter explains" in loss_layers.explain(r)
    r = make_result(sent=1000, received=990, backlog_drops=25)
    assert "claim 15 more drops than packets were lost" in loss_layers.explain(r)


def test_application_layer_for_ring_backends():
    r = make_result(backend="afp-v3", sent=1000, received=990, socket_drops=10)
    r = r.__class__(**{**r.__dict__, "raw": {"cap": {"packets": 985, "kernel": {"packets": 1000, "drops": 10}}}})
    assert ("application", 5) in [(n, c) for n, c, _ in loss_layers.layers(r)]


def test_afxdp_ring_drops_and_unbound_queues_apart():
    # 300 frames found the rings full, 700 arrived on receive queue 1, which no socket was bound to.
    r = make_result(backend="afxdp", sent=10_000, received=9_000, xsk_drops=1_000)
    cap = {"queue": 0, "queues": [0], "xdp": {"not_redirected": 700},
           "kernel": {"rx_dropped": 100, "rx_ring_full": 200, "drops": 1_000}}
    r = r.__class__(**{**r.__dict__, "raw": {"cap": cap}})
    layers = loss_layers.layers(r)
    assert [(n, c) for n, c, _ in layers] == [("AF_XDP rings", 300), ("AF_XDP queues", 700)]
    assert "bound: 0" in layers[1][2] and "--queue all" in layers[1][2]
