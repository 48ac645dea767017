"""Running reference calls: `{{name}}` templates, dotted-path binds, and the tool-caller contract.

The same engine serves atomic-task E2E validation and the reachability replay of a composed task,
so an atomic task runs the same way alone and inside a graph.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import TypeAdapter

from weft_core.models import Check, ReferenceCall
from weft_core.templates import (
    MISSING,
    TemplateError,
    call_value,
    extract,
    render,
    scoped,
    template_names,
)

__all__ = [
    "MISSING",
    "RunRecord",
    "StepRecord",
    "TemplateError",
    "ToolCaller",
    "ToolReturn",
    "call_value",
    "extract",
    "record_return",
    "render",
    "render_checks",
    "run_calls",
    "scoped",
    "template_names",
]


@dataclass
class ToolReturn:
    """What one call returned: the structured value (or text) and whether it was an error."""

    is_error: bool
    value: Any = None
    text: str = ""


class ToolCaller(Protocol):
    """Calls a tool of one MCP in one live session and reports what it returned.

    Contract: `call` runs a real MCP tools/call against the session's private state and never
    raises for a tool-level error (that is `ToolReturn.is_error`); it raises only when the call
    could not be made at all (host unreachable, session gone).
    """

    async def call(self, mcp: str, tool: str, arguments: dict[str, Any]) -> ToolReturn: ...


@dataclass
class StepRecord:
    tool: str
    arguments: dict[str, Any]
    returned: ToolReturn | None = None
    error: str | None = None
    missing_binds: list[str] = field(default_factory=list)


@dataclass
class RunRecord:
    """The run of one reference solution: per-call records, the final value environment, and
    where (if anywhere) it stopped."""

    steps: list[StepRecord] = field(default_factory=list)
    env: dict[str, Any] = field(default_factory=dict)
    failed_at: int | None = None

    @property
    def ok(self) -> bool:
        return self.failed_at is None

    @property
    def diagnostic(self) -> str:
        if self.failed_at is None:
            return ""
        step = self.steps[self.failed_at]
        detail = step.error or (step.returned.text[:300] if step.returned else "")
        return f"call {self.failed_at + 1} ({step.tool}) failed: {detail}"


async def run_calls(
    caller: ToolCaller, mcp: str, calls: Sequence[ReferenceCall], env: Mapping[str, Any]
) -> RunRecord:
    """Run `calls` in order, filling templates from `env` and each call's binds; stop at the first
    call that errors, cannot be rendered, or lacks a value it must bind."""
    record = RunRecord(env=dict(env))
    for i, call in enumerate(calls):
        try:
            args = render(call.arguments, record.env)
        except TemplateError as exc:
            record.steps.append(StepRecord(call.tool, dict(call.arguments), error=str(exc)))
            record.failed_at = i
            return record
        step = StepRecord(call.tool, args)
        record.steps.append(step)
        if not record_return(record, i, call, step, await caller.call(mcp, call.tool, args)):
            return record
    return record


def record_return(
    record: RunRecord, i: int, call: ReferenceCall, step: StepRecord, returned: ToolReturn
) -> bool:
    """What call `i` returned, into its step and the record: the values it binds, or the error
    that stops the run (False)."""
    step.returned = returned
    if returned.is_error:
        step.error = f"tool error: {returned.text[:300]}"
        record.failed_at = i
        return False
    for name, path in call.bind.items():
        # A value the result lacks is only fatal when a later template needs it, which
        # render() reports with the missing name.
        try:
            record.env[name] = extract(returned.value, path)
        except KeyError:
            step.missing_binds.append(name)
    return True


_CHECKS: TypeAdapter[list[Check]] = TypeAdapter(list[Check])


def render_checks(checks: Sequence[Check], env: Mapping[str, Any]) -> list[Check]:
    """Checks with their `{{input}}` templates filled: what the evaluator reads."""
    dumped = _CHECKS.dump_python(list(checks), mode="json")
    return _CHECKS.validate_python(render(dumped, env))


def input_values(task: Any) -> dict[str, Any]:
    """`{input name: value}` of an atomic task: the environment its templates render in."""
    return {i.name: i.value for i in task.inputs}
