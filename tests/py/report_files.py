"""Helpers of the report tests: the stored run, synthetic trials, and checks of PNG and SVG files."""

from __future__ import annotations

import shutil
import struct
import xml.etree.ElementTree as ET
from pathlib import Path

from capbench.report import units
from capbench.report.load import Trial
from capbench.trial.measure import TrialResult
from records import make_result

# trials.jsonl and run.json of a real run: `sudo capbench run --sizes 64,512,1518 --duration 1`
# on the 2-core VM: pcap and afp-v3, generator short of the offered load in 4 of 6 trials.
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "run-iperf"
# The default run's (`sudo capbench run`, no option, on the 2-core VM): pcap and afp-v3 at 13 frame
# lengths, 26 trials, the generator short of the offered load in every one.
DEFAULT_RUN = FIXTURE.parent / "run-default"

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def copy_fixture(dest: Path) -> Path:
    """A writable copy of the stored run (the report is written into the run directory)."""
    run = dest / "run"
    shutil.copytree(FIXTURE, run)
    return run


def axis_unit(quantity: str, label: str) -> units.Unit:
    """The unit an axis label names ("captured [Mpps]"): a figure's values are in it."""
    (unit,) = [u for u in units.UNITS[quantity] if f"[{u.name}" in label]
    return unit


def assert_png(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC, path
    assert data[12:16] == b"IHDR", path
    width, height = struct.unpack(">II", data[16:24])
    assert 200 < width < 5000 and 200 < height < 5000, (path, width, height)
    import matplotlib.image

    pixels = matplotlib.image.imread(path)  # decodes the whole image
    assert pixels.shape[:2] == (height, width)
    return width, height


def svg_texts(path: Path) -> list[str]:
    """Every text of an SVG file (it must parse as XML)."""
    root = ET.parse(path).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg", root.tag
    return ["".join(el.itertext()) for el in root.iter("{http://www.w3.org/2000/svg}text")]


def trial(method: str = "iperf", record: dict | None = None, **kw) -> Trial:
    r: TrialResult = make_result(**kw)
    return Trial(r, r.to_record() | {"method": method} | (record or {}), method)


def write_run(path: Path, results: list[TrialResult], **meta) -> Path:
    """A results directory as `capbench run` leaves it, holding these trials."""
    import json

    path.mkdir(parents=True)
    (path / "trials.jsonl").write_text("".join(json.dumps(r.to_record()) + "\n" for r in results))
    (path / "run.json").write_text(json.dumps({"schema": 1, "status": "complete", "trials": len(results)} | meta))
    return path


def scaled_copy(src: Path, dest: Path, backend: str, factor: float) -> Path:
    """A copy of a run with one backend's captured rate multiplied by factor."""
    import json

    shutil.copytree(src, dest)
    lines = []
    for line in (dest / "trials.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["backend"] == backend:
            record["rx_pps"] *= factor
            record["rx_gbps"] *= factor
        lines.append(json.dumps(record))
    (dest / "trials.jsonl").write_text("\n".join(lines) + "\n")
    return dest
