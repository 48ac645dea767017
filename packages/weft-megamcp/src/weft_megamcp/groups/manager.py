"""Session groups: one private session per MCP, created from immutable snapshots, driven as a unit.

The manager owns every group placed in this process: their files (under `<data>/groups/`), the
token table, the ledger of every call, snapshots / restore / fork, freeze and idle offload.
Tenancy binds on the per-session bearer token; tokens are stored only as sha256.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

from weft_core.exceptions import CheckError, UserError
from weft_core.models import FINAL_CHECKPOINT, Verifier
from weft_core.state import (
    INITIAL,
    CheckpointDiff,
    StateCaptureError,
    StateError,
    WorkspaceState,
)
from weft_megamcp._session import (
    GROUP_FILE,
    HostedGroup,
    HostedSession,
)
from weft_megamcp.checkpoint_diff import capture_files, checkpoint_diff
from weft_megamcp.exceptions import MegaMCPUserError, NotFoundError
from weft_megamcp.groups.calls import ToolCalls
from weft_megamcp.groups.core import _new_id, log
from weft_megamcp.groups.lifecycle import GroupLifecycle
from weft_megamcp.groups.snapshots import GroupSnapshots
from weft_megamcp.health import cap_reached
from weft_megamcp.models import CreateGroupRequest, GroupHandle, GroupStatus, VerificationResult
from weft_megamcp.registry import MCPKind, MCPRecord
from weft_megamcp.screening import session_cap
from weft_megamcp.seeding import initial_workspace
from weft_megamcp.verifier import resolve_verifier, run_verifier


class GroupManager(ToolCalls, GroupLifecycle, GroupSnapshots):
    """Creates and serves session groups in this process."""

    # ---- creation -----------------------------------------------------------------------------

    def create_group(self, request: CreateGroupRequest) -> GroupHandle:
        if not request.mcps:
            raise MegaMCPUserError("a group needs at least one MCP")
        if isinstance(request.verifier, Verifier) and not request.verifier.has_checks:
            raise MegaMCPUserError(
                "verifier has no checks: it can never pass (omit it, or give checks)"
            )
        unknown = sorted(set(request.workspaces) - set(request.mcps))
        if unknown:
            raise MegaMCPUserError(f"workspaces for {unknown}, which the group does not name")
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
            plans.append((record, uri, src, sha, request.workspaces.get(key)))
        self._check_caps([p[0] for p in plans])
        group_id = _new_id("grp")
        root = self.groups_dir / group_id
        root.mkdir(parents=True)
        sessions: dict[str, HostedSession] = {}
        tokens: dict[str, str] = {}
        try:
            for record, uri, src, sha, ws_uri in plans:
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
                    initial_workspace_uri=ws_uri,
                )
                if src is not None:
                    shutil.copyfile(src, session.db_path)  # the measured fast path: a plain copy
                initial_workspace(self.registry, record, session.workspace, ws_uri)
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
                self.tokens.withdraw(s)
            shutil.rmtree(root, ignore_errors=True)
            raise
        self.groups[group_id] = group
        return GroupHandle(
            group_id=group_id,
            task_id=request.task_id,
            sessions={m: self._session_info(s, tokens[m]) for m, s in sessions.items()},
        )

    def _check_caps(self, records: list[MCPRecord]) -> None:
        """Refuse a group that would put an MCP past its screened per-process cap (the master
        checks the same caps across workers before it forwards a creation here)."""
        wanted: dict[str, int] = {}
        for rec in records:
            if rec.kind != MCPKind.COMMAND:
                key = f"{rec.mcp_id}@{rec.version}"
                wanted[key] = wanted.get(key, 0) + 1
        for key, n in wanted.items():
            mcp_id, _, version = key.rpartition("@")
            rec = next(r for r in records if r.mcp_id == mcp_id and r.version == int(version))
            cap = session_cap(rec.metadata.get("screen") or {}, self.screening)
            # A group holds at most one session per MCP id, so fewer groups than the cap leave
            # room without counting (creation runs in threads: counting 1,000 groups per
            # creation was quadratic work at rollout scale).
            groups = list(self.groups.values())  # a copy: other threads add and remove groups
            if cap is None or len(groups) + n <= cap:
                continue
            serving = sum(
                1
                for g in groups
                if g.status != GroupStatus.CLOSED
                for s in g.sessions.values()
                if not s.dedicated and s.mcp_id == mcp_id and s.version == rec.version
            )
            if serving + n > cap:
                raise cap_reached(key, cap, 1)

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
                self.tokens.serve(s)
        return group

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
        self, group_id: str, checkpoint: str, *, timeout_s: float = 120.0, diff: bool = True
    ) -> VerificationResult:
        """Run one checkpoint's checks on a consistent copy of the live state; the group goes on.
        With the diff on (`diff_max_rows` > 0 and `diff`) the result carries the rows and files
        changed since the previous diffed checkpoint (see `checkpoint_diff`)."""
        diff = diff and self.diff_max_rows > 0
        group = self.get(group_id)
        self._require(group, GroupStatus.ACTIVE, GroupStatus.PAUSED, GroupStatus.FROZEN)
        await self._ensure_loaded(group)
        spec: Verifier | bytes | None = None  # looked up once, for either path below
        if not diff:
            try:
                spec = resolve_verifier(group, self.registry)
            except (CheckError, UserError):  # run_verifier below reports it
                spec = None
            if isinstance(spec, Verifier):
                return await self._verify_in_place(group, checkpoint, spec, timeout_s)
        copies: dict[str, Path] = {}
        files: dict[str, WorkspaceState] = {}
        # A fixed folder per live group object instead of a TemporaryDirectory (which cost more
        # than the copies): created and removed here under the group's checkpoint_lock, and
        # named by process and object, so no other verification (another worker's after a
        # hand-over, this one's after a re-adoption) can write it while this verifier reads.
        # Beside the groups (not in data_dir): a state diff moves its copy into the session's
        # folder, a rename that needs one file system when groups_dir is a tmpfs.
        scratch = self.groups_dir / f".megamcp-ckpt-{group.group_id}-{os.getpid()}-{id(group):x}"
        async with group.checkpoint_lock:
            try:
                async with await self._quiesce(group):
                    for m, s in group.sessions.items():
                        if s.db_path.exists():
                            scratch.mkdir(exist_ok=True)
                            copies[m] = scratch / f"{m}.sqlite"
                            shutil.copyfile(s.db_path, copies[m])
                        if diff:
                            files[m] = await asyncio.to_thread(capture_files, s)
                result = await run_verifier(
                    group,
                    self.registry,
                    checkpoint,
                    copies,
                    frozen=True,
                    timeout_s=timeout_s,
                    resolved=spec,
                )
                if not diff:
                    return result
                return result.model_copy(
                    update={"state_diff": await self._state_diff(group, checkpoint, copies, files)}
                )
            finally:
                for copy in copies.values():  # the diff moved its copies away already
                    copy.unlink(missing_ok=True)
                if copies:
                    try:
                        scratch.rmdir()
                    except OSError:  # something beside the copies (a journal): all of it goes
                        shutil.rmtree(scratch, ignore_errors=True)

    async def _verify_in_place(
        self, group: HostedGroup, checkpoint: str, spec: Verifier, timeout_s: float
    ) -> VerificationResult:
        """A checkpoint's weft-core checks read the live DBs, read-only, while the group is held.

        Why no copies: the copies exist for what may outlive the hold (a state diff keeps its
        copy as the next diff's base; a Python verifier is handed paths and may write to them)
        and neither is the case here. While the session locks are held no call is in flight,
        so the files are exactly the state at the checkpoint; they are opened `mode=ro` (not
        immutable: a WAL still holds committed pages), each DB read in one transaction. Copying
        every DB of the group at every node was most of a construction-time replay's file
        system work (a folder, a copy and an unlink per session per checkpoint).

        The runtimes are not released (the next call would reopen every session's engine): a
        call's writes are committed when it returns, which is what the write-behind checkpoints
        already rely on when they copy a live DB under a read lock."""
        async with group.checkpoint_lock, await self._hold(group):
            live = {m: s.db_path for m, s in group.sessions.items() if s.db_path.exists()}
            return await run_verifier(
                group,
                self.registry,
                checkpoint,
                live,
                frozen=False,
                timeout_s=timeout_s,
                resolved=spec,
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
