"""What makes two trials the same measurement (report.keys)."""

from capbench.report.keys import series_key, settings_key
from report_files import trial


def test_a_mix_is_not_the_fixed_length_of_its_mean():
    fixed = trial(frame_len=512, size="512")
    mix = trial(frame_len=512, size="random:64-960", mean_frame_len=512.3)
    assert settings_key(fixed) != settings_key(mix)
    assert ("sizes", "random:64-960") in series_key(mix).extra
    assert "sizes random:64-960" in settings_key(mix).text()
    # Two trials of one mix are repetitions of one measurement.
    assert settings_key(mix) == settings_key(trial(frame_len=512, size="random:64-960", mean_frame_len=511.9))
