from capbench.methods import iperf
from capbench.rates import parse_rate
from records import make_result


class FakeMeasurer:
    def __init__(self, backend, frame_len, calls):
        self.backend, self.frame_len, self.calls = backend, frame_len, calls

    def measure(self, duration_s, load):
        self.calls.append((self.backend, self.frame_len, duration_s, load.text))
        return make_result(backend=self.backend, frame_len=self.frame_len)


def test_one_trial_per_backend_and_size_in_order():
    calls = []
    results = list(iperf.run(lambda b, s: FakeMeasurer(b, s, calls), ["pcap", "afp-v3"], [64, 1518],
                             rate=parse_rate("100%"), duration_s=5.0))
    assert calls == [("pcap", 64, 5.0, "100%"), ("pcap", 1518, 5.0, "100%"),
                     ("afp-v3", 64, 5.0, "100%"), ("afp-v3", 1518, 5.0, "100%")]
    assert [(r.backend, r.frame_len) for r in results] == [(c[0], c[1]) for c in calls]


def test_results_come_as_trials_end():
    calls = []
    gen = iperf.run(lambda b, s: FakeMeasurer(b, s, calls), ["pcap"], [64, 128, 256],
                    rate=parse_rate("1g"), duration_s=1.0)
    next(gen)
    assert len(calls) == 1
