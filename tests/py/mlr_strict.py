"""The MLR search as it ran before issue 28's defaults: strict goals (exceed ratio 0, one trial
decides a load), RFC 2544's 60 s final trials and no warm-up trial. The tests of the search's
algorithm (bounds, phases, what bounded an answer) keep their figures with it; test_mlr tests the
defaults (exceed ratio 0.5, a duration sum, the warm-up) on their own."""

from capbench.methods import mlr
from capbench.methods.rfc2544 import RFC2544_TRIAL_S

STRICT = dict(goals=(mlr.Goal("NDR", 0.0), mlr.Goal("PDR", 0.005)), final_trial_s=RFC2544_TRIAL_S, warmup=False)


def strict_search(measurer, **kw):
    """mlr.search with STRICT's settings unless `kw` gives others."""
    return mlr.search(measurer, **(STRICT | kw))
