"""Editor settings (`nki-assist.*`, read through `workspace/configuration`).

Bad values never stop the server: each is replaced by its default and reported once as a problem.
The LLM API key is deliberately not a setting; it comes from the environment only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SECTION = "nki-assist"
TARGETS = ("trn1", "trn2", "trn3")
LLM_PROVIDERS = ("none", "openai")


@dataclass(frozen=True)
class Settings:
    target: str | None = None  # None: [tool.nki-assist] target, else trn2
    select: tuple[str, ...] = ()  # empty: [tool.nki-assist] select, else all rules
    ignore: tuple[str, ...] = ()  # added to [tool.nki-assist] ignore
    debounce_ms: int | None = None  # None ("auto"): a little more than a re-check of the document costs
    max_file_bytes: int | None = None  # None: [tool.nki-assist] max-file-bytes (5 MB)
    execution_enabled: bool = False  # run the simulator in the port review (runs user code)
    port_spec: str | None = None  # explicit port.toml for the review command
    run_command: str | None = None  # the program `nki-assist.runCommand` runs under `nki-assist run`
    review_output_dir: str | None = None  # where review markdown is written; None: a cache dir
    llm_provider: str = "none"
    llm_model: str | None = None
    llm_base_url: str | None = None


def _get(raw: dict, dotted: str) -> Any:
    """`raw["a"]["b"]` for "a.b", also accepting the flat key "a.b" some clients send."""
    if dotted in raw:
        return raw[dotted]
    node: Any = raw
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def _str_tuple(value: Any, key: str, problems: list[str]) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [v for v in value.replace(",", " ").split()]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(v.strip() for v in value if v.strip())
    problems.append(f"{SECTION}.{key} must be a list of rule ids, got {value!r}")
    return ()


def _opt_str(value: Any, key: str, problems: list[str]) -> str | None:
    if value is None or value == "":
        return None
    if isinstance(value, str):
        return value.strip() or None
    problems.append(f"{SECTION}.{key} must be a string, got {value!r}")
    return None


def parse_settings(raw: Any) -> tuple[Settings, list[str]]:
    """Settings from the client's `nki-assist` section, plus the problems found in it."""
    problems: list[str] = []
    if raw is None:
        return Settings(), problems
    if not isinstance(raw, dict):
        return Settings(), [f"{SECTION} settings must be an object, got {type(raw).__name__}"]

    target = _opt_str(_get(raw, "target"), "target", problems)
    if target is not None and target not in TARGETS:
        problems.append(f"{SECTION}.target must be one of {', '.join(TARGETS)}, got {target!r}")
        target = None

    debounce = _get(raw, "diagnostics.debounceMs")
    if debounce in (None, "auto"):
        debounce = None
    elif isinstance(debounce, bool) or not isinstance(debounce, (int, float)) or not 0 <= debounce <= 10_000:
        problems.append(f"{SECTION}.diagnostics.debounceMs must be \"auto\" or 0..10000, got {debounce!r}")
        debounce = None

    max_bytes = _get(raw, "maxFileBytes")
    if max_bytes in (None, 0):
        max_bytes = None
    elif isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0:
        problems.append(f"{SECTION}.maxFileBytes must be a positive integer, got {max_bytes!r}")
        max_bytes = None

    execution = _get(raw, "execution.enabled")
    if execution is None:
        execution = False
    elif not isinstance(execution, bool):
        problems.append(f"{SECTION}.execution.enabled must be true or false, got {execution!r}")
        execution = False

    provider = _opt_str(_get(raw, "llm.provider"), "llm.provider", problems) or "none"
    if provider not in LLM_PROVIDERS:
        problems.append(f"{SECTION}.llm.provider must be one of {', '.join(LLM_PROVIDERS)}, got {provider!r}")
        provider = "none"

    settings = Settings(
        target=target,
        select=_str_tuple(_get(raw, "select"), "select", problems),
        ignore=_str_tuple(_get(raw, "ignore"), "ignore", problems),
        debounce_ms=None if debounce is None else int(debounce),
        max_file_bytes=max_bytes,
        execution_enabled=execution,
        port_spec=_opt_str(_get(raw, "review.portSpec"), "review.portSpec", problems),
        review_output_dir=_opt_str(_get(raw, "review.outputDir"), "review.outputDir", problems),
        run_command=_opt_str(_get(raw, "runCommand"), "runCommand", problems),
        llm_provider=provider,
        llm_model=_opt_str(_get(raw, "llm.model"), "llm.model", problems),
        llm_base_url=_opt_str(_get(raw, "llm.baseUrl"), "llm.baseUrl", problems),
    )
    return settings, problems
