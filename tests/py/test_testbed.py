"""Test bed naming and bookkeeping that needs no root (the real one is tested end to end)."""

import json
import os
import subprocess
import sys

import pytest
from capbench.testbed import veth_pair as tbmod


def test_names_fit_the_kernel_limits():
    tb = tbmod.Testbed.named("1a2b3c", rx_cpu=1)
    assert (tb.gen_ns, tb.cap_ns) == ("capbench-1a2b3c-gen", "capbench-1a2b3c-cap")
    assert (tb.gen_if, tb.cap_if) == ("cb1a2b3cg", "cb1a2b3cc")
    assert len(tb.gen_if) <= 15 and len(tb.cap_if) <= 15  # IFNAMSIZ - 1
    assert tbmod.NS_RE.match(tb.gen_ns) and tbmod.NS_RE.match(tb.cap_ns)
    assert not tbmod.NS_RE.match("capbench-1a2b3c-foo")
    assert not tbmod.NS_RE.match("mynet")


@pytest.mark.parametrize("cpu, mask", [(0, "00000001"), (1, "00000002"), (5, "00000020"), (31, "80000000"),
                                       (32, "00000001,00000000"), (65, "00000002,00000000,00000000")])
def test_rps_mask(cpu, mask):
    assert tbmod.rps_mask(cpu) == mask


def test_owner_alive(tmp_path):
    me = {"owner_pid": os.getpid(), "owner_start_ticks": tbmod.process_start_ticks(os.getpid())}
    assert tbmod.owner_alive(me)
    # A reused pid: same number, another start time.
    assert not tbmod.owner_alive(me | {"owner_start_ticks": me["owner_start_ticks"] - 1})
    p = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    assert not tbmod.owner_alive({"owner_pid": int(p.stdout)})
    assert not tbmod.owner_alive({})
    zombie = subprocess.Popen([sys.executable, "-c", "pass"])
    for _ in range(200):  # exited but not reaped yet: dead all the same
        if tbmod.process_start_ticks(zombie.pid) is None:
            break
        import time

        time.sleep(0.01)
    assert not tbmod.owner_alive({"owner_pid": zombie.pid})
    zombie.wait()
    assert not tbmod.owner_alive({"owner_pid": 0})


def test_state_files(tmp_path, monkeypatch):
    monkeypatch.setenv(tbmod.STATE_DIR_ENV, str(tmp_path))
    tb = tbmod.Testbed.named("abcdef", rx_cpu=1)
    tbmod._write_state(tb, os.getpid(), "unit test")
    state = tbmod.read_state("abcdef")
    assert state["owner_pid"] == os.getpid() and state["purpose"] == "unit test"
    assert state["cap_if"] == "cbabcdefc" and state["rx_cpu"] == 1
    assert json.loads((tmp_path / "abcdef.json").read_text()) == state
    tbmod._remove_state("abcdef")
    assert tbmod.read_state("abcdef") is None
    tbmod._remove_state("abcdef")  # twice is fine


def test_other_test_beds_in_use_are_those_with_a_living_owner(tmp_path, monkeypatch):
    monkeypatch.setenv(tbmod.STATE_DIR_ENV, str(tmp_path))
    for tb_id in ("aaaaaa", "bbbbbb"):
        tbmod._write_state(tbmod.Testbed.named(tb_id), os.getpid(), "unit test")
    dead = tbmod.Testbed.named("cccccc")
    tbmod._write_state(dead, os.getpid(), "unit test")
    state = json.loads((tmp_path / "cccccc.json").read_text()) | {"owner_pid": 2 ** 22 + 1}
    (tmp_path / "cccccc.json").write_text(json.dumps(state))  # a crashed run's leftover: no traffic
    assert tbmod.others_in_use("aaaaaa") == ("bbbbbb",)
    monkeypatch.setenv(tbmod.STATE_DIR_ENV, str(tmp_path / "none"))
    assert tbmod.others_in_use("aaaaaa") == ()


def test_sigterm_raises_terminated_and_the_handler_is_restored():
    import signal

    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(tbmod.Terminated):
        with tbmod.sigterm_raises():
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(100_000):  # the handler runs between bytecodes
                pass
    assert signal.getsignal(signal.SIGTERM) is before
