import pytest
from capbench.trial.accounting import LayerCount, account, format_pct, interface_share, layer_drops, loss_pct


def socket(n: int) -> tuple[LayerCount, ...]:
    return (LayerCount("socket", "PACKET_STATISTICS tp_drops", n),)


def test_no_loss():
    a = account(sent=1000, delivered=1000, backlog_drops=0, layers=socket(0), received=1000)
    assert (a.link_drops, a.lost, a.unexplained, a.loss_pct) == (0, 0, 0, 0.0)


def test_every_stage_explains_its_share():
    a = account(sent=1_000_000, delivered=999_000, backlog_drops=2_200, layers=socket(6_225), received=990_575)
    assert a.link_drops == 1_000
    assert a.lost == 9_425
    assert a.unexplained == 0
    assert a.lost == a.link_drops + a.backlog_drops + layer_drops(a.layers) + a.unexplained


def test_every_declared_layer_explains_its_share_but_a_cross_check():
    rows = (LayerCount("AF_XDP fill ring", "XDP_STATISTICS rx_dropped", 400_000),
            LayerCount("AF_XDP RX ring", "XDP_STATISTICS rx_ring_full", 40_000),
            LayerCount("NIC", "pcap_stats ps_ifdrop", 100, cross_check=True))
    a = account(sent=500_000, delivered=499_900, backlog_drops=0, layers=rows, received=59_900)
    assert (a.link_drops, layer_drops(a.layers), a.lost, a.unexplained) == (100, 440_000, 440_100, 0)
    assert a.layers == rows
    assert account(sent=10, delivered=10, backlog_drops=0, layers=(), received=10).unexplained == 0


def test_unexplained_positive():
    a = account(sent=100, delivered=100, backlog_drops=1, layers=socket(2), received=90)
    assert a.unexplained == 7


def test_unexplained_negative_is_not_clamped():
    # softnet_stat counted drops of someone else's traffic: the counters disagree, say so.
    a = account(sent=100, delivered=100, backlog_drops=30, layers=socket(0), received=90)
    assert a.lost == 10
    assert a.unexplained == -20


def test_received_above_sent_gives_negative_loss():
    a = account(sent=100, delivered=100, backlog_drops=0, layers=socket(0), received=101)
    assert a.lost == -1 and a.loss_pct == -1.0 and a.unexplained == -1


def test_loss_pct_is_exact_and_never_rounded_to_zero():
    assert loss_pct(1, 7_440_476) == pytest.approx(1.344e-5, rel=1e-3)
    assert loss_pct(1, 7_440_476) > 0
    assert loss_pct(0, 0) == 0.0
    assert loss_pct(5, 10) == 50.0


@pytest.mark.parametrize(
    "pct, zero, text",
    [
        (0.0, True, "0"),
        (0.0021, False, "0.0021"),
        (1.344e-5, False, "0.000013"),
        (0.31, False, "0.31"),
        (0.5, False, "0.50"),
        (12.3456, False, "12.35"),
        (100.0, False, "100.00"),
        (-0.0021, False, "-0.0021"),
    ],
)
def test_format_pct(pct, zero, text):
    assert format_pct(pct, exact_zero=zero) == text


def test_format_pct_small_loss_never_reads_zero():
    for lost in (1, 2, 7, 13):
        text = format_pct(loss_pct(lost, 100_000_000), exact_zero=False)
        assert float(text) > 0, text


def test_app_drops_are_a_stage_of_the_identity():
    # 10 dropped by the socket, 5 queued by it and never read by the counter: all explained.
    a = account(sent=1000, delivered=1000, backlog_drops=0, layers=socket(10), received=985, app_drops=5)
    assert (a.lost, a.app_drops, a.unexplained) == (15, 5, 0)
    assert a.lost == a.link_drops + a.backlog_drops + layer_drops(a.layers) + a.app_drops + a.unexplained
    assert account(sent=10, delivered=10, backlog_drops=0, layers=socket(0), received=10).app_drops == 0


def test_every_account_field_is_a_trial_record_field():
    # methods/simulated.py builds its TrialResults from the account's fields.
    import dataclasses

    from capbench.trial.measure import TrialResult

    record = {f.name for f in dataclasses.fields(TrialResult)}
    assert {f.name for f in dataclasses.fields(account(sent=1, delivered=1, backlog_drops=0, layers=socket(0),
                                                       received=1))} <= record


@pytest.mark.parametrize("link, rx, backlog, xsk, share", [
    # the xdp engine overfilled the capture veth's ring: rx_dropped counted every frame of the link layer
    (203_824, 203_824, 0, 0, (203_824, 0, 0)),
    # afxdp: a full AF_XDP ring fails the redirect, which rx_dropped counts too: not the link's
    (0, 405_026, 0, 405_026, (0, 0, 0)),
    # the backlog queue refused frames: enqueue_to_backlog charges them to the device
    (0, 303, 303, 0, (0, 0, 0)),
    # all three at once
    (1_000, 1_250, 200, 50, (1_000, 0, 0)),
    # part of the link layer in no interface counter
    (1_000, 700, 0, 0, (700, 300, 0)),
    # rx_dropped holds more than the layers: dropped after the XDP count (an skb that could not be built)
    (100, 150, 0, 0, (100, 0, 50)),
    # softnet_stat counted other traffic's drops on the CPU: the device counted fewer
    (0, 10, 30, 0, (0, 0, -20)),
    (100, 130, 50, 0, (80, 20, 0)),  # ... which can only hide a link drop, never count one twice
    (-1, 0, 0, 0, (0, -1, 0)),  # more delivered than sent (foreign capbench frames): nothing to split
])
def test_interface_share_counts_no_frame_twice(link, rx, backlog, xsk, share):
    s = interface_share(link_drops=link, iface_rx_dropped=rx, backlog_drops=backlog, xsk_ring_drops=xsk)
    assert (s.counted, s.uncounted, s.beyond) == share
    assert s.counted + s.uncounted == link
    assert s.counted <= max(0, rx - backlog - xsk)
