"""Markdown to HTML (markdown-it-py, raw HTML escaped) and links: source locations and finding ids.

Drafted text is markdown (backticks, emphasis); the HTML report renders it instead of showing the
backticks. Locations (`gemm_nki.py:24`, `sgemm.cu:70`) become links to the file (a `file://` URI,
or `--source-url` + the path relative to the port spec, with `#L24`), finding ids (`F3`) links to
where the finding is described.
"""

from __future__ import annotations

import re
from functools import lru_cache
from html import escape
from pathlib import Path, PurePosixPath
from urllib.parse import quote

_TAG = re.compile(r"(<[^>]+>)")
_FINDING_ID = re.compile(r"\bF(\d+)\b")


@lru_cache(maxsize=1)
def _md():
    from markdown_it import MarkdownIt

    # commonmark with raw HTML off: `<script>` in a message is shown, never run. Links, images and autolinks off
    # too (issue 44): drafted text may come from an LLM, and `![t](http://...)` would load a remote image when
    # the report is opened; the only links are the ones the report makes itself (anchors, source locations)
    return MarkdownIt("commonmark", {"html": False, "xhtmlOut": True}).disable(["link", "image", "autolink"])


def inline(text: str) -> str:
    """One line of markdown as inline HTML."""
    return _md().renderInline(str(text))


class SourceLinks:
    """Hrefs for the files a review names, relative to the port spec's folder."""

    def __init__(self, review, source_url: str | None = None) -> None:
        port = review.port
        self.base = Path(port.spec).resolve().parent if port.spec else Path.cwd()
        self.source_url = source_url.rstrip("/") if source_url else None
        files = [getattr(port, k) for k in ("cuda", "nki")]
        for f in review.findings:
            files.append(f.file)
            files += [r.file for r in f.related]
        self.files = {PurePosixPath(p).name: p for p in dict.fromkeys(x for x in files if x)}
        names = sorted(self.files, key=len, reverse=True)
        self._loc = re.compile(r"(?<![\w/.-])(" + "|".join(map(re.escape, names)) + r"):(\d+)(?:-(\d+))?") \
            if names else None

    def href(self, file: str | None, line: int | None = None) -> str | None:
        if not file:
            return None
        anchor = f"#L{line}" if line else ""
        path = Path(file)
        if self.source_url:
            try:
                rel = path.resolve().relative_to(self.base) if path.is_absolute() else PurePosixPath(file)
            except ValueError:
                rel = PurePosixPath(path.name)
            return f"{self.source_url}/{quote(PurePosixPath(rel).as_posix())}{anchor}"
        full = path if path.is_absolute() else self.base / path
        return full.resolve().as_uri() + anchor

    def link(self, text: str, file: str | None, line: int | None = None) -> str:
        href = self.href(file, line)
        return f"<a href=\"{escape(href, quote=True)}\">{escape(text)}</a>" if href else escape(text)

    def linkify(self, html: str, ids: dict[str, str] | None = None) -> str:
        """Links for `name.py:24` locations and finding ids (`F3` -> ids["F3"]) in the text of
        rendered HTML, never inside a tag or an existing link."""
        if self._loc is not None:
            html = _in_text(html, lambda t: self._loc.sub(self._loc_link, t))
        if ids:
            html = _in_text(html, lambda t: _FINDING_ID.sub(lambda m: _id_link(m, ids), t))
        return html

    def _loc_link(self, m: re.Match) -> str:
        href = self.href(self.files[m.group(1)], int(m.group(2)))
        return f"<a href=\"{escape(href, quote=True)}\">{m.group(0)}</a>"


def _id_link(m: re.Match, ids: dict[str, str]) -> str:
    target = ids.get(m.group(0))
    return f"<a href=\"#{target}\">{m.group(0)}</a>" if target else m.group(0)


def _in_text(html: str, sub) -> str:
    """Apply `sub` to the text between tags that is not inside a link."""
    out, in_link = [], 0
    for part in _TAG.split(html):
        if part.startswith("<"):
            if re.match(r"<a\b", part):
                in_link += 1
            elif part.startswith("</a"):
                in_link = max(0, in_link - 1)
            out.append(part)
        else:
            out.append(part if in_link else sub(part))
    return "".join(out)
