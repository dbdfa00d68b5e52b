import dataclasses

from capbench.testbed import hygiene
from capbench.report import tables
from capbench.report.tables import loss_places, print_tables
from records import make_result
from rich.console import Console


def render(trials, outcomes=(), width=200) -> str:
    console = Console(record=True, width=width)
    print_tables(trials, console, outcomes)
    return console.export_text()


def header_words(text: str) -> str:
    """The text as words, whatever lines it was broken over (for titles and notes)."""
    return " ".join(text.split())


def table_rows(text: str) -> list[str]:
    """The lines of the first table's body: from its rule to the first blank line."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if "───" in line) + 1
    end = next((i for i in range(start, len(lines)) if not lines[i].strip()), len(lines))
    return lines[start:end]


def headers_of(text: str) -> list[str]:
    """The column headers of the first table, each put back together from its lines."""
    lines = text.splitlines()
    rule = next(i for i, line in enumerate(lines) if "───" in line)
    first = next(i for i in range(rule) if not lines[i].strip()) + 1  # below the title and its blank line
    head = lines[first:rule]
    # columns: the runs of character positions that hold text on some header line
    used = [any(c < len(line) and line[c] != " " for line in head) for c in range(max(map(len, head)))]
    spans, start = [], None
    for c, u in enumerate(used + [False]):
        if u and start is None:
            start = c
        elif not u and start is not None:
            if spans and start - spans[-1][1] <= 1:  # one space: the same header
                spans[-1] = (spans[-1][0], c)
            else:
                spans.append((start, c))
            start = None
    return [" ".join(" ".join(line[a:b].split()) for line in head if line[a:b].strip()) for a, b in spans]


def search_trial(rate: float, lost: int, purpose: str, backend="pcap", frame_len=64, rep=1, pin="A:A",
                 method="rfc2544"):
    """A trial of a search step as campaign_run records it: method, purpose, step key and repetition."""
    sent = round(rate * 5)
    return make_result(backend=backend, frame_len=frame_len, sent=sent, received=sent - lost, socket_drops=lost,
                       method=method, purpose=purpose, rate=f"{rate:g}pps", offered_pps=rate,
                       cap_cpu=1 if pin == "A:A" else 0, kernel_rx_cpu=1, repeat=rep,
                       step=f"{method}|{backend}|{frame_len}|pin={pin}|load=touch|procs=1|rep={rep}")


# An RFC 2544 search at 64 B whose pass at 744,048 pps the verification then failed (seed 000's
# saturation): it searched on below and verified 418,527 pps. 14 trials, one step.
SEARCH_64 = ((1_488_095, 900_000, "search"), (744_048, 0, "search"), (1_116_071, 400_000, "search"),
             (930_060, 200_000, "search"), (837_054, 100_000, "search"), (790_551, 50_000, "search"),
             (767_299, 20_000, "search"), (744_048, 5_000, "verify"), (372_024, 0, "search"),
             (558_036, 40_000, "search"), (465_030, 3_000, "search"), (418_527, 0, "search"),
             (441_778, 1_000, "search"), (418_527, 0, "verify"))


def search_trials(rep=1, pin="A:A", backend="pcap", scale=1.0):
    return [search_trial(rate * scale, lost, purpose, backend=backend, rep=rep, pin=pin)
            for rate, lost, purpose in SEARCH_64]


def test_seed_table_shape():
    text = render([make_result(backend="pcap", frame_len=64), make_result(backend="afp-v3", frame_len=1518,
                                                                          sent=406_370)])
    assert headers_of(text) == ["Frame [B]", "Offered [pps]", "Sent [pps]", "Captured [pps / Gbps]",
                                "Loss [%]", "App / kernel load [%]", "Lost in rx ring / backlog / socket / unexplained"]
    assert "pcap" in text and "afp-v3" in text
    assert "1,488,095" in text  # offered at 64 B
    assert "1,488,095 / 1.000" in text  # captured pps / wire Gbps
    assert "63.6 / 12.2" in text or "63.6 / 12.3" in text


def test_small_loss_is_visible_and_located():
    r = make_result(sent=7_440_476, received=7_440_316, backlog_drops=60, socket_drops=100)
    text = render([r])
    assert "0.0022" in text  # 160 / 7,440,476 = 0.00215 %
    assert loss_places(r) == "0 / 60 / 100 / 0"
    assert "0 / 60 / 100 / 0" in text
    assert "unexplained" not in text.lower().split("unexplained", 1)[1]


def test_xsk_drops_stand_in_the_socket_place_and_are_explained():
    r = make_result(backend="afxdp", sent=1_000_000, received=999_000, xsk_drops=1_000,
                    unexplained=0)
    assert loss_places(r) == "0 / 0 / 1,000 xsk / 0"
    assert "AF_XDP" in render([r])
    assert loss_places(make_result(sent=100, received=90, socket_drops=4, xsk_drops=6, unexplained=0)) == \
        "0 / 0 / 4 + 6 xsk / 0"


def test_no_loss_reads_zero_and_no_places():
    r = make_result()
    assert loss_places(r) == "—"
    assert " 0 " in render([r])


def test_unexplained_is_flagged():
    text = render([make_result(sent=1000, received=990)])
    assert "unexplained" in text.split("\n")[-2].lower()


def test_no_trials():
    assert "No trial finished" in render([])


def test_a_generator_short_of_the_offered_load_is_marked():
    ok = make_result(frame_len=1518, sent=406_370)
    short = make_result(frame_len=64, sent=5_000_000, invalid_offered_load=True)  # 1,000,000 pps of 1,488,095
    text = render([ok, short])
    assert "1,000,000*" in text and "81,274*" not in text
    note = " ".join(text.split("* the generator")[1].split())
    assert "64 B: the generator could not hold 1,488,095 pps (it sent 1,000,000 pps)" in note
    assert "1518 B" not in note


def test_repetitions_are_one_row_with_their_spread():
    reps = [dataclasses.replace(make_result(frame_len=64, sent=s, received=s - lost, socket_drops=lost,
                                            app_cpu_pct=app, kernel_cpu_pct=kernel),
                                step=f"iperf|pcap|64|pin=A:A|rep={i}", repeat=i)
            for i, (s, lost, app, kernel) in enumerate(((7_000_000, 0, 60.0, 10.0), (7_400_000, 740, 62.0, 12.0),
                                                        (7_440_476, 7_440, 70.0, 14.0)), start=1)]
    text = render(reps)
    body = table_rows(text)
    assert body[0].split()[0] == "64" and not any(r.split()[:1] == ["64"] for r in body[1:])  # one row, 3 reps
    # median (min–max, sd, n) of the captured rate, the loss and both loads; the spread on a line of its own
    assert "1,479,852 / 0.994" in body[0]  # received / 5 s: rep 2's 7,399,260 is the median
    cells = header_words(" ".join(body))
    assert "(1,400,000–1,486,607, sd 48,171, n=3)" in cells
    # loss: median 0.010 %, the first rep lost nothing; app / kernel load: medians, then their spreads
    assert body[0].split()[1:3] == ["1,488,095", "1,480,000"]  # offered (the target), sent (median achieved)
    assert body[0].split()[6:] == ["0.010", "62.0", "/", "12.0", "0", "/", "0", "/", "740", "/", "0"]
    assert "(0–0.100, sd 0.055)" in cells and "(60.0–70.0, sd 5.3 / 10.0–14.0, sd 2.0)" in cells
    assert "(rep 2, median loss)" in cells

    (warning,) = hygiene.noisy(tables.repeated_rates(reps))
    assert "iperf pcap 64 B (A:A): 3 repetitions spread by 5.9 %" in warning


def test_placements_get_tables_of_their_own():
    import dataclasses

    a = make_result(frame_len=64)
    b = dataclasses.replace(make_result(frame_len=64), cap_cpu=0)
    text = render([a, b])
    assert text.count("Iperf-like capture throughput: pcap") == 2 and "A:B (gen 0, rx 1, app 0)" in text


def test_the_loss_of_a_short_row_is_capture_loss():
    short = make_result(frame_len=64, sent=5_000_000, received=4_000_000, socket_drops=1_000_000,
                        invalid_offered_load=True)
    row = next(line for line in render([short]).splitlines() if line.strip().startswith("64 "))
    assert "1,000,000*" in row and " 20.00 " in row and "20.00*" not in row


def test_headers_fit_120_columns_without_being_cut():
    reps = [dataclasses.replace(make_result(frame_len=64, sent=s, received=s - 1000, socket_drops=1000),
                                step=f"iperf|pcap|64|pin=A:A|rep={i}", repeat=i)
            for i, s in enumerate((7_000_000, 7_400_000, 7_440_476), start=1)]
    text = render(reps, width=120)
    assert "…" not in text
    assert all(len(line) <= 120 for line in text.splitlines())
    assert headers_of(text) == ["Frame [B]", "Offered [pps]", "Sent [pps]", "Captured [pps / Gbps]",
                                "Loss [%]", "App / kernel load [%]", "Lost in rx ring / backlog / socket / unexplained"]


def test_a_search_is_not_a_row_of_repetitions_but_an_rfc2544_table():
    """Defect: every trial of a search (one step) was one "iperf-like" row of 14 "repetitions"."""
    trials = search_trials(pin="A:A") + search_trials(pin="A:B", scale=1.5)
    text = render(trials)
    assert "Iperf-like" not in text and "n=14" not in text
    words = header_words(text)
    assert "RFC 2544 throughput: pcap (1g link, engine xdp, app load touch" in words
    assert "Frame [B] #1 A:A [pps / Gbps] #2 A:B [pps / Gbps]" in words
    row = next(line for line in text.splitlines() if line.strip().startswith("64 "))
    # the verified rates (418,527 and 1.5 x), never the pass at 744,048 that its verification failed
    assert "418,527 / 0.281 †" in row and "627,790 / 0.422 †" in row and "744,048 /" not in row
    assert "† 64 B A:A: the verification trial failed at 744,048 pps" in words


def test_the_method_answer_of_searches_jsonl_is_the_table_s():
    trials = search_trials()
    outcome = {"method": "rfc2544", "backend": "pcap", "frame_len": 64, "link_bps": 1e9, "wire_pps": 1488095.24,
               "throughput_pps": 400_000.0, "throughput_gbps": 0.2688, "verified": True, "short_trials": True,
               "trial_s": 5.0, "precision_pct": 1.0, "verification_failures_pps": [744_048.0], "notes": [],
               "step": trials[0].step, "repeat": 1, "pin": "A:A"}
    text = render(trials, [outcome])
    assert "400,000 / 0.269 †" in text and "418,527" not in text


def test_repeated_rates_are_only_true_repetitions():
    """Defect: the 14 trials of one search read as "14 repetitions spread by 70 %"."""
    one_search = search_trials(rep=1)
    assert tables.repeated_rates(one_search) == []
    assert hygiene.noisy(tables.repeated_rates(one_search)) == []
    # the same step twice: its answers (418,527 and 460,380 pps) are the repetitions
    twice = one_search + search_trials(rep=2, scale=1.1)
    ((what, values),) = tables.repeated_rates(twice)
    assert what == "rfc2544 pcap 64 B (A:A) RFC 2544 throughput"
    assert values == [418_527, 418_527 * 1.1]
    (warning,) = hygiene.noisy(tables.repeated_rates(twice))
    assert "2 repetitions spread by 9.5 %" in warning
    # iperf trials of two settings, once each: no repetition either
    singles = [dataclasses.replace(make_result(frame_len=f), step=f"iperf|pcap|{f}|pin=A:A|rep=1")
               for f in (64, 512)]
    assert tables.repeated_rates(singles) == []


def test_a_sweep_has_a_table_of_offered_against_captured_and_cpu():
    rates = (400_000, 800_000, 1_200_000)
    trials = [search_trial(r, 0 if r < 1_000_000 else 60_000, f"step {i}/3", backend="afp-v3", method="sweep")
              for i, r in enumerate(rates, start=1)]
    text = render(trials)
    words = header_words(text)
    assert "Sweep: afp-v3 64 B" in words and "first loss at 1,200,000 pps" in words
    rows = [line.split() for line in text.splitlines() if line.strip()[:1].isdigit()]
    assert [r[0] for r in rows] == ["400,000", "800,000", "1,200,000"]
    assert rows[2][1:5] == ["1,200,000", "1,188,000", "/", "0.798"] and rows[2][5] == "1.00"
    assert "Iperf-like" not in text


def test_live_line_of_a_search_says_its_bounds_so_far():
    from capbench.campaign.matrix import Step
    from capbench.report import console
    from capbench.trial.trial_run import Progress
    from records import make_result

    step = Step("rfc2544", "afp-v3", 64, "A:A", None, 1, 1, 0, "")
    lossless = make_result(offered_pps=800_000.0)
    lossy = make_result(offered_pps=1_200_000.0, received=7_000_000)
    p = Progress(load="1Mpps", elapsed_s=1.0, duration_s=5.0, sent=1_000_000, sent_pps=1e6, captured=990_000,
                 rx_cpu=1, rx_cpu_busy_pct=97.0)
    line = console.live_line(step, p, 120.0, [lossless, lossy])
    assert "trial 3, lossless up to 0.800 Mpps, lossy from 1.200 Mpps" in line
    assert "captured 990,000" in line and "97 % busy" in line and "~2.0 min left" in line
    iperf = Step("iperf", "afp-v3", 64, "A:A", None, 1, 1, 0, "")
    assert "lossless up to" not in console.live_line(iperf, p, None, [lossless, lossy])
