"""A hosted session and group: their files, tokens and persisted metadata."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from weft_core.binding import SessionBinding
from weft_core.models import Verifier, atomic_write_text
from weft_megamcp.ledger import SessionLedger
from weft_megamcp.models import GroupStatus, RuntimeState
from weft_megamcp.registry import MCPKind

DB_NAME = "state.sqlite"
FINAL_DB_NAME = "final.sqlite"
WORKSPACE_NAME = "workspace"
LEDGER_NAME = "ledger.jsonl"
GROUP_FILE = "group.json"


def token_sha(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _sqlite_change_counter(path: Path) -> tuple[int, int, int]:
    """(file change counter, size, WAL size): changes whenever a write transaction commits. A
    missing file and an empty one are the same state (SQLite opens both as an empty DB), so the
    empty file the host creates before a sandboxed process starts is not a change of the
    session's state."""
    try:
        with open(path, "rb") as fh:
            header = fh.read(28)
            size = os.fstat(fh.fileno()).st_size
    except FileNotFoundError:
        header, size = b"", 0
    counter = int.from_bytes(header[24:28], "big") if len(header) >= 28 else 0
    wal = path.with_name(path.name + "-wal")
    return (counter, size, wal.stat().st_size if wal.exists() else 0)


def _workspace_signature(root: Path) -> tuple[tuple[str, int, int], ...]:
    """(path, size, mtime) of every entry under `root`; runs twice per call, so os.scandir
    rather than Path.rglob (several times cheaper on the small trees sessions have)."""
    out: list[tuple[str, int, int]] = []
    stack = [str(root)]
    while stack:
        try:
            it = os.scandir(stack.pop())
        except (FileNotFoundError, NotADirectoryError):
            continue
        with it:
            for entry in it:
                try:
                    st = entry.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue
                out.append((entry.path, st.st_size, st.st_mtime_ns))
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
    out.sort()
    return tuple(out)


@dataclass(eq=False)
class HostedSession:
    session_id: str
    group_id: str
    mcp_id: str
    version: int
    kind: MCPKind
    token_sha: str
    expires_at: float
    root: Path
    initial_uri: str | None
    initial_sha: str | None
    state_version: int = 0
    dedicated: bool = False  # served by its own process (command servers, screen failures)
    initial_workspace_uri: str | None = None  # stored initial workspace; None: the seed's
    ledger: SessionLedger = field(init=False)
    lock: asyncio.Lock = field(init=False, default_factory=asyncio.Lock)
    # The write gate: a tool call holds it from before it runs until its state version is
    # assigned and announced, a checkpoint while it copies the state. So a checkpoint never
    # copies a committed write under the previous version number (quiescing takes `lock`, not
    # this, so a flush inside a quiesce never waits on itself).
    state_lock: asyncio.Lock = field(init=False, default_factory=asyncio.Lock)
    # The tool of a call that timed out while its thread still runs; the session refuses calls
    # until it returns (groups.calls).
    overrun: str | None = field(init=False, default=None)
    # What the last call left: (state version, ledger, fingerprint); see `probe_before_call`.
    _last_probe: tuple[int, SessionLedger, tuple[Any, ...]] | None = field(
        init=False, default=None, repr=False
    )

    def __post_init__(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.workspace.mkdir(exist_ok=True)
        self.ledger = SessionLedger(self.root / LEDGER_NAME)

    @property
    def db_path(self) -> Path:
        return self.root / DB_NAME

    @property
    def final_db(self) -> Path:
        return self.root / FINAL_DB_NAME

    @property
    def workspace(self) -> Path:
        return self.root / WORKSPACE_NAME

    def binding(self) -> SessionBinding:
        return SessionBinding(
            session_id=self.session_id, db_path=self.db_path, workspace=self.workspace
        )

    def probe(self) -> tuple[Any, ...]:
        """A cheap fingerprint of the session's state; differs after any committed write."""
        return (_sqlite_change_counter(self.db_path), _workspace_signature(self.workspace))

    def probe_before_call(self) -> tuple[Any, ...]:
        """The fingerprint before a call. The workspace walk is O(files) and ran twice per call;
        for an in-process session nothing but its calls writes its files, so the fingerprint
        the last call left is still the state, unless the files were put back since: a restore
        and a recovery replace the ledger object with them (and a restore bumps the version).
        A dedicated session's process may write between calls (a server's own flush): probed
        again."""
        last, self._last_probe = self._last_probe, None  # a call that fails midway leaves none
        if (
            last is not None
            and not self.dedicated
            and last[0] == self.state_version
            and last[1] is self.ledger
        ):
            return last[2]
        return self.probe()

    def after_call(self, fingerprint: tuple[Any, ...]) -> None:
        """Remember the fingerprint a call left, once its state version is assigned."""
        self._last_probe = (self.state_version, self.ledger, fingerprint)

    def to_json(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "mcp_id": self.mcp_id,
            "version": self.version,
            "kind": str(self.kind),
            "token_sha": self.token_sha,
            "expires_at": self.expires_at,
            "initial_uri": self.initial_uri,
            "initial_sha": self.initial_sha,
            "initial_workspace_uri": self.initial_workspace_uri,
            "state_version": self.state_version,
            "dedicated": self.dedicated,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any], group_id: str, group_root: Path) -> HostedSession:
        return cls(
            session_id=data["session_id"],
            group_id=group_id,
            mcp_id=data["mcp_id"],
            version=int(data["version"]),
            kind=MCPKind(data["kind"]),
            token_sha=data["token_sha"],
            expires_at=float(data["expires_at"]),
            root=group_root / data["mcp_id"],
            initial_uri=data.get("initial_uri"),
            initial_sha=data.get("initial_sha"),
            state_version=int(data.get("state_version", 0)),
            dedicated=bool(data.get("dedicated", False)),
            initial_workspace_uri=data.get("initial_workspace_uri"),
        )


@dataclass(eq=False)
class HostedGroup:
    group_id: str
    task_id: str | None
    root: Path
    sessions: dict[str, HostedSession]
    status: GroupStatus = GroupStatus.ACTIVE
    runtime: RuntimeState = RuntimeState.LOADED
    verifier: Verifier | str | None = None
    bindings: dict[str, Any] = field(default_factory=dict)
    created_at: float = field(default_factory=time.time)
    last_used: float = field(default_factory=time.monotonic)
    checkpoint_key: str | None = None  # object-store checkpoint of an evicted group
    reload_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    # One checkpoint verification at a time: each moves the session's diff baselines along.
    checkpoint_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    # Created and closed by one request (`POST /admin/runs` with close): its state is discarded
    # when the request ends and no write of it is acknowledged before that, so its mutations
    # schedule no write-behind checkpoints (explicit flushes, hand-over and eviction still
    # checkpoint it). Not persisted: a group adopted after a crash checkpoints as usual.
    ephemeral: bool = False

    def touch(self) -> None:
        self.last_used = time.monotonic()

    def to_json(self) -> dict[str, Any]:
        return {
            "group_id": self.group_id,
            "task_id": self.task_id,
            "status": str(self.status),
            "runtime": str(self.runtime),
            "verifier": self.verifier.model_dump(mode="json")
            if isinstance(self.verifier, Verifier)
            else self.verifier,
            "bindings": self.bindings,
            "created_at": self.created_at,
            "checkpoint_key": self.checkpoint_key,
            "sessions": [s.to_json() for s in self.sessions.values()],
        }

    def save(self) -> None:
        # Compact: json.dumps with an indent runs the pure-Python encoder, a few % of a
        # worker's CPU when composition creates a group per task.
        atomic_write_text(self.root / GROUP_FILE, json.dumps(self.to_json()))

    @classmethod
    def load(cls, root: Path) -> HostedGroup:
        data = json.loads((root / GROUP_FILE).read_text(encoding="utf-8"))
        group_id = data["group_id"]
        sessions = {
            s["mcp_id"]: HostedSession.from_json(s, group_id, root) for s in data["sessions"]
        }
        return cls(
            group_id=group_id,
            task_id=data.get("task_id"),
            root=root,
            sessions=sessions,
            status=GroupStatus(data["status"]),
            runtime=RuntimeState(data.get("runtime", "loaded")),
            verifier=_verifier_of(data.get("verifier")),
            bindings=data.get("bindings") or {},
            created_at=float(data.get("created_at", time.time())),
            checkpoint_key=data.get("checkpoint_key"),
        )


def _verifier_of(raw: Any) -> Verifier | str | None:
    """A group.json's verifier: a registered verifier id, or a Verifier in its JSON form."""
    return raw if raw is None or isinstance(raw, str) else Verifier.model_validate(raw)
