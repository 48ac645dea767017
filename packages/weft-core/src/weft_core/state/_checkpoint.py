"""What one atomic-task turn changed: per MCP, the rows of its DB and the files of its workspace,
against the state at the previous checkpoint. MegaMCP computes it when it verifies a checkpoint;
a trace keeps it per turn (`TurnSegment.state_diff`)."""

from __future__ import annotations

from pydantic import Field

from weft_core._model import WeftModel
from weft_core.state._diff import StateDiff
from weft_core.state._workspace import WorkspaceDiff

INITIAL = "initial"
"""`CheckpointDiff.since` of a diff taken against the group's initial snapshots."""


class SessionChanges(WeftModel):
    """One MCP session's changes between two checkpoints."""

    db: StateDiff = Field(default_factory=StateDiff, description="Rows per table.")
    files: WorkspaceDiff = Field(
        default_factory=WorkspaceDiff,
        description="Workspace files added / modified / removed (text kept for small files).",
    )

    @property
    def empty(self) -> bool:
        return self.db.empty and self.files.empty


class CheckpointDiff(WeftModel):
    """The state change a checkpoint's turn made, per MCP id.

    `since` names the state it starts from: `initial`, or the checkpoint verified before this
    one (re-verifying the same checkpoint keeps its start). `max_rows` is the cap on changed rows
    it holds over all MCPs; rows past it are only counted (`TableDiff.omitted`).
    """

    since: str = Field(description="'initial' or the previous checkpoint's id.")
    mcps: dict[str, SessionChanges] = Field(default_factory=dict)
    max_rows: int | None = Field(default=None, description="Row cap it was computed with.")
    error: str | None = Field(default=None, description="Why the diff could not be computed.")

    @property
    def truncated(self) -> bool:
        return any(c.db.truncated for c in self.mcps.values())

    @property
    def empty(self) -> bool:
        return all(c.empty for c in self.mcps.values())
