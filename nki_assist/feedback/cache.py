"""On-disk cache of LLM replies, keyed by a hash of what was asked (never by or with the API key)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any


def default_cache_dir() -> Path:
    """$NKI_ASSIST_CACHE_DIR, else $XDG_CACHE_HOME/nki-assist/llm, else ~/.cache/nki-assist/llm."""
    if os.environ.get("NKI_ASSIST_CACHE_DIR"):
        return Path(os.environ["NKI_ASSIST_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "nki-assist" / "llm"


# Wall-clock measurements in the prompt's JSON blocks (a review's `seconds`, a run's `elapsed_s`):
# they differ on every run, so a key that included them would never hit.
_WALL_CLOCK = re.compile(r'("(?:seconds|elapsed_s|elapsed|wall_s)"\s*:\s*)-?[0-9][0-9.eE+-]*')


def stable_content(text: str) -> str:
    """`text` without its wall-clock numbers: what identifies a request."""
    return _WALL_CLOCK.sub(r"\1null", text)


def cache_key(*, model: str, base_url: str, messages: list[dict[str, str]], schema_version: str,
              prompt_version: str) -> str:
    stable = [{**m, "content": stable_content(m.get("content", ""))} for m in messages]
    payload = json.dumps(
        {"model": model, "base_url": base_url, "messages": stable, "schema": schema_version,
         "prompts": prompt_version},
        sort_keys=True, ensure_ascii=False, separators=(",", ":"),
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class ReplyCache:
    def __init__(self, directory: str | os.PathLike[str]):
        self.dir = Path(directory)

    def _path(self, key: str) -> Path:
        return self.dir / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            data = json.loads(self._path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None  # missing or corrupt entries are misses
        return data if isinstance(data, dict) and isinstance(data.get("content"), str) else None

    def put(self, key: str, entry: dict[str, Any]) -> None:
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(entry, fh, ensure_ascii=False)
            os.replace(tmp, path)
        except OSError:
            pass  # a cache that cannot be written is only a slower run
