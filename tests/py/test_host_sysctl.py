"""Raising and restoring a host sysctl, on a fake /proc/sys and registry (no root needed)."""

import pytest
from capbench.testbed import host_sysctl
from capbench.errors import UsageError
from capbench.owners import Holder, HostSettings


@pytest.fixture
def proc_sys(tmp_path, monkeypatch):
    monkeypatch.setattr(host_sysctl, "PROC_SYS", tmp_path)
    f = tmp_path / "net/core/netdev_max_backlog"
    f.parent.mkdir(parents=True)
    f.write_text("1000\n")
    return f


def test_raise_and_restore(proc_sys, tmp_path):
    registry, me = HostSettings(tmp_path / "run"), Holder.of_this_process("aaaaaa")
    record = registry.hold(me, host_sysctl.setting(host_sysctl.BACKLOG, 10_000))
    assert proc_sys.read_text() == "10000\n"
    assert record == {"key": host_sysctl.BACKLOG, "was": "1000", "set": "10000", "restores_to": "1000"}
    registry.release(me.id)
    assert host_sysctl.read(host_sysctl.BACKLOG) == "1000"


def test_never_lowers_and_then_restores_nothing(proc_sys, tmp_path):
    proc_sys.write_text("20000\n")
    registry = HostSettings(tmp_path / "run")
    assert registry.hold(Holder.of_this_process("aaaaaa"), host_sysctl.setting(host_sysctl.BACKLOG, 10_000)) is None
    assert host_sysctl.read(host_sysctl.BACKLOG) == "20000"
    assert registry.held() == {}


def test_a_value_changed_by_someone_else_stands(proc_sys, tmp_path):
    registry, me = HostSettings(tmp_path / "run"), Holder.of_this_process("aaaaaa")
    registry.hold(me, host_sysctl.setting(host_sysctl.BACKLOG, 5000))
    proc_sys.write_text("7000\n")
    registry.release(me.id)
    assert host_sysctl.read(host_sysctl.BACKLOG) == "7000"


def test_missing_sysctl_is_a_usage_error(tmp_path, monkeypatch):
    monkeypatch.setattr(host_sysctl, "PROC_SYS", tmp_path)
    assert host_sysctl.read(host_sysctl.BACKLOG) is None
    with pytest.raises(UsageError, match="initial network namespace"):
        host_sysctl.setting(host_sysctl.BACKLOG, 5000)
    assert host_sysctl.snapshot()[host_sysctl.BACKLOG] is None


@pytest.mark.parametrize("bad", [0, -1, 2**31])
def test_backlog_range(bad):
    with pytest.raises(UsageError, match="--backlog"):
        host_sysctl.check_backlog(bad)
    assert host_sysctl.check_backlog(10_000) == 10_000
