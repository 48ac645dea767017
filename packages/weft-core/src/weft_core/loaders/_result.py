"""What a loader returns: the normalized spec plus everything it had to drop or change."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_serializer

from weft_core.exceptions import SpecError
from weft_core.models import MCPSpec


class RejectedTool(BaseModel):
    """A tool of the source that could not be turned into a usable ToolSpec, and why."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(
        description="The tool's name as written in the source ('#<index>' if it had none)."
    )
    reason: str = Field(description="Why the tool was rejected, in words.")
    index: int | None = Field(default=None, description="Position of the tool in the source list.")


class LoadedSpec(BaseModel):
    """One source file (or dict) normalized into an MCPSpec.

    `warnings` list every change the loader made to the source (renamed tools, dropped `required`
    names, inlined `$ref` cycles, synthesized descriptions...), each naming the tool concerned.
    """

    model_config = ConfigDict(extra="forbid")

    spec: MCPSpec = Field(description="The normalized, sealed spec (content_hash filled).")
    rejected_tools: list[RejectedTool] = Field(default_factory=list, description="Tools left out.")
    warnings: list[str] = Field(default_factory=list, description="Changes made while normalizing.")
    format: str = Field(description="The detected source format (see SpecFormat).")
    source: str = Field(description="The file path or label the spec was loaded from.")


class SpecBatch(BaseModel):
    """The result of loading many files: one bad file never stops the batch."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    loaded: list[LoadedSpec] = Field(default_factory=list, description="Files that loaded.")
    failed: list[SpecError] = Field(default_factory=list, description="Files that were unusable.")

    @field_serializer("failed")
    def _serialize_failed(self, failed: list[SpecError]) -> list[dict[str, Any]]:
        return [{"source": e.source, "tool": e.tool, "reason": e.reason} for e in failed]

    @property
    def specs(self) -> list[MCPSpec]:
        return [item.spec for item in self.loaded]
