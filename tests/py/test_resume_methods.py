"""Resuming every search method after k of its trials: the same trials and answer as a run that
was never interrupted, with only the missing trials measured (against the simulated device)."""

import dataclasses
from pathlib import Path

import pytest
from capbench.campaign import resume
from capbench.campaign import plan
from capbench.campaign import matrix as cmod
from capbench.campaign import execute as campaign_run
from capbench.errors import UsageError
from capbench.methods import back2back
from capbench.methods.simulated import SimulatedDevice
from capbench.rates import wire_pps
from capbench.campaign.results import TRIALS_FILE, RunWriter, read_outcomes, scan_trials

BACKENDS = ("pcap", "afp-v3", "afxdp")
CAPACITY = {"pcap": 300_000.0, "afp-v3": 900_000.0}


def campaign(methods, backends=("pcap",), sizes=(64,)):
    text = (f'[campaign]\ntrial = "5s"\npause = "2"\nsteps = 6\nmethods = {list(methods)!r}\n'
            f'backends = {list(backends)!r}\nsizes = {list(sizes)!r}\n').replace("'", '"')
    return cmod.loads(text, Path("resume.toml"), backends_known=BACKENDS)


class Crash(KeyboardInterrupt):
    """Ctrl-C in the middle of a trial: it never returns, so it is never recorded."""


class Lab:
    """Simulated devices per step; records trials, answers and pauses. `crash_at`: the n-th
    measurement (1-based, over all steps) is interrupted."""

    def __init__(self, crash_at=None):
        self.trials, self.outcomes, self.pauses = [], [], []
        self.devices = {}
        self.measured = 0
        self.crash_at = crash_at

    def device(self, step):
        # A queue of 100,000 frames: bursts shorter than about 125,000 frames at 64 B get through.
        d = SimulatedDevice(CAPACITY[step.backend], frame_len=step.size, backend=step.backend,
                            buffer_frames=100_000)
        lab = self

        class Counted:  # the device, counting (and maybe interrupting) every measurement
            def __getattr__(self, name):
                return getattr(d, name)

            def _count(self):
                lab.measured += 1
                if lab.measured == lab.crash_at:
                    raise Crash()

            def measure(self, duration_s, load):
                self._count()
                return d.measure(duration_s, load)

            def measure_burst(self, frames):
                self._count()
                return d.measure_burst(frames)

        self.devices[step.key] = d
        return Counted()

    def pause(self, s):
        self.pauses.append(s)
        for d in self.devices.values():
            d.pause(s)

    def run(self, record=None, record_outcome=None):
        return campaign_run.StepRun(self.device, record or self.trials.append,
                                    record_outcome or self.outcomes.append, self.pause)


def key(t):
    """What a trial is, without its timestamps (a resumed device's clock starts again)."""
    return (t.step, t.repeat, t.method, t.purpose, t.offered_pps, t.requested_duration_s, t.sent, t.received,
            t.lost)


def full_run(c):
    lab = Lab()
    assert campaign_run.execute(plan.plan_of(c, resume.progress_of([], []), [0, 1]), lab.run()) == len(c.steps())
    return lab


@pytest.mark.parametrize("method", ["rfc2544", "mlr", "sweep", "back2back", "latency"])
def test_resuming_after_any_trial_gives_the_uninterrupted_result(method):
    c = campaign([method])
    full = full_run(c)
    n = len(full.trials)
    assert n >= 6 and len(full.outcomes) == 1
    if method == "back2back":
        assert {t.purpose for t in full.trials} == {"burst 1/1"}
        assert 0 < full.outcomes[0]["max_frames"] and 0 < full.outcomes[0]["mean_frames"] < 125_000
    for k in range(n + 1):  # k trials on disk; k == n: every trial, but not the answer
        again = Lab()
        ran = campaign_run.execute(plan.plan_of(c, resume.progress_of(full.trials[:k], []), [0, 1]), again.run())
        assert ran == 1
        assert again.measured == n - k, f"after {k} trials: measured {again.measured}, {n - k} were missing"
        assert [key(t) for t in full.trials[:k] + again.trials] == [key(t) for t in full.trials], k
        assert again.outcomes == full.outcomes, k
        # Nothing runs for a replayed trial, so nothing waits before it either.
        assert len(again.pauses) == n - k, k


def test_a_back2back_step_cut_after_3_bursts_runs_only_the_rest():
    c = campaign(["back2back"])
    full = full_run(c)
    assert len(full.trials) == 8
    again = Lab()
    campaign_run.execute(plan.plan_of(c, resume.progress_of(full.trials[:3], []), [0, 1]), again.run())
    assert again.measured == 5 and len(again.trials) == 5  # not 8 bursts, measured and recorded again
    assert [key(t) for t in full.trials[:3] + again.trials] == [key(t) for t in full.trials]


# --- back2back through back2back.burst_measurer: the real Measurer has no measure_burst ----------------


@dataclasses.dataclass(frozen=True)
class FakeSetup:
    link_bps: float
    frame_len: int
    gen_args: tuple = ()


class BurstLab(Lab):
    """Measurers like capbench.trial.measure.Measurer (setup, binaries, testbed, measure only); the bursts
    are made by back2back.burst_measurer, which builds a Measurer per burst (patched: FakeBurst)."""

    def device(self, step):
        d = super().device(step)
        lab = self

        class RealLike:
            setup = FakeSetup(1e9, step.size)
            binaries = testbed = None

            def measure(self, duration_s, load):
                return d.measure(duration_s, load)

        lab.current = d
        return RealLike()


def test_back2back_resumes_through_burst_measurer(monkeypatch):
    made = []

    class FakeBurst:  # what back2back.burst_measurer builds instead of a capbench.trial.measure.Measurer
        def __init__(self, binaries, testbed, setup):
            self.frames = int(setup.gen_args[setup.gen_args.index("--count") + 1])
            made.append(self.frames)

        def measure(self, duration_s, rate):
            assert rate.text == "100%"
            return dataclasses.replace(lab.current.measure_burst(self.frames), requested_duration_s=duration_s)

    monkeypatch.setattr(back2back, "Measurer", FakeBurst)
    c = campaign(["back2back"])
    lab = BurstLab()
    campaign_run.execute(plan.plan_of(c, resume.progress_of([], []), [0, 1]), lab.run())
    full, full_made = lab, list(made)
    n = len(full.trials)
    assert n == len(full_made) >= 6
    # Each recorded burst asked for its frames plus the margin.
    wire = wire_pps(1e9, 64)
    assert full.trials[0].requested_duration_s == pytest.approx(full_made[0] / wire + back2back.BURST_MARGIN_S)
    for k in (1, 3, n - 1, n):
        made.clear()
        lab = BurstLab()
        campaign_run.execute(plan.plan_of(c, resume.progress_of(full.trials[:k], []), [0, 1]), lab.run())
        assert made == full_made[k:], k  # only the missing bursts were sent
        assert [key(t) for t in full.trials[:k] + lab.trials] == [key(t) for t in full.trials], k
        assert lab.outcomes == full.outcomes, k


# --- refusing to replay trials of other settings -------------------------------------------------------


def test_replay_refuses_a_burst_of_another_length():
    dev = SimulatedDevice(1e6)
    recorded = dataclasses.replace(dev.measure_burst(20_000), step="x")
    ok = resume.ReplayMeasurer(SimulatedDevice(1e6), [recorded])
    assert ok.measure_burst(20_000) is recorded and ok.last_was_replay
    ok.measure_burst(20_000)  # then the device's own
    assert not ok.last_was_replay
    for frames in (10_000, 40_000):
        m = resume.ReplayMeasurer(SimulatedDevice(1e6), [recorded])
        with pytest.raises(UsageError, match="cannot resume: the recorded trial 1 of this step was a burst"):
            m.measure_burst(frames)


def test_replay_refuses_a_trial_of_another_length():
    recorded = dataclasses.replace(SimulatedDevice(1e6).measure(1.0, 12345.0), step="x")
    assert resume.ReplayMeasurer(SimulatedDevice(1e6), [recorded]).measure(1.0, 12345.0) is recorded
    m = resume.ReplayMeasurer(SimulatedDevice(1e6), [recorded])
    with pytest.raises(UsageError, match="lasted 1 s, the method now asks for 60 s"):
        m.measure(60.0, 12345.0)


# --- the whole promise, on disk: Ctrl-C mid-trial, a line cut while writing, --resume ------------------


def run_on_disk(root, c, crash_at=None):
    lab = Lab(crash_at)
    w = RunWriter.create(root, {"campaign": "resume"})
    try:
        campaign_run.execute(plan.plan_of(c, resume.progress_of([], []), [0, 1]), lab.run(w.append, w.append_outcome))
    except Crash:
        return w, True
    w.finish()
    return w, False


@pytest.mark.parametrize("crash_at", [1, 4, 9, 15, 22])
def test_an_interrupted_campaign_resumes_to_the_same_trials(tmp_path, crash_at, capsys):
    c = campaign(["iperf", "rfc2544", "back2back"], backends=("pcap", "afp-v3"))
    full, _ = run_on_disk(tmp_path / "full", c)
    full_trials = scan_trials(full.path).trials
    assert len(full_trials) > 22

    w, crashed = run_on_disk(tmp_path / "cut", c, crash_at)
    assert crashed
    # At most the trial in flight is lost: every trial before it is on disk.
    assert [key(t) for t in scan_trials(w.path).trials] == [key(t) for t in full_trials[:crash_at - 1]]
    # The process died while it wrote the next line: part of it reached the disk.
    with open(w.path / TRIALS_FILE, "a") as f:
        f.write('{"schema": 1, "started_at": "2026-01-01T00:0')
    w._trials.close()

    lab = Lab()
    resumed = RunWriter.resume(w.path)
    assert "dropped its last line" in capsys.readouterr().err
    progress = resume.progress_of(scan_trials(w.path).trials, read_outcomes(w.path))
    with resumed:
        campaign_run.execute(plan.plan_of(c, progress, [0, 1]), lab.run(resumed.append, resumed.append_outcome))
    assert lab.measured == len(full_trials) - (crash_at - 1)  # nothing measured twice
    scan = scan_trials(w.path)
    assert scan.skipped == []
    assert [key(t) for t in scan.trials] == [key(t) for t in full_trials]
    assert read_outcomes(w.path) == read_outcomes(full.path)
