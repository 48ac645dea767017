"""Session groups: one private session per MCP, created from immutable snapshots, driven as a unit.

The manager owns every group placed in this process: their files (under `<data>/groups/`), the
token table, the ledger of every call, snapshots / restore / fork, freeze and idle offload.
Tenancy binds on the per-session bearer token; tokens are stored only as sha256.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import shutil
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fastmcp.exceptions import NotFoundError as FastMCPNotFound
from fastmcp.exceptions import ToolError
from fastmcp.exceptions import ValidationError as FastMCPValidationError
from fastmcp.tools.base import Tool, ToolResult
from pydantic import ValidationError as PydanticValidationError

from weft_core.models import FINAL_CHECKPOINT, ErrorKind, LedgerEntry
from weft_core.state import (
    INITIAL,
    CheckpointDiff,
    StateCaptureError,
    StateError,
    WorkspaceState,
)
from weft_megamcp._session import (
    DB_NAME,
    GROUP_FILE,
    LEDGER_NAME,
    WORKSPACE_NAME,
    HostedGroup,
    HostedSession,
    token_sha,
)
from weft_megamcp.checkpoint_diff import CHECKPOINT_FILES, capture_files, checkpoint_diff
from weft_megamcp.exceptions import AuthError, GroupStateError, MegaMCPUserError, NotFoundError
from weft_megamcp.models import (
    CreateGroupRequest,
    GroupHandle,
    GroupInfo,
    GroupStatus,
    RuntimeState,
    SessionInfo,
    VerificationResult,
)
from weft_megamcp.registry import MCPKind, Registry
from weft_megamcp.runtime import ModuleRuntime, ServerRuntime
from weft_megamcp.sanitize import Sanitizer
from weft_megamcp.session_sqlite import apply_to_sessions_under
from weft_megamcp.stdio_runtime import CommandRuntime
from weft_megamcp.verifier import run_verifier

log = logging.getLogger("weft_megamcp.groups")

MutationHook = Callable[[HostedGroup, HostedSession], None]


def _new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(8)}"


def _copy_state(src: Path, dst: Path) -> None:
    """Copy a session's DB, workspace, ledger and checkpoint-diff baselines from folder `src` to
    folder `dst` (plain copies)."""
    dst.mkdir(parents=True, exist_ok=True)
    for name in (DB_NAME, DB_NAME + "-wal", LEDGER_NAME, *CHECKPOINT_FILES):
        if (src / name).exists():
            shutil.copyfile(src / name, dst / name)
        else:
            (dst / name).unlink(missing_ok=True)
    if (dst / WORKSPACE_NAME).exists():
        shutil.rmtree(dst / WORKSPACE_NAME)
    if (src / WORKSPACE_NAME).exists():
        shutil.copytree(src / WORKSPACE_NAME, dst / WORKSPACE_NAME, symlinks=True)
    else:
        (dst / WORKSPACE_NAME).mkdir()


def _result_payload(result: ToolResult) -> Any:
    if result.structured_content is not None:
        return result.structured_content
    texts = [getattr(c, "text", None) for c in result.content]
    return "\n".join(t for t in texts if t is not None)


class GroupManager:
    """Creates and serves session groups in this process."""

    def __init__(
        self,
        data_dir: Path,
        registry: Registry,
        *,
        token_ttl_s: float = 24 * 3600.0,
        call_timeout_s: float = 60.0,
        sanitizer: Sanitizer | None = None,
        diff_max_rows: int = 200,
    ) -> None:
        self.data_dir = data_dir.resolve()
        self.groups_dir = self.data_dir / "groups"
        self.snapshots_dir = self.data_dir / "snapshots"
        self.groups_dir.mkdir(parents=True, exist_ok=True)
        self.snapshots_dir.mkdir(parents=True, exist_ok=True)
        apply_to_sessions_under(self.groups_dir)
        self.registry = registry
        self.token_ttl_s = token_ttl_s
        self.call_timeout_s = call_timeout_s
        self.diff_max_rows = diff_max_rows
        self.sanitizer = sanitizer or Sanitizer()
        self.sanitizer.add_secret(str(self.data_dir))
        self.modules = ModuleRuntime(registry)
        self.commands = CommandRuntime(registry)
        self.groups: dict[str, HostedGroup] = {}
        self._by_token: dict[str, HostedSession] = {}
        self._revoked: set[str] = set()
        self.mutation_hooks: list[MutationHook] = []
        self.call_hooks: list[Callable[[HostedSession, LedgerEntry], None]] = []
        self.reload_hook: Callable[[HostedGroup], Awaitable[None]] | None = None
        self.call_guards: list[Callable[[HostedSession], None]] = []
        self.close_hooks: list[Callable[[HostedGroup], Awaitable[None]]] = []
        self.fork_hooks: list[Callable[[HostedGroup], None]] = []
        self.restore_hooks: list[Callable[[HostedGroup], None]] = []
        self.base_url = ""

    # ---- lookup -------------------------------------------------------------------------------

    def runtime(self, session: HostedSession) -> ServerRuntime:
        return self.commands if session.dedicated else self.modules

    def get(self, group_id: str) -> HostedGroup:
        group = self.groups.get(group_id)
        if group is None:
            raise NotFoundError(f"group {group_id!r} does not exist here")
        return group

    def authenticate(self, token: str | None) -> HostedSession:
        """The session a bearer token opens, or AuthError (missing, unknown, revoked, expired)."""
        if not token:
            raise AuthError("missing bearer token")
        sha = token_sha(token)
        session = self._by_token.get(sha)
        if session is None:
            if sha in self._revoked:
                raise AuthError("token revoked: its group was closed")
            raise AuthError("unknown token")
        if time.time() > session.expires_at:
            raise AuthError("token expired")
        return session

    def moved_away(self, token: str) -> bool:
        """True for a token this process does not serve and never revoked: its group lives on
        another worker now (or never existed; the master answers that with a 401)."""
        sha = token_sha(token)
        return sha not in self._by_token and sha not in self._revoked

    def group_of(self, session: HostedSession) -> HostedGroup:
        return self.get(session.group_id)

    # ---- creation -----------------------------------------------------------------------------

    def _session_info(self, session: HostedSession, token: str) -> SessionInfo:
        return SessionInfo(
            session_id=session.session_id,
            mcp_id=session.mcp_id,
            version=session.version,
            url=f"{self.base_url}/mcp",
            token=token,
        )

    def _issue_token(self, session: HostedSession) -> str:
        token = secrets.token_urlsafe(32)
        session.token_sha = token_sha(token)
        session.expires_at = time.time() + self.token_ttl_s
        self._by_token[session.token_sha] = session
        return token

    def create_group(self, request: CreateGroupRequest) -> GroupHandle:
        if not request.mcps:
            raise MegaMCPUserError("a group needs at least one MCP")
        plans = []
        for key, snapshot_uri in request.mcps.items():
            mcp_id, _, ver = key.partition("@")
            try:
                version = int(ver) if ver else None
            except ValueError:
                raise MegaMCPUserError(
                    f"MCP key {key!r}: version after '@' must be an integer"
                ) from None
            record = self.registry.get(mcp_id, version)
            uri = snapshot_uri or record.seed_snapshot_uri
            src, sha = self.registry.snapshot_file(uri) if uri else (None, None)
            plans.append((record, uri, src, sha))
        group_id = _new_id("grp")
        root = self.groups_dir / group_id
        root.mkdir(parents=True)
        sessions: dict[str, HostedSession] = {}
        tokens: dict[str, str] = {}
        try:
            for record, uri, src, sha in plans:
                session = HostedSession(
                    session_id=_new_id("ses"),
                    group_id=group_id,
                    mcp_id=record.mcp_id,
                    version=record.version,
                    kind=record.kind,
                    token_sha="",
                    expires_at=0.0,
                    root=root / record.mcp_id,
                    initial_uri=uri,
                    initial_sha=sha,
                    dedicated=record.kind == MCPKind.COMMAND
                    or record.metadata.get("screen", {}).get("tier") == "dedicated_process",
                )
                if src is not None:
                    shutil.copyfile(src, session.db_path)  # the measured fast path: a plain copy
                sessions[record.mcp_id] = session
            group = HostedGroup(
                group_id=group_id,
                task_id=request.task_id,
                root=root,
                sessions=sessions,
                verifier=request.verifier,
                bindings=request.bindings,
            )
            for mcp_id, session in sessions.items():
                tokens[mcp_id] = self._issue_token(session)
            group.save()
        except BaseException:
            for s in sessions.values():
                self._by_token.pop(s.token_sha, None)
            shutil.rmtree(root, ignore_errors=True)
            raise
        self.groups[group_id] = group
        return GroupHandle(
            group_id=group_id,
            task_id=request.task_id,
            sessions={m: self._session_info(s, tokens[m]) for m, s in sessions.items()},
        )

    def adopt(self, group_id: str) -> HostedGroup:
        """Load a group persisted on local disk (after a worker restart); its tokens keep working."""
        if group_id in self.groups:
            return self.groups[group_id]
        root = self.groups_dir / group_id
        if not (root / GROUP_FILE).exists():
            raise NotFoundError(f"group {group_id!r} has no files on this host")
        group = HostedGroup.load(root)
        self.groups[group_id] = group
        if group.status != GroupStatus.CLOSED:
            for s in group.sessions.values():
                self._by_token[s.token_sha] = s
        return group

    # ---- calls --------------------------------------------------------------------------------

    async def list_tools(self, session: HostedSession) -> list[Tool]:
        group = self.group_of(session)
        await self._ensure_loaded(group)
        return await self.runtime(session).list_tools(session)

    async def call(
        self, session: HostedSession, tool: str, arguments: dict[str, Any] | None
    ) -> ToolResult:
        """Run one tool call on the session's private state and ledger it.

        Raises ToolError with a sanitized message on every failure, so the agent sees an
        isError result that names the problem but no internal path.
        """
        group = self.group_of(session)
        if group.status != GroupStatus.ACTIVE:
            raise ToolError(f"this session's group is {group.status}; no tool calls are accepted")
        for guard in self.call_guards:
            guard(session)
        arguments = arguments or {}
        if not isinstance(arguments, dict):
            raise ToolError("arguments must be a JSON object")
        runtime = self.runtime(session)
        async with self._serving(group, session):
            if group.status != GroupStatus.ACTIVE:
                raise ToolError(
                    f"this session's group is {group.status}; no tool calls are accepted"
                )
            before = session.probe()
            started = datetime.now(UTC)
            t0 = time.perf_counter()
            error_kind: ErrorKind | None = None
            message = ""
            result: ToolResult | None = None
            try:
                result = await asyncio.wait_for(
                    runtime.call_tool(session, tool, arguments), timeout=self.call_timeout_s
                )
            except FastMCPNotFound:
                error_kind, message = ErrorKind.UNKNOWN_TOOL, f"Unknown tool: {tool!r}"
            except (FastMCPValidationError, PydanticValidationError) as exc:
                error_kind, message = (
                    ErrorKind.INVALID_ARGUMENTS,
                    f"Invalid arguments for {tool!r}: {exc}",
                )
            except ToolError as exc:
                error_kind, message = ErrorKind.TOOL_ERROR, str(exc)
            except TimeoutError:
                error_kind = ErrorKind.TIMEOUT
                message = f"Tool {tool!r} timed out after {self.call_timeout_s:g} s"
            except Exception as exc:  # a server that raises outside ToolError or dies
                error_kind, message = (
                    ErrorKind.SERVER_CRASH,
                    f"Tool {tool!r} failed: {type(exc).__name__}",
                )
            duration = (time.perf_counter() - t0) * 1000
            if result is not None and result.is_error:
                error_kind = ErrorKind.TOOL_ERROR
                message = str(_result_payload(result))
            mutated = session.probe() != before
            if mutated:
                session.state_version += 1
            message = (
                self.sanitizer.text(message, workspace=str(session.workspace)) if error_kind else ""
            )
            entry = LedgerEntry(
                seq=session.ledger.next_seq,
                session_id=session.session_id,
                group_id=group.group_id,
                mcp=session.mcp_id,
                mcp_version=session.version,
                tool=tool,
                arguments=arguments,
                result=message if error_kind else _result_payload(result) if result else None,
                is_error=error_kind is not None,
                error_kind=error_kind,
                started_at=started,
                duration_ms=duration,
                mutated=mutated,
                state_version=session.state_version,
            )
            session.ledger.append(entry)
            if mutated:
                # group.json is not rewritten per call: recovery takes versions from checkpoints.
                for hook in self.mutation_hooks:
                    hook(group, session)
        for call_hook in self.call_hooks:
            call_hook(session, entry)
        if error_kind is not None:
            raise ToolError(message)
        assert result is not None
        return self._scrub_result(result, str(session.workspace))

    def _scrub_result(self, result: ToolResult, workspace: str) -> ToolResult:
        """A successful result that mentions a host path or secret gets it replaced; the rest
        (nearly every result) is returned untouched without copying."""
        texts = [getattr(c, "text", "") or "" for c in result.content]
        structured = result.structured_content
        blob = "\n".join(texts) + (
            json.dumps(structured, default=str) if structured is not None else ""
        )
        if not self.sanitizer.leaks(blob):
            return result
        content = [
            c.model_copy(update={"text": self.sanitizer.secrets_only(c.text, workspace=workspace)})
            if hasattr(c, "text")
            else c
            for c in result.content
        ]
        return ToolResult(
            content=content,
            structured_content=self.sanitizer.value(structured, workspace=workspace)
            if structured is not None
            else None,
            meta=result.meta,
        )

    # ---- lifecycle ----------------------------------------------------------------------------

    async def _quiesce(self, group: HostedGroup) -> AsyncExitStack:
        """Hold every session lock of the group (no call in flight) and release runtimes."""
        stack = AsyncExitStack()
        for s in group.sessions.values():
            await stack.enter_async_context(s.lock)
        for s in group.sessions.values():
            await self.runtime(s).release(s)
        return stack

    def _require(self, group: HostedGroup, *allowed: GroupStatus) -> None:
        if group.status not in allowed:
            raise GroupStateError(
                f"group {group.group_id} is {group.status}; needs {'/'.join(allowed)}"
            )

    async def pause(self, group_id: str) -> None:
        group = self.get(group_id)
        self._require(group, GroupStatus.ACTIVE, GroupStatus.PAUSED)
        async with await self._quiesce(group):
            group.status = GroupStatus.PAUSED
            group.save()

    async def resume(self, group_id: str) -> None:
        group = self.get(group_id)
        self._require(group, GroupStatus.ACTIVE, GroupStatus.PAUSED)
        await self._ensure_loaded(group)
        group.status = GroupStatus.ACTIVE
        group.touch()
        group.save()

    async def freeze(self, group_id: str) -> None:
        """Stop all calls and keep each session's final DB (a copy that never changes again)."""
        group = self.get(group_id)
        if group.status == GroupStatus.FROZEN:
            return
        self._require(group, GroupStatus.ACTIVE, GroupStatus.PAUSED)
        await self._ensure_loaded(group)
        async with await self._quiesce(group):
            for s in group.sessions.values():
                if s.db_path.exists():
                    tmp = s.final_db.with_suffix(".tmp")
                    shutil.copyfile(s.db_path, tmp)
                    tmp.replace(s.final_db)
            group.status = GroupStatus.FROZEN
            group.save()

    async def close(self, group_id: str, *, remove_files: bool = True) -> None:
        group = self.get(group_id)
        async with await self._quiesce(group):
            for s in group.sessions.values():
                self._by_token.pop(s.token_sha, None)
                self._revoked.add(s.token_sha)
            group.status = GroupStatus.CLOSED
            group.save()  # a crash from here on never resumes the group; the reaper finishes it
            if remove_files:
                for close_hook in self.close_hooks:
                    try:
                        await close_hook(group)
                    except Exception:  # cleanup elsewhere must not keep a group open
                        log.exception("close hook failed for group %s", group_id)
                shutil.rmtree(group.root, ignore_errors=True)
        self.groups.pop(group_id, None)

    async def release(self, group_id: str) -> None:
        """Stop serving a group here without closing it (it moves to another worker)."""
        group = self.get(group_id)
        async with await self._quiesce(group):
            for s in group.sessions.values():
                self._by_token.pop(s.token_sha, None)
            group.save()
        self.groups.pop(group_id, None)

    async def close_all(self) -> None:
        """Host shutdown: stop every runtime and persist every group; nothing is closed, so a
        restart with the same data dir resumes the groups with their tokens."""
        for group in list(self.groups.values()):
            with contextlib.suppress(Exception):  # best effort per group on the way down
                async with await self._quiesce(group):
                    group.save()
        await self.commands.close()

    def ledger(self, group_id: str) -> dict[str, list[LedgerEntry]]:
        group = self.get(group_id)
        return {m: list(s.ledger.entries) for m, s in group.sessions.items()}

    def info(self, group_id: str) -> GroupInfo:
        g = self.get(group_id)
        return GroupInfo(
            group_id=g.group_id,
            task_id=g.task_id,
            status=g.status,
            runtime=g.runtime,
            sessions={
                m: {
                    "session_id": s.session_id,
                    "version": s.version,
                    "state_version": s.state_version,
                    "calls": len(s.ledger),
                    "kind": str(s.kind),
                }
                for m, s in g.sessions.items()
            },
            created_at=g.created_at,
            last_used=g.last_used,
        )

    # ---- snapshot / restore / fork ------------------------------------------------------------

    async def snapshot(self, group_id: str) -> str:
        """Copy every session's DB, workspace and ledger of a live group; returns the snapshot id."""
        group = self.get(group_id)
        self._require(group, GroupStatus.ACTIVE, GroupStatus.PAUSED, GroupStatus.FROZEN)
        await self._ensure_loaded(group)
        snapshot_id = _new_id("snap")
        tmp = self.snapshots_dir / f".{snapshot_id}.tmp"
        async with await self._quiesce(group):
            meta: dict[str, Any] = {"group_id": group_id, "sessions": {}}
            for m, s in group.sessions.items():
                await asyncio.to_thread(_copy_state, s.root, tmp / m)
                meta["sessions"][m] = {
                    "version": s.version,
                    "state_version": s.state_version,
                    "calls": len(s.ledger),
                }
            (tmp / "meta.json").write_text(json.dumps(meta))
        tmp.rename(self.snapshots_dir / snapshot_id)
        return snapshot_id

    def _snapshot_dir(self, snapshot_id: str) -> tuple[Path, dict[str, Any]]:
        if not snapshot_id.startswith("snap_") or "/" in snapshot_id:
            raise NotFoundError(f"snapshot {snapshot_id!r} does not exist")
        folder = self.snapshots_dir / snapshot_id
        if not (folder / "meta.json").exists():
            raise NotFoundError(f"snapshot {snapshot_id!r} does not exist")
        return folder, json.loads((folder / "meta.json").read_text())

    async def restore(self, group_id: str, snapshot_id: str) -> None:
        """Put a group back to a snapshot of itself (state, workspace, ledger); it becomes active."""
        group = self.get(group_id)
        self._require(group, GroupStatus.ACTIVE, GroupStatus.PAUSED, GroupStatus.FROZEN)
        folder, meta = self._snapshot_dir(snapshot_id)
        if set(meta["sessions"]) != set(group.sessions):
            raise MegaMCPUserError(
                f"snapshot {snapshot_id} holds MCPs {sorted(meta['sessions'])}, not this group's"
            )
        await self._ensure_loaded(group)
        async with await self._quiesce(group):
            for m, s in group.sessions.items():
                await asyncio.to_thread(_copy_state, folder / m, s.root)
                s.final_db.unlink(missing_ok=True)
                s.ledger = type(s.ledger)(s.root / LEDGER_NAME)
                # A restore is a new state: versions stay monotonic so checkpoints order correctly.
                s.state_version = (
                    max(s.state_version, int(meta["sessions"][m]["state_version"])) + 1
                )
            group.status = GroupStatus.ACTIVE
            group.save()
        for hook in self.restore_hooks:
            hook(group)

    async def fork(self, group_id: str, n: int) -> list[GroupHandle]:
        """`n` new groups with the exact current state of `group_id` (each with new tokens)."""
        if not 1 <= n <= 1024:
            raise MegaMCPUserError(f"fork count must be between 1 and 1024, not {n}")
        group = self.get(group_id)
        self._require(group, GroupStatus.ACTIVE, GroupStatus.PAUSED, GroupStatus.FROZEN)
        await self._ensure_loaded(group)
        handles: list[GroupHandle] = []
        async with await self._quiesce(group):
            plans = []
            for _ in range(n):
                gid = _new_id("grp")
                plans.append((gid, {m: _new_id("ses") for m in group.sessions}))

            def copy_one(gid: str, sids: dict[str, str]) -> None:
                for m, s in group.sessions.items():
                    dst = self.groups_dir / gid / m
                    _copy_state(s.root, dst)
                    # The fork's history is the parent's prefix, under the fork's own ids.
                    led = dst / LEDGER_NAME
                    if led.exists():
                        lines = []
                        for line in led.read_text(encoding="utf-8").splitlines():
                            e = json.loads(line)
                            e["session_id"], e["group_id"] = sids[m], gid
                            lines.append(json.dumps(e))
                        led.write_text("".join(x + "\n" for x in lines), encoding="utf-8")

            def copy_all() -> None:
                # Copies are memory-bandwidth bound; a few threads overlap page-cache work.
                with ThreadPoolExecutor(max_workers=min(4, len(plans))) as pool:
                    list(pool.map(lambda plan: copy_one(*plan), plans))

            await asyncio.to_thread(copy_all)
            for gid, sids in plans:
                root = self.groups_dir / gid
                sessions = {
                    m: HostedSession(
                        session_id=sids[m],
                        group_id=gid,
                        mcp_id=m,
                        version=s.version,
                        kind=s.kind,
                        token_sha="",
                        expires_at=0.0,
                        root=root / m,
                        initial_uri=s.initial_uri,
                        initial_sha=s.initial_sha,
                        dedicated=s.dedicated,
                        state_version=s.state_version,
                    )
                    for m, s in group.sessions.items()
                }
                child = HostedGroup(
                    group_id=gid,
                    task_id=group.task_id,
                    root=root,
                    sessions=sessions,
                    verifier=group.verifier,
                    bindings=group.bindings,
                )
                tokens = {m: self._issue_token(s) for m, s in sessions.items()}
                child.save()
                self.groups[gid] = child
                for fork_hook in self.fork_hooks:
                    fork_hook(child)
                handles.append(
                    GroupHandle(
                        group_id=gid,
                        task_id=group.task_id,
                        sessions={m: self._session_info(s, tokens[m]) for m, s in sessions.items()},
                    )
                )
        return handles

    # ---- idle management ----------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def idle_transition(
        self, group: HostedGroup, *from_states: RuntimeState
    ) -> AsyncIterator[bool]:
        """Hold the group for a change of `runtime` (offload, evict): yields False (and holds
        nothing more) unless the group is in one of `from_states`; else holds it so no reload,
        other transition or tool call interleaves, releases every session's runtime, yields True.

        A transition awaits I/O midway (checkpoint upload, metadata pack); without this lock a
        call arriving then saw the new state early and reloaded files the transition was about to
        delete, or ran a tool on a DB being removed.
        """
        async with group.reload_lock:
            if group.runtime not in from_states:
                yield False
                return
            async with await self._quiesce(group):
                yield True

    @contextlib.asynccontextmanager
    async def _serving(self, group: HostedGroup, session: HostedSession) -> AsyncIterator[None]:
        """Hold `session.lock` on a loaded group: a transition that won the lock first is undone."""
        while True:
            await self._ensure_loaded(group)
            group.touch()
            await session.lock.acquire()
            if group.runtime == RuntimeState.LOADED:
                break
            session.lock.release()
        try:
            yield
        finally:
            session.lock.release()

    async def offload(self, group_id: str) -> None:
        """Drop a group's runtime (engines, session processes); sessions, tokens and files stay."""
        group = self.get(group_id)
        if group.runtime != RuntimeState.LOADED:
            return
        async with self.idle_transition(group, RuntimeState.LOADED) as holding:
            if holding:
                group.runtime = RuntimeState.OFFLOADED
        if not holding:
            return
        in_use = {
            (s.mcp_id, s.version)
            for g in self.groups.values()
            if g.runtime == RuntimeState.LOADED
            for s in g.sessions.values()
            if not s.dedicated
        }
        self.modules.unload_unused(in_use)

    async def _ensure_loaded(self, group: HostedGroup) -> None:
        if group.runtime == RuntimeState.LOADED:
            return
        async with group.reload_lock:
            await self._reload(group)

    async def _reload(self, group: HostedGroup) -> None:
        if group.runtime == RuntimeState.LOADED:  # a caller queued on the lock before us did it
            return
        if group.runtime == RuntimeState.EVICTED:
            if self.reload_hook is None:
                raise GroupStateError(
                    f"group {group.group_id} was evicted and no checkpoint store is configured"
                )
            await self.reload_hook(group)
        group.runtime = RuntimeState.LOADED

    def idle_groups(self, older_than_s: float, state: RuntimeState) -> list[HostedGroup]:
        now = time.monotonic()
        return [
            g
            for g in self.groups.values()
            if g.runtime == state and now - g.last_used > older_than_s
        ]

    # ---- verification -------------------------------------------------------------------------

    async def verify(self, group_id: str, *, timeout_s: float = 120.0) -> VerificationResult:
        """Freeze the group (if needed) and run its verifier's final checkpoint on the frozen DBs."""
        await self.freeze(group_id)
        group = self.get(group_id)
        await self._ensure_loaded(group)
        finals = {m: s.final_db for m, s in group.sessions.items() if s.final_db.exists()}
        return await run_verifier(
            group, self.registry, FINAL_CHECKPOINT, finals, frozen=True, timeout_s=timeout_s
        )

    async def checkpoint_verify(
        self, group_id: str, checkpoint: str, *, timeout_s: float = 120.0
    ) -> VerificationResult:
        """Run one checkpoint's checks on a consistent copy of the live state; the group goes on.
        With the diff on (`diff_max_rows` > 0) the result carries the rows and files changed
        since the previous checkpoint (see `checkpoint_diff`)."""
        group = self.get(group_id)
        self._require(group, GroupStatus.ACTIVE, GroupStatus.PAUSED, GroupStatus.FROZEN)
        await self._ensure_loaded(group)
        with tempfile.TemporaryDirectory(prefix="megamcp-ckpt-", dir=self.data_dir) as tmp:
            copies: dict[str, Path] = {}
            files: dict[str, WorkspaceState] = {}
            async with group.checkpoint_lock:
                async with await self._quiesce(group):
                    for m, s in group.sessions.items():
                        if s.db_path.exists():
                            copies[m] = Path(tmp) / f"{m}.sqlite"
                            shutil.copyfile(s.db_path, copies[m])
                        if self.diff_max_rows > 0:
                            files[m] = await asyncio.to_thread(capture_files, s)
                result = await run_verifier(
                    group, self.registry, checkpoint, copies, frozen=True, timeout_s=timeout_s
                )
                if self.diff_max_rows <= 0:
                    return result
                return result.model_copy(
                    update={"state_diff": await self._state_diff(group, checkpoint, copies, files)}
                )

    async def _state_diff(
        self,
        group: HostedGroup,
        checkpoint: str,
        copies: dict[str, Path],
        files: dict[str, WorkspaceState],
    ) -> CheckpointDiff:
        initial = {
            m: self.registry.snapshot_file(s.initial_uri)[0] if s.initial_uri else None
            for m, s in group.sessions.items()
        }
        try:
            return await asyncio.to_thread(
                checkpoint_diff,
                group.sessions,
                checkpoint,
                copies,
                files,
                initial,
                max_rows=self.diff_max_rows,
            )
        except (StateError, StateCaptureError, OSError) as exc:
            log.warning("group %s: no state diff at %s: %s", group.group_id, checkpoint, exc)
            return CheckpointDiff(
                since=INITIAL,
                max_rows=self.diff_max_rows,
                error=self.sanitizer.text(f"{type(exc).__name__}: {exc}"),
            )
