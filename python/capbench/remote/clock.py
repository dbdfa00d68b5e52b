"""The offset between this machine's clock and a host's.

capbench stamps frames with CLOCK_MONOTONIC, which counts from each machine's boot: it is never
comparable across hosts. CLOCK_REALTIME is, when the clocks are synchronised (PTP), and this is
the clock measured here: a few samples of the host's `date +%s%N` over one open session, each
between two local readings; the sample with the shortest round trip gives the offset (host's
reading − the midpoint of the two local ones) with an uncertainty of half that round trip (the
host read its clock somewhere between them). It is a check of what the user says of the clocks,
recorded with the run; it cannot synchronise them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from capbench.errors import RunError
from capbench.remote.ssh import Host

SAMPLES = 8
# One line in, one reading out, for as long as stdin lasts.
_READER = 'while read -r _; do date +%s%N; done'


@dataclass(frozen=True)
class ClockOffset:
    host: str
    offset_ns: int  # the host's CLOCK_REALTIME minus this machine's, at the same moment
    uncertainty_ns: int  # half the round trip of the sample used: the offset is within ± this
    samples: int

    def to_json(self) -> dict:
        return {"host": self.host, "offset_ns": self.offset_ns, "uncertainty_ns": self.uncertainty_ns,
                "samples": self.samples, "clock": "realtime"}


def measure_offset(host: Host, samples: int = SAMPLES, timeout_s: float = 10.0) -> ClockOffset:
    """The host's realtime clock offset from this machine's (0 ± 0 for this machine)."""
    if host.local:
        return ClockOffset(host.name, 0, 0, 0)
    proc = host.popen(_READER)
    assert proc.stdin is not None and proc.stdout is not None
    best: tuple[int, int] | None = None  # (round trip, offset)
    deadline = time.monotonic() + timeout_s
    try:
        for _ in range(samples + 1):  # the first starts the session's date: not counted
            t0 = time.time_ns()
            proc.stdin.write("\n")
            proc.stdin.flush()
            line = proc.stdout.readline()
            t1 = time.time_ns()
            if not line.strip().isdigit():
                raise RunError(f"host {host.where}: cannot read its clock (`date +%s%N` printed {line.strip()[:80]!r})")
            if _ == 0:
                continue
            rtt, offset = t1 - t0, int(line) - (t0 + (t1 - t0) // 2)
            if best is None or rtt < best[0]:
                best = (rtt, offset)
            if time.monotonic() > deadline:
                break
    except (BrokenPipeError, OSError) as e:
        raise RunError(f"host {host.where}: the clock reading stopped: {e}") from None
    finally:
        try:
            proc.stdin.close()
        except OSError:
            pass
        try:
            proc.wait(timeout=5)
        except Exception:
            proc.kill()
            proc.wait()
    assert best is not None
    return ClockOffset(host.name, best[1], best[0] // 2, samples)
