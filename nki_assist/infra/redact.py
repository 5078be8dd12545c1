"""Secret redaction for every text nki-assist prints or stores (reports, caches, logs, kernel errors).

Two sources of secrets: values of environment variables whose names say they are secret
(`*_KEY`, `*_TOKEN`, `*SECRET*`, `*PASSWORD*`, ...), and text that looks like a credential
whatever its origin (`sk-...`, `Bearer ...`, AWS access key ids, GitHub/Hugging Face/Slack tokens).
Kept at the bottom of the dependency graph: any layer may call it.
"""

from __future__ import annotations

import os
import re
from typing import Iterable, Mapping

MASK = "***"
MIN_SECRET_LEN = 8  # shorter env values ("1", "true") would mangle ordinary text

_SECRET_NAME = re.compile(r"(^|_)(KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIALS?|APIKEY|AUTH)(_|$)"
                          r"|SECRET|PASSWORD|TOKEN", re.I)
_PATTERNS = [
    (re.compile(r"Bearer\s+[^\s\"',;]+"), "Bearer " + MASK),
    (re.compile(r"\bsk-[A-Za-z0-9_\-]{6,}"), "sk-" + MASK),
    (re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), "AKIA" + MASK),
    (re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}"), "gh_" + MASK),
    (re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}"), "github_pat_" + MASK),
    (re.compile(r"\bhf_[A-Za-z0-9]{20,}"), "hf_" + MASK),
    (re.compile(r"\bxox[abprs]-[A-Za-z0-9\-]{10,}"), "xox-" + MASK),
]


def is_secret_name(name: str) -> bool:
    """True for environment variable names that hold credentials (OPENAI_API_KEY, GH_TOKEN, ...)."""
    return bool(_SECRET_NAME.search(name))


def secret_values(env: Mapping[str, str] | None = None) -> list[str]:
    """Values of secret-named variables in `env` (default: os.environ), longest first."""
    env = os.environ if env is None else env
    vals = {v for k, v in env.items() if is_secret_name(k) and v and len(v) >= MIN_SECRET_LEN}
    return sorted(vals, key=len, reverse=True)


def redact(text: str, extra: Iterable[str | None] = ()) -> str:
    """`text` with every known secret replaced by ***: the `extra` values, secret-named environment
    variables, and anything shaped like a credential."""
    if not text:
        return text
    for value in [*(e for e in extra if e and len(e) >= 4), *secret_values()]:
        if value in text:
            text = text.replace(value, MASK)
    for pattern, repl in _PATTERNS:
        text = pattern.sub(repl, text)
    return text


def redact_obj(value, extra: Iterable[str | None] = ()):
    """Redact every string inside nested dicts/lists/tuples (evidence, JSON documents)."""
    extra = tuple(extra)
    if isinstance(value, str):
        return redact(value, extra)
    if isinstance(value, dict):
        return {k: redact_obj(v, extra) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redact_obj(v, extra) for v in value)
    return value


class RedactingStream:
    """A text stream that redacts whole lines before they reach the wrapped stream (stdout/stderr of
    the CLI): a secret split across two write() calls of one line is still caught. With `chunk`,
    lines are held until that many characters are pending (large JSON documents stay fast)."""

    def __init__(self, stream, chunk: int = 0):
        self._stream = stream
        self._chunk = chunk
        self._pending: list[str] = []
        self._size = 0

    def write(self, text: str) -> int:
        self._pending.append(text)
        self._size += len(text)
        if self._size >= self._chunk and "\n" in text:
            done, rest = "".join(self._pending).rsplit("\n", 1)
            self._pending, self._size = [rest], len(rest)
            self._stream.write(redact(done + "\n"))
        return len(text)

    def flush(self) -> None:
        if self._size:
            self._stream.write(redact("".join(self._pending)))
        self._pending, self._size = [], 0
        self._stream.flush()

    def __getattr__(self, name: str):  # isatty, fileno, encoding, ... of the real stream
        return getattr(self._stream, name)


# Characters a terminal acts on instead of showing: C0 controls but tab and newline (ESC starts colour,
# cursor and title sequences; CR overwrites a line), DEL, C1 controls (0x9b is a one-byte CSI) and the
# bidirectional overrides that reorder what is displayed.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _visible(m: re.Match) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def neutralise(text: str) -> str:
    """`text` with every terminal control character shown as an escape (`\\x1b`), never acted on.
    For text from user code (kernel exceptions, stderr) on its way to a terminal or a report."""
    return _CONTROLS.sub(_visible, text)


_SCHEME = re.compile(r"(?i)\b(javascript|vbscript|data)\s*:")


def defuse_schemes(text: str) -> str:
    """`javascript:`/`vbscript:`/`data:` with the colon as `&#58;`: no renderer takes what follows for a link."""
    return _SCHEME.sub(lambda m: m.group(1) + "&#58;", text)
