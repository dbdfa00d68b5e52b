"""Host-wide sysctls that change capture figures: read them for the record, raise one for a run.

`net.core.netdev_max_backlog` bounds each CPU's backlog queue, the queue RPS
puts packets on for the receive CPU (`enqueue_to_backlog`). When it is full the
kernel drops the packet and counts it in the second column of
/proc/net/softnet_stat. It is a global setting: it exists only in the initial
network namespace, not per test bed.

Why raise it: a CPU that does not run for a while leaves its backlog to fill.
The vCPUs of the machine capbench was built on stall for up to 20 ms several
times a second (hypervisor steal, measured with a pinned clock_gettime loop),
and the default 1,000 packets last 10 ms at 100 kpps. `--backlog` lets a user
take that stall out of a measurement, or keep it in (the default: the system as
it is).

A raised value is put back when its test bed is removed, and only if nobody
changed it since: the test bed's state file remembers (was, set), so `capbench
testbed down` also restores it after a crashed run.
"""

from __future__ import annotations

from pathlib import Path

from capbench.errors import RunError, UsageError

PROC_SYS = Path("/proc/sys")
BACKLOG = "net.core.netdev_max_backlog"
# Recorded in run.json: the settings that change what a capture benchmark measures.
RECORDED = (
    BACKLOG,
    "net.core.netdev_budget",
    "net.core.netdev_budget_usecs",
    "net.core.dev_weight",
    "net.core.rmem_default",
    "net.core.rmem_max",
    "net.core.bpf_jit_enable",
)
BACKLOG_MAX = 2**31 - 1


def _path(key: str) -> Path:
    return PROC_SYS / key.replace(".", "/")


def read(key: str) -> str | None:
    """The value of a sysctl as text, None where this kernel (or namespace) has none."""
    try:
        return _path(key).read_text().strip()
    except OSError:
        return None


def write(key: str, value: str) -> None:
    try:
        _path(key).write_text(value + "\n")
    except OSError as e:
        raise RunError(f"cannot set {key} to {value}: {e.strerror} "
                       f"(it exists only in the initial network namespace; run capbench there as root)") from None


def snapshot() -> dict[str, str | None]:
    """Every recorded sysctl, for run.json."""
    return {key: read(key) for key in RECORDED}


def check_backlog(value: int) -> int:
    if not 1 <= value <= BACKLOG_MAX:
        raise UsageError(f"--backlog {value} is out of range: give a packet count from 1 to {BACKLOG_MAX} "
                         f"(the kernel's default is 1000)")
    return value


def raise_to(key: str, value: int) -> dict | None:
    """Raise an integer sysctl to at least `value`; the (was, set) record to restore it, or None
    when it already was that high (then it is left alone and nothing is restored)."""
    current = read(key)
    if current is None:
        raise UsageError(f"this kernel has no {key} here: run capbench in the initial network namespace, "
                         f"or leave out --backlog")
    if int(current) >= value:
        return None
    write(key, str(value))
    return {"key": key, "was": current, "set": str(value)}


def set_file(path: Path | str, value: str) -> dict | None:
    """Write a sysfs setting (a CPU's scaling_governor, say); the (was, set) record to put it
    back, or None when it already had that value."""
    path = Path(path)
    try:
        was = path.read_text().strip()
        if was == value:
            return None
        path.write_text(value + "\n")
    except OSError as e:
        raise RunError(f"cannot set {path} to {value}: {e.strerror}") from None
    return {"path": str(path), "was": was, "set": value}


def restore(record: dict) -> None:
    """Undo `raise_to` or `set_file`, unless someone else changed the value since (then theirs stands)."""
    if "path" in record:
        p = Path(record["path"])
        try:
            if p.read_text().strip() == record["set"]:
                p.write_text(record["was"] + "\n")
        except OSError as e:
            raise RunError(f"cannot put {p} back to {record['was']}: {e.strerror}") from None
        return
    if read(record["key"]) == record["set"]:
        write(record["key"], record["was"])
