"""The summary's sentences say what the figures say: the CPU of backends that captured as much,
and the frame lengths that lost packets."""

import dataclasses

from capbench.report import summary
from capbench.trial.record import LayerCount
from report_files import trial


def tied(best_cpu, other_cpu, other_received=4_999_750):
    """afp-v3 captured 1,000,000 pps, pcap within 0.01 % of it; both lost nothing."""
    return [trial(backend="afp-v3", frame_len=64, sent=5_000_000, app_cpu_pct=best_cpu[0], kernel_cpu_pct=best_cpu[1]),
            trial(backend="pcap", frame_len=64, sent=other_received, app_cpu_pct=other_cpu[0],
                  kernel_cpu_pct=other_cpu[1])]


def test_of_backends_that_captured_as_much_the_best_is_the_one_with_less_cpu():
    """Defect: "pcap captured as much, with more CPU" whatever the CPU figures were. Now the best
    of a tie is the one that needed less CPU; the other used more."""
    best, _ = summary.summary(tied((9.0, 12.0), (3.0, 12.0)))
    assert best[0].startswith("64 B: pcap — 999,950 pps")
    assert best[0].endswith("(afp-v3 captured as much, with more CPU).")


def test_a_backend_that_captured_as_much_with_more_cpu():
    best, _ = summary.summary(tied((3.0, 12.0), (9.0, 12.0)))
    assert best[0].endswith("(pcap captured as much, with more CPU).")


def test_the_same_cpu_is_not_called_more_or_less():
    # 3.04 + 12.0 and 2.96 + 12.0 both print as 3.0 / 12.0 %: the figures do not tell them apart
    best, _ = summary.summary(tied((3.04, 12.0), (2.96, 12.0)))
    assert best[0].endswith("(pcap captured as much).")


def test_several_ties_each_with_its_own_cpu():
    trials = tied((5.0, 10.0), (9.0, 10.0)) + [trial(backend="afp-v2", frame_len=64, sent=4_999_900,
                                                      app_cpu_pct=1.0, kernel_cpu_pct=10.0)]
    best, _ = summary.summary(trials)
    assert best[0].startswith("64 B: afp-v2 — ")
    assert best[0].endswith("(afp-v3, pcap captured as much, with more CPU).")


ONCE = summary.MEASURED_ONCE


def series(losses: dict[int, int]):
    """pcap at each frame length: 1,000,000 frames sent, `losses[size]` of them lost."""
    return [trial(backend="pcap", frame_len=size, sent=1_000_000, received=1_000_000 - lost, socket_drops=lost)
            for size, lost in losses.items()]


def test_loss_at_some_lengths_only_names_them():
    """Defect: "pcap: loses packets from 1518 B down" though it lost nothing at 512, 1024 and 1174 B."""
    _, losses = summary.summary(series({1518: 346_200, 1174: 0, 1024: 0, 512: 0, 64: 120_000}))
    assert losses == ["pcap: loses packets at 1518 B (34.62 %, measured once), 64 B (12.00 %, measured once); "
                      "no loss at 512, 1024, 1174 B.", ONCE]


def test_from_n_bytes_down_only_when_every_shorter_length_lost():
    _, losses = summary.summary(series({1518: 0, 1024: 10, 512: 2_000, 64: 120_000}))
    [line, once] = losses
    assert line.startswith("pcap: loses packets from 1024 B down (loss 0.0010 % at 1024 B, measured once, captured ")
    assert once == ONCE


def test_loss_that_does_not_repeat_is_named_apart_and_loss_that_repeats_with_its_spread():
    """Issue 28: two repetitions; 1024 B lost in one of them only (a host's stop, say), 64 B in both."""
    first = series({1518: 0, 1024: 10, 64: 120_000})
    second = [dataclasses.replace(t, result=dataclasses.replace(t.result, repeat=2, lost=lost, received=1_000_000 - lost,
                                                                layers=(LayerCount("socket", "PACKET_STATISTICS tp_drops",
                                                                                   lost),), loss_pct=lost / 1e4))
              for t, lost in zip(series({1518: 0, 1024: 0, 64: 100_000}), (0, 0, 100_000))]
    _, losses = summary.summary(first + second)
    assert losses == ["pcap: loses packets at 64 B (loss 11.00 % (10.00–12.00, sd 1.41) at 64 B, lost in 2 of 2 "
                      "repetitions, captured 0.120 Gbps); loss that did not repeat (not counted) at 1024 B (0.00050 % "
                      "(0–0.0010, sd 0.00071), lost in 1 of 2 repetitions)."]


def test_loss_with_lengths_the_generator_could_not_offer():
    trials = series({1518: 346_200, 512: 0}) + [trial(backend="pcap", frame_len=64, sent=1_000_000,
                                                      invalid_offered_load=True)]
    _, losses = summary.summary(trials)
    assert losses == ["pcap: loses packets at 1518 B (34.62 %, measured once); no loss at 512 B; a lower bound at 64 B "
                      "(generator short of the offered load, nothing lost).", ONCE,
                      summary.advice_line(t for t in trials if t.result.frame_len == 64)]
    assert losses[-1].startswith("To measure the lower bounds: a lower --rate: at 64 B")
