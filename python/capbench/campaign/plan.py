"""A campaign's plan: its steps, which of them are still to run, where each runs and how long
each will take.

Computed once per run (`plan_of`), from the campaign, what the results folder already
holds (campaign.resume) and this machine's usable CPUs, and handed down: the runner places
the parts of a trial and writes the placements into run.json from it, the execution
(campaign.execute) walks its steps and counts the time left against its estimates.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from capbench.campaign.matrix import CUSTOM_PIN, Campaign, Step
from capbench.campaign.resume import Progress
from capbench.methods import registry
from capbench.methods.method import TRIAL_OVERHEAD_S, Estimate, MethodSettings
from capbench.trial.sensors import sensor_backends


@dataclass(frozen=True)
class Placement:
    """Where the parts of a trial run: generator, kernel receive work (RPS), counter."""

    gen_cpu: int | None
    rx_cpu: int | None  # None: not steered, the sending CPU does it
    cap_cpu: int | None  # None: the scheduler decides
    shares_gen_cpu: bool  # on few cores a part shares the generator's CPU: said in the metadata


def placement(pin: str, cpus: Sequence[int], polls: bool = False) -> Placement:
    """The seeds' placements on this machine's usable CPUs (sorted).

    A:A: kernel receive work and counter on one CPU, the generator on another (seed
    000's "#1"). A:B: receive work and counter on two CPUs (on two cores the counter
    then shares the generator's). auto: no RPS and no pinning of the counter.

    A counter that polls (`polls`: its workers never sleep, DPDK's) takes all of its CPU, so
    beside the receive work (A:A) the kernel thread that drains the receive ring runs only when
    the scheduler takes the CPU from the poller, and the ring overflows (measured on the veth
    test bed: 36-48 % lost there, nothing with a CPU of its own). It gets a CPU of its own
    where there is one (A:B's third CPU); on two CPUs A:A stays as it is and says so
    (Plan.polling_notes, and each lossy trial's remark: loss_layers.polling_remarks).
    """
    gen = cpus[0]
    rx = cpus[1 % len(cpus)]
    if pin == "A:A" and polls and own_cpu_for_poller(cpus):
        return placement("A:B", cpus)
    if pin == "A:A":
        return Placement(gen, rx, rx, rx == gen)
    if pin == "A:B":
        cap = cpus[2] if len(cpus) > 2 else gen
        return Placement(gen, rx, cap, cap == gen or rx == gen)
    return Placement(gen, None, None, False)


def own_cpu_for_poller(cpus: Sequence[int]) -> bool:
    """Whether a polling counter can have a CPU that neither the generator nor the receive work
    uses: a third CPU."""
    return len(cpus) > 2


POLLING = " polling"


def placement_key(pin: str, polls: bool) -> str:
    """A placement's name in the plan and in run.json: the pin, and " polling" for a counter that
    polls (placement)."""
    return pin + POLLING if polls else pin


@dataclass(frozen=True)
class Plan:
    """The steps of a campaign, those still to run, and the placement of each pin."""

    campaign: Campaign
    progress: Progress  # what the results folder already holds
    steps: tuple[Step, ...]
    todo: tuple[Step, ...]  # the steps the results folder has not completed, in order
    placements: Mapping[str, Placement]  # by placement_key: the pin, and whether the counter polls
    cpus: tuple[int, ...]  # the usable CPUs the placements were made on
    estimates: Mapping[str, Estimate]  # by step key: its method's estimate of trials and time

    def placement(self, step: Step) -> Placement:
        return self.placements[placement_key(step.pin, self.campaign.polls(step.backend))]

    def estimate(self, step: Step) -> Estimate:
        return self.estimates[step.key]

    def estimated_s(self, steps: Sequence[Step]) -> float:
        return sum(self.estimates[s.key].seconds for s in steps)

    def estimated_trials(self, steps: Sequence[Step]) -> int:
        return sum(self.estimates[s.key].trials for s in steps)

    def shared_notes(self) -> list[str]:
        """run.json's notes for placements where a part shares the generator's CPU."""
        return [f"placement {pin}: a part shares the generator's CPU on this {len(self.cpus)}-CPU machine"
                for pin in sorted(p for p, pl in self.placements.items() if pl.shares_gen_cpu)] + self.polling_notes()

    def polling_notes(self) -> list[str]:
        """For each placement where a polling counter shares the receive work's CPU (A:A on two
        CPUs, or CPUs given so): why its receive ring will lose frames and how to avoid it."""
        pollers = ", ".join(sorted({b for s in self.steps for b in sensor_backends(s.backend) if self.campaign.polls(b)}))
        why = ("no CPU of its own" if not own_cpu_for_poller(self.cpus) else "as given") + \
            f" on this {len(self.cpus)}-CPU machine"
        return [f"placement {key.removesuffix(POLLING)}: {pollers} polls on CPU {p.cap_cpu}, the CPU of the kernel "
                f"thread that drains the receive ring ({why}): that thread runs only when the scheduler takes the CPU "
                f"from the poller, so the rx ring loses frames; give the counter a CPU apart with --pin A:B or "
                f"--cap-cpu"
                for key, p in sorted(self.placements.items())
                if key.endswith(POLLING) and p.cap_cpu is not None and p.cap_cpu == p.rx_cpu]


def method_settings(c: Campaign) -> MethodSettings:
    """The search settings every method of the campaign shares."""
    return MethodSettings(precision_pct=c.precision_pct, loss_tolerance_frames=c.loss_tolerance_frames,
                          trial_s=c.trial_s, steps=c.steps_per_sweep, pause_s=c.pause_s,
                          max_load=c.max_load)


def estimate_step(c: Campaign, step: Step, overhead_s: float = TRIAL_OVERHEAD_S) -> Estimate:
    """Rough trials and time of a step (its method's estimate), for the progress bar and the time left."""
    return registry.get(step.method).estimate(method_settings(c), c.trial_duration_s(step), overhead_s)


def placements_of(c: Campaign, cpus: Sequence[int]) -> dict[str, Placement]:
    """The placement of each of the campaign's pins on `cpus`, by placement_key."""
    placements: dict[str, Placement] = {}
    for step in c.steps():
        polls = c.polls(step.backend)
        key = placement_key(step.pin, polls)
        if key in placements:
            continue
        if step.pin == CUSTOM_PIN and c.custom_cpus is not None:  # as given, whatever the counter
            gen, rx, cap = c.custom_cpus
            placements[key] = Placement(gen, rx, cap, gen is not None and gen in (rx, cap))
        else:
            placements[key] = placement(step.pin, cpus, polls)
    return placements


def gen_cpu_shared(c: Campaign, cpus: Sequence[int]) -> str | None:
    """Where a part of a trial shares the generator's CPU (said in a note; an engine that sends from
    that CPU's softirq is passed over), or None."""
    shared = sorted(key for key, p in placements_of(c, cpus).items() if p.shares_gen_cpu)
    return f"placement {', '.join(shared)} puts receive work or a counter there" if shared else None


def plan_of(c: Campaign, progress: Progress, cpus: Sequence[int]) -> Plan:
    steps = tuple(c.steps())
    return Plan(c, progress, steps, tuple(s for s in steps if not progress.done(s)), placements_of(c, cpus),
                tuple(cpus), {s.key: estimate_step(c, s) for s in steps})
