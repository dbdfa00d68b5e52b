"""The terminal at the end of a run (issue 28, item 7): it ends with the answer (best per length,
where each backend starts to lose, how sure each point is), one explanation per loss layer and
table instead of a remark block per row, the target ("Offered") and what the generator achieved
("Sent") in columns of their own, and the runs the host spoiled said once."""

import io

from capbench.methods import dispatch
from capbench.methods.simulated import SimulatedDevice
from capbench.rates import parse_rate
from capbench.report import console, summary, tables
from rich.console import Console

SIZES = (64, 512, 1518)


def run(repeat_disturbed=frozenset(), **settings):
    trials, outcomes = [], []

    def make(backend, size):
        # pcap loses at 64 B; afp-v3 keeps up; the host stops the first trial of pcap at 512 B
        return SimulatedDevice(1_000_000 if backend == "pcap" else 3e6, frame_len=size, backend=backend,
                               disturbed_trials=repeat_disturbed if (backend, size) == ("pcap", 512) else frozenset())

    dispatch.run(dispatch.MethodSettings(pause_s=0, **settings), make, ["pcap", "afp-v3"], SIZES, link_bps=1e9,
                 rate=parse_rate("100%"), duration_s=1.0, record=trials.append, record_outcome=outcomes.append,
                 pause=lambda s: None)
    return trials, outcomes


def terminal(trials, outcomes):
    c = Console(width=160, file=io.StringIO(), record=True)
    console.print_results(trials, outcomes, c)
    return c.export_text()


def test_the_terminal_ends_with_the_answer_and_one_line_per_layer():
    trials, outcomes = run(frozenset({0}))
    assert len(trials) == 2 * len(SIZES) + 1  # the run the host spoiled, and its rerun
    text = terminal(trials, outcomes)
    lines = [x.strip() for x in text.splitlines() if x.strip()]
    answer = lines.index(console.ANSWER_TITLE)
    assert "Best backend per frame length" in lines[answer + 1]
    assert lines[-1] == summary.MEASURED_ONCE
    assert "pcap: loses packets at 64 B (loss 32.80 % at 64 B, measured once" in text
    assert "afp-v3: no loss at 64, 512, 1518 B." in text
    # one explanation per layer and table, its numbers in the table's column; no remark per row
    assert sum(1 for x in lines if x.startswith("socket: the capture socket's buffer was full")) == 1
    assert "lost 488,095 =" not in text
    # Offered is the target, Sent what the generator achieved
    assert "Offered [pps]" in text and "Sent [pps]" in text
    assert tables.rerun_note(1) in " ".join(text.split())
    # the spoiled run is no repetition: each row rests on one trial
    assert "Trials" in text and "median of" not in text


def test_repetitions_judge_the_loss_that_repeats_with_its_spread():
    trials, outcomes = run()
    again, _ = run()
    trials += [t.__class__(**{**t.__dict__, "repeat": 2}) for t in again]
    text = " ".join(terminal(trials, outcomes).split())
    assert "pcap: loses packets at 64 B (loss 32.80 % at 64 B, lost in 2 of 2 repetitions" in text
    assert summary.MEASURED_ONCE not in text


def test_a_search_answer_the_host_disturbed_says_so_in_the_terminal():
    trials, outcomes = [], []
    dispatch.run(dispatch.MethodSettings(method="rfc2544", trial_s=1.0, pause_s=0, precision_pct=10),
                 lambda b, size: SimulatedDevice(5e6, frame_len=size, backend=b,
                                                 disturbed_trials=frozenset(range(10_000)), stop_ms=50),
                 ["afp-v3"], [64], link_bps=1e9, rate=parse_rate("100%"), duration_s=1.0, record=trials.append,
                 record_outcome=outcomes.append, pause=lambda s: None)
    text = " ".join(terminal(trials, outcomes).split())
    assert "throughput 0 pps" in text and "disturbed: the host interfered in" in text
    assert "longest stop 50.0 ms" in text
    assert "(disturbed: the host interfered in the search:" in text  # the answer's loss line
