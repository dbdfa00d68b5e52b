"""Read `perf script` output: one Sample per sample, its stack leaf first.

The text is what `perf script -F comm,pid,tid,cpu,period,ip,sym,dso` prints for a perf.data
recorded with call graphs (-g): a header line per sample,

    napi/cb1a2b-8 4242/4242 [001]    1000000

then one frame per line, leaf first, each `\\t<address> <symbol> (<object>)`, and a blank line.
A process names itself (prctl PR_SET_NAME takes any bytes but NUL), so a comm can hold spaces,
a newline or anything else: lines that are neither a header nor a frame are counted and skipped,
never trusted, and every name is kept printable (`printable`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from capbench.records import printable

# The header: everything before the last "pid/tid [cpu] period" is the comm (it may hold spaces).
_HEADER = re.compile(r"^(?P<comm>.*?)\s+(?P<pid>-?\d+)/(?P<tid>-?\d+)\s+\[(?P<cpu>\d+)\]\s+(?P<period>\d+)\s*$")
# A frame: its address (hex), then the symbol, then the object in parentheses at the line's end.
# The object is the rest from the first " (" after the symbol: it may hold parentheses itself
# ("/memfd:name (deleted)").
_FRAME = re.compile(r"^\s+(?P<ip>[0-9a-fA-F]{1,16})\s+(?P<sym>.*?)\s+\((?P<dso>.*)\)\s*$")
# x86-64 and arm64 both map the kernel in the upper half of the address space: a frame at or above
# this address is the kernel's (a JIT-compiled BPF program included), one below it user space's.
KERNEL_START = 0x8000_0000_0000_0000
UNKNOWN = "[unknown]"


@dataclass(frozen=True)
class Frame:
    symbol: str  # "[unknown]" where perf could not resolve it
    dso: str  # the object: [kernel.kallsyms], a BPF program's name, a path, or [unknown]
    kernel: bool

    @property
    def name(self) -> str:
        """How reports show it: a kernel symbol as it is, a user one with its object's file name."""
        if self.kernel:
            return self.symbol
        obj = self.dso.rsplit("/", 1)[-1]
        return f"{self.symbol} {obj if obj.startswith('[') else f'[{obj}]'}"


@dataclass(frozen=True)
class Sample:
    cpu: int
    pid: int
    tid: int
    comm: str
    period: int  # the event's count since the last sample: nanoseconds for cpu-clock
    frames: tuple[Frame, ...] = field(default=())  # leaf first

    @property
    def kernel_symbols(self) -> list[str]:
        return [f.symbol for f in self.frames if f.kernel]

    @property
    def user_leaf(self) -> bool:
        """The sample interrupted user-space code (its leaf frame is not the kernel's)."""
        return bool(self.frames) and not self.frames[0].kernel

    @property
    def reaches_user(self) -> bool:
        return any(not f.kernel for f in self.frames)


@dataclass
class Parsed:
    samples: list[Sample]
    skipped_lines: int  # lines that were neither a header nor a frame of one


def _frame(m: re.Match[str]) -> Frame:
    ip = int(m["ip"], 16)
    return Frame(symbol=printable(m["sym"]) or UNKNOWN, dso=printable(m["dso"]) or UNKNOWN, kernel=ip >= KERNEL_START)


def parse(lines: Iterable[str]) -> Parsed:
    """The samples of `perf script` output (see the module doc)."""
    samples: list[Sample] = []
    skipped = 0
    head: re.Match[str] | None = None
    frames: list[Frame] = []

    def close() -> None:
        if head is not None:
            samples.append(Sample(cpu=int(head["cpu"]), pid=int(head["pid"]), tid=int(head["tid"]),
                                  comm=printable(head["comm"].strip()), period=int(head["period"]),
                                  frames=tuple(frames)))

    for line in lines:
        line = line.rstrip("\n")
        if not line.strip():
            close()
            head, frames = None, []
            continue
        m = _FRAME.match(line) if line[0] in " \t" else None
        if m is not None and head is not None:
            frames.append(_frame(m))
            continue
        h = _HEADER.match(line)
        if h is not None and line[0] not in " \t":
            close()
            head, frames = h, []
        else:
            skipped += 1
    close()
    return Parsed(samples=samples, skipped_lines=skipped)

