import pytest
from capbench.accounting import account, format_pct, loss_pct


def test_no_loss():
    a = account(sent=1000, delivered=1000, backlog_drops=0, socket_drops=0, received=1000)
    assert (a.link_drops, a.lost, a.unexplained, a.loss_pct) == (0, 0, 0, 0.0)


def test_every_stage_explains_its_share():
    a = account(sent=1_000_000, delivered=999_000, backlog_drops=2_200, socket_drops=6_225, received=990_575)
    assert a.link_drops == 1_000
    assert a.lost == 9_425
    assert a.unexplained == 0
    assert a.lost == a.link_drops + a.backlog_drops + a.socket_drops + a.unexplained


def test_xsk_drops_explain_their_share():
    a = account(sent=500_000, delivered=499_900, backlog_drops=0, socket_drops=0, xsk_drops=440_000,
                received=59_900)
    assert (a.link_drops, a.xsk_drops, a.lost, a.unexplained) == (100, 440_000, 440_100, 0)
    assert account(sent=10, delivered=10, backlog_drops=0, socket_drops=0, received=10).xsk_drops == 0


def test_unexplained_positive():
    a = account(sent=100, delivered=100, backlog_drops=1, socket_drops=2, received=90)
    assert a.unexplained == 7


def test_unexplained_negative_is_not_clamped():
    # softnet_stat counted drops of someone else's traffic: the counters disagree, say so.
    a = account(sent=100, delivered=100, backlog_drops=30, socket_drops=0, received=90)
    assert a.lost == 10
    assert a.unexplained == -20


def test_received_above_sent_gives_negative_loss():
    a = account(sent=100, delivered=100, backlog_drops=0, socket_drops=0, received=101)
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
