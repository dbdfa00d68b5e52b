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

The `backlog` knob (`capbench run --vary backlog=N`, `capbench tune --knobs backlog`) sets it
to exactly N for the steps that ask, one step after another (`setting(..., exact=True)`), held
by the run's test bed like --backlog's: put back as below.

A raised value is held by the test bed that needed it (capbench.owners): it is
put back to the value the first holder found when the last test bed holding it
is removed (`capbench testbed down` after a crashed run too), and only if nobody
changed it by hand since.
"""

from __future__ import annotations

from pathlib import Path

from capbench import owners
from capbench.errors import UsageError
from capbench.options import whole_number
from capbench.owners import Setting

PROC_SYS = Path("/proc/sys")
BACKLOG = "net.core.netdev_max_backlog"
RMEM_MAX = "net.core.rmem_max"
# The sysctls a run raises (--backlog, --tune): the only ones `setting` makes, and so the only
# ones the host-settings registry reads or writes back (owners.declare, below).
HELD = (BACKLOG, RMEM_MAX)
# Recorded in run.json: the settings that change what a capture benchmark measures.
RECORDED = (
    BACKLOG,
    "net.core.netdev_budget",
    "net.core.netdev_budget_usecs",
    "net.core.dev_weight",
    "net.core.rmem_default",
    RMEM_MAX,
    "net.core.bpf_jit_enable",
)
BACKLOG_MAX = 2**31 - 1


def _path(key: str) -> Path:
    return PROC_SYS / key.replace(".", "/")


def path(key: str) -> str:
    """The file of sysctl `key`: the registry's key of a setting of it (Setting.path)."""
    return str(_path(key))


def read(key: str) -> str | None:
    """The value of a sysctl as text, None where this kernel (or namespace) has none."""
    try:
        return _path(key).read_text().strip()
    except OSError:
        return None


def snapshot() -> dict[str, str | None]:
    """Every recorded sysctl, for run.json."""
    return {key: read(key) for key in RECORDED}


def check_backlog(value: int) -> int:
    if not 1 <= value <= BACKLOG_MAX:
        raise UsageError(f"--backlog {value} is out of range: give a packet count from 1 to {BACKLOG_MAX} "
                         f"(the kernel's default is 1000)")
    return value


def parse_backlog(text: str) -> int:
    """The backlog knob's value: a packet count in the kernel's range, as --backlog's (check_backlog)."""
    value = whole_number(text, 1, BACKLOG_MAX)
    if value is None:
        raise UsageError(f"backlog {text!r}: give a packet count from 1 to {BACKLOG_MAX} (the kernel's default "
                         f"is 1000), e.g. backlog=10000")
    return value


def held_here(path: str, value: str) -> bool:
    """Whether `path` at `value` is one of the sysctls a run raises (HELD), at a count: what the
    registry may read and write back (owners.declare)."""
    return path in {str(_path(key)) for key in HELD} and value.isascii() and value.isdigit() and len(value) <= 20


owners.declare(owners.FILE, held_here)


def setting(key: str, value: int, exact: bool = False) -> Setting:
    """The sysctl `key` (one of HELD) at `value` or more (`exact`: at `value`, lower too), for a run
    to hold (owners.HostSettings)."""
    if key not in HELD:
        raise ValueError(f"{key} is not one of the sysctls capbench holds (host_sysctl.HELD)")
    if read(key) is None:
        raise UsageError(f"this kernel has no {key} here: run capbench in the initial network namespace, "
                         f"or leave out the option that sets it")
    return Setting(path=str(_path(key)), value=str(value), at_least=not exact, key=key)
