"""Resumable stages: each stage's output lives in a folder named by the content hash of its
inputs and is complete only once its `done.json` is written (last, atomically). A rerun with the
same inputs finds `done.json` and skips the stage; changed inputs give a new key and a new folder,
so nothing an earlier run produced is overwritten."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, Field, ValidationError

from weft_core._hashing import content_hash, sha256_bytes
from weft_core.models import atomic_write_text

R = TypeVar("R", bound=BaseModel)


class AtomicRecord(BaseModel):
    """The atomic-task stage's outcome for one bundle."""

    mcp: str = Field(description="The MCP's slug (the bundle's name).")
    library: str | None = Field(default=None, description="The certified library folder.")
    tasks: int = 0
    coverage: float = 0.0
    error: str | None = Field(default=None, description="Why no library was certified.")


class ComposeRecord(BaseModel):
    """The composition stage's outcome: the ids of the task graphs saved under tasks/."""

    tasks: list[str] = Field(default_factory=list)
    failures: list[str] = Field(default_factory=list, description="Rejections, 'reason: n'.")


class RolloutsRecord(BaseModel):
    """The rollout stage's outcome."""

    traces: str = Field(description="The traces JSONL file.")
    rollouts: int = 0


class EvolveRecord(BaseModel):
    """The evolve stage's outcome: rounds run and the round report (corpus-relative)."""

    rounds: int = 0
    report: str = Field(description="The HTML round report, relative to OUT.")


class ToolspaceRecord(BaseModel):
    """The toolspace stage's outcome: the task graphs saved under tasks/ (their s_0 under
    snapshots/) and what each step of Algorithm 1 produced."""

    tasks: list[str] = Field(default_factory=list)
    # Not `traces`: in stage records that key is a reference to a traces file (weft verify).
    mined_traces: int = Field(default=0, description="Trajectories mined.")
    mined_calls: int = Field(default=0, description="Calls in them.")
    edges: dict[str, int] = Field(default_factory=dict, description="Edges by kind.")
    environments: int = 0
    walks_tried: int = 0
    walks_kept: int = 0
    rejected: dict[str, int] = Field(default_factory=dict, description="Chains not accepted.")


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

    def done(self, stage: str, key: str, record: type[R]) -> R | None:
        """The stage's record if it finished; a damaged or outdated marker means it runs again."""
        marker = self.path(stage, key) / "done.json"
        if not marker.exists():
            return None
        try:
            return record.model_validate(json.loads(marker.read_text(encoding="utf-8")))
        except (OSError, json.JSONDecodeError, ValidationError):
            return None

    def begin(self, stage: str, key: str, *, keep: bool = False) -> Path:
        """The stage's folder, emptied of a crashed earlier attempt unless `keep` (stages that
        resume inside, like rollouts, keep their partial output)."""
        folder = self.path(stage, key)
        if folder.exists() and not keep:
            shutil.rmtree(folder)
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def finish(self, stage: str, key: str, record: R) -> R:
        atomic_write_text(self.path(stage, key) / "done.json", record.model_dump_json(indent=2))
        return record
