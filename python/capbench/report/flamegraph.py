"""A flame graph of one trial's folded stacks (profiles/<stem>.folded), drawn with matplotlib.

The folded file (capbench.profile.analysis.folded; Brendan Gregg's format) holds one line per
distinct stack, `CPU 1 (receive, counter);comm;root frame;...;leaf frame COUNT`: the frames
root first, a kernel frame ending in `_[k]`, the sample count after the last space. The graph
puts the CPU frames at the bottom, then the processes, then their stacks upwards; a frame's
width is its share of all the samples, a frame narrower than MIN_SHARE is not drawn (the title
says how many were not), and each frame takes the colour of the group of receive work its
function belongs to (capbench/profile/groups.toml: the same groups, colours and order as the
report's stacked bars; user-space frames the application's colour).

The file is input: a line that is not `STACK COUNT` is counted and skipped, names are made
printable and cut to NAME_MAX, stacks to MAX_DEPTH frames, and the file to FOLDED_MAX_BYTES.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import matplotlib
from matplotlib.collections import PatchCollection
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle

from capbench import inputs
from capbench.errors import UsageError
from capbench.profile import groups
from capbench.profile.analysis import KERNEL_MARK
from capbench.records import printable

MIN_SHARE = 0.001  # frames narrower than 0.1 % of the samples are not drawn
# perf's deepest call chain is kernel.perf_event_max_stack (127 by default); the CPU and the
# process frames come first. A deeper line is cut to this many frames.
MAX_DEPTH = 130
MAX_BOXES = 20_000  # the widest frames drawn, at the most (a file of many tiny frames stays drawable)
NAME_MAX = 300  # a frame's name, at the most (characters)
COUNT_DIGITS = 15  # a count of more digits is no sample count
FOLDED_MAX_BYTES = 64 << 20
ROOTS = 2  # the CPU frame and the process (comm) frame under every stack
ROOT_COLOR = "#f2efe6"  # the CPU and process frames
NEUTRAL_COLOR = "#c8c8c8"  # a kernel frame no group names
MIN_LABEL = 4  # characters: a frame narrower than these shows no label
FONT_PT = 7.0
CHAR_EM = 0.62  # a character's mean width in ems (DejaVu Sans, names with underscores)
ROW_IN = 0.2  # a frame's height
WIDTH_IN = 16.0
_COUNT = re.compile(rf"[0-9]{{1,{COUNT_DIGITS}}}")


@dataclass
class Folded:
    stacks: list[tuple[tuple[str, ...], int]]  # (frames root first, samples)
    skipped: int = 0  # lines that are not a stack and its count
    cut: int = 0  # stacks deeper than MAX_DEPTH, cut there

    @property
    def total(self) -> int:
        return sum(n for _s, n in self.stacks)


def _name(frame: str) -> str:
    text = printable(frame)
    return text if len(text) <= NAME_MAX else text[:NAME_MAX - 2] + ".."


def parse(lines: Iterable[str]) -> Folded:
    """The stacks of a folded file's lines; what is not `FRAME;FRAME;... COUNT` is counted, not read."""
    out = Folded([])
    for line in lines:
        line = line.rstrip("\r\n")
        if not line.strip():
            continue
        stack, sep, count = line.rpartition(" ")
        frames = stack.split(";")
        if not sep or not _COUNT.fullmatch(count) or int(count) == 0 or any(not f.strip() for f in frames):
            out.skipped += 1
            continue
        if len(frames) > MAX_DEPTH:
            frames = frames[:MAX_DEPTH]
            out.cut += 1
        out.stacks.append((tuple(_name(f) for f in frames), int(count)))
    return out


def read(path: Path) -> Folded:
    """A folded file; one UsageError when it cannot be read (missing, not a regular file, too large)."""
    text = inputs.read_text(path, what="folded stacks", limit=FOLDED_MAX_BYTES)
    assert text is not None
    return parse(text.split("\n"))  # lines end in "\n" only (a name may hold any other separator)


def folded_path(results: Path, relative: str) -> Path:
    """The file a record's `folded` names, which must lie in the results folder (a record is input:
    an absolute path or one that climbs out is refused with one UsageError)."""
    rel = PurePosixPath(relative)
    if not relative or "\0" in relative or rel.is_absolute() or ".." in rel.parts:
        raise UsageError(f"the record names its folded stacks {relative!r}, not a file in the results folder")
    return results / rel


@dataclass
class _Node:
    name: str
    count: int = 0
    children: dict[str, _Node] = field(default_factory=dict)


@dataclass(frozen=True)
class Box:
    """A frame as drawn: its name, row (0: the CPUs), first sample and width in samples."""

    name: str
    depth: int
    start: int
    count: int


@dataclass(frozen=True)
class Layout:
    boxes: list[Box]
    total: int
    dropped: int  # frames not drawn: narrower than the least share
    crowded: int = 0  # frames not drawn: wide enough, but beyond the MAX_BOXES widest

    @property
    def depth(self) -> int:
        return 1 + max((b.depth for b in self.boxes), default=0)


def layout(folded: Folded, min_share: float = MIN_SHARE, max_boxes: int = MAX_BOXES) -> Layout:
    """Every frame placed: the stacks merged from the root (the CPU frame), siblings by name, each as
    wide as its samples; those narrower than `min_share` of all samples left out (and counted)."""
    root = _Node("")
    for frames, n in folded.stacks:
        node = root
        root.count += n
        for f in frames:
            node = node.children.setdefault(f, _Node(f))
            node.count += n
    total = root.count
    boxes: list[Box] = []
    dropped = 0
    todo = [(root, -1, 0)]
    while todo:
        node, depth, start = todo.pop()
        if node is not root:
            if node.count < min_share * total:
                dropped += _size(node)
                continue
            boxes.append(Box(node.name, depth, start, node.count))
        x = start
        for child in sorted(node.children.values(), key=lambda c: c.name):
            todo.append((child, depth + 1, x))
            x += child.count
    crowded = max(0, len(boxes) - max_boxes)
    if crowded:  # the widest, a frame before its children (they are never wider)
        boxes.sort(key=lambda b: (-b.count, b.depth))
        boxes = boxes[:max_boxes]
    boxes.sort(key=lambda b: (b.depth, b.start))
    return Layout(boxes, total, dropped, crowded)


def _size(node: _Node) -> int:
    """The frames of a subtree."""
    n, todo = 0, [node]
    while todo:
        x = todo.pop()
        n += 1
        todo.extend(x.children.values())
    return n


def is_kernel(name: str) -> bool:
    return name.endswith(KERNEL_MARK)


def shown_name(name: str) -> str:
    """A frame's name as its label shows it: without the kernel mark (its colour says it)."""
    return name[:-len(KERNEL_MARK)] if is_kernel(name) else name


def color(box: Box) -> str:
    """The group's colour of a frame's function (groups.frame_group); a user-space frame the
    application's, a kernel frame no group names neutral, the CPU and process frames their own."""
    t = groups.table()
    if box.depth < ROOTS:
        return ROOT_COLOR
    if not is_kernel(box.name):
        return t.by_kind(groups.USER).color
    g = groups.frame_group(shown_name(box.name))
    return t.color(g) if g is not None else NEUTRAL_COLOR


def _ink(fill: str) -> str:
    r, g, b = matplotlib.colors.to_rgb(fill)
    return "white" if 0.299 * r + 0.587 * g + 0.114 * b < 0.5 else "black"


def label(name: str, width_pt: float, font_pt: float = FONT_PT) -> str:
    """The label that fits `width_pt`: the whole name, or its start and "..", or "" (too narrow)."""
    fits = int((width_pt - 3) / (CHAR_EM * font_pt))
    if fits >= len(name):
        return name
    return name[:fits - 2] + ".." if fits >= MIN_LABEL else ""


def draw(lay: Layout, title: str) -> Figure:
    """The flame graph of `lay`, under `title` (which should say whose samples these are)."""
    t = groups.table()
    rows = max(lay.depth, 1)
    left, right, top, bottom = 0.15, 0.15, 0.75, 1.0  # inches around the frames: title; axis and legend
    height = top + rows * ROW_IN + bottom
    fig = Figure(figsize=(WIDTH_IN, height))
    ax = fig.add_axes((left / WIDTH_IN, bottom / height, 1 - (left + right) / WIDTH_IN, rows * ROW_IN / height))
    total = max(lay.total, 1)
    ax.set_xlim(0, total)
    ax.set_ylim(0, rows)
    width_pt = (WIDTH_IN - left - right) * 72
    rects, fills = [], []
    for b in lay.boxes:
        fill = color(b)
        rects.append(Rectangle((b.start, b.depth), b.count, 1))
        fills.append(fill)
        text = label(shown_name(b.name), width_pt * b.count / total)
        if text:
            ax.text(b.start + total * 1.5 / width_pt, b.depth + 0.5, text, fontsize=FONT_PT, va="center",
                    ha="left", color=_ink(fill), clip_on=True, parse_math=False)  # a name may hold "$"
    ax.add_collection(PatchCollection(rects, facecolors=fills, edgecolors="white", linewidths=0.4))
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    ax.set_yticks([])
    ticks = [total * k / 10 for k in range(11)]
    ax.set_xticks(ticks, [f"{10 * k} %" for k in range(11)], fontsize="small")
    ax.set_xlabel("share of the samples (of every CPU's time)", fontsize="small")
    # The groups that colour frames: those of functions, the application's and idle (a sample's group
    # of kernel work no group names, "other", is no frame's colour: such a frame is neutral).
    handles = [Patch(facecolor=g.color, edgecolor="#999", linewidth=0.4, label=g.label) for g in t.groups
               if g.kind != groups.REST]
    handles += [Patch(facecolor=NEUTRAL_COLOR, edgecolor="#999", linewidth=0.4, label="kernel, named by no group"),
                Patch(facecolor=ROOT_COLOR, edgecolor="#999", linewidth=0.4, label="CPU, process")]
    fig.legend(handles=handles, loc="lower center", ncols=5, fontsize="small", frameon=False,
               bbox_to_anchor=(0.5, 0.02 / height))
    fig.suptitle(title, fontsize="medium", y=1 - 0.1 / height, va="top", parse_math=False)
    return fig


def dropped_text(lay: Layout, folded: Folded) -> str:
    """What the graph leaves out."""
    parts = [f"{lay.dropped:,} frames narrower than {100 * MIN_SHARE:g} % of the samples not drawn"
             if lay.dropped else f"every frame drawn (none narrower than {100 * MIN_SHARE:g} %)"]
    if lay.crowded:
        parts.append(f"{lay.crowded:,} more beyond the {MAX_BOXES:,} widest not drawn")
    if folded.skipped:
        parts.append(f"{folded.skipped:,} lines of the file unreadable, skipped")
    if folded.cut:
        parts.append(f"{folded.cut:,} stacks cut at {MAX_DEPTH} frames")
    return "; ".join(parts)


def title(what: str, lay: Layout, folded: Folded, period_ns: float | None, hz: float | None) -> str:
    """`what` (whose samples: backend, frame length, rate), how many samples and how often, and
    what the graph leaves out."""
    every = (f", one every {period_ns / 1e6:.3f} ms of each CPU" if period_ns else "") + (f" ({hz:g} Hz)" if hz else "")
    return f"{what}: {lay.total:,} samples of every CPU{every}\n{dropped_text(lay, folded)}"


@dataclass(frozen=True)
class FlameFile:
    """A profiled trial's flame graph: its SVG, or why there is none."""

    folded: str  # the folded file, as the record names it
    svg: Path | None
    problem: str | None = None


def file_name(folded: str, taken: set[str]) -> str:
    """The SVG's name in the report folder: flame-<the folded file's stem>.svg, in characters any file
    system takes, never one already `taken`."""
    stem = re.sub(r"[^A-Za-z0-9_.+-]+", "_", PurePosixPath(folded).stem)[:150] or "trial"
    name, n = f"flame-{stem}.svg", 1
    while name in taken:
        n += 1
        name = f"flame-{stem}-{n}.svg"
    taken.add(name)
    return name
