"""The MegaMCP registry: MCP records, versions, sources, tool definitions, snapshots, verifiers."""

from weft_megamcp.registry._records import MCPKind, MCPRecord, SnapshotRecord, VerifierRecord
from weft_megamcp.registry._registry import Registry

__all__ = ["MCPKind", "MCPRecord", "Registry", "SnapshotRecord", "VerifierRecord"]
