"""The EnvBundle manifest: what a certified environment folder holds and which tools passed."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import Field

from weft_core.models._base import Artifact, WeftModel, artifact_time

BUNDLE_FILES = (
    "manifest.json",
    "spec.json",
    "entities.json",
    "models.py",
    "migrations",
    "contracts.json",
    "server.py",
    "seed.sqlite",
    "validation.json",
)


class StateKind(StrEnum):
    DATABASE = "database"
    WORKSPACE = "workspace"
    STATELESS = "stateless"


class ToolCertification(WeftModel):
    name: str
    state_kind: StateKind
    certified: bool
    reason: str | None = Field(default=None, description="Why the tool is not certified.")
    checks_run: int = 0
    checks_passed: int = 0


class EnvBundleManifest(Artifact):
    """`manifest.json` of an EnvBundle folder.

    A bundle is written to a temporary folder and renamed into place only after this manifest is
    written last, so a folder with a manifest is complete; `certified` is true only when every
    tool in the spec is certified (partially certified bundles still serve their certified tools).
    """

    name: str = Field(description="MCP identifier (slug).")
    domain: str = "general"
    description: str = ""
    spec_hash: str = Field(description="content_hash of spec.json.")
    schema_revision: str = Field(description="Alembic head revision of models.py.")
    tools: list[ToolCertification]
    files: dict[str, str] = Field(default_factory=dict, description="Relative path -> sha256.")
    generator: str = Field(default="weft-envsynth", description="What produced the bundle.")
    strategy: str = Field(
        default="programmatic", description="'programmatic' or the LLM model name."
    )
    rounds_used: int = 0
    created_at: datetime = Field(default_factory=artifact_time)

    @property
    def certified(self) -> bool:
        return bool(self.tools) and all(t.certified for t in self.tools)

    @property
    def certified_tools(self) -> list[str]:
        return [t.name for t in self.tools if t.certified]
