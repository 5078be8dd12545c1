"""Self-contained HTML review report (inline CSS, PNG plots base64-embedded, no external fetches)."""

from __future__ import annotations

import base64
from html import escape

from ..feedback.view import ReviewView, build, counts_text, location
from ..schema import Review
from .sections import Bar, Bullets, Cell, Grid, Mark, Part, Plot, Section, Text, sections
from .sections import PLOT_CAPTIONS

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

_CSS = """
body{font:15px/1.5 system-ui,-apple-system,Segoe UI,sans-serif;max-width:980px;margin:2em auto;padding:0 1em;color:#1b1f24}
h1{font-size:1.6em}h2{border-bottom:1px solid #d0d7de;padding-bottom:.2em;margin-top:1.8em}
.verdict{display:inline-block;padding:.2em .7em;border-radius:4px;font-weight:600;color:#fff}
.v-block{background:#cf222e}.v-incomplete{background:#6e7781}.v-revise{background:#bc4c00}.v-approve-with-nits{background:#1a7f37}.v-approve{background:#1a7f37}
.item{border:1px solid #d0d7de;border-left-width:5px;border-radius:4px;padding:.4em 1em;margin:1em 0}
.s-error{border-left-color:#cf222e}.s-warning{border-left-color:#bc4c00}.s-info{border-left-color:#0969da}
.meta{color:#57606a;font-size:.9em}.note{background:#fff8c5;padding:.5em 1em;border-radius:4px}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #d0d7de;padding:.25em .6em;text-align:left;vertical-align:top}
td.pass{color:#1a7f37}td.fail{color:#cf222e;font-weight:600}td.na{color:#57606a}
.bar{display:inline-block;height:.8em;background:#0969da;vertical-align:middle}.barcell{white-space:nowrap}
details{margin:.6em 0}summary{cursor:pointer;font-weight:600}
figure{margin:1em 0}img{max-width:100%}footer{color:#57606a;font-size:.85em;margin-top:2em}
"""


def _e(x: object) -> str:
    return escape(str(x), quote=True)


def _html_cell(c: Cell) -> str:
    if isinstance(c, Bar):
        w = round(max(0.0, min(1.0, c.fraction)) * 160)
        return f"<td class=\"barcell\"><span class=\"bar\" style=\"width:{w}px\"></span> {_e(c.text)}</td>"
    if isinstance(c, Mark):
        return f"<td class=\"{_e(c.kind)}\">{_e(c.text)}</td>"
    return f"<td>{_e(c)}</td>"


def _grid(g: Grid) -> str:
    head = "".join(f"<th>{_e(c)}</th>" for c in g.columns)
    rows = "".join("<tr>" + "".join(_html_cell(c) for c in r) + "</tr>" for r in g.rows)
    cap = f"<p class=\"meta\">{_e(g.caption)}</p>" if g.caption else ""
    table = f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>{cap}"
    if g.collapsed:
        return f"<details><summary>{_e(g.title)} ({len(g.rows)} rows)</summary>{table}</details>"
    return f"<h3>{_e(g.title)}</h3>{table}"


def _figure(name: str, data: bytes) -> str:
    b64 = base64.b64encode(bytes(data)).decode("ascii")
    return (f"<figure><img alt=\"{_e(name)}\" src=\"data:image/png;base64,{b64}\" />"
            f"<figcaption>{_e(PLOT_CAPTIONS.get(name, name))}</figcaption></figure>")


def _part(p: Part, pngs: dict[str, bytes]) -> str:
    if isinstance(p, Plot):
        return _figure(p.name, pngs.pop(p.name)) if p.name in pngs else ""
    if isinstance(p, Text):
        return f"<p><strong>{_e(p.title)}:</strong> {_e(p.text)}</p>" if p.title else f"<p>{_e(p.text)}</p>"
    if isinstance(p, Bullets):
        items = "<ul>" + "".join(f"<li>{_e(x)}</li>" for x in p.items) + "</ul>"
        if p.collapsed:
            return f"<details><summary>{_e(p.title)}</summary>{items}</details>"
        return f"<h3>{_e(p.title)}</h3>{items}"
    return _grid(p)


def _section(sec: Section, pngs: dict[str, bytes]) -> str:
    out = f"<h2>{_e(sec.title)}</h2>"
    if sec.missing is not None:
        return out + f"<p class=\"meta\">Not available: {_e(sec.missing)}</p>"
    return out + "".join(_part(p, pngs) for p in sec.parts)


def _plots(plots: dict[str, bytes] | None) -> tuple[dict[str, bytes], list[str]]:
    good, skipped = {}, []
    for name, data in (plots or {}).items():
        if not isinstance(data, (bytes, bytearray)) or not bytes(data).startswith(PNG_MAGIC):
            skipped.append(name)
        else:
            good[name] = bytes(data)
    return good, skipped


def render_html(review: Review, *, plots: dict[str, bytes] | None = None) -> str:
    v: ReviewView = build(review)
    a = v.assessment
    port = review.port
    body: list[str] = [f"<h1>nki-assist review: {_e(port.name)} ({_e(port.target)})</h1>"]
    body.append(f"<p><span class=\"verdict v-{_e(a.verdict)}\">{_e(a.verdict.upper())}</span> "
                f"<span class=\"meta\">{_e(counts_text(v.counts))} · drafter: {_e(a.drafter)}</span></p>")
    body.append(f"<p>{_e(a.summary)}</p>")
    if v.drafter_note:
        body.append(f"<p class=\"note\">{_e(v.drafter_note)}</p>")
    srcs = [f"{_e(k.upper())}: <code>{_e(getattr(port, k))}</code>" for k in ("cuda", "nki", "spec") if getattr(port, k)]
    if srcs:
        body.append("<p class=\"meta\">" + " · ".join(srcs) + "</p>")

    body.append("<h2>Prioritized feedback</h2>")
    if not v.items:
        body.append("<p>Nothing to change: the checks found no issues.</p>")
    for iv in v.items:
        it = iv.item
        body.append(
            f"<section class=\"item s-{_e(iv.severity)}\" id=\"item-{it.priority}\">"
            f"<h3>{it.priority}. {_e(it.title)}</h3>"
            f"<p class=\"meta\">{_e(iv.severity)} ({_e(iv.label)}) · {_e(it.criterion)} · findings "
            + ", ".join(f"<a href=\"#{_e(fid)}\">{_e(fid)}</a>" for fid in it.finding_ids) + "</p>"
            "<p><strong>What:</strong></p><ul>" + "".join(f"<li>{_e(ln)}</li>" for ln in iv.what_lines) + "</ul>"
            f"<p><strong>Why it matters on Trainium:</strong> {_e(it.why)}</p>"
            f"<p><strong>Fix:</strong> {_e(it.fix)}</p>"
            f"<p><strong>How to confirm (profiling rationale):</strong> {_e(it.profiling)}</p>"
            "</section>"
        )

    if a.rubric:
        body.append("<h2>Rubric</h2><table><thead><tr><th>Criterion</th><th>Score</th><th>Rationale</th></tr></thead><tbody>")
        body += [f"<tr><td>{_e(s.criterion)}</td><td>{s.score}/4</td><td>{_e(s.rationale)}</td></tr>" for s in a.rubric]
        body.append("</tbody></table>")

    body.append("<h2>Findings</h2>")
    if v.findings:
        body.append("<table><thead><tr><th>ID</th><th>Severity</th><th>Rule</th><th>Category</th>"
                    "<th>Location</th><th>Message</th></tr></thead><tbody>")
        body += [f"<tr id=\"{_e(f.id)}\"><td>{_e(f.id)}</td><td>{_e(f.severity.value)}</td>"
                 f"<td>{_e(f.rule)} {_e(f.name)}</td><td>{_e(f.category)}</td><td>{_e(location(f))}</td>"
                 f"<td>{_e(f.message)}</td></tr>" for f in v.findings]
        body.append("</tbody></table>")
    else:
        body.append("<p>None.</p>")

    pngs, skipped = _plots(plots)
    body += [_section(sec, pngs) for sec in sections(review)]  # takes the plots it places
    if pngs:
        body.append("<h2>Plots</h2>" + "".join(_figure(n, d) for n, d in pngs.items()))
    notes = list(review.notes) + [f"plot {n!r} skipped: not PNG data" for n in skipped]
    if notes:
        body.append("<h2>Notes</h2><ul>" + "".join(f"<li>{_e(n)}</li>" for n in dict.fromkeys(notes)) + "</ul>")
    body.append(f"<footer>{_e(v.footer)}</footer>")
    title = _e(f"nki-assist review: {port.name}")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\" />\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\" />\n"
        f"<title>{title}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
        + "\n".join(body) + "\n</body>\n</html>\n"
    )


render = render_html
