"""Generate nki_assist/api/nki_api_table.json, the versioned NKI API table, from the SDK's public API stubs.

Input: a snapshot of aws-neuron/aws-neuron-sdk laid out as `<root>/<sdk>/nki/api/nki/{language,isa,collectives}/
__init__.py` per SDK release (each with a COMMIT file) plus `<root>/release-notes/` (the NKI component notes).
The shared corpus `shared/corpora/aws-neuron-sdk-nki-api` has exactly that.

What it keeps (facts only, no docstrings): member names of nki.language / nki.isa / nki / nki.collectives,
parameters (name, kind, default as source text), the return convention (`dst` when the signature takes a
`dst` parameter, else `value`), the engines a docstring's first paragraph states ("using Vector or GpSimd
Engine"), `.. deprecated:: X` markers, and from the release notes: which NKI version each SDK release ships
and the APIs/keywords they list as new, deprecated or removed. `tools/nki_api_curated.toml` adds facts the
stubs cannot show (the legacy neuronxcc.nki dialect and the 0.1 -> 0.2 migration), each with its source,
which modules' names and signatures are known complete per version (`[coverage]`), and the released code
taken as evidence (`[[evidence]]`: AWS's corpora at the version they target, scanned by
tools/nki_api_evidence.py; what they use is present there, with its source).

Usage: python tools/gen_nki_api_table.py [SNAPSHOT_ROOT] [-o OUT]  (defaults: ../shared/corpora/..., the
package's table). `--check` exits 1 when the written table would differ (CI/tests use it).
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DEFAULT_ROOT = REPO.parent / "shared" / "corpora" / "aws-neuron-sdk-nki-api"
DEFAULT_OUT = REPO / "nki_assist" / "api" / "nki_api_table.json"
CURATED = HERE / "nki_api_curated.toml"
SCHEMA = "nki-assist/api-table@1"

MODULES = {"language": "nl", "isa": "nisa", "collectives": "nki.collectives", "": "nki"}
ENGINE_RE = re.compile(r"using\s+(?:the\s+)?((?:Tensor|Vector|Scalar|GpSimd)(?:\s+Engine)?"
                       r"(?:\s*(?:,|or|and)\s*(?:Tensor|Vector|Scalar|GpSimd)(?:\s+Engine)?)*)\s+Engine", re.IGNORECASE)
DEPRECATED_RE = re.compile(r"\.\.\s+deprecated::\s*(\d+\.\d+)")
UNSUPPORTED_RE = re.compile(r"not supported in the current release", re.IGNORECASE)
# release notes: "Neuron Kernel Interface (NKI) [0.6.0] (Neuron 2.32.0 Release)" / "(0.2.0) [2.28] (Neuron 2.28.0 ..."
HEADER_RE = re.compile(r"^Neuron Kernel Interface \(NKI\)\s+(?:[\[(](\d+\.\d+)\.\d+[\])])?.*\(Neuron (\d+\.\d+)\.\d+")
INTRODUCES_RE = re.compile(r"introduces NKI (\d+\.\d+)\.\d+")
API_RE = re.compile(r"(?:``|:func:`~|:doc:`|:attr:`~|:meth:`~)(nki\.(?:language|isa|collectives)\.[A-Za-z_][\w.]*|"
                    r"nki\.[a-z_]+|nl\.[A-Za-z_][\w.]*|nisa\.[A-Za-z_][\w.]*|tile_size\.[a-z_]+)")
KWARG_RE = re.compile(r"``(nki\.jit|nki\.isa\.\w+|nisa\.\w+|nl\.\w+)\((\w+)=")


def vkey(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("."))


def short(full: str) -> str:
    for pre, rep in (("nki.language.", "nl."), ("nki.isa.", "nisa.")):
        if full.startswith(pre):
            return rep + full[len(pre):]
    if full.startswith("tile_size."):
        return "nl." + full
    return full


# --- stubs -------------------------------------------------------------------------------------

def _default(node: ast.AST | None) -> str | None:
    return None if node is None else ast.unparse(node)


def signature(fn: ast.FunctionDef) -> list[list]:
    """[[name, kind, default-or-None], ...]; kind: posonly | pos | kwonly | var | varkw."""
    a = fn.args
    out: list[list] = []
    pos = a.posonlyargs + a.args
    defaults = [None] * (len(pos) - len(a.defaults)) + list(a.defaults)
    for i, (arg, d) in enumerate(zip(pos, defaults)):
        out.append([arg.arg, "posonly" if i < len(a.posonlyargs) else "pos", _default(d)])
    if a.vararg:
        out.append([a.vararg.arg, "var", None])
    for arg, d in zip(a.kwonlyargs, a.kw_defaults):
        out.append([arg.arg, "kwonly", _default(d)])
    if a.kwarg:
        out.append([a.kwarg.arg, "varkw", None])
    if out and out[0][0] == "self":
        out = out[1:]
    return out


def engines_of(doc: str) -> list[str]:
    first = doc.split("\n\n")[0]
    m = ENGINE_RE.search(first)
    if not m:
        return []
    return sorted({e.lower() for e in re.findall(r"Tensor|Vector|Scalar|GpSimd", m.group(1), re.IGNORECASE)})


def _member(prefix: str, name: str, kind: str, doc: str, params=None) -> tuple[str, dict]:
    fact: dict = {"kind": kind}
    if params is not None:
        fact["params"] = params
        # dst-style: a required `dst` (an optional one, as in nl.shared_identity_matrix, means "returns, or writes dst")
        fact["returns"] = "dst" if any(p[0] == "dst" and p[2] is None for p in params) else "value"
    eng = engines_of(doc)
    if eng:
        fact["engines"] = eng
    dep = DEPRECATED_RE.search(doc)
    if dep:
        fact["deprecated"] = dep.group(1)
    if UNSUPPORTED_RE.search(doc.split("\n\n")[0]):
        fact["unsupported_call"] = True
    return f"{prefix}.{name}", fact


def stub_members(path: Path, prefix: str) -> dict[str, dict]:
    """Public members of one stub module: functions, classes (and their attributes/methods), values."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: dict[str, dict] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            k, v = _member(prefix, node.name, "function", ast.get_docstring(node) or "", signature(node))
            out[k] = v
        elif isinstance(node, ast.ClassDef):
            public = node.name.lstrip("_")
            # `tile_size: _TileSize = ...` (2.32) documents tile_size through a private class
            cname = "tile_size" if node.name == "_TileSize" else node.name
            if node.name.startswith("_") and node.name != "_TileSize":
                continue
            bases = {ast.unparse(b) for b in node.bases}
            ckind = "enum" if "Enum" in bases else "class"
            out[f"{prefix}.{cname}"] = {"kind": "namespace" if cname == "tile_size" else ckind}
            methods = []
            body = node.body
            for i, m in enumerate(body):
                doc = ""
                if i + 1 < len(body) and isinstance(body[i + 1], ast.Expr) and isinstance(body[i + 1].value, ast.Constant):
                    doc = str(body[i + 1].value.value)
                if isinstance(m, (ast.Assign, ast.AnnAssign)):
                    tgt = m.targets[0] if isinstance(m, ast.Assign) else m.target
                    if isinstance(tgt, ast.Name) and not tgt.id.startswith("_"):
                        k, v = _member(f"{prefix}.{cname}", tgt.id, "attribute", doc)
                        out[k] = v
                elif isinstance(m, ast.FunctionDef):
                    is_prop = any(ast.unparse(d) == "property" for d in m.decorator_list)
                    mdoc = ast.get_docstring(m) or ""
                    if is_prop:
                        k, v = _member(f"{prefix}.{cname}", m.name, "attribute", mdoc)
                        out[k] = v
                    elif not m.name.startswith("_") or m.name in ("__getitem__", "__setitem__") or \
                            (m.name.startswith("__") and m.name not in ("__init__",)):
                        methods.append(m.name)
            if methods:
                out[f"{prefix}.{cname}"]["methods"] = sorted(methods)
            del public
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            tgt = node.targets[0] if isinstance(node, ast.Assign) else node.target
            if isinstance(tgt, ast.Name) and not tgt.id.startswith("_"):
                kind = "namespace" if tgt.id == "tile_size" else "value"
                out.setdefault(f"{prefix}.{tgt.id}", {"kind": kind})
    return out


# --- release notes -----------------------------------------------------------------------------

def _sections(text: str) -> list[tuple[str, str | None, str]]:
    """(sdk 'A.B', nki 'X.Y' or None, body) per 'Neuron Kernel Interface (NKI) ...' section."""
    lines = text.splitlines()
    heads = [(i, HEADER_RE.match(ln)) for i, ln in enumerate(lines)]
    heads = [(i, m) for i, m in heads if m]
    out = []
    for j, (i, m) in enumerate(heads):
        end = heads[j + 1][0] if j + 1 < len(heads) else len(lines)
        body = "\n".join(lines[i + 2:end])
        intro = INTRODUCES_RE.search(body)
        out.append((m.group(2), intro.group(1) if intro else m.group(1), body))
    return out


def _subsections(body: str) -> dict[str, str]:
    """Subsection title -> text ('New Features', 'Deprecated and Removed APIs', 'Breaking Changes', ...)."""
    parts = re.split(r"\n([^\n]+)\n[~^]{4,}\n", "\n" + body)
    out: dict[str, str] = {}
    for title, text in zip(parts[1::2], parts[2::2]):
        out[title.strip()] = out.get(title.strip(), "") + text
    return out


def _bullets(text: str) -> list[str]:
    items, cur = [], []
    for ln in text.splitlines():
        if re.match(r"^\s{0,2}\* ", ln):
            if cur:
                items.append(" ".join(cur))
            cur = [ln.strip()[2:]]
        elif cur and ln.strip():
            cur.append(ln.strip())
        elif cur:
            items.append(" ".join(cur))
            cur = []
    if cur:
        items.append(" ".join(cur))
    return items


def release_facts(notes_dir: Path) -> dict:
    """SDK -> NKI version map, and per NKI version the APIs/keywords listed as new, deprecated, removed."""
    texts = []
    comp = notes_dir / "components" / "nki.rst"
    if comp.is_file():
        texts.append(comp.read_text(encoding="utf-8"))
    sdk_nki: dict[str, str] = {}
    prev = notes_dir / "prev"
    if prev.is_dir():  # per-release notes: "This release introduces NKI 0.2.0" wins over a header's number
        for d in sorted(prev.iterdir()):
            f = d / "nki.rst"
            if f.is_file():
                m = INTRODUCES_RE.search(f.read_text(encoding="utf-8"))
                if m:
                    sdk_nki[".".join(d.name.split(".")[:2])] = m.group(1)
    facts = {"new": {}, "deprecated": {}, "removed": {}, "kwargs": []}
    for text in texts:
        for sdk, nki, body in _sections(text):
            if nki is None:
                continue
            sdk_nki.setdefault(sdk, nki)
            nki = sdk_nki[sdk]
            subs = _subsections(body)
            for title, sub in subs.items():
                low = title.lower()
                for b in _bullets(sub):
                    head = re.split(r" [—-] |: ", b, maxsplit=1)[0]
                    names = [short(n.rstrip(".")) for n in API_RE.findall(head)]
                    for api, kw in KWARG_RE.findall(b):
                        if "deprecat" in b.lower() or "removed" in b.lower():
                            ignored = "ignored" in b.lower()
                            breaking = "breaking change" in b.lower() and not ignored
                            facts["kwargs"].append({"api": short(api), "kwarg": kw, "version": nki,
                                                    "status": "removed" if breaking else "deprecated"})
                    if low.startswith("new features"):
                        found = [short(n.rstrip(".")) for n in API_RE.findall(b)]
                        found += re.findall(r"\b(?:nl|nisa)\.[a-z_]\w*", b)
                        for n in found:
                            facts["new"].setdefault(n, nki)
                    elif low.startswith("deprecated") or low.startswith("breaking"):
                        lowb = b.lower()
                        for n in names:
                            if "(" in n or KWARG_RE.search(b):
                                continue
                            # "``x`` — ``num_channels`` parameter removed" removes a parameter, not x
                            if re.search(r"\bremoved\b", lowb.split(".")[0] + lowb[:120]) \
                                    and "parameter" not in lowb.split("removed")[0]:
                                facts["removed"].setdefault(n, nki)
                            elif "deprecat" in lowb:
                                facts["deprecated"].setdefault(n, nki)
                        # "parameter ``psumAccumulateFlag`` has been removed", "``a`` and ``b`` parameters removed"
                        pm = re.search(r"((?:``\w+``(?:\s*(?:,|and)\s*)?)+)\s*parameters?\s+(?:has been |have been )?removed"
                                       r"|parameter\s+``(\w+)``\s+has been removed", b)
                        api = next((short(x) for x in API_RE.findall(b) if "." in x), None)
                        if pm and api:
                            kws = re.findall(r"``(\w+)``", pm.group(1)) if pm.group(1) else [pm.group(2)]
                            for kw in kws:
                                facts["kwargs"].append({"api": api, "kwarg": kw, "version": nki, "status": "removed"})
    facts["sdk_to_nki"] = dict(sorted(sdk_nki.items(), key=lambda kv: vkey(kv[0])))
    return facts


# --- assembly ----------------------------------------------------------------------------------

def build(root: Path) -> dict:
    notes = release_facts(root / "release-notes")
    sdk_to_nki = notes["sdk_to_nki"]
    sdks = sorted((d.name for d in root.iterdir() if (d / "nki" / "api").is_dir()), key=vkey)
    per_sdk: dict[str, dict[str, dict]] = {}
    commits: dict[str, str] = {}
    for sdk in sdks:
        members: dict[str, dict] = {}
        for sub, prefix in MODULES.items():
            p = root / sdk / "nki" / "api" / "nki" / sub / "__init__.py"
            if p.is_file():
                members.update(stub_members(p, prefix))
        per_sdk[sdk] = members
        c = root / sdk / "COMMIT"
        commits[sdk] = c.read_text().strip() if c.is_file() else ""
    nki_of = {sdk: sdk_to_nki.get(".".join(sdk.split(".")[:2])) for sdk in sdks}
    missing = [s for s, v in nki_of.items() if v is None]
    if missing:
        raise SystemExit(f"release notes name no NKI version for SDK {missing}")
    versions = sorted(set(nki_of.values()), key=vkey)
    # per NKI version: names present in any of its SDKs; facts from the newest SDK that has the name
    by_version: dict[str, dict[str, dict]] = {v: {} for v in versions}
    for sdk in sdks:  # ascending, so a later SDK of the same NKI version overwrites
        by_version[nki_of[sdk]].update(per_sdk[sdk])
    names = sorted({n for v in versions for n in by_version[v]})
    entries: dict[str, dict] = {}
    for name in names:
        seen = [v for v in versions if name in by_version[v]]
        e: dict = {"kind": by_version[seen[-1]][name]["kind"]}
        removed = notes["removed"].get(name)
        first, last = seen[0], seen[-1]
        # stubs omit some members in some releases (shared_constant at 2.29): the gap between two
        # releases that document a name is presence, not removal
        present = [v for v in versions if vkey(first) <= vkey(v) <= vkey(last)]
        if removed:
            present = [v for v in versions if vkey(first) <= vkey(v) < vkey(removed)] or present[:1]
        intro = notes["new"].get(name)
        e["introduced"] = intro if intro and vkey(intro) < vkey(first) else first
        if intro and intro == e["introduced"]:
            e["new_in_notes"] = True  # the notes list it as new in that release: absent before, for certain
        if vkey(e["introduced"]) < vkey(first):
            present = [v for v in versions if vkey(e["introduced"]) <= vkey(v) < vkey(first)] + present
        e["present"] = present
        dep = notes["deprecated"].get(name) or next((by_version[v][name]["deprecated"] for v in seen
                                                     if "deprecated" in by_version[v][name]), None)
        if dep:
            e["deprecated"] = dep
        if removed:
            e["removed"] = removed
        if last != versions[-1] and not removed:
            e["last_documented"] = last
        sigs = []
        for v in seen:
            f = by_version[v][name]
            if "params" not in f:
                continue
            if sigs and sigs[-1]["params"] == f["params"]:
                sigs[-1]["versions"].append(v)
            else:
                sigs.append({"versions": [v], "params": f["params"], "returns": f["returns"]})
        if sigs:
            e["signatures"] = sigs
        engs = next((by_version[v][name]["engines"] for v in reversed(seen) if "engines" in by_version[v][name]), None)
        if engs:
            e["engines"] = engs
        uns = [v for v in seen if by_version[v][name].get("unsupported_call")]
        if uns:
            e["unsupported_call"] = uns
        meths = by_version[last][name].get("methods")
        if meths:
            e["methods"] = {v: by_version[v][name].get("methods", []) for v in seen
                            if by_version[v][name].get("methods")}
        entries[name] = e
    kwargs = {}
    for k in notes["kwargs"]:
        kwargs.setdefault(f"{k['api']}({k['kwarg']}=)", {"api": k["api"], "kwarg": k["kwarg"]})[k["status"]] = k["version"]
    # release-note names the stubs never carried (tensor_copy_dynamic_* at 2.28-2.29 are carried by gap fill)
    for name, ver in notes["removed"].items():
        entries.setdefault(name, {"kind": "unknown", "present": [], "removed": ver, "source": "release-notes"})
    table = {
        "schema": SCHEMA,
        "source": {"repository": "aws-neuron/aws-neuron-sdk", "path": "nki/api/nki", "release_notes":
                   "release-notes/components/nki.rst, release-notes/prev/*/nki.rst",
                   "sdk": {s: {"commit": commits[s], "nki": nki_of[s]} for s in sdks}},
        "versions": versions,
        "sdk_to_nki": sdk_to_nki,
        "entries": entries,
        "kwargs": dict(sorted(kwargs.items())),
    }
    _merge_curated(table)
    _merge_evidence(table, root.parent)
    return table


def _merge_evidence(table: dict, corpora: Path) -> None:
    """Names, keywords and call shapes of AWS's released code at a known version ([[evidence]] in the
    curated file) are evidence they exist there: a name becomes present at that version, a keyword joins
    the signature, a required parameter the code omits becomes optional (default "?"); each with its source.
    A corpus folder that is absent is skipped (the table says which corpora it read)."""
    sys.path.insert(0, str(HERE))
    from nki_api_evidence import scan  # tools/ sibling

    data = tomllib.loads(CURATED.read_text(encoding="utf-8"))
    versions = table["versions"]
    read = []
    for ev in data.get("evidence", []):
        folder = corpora / ev["corpus"] / ev.get("path", "")
        if not folder.is_dir():
            continue
        read.append({"corpus": ev["corpus"], "version": ev["version"], "source": ev["source"]})
        v = ev["version"]
        for name, used in scan(folder, ev["corpus"]).items():
            e = table["entries"].get(name)
            if e is None:
                e = table["entries"][name] = {"kind": "function" if used["calls"] else "unknown", "present": [],
                                              "introduced": v, "source": "evidence"}
            if e.get("removed") and vkey(e["removed"]) <= vkey(v):
                continue  # a contradiction: the corpus test reports it
            e.setdefault("evidence", {}).setdefault(v, used["line"])
            if v not in e["present"]:
                e["present"] = sorted({*e["present"], v}, key=vkey)
            if e.get("introduced") is None or vkey(e["introduced"]) > vkey(v):
                e["introduced"] = v
                e.pop("new_in_notes", None)
            if e.get("last_documented") and vkey(e["last_documented"]) < vkey(v):
                e["last_documented"] = v if v != versions[-1] else e.pop("last_documented")
            _widen_signature(e, v, used, name, table["kwargs"])
    table["evidence"] = read
    table["entries"] = dict(sorted(table["entries"].items()))


def _removed_kwarg(kwargs: dict, name: str, kw: str, v: str) -> bool:
    for key in (f"{name}({kw}=)", f"{name.split('.')[0]}.*({kw}=)", f"*({kw}=)"):
        fact = kwargs.get(key)
        if fact and fact.get("removed") and vkey(fact["removed"]) <= vkey(v):
            return True
    return False


def _widen_signature(e: dict, v: str, used: dict, name: str = "", kwargs: dict | None = None) -> None:
    """The signature at `v` accepting what released code at `v` passes (a copy for `v` alone when it changes)."""
    sigs = e.get("signatures")
    kwargs = kwargs or {}
    if not sigs:
        return
    docs = [s for s in sigs if v in s["versions"]]
    base = docs[0] if docs else max((s for s in sigs if vkey(min(s["versions"], key=vkey)) < vkey(v)),
                                    key=lambda s: vkey(max(s["versions"], key=vkey)), default=None)
    if base is None:
        return
    params = [list(p) for p in base["params"]]
    names = {p[0] for p in params}
    varkw = any(p[1] == "varkw" for p in params)
    # a keyword the release notes remove (ISA dtype= since 0.2) stays out: code passing it carries a dead
    # keyword (NKI511 warns), it is not evidence against the notes
    added = {kw: where for kw, where in used["kwargs"].items()
             if kw not in names and not varkw and not _removed_kwarg(kwargs, name, kw, v)}
    for kw in added:
        params.append([kw, "kwonly", "?"])
    omitted = set()
    for npos, kws, _where in used["calls"]:
        for i, p in enumerate(params):
            if p[2] is None and p[1] in ("posonly", "pos", "kwonly") and p[0] not in kws \
                    and not (p[1] in ("posonly", "pos") and i < npos):
                omitted.add(p[0])
    for p in params:
        if p[0] in omitted:
            p[2] = "?"
    if not added and not omitted:
        return
    new = {"versions": [v], "params": params, "returns": base["returns"],
           "evidence": {"keywords": added, "optional": sorted(omitted), "source": used["line"]}}
    if docs:
        docs[0]["versions"].remove(v)
        if not docs[0]["versions"]:
            sigs.remove(docs[0])
    sigs.append(new)
    sigs.sort(key=lambda s: vkey(min(s["versions"], key=vkey)))


def _merge_curated(table: dict) -> None:
    """Facts from tools/nki_api_curated.toml (legacy dialect, 0.1 -> 0.2 migration), each with a source."""
    data = tomllib.loads(CURATED.read_text(encoding="utf-8"))
    table["legacy_version"] = data["legacy"]["version"]
    table["incomplete"] = sorted(data["coverage"]["incomplete"])
    table["signatures_incomplete"] = sorted(data["coverage"].get("signatures_incomplete", []))
    sys.path.insert(0, str(REPO))
    from nki_assist.api import catalogue as nki_api  # the legacy dialect facts the project already keeps

    legacy = set(data["legacy"]["names"]) | {a.name for a in nki_api.CATALOGUE if a.legacy}
    table["legacy"] = {"names": sorted(legacy), "source": data["legacy"]["source"]}
    for item in data.get("api", []):
        e = table["entries"].setdefault(item["name"], {"kind": item.get("kind", "function"), "present": []})
        for key in ("deprecated", "removed", "replacement", "source"):
            if key in item and key not in e:
                e[key] = item[key]
    for item in data.get("kwarg", []):
        key = f"{item['api']}({item['kwarg']}=)"
        k = table["kwargs"].setdefault(key, {"api": item["api"], "kwarg": item["kwarg"]})
        for f in ("deprecated", "removed", "replacement", "source"):
            if f in item and f not in k:
                k[f] = item[f]
    table["kwargs"] = dict(sorted(table["kwargs"].items()))
    table["entries"] = dict(sorted(table["entries"].items()))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("root", nargs="?", default=str(DEFAULT_ROOT))
    ap.add_argument("-o", "--out", default=str(DEFAULT_OUT))
    ap.add_argument("--check", action="store_true", help="exit 1 when the table on disk differs")
    args = ap.parse_args(argv)
    text = json.dumps(build(Path(args.root)), indent=None, separators=(",", ":"), sort_keys=False) + "\n"
    out = Path(args.out)
    if args.check:
        same = out.is_file() and out.read_text(encoding="utf-8") == text
        print("up to date" if same else f"{out} is stale: run tools/gen_nki_api_table.py")
        return 0 if same else 1
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out} ({len(text):,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
