"""Information edges that carry what an earlier task found into a later task's inputs.

Paper §3.1.2: upstream outcomes feed downstream inputs. A read on one MCP reports fields of a
real row (an account's status, a customer's name, a ticket's subject); a later task on another
MCP that writes free text or a same-named field (a ticket subject, an email body, a file's
content, a note) takes that value instead of one the user would type. The user never states the
value: the agent must carry it from the step that found it.

Reasoning is over definitions only: the contract says which argument sets which field (role
`value` or `content`), the entity model says whether that field can hold any text (a string, not
an enum, key, foreign key or unique field), and the fixture row the read task reads gives the value
the read reports from the initial state. The downstream task's completion conditions are
re-rendered with the carried value, so its checks verify the downstream use of the upstream value.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from weft_core.models import AtomicTask, TaskInput
from weft_tasks.atomic.bundle import BundleView
from weft_tasks.compose.links import output_fields

_FREE_TEXT = re.compile(
    r"(body|content|description|note|notes|comment|message|text|summary|reason|subject|title|memo)"
)
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")


@dataclass(frozen=True)
class Found:
    """A value an upstream node reports: node index, output name, field, value."""

    node: int
    output: str
    field: str
    value: str


@dataclass(frozen=True)
class Flow:
    input: str
    source: Found


def reported_values(task: AtomicTask, bundle: BundleView, node: int) -> list[Found]:
    """What a read task reports, valued from the fixture row it reads (its key input's row)."""
    values = {i.name: i.value for i in task.inputs}
    out: list[Found] = []
    for name, (entity_name, field) in output_fields(task, bundle).items():
        try:
            entity = bundle.entities.entity(entity_name)
        except KeyError:
            continue
        key_values = {
            values.get(str(a).strip("{} "))
            for call in task.reference_calls
            if (c := bundle.contract(call.tool)) is not None and c.operation == "read"
            for m in c.mappings
            if m.role == "key" and (a := call.arguments.get(m.argument)) is not None
        }
        row = next(
            (r for r in task.seed_rows.get(entity_name, []) if r.get(entity.key) in key_values),
            None,
        )
        if row is None:
            continue
        value = row.get(field)
        if (
            isinstance(value, str)
            and len(value) >= 3
            and field != entity.key
            and not _DATE.match(value)
        ):
            out.append(Found(node, name, field, value))
    return out


def writable_text(bundle: BundleView, task: AtomicTask) -> dict[str, str]:
    """`{input name: field}` for inputs that set a field able to hold any text."""
    out: dict[str, str] = {}
    for call in task.reference_calls:
        c = bundle.contract(call.tool)
        if c is None or c.operation not in ("create", "update", "action", "file_write"):
            continue
        for m in c.mappings:
            arg = call.arguments.get(m.argument)
            if (
                not isinstance(arg, str)
                or not arg.startswith("{{")
                or m.role
                not in (
                    "value",
                    "content",
                )
            ):
                continue
            name = arg.strip("{} ")
            if m.role == "content":
                out[name] = "content"
                continue
            try:
                f = bundle.entities.entity(m.entity or c.entity or "").field(m.field or "")
            except KeyError:
                continue
            if (
                f.type == "string"
                and not f.enum
                and not f.unique
                and not f.primary_key
                and not f.foreign_key
            ):
                out[name] = f.name
    return out


def _fits(field: str, found: Found) -> bool:
    """A same-named field takes its own kind of value; free text takes any reported text."""
    if field == found.field or field.split("_")[-1] == found.field.split("_")[-1]:
        return True
    # ids belong in reference fields, not in prose: free text takes names, subjects, statuses
    return bool(_FREE_TEXT.search(field)) and not found.field.endswith("_id")


def pick_flow(
    task: AtomicTask,
    inputs: list[TaskInput],
    bundle: BundleView,
    earlier: list[tuple[str, list[Found]]],
    used: set[tuple[int, str]],
    known: Collection[str] = (),
) -> Flow | None:
    """The one given input of `task` best fed by a value an earlier node on another MCP
    reported (nearest node first); `earlier` is (mcp, reports) per earlier node. Values in
    `known` (what the user states anyway) carry nothing new and are skipped."""
    writable = writable_text(bundle, task)
    given = {i.name for i in inputs if i.source == "given" and isinstance(i.value, str)}
    for name, field in writable.items():
        if name not in given:
            continue
        for mcp, reports in reversed(earlier):
            if mcp == task.mcp:
                continue
            for f in reports:
                if (f.node, f.output) not in used and f.value not in known and _fits(field, f):
                    return Flow(name, f)
    return None


def _replace(value: Any, old: str, new: str) -> Any:
    if isinstance(value, str):
        return value.replace(old, new) if len(old) >= 6 else (new if value == old else value)
    if isinstance(value, dict):
        return {k: _replace(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace(v, old, new) for v in value]
    return value


def carry(task: AtomicTask, flow: Flow) -> AtomicTask:
    """`task` with the flowed input valued by the upstream value everywhere it appears (its
    input, literal mentions in the intent and completion conditions)."""
    old = next(i.value for i in task.inputs if i.name == flow.input)
    data = task.model_dump(
        mode="json", by_alias=True, exclude={"content_hash", "evidence", "e2e_test"}
    )
    for i in data["inputs"]:
        if i["name"] == flow.input:
            i["value"] = flow.source.value
    if isinstance(old, str):
        for k in ("checks", "intent"):
            data[k] = _replace(data[k], old, flow.source.value)
    new = AtomicTask.model_validate(data)
    return new.model_copy(update={"evidence": task.evidence})
