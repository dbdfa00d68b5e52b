"""Campaign files, steps, placement and resuming, against the simulated device (no root)."""

import dataclasses

import pytest
from capbench.campaign import resume
from capbench.campaign import matrix as cmod
from capbench.campaign import execute as campaign_run
from capbench.campaign import plan
from capbench.errors import UsageError
from capbench.methods.simulated import SimulatedDevice

BACKENDS = ("pcap", "afp-v3", "afxdp")
SEED2008 = """
[campaign]
name = "seed2008"
link = "1g"
duration = "5"
trial = "60s"
methods = ["iperf", "rfc2544"]
backends = ["pcap", "afp-v3", "afxdp"]
sizes = "seed"
pin = ["A:A", "A:B"]
"""


def write(tmp_path, text, name="c.toml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_the_seed_replication_has_every_combination(tmp_path):
    c = cmod.load(write(tmp_path, SEED2008), backends_known=BACKENDS)
    steps = c.steps()
    assert len(steps) == 2 * 2 * 3 * 13
    assert len({s.key for s in steps}) == len(steps)
    assert c.matrices[0].durations == (5,) and c.trial_s == 60 and c.link_bps == 1e9
    assert steps[0] == cmod.Step("iperf", "pcap", 64, "A:A", None, 1, 1, duration_s=5.0)
    # One duration: the keys name no run length, as before durations were an axis (--resume).
    assert steps[0].key == "iperf|pcap|64|pin=A:A|load=touch|procs=1|rep=1"


def test_matrices_override_and_repeat(tmp_path):
    c = cmod.load(write(tmp_path, SEED2008 + '\n[[matrix]]\nbackends = ["pcap"]\nsizes = [64]\nrepeat = 3\n'
                        '\n[[matrix]]\nmethods = ["mlr"]\nsizes = "64,1518"\npin = "auto"\n'),
                  backends_known=BACKENDS)
    steps = c.steps()
    first = [s for s in steps if s.backend == "pcap" and s.size == 64 and s.method == "iperf" and s.pin == "A:A"]
    assert [s.repeat for s in first] == [1, 2, 3]
    assert {(s.method, s.pin) for s in steps if s.method == "mlr"} == {("mlr", "auto")}


@pytest.mark.parametrize("text, words", [
    ("[campaign]\nmethods = ['fastest']\n", ["unknown method", "fastest"]),
    ("[campaign]\nbackends = ['pfring']\n", ["pfring"]),
    ("[campaign]\npin = 'A:C'\n", ["A:C", "A:B"]),
    ("[campaign]\nrepeat = 0\n", ["repeat"]),
    ("[campaign]\nsizes = [63]\n", ["63"]),
    ("[campaign]\nname = \"x\"\ncolour = 'blue'\n", ["line 3", "unknown key", "colour"]),
    ("[experiment]\n", ["unknown table"]),
    ("[campaign\n", ["not valid TOML"]),
    ("[campaign]\nbackends = []\n", ["empty"]),
    ("[campaign]\nduration = 'long'\n", ["long"]),
    ("[campaign]\nbackend_args = 'x'\n", ["backend_args", "must map"]),
    ("[campaign]\nbackends = ['pcap']\n[campaign.backend_args]\npcap = '--iface eth0'\n", ["--iface"]),
    ("[campaign]\ngroups = 3\n", ["groups", "group_size"]),
    ("[campaign]\nprocs = 2\nbackends = ['afxdp']\n", ["one XDP program"]),
    ("[campaign]\nmethods = ['latency']\ntrial = '0.5s'\n", ["latency", "at least 1 s"]),
    # The line is the unknown key's own, in its own table, also for a dotted key or a sub-table.
    ("[campaign]\nlink = '1g'\n\n[[matrix]]\nbackends = ['pcap']\n\n[[matrix]]\nlink = '10g'\n",
     ["line 8", "[[matrix]] #2", "unknown key 'link'"]),
    ("[campaign]\nname = 'x'\ncolour.shade = 'blue'\n", ["line 3", "'colour'"]),
    ("[campaign]\nname = 'x'\n[campaign.colour]\nshade = 1\n", ["line 3", "'colour'"]),
    # Numbers are numbers: no silent truncation, no traceback, no true for 1.
    ("[campaign]\nloss_tolerance = 2.9\n", ["loss_tolerance", "whole number", "2.9"]),
    ("[campaign]\nloss_tolerance = 1e400\n", ["loss_tolerance", "whole number"]),
    ("[campaign]\nsteps = 3.9\n", ["steps", "whole number"]),
    ("[campaign]\nprecision = true\n", ["precision", "must be a number"]),
    ("[campaign]\nprecision = 'high'\n", ["precision", "must be a number"]),
    ("[campaign]\nrepeat = 100000000\n", ["repeat", "1 to 1000"]),
])
def test_bad_campaigns_name_file_and_key(tmp_path, text, words):
    p = write(tmp_path, text)
    with pytest.raises(UsageError) as e:
        cmod.load(p, backends_known=BACKENDS)
    assert str(p) in str(e.value)
    for w in words:
        assert w in str(e.value)


def test_missing_campaign_file(tmp_path):
    with pytest.raises(UsageError, match="no campaign file"):
        cmod.load(tmp_path / "none.toml", backends_known=BACKENDS)


def test_placements_on_two_and_four_cpus():
    assert plan.placement("A:A", [0, 1]) == plan.Placement(0, 1, 1, False)
    # Two cores: A:B puts the counter beside the generator, and says so.
    assert plan.placement("A:B", [0, 1]) == plan.Placement(0, 1, 0, True)
    assert plan.placement("A:B", [0, 1, 2, 3]) == plan.Placement(0, 1, 2, False)
    assert plan.placement("auto", [0, 1]) == plan.Placement(0, None, None, False)


def test_where_a_part_shares_the_generators_cpu():
    c = cmod.build({"methods": ["iperf"], "sizes": [64], "backends": ["pcap"]}, [], backends_known=BACKENDS)
    assert plan.gen_cpu_shared(c, [0, 1]) is None
    ab = dataclasses.replace(c, matrices=tuple(dataclasses.replace(m, pins=("A:A", "A:B")) for m in c.matrices))
    assert plan.gen_cpu_shared(ab, [0, 1]) == "placement A:B puts receive work or a counter there"
    assert plan.gen_cpu_shared(ab, [0, 1, 2]) is None


def test_a_polling_counter_gets_a_cpu_of_its_own_or_the_run_says_why_not():
    # A:A with a poller: the third CPU where there is one, A:A and a note on two CPUs.
    assert plan.placement("A:A", [0, 1, 2, 3], polls=True) == plan.Placement(0, 1, 2, False)
    assert plan.placement("A:A", [0, 1], polls=True) == plan.Placement(0, 1, 1, False)
    # dpdk declares it polls (capbench-cap --describe); pcap does not, and keeps A:A.
    c = cmod.build({"methods": ["iperf"], "sizes": [64], "backends": ["pcap", "dpdk"]}, [],
                   backends_known=(*BACKENDS, "dpdk"))
    pcap, dpdk = c.steps()
    assert (c.polls("pcap"), c.polls("dpdk")) == (False, True)
    four = plan.plan_of(c, resume.progress_of([], []), [0, 1, 2, 3])
    assert (four.placement(pcap).cap_cpu, four.placement(dpdk).cap_cpu) == (1, 2)
    assert four.polling_notes() == []
    two = plan.plan_of(c, resume.progress_of([], []), [0, 1])
    assert two.placement(dpdk) == two.placement(pcap) == plan.Placement(0, 1, 1, False)
    (line,) = two.polling_notes()
    assert line.startswith("placement A:A: dpdk polls on CPU 1, the CPU of the kernel thread that drains the receive "
                           "ring (no CPU of its own on this 2-CPU machine)"), line
    assert line.endswith("--pin A:B or --cap-cpu") and line in two.shared_notes()
    # CPUs given one by one are the placement as given, a poller's too.
    custom = dataclasses.replace(c, custom_cpus=(0, 0, 1),
                                 matrices=tuple(dataclasses.replace(m, pins=(cmod.CUSTOM_PIN,)) for m in c.matrices))
    assert plan.plan_of(custom, resume.progress_of([], []), [0, 1]).polling_notes() == []


def test_the_plan_places_each_pin_once_and_keeps_what_is_done_out_of_todo():
    c = cmod.build({"methods": ["iperf"], "sizes": [64, 128], "backends": ["pcap"], "pin": ["A:A", "A:B"]}, [],
                   backends_known=BACKENDS)
    steps = c.steps()
    done = resume.Progress({steps[0].key: ["a recorded trial"]}, set())
    p = plan.plan_of(c, done, [0, 1])
    assert p.steps == tuple(steps) and p.todo == tuple(steps[1:])
    assert p.placements == {"A:A": plan.Placement(0, 1, 1, False), "A:B": plan.Placement(0, 1, 0, True)}
    assert p.placement(steps[-1]) is p.placements[steps[-1].pin]
    assert p.shared_notes() == ["placement A:B: a part shares the generator's CPU on this 2-CPU machine"]
    # CPUs given one by one (--gen-cpu, --rx-cpu, --cap-cpu) are the placement as given.
    custom = dataclasses.replace(c, custom_cpus=(1, 0, 1),
                                 matrices=tuple(dataclasses.replace(m, pins=(cmod.CUSTOM_PIN,)) for m in c.matrices))
    assert plan.plan_of(custom, done, [0, 1]).placements == {cmod.CUSTOM_PIN: plan.Placement(1, 0, 1, True)}


CAMPAIGN = """
[campaign]
trial = "5s"
pause = "2"
methods = ["iperf", "rfc2544"]
backends = ["pcap", "afp-v3"]
sizes = [64, 512]
"""


class Recorder:
    def __init__(self):
        self.trials, self.outcomes = [], []
        self.devices = {}

    def make(self, step):
        capacity = {"pcap": 300_000.0, "afp-v3": 900_000.0}[step.backend]
        d = SimulatedDevice(capacity, frame_len=step.size, backend=step.backend)
        self.devices[step.key] = d
        return d

    def pause(self, s):
        for d in self.devices.values():
            d.pause(s)

    def run(self, **kw):
        return campaign_run.StepRun(self.make, self.trials.append, self.outcomes.append, self.pause, **kw)


def test_a_campaign_records_every_trial_and_answer(tmp_path):
    c = cmod.load(write(tmp_path, CAMPAIGN), backends_known=BACKENDS)
    rec, seen = Recorder(), []
    ran = campaign_run.execute(plan.plan_of(c, resume.progress_of([], []), [0, 1]), rec.run(
        on_step=lambda done, total, step, left: seen.append((done, total, left))))
    assert ran == 8 and [d for d, _, _ in seen] == list(range(1, 9)) and seen[-1][2] == 0
    assert {t.step for t in rec.trials} == {s.key for s in c.steps()}
    assert len(rec.outcomes) == 4 and all(o["method"] == "rfc2544" for o in rec.outcomes)


def test_the_progress_counts_trials_against_an_estimate_that_ends_at_the_count(tmp_path):
    c = cmod.load(write(tmp_path, CAMPAIGN), backends_known=BACKENDS)
    rec, seen = Recorder(), []
    campaign_run.execute(plan.plan_of(c, resume.progress_of([], []), [0, 1]), rec.run(
        on_trial=lambda n, total, left: seen.append((n, total, left))))
    assert [n for n, _, _ in seen] == list(range(1, len(rec.trials) + 1))
    assert all(n <= total for n, total, _ in seen) and all(left >= 0 for _, _, left in seen)
    # The first estimate: 4 iperf trials and 4 searches of ceil(log2(100 / 1 %)) + 1 trials and a
    # verification each; each step's end puts what it really took in its estimate's place.
    assert seen[0][1] == 4 + 4 * (7 + 1 + 1)
    assert len({total for _, total, _ in seen}) > 1


def test_resume_skips_what_is_done_and_replays_a_cut_search(tmp_path):
    c = cmod.load(write(tmp_path, CAMPAIGN), backends_known=BACKENDS)
    full = Recorder()
    campaign_run.execute(plan.plan_of(c, resume.progress_of([], []), [0, 1]), full.run())

    # A crash in the 3rd trial of the last search: the trials before it and every earlier answer are on disk.
    last = c.steps()[-1]
    cut_trials = [t for t in full.trials if t.step != last.key] + \
                 [t for t in full.trials if t.step == last.key][:2]
    cut_outcomes = [o for o in full.outcomes if o["step"] != last.key]
    again = Recorder()
    ran = campaign_run.execute(plan.plan_of(c, resume.progress_of(cut_trials, cut_outcomes), [0, 1]), again.run())
    assert ran == 1  # only the cut search
    # It measured only the trials that were missing, and reached the same answer.
    assert len(again.trials) == len([t for t in full.trials if t.step == last.key]) - 2
    assert again.outcomes[0]["throughput_pps"] == full.outcomes[-1]["throughput_pps"]


def test_resume_refuses_trials_of_other_settings():
    other = SimulatedDevice(1e6).measure(1.0, 12345.0)
    m = resume.ReplayMeasurer(SimulatedDevice(1e6), [dataclasses.replace(other, step="x")])
    with pytest.raises(UsageError, match="cannot resume"):
        m.measure(1.0, 99999.0)


@pytest.mark.parametrize("name, steps", [("seed2008", 156), ("seed2008-quick", 36)])
def test_shipped_campaigns_load(name, steps):
    from pathlib import Path

    from capbench import declared

    c = cmod.load(Path(__file__).resolve().parents[2] / "campaigns" / f"{name}.toml",
                  backends_known=declared.backend_names())
    assert len(c.steps()) == steps
    assert {s.backend for s in c.steps()} == {"pcap", "afp-v3", "afxdp"}


def test_backend_args_and_groups_make_their_own_steps(tmp_path):
    c = cmod.load(write(tmp_path, """
[campaign]
backends = ["pcap", "afp-v3"]
sizes = [64]
rate = "100kpps"
duration = "2"
procs = [1, 2]
proc_cpus = [1, 0]
groups = 4
group_size = 50000
group_gap = "100ms"

[campaign.backend_args]
pcap = "--pcap-api   dispatch"
"""), backends_known=BACKENDS)
    steps = {(s.backend, s.procs): s for s in c.steps()}
    # The options are stored as one normalized string, only for their backend.
    assert steps[("pcap", 1)].backend_args == "--pcap-api dispatch"
    assert steps[("afp-v3", 1)].backend_args == ""
    assert "|args=--pcap-api dispatch|" in steps[("pcap", 1)].key
    assert "|groups=4x50000+0.1s|" in steps[("afp-v3", 2)].key
    assert c.proc_cpus == (1, 0)
    gen, cap = c.group_args()
    assert gen == ("--groups", "4", "--group-size", "50000", "--group-gap", "0.1")
    assert cap == ("--group-size", "50000", "--groups", "4")
    # 200,000 frames at 100 kpps and three 0.1 s pauses: 2.3 s, more than --duration 2.
    assert c.trial_duration_s(steps[("afp-v3", 1)]) == pytest.approx(1.05 * 2.3 + 1.0)


def test_a_rate_for_methods_that_choose_their_own_is_refused():
    with pytest.raises(UsageError, match="rfc2544 chooses its own loads"):
        cmod.build({"methods": ["rfc2544"], "rate": "50%"}, [], backends_known=BACKENDS)
    cmod.build({"methods": ["iperf", "rfc2544"], "rate": "50%"}, [], backends_known=BACKENDS)  # iperf uses it


def test_the_rfc2544_estimate_follows_the_precision():
    # A binary search from the wire rate takes about log2(100 / precision) trials, plus the
    # first and the verification (with its 10 s pause against saturation).
    fine = cmod.build({"methods": ["rfc2544"], "sizes": [64], "trial": "2s", "pause": "0.5"}, [],
                      backends_known=BACKENDS)
    coarse = dataclasses.replace(fine, precision_pct=5.0)
    step = fine.steps()[0]
    assert plan.estimate_step(fine, step, overhead_s=0).seconds == pytest.approx(8 * 2.5 + 12)
    assert plan.estimate_step(coarse, step, overhead_s=0).seconds == pytest.approx(6 * 2.5 + 12)
