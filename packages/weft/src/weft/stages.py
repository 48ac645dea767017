"""Resumable stages: each stage's output lives in a folder named by the content hash of its
inputs and is complete only once its `done.json` is written (last, atomically). A rerun with the
same inputs finds `done.json` and skips the stage; changed inputs give a new key and a new folder,
so nothing an earlier run produced is overwritten."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from weft_core._hashing import content_hash, sha256_bytes
from weft_core.models import atomic_write_text


def file_hash(path: Path) -> str:
    return "sha256:" + sha256_bytes(path.read_bytes())


class StageStore:
    def __init__(self, root: Path) -> None:
        self.root = root

    @staticmethod
    def key(stage: str, inputs: Any) -> str:
        return content_hash({"stage": stage, "inputs": inputs}).removeprefix("sha256:")[:20]

    def path(self, stage: str, key: str) -> Path:
        return self.root / stage / key

    def done(self, stage: str, key: str) -> dict[str, Any] | None:
        marker = self.path(stage, key) / "done.json"
        if not marker.exists():
            return None
        try:
            data = json.loads(marker.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            return None  # a damaged marker means the stage runs again
        return data if isinstance(data, dict) else None

    def begin(self, stage: str, key: str, *, keep: bool = False) -> Path:
        """The stage's folder, emptied of a crashed earlier attempt unless `keep` (stages that
        resume inside, like rollouts, keep their partial output)."""
        folder = self.path(stage, key)
        if folder.exists() and not keep:
            shutil.rmtree(folder)
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def finish(self, stage: str, key: str, record: dict[str, Any]) -> dict[str, Any]:
        atomic_write_text(
            self.path(stage, key) / "done.json", json.dumps(record, indent=2, default=str)
        )
        return record
