from capbench.tables import loss_places, print_tables
from records import make_result
from rich.console import Console


def render(trials) -> str:
    console = Console(record=True, width=200)
    print_tables(trials, console)
    return console.export_text()


def test_seed_table_shape():
    text = render([make_result(backend="pcap", frame_len=64), make_result(backend="afp-v3", frame_len=1518,
                                                                          sent=406_370)])
    for header in ("Frame [B]", "Offered [pps]", "Captured [pps / Gbps]", "Loss [%]", "App / kernel load [%]"):
        assert header in text
    assert "pcap" in text and "afp-v3" in text
    assert "1,488,095" in text  # offered at 64 B
    assert "1,488,095 / 1.000" in text  # captured pps / wire Gbps
    assert "63.6 / 12.2" in text or "63.6 / 12.3" in text


def test_small_loss_is_visible_and_located():
    r = make_result(sent=7_440_476, received=7_440_316, backlog_drops=60, socket_drops=100)
    text = render([r])
    assert "0.0022" in text  # 160 / 7,440,476 = 0.00215 %
    assert loss_places(r) == "0 / 60 / 100 / 0"
    assert "unexplained" not in text.lower().split("socket / unexplained")[1]


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
    assert "64 B: 1,488,095 pps" in text and "1518 B" not in text.split("* the generator")[1]


def test_repetitions_are_one_row_with_their_spread():
    import dataclasses

    reps = [dataclasses.replace(make_result(frame_len=64, sent=s, received=s), step=f"iperf|pcap|64|pin=A:A|rep={i}",
                                repeat=i) for i, s in enumerate((7_000_000, 7_400_000, 7_440_476), start=1)]
    text = render(reps)
    assert "1,480,000 (1,400,000–1,488,095, sd 48,693, n=3)" in text
    from capbench import hygiene, tables

    (warning,) = hygiene.noisy(tables.repeated_rates(reps))
    assert "3 repetitions spread by 6.0 %" in warning


def test_placements_get_tables_of_their_own():
    import dataclasses

    a = make_result(frame_len=64)
    b = dataclasses.replace(make_result(frame_len=64), cap_cpu=0)
    text = render([a, b])
    assert text.count("Iperf-like capture throughput: pcap") == 2 and "app CPU 0" in text
