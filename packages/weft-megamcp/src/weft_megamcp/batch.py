"""Batched group operations: replay calls and run checks on a group in one request.

Construction-time work (atomic certification, composition reachability and verification) runs a
known list of tool calls and checks per task. One HTTP request per call and per check made the
host's request handling the larger part of that work; a batch runs the same operations through
the same code paths as single requests (`GroupManager.call` ledgers each call, runs the call
hooks and scrubs results exactly as for an agent's MCP call; verification freezes and checks
server-side), in order, in one request.
"""

from __future__ import annotations

import contextlib
from typing import Any, Protocol

import mcp_types as mt
from fastmcp.exceptions import ToolError

from weft_core.exceptions import UserError, WeftRuntimeError
from weft_core.templates import TemplateError, call_value, extract, render
from weft_megamcp._session import HostedGroup
from weft_megamcp.exceptions import MegaMCPUserError
from weft_megamcp.groups import GroupManager
from weft_megamcp.models import (
    BatchOp,
    BatchRequest,
    BatchResult,
    BatchStep,
    CallOp,
    CallResult,
    CreateGroupRequest,
    FreezeOp,
    GroupHandle,
    RunRequest,
    SetOp,
)
from weft_megamcp.registry import Registry
from weft_megamcp.settings import MegaMCPSettings


class HostCore(Protocol):
    """What a batch runs against (the host's core, as the admin API holds it)."""

    settings: MegaMCPSettings
    manager: GroupManager
    registry: Registry

    async def create_group(self, req: CreateGroupRequest) -> GroupHandle: ...


async def _call(
    core: HostCore, group: HostedGroup, op: CallOp, env: dict[str, Any] | None
) -> BatchStep:
    session = group.sessions.get(op.mcp)
    if session is None:
        return BatchStep(
            op="call", error=f"group {group.group_id} has no session for MCP {op.mcp!r}"
        )
    arguments = op.arguments
    if env is not None:
        try:
            arguments = render(op.arguments, env)
        except TemplateError as exc:
            return BatchStep(op="call", error=f"TemplateError: {exc}")
        if not isinstance(arguments, dict):
            return BatchStep(op="call", error="arguments must render to an object")
    shown = arguments if env is not None else None
    try:
        result = await core.manager.call(session, op.tool, arguments)
    except ToolError as exc:
        text = str(exc)
        return BatchStep(
            op="call",
            arguments=shown,
            call=CallResult(is_error=True, content=[{"type": "text", "text": text}], text=text),
        )
    content = [c.model_dump(mode="json", exclude_none=True) for c in result.content]
    text = "\n".join(c.text for c in result.content if isinstance(c, mt.TextContent))
    if env is not None and op.bind:
        value = call_value(result.structured_content, text)
        for name, path in op.bind.items():
            # a value the result lacks is only fatal if a later template needs it, which names it
            with contextlib.suppress(KeyError):
                env[name] = extract(value, path)
    return BatchStep(
        op="call",
        arguments=shown,
        call=CallResult(
            is_error=False, content=content, structured=result.structured_content, text=text
        ),
    )


def _set(op: SetOp, env: dict[str, Any] | None) -> BatchStep:
    if env is None:
        return BatchStep(op="set", error="a set op needs a batch env (env: {} at least)")
    env.update(op.values)
    for name, key in op.refs.items():
        if key in env:
            env[name] = env[key]
    return BatchStep(op="set")


async def _one(
    core: HostCore, group: HostedGroup, op: BatchOp, env: dict[str, Any] | None = None
) -> BatchStep:
    m = core.manager
    timeout = core.settings.verifier_timeout_s
    try:
        if isinstance(op, CallOp):
            return await _call(core, group, op, env)
        if isinstance(op, SetOp):
            return _set(op, env)
        if isinstance(op, FreezeOp):
            await m.freeze(group.group_id)
            return BatchStep(op="freeze")
        if op.checkpoint:
            res = await m.checkpoint_verify(
                group.group_id, op.checkpoint, timeout_s=timeout, diff=op.diff
            )
        else:
            res = await m.verify(group.group_id, timeout_s=timeout)
        return BatchStep(op="verify", verification=res)
    except (UserError, WeftRuntimeError) as exc:
        return BatchStep(op=op.op, error=f"{type(exc).__name__}: {exc}")


async def run_batch(core: HostCore, group_id: str, req: BatchRequest) -> BatchResult:
    """Run `req.ops` on the group in order; stop at the first failure when asked; close the
    group afterwards when asked (also after a failure or an exception)."""
    group = core.manager.get(group_id)
    out = BatchResult(group_id=group_id, steps=[])
    env = dict(req.env) if req.env is not None else None
    try:
        for i, op in enumerate(req.ops):
            step = await _one(core, group, op, env)
            out.steps.append(step)
            if req.stop_on_error and step.failed:
                out.stopped_at = i
                break
    finally:
        if req.close:
            await core.manager.close(group_id)
            out.closed = True
    return out


async def run_group(core: HostCore, req: RunRequest) -> BatchResult:
    """Store the request's initial DBs and workspaces, create a group from them, run the batch on it and (by
    default) close it: one request in all."""
    create = req.create
    if req.snapshots:
        mcps = dict(create.mcps)
        for key, path in req.snapshots.items():
            if key not in mcps:
                raise MegaMCPUserError(f"snapshot for {key!r}, which the group does not name")
            mcp_id = key.partition("@")[0]
            core.registry.require_registered(mcp_id)
            mcps[key] = core.registry.put_snapshot(mcp_id, path).uri
        create = create.model_copy(update={"mcps": mcps})
    if req.workspace_files:
        workspaces = dict(create.workspaces)
        for key, path in req.workspace_files.items():
            if key not in create.mcps:
                raise MegaMCPUserError(f"workspace for {key!r}, which the group does not name")
            mcp_id = key.partition("@")[0]
            core.registry.require_registered(mcp_id)
            workspaces[key] = core.registry.put_workspace(mcp_id, path).uri
        create = create.model_copy(update={"workspaces": workspaces})
    handle = await core.create_group(create)
    if req.close:
        # Nobody else holds its tokens and it is deleted before this request answers: a
        # write-behind checkpoint of it would be uploaded only to be deleted at the close.
        core.manager.get(handle.group_id).ephemeral = True
    out = await run_batch(core, handle.group_id, req)
    out.handle = handle
    return out
