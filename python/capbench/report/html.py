"""report.html: one self-contained page (no external URL, figures inlined as SVG).

Built from plain strings with every value escaped; the page works offline and can be
mailed or attached to an issue as it is.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

STYLE = """
body { font-family: system-ui, sans-serif; margin: 1em auto; max-width: 1200px; padding: 0 1em; color: #222; }
h1 { font-size: 1.5em; margin: .3em 0; } h2 { border-bottom: 1px solid #ccc; padding-bottom: .1em; margin: 1.2em 0 .4em; }
h3 { margin: .6em 0 .3em; font-size: 1.05em; }
table { border-collapse: collapse; margin: .3em 0 1em; font-size: .9em; }
th, td { border: 1px solid #ddd; padding: .25em .6em; text-align: right; vertical-align: top; }
th { background: #f3f3f3; } td.text, th.text { text-align: left; } table.data td.text { font-size: .85em; }
p.small { font-size: .85em; color: #444; } ul { margin: .3em 0; }
tr.short td { color: #777; font-style: italic; } tr.lossy td { background: #fff8e1; }
tr.unexplained td { background: #fdecea; } tr.worse td { background: #fdecea; } tr.better td { background: #e8f5e9; }
.notes { background: #fff3cd; border: 1px solid #e0c870; padding: .5em 1em; }
p.note { font-size: .85em; color: #444; margin: -1em 0 1em; max-width: 85em; }
.skipped { color: #666; } figure { margin: 0 0 1em; } figure svg { max-width: 100%; height: auto; }
.figures { display: grid; grid-template-columns: repeat(auto-fill, minmax(540px, 1fr)); gap: 0 1.5em; }
.figures figure svg { width: 100%; } .figures figcaption { font-size: .8em; } .key svg { width: 100%; height: auto; }
.figures figure.wide { grid-column: 1 / -1; } .figures figure.wide svg { width: auto; max-width: 100%; }
details.skipped summary, details.table summary { cursor: pointer; }
details.table summary { font-weight: bold; margin: .4em 0; } details.table span.rows { font-weight: normal; color: #666; }
details.skipped ul { font-size: .85em; margin: .2em 0; }
.kv, .side { display: flex; flex-wrap: wrap; gap: 0 2em; align-items: flex-start; } .kv table { font-size: .8em; }
.kv th, .kv td { padding: .1em .4em; }
.side > div:last-child { flex: 1 1 20em; }
table.summary { font-size: .85em; } table.summary th, table.summary td { padding: .1em .5em; }
table.summary td, table.summary th { white-space: nowrap; }
table.summary td.text { white-space: normal; max-width: 22em; } table.summary td.text:last-child { min-width: 15em; max-width: none; }
figcaption { font-size: .9em; color: #444; max-width: 60em; } code { background: #f3f3f3; padding: 0 .2em; }
div.wide { overflow-x: auto; } div.wide table { font-size: .8em; } div.wide th, div.wide td { padding: .2em .4em; }
"""


@dataclass(frozen=True)
class Table:
    title: str
    headers: list[str]
    rows: list[list[str]]
    row_classes: list[str] | None = None  # one CSS class per row ("short", "lossy", ...) or ""
    text_last: bool = True  # the last column is text (a note, a verdict): left-aligned
    text_columns: tuple[int, ...] = ()  # other columns of text, left-aligned
    links: list[str | None] | None = None  # per row, what its last cell links to (a file beside the page)
    wide: bool = False  # many columns: smaller text, scrolled sideways where the page is too narrow
    notes: tuple[str, ...] = ()  # under the table: its footnotes
    folded: bool = False  # shown as its title, opened on a click (its numbers are in the page all the same)
    kind: str = "data"  # its CSS class: "data" for the tables of measurements, "summary" for the summary's


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def inline_svg(svg_text: str, prefix: str) -> str:
    """The <svg> element of an SVG file, without the XML prolog and DOCTYPE (which name an external DTD),
    its ids and references to them prefixed so that several figures can share one page."""
    start = svg_text.find("<svg")
    if start < 0:
        raise ValueError("not an SVG document")
    svg = svg_text[start:]
    svg = re.sub(r'\bid="([^"]+)"', lambda m: f'id="{prefix}-{m.group(1)}"', svg)
    svg = re.sub(r'\bhref="#([^"]+)"', lambda m: f'href="#{prefix}-{m.group(1)}"', svg)
    return re.sub(r"url\(#([^)]+)\)", lambda m: f"url(#{prefix}-{m.group(1)})", svg)


def table_html(t: Table) -> str:
    last = len(t.headers) - 1
    text = set(t.text_columns) | ({last} if t.text_last else set())

    def cell(tag: str, j: int, content: str) -> str:
        return f'<{tag} class="text">{content}</{tag}>' if j in text else f"<{tag}>{content}</{tag}>"

    head = "".join(cell("th", i, esc(h)) for i, h in enumerate(t.headers))
    body = []
    for i, row in enumerate(t.rows):
        cls = (t.row_classes or [""] * len(t.rows))[i]
        href = t.links[i] if t.links else None
        cells = "".join(cell("td", j, f'<a href="{esc(href)}">{esc(c)}</a>' if href and j == last else _lines(c))
                        for j, c in enumerate(row))
        body.append(f'<tr class="{esc(cls)}">{cells}</tr>' if cls else f"<tr>{cells}</tr>")
    table = f'<table class="{esc(t.kind)}"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
    table = (f'<div class="wide">{table}</div>' if t.wide else table) + "".join(
        f'<p class="note">{esc(n)}</p>' for n in t.notes)
    if t.folded:
        return (f'<details class="table"><summary>{esc(t.title)} <span class="rows">({len(t.rows)} rows)</span>'
                f"</summary>\n{table}</details>")
    return f'<h3>{esc(t.title)}</h3>\n{table}'



def _lines(text: str) -> str:
    """A cell's text, escaped, its lines kept."""
    return esc(text).replace("\n", "<br>")


def kv_table(items: Iterable[tuple[str, Any]], pairs: int = 1) -> str:
    """Keys and their values, `pairs` key-value pairs to a row (read down each pair of columns)."""
    items = list(items)
    per = -(-len(items) // pairs) if items else 0
    columns = [items[i * per:(i + 1) * per] for i in range(pairs)]
    rows = []
    for r in range(per):
        rows.append("<tr>" + "".join(f'<th class="text">{esc(c[r][0])}</th><td class="text">{esc(_text(c[r][1]))}</td>'
                                     if r < len(c) else "<td></td><td></td>" for c in columns) + "</tr>")
    return f'<table class="meta">{"".join(rows)}</table>'


def kv_groups(groups: Iterable[tuple[str, Iterable[tuple[str, Any]]] | tuple[str, Iterable[tuple[str, Any]], int]]
              ) -> str:
    """Several key-value tables side by side, each under its heading (and with its pairs per row)."""
    return '<div class="kv">' + "".join(f"<div><h3>{esc(g[0])}</h3>{kv_table(*g[1:])}</div>" for g in groups) + "</div>"


def flat_items(items: Iterable[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """Nested settings as rows of a table: an object's keys under its name ("campaign" is the
    name of the whole, so left out), a list of objects numbered ("matrix 1 · sizes") in what tells
    them apart, and once ("every matrix · sizes") in what they share: a tune's tens of matrices
    differ in their knobs alone."""
    out: list[tuple[str, Any]] = []
    for k, v in items:
        if isinstance(v, dict):
            out += flat_items((sub if k == "campaign" else f"{k} · {sub}", x) for sub, x in v.items())
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            name = "matrix" if k == "matrices" else k
            if len(v) == 1:
                out += flat_items(v[0].items())
                continue
            shared = [sub for sub, y in v[0].items() if all(sub in x and x[sub] == y for x in v[1:])]
            out += flat_items((f"every {name} · {sub}", v[0][sub]) for sub in shared)
            for i, x in enumerate(v, 1):
                out += flat_items((f"{name} {i} · {sub}", y) for sub, y in x.items() if sub not in shared)
        else:
            out.append((k, v))
    return out


def _text(v: Any) -> str:
    if v is None or v == [] or v == {}:
        return "—"
    if isinstance(v, (list, tuple)):
        return ", ".join(_text(x) for x in v)
    if isinstance(v, dict):
        return "; ".join(f"{k}: {_text(x)}" for k, x in v.items())
    return str(v)


def bullet_list(lines: Iterable[str]) -> str:
    items = "".join(f"<li>{esc(line)}</li>" for line in lines)
    return f"<ul>{items}</ul>" if items else ""


def figure_html(title: str, svg_text: str | None, caption: str, skipped: str | None, name: str) -> str:
    if skipped is not None:
        return f'<h3>{esc(title)}</h3>\n<p class="skipped" id="fig-{esc(name)}">Not drawn: {esc(skipped)}.</p>'
    return (f'<h3>{esc(title)}</h3>\n<figure class="plot" id="fig-{esc(name)}">{inline_svg(svg_text or "", name)}'
            f"<figcaption>{esc(caption)}</figcaption></figure>")


def not_drawn(items: Iterable[tuple[str, str]]) -> str:
    """The figures a run has no data for, as one line (title: why, when opened)."""
    items = list(items)
    if not items:
        return ""
    reasons = "".join(f"<li>{esc(t)}: {esc(why)}</li>" for t, why in items)
    return (f'<details class="skipped" id="not-drawn"><summary>Not drawn (no data in this run): '
            f'{esc(", ".join(t for t, _why in items))}</summary><ul>{reasons}</ul></details>')


def page(title: str, sections: Iterable[tuple[str, str]], notes: Iterable[str] = ()) -> str:
    """A whole page: sections are (heading, HTML body) pairs."""
    notes = list(notes)
    note_html = f'<div class="notes">{bullet_list(notes)}</div>' if notes else ""
    body = "\n".join(f"<section><h2>{esc(h)}</h2>\n{content}</section>" for h, content in sections)
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{esc(title)}</title><style>{STYLE}</style></head>\n"
            f"<body><h1>{esc(title)}</h1>\n{note_html}\n{body}\n</body></html>\n")
