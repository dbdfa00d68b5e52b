"""A campaign's plan: its steps, which of them are still to run, and where each runs.

Computed once per run (`plan_of`), from the campaign, what the results folder already
holds and this machine's usable CPUs, and handed down: the runner places the parts of a
trial and writes the placements into run.json from it, the execution walks its steps.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from capbench.campaign.matrix import CUSTOM_PIN, Campaign, Progress, Step


@dataclass(frozen=True)
class Placement:
    """Where the parts of a trial run: generator, kernel receive work (RPS), counter."""

    gen_cpu: int | None
    rx_cpu: int | None  # None: not steered, the sending CPU does it
    cap_cpu: int | None  # None: the scheduler decides
    shares_gen_cpu: bool  # on few cores a part shares the generator's CPU: said in the metadata


def placement(pin: str, cpus: Sequence[int]) -> Placement:
    """The seeds' placements on this machine's usable CPUs (sorted).

    A:A: kernel receive work and counter on one CPU, the generator on another (seed
    000's "#1"). A:B: receive work and counter on two CPUs (on two cores the counter
    then shares the generator's). auto: no RPS and no pinning of the counter.
    """
    gen = cpus[0]
    rx = cpus[1 % len(cpus)]
    if pin == "A:A":
        return Placement(gen, rx, rx, rx == gen)
    if pin == "A:B":
        cap = cpus[2] if len(cpus) > 2 else gen
        return Placement(gen, rx, cap, cap == gen or rx == gen)
    return Placement(gen, None, None, False)


@dataclass(frozen=True)
class Plan:
    """The steps of a campaign, those still to run, and the placement of each pin."""

    campaign: Campaign
    steps: tuple[Step, ...]
    todo: tuple[Step, ...]  # the steps the results folder has not completed, in order
    placements: Mapping[str, Placement]  # by pin
    cpus: tuple[int, ...]  # the usable CPUs the placements were made on

    def placement(self, step: Step) -> Placement:
        return self.placements[step.pin]

    def shared_notes(self) -> list[str]:
        """run.json's notes for placements where a part shares the generator's CPU."""
        return [f"placement {pin}: a part shares the generator's CPU on this {len(self.cpus)}-CPU machine"
                for pin in sorted(p for p, pl in self.placements.items() if pl.shares_gen_cpu)]


def plan_of(c: Campaign, progress: Progress, cpus: Sequence[int]) -> Plan:
    steps = tuple(c.steps())
    placements: dict[str, Placement] = {}
    for step in steps:
        if step.pin in placements:
            continue
        if step.pin == CUSTOM_PIN and c.custom_cpus is not None:
            gen, rx, cap = c.custom_cpus
            placements[step.pin] = Placement(gen, rx, cap, gen is not None and gen in (rx, cap))
        else:
            placements[step.pin] = placement(step.pin, cpus)
    return Plan(c, steps, tuple(s for s in steps if not progress.done(s)), placements, tuple(cpus))
