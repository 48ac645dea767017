"""Public records of the registry (pydantic) and its tables (SQLModel, own metadata)."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import JSON, Column, UniqueConstraint
from sqlalchemy.orm import registry
from sqlmodel import Field as SQLField
from sqlmodel import SQLModel

from weft_core.models import ToolSpec


class MCPKind(StrEnum):
    BUNDLE = "bundle"  # an EnvBundle folder (manifest.json + server.py + models.py + seed.sqlite)
    MODULE = "module"  # a Python module file or package exposing a FastMCP server
    COMMAND = "command"  # a command that starts a stdio MCP server


class MCPRecord(BaseModel):
    """One registered version of an MCP server.

    Frozen because the Registry caches records by (mcp_id, version) and hands the same object
    to every caller (a version's row is immutable). The nested `tools` and `metadata` are
    read-only by contract as well: derive a changed record with `model_copy(deep=True)`.
    """

    model_config = ConfigDict(frozen=True)

    mcp_id: str
    version: int
    kind: MCPKind
    name: str
    description: str = ""
    domain: str = "general"
    source_hash: str = Field(description="sha256 over kind, entry and the source file tree.")
    entry: str = Field(
        description="Module name inside the package, or the command line for 'command'."
    )
    tools: list[ToolSpec] = Field(default_factory=list)
    seed_snapshot_uri: str | None = Field(default=None, description="Default initial DB, if any.")
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime


class SnapshotRecord(BaseModel):
    # Frozen: the Registry caches records of content-addressed snapshots by URI.
    model_config = ConfigDict(frozen=True)

    uri: str
    mcp_id: str
    sha256: str
    size: int
    created_at: datetime


class VerifierRecord(BaseModel):
    verifier_id: str = Field(description="sha256 of the verifier content.")
    kind: str = Field(description="'checks' (a weft-core CheckSet per checkpoint) or 'python'.")
    created_at: datetime


# Own metadata, so hosted modules that declare SQLModel tables can never collide with ours.
_tables = registry()


class _Base(SQLModel, registry=_tables):
    pass


def _now() -> datetime:
    return datetime.now(UTC)


class MCPVersionRow(_Base, table=True):
    __tablename__ = "megamcp_mcp_version"
    __table_args__ = (
        UniqueConstraint("mcp_id", "version"),
        UniqueConstraint("mcp_id", "source_hash"),
    )

    id: int | None = SQLField(default=None, primary_key=True)
    mcp_id: str = SQLField(index=True)
    version: int
    kind: str
    name: str
    description: str = ""
    domain: str = "general"
    source_hash: str
    source_tree: str | None = SQLField(
        default=None, description="sha256 of the file-tree manifest blob."
    )
    entry: str
    tools: list[dict[str, Any]] = SQLField(default_factory=list, sa_column=Column(JSON))
    seed_snapshot_uri: str | None = None
    meta: dict[str, Any] = SQLField(default_factory=dict, sa_column=Column(JSON))
    created_at: datetime = SQLField(default_factory=_now)

    def record(self) -> MCPRecord:
        return MCPRecord(
            mcp_id=self.mcp_id,
            version=self.version,
            kind=MCPKind(self.kind),
            name=self.name,
            description=self.description,
            domain=self.domain,
            source_hash=self.source_hash,
            entry=self.entry,
            tools=[ToolSpec.model_validate(t) for t in self.tools],
            seed_snapshot_uri=self.seed_snapshot_uri,
            metadata=self.meta,
            created_at=self.created_at,
        )


class SnapshotRow(_Base, table=True):
    __tablename__ = "megamcp_snapshot"

    uri: str = SQLField(primary_key=True)
    mcp_id: str = SQLField(index=True)
    sha256: str
    size: int
    created_at: datetime = SQLField(default_factory=_now)


class VerifierRow(_Base, table=True):
    __tablename__ = "megamcp_verifier"

    verifier_id: str = SQLField(primary_key=True)
    kind: str
    blob: str = SQLField(description="sha256 of the verifier content in the object store.")
    created_at: datetime = SQLField(default_factory=_now)


METADATA = _tables.metadata
