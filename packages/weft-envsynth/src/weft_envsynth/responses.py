"""The documented response of each tool, as the bundle's results are shaped after it.

A tool's definition may document what it returns (`outputSchema`, `output_schema`, BFCL's
`response`). The loader keeps it; this module reads it for the runtime (`shapert`): the schema
with its `$ref`s into `$defs` / `definitions` inlined (a reference to a type the definition does
not define reads as "any value", reported in one line naming the tool and the reference; a
recursive one is cut after a few levels), the record kind and key the tool's route reads or
writes (so `id` finds the key), whether the tool writes (a write's boolean status is true, its
message the confirmation its description implies) and that message.

The runtime then fills every documented field from what the call touched, never from nothing;
see `_templates/shapert.py` for the matching rules.
"""

from __future__ import annotations

from typing import Any

from weft_core.models import EntityModel, MCPSpec, ToolSpec
from weft_envsynth._internal import words as W
from weft_envsynth.gloss import write_confirmation
from weft_envsynth.graphsem import confirmation
from weft_envsynth.plans import RoutePlan

_WRITES = {"create", "update", "delete", "action", "file_write", "file_delete"}
_MAX_DEPTH = 8
_MAX_NODES = 2000


class _Resolver:
    def __init__(self, root: dict[str, Any], tool: str) -> None:
        self.defs: dict[str, Any] = {}
        for key in ("$defs", "definitions"):
            block = root.get(key)
            if isinstance(block, dict):
                self.defs.update({f"#/{key}/{k}": v for k, v in block.items()})
        self.tool = tool
        self.notes: list[str] = []
        self.nodes = 0

    def resolve(self, node: Any, depth: int, seen: tuple[str, ...]) -> Any:
        self.nodes += 1
        if depth > _MAX_DEPTH or self.nodes > _MAX_NODES:
            return {}
        if isinstance(node, list):
            return [self.resolve(v, depth + 1, seen) for v in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str):
            target = self.defs.get(ref)
            if target is None:
                self.notes.append(
                    f"{self.tool}: documented response refers to undefined type {ref!r}; "
                    "that part is left untyped"
                )
                return {}
            if seen.count(ref) >= 2:
                return {}  # recursive type: cut
            rest = {k: v for k, v in node.items() if k != "$ref"}
            merged = {**target, **rest} if isinstance(target, dict) else rest
            return self.resolve(merged, depth + 1, (*seen, ref))
        return {
            k: self.resolve(v, depth + 1, seen)
            for k, v in node.items()
            if k not in {"$defs", "definitions"}
        }


def resolve_response(tool: ToolSpec) -> tuple[dict[str, Any] | None, list[str]]:
    """The tool's documented response with references inlined, and one note per undefined one."""
    out = tool.output_schema
    if not isinstance(out, dict) or not out:
        return None, []
    r = _Resolver(out, tool.name)
    resolved = r.resolve(out, 0, ())
    return (resolved if isinstance(resolved, dict) else None), r.notes


def response_shape(
    tool: ToolSpec, route: RoutePlan, model: EntityModel, spec_tools: list[ToolSpec]
) -> dict[str, Any] | None:
    """What the runtime needs to shape `tool`'s results; None when it documents no response.
    `spec_tools` are the tool set's tools (their arguments say which fields callers name)."""
    schema, _notes = resolve_response(tool)
    if schema is None:
        return None
    key, key_named = "", False
    labels: list[str] = []
    if route.entity:
        try:
            entity = model.entity(route.entity)
        except KeyError:
            entity = None
        if entity is not None:
            # Fields a caller names in arguments (`stock` of add_to_watchlist) say what a record
            # is to the caller; a key no argument names was made up by the bundle (`WAT-0001`).
            named = {W.identifier(a) for t in spec_tools for a in t.properties}
            key = entity.key
            key_named = key in named
            labels = [f.name for f in entity.fields if f.name != key and f.name in named]
    write = route.operation in _WRITES or bool(
        (route.sql_verb and route.sql_verb in {"write", "create"})
        or (route.graph_verb and route.graph_verb not in {"read_all", "search", "open"})
    )
    return {
        "schema": schema,
        "entity": route.entity or "",
        "key": key,
        "key_named": key_named,
        "labels": labels,
        "write": write,
        "message": (write_confirmation(tool) or confirmation(tool)) if write else "",
    }


def documents_records(tool: ToolSpec) -> bool:
    """The documented response lists records (an array, or an object with an array property):
    a read of it answers every record matching its arguments, not the first one."""
    schema, _notes = resolve_response(tool)
    if not isinstance(schema, dict):
        return False
    if schema.get("type") == "array":
        return True
    props = schema.get("properties")
    return isinstance(props, dict) and any(
        isinstance(p, dict) and p.get("type") == "array" for p in props.values()
    )


def response_notes(spec: MCPSpec) -> list[str]:
    """One line per documented response that refers to a type it does not define."""
    notes: list[str] = []
    for tool in spec.tools:
        notes += resolve_response(tool)[1]
    return notes
