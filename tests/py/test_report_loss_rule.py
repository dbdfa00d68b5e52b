"""Issue 14, item 3 in the report: one rule for what is loss (capbench.methods.verdict) in the
terminal table, tables.md and the summary alike. A trial whose generator fell short of the
offered load and that lost frames is lossy: its loss is counted, at the rate the generator sent,
never starred as "not capture loss". One whose generator fell short and that lost nothing is a
lower bound, and says so everywhere."""

from capbench.methods.verdict import LOSSY, LOWER_BOUND, verdict, way_forward
from capbench.report import summary, tables_md
from report_files import trial
from test_tables import render, table_rows

# Both at 64 B, the generator short in both: 5,000,000 frames in 5 s, 1,000,000 of 1,488,095 pps.
SHORT_LOSSY = trial(backend="afp-v3", sent=5_000_000, received=4_000_000, socket_drops=1_000_000,
                    invalid_offered_load=True)
SHORT_LOSSLESS = trial(backend="pcap", sent=5_000_000, invalid_offered_load=True)
TRIALS = [SHORT_LOSSY, SHORT_LOSSLESS]
SENT = "it sent 1,000,000 pps"  # the words of verdict.sent_text, wherever the report names what was sent


def test_the_records_are_one_lossy_and_one_lower_bound():
    assert verdict(SHORT_LOSSY.result) == LOSSY and verdict(SHORT_LOSSLESS.result) == LOWER_BOUND


def _row(first: str, backend_title: str, text: str) -> list[str]:
    """The lines of the row starting with `first` in the table titled with `backend_title`."""
    table = text.split(f"Iperf-like capture throughput: {backend_title}")[1]
    body = table_rows(table)
    i = next(i for i, line in enumerate(body) if line.split()[:1] == [first])
    return [body[i]] + [line for line in body[i + 1:i + 2] if not line.split()[:1] == [first]]


def test_the_terminal_table_counts_a_short_generator_s_loss_and_names_a_lower_bound():
    text = render(TRIALS)
    lossy = " ".join(_row("64", "afp-v3", text))
    assert "1,000,000*" in lossy and " 20.00 " in lossy and "20.00*" not in lossy and "lower bound" not in lossy
    bound = " ".join(_row("64", "pcap", text))
    assert "1,000,000*" in bound and "(lower bound)" in bound and " 0 " in bound
    note = " ".join(text.split("\n* ")[1].split())
    assert note.startswith("the generator did not hold the offered load")
    assert f"64 B: the generator could not hold 1,488,095 pps ({SENT})" in note
    assert "what a starred row lost is capture loss at the rate the generator sent" in note
    assert "not capture loss" not in text


def test_tables_md_counts_a_short_generator_s_loss_and_names_a_lower_bound():
    md = tables_md.markdown(TRIALS)
    lossy = next(line for line in md.splitlines() if line.startswith("| 64 | 1,488,095 | 1,000,000* | 800,000"))
    # a row names the load the generator could not hold (Offered, the target; Sent, what it sent); the footnote under the
    # table, once, what a starred row means: what it lost is capture loss, a row that lost nothing a lower bound
    assert "| 20.00 |" in lossy and lossy.endswith("| the generator could not hold 1,488,095 pps |")
    bound = next(line for line in md.splitlines() if line.startswith("| 64 | 1,488,095 | 1,000,000* | 1,000,000"))
    assert "(lower bound) | 0 |" in bound and bound.endswith("| the generator could not hold 1,488,095 pps |")
    footnote = "\\* " + tables_md.short_footnote([SHORT_LOSSLESS.result])[2:]
    assert footnote.startswith("\\* the generator did not hold the offered load")
    assert "what a starred row lost is capture loss at the rate the generator sent" in footnote
    assert md.count(footnote) == len(tables_md.iperf_tables(TRIALS)) == 2  # under each table, once
    assert "| afp-v3 | 1 | 5,000,000 | 1,000,000 | 20.00 | 0 |" in md  # its loss is summed
    assert "| pcap | 0 | 0 | 0 | — | 1 |" in md  # the lower bound is counted apart
    assert "not capture loss" not in md and "not a capture result" not in md.split("|---")[1]


def test_the_summary_counts_a_short_generator_s_loss_and_names_a_lower_bound():
    best, losses = summary.summary(TRIALS)
    assert best == ["64 B: afp-v3 — 800,000 pps (0.538 Gbps), loss 20.00 %, app / kernel load 63.6 / 12.2 %, the "
                    "generator sent 1,000,000 of the 1,488,095 pps offered (generator short of the offered load "
                    "for pcap, nothing lost: a lower bound, not a result)."]
    assert losses[0] == "afp-v3: loses packets at 64 B (loss 20.00 % at 64 B, measured once, captured 0.538 Gbps)."
    assert losses[1] == ("pcap: no valid result — at every frame length the generator fell short of the offered "
                         "load and nothing was lost (lower bounds, not results).")
    # what to do, once, after the lines: the numbers agree with what the tables say was sent, and with
    # verdict.way_forward
    assert losses[-1].startswith("To measure the lower bounds: ")
    assert f"({SENT}, asked for 1,488,095 pps)" in losses[-1]
    assert "; ".join(way_forward([SHORT_LOSSLESS.result])) in losses[-1]
