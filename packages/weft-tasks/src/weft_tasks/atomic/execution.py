"""Running reference calls: `{{name}}` templates, dotted-path binds, and the tool-caller contract.

The same engine serves atomic-task E2E validation and the reachability replay of a composed task,
so an atomic task runs the same way alone and inside a graph.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import TypeAdapter

from weft_core.models import Check, ReferenceCall

_TEMPLATE = re.compile(r"\{\{\s*([A-Za-z0-9_.\-]+)\s*\}\}")


class TemplateError(ValueError):
    """A `{{name}}` template names a value that no input, earlier call, upstream output or
    binding provides; `name` is that name."""

    def __init__(self, name: str, known: Sequence[str] = ()) -> None:
        self.name = name
        super().__init__(f"template {{{{{name}}}}} has no value (known: {sorted(known)[:12]})")


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


def render(value: Any, env: Mapping[str, Any]) -> Any:
    """Fill `{{name}}` templates from `env`, recursively through dicts and lists (the one template
    engine of reference calls, checks and harness replays). A string that is exactly one template
    takes the value's own type (an integer id stays an integer); templates inside text are
    substituted. `name` is a key of `env`, else `key.path` into one (`customer.email`)."""
    if isinstance(value, str):
        whole = _TEMPLATE.fullmatch(value.strip())
        if whole:
            return _lookup(env, whole.group(1))
        return _TEMPLATE.sub(lambda m: _text(_lookup(env, m.group(1))), value)
    if isinstance(value, dict):
        return {k: render(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [render(v, env) for v in value]
    return value


def template_names(value: Any) -> set[str]:
    """Every name a value's templates refer to."""
    if isinstance(value, str):
        return set(_TEMPLATE.findall(value))
    if isinstance(value, dict):
        return set().union(*(template_names(v) for v in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(template_names(v) for v in value)) if value else set()
    return set()


def _lookup(env: Mapping[str, Any], name: str) -> Any:
    if name in env:
        return env[name]
    head, _, rest = name.partition(".")
    if rest and head in env:
        found = _walk(env[head], rest.split("."))
        if found is not MISSING:
            return found
    raise TemplateError(name, list(env))


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)


MISSING = object()
"""What a path lookup returns when the value is absent (None is a value)."""


def extract(result: Any, path: str) -> Any:
    """Take a value out of a tool result by dotted path (`items.0.id`).

    When the exact path is absent, the last segment is looked for breadth-first, so `id` finds
    the id of `{"result": {"id": 3}}` or of the first row of a list: servers wrap results
    differently (FastMCP wraps non-object returns in `{"result": ...}`) and this keeps a reference
    solution portable across them.
    """
    value = _walk(result, path.split("."))
    if value is not MISSING:
        return value
    key = path.split(".")[-1]
    queue: list[Any] = [result]
    while queue:
        cur = queue.pop(0)
        if isinstance(cur, dict):
            if key in cur:
                return cur[key]
            queue.extend(cur.values())
        elif isinstance(cur, list):
            queue.extend(cur)
    raise KeyError(f"result has no {path!r}")


def _walk(value: Any, parts: Sequence[str]) -> Any:
    for part in parts:
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif (
            isinstance(value, list)
            and part.lstrip("-").isdigit()
            and -len(value) <= int(part) < len(value)
        ):
            value = value[int(part)]
        else:
            return MISSING
    return value


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
        step.returned = await caller.call(mcp, call.tool, args)
        if step.returned.is_error:
            step.error = f"tool error: {step.returned.text[:300]}"
            record.failed_at = i
            return record
        for name, path in call.bind.items():
            # A value the result lacks is only fatal when a later template needs it, which
            # render() reports with the missing name.
            try:
                record.env[name] = extract(step.returned.value, path)
            except KeyError:
                step.missing_binds.append(name)
    return record


_CHECKS: TypeAdapter[list[Check]] = TypeAdapter(list[Check])


def render_checks(checks: Sequence[Check], env: Mapping[str, Any]) -> list[Check]:
    """Checks with their `{{input}}` templates filled: what the evaluator reads."""
    dumped = _CHECKS.dump_python(list(checks), mode="json")
    return _CHECKS.validate_python(render(dumped, env))


def input_values(task: Any) -> dict[str, Any]:
    """`{input name: value}` of an atomic task: the environment its templates render in."""
    return {i.name: i.value for i in task.inputs}
