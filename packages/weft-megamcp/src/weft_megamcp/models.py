"""Public models of the admin API and the client SDK (JSON on the wire)."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, computed_field

from weft_core.models import CheckOutcome, Verifier
from weft_core.state import CheckpointDiff


class GroupStatus(StrEnum):
    ACTIVE = "active"
    PAUSED = "paused"
    FROZEN = "frozen"
    CLOSED = "closed"


class RuntimeState(StrEnum):
    """Where a group's runtime lives (idle management); orthogonal to its status."""

    LOADED = "loaded"  # engines and modules live, files on local disk
    OFFLOADED = "offloaded"  # engines disposed; files on local disk
    EVICTED = "evicted"  # checkpointed to the object store; local files removed


class SessionInfo(BaseModel):
    """What an agent harness needs to reach one session: URL and bearer token."""

    session_id: str
    mcp_id: str
    version: int
    url: str
    token: str

    @computed_field(  # type: ignore[prop-decorator]
        description="The session's MCP URL with the token in its path (`<host>/s/<token>/mcp`) "
        "for clients that cannot send a bearer header; equivalent to `url` + the token."
    )
    @property
    def token_url(self) -> str:
        base = self.url.removesuffix("/mcp")
        return f"{base}/s/{self.token}/mcp"


class GroupHandle(BaseModel):
    group_id: str
    task_id: str | None = None
    sessions: dict[str, SessionInfo]
    status: GroupStatus = GroupStatus.ACTIVE

    def session(self, mcp_id: str) -> SessionInfo:
        try:
            return self.sessions[mcp_id]
        except KeyError:
            raise KeyError(f"group {self.group_id} has no session for MCP {mcp_id!r}") from None


class GroupInfo(BaseModel):
    """Server-side view of a group (admin only; holds no tokens)."""

    group_id: str
    task_id: str | None
    status: GroupStatus
    runtime: RuntimeState
    sessions: dict[str, dict[str, Any]]
    created_at: float
    last_used: float


class CallResult(BaseModel):
    """The result of one tool call as the agent saw it."""

    is_error: bool
    content: list[dict[str, Any]] = Field(default_factory=list)
    structured: Any = None
    text: str = Field(default="", description="The text contents joined, for convenience.")


class VerificationResult(BaseModel):
    """Per-check outcomes of one checkpoint (or the final verification) and its reward."""

    checkpoint: str
    outcomes: list[CheckOutcome]
    reward: float
    passed: bool
    error: str | None = Field(
        default=None, description="Why the verifier could not run, if it could not."
    )
    state_diff: CheckpointDiff | None = Field(
        default=None,
        description="Rows and files changed since the previous checkpoint, per MCP (checkpoint "
        "verifications only; None when the host's diff is off).",
    )


class CreateGroupRequest(BaseModel):
    mcps: dict[str, str | None] = Field(
        description="MCP id (optionally 'id@version') -> initial snapshot URI, or None for the seed."
    )
    verifier: Verifier | str | None = Field(
        default=None,
        description="The task's verifier (checks per checkpoint, bindings), or a registered verifier id.",
    )
    task_id: str | None = None
    bindings: dict[str, Any] = Field(
        default_factory=dict, description="Entity bindings for check values."
    )
    workspaces: dict[str, str] = Field(
        default_factory=dict,
        description="MCP key of `mcps` -> initial workspace URI (POST /admin/mcps/{id}/workspaces "
        "or a group's export); that session's workspace starts as it, not as the seed's.",
    )


class SessionSnapshot(BaseModel):
    """One session's exported state: its DB and its workspace, stored in the object store by
    content, so `create_group(mcps={mcp: uri}, workspaces={mcp: workspace_uri})` brings both back
    on any host that shares the store."""

    mcp_id: str
    uri: str | None = Field(default=None, description="The DB's URI; None: the session has none.")
    sha256: str | None = None
    workspace_uri: str | None = None


class CallOp(BaseModel):
    """Run one tool call on the group's session of `mcp` (ledgered like an agent's call)."""

    op: Literal["call"] = "call"
    mcp: str = Field(description="MCP id of the group's session (a key of the handle's sessions).")
    tool: str
    arguments: dict[str, Any] = Field(
        default_factory=dict,
        description="With a batch `env`, `{{name}}` templates are filled from it first.",
    )
    bind: dict[str, str] = Field(
        default_factory=dict,
        description="With a batch `env`: name -> dotted path of a value of this call's result to "
        "put in the env for later calls (a path the result lacks binds nothing).",
    )


class SetOp(BaseModel):
    """Put values in the batch's env (needs a batch `env`): `values` literally (never rendered),
    then each `refs` name gets the env value its key names, where that key is set (else the
    literal of the same name, if any, stays)."""

    op: Literal["set"] = "set"
    values: dict[str, Any] = Field(default_factory=dict)
    refs: dict[str, str] = Field(default_factory=dict)


class VerifyOp(BaseModel):
    """Run the checks of one checkpoint on the live state; no checkpoint: freeze + final checks."""

    op: Literal["verify"] = "verify"
    checkpoint: str | None = None
    diff: bool = Field(
        default=True,
        description="Attach a checkpoint's state diff (rows and files changed since the previous "
        "diffed checkpoint). A replay that reads only the verdict turns it off: the diff was "
        "a third of a construction-time checkpoint's cost, and skipping it leaves the diff "
        "baseline where it was.",
    )


class FreezeOp(BaseModel):
    op: Literal["freeze"] = "freeze"


BatchOp = Annotated[CallOp | VerifyOp | FreezeOp | SetOp, Field(discriminator="op")]


class BatchRequest(BaseModel):
    """Operations on one group, in order, in one request (construction-time replay and checks)."""

    ops: list[BatchOp] = Field(default_factory=list)
    stop_on_error: bool = Field(
        default=True,
        description="Stop at the first tool error, failed check or verifier error; later ops "
        "are not run (a close still is).",
    )
    close: bool = Field(
        default=False, description="Close the group after the ops, whatever happened."
    )
    env: dict[str, Any] | None = Field(
        default=None,
        description="Values for `{{name}}` templates in call arguments, grown by each call's "
        "`bind` and by `set` ops, so calls that need an earlier call's result run in the same "
        "request. None: arguments are sent as given and binds are ignored.",
    )


class RunRequest(BatchRequest):
    """Create a group, run ops on it and (by default) close it: a whole replay in one request."""

    create: CreateGroupRequest
    close: bool = True
    snapshots: dict[str, str] = Field(
        default_factory=dict,
        description="MCP key of `create.mcps` -> host-side path of an initial DB to store first "
        "(as POST /admin/mcps/{id}/snapshots does); that session starts from it. Saves a "
        "request per MCP for a replay from fresh snapshots.",
    )
    workspace_files: dict[str, str] = Field(
        default_factory=dict,
        description="MCP key of `create.mcps` -> host-side path of an initial workspace (a folder "
        "or its gzip tarball) to store first (as POST /admin/mcps/{id}/workspaces does); that "
        "session's workspace starts from it.",
    )


class BatchStep(BaseModel):
    op: str
    arguments: dict[str, Any] | None = Field(
        default=None, description="A call's arguments as run (templates filled), with an env."
    )
    call: CallResult | None = None
    verification: VerificationResult | None = None
    error: str | None = Field(
        default=None, description="Why the op could not run, if it could not."
    )

    @property
    def failed(self) -> bool:
        if self.error is not None:
            return True
        if self.call is not None:
            return self.call.is_error
        if self.verification is not None:
            return not self.verification.passed or self.verification.error is not None
        return False


class BatchResult(BaseModel):
    group_id: str
    steps: list[BatchStep]
    stopped_at: int | None = Field(default=None, description="Index of the op that stopped it.")
    closed: bool = False
    handle: GroupHandle | None = Field(default=None, description="The group a run created.")
