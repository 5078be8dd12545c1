"""Source text as the front ends read it: line endings normalised the way CPython reads source.

CPython's tokenizer turns `\r\n` and a lone `\r` into `\n`, so a file saved with classic-Mac or mixed
line endings runs like any other. Every front end and `check_text` (the CLI and the language server)
read text through `normalize_newlines`; each line ending becomes exactly one `\n`, so line numbers and
columns are those of the file as an editor shows it.
"""

from __future__ import annotations


def normalize_newlines(text: str) -> str:
    """`text` with `\r\n` and lone `\r` replaced by `\n` (unchanged, same object, when it has no `\r`)."""
    if "\r" not in text:
        return text
    return text.replace("\r\n", "\n").replace("\r", "\n")
