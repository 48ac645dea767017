"""Execution evidence: tool-to-tool edges witnessed in real traces (ToolSpace §4.1.2), as a file one
package mines (weft-toolspace) and another reads (weft-tasks' coverage-aware sampler) without
either importing the other."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError

from weft_core._model import WeftModel
from weft_core.exceptions import ArtifactError

__all__ = ["ExecutionEvidence", "WitnessedEdge"]


class WitnessedEdge(WeftModel):
    """One mined edge v_i -> v_j between two tools, with how often real traces showed it."""

    source_mcp: str = Field(description="Server of the earlier tool (as the traces name it).")
    source_tool: str
    target_mcp: str = Field(description="Server of the later tool.")
    target_tool: str
    kind: Literal["data", "state"] = Field(
        description="data: a value of the earlier output was an argument of the later call; "
        "state: the later call read or changed the object the earlier one mutated."
    )
    count: int = Field(ge=1, description="N_ij: transitions that witnessed it.")
    weight: float = Field(gt=0.0, le=1.0, description="w(i, j) = N_ij / N_i.")


class ExecutionEvidence(WeftModel):
    """The witnessed data and state edges of one mined tool-space graph."""

    source: str = Field(description="What the edges were mined from, in words (a run folder).")
    edges: list[WitnessedEdge] = Field(default_factory=list)

    @classmethod
    def load(cls, path: Path) -> ExecutionEvidence:
        """Read an evidence file; a missing or malformed one is one line naming the file."""
        try:
            return cls.model_validate_json(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ArtifactError(f"{path}: cannot read execution evidence: {exc.strerror}") from None
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"]) or "(top level)"
            raise ArtifactError(f"{path}: not execution evidence: {where}: {err['msg']}") from None
