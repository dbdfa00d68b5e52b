"""`capbench run --results DIR` with a path the kernel refuses: one line, no traceback (issue 15).

runner.missing_dirs, which notes the folders a run creates so that a run without results removes
them again, asked Path.exists(), which raises ENAMETOOLONG for a 5,000-character path: `capbench
run --results /tmp/aaaa...` ended in a traceback before RunWriter.create could name the path."""

from pathlib import Path

import pytest
from capbench.errors import UsageError
from capbench.campaign.results import RunWriter
from capbench.campaign.runner import missing_dirs


def test_missing_dirs_of_a_path_too_long(tmp_path):
    long = tmp_path / ("a" * 5000)
    assert missing_dirs(long) == [long]
    assert missing_dirs(tmp_path / ("a" * 200) / ("b" * 5000))[-1] == tmp_path / ("a" * 200)


def test_missing_dirs_stops_at_what_exists(tmp_path):
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")  # there, though it leads nowhere: not ours
    assert missing_dirs(tmp_path / "dangling" / "x") == [tmp_path / "dangling" / "x"]
    assert missing_dirs(tmp_path / "new" / "deeper") == [tmp_path / "new" / "deeper", tmp_path / "new"]


def test_results_path_too_long_is_one_line(tmp_path):
    with pytest.raises(UsageError, match="cannot create the results directory"):
        RunWriter.create(tmp_path / ("a" * 5000), {})
    assert list(tmp_path.iterdir()) == []
