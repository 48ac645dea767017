"""Tool calls on a session's private state: run, time out, ledger, sanitize."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import UTC, datetime
from typing import Any

from fastmcp.exceptions import NotFoundError as FastMCPNotFound
from fastmcp.exceptions import ToolError
from fastmcp.exceptions import ValidationError as FastMCPValidationError
from fastmcp.tools.base import Tool, ToolResult
from pydantic import ValidationError as PydanticValidationError

from weft_core.models import ErrorKind, LedgerEntry
from weft_megamcp._session import HostedSession
from weft_megamcp.groups.idle import IdleGroups
from weft_megamcp.models import GroupStatus


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
            if self.fence is not None:
                await self.fence.before_call(session)
            # The write gate: a checkpoint copies the state only between calls, never between
            # a write committing and its version being assigned (see DebouncedCheckpointer).
            async with session.state_lock:
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
                if mutated and self.fence is not None:
                    await self.fence.before_ack(session)  # fenced: not acknowledged nor ledgered
                if mutated:
                    session.state_version += 1
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
