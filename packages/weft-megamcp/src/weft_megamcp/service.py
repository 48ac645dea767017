"""`GroupService`: what the tasks side (certification, grounding, composition, rollouts, training)
asks of a MegaMCP host, as a typed Protocol. `MegaMCPClient` implements it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from weft_core.models import LedgerEntry, Verifier
from weft_megamcp.models import (
    CallResult,
    GroupHandle,
    GroupInfo,
    SessionSnapshot,
    VerificationResult,
)

if TYPE_CHECKING:  # the registry imports the host's MCP machinery; a client needs none of it
    from weft_megamcp.registry import MCPRecord

GroupRef = GroupHandle | str
"""A group by handle or by id."""


class GroupService(Protocol):
    """Session groups on one MegaMCP host.

    Contract: every method talks to a real host. A wrong request (unknown MCP, group or checkpoint,
    bad state) raises `MegaMCPUserError`; a host that fails or cannot be reached raises
    `MegaMCPRuntimeError`. A verifier that cannot run is not raised: it is the `error` of the
    returned `VerificationResult`. Ledgers list exactly the calls whose effects the state holds.
    """

    async def register(self, path: str | Path, *, name: str | None = None) -> MCPRecord:
        """Register a bundle folder (or a server module) once; re-registering returns its record."""
        ...

    async def put_snapshot(self, mcp_id: str, sqlite_path: str | Path) -> str:
        """Store an immutable initial DB; returns its URI for `create_group`."""
        ...

    async def put_workspace(self, mcp_id: str, path: str | Path) -> str:
        """Store an immutable initial workspace (a folder, or its gzip tarball); returns its URI
        for `create_group`'s `workspaces`. A tarball with a link or an escaping member is refused."""
        ...

    async def create_group(
        self,
        mcps: dict[str, str | None] | list[str],
        verifier: Verifier | str | None = None,
        task_id: str | None = None,
        bindings: dict[str, Any] | None = None,
        workspaces: dict[str, str] | None = None,
    ) -> GroupHandle:
        """One private session per MCP id, from its snapshot URI (None: the bundle's seed), and
        its workspace from `workspaces` (MCP id -> workspace URI; absent: the bundle's seed)."""
        ...

    async def fork(self, group: GroupRef, n: int) -> list[GroupHandle]:
        """`n` new groups with copies of the group's current state, ledger and verifier."""
        ...

    async def snapshot(self, group: GroupRef) -> str:
        """Save the group's state; returns a snapshot id for `restore`."""
        ...

    async def restore(self, group: GroupRef, snapshot_id: str) -> GroupInfo: ...

    async def export(
        self, group: GroupRef, snapshot_id: str | None = None
    ) -> dict[str, SessionSnapshot]:
        """Store the group's live state (or its snapshot) by content: per MCP id, the URIs of
        its DB and workspace, from which `create_group` starts a new group in that state."""
        ...

    async def call_tool(
        self, group: GroupHandle, mcp_id: str, tool: str, arguments: dict[str, Any] | None = None
    ) -> CallResult:
        """A real MCP tools/call in one session of the group (ledgered by the host)."""
        ...

    async def freeze(self, group: GroupRef) -> GroupInfo:
        """Stop accepting calls and keep the final state for verification."""
        ...

    async def verify(self, group: GroupRef) -> VerificationResult:
        """Freeze, then evaluate the verifier's final checkpoint on the frozen state."""
        ...

    async def checkpoint_verify(self, group: GroupRef, checkpoint: str) -> VerificationResult:
        """Evaluate one checkpoint on the live state; the group keeps running. The result's
        `state_diff` holds the rows and files changed since the previous checkpoint verified
        (None from a host whose diff is off)."""
        ...

    async def ledger(self, group: GroupRef) -> dict[str, list[LedgerEntry]]:
        """Every call served, per MCP id, in the order served."""
        ...

    async def close(self, group: GroupRef) -> None: ...

    async def stats(self) -> dict[str, Any]:
        """Per-MCP-version, per-tool error rates, crash statistics and latencies."""
        ...
