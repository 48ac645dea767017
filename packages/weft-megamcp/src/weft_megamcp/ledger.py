"""Per-session ledger: every served call, in order, appended to a JSONL file as it completes."""

from __future__ import annotations

import json
import os
from pathlib import Path

from weft_core.models import LedgerEntry


class SessionLedger:
    """In-memory entries mirrored to `<session>/ledger.jsonl` (append-only, one line per call)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.entries: list[LedgerEntry] = []
        if path.exists():
            lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
            for i, line in enumerate(lines):
                try:
                    self.entries.append(LedgerEntry.model_validate_json(line))
                except ValueError:
                    if i != len(lines) - 1:
                        raise
                    # A process killed mid-append leaves a torn last line: that call was never
                    # acknowledged (the append comes first), so it is dropped, not an error.
                    self.replace(list(self.entries))

    def __len__(self) -> int:
        return len(self.entries)

    @property
    def next_seq(self) -> int:
        return len(self.entries)

    def append(self, entry: LedgerEntry) -> None:
        self.entries.append(entry)
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(entry.model_dump_json() + "\n")

    def truncate(self, n: int) -> None:
        """Keep the first `n` entries (restore to a snapshot taken after n calls)."""
        self.entries = self.entries[:n]
        tmp = self.path.with_suffix(".jsonl.tmp")
        tmp.write_text("".join(e.model_dump_json() + "\n" for e in self.entries), encoding="utf-8")
        os.replace(tmp, self.path)

    def replace(self, entries: list[LedgerEntry]) -> None:
        self.entries = []
        tmp = self.path.with_suffix(".jsonl.tmp")
        tmp.write_text("".join(e.model_dump_json() + "\n" for e in entries), encoding="utf-8")
        os.replace(tmp, self.path)
        self.entries = list(entries)

    def to_json(self) -> list[dict[str, object]]:
        return [json.loads(e.model_dump_json()) for e in self.entries]
