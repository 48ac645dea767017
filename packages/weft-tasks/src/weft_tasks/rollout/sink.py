"""Rollout results as JSONL: one Trace per line, appended and fsynced as each rollout finishes,
so a crash loses at most the rollout in flight; a torn last line is skipped on reading. A
finished batch is rewritten in plan order."""

from __future__ import annotations

import os
from pathlib import Path

from weft_core.exceptions import ArtifactError
from weft_core.models import Trace, atomic_write_text


class TraceSink:
    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> tuple[list[Trace], list[str]]:
        """(traces, problems) — problems name lines that are not valid traces. A rollout rerun
        after an infrastructure failure appears twice; the later line wins."""
        traces: dict[str, Trace] = {}
        problems: list[str] = []
        if not self.path.exists():
            return [], problems
        with self.path.open(encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    trace = Trace.from_json(line, source=f"{self.path}:{lineno}")
                except ArtifactError as exc:
                    problems.append(
                        f"{self.path}:{lineno}: trace content does not match its hash"
                        if "content_hash" in str(exc)
                        else f"{self.path}:{lineno}: not a trace ({exc})"
                    )
                    continue
                traces.pop(trace.id, None)  # the later line wins, and moves to the end
                traces[trace.id] = trace
        return list(traces.values()), problems

    def rewrite(self, traces: list[Trace]) -> None:
        """Replace the file by `traces` in the given order (atomically: temp file + rename), once
        a batch is complete, so the file does not record the order rollouts finished in."""
        text = "".join(t.sealed().model_dump_json() + "\n" for t in traces)
        atomic_write_text(self.path, text)

    def append(self, trace: Trace) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = trace.sealed().model_dump_json() + "\n"
        with self.path.open("a+b") as fh:
            fh.seek(0, os.SEEK_END)
            if fh.tell() > 0:
                fh.seek(-1, os.SEEK_END)
                if fh.read(1) != b"\n":
                    fh.write(b"\n")  # a crash tore the last line; start a fresh one
            fh.write(line.encode("utf-8"))
            fh.flush()
            os.fsync(fh.fileno())
