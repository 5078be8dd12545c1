"""The batch page (report.html in the batch folder): self-contained HTML, every value escaped, links only to
the batch's own review files and the rules' docs pages."""

from __future__ import annotations

from html import escape
from pathlib import Path
from urllib.parse import quote

from ..infra.atomic import write_atomic
from ..rules.registry import DOCS_BASE_URL
from .rows import columns, grade_key
from .stats import summarize

REPORT = "report.html"
_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:2em auto;max-width:1200px;padding:0 1em;color:#1b1f24}
h2{border-bottom:1px solid #d0d7de;padding-bottom:.2em;margin-top:1.6em}a{color:#0969da}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #d0d7de;padding:.2em .5em;text-align:left}
td.num{text-align:right}.bar{display:inline-block;height:.8em;background:#0969da;vertical-align:middle}
.s-ok{color:#1a7f37}.s-bad{color:#cf222e;font-weight:600}.pass{color:#1a7f37}.fail{color:#cf222e}
.meta{color:#57606a}.wide{overflow-x:auto}
"""


def _e(x: object) -> str:
    return escape("" if x is None else str(x), quote=True)


def _bar(n: int, most: int) -> str:
    return f'<span class="bar" style="width:{int(200 * n / most) if most else 0}px"></span> {n}'


def _review_link(folder: Path, row: dict) -> str:
    rel = row.get("review")
    if not rel:
        return _e(row["id"])
    stem = rel.rsplit(".", 1)[0]
    for ext in ("html", "md", "json"):  # the most readable form the batch wrote
        if (folder / f"{stem}.{ext}").is_file():
            return f'<a href="{_e(quote(f"{stem}.{ext}"))}">{_e(row["id"])}</a>'
    return _e(row["id"])


def _num(v, fmt: str = "{:.3g}") -> str:
    return fmt.format(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else _e(v)


def render(folder: str | Path, rows: list[dict]) -> str:
    folder = Path(folder)
    s = summarize(rows)
    out = ['<!doctype html><html lang="en"><head><meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           f"<title>nki-assist batch: {s['submissions']} submissions</title><style>{_CSS}</style></head><body>",
           f"<h1>Batch review: {s['submissions']} submissions</h1>",
           '<p class="meta">' + _e(", ".join(f"{k}: {v}" for k, v in s["status"].items()))
           + f"; correct (numerics pass on every size, no error): {s['correct']}</p>"]
    most = max(s["verdicts"].values(), default=0)
    out.append('<h2 id="verdicts">Verdicts</h2><table><tr><th>verdict</th><th>submissions</th></tr>')
    out += [f"<tr><td>{_e(v)}</td><td>{_bar(n, most)}</td></tr>" for v, n in s["verdicts"].items()]
    out.append("</table>")
    if s["rubric"]:
        scores = sorted({k for d in s["rubric"].values() for k in d["counts"]}, key=float)
        out.append('<h2 id="rubric">Rubric scores</h2><table><tr><th>criterion</th><th>mean</th>'
                   + "".join(f"<th>score {_e(k)}</th>" for k in scores) + "</tr>")
        for c, d in s["rubric"].items():
            out.append(f"<tr><td>{_e(c)}</td><td class=num>{_num(d['mean'])}</td>"
                       + "".join(f"<td class=num>{d['counts'].get(k, 0)}</td>" for k in scores) + "</tr>")
        out.append("</table>")
    out.append('<h2 id="findings">Most frequent findings</h2>')
    if s["frequent_findings"]:
        out.append("<table><tr><th>rule</th><th>name</th><th>submissions</th></tr>")
        for f in s["frequent_findings"]:
            href = DOCS_BASE_URL + quote(f"{f['name']}.md") if f["name"] else None
            name = f'<a href="{_e(href)}">{_e(f["name"])}</a>' if href else ""
            out.append(f"<tr><td>{_e(f['rule'])}</td><td>{name}</td><td class=num>{f['submissions']}</td></tr>")
        out.append("</table>")
    else:
        out.append("<p>No findings.</p>")
    out.append('<h2 id="fastest">Fastest correct submissions (estimated time)</h2>')
    if s["fastest_correct"]:
        out.append("<table><tr><th>submission</th><th>estimated time (us)</th><th>size</th><th>verdict</th></tr>")
        by_id = {r["id"]: r for r in rows}
        out += [f"<tr><td>{_review_link(folder, by_id[f['id']])}</td><td class=num>{_num(f['est_time_us'], '{:,.1f}')}</td>"
                f"<td>{_e(f['est_size'])}</td><td>{_e(f['verdict'])}</td></tr>" for f in s["fastest_correct"]]
        out.append("</table>")
    else:
        out.append("<p>No correct submission has an estimated time.</p>")
    cols = columns(rows)
    show = ["rank", "id", "status", "verdict", "score_total"] + [c for c in cols if c.startswith("rubric.")] \
        + ["errors", "warnings", "top_rule", "top_line"] + [c for c in cols if c.startswith("numerics.")] \
        + ["est_time_us", "wall_s", "message"]
    out.append('<h2 id="submissions">Submissions (best first)</h2><div class="wide"><table id="rows"><tr>'
               + "".join(f"<th>{_e(c.split('.', 1)[-1])}</th>" for c in show) + "</tr>")
    for r in sorted(rows, key=grade_key):
        cells = []
        for c in show:
            v = r.get(c)
            if c == "id":
                cells.append(f"<td>{_review_link(folder, r)}</td>")
            elif c == "status":
                cells.append(f'<td class="{"s-ok" if v == "ok" else "s-bad"}">{_e(v)}</td>')
            elif c.startswith("numerics."):
                cells.append(f'<td class="{_e(v)}">{_e(v)}</td>')
            elif isinstance(v, (int, float)) and not isinstance(v, bool):
                cells.append(f"<td class=num>{_num(v, '{:,.1f}' if c == 'est_time_us' else '{:.3g}')}</td>")
            else:
                cells.append(f"<td>{_e(v)}</td>")
        out.append('<tr class="row">' + "".join(cells) + "</tr>")
    out.append("</table></div><footer class=meta>nki-assist batch report; the table is results.csv / results.jsonl "
               "in this folder.</footer></body></html>")
    return "\n".join(out) + "\n"


def write_report(folder: str | Path, rows: list[dict]) -> Path:
    path = Path(folder) / REPORT
    write_atomic(path, render(folder, rows))
    return path
