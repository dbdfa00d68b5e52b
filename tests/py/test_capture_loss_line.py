"""`capbench capture`'s line about loss: with the generator's trailer the tail is counted, without it
the line says the tail is not (capture_loss_line reads capbench-cap's summary fields)."""

from __future__ import annotations

from capbench.cli.passthrough import capture_loss_line, capture_summary_notes


def test_tail_counted_from_the_trailer():
    s = {"lost": 10, "streams": 1, "tail_loss_counted": True,
         "trailer": {"seen": 3, "streams": 1, "sent": 2000, "last_seq": 1999}}
    assert capture_loss_line(s) == ("lost 10 of the 2,000 frames sent, tail included "
                                    "(the generator's trailer frames carry its sent count)")


def test_no_trailer_says_the_tail_is_not_counted():
    s = {"lost": 0, "streams": 1, "tail_loss_counted": False, "trailer": {"seen": 0, "streams": 0}}
    assert capture_loss_line(s) == "lost 0; no trailer arrived: tail loss is not counted"


def test_some_streams_without_a_trailer():
    s = {"lost": 4, "streams": 3, "tail_loss_counted": False,
         "trailer": {"seen": 3, "streams": 1, "sent": 100, "last_seq": 99}}
    assert capture_loss_line(s) == ("lost 4; no trailer arrived for 2 of 3 streams: their tail loss is "
                                    "not counted")


def test_nothing_to_say_without_sequence_numbers():
    # the xdp ceiling and --app-load none track no sequence numbers of their own
    assert capture_loss_line({"lost": 0, "trailer": {"seen": 3}}) is None
    assert capture_loss_line({"received": 5}) is None


def test_notes_count_every_frame_with_capbench_frames_apart():
    s = {"packets": 1_203, "received": 1_000, "foreign": 200, "lost": 0, "streams": 1, "tail_loss_counted": True,
         "trailer": {"seen": 3, "streams": 1, "sent": 1_000}}
    assert capture_summary_notes(s) == [
        "captured 1,203 frames: 1,000 capbench frames (each sequence number once), 3 capbench trailers, 200 others",
        "lost 0 of the 1,000 frames sent, tail included (the generator's trailer frames carry its sent count)"]
    # --app-load none reads no stamp: nothing is known of foreign frames, nor of loss.
    assert capture_summary_notes({"packets": 5, "received": 5, "stamps_read": False}) == []
