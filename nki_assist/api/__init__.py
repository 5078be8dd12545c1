"""The versioned NKI API table and the target NKI version (docs/api-table.md).

`table` answers "what is this NKI name at version X" from data generated out of the SDK's public API
stubs and release notes; `version` says which NKI version a project targets (`nki-version` setting,
`--nki-version`, the project's pins, the installed `nki`, else `DEFAULT_NKI_VERSION`).
"""

from .table import ApiEntry, Param, kwarg_status, lookup, normalize_version, ops, status, versions, vkey
from .version import DEFAULT_NKI_VERSION, VersionChoice, infer_nki_version, resolve_nki_version, target_version

__all__ = [
           "DEFAULT_NKI_VERSION",
           "ApiEntry",
           "Param",
           "VersionChoice",
           "infer_nki_version",
           "kwarg_status",
           "lookup",
           "normalize_version",
           "ops",
           "resolve_nki_version",
           "status",
           "target_version",
           "versions",
           "vkey",
]
