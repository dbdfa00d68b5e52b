"""The receive models' bad input and the NAPI thread lookup, without a kernel to ask."""

from __future__ import annotations

import pytest
from capbench.testbed import rxmode
from capbench.errors import UsageError


@pytest.mark.parametrize("text, policy, prio", [("other", "other", 0), ("fifo", "fifo", 50), ("fifo:1", "fifo", 1),
                                                ("fifo:99", "fifo", 99)])
def test_napi_sched_parses_the_policies(text, policy, prio):
    s = rxmode.NapiSched.parse(text)
    assert (s.policy, s.priority) == (policy, prio)
    assert rxmode.NapiSched.parse(s.text) == s  # what a record says reads back the same


@pytest.mark.parametrize("text", ["", "rr", "fifo:0", "fifo:100", "fifo:x", "other:5", "FIFO:50"])
def test_a_bad_napi_sched_names_the_choices(text):
    with pytest.raises(UsageError) as e:
        rxmode.NapiSched.parse(text)
    assert "`other`" in str(e.value) and "fifo:N" in str(e.value) and e.value.exit_status == 2


def test_an_unknown_rx_mode_names_the_modes():
    with pytest.raises(UsageError) as e:
        rxmode.check_mode("nic")
    assert all(m in str(e.value) for m in rxmode.RX_MODES)
    assert rxmode.check_mode(rxmode.DEFAULT_RX_MODE) == rxmode.DEFAULT_RX_MODE


def test_a_kernel_without_threaded_napi_is_told_to_use_rps(tmp_path):
    missing = tmp_path / "threaded"
    with pytest.raises(UsageError) as e:
        rxmode.check_available("napi", missing)
    assert "--rx-mode rps" in str(e.value) and "5.12" in str(e.value)
    rxmode.check_available("rps", missing)  # rps needs nothing of the kind
    missing.write_text("0\n")
    rxmode.check_available("napi", missing)


def test_napi_threads_are_found_by_their_cut_name(tmp_path):
    # comm holds 15 characters: "napi/cb1a2b3cc-8193" reads "napi/cb1a2b3cc-".
    for pid, comm in ((10, "napi/cb1a2b3cc-"), (11, "napi/cb1a2b3cc-"), (12, "napi/cb999999c-"), (13, "bash")):
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "comm").write_text(comm + "\n")
    (tmp_path / "self").mkdir()
    (tmp_path / "14").mkdir()  # a process gone between the listing and the read
    assert rxmode.thread_pids("cb1a2b3cc", tmp_path) == [10, 11]
    assert rxmode.thread_pids("cb000000c", tmp_path) == []
