"""A polling counter's CPU is 100 % by design (issue 29): the record keeps how much of it was idle
polling (capbench-cap's idle_poll_pct), and the tables and the profiles say it beside its CPU time."""

from capbench.report import profiles, tables
from capbench.trial.record import load_trial
from records import make_result


def polled(idle: float | None, **kw):
    return make_result(**{"backend": "dpdk", "polls": True, "app_cpu_pct": 100.0, "idle_poll_pct": idle, **kw})


def test_the_cpu_cell_says_how_much_was_idle_polling():
    cpu = 5  # row_parts: frame, offered, sent, captured, loss, app / kernel, lost
    assert tables.row_parts([polled(97.24)])[cpu] == ("100.0 / 12.2", "97.2 % of it idle polling")
    # Repetitions: the median share, after the spread of the loads.
    reps = [polled(90.0, repeat=1), polled(95.0, repeat=2, app_cpu_pct=99.0), polled(99.0, repeat=3)]
    main, spread = tables.row_parts(reps)[cpu]
    assert main == "100.0 / 12.2" and spread.endswith("; 95.0 % of it idle polling"), spread
    # A counter that does not poll (or an older record) says nothing more.
    assert tables.row_parts([make_result()])[cpu] == ("63.6 / 12.2", "")
    assert tables.idle_poll_text([polled(None)]) == ""


def test_the_record_keeps_it():
    r = polled(97.24)
    assert load_trial(r.to_record()).idle_poll_pct == 97.24
    record = r.to_record()
    del record["idle_poll_pct"]  # written before it: not said
    assert load_trial(record).idle_poll_pct is None


def test_the_profiles_counter_time_includes_the_idle_polling():
    role = profiles.RoleTime(cpus=(1,), samples=100, expected_samples=None, shares_pct={}, groups_pct={},
                             groups_ns={}, ns_per_packet=1234.0, top_self=())
    assert profiles._counter_ns(polled(97.24), role) == "1,234\n(97.2 % idle polling)"
    assert profiles._counter_ns(make_result(), role) == "1,234"
    assert profiles._counter_ns(polled(50.0), None) == "—\n(50.0 % idle polling)"
