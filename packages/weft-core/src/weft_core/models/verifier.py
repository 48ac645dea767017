"""The verifier of a task: which checks must hold at which checkpoint, and the binding values the
checks' `{"$binding": ...}` references resolve to.

One typed value travels from composition (a TaskGraph) through grounding, rollouts and the MegaMCP
client to the host, which evaluates one checkpoint at a time on the session's evidence.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from weft_core.exceptions import CheckError
from weft_core.models._base import WeftModel
from weft_core.models.check import Check

FINAL_CHECKPOINT = "final"
"""The checkpoint verified on the frozen final state after an episode (every other checkpoint is a
task node's id, verified on the live state after that node)."""


class Verifier(WeftModel):
    """Checks per checkpoint plus binding values. Contract: `checks_at(FINAL_CHECKPOINT)` is what a
    rollout's reward is computed from; a checkpoint not listed is an error, never a pass."""

    checkpoints: dict[str, list[Check]] = Field(
        default_factory=dict, description="Checkpoint (a node id or 'final') -> checks to hold."
    )
    bindings: dict[str, Any] = Field(
        default_factory=dict,
        description="Entity-binding name -> field values, for `$binding` references in checks.",
    )

    @classmethod
    def final(cls, checks: list[Check], bindings: dict[str, Any] | None = None) -> Verifier:
        """A verifier with the final checkpoint only (an atomic task's validation)."""
        return cls(checkpoints={FINAL_CHECKPOINT: list(checks)}, bindings=dict(bindings or {}))

    @property
    def has_checks(self) -> bool:
        """False when no checkpoint holds a check: such a verifier can never pass (a host refuses
        it; a caller with nothing to check sends no verifier)."""
        return any(self.checkpoints.values())

    def checks_at(self, checkpoint: str) -> list[Check]:
        if checkpoint not in self.checkpoints:
            raise CheckError(
                f"the verifier has no checkpoint {checkpoint!r} (has: {sorted(self.checkpoints)})"
            )
        return self.checkpoints[checkpoint]

    def pinned(self, mcp_ids: dict[str, str]) -> Verifier:
        """The same verifier with each check's `mcp` renamed to the MegaMCP id it is hosted as."""
        return self.model_copy(
            update={
                "checkpoints": {
                    k: [
                        c.model_copy(update={"mcp": mcp_ids[c.mcp]}) if c.mcp in mcp_ids else c
                        for c in checks
                    ]
                    for k, checks in self.checkpoints.items()
                }
            }
        )
