"""Self-contained HTML review report (inline CSS, PNG plots base64-embedded, no external fetches).

What a reader gets: a short table of contents; drafted text rendered as markdown; each finding's
text once, in the item that cites it, under an anchor (`#F3`); the findings table as an index that
points there; file locations as links (`file://` or `--source-url`); plots whose failures are named
in their caption.
"""

from __future__ import annotations

import base64
import re
from html import escape

from ..feedback.view import ReviewView, build, counts_text, location
from ..schema import Review
from .links import SourceLinks, inline
from .sections import (PLOT_CAPTIONS, Bar, Bullets, Cell, Grid, Mark, Part, Plot, Section, Text,
                       described_items, sections)

from ..numerics.plots import error_points, failure_caption
from ..rules.registry import get

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
# Nothing is fetched or run: no scripts, no remote images, fonts or frames; the inline CSS and the embedded PNG
# plots (data: URIs) are all the page loads. Links still navigate (they are the report's own).
_FENCE = re.compile(r"^```\w*\n(.*?)^```[ \t]*$", re.M | re.S)
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"
_LEAD_ID = re.compile(r"^(F\d+)\b")

_CSS = """
body{font:15px/1.5 system-ui,-apple-system,Segoe UI,sans-serif;max-width:980px;margin:2em auto;padding:0 1em;color:#1b1f24}
h1{font-size:1.6em}h2{border-bottom:1px solid #d0d7de;padding-bottom:.2em;margin-top:1.8em}
a{color:#0969da}code{background:#f6f8fa;border-radius:4px;padding:0 .25em;font-size:.92em}
pre.diff{background:#f6f8fa;border-radius:4px;padding:.5em .75em;overflow-x:auto}pre.diff code{padding:0}
.verdict{display:inline-block;padding:.2em .7em;border-radius:4px;font-weight:600;color:#fff}
.v-block{background:#cf222e}.v-incomplete{background:#6e7781}.v-revise{background:#bc4c00}.v-approve-with-nits{background:#1a7f37}.v-approve{background:#1a7f37}
nav.toc{background:#f6f8fa;border:1px solid #d0d7de;border-radius:6px;padding:.4em 1.2em;margin:1em 0;font-size:.92em}
nav.toc ol{margin:.2em 0;padding-left:1.4em}nav.toc>ol>li{margin:.15em 0}
.item{border:1px solid #d0d7de;border-left-width:5px;border-radius:4px;padding:.4em 1em;margin:1em 0}
.s-error{border-left-color:#cf222e}.s-warning{border-left-color:#bc4c00}.s-info{border-left-color:#0969da}
li:target,tr:target{background:#fff8c5}
.meta{color:#57606a;font-size:.9em}.note{background:#fff8c5;padding:.5em 1em;border-radius:4px}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #d0d7de;padding:.25em .6em;text-align:left;vertical-align:top}
td.pass{color:#1a7f37}td.fail{color:#cf222e;font-weight:600}td.na{color:#57606a}
.bar{display:inline-block;height:.8em;background:#0969da;vertical-align:middle}.barcell{white-space:nowrap}
details{margin:.6em 0}summary{cursor:pointer;font-weight:600}
figure{margin:1em 0}img{max-width:100%}figcaption .fails{color:#cf222e;font-weight:600}
footer{color:#57606a;font-size:.85em;margin-top:2em}
"""


def _e(x: object) -> str:
    return escape(str(x), quote=True)


def _slug(title: str) -> str:
    return "sec-" + re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


class _Page:
    """Rendering state: links, the anchor of each finding, the plots not yet placed."""

    def __init__(self, review: Review, view: ReviewView, plots: dict[str, bytes], source_url: str | None):
        self.review, self.view, self.pngs = review, view, plots
        self.links = SourceLinks(review, source_url)
        # A finding's text lives in the item line that starts with its id (the deterministic draft);
        # otherwise in the findings table.
        self.described = described_items(view)
        self.anchor = {f.id: f.id for f in view.findings}

    def md(self, text: str, skip: str | None = None) -> str:
        ids = {k: v for k, v in self.anchor.items() if k != skip} if skip else self.anchor
        return self.links.linkify(inline(text), ids)

    def cell(self, c: Cell) -> str:
        if isinstance(c, Bar):
            w = round(max(0.0, min(1.0, c.fraction)) * 160)
            return f"<td class=\"barcell\"><span class=\"bar\" style=\"width:{w}px\"></span> {_e(c.text)}</td>"
        if isinstance(c, Mark):
            return f"<td class=\"{_e(c.kind)}\">{_e(c.text)}</td>"
        return f"<td>{self.links.linkify(_e(c), self.anchor)}</td>"

    def grid(self, g: Grid) -> str:
        head = "".join(f"<th>{_e(c)}</th>" for c in g.columns)
        rows = "".join("<tr>" + "".join(self.cell(c) for c in r) + "</tr>" for r in g.rows)
        cap = f"<p class=\"meta\">{self.md(g.caption)}</p>" if g.caption else ""
        table = f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>{cap}"
        if g.collapsed:
            return f"<details><summary>{_e(g.title)} ({len(g.rows)} rows)</summary>{table}</details>"
        return f"<h3>{_e(g.title)}</h3>{table}"

    def figure(self, name: str, data: bytes) -> str:
        b64 = base64.b64encode(bytes(data)).decode("ascii")
        caption = _e(PLOT_CAPTIONS.get(name, name))
        alt = name
        if name == "numerics.png" and self.review.numerics is not None:

            fails = failure_caption(error_points(self.review.numerics))
            if fails:
                cls = "fails" if fails.startswith("FAILS") else "meta"
                caption += f" <span class=\"{cls}\">{_e(fails)}</span>"
                alt = f"{name}: {fails}"
        return (f"<figure><img alt=\"{_e(alt)}\" src=\"data:image/png;base64,{b64}\" />"
                f"<figcaption>{caption}</figcaption></figure>")

    def part(self, p: Part) -> str:
        if isinstance(p, Plot):
            return self.figure(p.name, self.pngs.pop(p.name)) if p.name in self.pngs else ""
        if isinstance(p, Text):
            return f"<p><strong>{_e(p.title)}:</strong> {self.md(p.text)}</p>" if p.title else f"<p>{self.md(p.text)}</p>"
        if isinstance(p, Bullets):
            items = "<ul>" + "".join(f"<li>{self.md(x)}</li>" for x in p.items) + "</ul>"
            if p.collapsed:
                return f"<details><summary>{_e(p.title)}</summary>{items}</details>"
            return f"<h3>{_e(p.title)}</h3>{items}"
        return self.grid(p)

    def section(self, sec: Section) -> str:
        out = f"<h2 id=\"{_slug(sec.title)}\">{_e(sec.title)}</h2>"
        if sec.missing is not None:
            return out + f"<p class=\"meta\">Not available: {self.md(sec.missing)}</p>"
        return out + "".join(self.part(p) for p in sec.parts)

    # -- the parts only the HTML has ---------------------------------------------------------
    def item(self, iv) -> str:
        it = iv.item
        what = []
        for line in iv.what_lines:
            m = _LEAD_ID.match(line.strip())
            fid = m.group(1) if m and self.described.get(m.group(1)) == it.priority else None
            attr = f" id=\"{_e(fid)}\"" if fid else ""
            what.append(f"<li{attr}>{self.md(line, skip=fid)}</li>")
        refs = ", ".join(f"<a href=\"#{_e(fid)}\">{_e(fid)}</a>" for fid in it.finding_ids)
        return (f"<section class=\"item s-{_e(iv.severity)}\" id=\"item-{it.priority}\">"
                f"<h3>{it.priority}. {self.md(it.title)}</h3>"
                f"<p class=\"meta\">{_e(iv.severity)} ({_e(iv.label)}) · {_e(it.criterion)} · findings {refs}</p>"
                "<p><strong>What:</strong></p><ul>" + "".join(what) + "</ul>"
                f"<p><strong>Why it matters on Trainium:</strong> {self.md(it.why)}</p>"
                + self.labelled("Fix", it.fix) +
                f"<p><strong>How to confirm (profiling rationale):</strong> {self.md(it.profiling)}</p>"
                "</section>")

    def labelled(self, label: str, text: str) -> str:
        """Paragraphs of `text` after a bold label; a fenced block (a proven repair's diff) as preformatted code,
        its lines kept (inline markdown would run them into one line)."""
        out, pos = [], 0
        for m in _FENCE.finditer(text):
            out += [("p", text[pos:m.start()]), ("pre", m.group(1))]
            pos = m.end()
        out.append(("p", text[pos:]))
        html, head = [], f"<strong>{_e(label)}:</strong> "
        for kind, chunk in out:
            if kind == "pre":
                html.append(f"<pre class=\"diff\"><code>{_e(chunk.rstrip())}</code></pre>")
            elif chunk.strip() or head:
                html.append(f"<p>{head}{self.md(chunk.strip())}</p>")
                head = ""
        return "".join(html)

    def findings_table(self) -> str:
        """An index of the findings; the text of those an item describes is not repeated here."""

        rows = []
        for f in self.view.findings:
            item = self.described.get(f.id)
            row_id = f"row-{f.id}" if item else f.id
            try:
                rule = f"<a href=\"{_e(get(f.rule).docs_url)}\">{_e(f.rule)}</a> {_e(f.name)}"
            except (KeyError, AttributeError):
                rule = f"{_e(f.rule)} {_e(f.name)}"
            where = self.links.link(location(f), f.file, f.line) if f.file else ""
            text = (f"described in <a href=\"#{_e(f.id)}\">item {item}</a>" if item else self.md(f.message))
            if f.autofix is not None:
                flag = "--fix" if f.autofix.applicability == "safe" else "--fix --unsafe-fixes"
                text += f" <span class=\"meta\">(fixable: <code>nki-assist check {flag}</code>)</span>"
            rows.append(f"<tr id=\"{_e(row_id)}\"><td><a href=\"#{_e(f.id)}\">{_e(f.id)}</a></td>"
                        f"<td>{_e(f.severity.value)}</td><td>{rule}</td><td>{_e(f.category)}</td>"
                        f"<td>{where}</td><td>{text}</td></tr>")
        return ("<table><thead><tr><th>ID</th><th>Severity</th><th>Rule</th><th>Category</th>"
                "<th>Location</th><th>Message</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>")

    def toc(self, extra: list[str]) -> str:
        items = "".join(f"<li><a href=\"#item-{iv.item.priority}\">{inline(_short(iv.item.title))}</a></li>"
                        for iv in self.view.items)
        entries = [f"<li><a href=\"#feedback\">Prioritized feedback</a>" + (f"<ol>{items}</ol>" if items else "") + "</li>"]
        entries += [f"<li><a href=\"#{_slug(t)}\">{_e(t)}</a></li>" for t in extra]
        return f"<nav class=\"toc\"><strong>Contents</strong><ol>{''.join(entries)}</ol></nav>"


def _short(title: str) -> str:
    """An item title without its trailing list of locations, for the table of contents."""
    return re.sub(r"\s*\([^()]*\.(?:py|cu|cuh):\d[^()]*\)\s*$", "", title) or title


def _plots(plots: dict[str, bytes] | None) -> tuple[dict[str, bytes], list[str]]:
    good, skipped = {}, []
    for name, data in (plots or {}).items():
        if not isinstance(data, (bytes, bytearray)) or not bytes(data).startswith(PNG_MAGIC):
            skipped.append(name)
        else:
            good[name] = bytes(data)
    return good, skipped


def render_html(review: Review, *, plots: dict[str, bytes] | None = None, source_url: str | None = None) -> str:
    v: ReviewView = build(review)
    a = v.assessment
    port = review.port
    pngs, skipped = _plots(plots)
    page = _Page(review, v, pngs, source_url)
    body: list[str] = [f"<h1>nki-assist review: {_e(port.name)} ({_e(port.target)})</h1>"]
    body.append(f"<p><span class=\"verdict v-{_e(a.verdict)}\">{_e(a.verdict.upper())}</span> "
                f"<span class=\"meta\">{_e(counts_text(v.counts))} · drafter: {_e(a.drafter)}</span></p>")
    body.append(f"<p>{page.md(a.summary)}</p>")
    if v.drafter_note:
        body.append(f"<p class=\"note\">{_e(v.drafter_note)}</p>")
    srcs = [f"{_e(k.upper())}: {page.links.link(getattr(port, k), getattr(port, k) if k != 'spec' else None)}"
            for k in ("cuda", "nki") if getattr(port, k)]
    if port.spec:
        srcs.append(f"SPEC: <code>{_e(port.spec)}</code>")
    if srcs:
        body.append("<p class=\"meta\">" + " · ".join(srcs) + "</p>")
    toc_at = len(body)

    body.append("<h2 id=\"feedback\">Prioritized feedback</h2>")
    if not v.items:
        body.append("<p>Nothing to change: the checks found no issues.</p>")
    body += [page.item(iv) for iv in v.items]
    titles = []
    if a.rubric:
        titles.append("Rubric")
        body.append(f"<h2 id=\"{_slug('Rubric')}\">Rubric</h2><table><thead><tr><th>Criterion</th><th>Score</th>"
                    "<th>Rationale</th></tr></thead><tbody>")
        body += [f"<tr><td>{_e(s.criterion)}</td><td>{s.score}/4</td><td>{page.md(s.rationale)}</td></tr>"
                 for s in a.rubric]
        body.append("</tbody></table>")
    titles.append("Findings")
    body.append(f"<h2 id=\"{_slug('Findings')}\">Findings</h2>")
    body.append(page.findings_table() if v.findings else "<p>None.</p>")
    for sec in sections(review):  # takes the plots it places
        titles.append(sec.title)
        body.append(page.section(sec))
    if page.pngs:
        titles.append("Plots")
        body.append(f"<h2 id=\"{_slug('Plots')}\">Plots</h2>" + "".join(page.figure(n, d) for n, d in page.pngs.items()))
    notes = list(review.notes) + [f"plot {n!r} skipped: not PNG data" for n in skipped]
    if notes:
        titles.append("Notes")
        body.append(f"<h2 id=\"{_slug('Notes')}\">Notes</h2><ul>"
                    + "".join(f"<li>{page.md(n)}</li>" for n in dict.fromkeys(notes)) + "</ul>")
    body.insert(toc_at, page.toc(titles))
    body.append(f"<footer>{_e(v.footer)}</footer>")
    title = _e(f"nki-assist review: {port.name}")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\" />\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\" />\n"
        f"<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\" />\n"
        f"<title>{title}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
        + "\n".join(body) + "\n</body>\n</html>\n"
    )


render = render_html
