"""report.html: one self-contained page (no external URL, figures inlined as SVG).

Built from plain strings with every value escaped; the page works offline and can be
mailed or attached to an issue as it is.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1200px; padding: 0 1em; color: #222; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ccc; padding-bottom: .2em; margin-top: 2em; }
table { border-collapse: collapse; margin: .5em 0 1.5em; font-size: .9em; }
th, td { border: 1px solid #ddd; padding: .25em .6em; text-align: right; vertical-align: top; }
th { background: #f3f3f3; } td.text, th.text { text-align: left; }
tr.short td { color: #777; font-style: italic; } tr.lossy td { background: #fff8e1; }
tr.unexplained td { background: #fdecea; } tr.worse td { background: #fdecea; } tr.better td { background: #e8f5e9; }
.notes { background: #fff3cd; border: 1px solid #e0c870; padding: .5em 1em; }
p.note { font-size: .85em; color: #444; margin: -1em 0 1em; max-width: 60em; }
.skipped { color: #666; } figure { margin: 1em 0 2em; } figure svg { max-width: 100%; height: auto; }
.kv { display: flex; flex-wrap: wrap; gap: 0 2em; align-items: flex-start; } .kv table { font-size: .85em; }
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
    table = f'<table class="data"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
    return f'<h3>{esc(t.title)}</h3>\n' + (f'<div class="wide">{table}</div>' if t.wide else table)


def _lines(text: str) -> str:
    """A cell's text, escaped, its lines kept."""
    return esc(text).replace("\n", "<br>")


def kv_table(items: Iterable[tuple[str, Any]]) -> str:
    rows = "".join(f'<tr><th class="text">{esc(k)}</th><td class="text">{esc(_text(v))}</td></tr>'
                   for k, v in items)
    return f'<table class="meta">{rows}</table>'


def kv_groups(groups: Iterable[tuple[str, Iterable[tuple[str, Any]]]]) -> str:
    """Several key-value tables side by side, each under its heading."""
    return '<div class="kv">' + "".join(f"<div><h3>{esc(h)}</h3>{kv_table(items)}</div>" for h, items in groups) + "</div>"


def _text(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, (dict, list, tuple)):
        return json.dumps(v, separators=(", ", ": "))
    return str(v)


def bullet_list(lines: Iterable[str]) -> str:
    items = "".join(f"<li>{esc(line)}</li>" for line in lines)
    return f"<ul>{items}</ul>" if items else ""


def figure_html(title: str, svg_text: str | None, caption: str, skipped: str | None, name: str) -> str:
    if skipped is not None:
        return f'<h3>{esc(title)}</h3>\n<p class="skipped" id="fig-{esc(name)}">Not drawn: {esc(skipped)}.</p>'
    return (f'<h3>{esc(title)}</h3>\n<figure class="plot" id="fig-{esc(name)}">{inline_svg(svg_text or "", name)}'
            f"<figcaption>{esc(caption)}</figcaption></figure>")


def page(title: str, sections: Iterable[tuple[str, str]], notes: Iterable[str] = ()) -> str:
    """A whole page: sections are (heading, HTML body) pairs."""
    notes = list(notes)
    note_html = f'<div class="notes">{bullet_list(notes)}</div>' if notes else ""
    body = "\n".join(f"<section><h2>{esc(h)}</h2>\n{content}</section>" for h, content in sections)
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{esc(title)}</title><style>{STYLE}</style></head>\n"
            f"<body><h1>{esc(title)}</h1>\n{note_html}\n{body}\n</body></html>\n")
