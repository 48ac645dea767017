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
from weft_tasks.atomic.execution import template_names
from weft_tasks.compose.links import input_fields, output_fields
from weft_tasks.compose.staleness import Keep
from weft_tasks.grounding.identity import link_key

_FREE_TEXT = re.compile(
    r"(body|content|description|note|notes|comment|message|text|summary|reason|subject|title|memo)"
)
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")
# suffixes that say a field refers to something, not what: a ticket_ref is no deal_ref
_GENERIC_SUFFIXES = frozenset({"id", "ref", "reference", "number", "code"})


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


def _read_row(
    task: AtomicTask, bundle: BundleView, entity_name: str, key: str, values: dict[str, Any]
) -> dict[str, Any] | None:
    """The fixture row of `entity_name` a read task's reference calls look up by key."""
    key_values = {
        values.get(str(a).strip("{} "))
        for call in task.reference_calls
        if (c := bundle.contract(call.tool)) is not None and c.operation == "read"
        for m in c.mappings
        if m.role == "key" and (a := call.arguments.get(m.argument)) is not None
    }
    return next((r for r in task.seed_rows.get(entity_name, []) if r.get(key) in key_values), None)


def reported_values(
    task: AtomicTask, bundle: BundleView, node: int, keep: Keep | None = None
) -> list[Found]:
    """What a read task reports, valued from the fixture row it reads (its key input's row).
    `keep` drops fields an earlier node may have changed (`staleness.still_reports`)."""
    values = {i.name: i.value for i in task.inputs}
    out: list[Found] = []
    for name, (entity_name, field) in output_fields(task, bundle).items():
        try:
            entity = bundle.entities.entity(entity_name)
        except KeyError:
            continue
        row = _read_row(task, bundle, entity_name, entity.key, values)
        if row is None or (keep is not None and not keep(entity_name, row, field)):
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
    if field == found.field:
        return True
    suffix = field.split("_")[-1]
    if suffix == found.field.split("_")[-1] and suffix not in _GENERIC_SUFFIXES:
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


# ----------------------------------------------------------------------------- reference flows
#
# A read reports the keys of the objects its row references (a ticket's customer and assignee,
# an order's product); a later task on another MCP that names the same kind of object (a new
# event for an employee, an email to a customer) takes that key instead of one the user types.
# The kind of object is the field's cross-MCP identity: its link key, with a foreign key
# resolved to the field it references (ticket.customer_id -> customer.customer_id).


def identity(bundle: BundleView, entity: str, field: str) -> str | None:
    """The cross-MCP identity of `entity.field`, following a foreign key to its target."""
    try:
        e = bundle.entities.entity(entity)
        fk = e.field(field).foreign_key
    except KeyError:
        return None
    if fk:
        parent, _, pfield = fk.partition(".")
        try:
            pe = bundle.entities.entity(parent)
        except KeyError:
            return None
        return link_key(pe, pfield or pe.key)
    return link_key(e, field)


def reported_ids(
    task: AtomicTask, bundle: BundleView, node: int, keep: Keep | None = None
) -> list[tuple[str, Found]]:
    """(identity, what) for every output of a read that carries an object's key or link value,
    valued from the fixture row it reads; `keep` as in `reported_values`."""
    values = {i.name: i.value for i in task.inputs}
    out: list[tuple[str, Found]] = []
    for name, (entity_name, field) in output_fields(task, bundle).items():
        ident = identity(bundle, entity_name, field)
        if ident is None:
            continue
        try:
            entity = bundle.entities.entity(entity_name)
        except KeyError:
            continue
        row = _read_row(task, bundle, entity_name, entity.key, values)
        if row is not None and keep is not None and not keep(entity_name, row, field):
            continue
        value = row.get(field) if row is not None else None
        if isinstance(value, str) and value:
            out.append((ident, Found(node, name, field, value)))
    return out


@dataclass(frozen=True)
class Needed:
    """A given input that names an object by its key or link value."""

    input: str
    identity: str
    entity: str
    field: str
    reference: bool = False


def needed_ids(task: AtomicTask, bundle: BundleView) -> dict[str, Needed]:
    """`{input name: Needed}` for the task's inputs that name an object (a key, a reference or a
    filter on one). `reference` marks the object a new record points to (a create's reference),
    which a task can take from anywhere without changing what else it acts on."""
    creates = {
        n
        for call in task.reference_calls
        if (c := bundle.contract(call.tool)) is not None and c.operation == "create"
        for n in template_names(call.arguments)
    }
    out: dict[str, Needed] = {}
    for name, (entity, field, role) in input_fields(task, bundle).items():
        if role not in ("key", "reference", "filter"):
            continue
        try:
            ident = link_key(bundle.entities.entity(entity), field)
        except KeyError:
            continue
        if ident is not None:
            out[name] = Needed(name, ident, entity, field, role == "reference" and name in creates)
    return out


def nearest_report(
    earlier: list[tuple[str, list[tuple[str, Found]]]],
    mcp: str,
    ident: str,
    value: Any = None,
    *,
    cross_only: bool = False,
) -> Found | None:
    """The nearest earlier report of `ident` (with `value`, when given), one from another MCP
    first: a value found elsewhere is what the agent must carry across services."""
    for cross in (True,) if cross_only else (True, False):
        for other, reports in reversed(earlier):
            if (other != mcp) != cross:
                continue
            for ident_, found in reports:
                if ident_ == ident and (value is None or found.value == value):
                    return found
    return None


def reground(task: AtomicTask, bundle: BundleView, need: Needed, value: str) -> AtomicTask | None:
    """`task` about the object whose `need.field` is `value`: the input, the fixture row of the
    object (this MCP's own row for it), references to it in other fixture rows, and literal
    mentions of the old object in checks and intent. None when this MCP holds no such object or
    the old value stands for something else too (another input has it)."""
    old = next((i.value for i in task.inputs if i.name == need.input), None)
    if old == value:
        return task
    if not isinstance(old, str) or any(
        i.name != need.input and i.value == old for i in task.inputs
    ):
        return None
    rows = bundle.rows(need.entity)
    new_row = next((r for r in rows if r.get(need.field) == value), None)
    if new_row is None:
        return None
    old_row = next(
        (r for r in task.seed_rows.get(need.entity, []) if r.get(need.field) == old), None
    ) or next((r for r in rows if r.get(need.field) == old), None)
    renames = {old: value}
    for k, v in (old_row or {}).items():
        nv = new_row.get(k)
        if isinstance(v, str) and isinstance(nv, str) and v != nv and len(v) >= 3:
            renames.setdefault(v, nv)
    data = task.model_dump(
        mode="json", by_alias=True, exclude={"content_hash", "evidence", "e2e_test"}
    )
    for i in data["inputs"]:
        if i["name"] == need.input:
            i["value"] = value
    seed: dict[str, list[dict[str, Any]]] = {}
    for table, trows in data["seed_rows"].items():
        if table == need.entity:
            kept = [r for r in trows if r.get(need.field) != old]
            seed[table] = [*kept, dict(new_row)] if len(kept) < len(trows) else trows
        else:
            seed[table] = [{k: value if v == old else v for k, v in r.items()} for r in trows]
    data["seed_rows"] = seed
    for old_v, new_v in renames.items():
        data["checks"] = _replace(data["checks"], old_v, new_v)
        data["intent"] = _replace(data["intent"], old_v, new_v)
    new = AtomicTask.model_validate(data)
    return new.model_copy(update={"evidence": task.evidence})


def link_references(
    task: AtomicTask,
    bundle: BundleView,
    earlier: list[tuple[str, list[tuple[str, Found]]]],
    fixed: Collection[str] = (),
) -> tuple[AtomicTask, dict[str, Found]]:
    """The task's given inputs that name an object an earlier node reported, each with the
    report that feeds it. An input whose value an earlier node reports takes it from there; the
    object a new record points to (not one of `fixed`, the inputs aligned to the graph's bound
    object) is re-grounded on an object of its kind found on another MCP (the employee assigned
    to the ticket gets the meeting), when this MCP holds that object."""
    fed: dict[str, Found] = {}
    given = {i.name: i.value for i in task.inputs if i.source == "given"}
    for name, need in needed_ids(task, bundle).items():
        if name not in given:
            continue
        same = nearest_report(earlier, task.mcp, need.identity, given[name])
        if same is not None:
            fed[name] = same
            continue
        if not need.reference or name in fixed:
            continue
        other = nearest_report(earlier, task.mcp, need.identity, cross_only=True)
        if other is None:
            continue
        moved = reground(task, bundle, need, other.value)
        if moved is not None:
            task = moved
            given = {i.name: i.value for i in task.inputs if i.source == "given"}
            fed[name] = other
    return task, fed
