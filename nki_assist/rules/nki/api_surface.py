"""API-surface rules (NKI510-NKI514): calls and names the target NKI version does not have, or accepts
differently. Facts come from the versioned API table (nki_assist/api), the version from the target
(`Target.nki_version`). Severity is `error` only where the table is certain for that version: the name
or keyword is listed as removed, the release notes list it as new in a later version, or the version's
stub documents the function's signature; otherwise a warning (stubs omit some members)."""

from __future__ import annotations

import difflib

from ...api import catalogue as nki_api
from ...api import table
from ...api.hardware import Target
from ...api.version import target_version
from ...findings import Severity
from ...parse.nki_model import NkiFile
from ..registry import RuleSpec
from .api_usage import usage
from .common import API_TABLE_NOTE, check, emit

RULES = [  # this module's rules: the registry collects them, docs/rules/ is generated from them
    RuleSpec("NKI510", "unknown-nki-attribute", "deprecated-api", Severity.WARNING,
             "A kernel uses an nl/nisa/nki.collectives name the target NKI version (or the legacy dialect) does not have.",
             fix="Use the name the target version documents (the message suggests the closest one).",
             doc="""\
## What it finds
In a new-dialect (`import nki`) kernel: `nl.X`, `nisa.X`, `nl.tile_size.X` or `nki.collectives.X` where the target NKI version has no `X`. Three cases: a name no NKI release documents (`nl.negate`; the closest documented name is suggested), a name added in a later release than the target (`nl.fori_loop` at 0.3), and a name the docs stopped listing before the target (an info).
""" + API_TABLE_NOTE + """

Severity: `error` only when the table is certain: the release notes list the name as new in a later version and the module's stubs are complete at the target. Where a module's stubs are known to be partial (`nl` at 0.2, where the activation functions were on another page), a name they lack is unknown, not absent: a name added later gets no finding there, and a name no release documents is an `info`. Elsewhere a name no release documents is a `warning`. Names AWS's released code uses at a version (nki-library at 0.3, nki-samples at 0.2) count as present there (docs/api-table.md, "Unknown is not absent"): `nl.range` is not reported. On a guessed version (no flag, config, pin or installed `nki`) every finding is at most a `warning` naming the version assumed.

In a legacy-dialect file (`import neuronxcc.nki.language as nl`, not version-checked otherwise): a name that neither the legacy dialect's names (the project's catalogue, nki_assist/api/catalogue.py) nor any release documents, always a `warning` (that list is curated, not generated). trnfft shipped `nl.negate` in legacy kernels under `if HAS_NKI:` until a later commit renamed it `nl.negative`.

## Why it matters on Trainium
The NKI compiler resolves `nl`/`nisa` names when it traces the kernel: an unknown name is an `AttributeError` at compile time, often on a branch the tests never take (a dtype-dependent cast, a tail path).

## Example
```python
y = nl.negate(x)          # no nl.negate in any NKI release: nl.negative
```

## Fix
Use the documented name (`nl.negative`), or raise `nki-version` together with the toolchain when the API is newer. `check --fix --unsafe-fixes` renames to the suggested name (a name the target version has and does not deprecate).
"""),
    RuleSpec("NKI511", "unknown-nki-keyword", "deprecated-api", Severity.WARNING,
             "A call passes a keyword the target NKI version's signature does not take, or one it removed.",
             fix="Drop or rename the keyword (the message lists the signature at the target version).",
             doc="""\
## What it finds
A call of a documented `nl`/`nisa`/`nki.collectives` function with a keyword argument its signature at the target NKI version does not take (`nisa.tensor_copy(..., dtype=...)`: ISA calls take the dtype from `dst` since 0.2), one the release notes list as removed (`nisa.dma_copy(unique_indices=)` at 0.3) or deprecated (`nki.jit(mode=)`, a warning), `dst=` on a value-returning `nl` function, and more positional arguments than the signature has. `mask=`, `dst_rmw_op=` and `platform_target=` are NKI501's.
""" + API_TABLE_NOTE + """

Severity: `error` when the release notes name this function's keyword as removed at or before the target (`nisa.dma_copy(dst_rmw_op=, unique_indices=)` at 0.3, `nisa.nc_matmul(psumAccumulateFlag=)` at 0.2). A keyword that is merely absent from the documented signature, or removed by a migration-wide note (`dtype=` on ISA calls), is a `warning`: AWS's own tutorials and 0.3 library kernels still pass `dtype=` to some ISA calls. Where the target's signatures are not known complete (`nl` and `nisa` at 0.2, whose stubs are hand-written pages) a keyword they lack, or one positional argument too many, gets no finding; keywords AWS's released code passes at a version are part of the signature there. On a guessed version every finding is at most a `warning` naming the version assumed.

## Why it matters on Trainium
Since NKI 0.2 (SDK 2.28) the compiler validates keyword names against the signature and raises `unexpected keyword argument`; before that fix, a misspelled keyword was silently ignored, so code that "worked" on 2.27 fails on upgrade.

## Example
```python
nisa.tensor_copy(dst=t, src=s, dtype=nl.bfloat16)   # no dtype= on ISA calls since 0.2
```

## Fix
Drop the keyword (allocate `dst` with the dtype you want), or use the parameter the message names. `check --fix --unsafe-fixes` drops a keyword argument that sits on one line.
""", policy="failure", emits=(Severity.ERROR,)),
    RuleSpec("NKI512", "missing-required-nki-argument", "deprecated-api", Severity.ERROR,
             "A call omits a required argument of the target NKI version's signature (often dst=).",
             fix="Pass the missing argument; for ISA calls, allocate the result and pass it as dst=.",
             doc="""\
## What it finds
A call of a documented `nl`/`nisa`/`nki.collectives` function that does not pass every required parameter of its signature at the target NKI version. The common case is a legacy-style ISA call, `t = nisa.tensor_copy(src)`, missing the `dst` the new dialect requires. Calls with `*args`/`**kwargs` are skipped.
""" + API_TABLE_NOTE + """

Severity: `error` when the target version's stub documents the signature and that version's signatures are known complete (0.3 and later, generated from nki-stdlib), else `warning`. At 0.2, whose `nl`/`nisa` stubs are hand-written pages, a missing argument is reported only for a `nisa` call without `dst` (RN 0.2.0: every ISA call takes `dst`); `nl.sequential_range(n)` is not reported (AWS's 0.2 tutorials call it so). On a guessed version every finding is at most a `warning` naming the version assumed.

## Why it matters on Trainium
The call raises `TypeError: missing required argument` when the kernel is traced.

## Example
```python
t = nisa.tensor_copy(src=s)      # new NKI: nisa.tensor_copy(dst=t, src=s)
```

## Fix
Pass the missing arguments. For ISA calls: `t = nl.ndarray(shape, dtype, buffer=nl.sbuf)` then `nisa.tensor_copy(dst=t, src=s)`.
"""),
    RuleSpec("NKI513", "nki-return-convention-misuse", "deprecated-api", Severity.ERROR,
             "The result of a dst=-writing ISA call is used as a value, or a value-returning nl call's result is dropped.",
             fix="ISA calls: pass dst= and use that tile. nl calls: bind the returned tile.",
             doc="""\
## What it finds
Two sides of the new-dialect return convention. A call whose signature at the target NKI version takes `dst` (every `nisa.*` compute instruction, `nl.store`) returns nothing, so binding, passing or returning its result uses `None` (an `error` when the version's stub documents the signature). And an `nl` math function that returns a new tile (`nl.exp(x)`), called as a bare statement, computes a tile that is thrown away (a `warning`).

In a legacy-dialect file (`neuronxcc.nki`) the convention is the other way round: compute calls return their tile. A legacy returns-style call (`nisa.nc_matmul`, `nisa.tensor_copy`, `nl.load`, ...; the project's catalogue, nki_assist/api/catalogue.py) called as a bare statement throws its result away, usually the new dialect's dst-first form (`nisa.nc_matmul(psum, a, b)`) written against the old API (a `warning`; trnfft shipped that form in legacy kernels).
""" + API_TABLE_NOTE + """

## Why it matters on Trainium
`y = nisa.activation(dst=t, op=nl.exp, data=x)` binds `y = None`; the next use of `y` fails at trace time or, worse, a later `nl.store(out, value=y)` stores nothing useful. A discarded `nl.exp(x)` usually means the author expected it to work in place.

## Example
```python
y = nisa.tensor_tensor(dst=t, data1=a, data2=b, op=nl.add)   # y is None; use t
nl.exp(x)                                                    # result discarded
```

## Fix
Use the `dst` tile after an ISA call; bind the tile an `nl` function returns.
""", emits=(Severity.WARNING,)),
    RuleSpec("NKI514", "nested-def-in-nki-kernel", "unsupported-construct", Severity.WARNING,
             "A function is defined inside a @nki.jit kernel body, or inside a helper the kernel calls (NKI 0.3+ "
             "does not compile it).",
             fix="Move the function to module level and call it from the kernel.",
             doc="""\
## What it finds
A `def` nested inside a `@nki.jit` kernel, or inside an undecorated function of the same file that a kernel calls (directly or through other helpers), when the target NKI version is 0.3 or newer. Bodies passed to `nl.fori_loop` / `nl.while_loop` (0.6) are nested by design and are not reported.
""" + API_TABLE_NOTE + """

Severity: `warning`. The rejection is documented by public projects' NKI 0.3 migrations (trnfft moved its helpers to module level; trnrand's hardware build of a helper its kernels call failed with "NKI does not support inner function definitions"), not by the API stubs, so the table cannot make it certain.

## Why it matters on Trainium
The NKI 0.3 compiler traces the kernel's own body and module-level functions; a closure defined in the body fails to compile, and kernel caching assumes kernels are pure functions of their arguments (closures over state are undefined behaviour, RN 0.3.0).

## Example
```python
@nki.jit
def kernel(a):
    def scale(t):        # NKI514
        ...
```

## Fix
Define the helper at module level and pass it what it needs as arguments.
"""),
]

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO
CHECKED_MODULES = ("nl", "nisa", "nki.collectives", "nl.tile_size")
# keywords NKI501 reports (removed after 0.1): not reported twice
NKI501_KWARGS = frozenset({"mask", "dst_rmw_op", "platform_target"})
# value-returning nl calls whose result may be dropped (side effects or context managers)
SIDE_EFFECTS = frozenset({"nl.device_print", "nl.random_seed", "nl.no_reorder", "nl.store", "nl.fori_loop",
                          "nl.while_loop", "nl.affine_range", "nl.sequential_range", "nl.static_range",
                          "nl.dynamic_range"})


def _new(nf: NkiFile) -> bool:
    return nf.dialect in ("new", "transitional")


def _module(name: str) -> str | None:
    mod = name.rsplit(".", 1)[0]
    return mod if mod in CHECKED_MODULES else None


def _certain_signature(e: table.ApiEntry, v: str) -> bool:
    """The signature is the one `v` has, from data known complete there (0.3+ stubs, the installed nki)."""
    return table.certain_signature(e, v)


def _dst_by_notes(e: table.ApiEntry, v: str) -> bool:
    """RN 0.2.0: "all nki.isa APIs have dst as an input param": a nisa call without dst is certain at 0.2+."""
    return e.name.startswith("nisa.") and e.returns == "dst" and table.vkey(v) >= (0, 2)


def _documented_calls(nf: NkiFile, t: Target):
    """(call, its table entry, the target version) for each call of an nl/nisa/collectives name the target
    version documents (present or deprecated); nothing for legacy files or the legacy target."""
    if not _new(nf) or (u := usage(nf)) is None:
        return
    v = target_version(t)
    if v == table.legacy_version():
        return
    for c in u.calls:
        if _module(c.ref.name) is None or table.status(c.ref.name, v) not in ("present", "deprecated"):
            continue
        e = table.lookup(c.ref.name, v)
        if e is not None:
            yield c, e, v


@check("NKI510", per_file=True)
def unknown_attribute(nf: NkiFile, t: Target):
    if nf.dialect == "legacy" and (u := usage(nf)) is not None and u.legacy:
        yield from _unknown_legacy(nf, u)
        return
    if not _new(nf) or (u := usage(nf)) is None:
        return
    v = target_version(t)
    if v == table.legacy_version():
        return
    for r in u.refs:
        mod = _module(r.name)
        if mod is None or r.annotation or r.name.rsplit(".", 1)[1].startswith("_"):
            continue
        st = table.status(r.name, v)
        if st != "unknown":
            continue  # present / deprecated / removed (NKI501 reports removed and deprecated)
        e = table.lookup(r.name)
        short = r.name.rsplit(".", 1)[1]
        if e is not None and e.present:
            intro = e.introduced or e.present[0]
            if table.vkey(intro) > table.vkey(v):
                if not table.complete(mod, v):
                    continue  # unknown is not absent: the stubs of `mod` at v do not list every member
                certain = table.release_note_new(r.name) == intro
                yield emit("NKI510", nf, r.line, r.col, r.end_line, r.end_col,
                           f"`{r.name}` was added in NKI {intro}; the target NKI version is {v}, which does not "
                           "have it.", {"api": r.name, "introduced": intro, "nki_version": v, "certain": certain},
                           severity=E if certain else W,
                           fix=f"Raise nki-version to {intro} (and the toolchain with it), or use what {v} has.")
            elif e.last_documented and table.vkey(v) > table.vkey(e.last_documented):
                yield emit("NKI510", nf, r.line, r.col, r.end_line, r.end_col,
                           f"`{r.name}` is documented up to NKI {e.last_documented} but not at {v}, the target "
                           "version; check that it still exists there.",
                           {"api": r.name, "last_documented": e.last_documented, "nki_version": v},
                           severity=I, confidence="low")
            continue
        if e is not None:
            continue  # curated facts only (removed names): NKI501's
        legacy = r.name in table.legacy_names()
        pool = sorted(n for n in table.module_names(mod, v) if table.status(f"{mod}.{n}", v) == "present")
        close = difflib.get_close_matches(short, pool, n=1, cutoff=0.6)
        hint = f"; did you mean `{mod}.{close[0]}`?" if close else "."
        what = ("exists only in the legacy neuronxcc.nki dialect" if legacy
                else f"is not documented in any NKI release ({', '.join(table.versions())})")
        yield emit("NKI510", nf, r.line, r.col, r.end_line, r.end_col,
                   f"`{r.name}` {what}: NKI {v} has no `{short}` in `{mod}`{hint}",
                   {"api": r.name, "nki_version": v, "legacy_only": legacy, "suggestion": close[0] if close else None},
                   severity=W if table.complete(mod, v) else I, confidence="medium",
                   fix=(f"Use `{mod}.{close[0]}`." if close else f"Use an API that NKI {v} documents."))


def _unknown_legacy(nf: NkiFile, u):
    """A legacy-dialect (`neuronxcc.nki`) file: a name that neither the legacy dialect nor any release has.
    The legacy name list is curated, not generated, so never more than a warning."""
    seen: set[tuple[int, int]] = set()
    known: dict[str, frozenset[str]] = {}
    for r in u.refs:
        mod = _module(r.name)
        if mod is None or r.annotation or r.name.rsplit(".", 1)[1].startswith("_") or (r.line, r.col) in seen:
            continue
        seen.add((r.line, r.col))
        short = r.name.rsplit(".", 1)[1]
        if mod not in known:
            known[mod] = table.all_module_names(mod)
        if short in known[mod]:
            continue
        close = difflib.get_close_matches(short, sorted(n for n in known[mod] if f"{mod}.{n}" in table.legacy_names()),
                                          n=1, cutoff=0.6)
        hint = f"; did you mean `{mod}.{close[0]}`?" if close else "."
        yield emit("NKI510", nf, r.line, r.col, r.end_line, r.end_col,
                   f"`{r.name}` is in neither the legacy neuronxcc.nki dialect this file imports nor any NKI "
                   f"release ({', '.join(table.versions())}): the kernel fails when it is traced{hint}",
                   {"api": r.name, "dialect": "legacy", "suggestion": close[0] if close else None},
                   severity=W, confidence="medium",
                   fix=(f"Use `{mod}.{close[0]}`." if close else "Use an API the legacy dialect documents."))


@check("NKI511", per_file=True)
def unknown_keyword(nf: NkiFile, t: Target):
    for c, e, v in _documented_calls(nf, t):
        if e.params is None:
            continue
        certain = _certain_signature(e, v)
        positional = [p for p in e.params if p.kind in ("posonly", "pos")]
        if certain and not c.splat and not any(p.kind == "var" for p in e.params) and c.positional > len(positional):
            yield emit("NKI511", nf, c.ref.line, c.ref.col, c.ref.end_line, c.ref.end_col,
                       f"`{c.ref.name}` takes at most {len(positional)} positional arguments at NKI {v}; "
                       f"this call passes {c.positional}.",
                       {"api": c.ref.name, "nki_version": v, "positional": c.positional, "max": len(positional)},
                       severity=E if certain else W)
        for kw, line, col, end_col in c.keywords:
            if kw in NKI501_KWARGS:
                continue
            st = table.kwarg_status(c.ref.name, kw, v)
            if st == "present":
                continue
            fact = table.kwarg_fact(c.ref.name, kw) or {}
            params = ", ".join(p.name for p in e.params if p.kind not in ("var", "varkw"))
            ev = {"api": c.ref.name, "kwarg": kw, "nki_version": v, "status": st, "signature": params,
                  "signature_version": e.signature_version or "installed"}
            if st == "deprecated":
                yield emit("NKI511", nf, line, col, line, end_col,
                           f"`{kw}=` on `{c.ref.name}` is deprecated since NKI {fact.get('deprecated')} "
                           f"(ignored or scheduled for removal).", ev, severity=W,
                           fix=f"Drop `{kw}=`" + (f"; use {fact['replacement']}." if fact.get("replacement") else "."))
                continue
            if st == "removed":
                msg = f"`{kw}=` on `{c.ref.name}` was removed in NKI {fact.get('removed')}"
                fix = f"Drop `{kw}=`" + (f" and use {fact['replacement']}." if fact.get("replacement") else ".")
                # certain when the release notes name this function's keyword; a migration-wide fact
                # (`nisa.*(dtype=)`) is not: AWS's own 0.3 kernels still pass dtype= to some ISA calls
                sev = E if fact.get("api") == c.ref.name else W
            elif not certain:
                continue  # a keyword an incomplete signature lacks is not evidence (0.2 stubs)
            else:
                dst = kw == "dst" and e.returns == "value"
                msg = (f"`{c.ref.name}` returns its result and takes no `dst=` at NKI {v}" if dst else
                       f"`{c.ref.name}` has no keyword `{kw}` at NKI {v}")
                close = difflib.get_close_matches(kw, [p.name for p in e.params], n=1, cutoff=0.7)
                fix = (f"Write `{kw} = {c.ref.name}(...)` or use the nisa instruction that takes dst=." if dst else
                       f"Use `{close[0]}=`." if close else f"Drop `{kw}=`; `{c.ref.name}` takes ({params}).")
                # the signature says no, but public kernels show keywords the stubs omit: a warning
                sev = W
            yield emit("NKI511", nf, line, col, line, end_col, f"{msg}; it takes ({params}).", ev,
                       severity=sev, fix=fix)


@check("NKI512", per_file=True)
def missing_required(nf: NkiFile, t: Target):
    for c, e, v in _documented_calls(nf, t):
        if c.splat or e.params is None:
            continue
        given = {k for k, *_ in c.keywords}
        missing = [p.name for i, p in enumerate(e.params)
                   if p.required and p.name not in given and not (p.kind in ("posonly", "pos") and i < c.positional)]
        if not missing:
            continue
        legacy_style = "dst" in missing and e.returns == "dst"
        certain = _certain_signature(e, v)
        if not certain:
            if not (legacy_style and _dst_by_notes(e, v)):
                continue  # a parameter an incomplete signature requires is not evidence (0.2 stubs)
            missing, certain = ["dst"], True
        msg = (f"`{c.ref.name}` writes its result into `dst` at NKI {v} (it returns nothing); this call passes no "
               "dst, the legacy returns-a-tile form" if legacy_style else
               f"`{c.ref.name}` is missing required argument(s) {', '.join(missing)} at NKI {v}")
        yield emit("NKI512", nf, c.ref.line, c.ref.col, c.ref.end_line, c.ref.end_col, msg + ".",
                   {"api": c.ref.name, "nki_version": v, "missing": missing,
                    "signature": [p.name for p in e.params], "signature_version": e.signature_version or "installed"},
                   severity=E if certain else W,
                   fix=("Allocate the result (nl.ndarray) and pass it as dst=." if legacy_style
                        else f"Pass {', '.join(missing)}."))


def _legacy_discarded(nf: NkiFile, u):
    """A legacy file: a returns-style call (the catalogue's legacy parameters do not start with dst) called as a
    statement: its tile is thrown away, often the new dialect's dst-first form written against the old API."""
    for c in u.calls:
        api = nki_api.BY_NAME.get(c.ref.name)
        if not c.statement or api is None or not api.legacy or api.params is None or api.params[0][:1] == ("dst",):
            continue
        legacy, new = api.params
        dst_first = c.positional == len(new) or any(k == "dst" for k, *_ in c.keywords)
        yield emit("NKI513", nf, c.ref.line, c.ref.col, c.ref.end_line, c.ref.end_col,
                   f"`{c.ref.name}` returns its result in the legacy neuronxcc.nki dialect this file imports "
                   f"(it takes ({', '.join(legacy)}, ...) and has no dst); this call discards it"
                   + (", in the new dialect's dst-first form." if dst_first else "."),
                   {"api": c.ref.name, "dialect": "legacy", "returns": "value", "dst_first": dst_first,
                    "positional": c.positional}, severity=W, confidence="medium",
                   fix=f"Bind the result (`t = {c.ref.name}({', '.join(legacy)})`) and use it, or port the file to "
                       "`import nki` where the call takes dst=.")


@check("NKI513", per_file=True)
def return_convention(nf: NkiFile, t: Target):
    if nf.dialect == "legacy" and (u := usage(nf)) is not None and u.legacy:
        yield from _legacy_discarded(nf, u)
        return
    for c, e, v in _documented_calls(nf, t):
        if e.returns is None:
            continue
        if e.returns == "dst" and c.used_as_value:
            yield emit("NKI513", nf, c.ref.line, c.ref.col, c.ref.end_line, c.ref.end_col,
                       f"`{c.ref.name}` writes into its `dst` argument and returns nothing at NKI {v}; using its "
                       "result (binding, passing or returning it) uses None.",
                       {"api": c.ref.name, "nki_version": v, "returns": "dst"},
                       severity=E if _certain_signature(e, v) or _dst_by_notes(e, v) else W,
                       fix="Call it as a statement with dst=<allocated tile> and use that tile afterwards.")
        elif e.returns == "value" and c.statement and c.ref.name.startswith("nl.") \
                and c.ref.name not in SIDE_EFFECTS and e.kind == "function" and e.params \
                and e.params[0].name in ("x", "src", "data") and v not in e.unsupported_call:
            yield emit("NKI513", nf, c.ref.line, c.ref.col, c.ref.end_line, c.ref.end_col,
                       f"`{c.ref.name}` returns a new tile at NKI {v} and writes nothing else; this call discards "
                       "the result.", {"api": c.ref.name, "nki_version": v, "returns": "value"}, severity=W,
                       fix=f"Bind the result (`y = {c.ref.name}(...)`), or use the nisa instruction with dst=.")


@check("NKI514", per_file=True)
def nested_def(nf: NkiFile, t: Target):
    if not _new(nf) or (u := usage(nf)) is None:
        return
    v = target_version(t)
    if v == table.legacy_version() or table.vkey(v) < (0, 3):
        return
    for d in u.nested_defs:
        if d.body_fun:
            continue
        yield emit("NKI514", nf, d.line, d.col, d.line, d.end_col,
                   f"`{d.name}` is defined inside the @nki.jit kernel `{d.kernel}`; NKI {v} kernels with nested "
                   "function definitions fail to compile (only nl.fori_loop / nl.while_loop bodies are meant "
                   "to be nested).", {"function": d.name, "kernel": d.kernel, "nki_version": v},
                   confidence="medium", fix=f"Move `{d.name}` to module level and call it from the kernel.")
