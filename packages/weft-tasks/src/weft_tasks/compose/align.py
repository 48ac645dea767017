"""Re-grounding atomic tasks on the bound object: inputs that name it take the binding's values,
and the fixture rows they find are renamed to match, in the aligned node and in the sibling nodes
of its MCP that seed the same row."""

from __future__ import annotations

from typing import Any

from weft_core.models import AtomicTask, Entity, EntityBinding
from weft_tasks.atomic.bundle import BundleView
from weft_tasks.atomic.execution import template_names
from weft_tasks.compose.links import input_fields
from weft_tasks.grounding.identity import link_key


def entity_of(bundle: BundleView, name: str) -> Entity | None:
    try:
        return bundle.entities.entity(name)
    except KeyError:
        return None


def binding_key(bundle: BundleView, entity: str, field: str) -> str | None:
    e = entity_of(bundle, entity)
    if e is None:
        return None
    if field == "name" or field.endswith("_name"):
        return "name"
    k = link_key(e, field)
    return k.split(".")[-1] if k else None


def is_unique(bundle: BundleView, entity: str, field: str) -> bool:
    e = entity_of(bundle, entity)
    if e is None:
        return False
    try:
        f = e.field(field)
    except KeyError:
        return False
    return f.unique or f.primary_key or field == e.key


def _deep_replace(value: Any, renames: dict[str, str]) -> Any:
    if isinstance(value, str):
        return renames.get(value, value)
    if isinstance(value, dict):
        return {k: _deep_replace(v, renames) for k, v in value.items()}
    if isinstance(value, list):
        return [_deep_replace(v, renames) for v in value]
    return value


def align_task(
    task: AtomicTask, bundle: BundleView, binding: EntityBinding | None, anchors: dict[str, Any]
) -> tuple[AtomicTask, dict[str, str]]:
    """The task re-grounded on the bound object: inputs that look the object up (or name it in a
    non-unique field of a new record) take the binding's values, and the fixture row they find
    is renamed to match, so checks keep their meaning. Returns the task and the inputs aligned
    (input -> 'binding.key'). `anchors` pins one fixture row per (MCP, table)."""
    if binding is None or task.mcp not in binding.refs:
        return task, {}
    table = binding.refs[task.mcp]
    ent = entity_of(bundle, table)
    if ent is None:
        return task, {}
    rows = task.seed_rows.get(table, [])
    row_key = rows[0].get(ent.key) if rows else None
    anchor = anchors.get(f"{task.mcp}.{table}")
    if rows and anchor is not None and row_key != anchor:
        return task, {}  # about another object of that table: stays independent
    renames: dict[str, str] = {}
    aligned: dict[str, str] = {}
    # values an update sets are new values by definition, never the bound object's own
    changed = {
        n
        for call in task.reference_calls
        if (c := bundle.contract(call.tool)) is not None and c.operation in ("update", "action")
        for n in template_names(call.arguments)
    }
    for name, (entity, field, role) in input_fields(task, bundle).items():
        if entity != table:
            continue
        key = binding_key(bundle, entity, field)
        if key is None or key not in binding.value:
            continue
        unique = is_unique(bundle, entity, field)
        if role == "reference" and name in changed:
            continue  # re-pointing a reference: the new target is not the bound object
        if role == "value" and (unique or key == "name" or name in changed):
            continue  # a second object with the bound unique key would collide; names are not identity
        old = next((i.value for i in task.inputs if i.name == name), None)
        new = binding.value[key]
        if isinstance(old, str) and isinstance(new, str) and old != new:
            renames[old] = new
        aligned[name] = f"{binding.name}.{key}"
    if not aligned:
        return task, {}
    if rows:
        row = rows[0]
        anchors.setdefault(f"{task.mcp}.{table}", row_key)
        for f in ent.fields:
            key = binding_key(bundle, table, f.name)
            old = row.get(f.name)
            new = binding.value.get(key or "")
            if isinstance(old, str) and isinstance(new, str) and old != new:
                renames[old] = new
    return _renamed(task, renames), aligned


def _renamed(task: AtomicTask, renames: dict[str, str]) -> AtomicTask:
    data = task.model_dump(
        mode="json", by_alias=True, exclude={"content_hash", "evidence", "e2e_test"}
    )
    for k in ("inputs", "checks", "seed_rows", "intent"):
        data[k] = _deep_replace(data[k], renames)
    new_task = AtomicTask.model_validate(data)
    return new_task.model_copy(update={"evidence": task.evidence})


def share_renames(
    chosen: list[AtomicTask],
    aligned: list[tuple[AtomicTask, dict[str, str]]],
    bundles: dict[str, BundleView],
    binding: EntityBinding | None,
) -> list[tuple[AtomicTask, dict[str, str]]]:
    """A fixture row renamed onto the bound object is renamed alike in the nodes of its MCP
    that seed the same row without using the binding: they name the same object, and left
    apart the initial DB would need that object under two keys (one unique email, two ids),
    which it cannot hold."""
    if binding is None:
        return aligned
    renamed: dict[tuple[str, str, Any], dict[str, str]] = {}  # (MCP, table, old key) -> renames
    for raw, (task, inputs) in zip(chosen, aligned, strict=True):
        table = binding.refs.get(raw.mcp, "")
        ent = entity_of(bundles[raw.mcp], table)
        before, after = raw.seed_rows.get(table, []), task.seed_rows.get(table, [])
        if not inputs or ent is None or not before or not after:
            continue
        renames = {
            old: new
            for f in ent.fields
            if isinstance(old := before[0].get(f.name), str)
            and isinstance(new := after[0].get(f.name), str)
            and old != new
        }
        if renames:
            renamed.setdefault((raw.mcp, table, before[0].get(ent.key)), renames)
    if not renamed:
        return aligned
    out: list[tuple[AtomicTask, dict[str, str]]] = []
    for task, inputs in aligned:
        shared: dict[str, str] = {}
        for table, rows in task.seed_rows.items() if not inputs else ():
            sibling = entity_of(bundles[task.mcp], table)
            if sibling is None:
                continue
            for row in rows:
                shared |= renamed.get((task.mcp, table, row.get(sibling.key)), {})
        out.append((_renamed(task, shared) if shared else task, inputs))
    return out
