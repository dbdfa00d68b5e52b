"""--profile in a trial: perf samples every CPU over the load window, and each capture side's
record gets its `profile` (analysis.profile_record) for the trial's roles, and the trial's folded
stacks go to the results folder's profiles/ (the report draws the flame graph from them)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from typing import Any

from capbench.profile import analysis
from capbench.profile.analysis import Owners, Role
from capbench.profile.perf_record import Sampler

FOLDED_SUFFIX = ".folded"


def file_stem(started_at: str, backend: str, size: str) -> str:
    """A trial's file name: its start time and what it measured, in characters any file system takes."""
    return re.sub(r"[^A-Za-z0-9_.+-]+", "_", f"{started_at.replace(':', '')}-{backend}-{size}")


class TrialProfile(Sampler):
    """One trial's sampling (a Sampler started with the trial's children: perf is one of them, so
    it stops with them however the trial ends), and the records made from it."""

    def records(self, results: Sequence[Any], roles: Sequence[Mapping[str, Role]], owners: Owners) -> list[Any]:
        """`results` (TrialResults, one per capture side) each with its `profile`: the same samples
        seen through its own roles (`roles[i]`) and its own captured packets, the trial's work told
        from others' by `owners`. One folded file for the trial, its roots named by the first side's
        roles."""
        parsed, warnings = self.samples()
        p = self.profiling
        facts: dict[str, Any] = {"tool": p.tool, "event": "cpu-clock", "warnings": warnings,
                                 "skipped_lines": parsed.skipped_lines}
        if p.folder is not None and results:
            first = results[0]
            p.folder.mkdir(parents=True, exist_ok=True)
            path = p.folder / (file_stem(first.started_at, first.backend, first.size_label) + FOLDED_SUFFIX)
            analysis.write_folded(path, analysis.folded(parsed.samples, roles[0], owners))
            facts["folded"] = f"{p.folder.name}/{path.name}"
        return [dataclasses.replace(r, profile=analysis.profile_record(
            parsed.samples, role, packets=r.received, period_ns=p.period_ns, hz=p.hz,
            window_s=self.window_s, profiler_pid=self.pid, facts=facts, proc_stat=self.proc_stat, owners=owners))
            for r, role in zip(results, roles)]
