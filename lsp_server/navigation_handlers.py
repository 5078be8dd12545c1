"""Go to definition and find references: tiles and kernels inside a document, and functions and kernels across
the workspace through the project model (open documents' text wins over disk)."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types
from pygls import uris
from pygls.lsp.server import LanguageServer  # the server's own subclass (server.py) registers these handlers
from pygls.workspace import TextDocument

from .hover import word_at
from .navigation import (
    Place,
    dotted_at,
    function_key,
    function_place,
    function_references,
    kernel_def_place,
    kernel_named,
    resolve,
    tile_definitions,
    tile_references,
)
from .positions import from_lsp_position, to_lsp_range


async def _kernel_view(ls: LanguageServer, uri: str):
    """(document, its last good analysis) when that analysis parsed NKI kernels, else (None, None): what the
    lens, inlay hint, symbol and navigation requests read."""
    analysis = await ls.editor_analysis(uri)
    doc = ls.document(uri)
    if doc is None or analysis is None or analysis.nki_file is None:
        return None, None
    return doc, analysis


def _location(doc: TextDocument, place: Place) -> types.Location:
    return types.Location(uri=doc.uri, range=to_lsp_range(doc.lines, place.line, place.col, place.line,
                                                          place.end_col, doc.position_codec))


async def _navigation_target(ls: LanguageServer, params):
    uri, pos = params.text_document.uri, params.position
    doc, analysis = await _kernel_view(ls, uri)
    if doc is None:  # no kernels here: only the project model may resolve the name (a caller of one elsewhere)
        return ls.document(uri), None, None
    lines = doc.lines
    line, col = from_lsp_position(lines, pos, doc.position_codec)
    if not 1 <= line <= len(lines):
        return None, None, None
    others = {k.name for d, a in ls.nki_documents() if d.uri != uri for k in (a.nki_file.kernels or [])}
    places = ls.places(doc)
    target = resolve(analysis.nki_file, places, line, col, lines[line - 1], others)
    return doc, analysis, target


def _kernel_definitions(ls: LanguageServer, name: str) -> list[types.Location]:
    out = []
    for doc, analysis in ls.nki_documents():
        kernel = kernel_named(analysis.nki_file, name)
        if kernel is not None:
            out.append(_location(doc, kernel_def_place(kernel, doc.lines)))
    return out


def _project_function(ls: LanguageServer, doc: TextDocument, position: types.Position):
    """(project, key) of the workspace function the name at `position` resolves to, through the project model
    (imports, aliases, re-exports); None when the model is not ready, does not hold the file, or the name is
    no function of the workspace."""
    path = ls.path_of(doc)
    model = ls.project.model
    if not path or not model.contains(path):
        return None
    lines = doc.lines
    line, col = from_lsp_position(lines, position, doc.position_codec)
    if not 1 <= line <= len(lines):
        return None
    word = word_at(lines[line - 1], col)
    place = next((p for p in ls.places(doc).get(word or "", []) if p.line == line and p.col <= col <= p.end_col), None)
    if place is None:
        return None  # a string or a comment
    with model.lock:
        project = model.project_of(path)
        key = function_key(project, path, line, dotted_at(lines[line - 1], place)) if project is not None else None
    return (project, key) if key else None


def _text_of(ls: LanguageServer):
    """path -> text: the open document's (it wins over the disk), else the file on disk."""
    opened = {ls.path_of(d): d for d in (ls.document(u) for u in list(ls.workspace.text_documents)) if d is not None}

    def text_of(path: str) -> str | None:
        doc = opened.get(path)
        if doc is not None:
            return doc.source
        try:
            return Path(path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None

    return opened, text_of


def _path_location(ls: LanguageServer, opened: dict, text_of, path: str, place: Place) -> types.Location:
    doc = opened.get(path)
    if doc is not None:
        return _location(doc, place)
    lines = (text_of(path) or "").splitlines()
    return types.Location(uri=uris.from_fs_path(path) or Path(path).as_uri(),
                          range=to_lsp_range(lines, place.line, place.col, place.line, place.end_col,
                                             ls.workspace.position_codec))


async def definition(ls: LanguageServer, params: types.DefinitionParams) -> list[types.Location] | None:
    doc, _analysis, target = await _navigation_target(ls, params)
    if doc is None:
        return None
    if target is not None and target.kind == "tile":
        return [_location(doc, p) for p in tile_definitions(target.kernel, target.name,
                                                           ls.places(doc).get(target.name, []))] or None
    if target is not None and target.kernel is not None:  # a kernel of this document (its current text)
        return [_location(doc, kernel_def_place(target.kernel, doc.lines))]
    found = _project_function(ls, doc, params.position)
    if found is not None:
        opened, text_of = _text_of(ls)
        with ls.project.model.lock:
            where = function_place(found[0], found[1], text_of)
        if where is not None:
            return [_path_location(ls, opened, text_of, *where)]
    if target is None:
        return None
    return _kernel_definitions(ls, target.name) or None


async def references(ls: LanguageServer, params: types.ReferenceParams) -> list[types.Location] | None:
    doc, _analysis, target = await _navigation_target(ls, params)
    if doc is None:
        return None
    include = params.context.include_declaration
    if target is not None and target.kind == "tile":
        places = ls.places(doc)
        found = tile_references(target, places)
        if not include:
            defs = set(tile_definitions(target.kernel, target.name, places.get(target.name, [])))
            found = [p for p in found if p not in defs]
        return [_location(doc, p) for p in found] or None
    out = []
    in_model: set[str] = set()
    project_function = _project_function(ls, doc, params.position)
    if project_function is not None:  # the uses the project resolves to that function, in every workspace module
        opened, text_of = _text_of(ls)
        model = ls.project.model
        with model.lock:
            found = function_references(*project_function, text_of, include)
            in_model = {p for p in opened if p and model.contains(p)}
        out.extend(_path_location(ls, opened, text_of, path, p) for path, p in found)
    elif target is None:
        return None
    name = target.name if target is not None else project_function[0].functions[project_function[1]].name
    for other, other_analysis in ls.nki_documents():  # open documents outside the model: by name, as before
        if name not in other.source or ls.path_of(other) in in_model:
            continue
        places = ls.places(other).get(name, [])
        kernel = kernel_named(other_analysis.nki_file, name)
        declaration = kernel_def_place(kernel, other.lines) if kernel is not None else None
        out.extend(_location(other, p) for p in places if include or p != declaration)
    return out or None
