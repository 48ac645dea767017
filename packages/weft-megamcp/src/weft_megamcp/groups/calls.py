"""Tool calls on a session's private state: run, time out, ledger, sanitize."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Coroutine
from datetime import UTC, datetime
from typing import Any

import anyio.to_thread
from fastmcp.exceptions import NotFoundError as FastMCPNotFound
from fastmcp.exceptions import ToolError
from fastmcp.exceptions import ValidationError as FastMCPValidationError
from fastmcp.tools.base import Tool, ToolResult
from fastmcp.utilities.async_utils import is_coroutine_function
from pydantic import ValidationError as PydanticValidationError

from weft_core.models import ErrorKind, LedgerEntry
from weft_megamcp._session import HostedGroup, HostedSession
from weft_megamcp.groups.idle import IdleGroups
from weft_megamcp.models import GroupStatus
from weft_megamcp.preempt import ToolPreempted
from weft_megamcp.runtime import ModuleRuntime, ServerRuntime

log = logging.getLogger("weft_megamcp.calls")
_RUNNING: set[asyncio.Task[None]] = set()


def _result_size(result: ToolResult) -> int:
    """Characters the result takes in a reply: its text blocks and its structured content."""
    size = sum(len(getattr(c, "text", "") or "") for c in result.content)
    if result.structured_content is not None:
        size += len(json.dumps(result.structured_content, default=str))
    return size


def _result_payload(result: ToolResult) -> Any:
    if result.structured_content is not None:
        return result.structured_content
    texts = [getattr(c, "text", None) for c in result.content]
    return "\n".join(t for t in texts if t is not None)


class ToolCalls(IdleGroups):
    """Serves the tool calls of a group's sessions."""

    async def list_tools(self, session: HostedSession) -> list[Tool]:
        group = self.group_of(session)
        await self._ensure_loaded(group)
        return await self.runtime(session).list_tools(session)

    async def call(
        self, session: HostedSession, tool: str, arguments: dict[str, Any] | None
    ) -> ToolResult:
        """Run one tool call on the session's private state and ledger it.

        Raises ToolError with a sanitized message on every failure, so the agent sees an
        isError result that names the problem but no internal path. The answer comes by
        `call_timeout_s` even when the tool cannot be stopped (a sync tool's thread): the
        session then stays busy, refusing calls, until the tool really returns, and the call
        is ledgered then with what it changed.
        """
        group = self.group_of(session)
        if group.status != GroupStatus.ACTIVE:
            raise ToolError(f"this session's group is {group.status}; no tool calls are accepted")
        for guard in self.call_guards:
            guard(session)
        arguments = arguments or {}
        if not isinstance(arguments, dict):
            raise ToolError("arguments must be a JSON object")
        if session.overrun is not None:
            raise ToolError(
                f"this session's call of {session.overrun!r} timed out and is still running; "
                "no call is accepted until it ends"
            )
        self._size_thread_pool()
        reply: asyncio.Future[ToolResult] = asyncio.get_running_loop().create_future()
        work = asyncio.create_task(self._serve_call(group, session, tool, arguments, reply))
        # The loop holds tasks weakly; a call answered at its timeout runs on past this frame.
        _RUNNING.add(work)
        work.add_done_callback(_RUNNING.discard)
        try:
            return await asyncio.shield(reply)
        except asyncio.CancelledError:
            if not work.done() and not reply.done():
                work.cancel()  # the caller went away before the answer: stop the call
            raise

    def _size_thread_pool(self) -> None:
        # Sync tools run on anyio's default limiter (40 threads per loop): 40 slow calls
        # stalled every session. Sized here because the limiter belongs to the running loop.
        limiter = anyio.to_thread.current_default_thread_limiter()
        if limiter.total_tokens != self.tool_threads:
            limiter.total_tokens = self.tool_threads

    @contextlib.asynccontextmanager
    async def _call_slot(self, group: HostedGroup) -> AsyncIterator[None]:
        """One of the group's `group_max_calls` slots, held until its tool really returns."""
        slots = self._call_slots.get(group.group_id)
        if slots is None:
            slots = asyncio.Semaphore(self.group_max_calls)
            self._call_slots[group.group_id] = slots
        async with slots:
            yield

    async def _serve_call(
        self,
        group: HostedGroup,
        session: HostedSession,
        tool: str,
        arguments: dict[str, Any],
        reply: asyncio.Future[ToolResult],
    ) -> None:
        """Run, ledger and answer one call; `reply` may already be answered (a timeout) when
        the tool returns, and the ledger entry is written then."""
        try:
            await self._run_and_ledger(group, session, tool, arguments, reply)
        except BaseException as exc:
            if not reply.done():
                if isinstance(exc, asyncio.CancelledError):
                    reply.cancel()
                else:
                    reply.set_exception(exc)
            elif not isinstance(exc, asyncio.CancelledError | ToolError):
                log.exception("call of %r after its timeout failed", tool)
            if isinstance(exc, asyncio.CancelledError):
                raise

    async def _run_and_ledger(
        self,
        group: HostedGroup,
        session: HostedSession,
        tool: str,
        arguments: dict[str, Any],
        reply: asyncio.Future[ToolResult],
    ) -> None:
        runtime = self.runtime(session)
        # An ephemeral group lives inside the one request that created it and closes it
        # (`batch.run_group`): no other host can have taken it over, so its writes need no lease
        # (taking one cost a lease file, three journal writes and a delete per session).
        fence = None if group.ephemeral else self.fence
        async with self._call_slot(group), self._serving(group, session):
            if group.status != GroupStatus.ACTIVE:
                raise ToolError(
                    f"this session's group is {group.status}; no tool calls are accepted"
                )
            if fence is not None:
                await fence.before_call(session)
            # The write gate: a checkpoint copies the state only between calls, never between
            # a write committing and its version being assigned (see DebouncedCheckpointer).
            async with session.state_lock:
                before = session.probe_before_call()
                started = datetime.now(UTC)
                t0 = time.perf_counter()
                error_kind, message, result = await self._run_tool(
                    runtime, session, tool, arguments, reply
                )
                duration = (time.perf_counter() - t0) * 1000
                if result is not None and result.is_error:
                    error_kind = ErrorKind.TOOL_ERROR
                    message = str(_result_payload(result))
                elif result is not None and (size := _result_size(result)) > self.max_result_chars:
                    error_kind, result = ErrorKind.TOOL_ERROR, None
                    message = (
                        f"Tool {tool!r} returned {size:,} characters, over the result limit of "
                        f"{self.max_result_chars:,} (max_result_chars); ask for less"
                    )
                after = session.probe()
                mutated = after != before
                if mutated and fence is not None:
                    await fence.before_ack(session)  # fenced: not acknowledged nor ledgered
                if mutated:
                    session.state_version += 1
                session.after_call(after)
                message = (
                    self.sanitizer.text(message, workspace=str(session.workspace))
                    if error_kind
                    else ""
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
                    # group.json is not rewritten per call: recovery reads versions off the ledger.
                    for hook in self.mutation_hooks:
                        hook(group, session)
        for call_hook in self.call_hooks:
            call_hook(session, entry)
        if reply.done():
            return
        if error_kind is not None:
            reply.set_exception(ToolError(message))
            return
        assert result is not None
        reply.set_result(self._scrub_result(result, str(session.workspace)))

    async def _run_tool(
        self,
        runtime: ServerRuntime,
        session: HostedSession,
        tool: str,
        arguments: dict[str, Any],
        reply: asyncio.Future[ToolResult],
    ) -> tuple[ErrorKind | None, str, ToolResult | None]:
        """The tool's result or (error kind, message). At the deadline an awaiting tool is
        cancelled and one that holds the loop is preempted; a thread cannot be stopped, so the
        agent is answered then and this waits, the session busy, until the thread returns."""
        deadline = time.monotonic() + self.call_timeout_s
        timeout = f"Tool {tool!r} timed out after {self.call_timeout_s:g} s"
        task = asyncio.ensure_future(
            self._guarded(runtime.call_tool(session, tool, arguments), deadline)
        )
        try:
            done, _ = await asyncio.wait({task}, timeout=self.call_timeout_s)
        except asyncio.CancelledError:
            task.cancel()
            raise
        if not done:
            if not await self._on_thread(runtime, session, tool):
                task.cancel()  # an awaiting tool stops at its await
                await asyncio.wait({task})
                return ErrorKind.TIMEOUT, timeout, None
            # Cancelling would only let the thread go on unseen, writing to the session's DB
            # after its lock is given back: answer now, keep the session until it returns.
            if not reply.done():
                reply.set_exception(ToolError(timeout))
            session.overrun = tool
            try:
                await asyncio.wait({task})
            finally:
                session.overrun = None
            if not task.cancelled():
                task.exception()  # retrieved: the agent was already told it timed out
            return ErrorKind.TIMEOUT, timeout, None
        try:
            return None, "", task.result()
        except FastMCPNotFound:
            return ErrorKind.UNKNOWN_TOOL, f"Unknown tool: {tool!r}", None
        except (FastMCPValidationError, PydanticValidationError) as exc:
            return ErrorKind.INVALID_ARGUMENTS, f"Invalid arguments for {tool!r}: {exc}", None
        except ToolError as exc:
            return ErrorKind.TOOL_ERROR, str(exc), None
        except (ToolPreempted, TimeoutError):
            # The tool's module state may be half-updated: its runtime is dropped, the next
            # call reacquires it.
            await runtime.release(session)
            return ErrorKind.TIMEOUT, timeout, None
        except Exception as exc:  # a server that raises outside ToolError or dies
            return ErrorKind.SERVER_CRASH, f"Tool {tool!r} failed: {type(exc).__name__}", None

    async def _on_thread(self, runtime: ServerRuntime, session: HostedSession, tool: str) -> bool:
        """True when the tool is a sync function of a hosted module (fastmcp runs it on a
        worker thread, which no cancellation stops)."""
        if not isinstance(runtime, ModuleRuntime):
            return False
        try:
            found = await runtime.server(session.mcp_id, session.version).get_tool(tool)
        except Exception:
            return False
        fn = getattr(found, "fn", None)
        return fn is not None and not is_coroutine_function(fn)

    async def _guarded(self, call: Coroutine[Any, Any, ToolResult], deadline: float) -> ToolResult:
        return await self.watchdog.guarded(call, deadline)

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
