"""The batch folder: reviews/<id>.json (+ .md or .html), results.jsonl (appended as each task ends, so a killed
batch keeps what finished) and, at the end, results.jsonl rewritten in task order plus results.csv."""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

from ..infra.atomic import write_atomic
from .rows import columns, ranked

RESULTS = "results.jsonl"
CSV = "results.csv"


class BatchStore:
    def __init__(self, folder: str | Path):
        self.dir = Path(folder)
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "reviews").mkdir(exist_ok=True)
        self.rows: dict[str, dict] = {}  # id -> the latest row
        self._load()

    def _load(self) -> None:
        path = self.dir / RESULTS
        if not path.is_file():
            return
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line torn by a kill mid-write: that task is redone
            if isinstance(row, dict) and isinstance(row.get("id"), str):
                self.rows[row["id"]] = row

    def done(self, ident: str, key: str) -> bool:
        """Finished before with the same inputs, options and tool version (whatever its status)."""
        row = self.rows.get(ident)
        return row is not None and row.get("key") == key and (row.get("review") is None
                                                              or (self.dir / row["review"]).is_file())

    def write_review(self, ident: str, files: dict[str, str]) -> str | None:
        """Write reviews/<id>.<ext> for each rendered form; the JSON's path (relative to the folder)."""
        main = None
        for ext, text in files.items():
            rel = f"reviews/{ident}.{ext}"
            write_atomic(self.dir / rel, text, fsync=False)
            if ext == "json":
                main = rel
        return main

    def append(self, row: dict) -> None:
        """One line, flushed and synced: a kill after this returns keeps the row."""
        self.rows[row["id"]] = row
        with open(self.dir / RESULTS, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(row) + "\n")
            fh.flush()
            os.fsync(fh.fileno())

    def finish(self, order: list[str]) -> list[dict]:
        """Rewrite results.jsonl (one row per id, in task order, ranked) and results.csv; the rows."""
        rows = [self.rows[i] for i in order if i in self.rows]
        rows += [r for i, r in self.rows.items() if i not in set(order)]  # ids of an earlier, larger batch
        ranked(rows)
        write_atomic(self.dir / RESULTS, "".join(json.dumps(r) + "\n" for r in rows))
        cols = columns(rows)
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=cols, extrasaction="ignore", lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in cols})
        write_atomic(self.dir / CSV, buf.getvalue())
        return rows


def read_rows(folder: str | Path) -> list[dict]:
    """The rows of a batch folder (for report-batch); raises FileNotFoundError when it has no table."""
    path = Path(folder) / RESULTS
    if not path.is_file():
        raise FileNotFoundError(f"{folder}: no {RESULTS} (not a batch folder, or the batch has not started)")
    return list(BatchStore(folder).rows.values())
