"""A tune on simulated devices (methods.simulated), driven as `capbench tune` drives its campaign:
the shared lab of the tune tests (test_tune, test_tune_evidence, test_tune_cpu_limit)."""

import dataclasses

from capbench.campaign import execute as campaign_run
from capbench.campaign import matrix as cmod
from capbench.campaign import plan, resume
from capbench.methods.simulated import SimulatedDevice
from capbench.tune import knobs, tuning


class Crash(KeyboardInterrupt):
    """Ctrl-C in the middle of a trial: it never returns, so it is never recorded."""


class Lab:
    """A simulated device per step whose capacity grows with its receive ring; records trials and
    answers. `crash_at`: the n-th measurement (1-based) is interrupted."""

    def __init__(self, crash_at=None):
        self.trials, self.outcomes, self.measured, self.crash_at = [], [], 0, crash_at
        self.devices = {}

    def device(self, step):
        d = SimulatedDevice(200e3 + 40 * (step.rx_ring or 4096), frame_len=64, buffer_frames=step.rx_ring or 4096)
        lab = self
        self.devices[step.key] = d

        class Counted:
            def measure(self, duration_s, load):
                lab.measured += 1
                if lab.measured == lab.crash_at:
                    raise Crash()
                return d.measure(duration_s, load)

        return Counted()

    def run(self):
        return campaign_run.StepRun(self.device, self.trials.append, self.outcomes.append,
                                    lambda s: [d.pause(s) for d in self.devices.values()])


def small_tune(outcomes=()):
    """A tune of afp-v3's rx-ring over 256, 1024 and 16384 (and the defaults) at 64 B, PDR."""
    (k,) = knobs.space("afp-v3", ["rx-ring"])
    space = tuning.space_of("afp-v3", [dataclasses.replace(k, candidates=("256", "1024", "16384"))])
    c = cmod.build({"name": "tune", "methods": ["mlr"], "backends": ["afp-v3"], "sizes": "64",
                    "pause": f"{tuning.PAUSE_S:g}"}, [], backends_known=("afp-v3",))
    base = {"afp-v3": c.matrices[0]}
    c = dataclasses.replace(c, matrices=tuple(knobs.apply(c.matrices[0], cfg, space.knobs) for cfg in space.configs))
    return tuning.Tune(c, (space,), tuning.GOALS["pdr"], 30 * 60, base, outcomes)


def drive(tune, lab, recorded=()):
    progress = resume.progress_of(recorded, lab_outcomes(tune))
    tune.drive(plan.plan_of(tune.campaign, progress, [0, 1]), lab.run())
    return tune


def lab_outcomes(tune):
    return list(tune.outcomes)
