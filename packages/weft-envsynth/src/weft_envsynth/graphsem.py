"""Record-graph semantics: tool sets that keep named records, links between them and lists of
notes on them, written and read in batches (a knowledge graph of entities, relations and
observations is one such set).

The evidence is the input schemas and descriptions, never a tool name:

* a *record kind* is the item type of an array-of-objects argument of a tool that writes; its key
  is its `name` field (or the field described as "the name of the <kind>"), or, for a kind with
  no name, all its required fields when some of them are described as naming another kind's
  records (a link: "the name of the entity where the relation starts");
* an item that only names a record of another kind and carries an array of strings adds those
  strings to that record's list field (`append`), or removes them when the tool is destructive
  (`detach`);
* an array of strings described as names of a kind's records, in a destructive tool, deletes those
  records (`delete`; links to them go too when the description says their associated links go);
  an array of a kind's items in a destructive tool deletes the matching records (`delete_match`);
* a read-only tool (annotation `readOnlyHint`, or no write and a read verb) with no arguments
  reads the whole store, with one string argument searches it, with an array of names opens
  those records (with the links among them).

The runtime (`graphrt`) keeps the records in the session DB (table weft_graph_record); results
follow the documented output schema (which property carries which kind, which fields a per-item
result has, a success flag and a message).
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field

from weft_core.models import MCPSpec, ToolSpec, WeftModel
from weft_envsynth._internal import words as W
from weft_envsynth._internal.jsonschema import schema_type

GraphVerb = Literal[
    "create", "append", "delete", "delete_match", "detach", "read_all", "search", "open"
]  # fmt: skip

_READ_NAME_VERBS = W.READ_VERBS | W.SEARCH_VERBS | W.LIST_VERBS | {"open"}
_NAME_OF = re.compile(r"\bnames? of (the |an? )?(\w+)")
_KIND_NAME = re.compile(r"\b(\w+) names?\b")


class RecordKind(WeftModel):
    """One kind of record: its fields in documented order, key, list fields and links."""

    name: str = Field(description="Singular kind name, from the argument that carries its items.")
    collection: str = Field(description="The argument's own name: what a list of them is called.")
    fields: list[str]
    key: list[str] = Field(description="Fields whose values identify a record.")
    lists: list[str] = Field(default_factory=list, description="Array-of-strings fields.")
    refs: dict[str, str] = Field(default_factory=dict, description="field -> kind it names.")


class GraphSemantics(WeftModel):
    """What one tool of a record-graph tool set does."""

    verb: GraphVerb
    argument: str | None = Field(default=None, description="The argument carrying the batch.")
    kind: str | None = None
    item_ref: str | None = Field(default=None, description="Item field naming the record.")
    item_list: str | None = Field(default=None, description="Item field with the strings.")
    target_list: str | None = Field(default=None, description="Record list field they go to.")
    cascade: list[str] = Field(
        default_factory=list, description="Link kinds deleted with the records they name."
    )
    output: dict[str, Any] = Field(
        default_factory=dict, description="The documented output schema's properties."
    )


class GraphToolSet(WeftModel):
    kinds: list[RecordKind] = Field(default_factory=list)
    tools: dict[str, GraphSemantics] = Field(default_factory=dict)

    def kind(self, name: str | None) -> RecordKind | None:
        return next((k for k in self.kinds if k.name == name), None)


def _hint(tool: ToolSpec, hint: str) -> bool | None:
    ann = tool.annotations if isinstance(tool.annotations, dict) else {}
    value = ann.get(hint, ann.get(re.sub(r"([A-Z])", r"_\1", hint).lower()))
    return value if isinstance(value, bool) else None


def _read_only(tool: ToolSpec) -> bool:
    """Declared read-only, or (undeclared) a read verb and nothing to write: no argument that
    carries records and no delete verb (`open_nodes(names)` opens nothing)."""
    hint = _hint(tool, "readOnlyHint")
    if hint is not None:
        return hint
    words = set(W.split_words(tool.name))
    if not words & _READ_NAME_VERBS or words & W.DELETE_VERBS:
        return False
    writes = W.CREATE_VERBS | W.UPDATE_VERBS
    carries = any(_items(s) is not None for s in tool.properties.values())
    return not carries and (not words & writes or bool(words & {"open", "get", "read"}))


def _destructive(tool: ToolSpec) -> bool:
    hint = _hint(tool, "destructiveHint")
    words = set(W.split_words(tool.name))
    if words & W.DELETE_VERBS:
        return True
    return hint is True and not words & W.CREATE_VERBS


def _items(schema: Any) -> dict[str, Any] | None:
    """The item schema of an array of objects, or None."""
    if not isinstance(schema, dict) or schema_type(schema) != "array":
        return None
    items = schema.get("items")
    if isinstance(items, dict) and isinstance(items.get("properties"), dict):
        return items
    return None


def _is_string_array(schema: Any) -> bool:
    if not isinstance(schema, dict) or schema_type(schema) != "array":
        return False
    items = schema.get("items")
    return isinstance(items, dict) and schema_type(items) == "string"


def _names_kind(field: str, schema: Any, kinds: set[str]) -> str | None:
    """The kind whose records a string field names ("The name of the entity ...", entityName)."""
    desc = str(schema.get("description", "")).lower() if isinstance(schema, dict) else ""
    for m in _NAME_OF.finditer(desc):
        word = W.singular(m.group(2))
        if word in kinds:
            return word
    for m in _KIND_NAME.finditer(desc):  # "Source entity name"
        word = W.singular(m.group(1))
        if word in kinds:
            return word
    words = W.split_words(field)
    if len(words) == 2 and words[1] == "name" and W.singular(words[0]) in kinds:
        return W.singular(words[0])
    return None


def _candidate_kinds(spec: MCPSpec) -> list[RecordKind]:
    """Kinds from the array-of-objects arguments of writing tools; named kinds first, so that a
    link kind's fields can be read as naming them."""
    raw: dict[str, tuple[str, dict[str, Any]]] = {}
    for tool in spec.tools:
        if _read_only(tool) or _destructive(tool):
            continue
        for arg, sch in tool.properties.items():
            items = _items(sch)
            if items is not None:
                raw.setdefault(W.singular(W.split_words(arg)[-1]), (arg, items))
    named: list[RecordKind] = []
    for name, (arg, items) in raw.items():
        props = items["properties"]
        key = next((f for f in props if W.split_words(f) == ["name"]), None)
        if key is not None:
            lists = [f for f, s in props.items() if _is_string_array(s)]
            named.append(
                RecordKind(name=name, collection=arg, fields=list(props), key=[key], lists=lists)
            )
    names = {k.name for k in named}
    links: list[RecordKind] = []
    for name, (arg, items) in raw.items():
        props = items["properties"]
        if name in names:
            continue
        refs = {
            f: k
            for f, s in props.items()
            if schema_type(s) == "string" and (k := _names_kind(f, s, names))
        }
        lists = [f for f, s in props.items() if _is_string_array(s)]
        required = [f for f in items.get("required") or [] if f in props and f not in lists]
        # One reference and a list of strings is a note on a record (append), not a kind.
        if len(refs) >= 2 and required and set(refs) <= set(required):
            links.append(
                RecordKind(
                    name=name,
                    collection=arg,
                    fields=list(props),
                    key=required,
                    lists=lists,
                    refs=refs,
                )
            )
    return named + links


def _output(tool: ToolSpec) -> dict[str, Any]:
    out = tool.output_schema if isinstance(tool.output_schema, dict) else {}
    props = out.get("properties")
    return dict(props) if isinstance(props, dict) else {}


def _matches_kind(items: dict[str, Any], kind: RecordKind) -> bool:
    return set(items["properties"]) == set(kind.fields)


_GRAPH_WORDS = {"graph", "node"}


def _about_records(tool: ToolSpec, kinds: list[RecordKind]) -> bool:
    """A read is about the records when its documented output lists a kind, or its name reads
    a kind (or the graph / the nodes they form)."""
    for sch in _output(tool).values():
        items = _items(sch)
        if items is not None and any(_matches_kind(items, k) for k in kinds):
            return True
    words = W.split_words(tool.name)
    # What the name reads is its last word: `read_graph`, `search_nodes`; not `show_memory_path`.
    return bool(words) and W.singular(words[-1]) in {k.name for k in kinds} | _GRAPH_WORDS


def graph_semantics(tool: ToolSpec, kinds: list[RecordKind]) -> GraphSemantics | None:
    """The tool's verb over `kinds`, or None when its definition does not say one."""
    by_name = {k.name: k for k in kinds}
    named = {k.name for k in kinds if not k.refs}
    props = tool.properties
    out = _output(tool)
    if _read_only(tool):
        if not _about_records(tool, kinds):
            return None  # a health check or a web search reads nothing of these records
        if not tool.required:  # no argument needed (a placeholder one is no filter)
            return GraphSemantics(verb="read_all", output=out)
        if len(tool.required) != 1:
            return None
        arg = tool.required[0]
        sch = props[arg]
        if schema_type(sch) == "string" and set(W.split_words(arg)) & W.QUERY_ARGS:
            return GraphSemantics(verb="search", argument=arg, output=out)
        if _is_string_array(sch) and "names" in W.split_words(arg) + [
            W.plural(w) for w in W.split_words(str(sch.get("description", "")))
        ]:
            return GraphSemantics(verb="open", argument=arg, output=out)
        return None
    destructive = _destructive(tool)
    names = set(W.split_words(tool.name))
    if names & W.UPDATE_VERBS and not names & W.CREATE_VERBS:
        return None  # an update of existing links is not a create; the CRUD rules keep it
    for arg, sch in props.items():
        items = _items(sch)
        if items is not None:
            same = [k for k in kinds if _matches_kind(items, k)]
            kind = next((k for k in same if k.collection == arg), same[0] if same else None)
            if kind is not None:
                verb: GraphVerb = "delete_match" if destructive else "create"
                return GraphSemantics(verb=verb, argument=arg, kind=kind.name, output=out)
            iprops = items["properties"]
            refs = {f: k for f, s in iprops.items() if (k := _names_kind(f, s, named))}
            lists = [f for f, s in iprops.items() if _is_string_array(s)]
            if len(refs) == 1 and len(lists) == 1 and len(iprops) == 2:
                ref, target = next(iter(refs.items()))
                kind = by_name[target]
                listed = lists[0]
                wanted = {W.singular(w) for w in W.split_words(arg) + W.split_words(listed)}
                field = next(
                    (f for f in kind.lists if W.singular(W.split_words(f)[-1]) in wanted),
                    kind.lists[0] if len(kind.lists) == 1 else None,
                )
                if field is None:
                    return None
                return GraphSemantics(
                    verb="detach" if destructive else "append", argument=arg, kind=target,
                    item_ref=ref, item_list=listed, target_list=field, output=out,
                )  # fmt: skip
        elif destructive and _is_string_array(sch):
            desc = f"{arg} {sch.get('description', '')}"
            words = {W.singular(w) for w in W.split_words(desc)}
            named_kind = next((k for k in named if k in words), None)
            if named_kind is None or "name" not in words:
                continue
            target = named_kind
            text = tool.description.lower()
            cascade = [
                k.name
                for k in kinds
                if target in k.refs.values()
                and re.search(rf"\b({k.name}|{W.plural(k.name)})\b", text)
            ]
            return GraphSemantics(
                verb="delete", argument=arg, kind=target, cascade=cascade, output=out
            )
    return None


def graph_tool_set(spec: MCPSpec) -> GraphToolSet:
    """The record-graph tools of `spec`: empty unless a named kind is created by one tool and
    read back by another, with at least three tools recognised."""
    kinds = _candidate_kinds(spec)
    if not any(not k.refs for k in kinds):
        return GraphToolSet()
    tools = {t.name: s for t in spec.tools if (s := graph_semantics(t, kinds))}
    verbs = {s.verb for s in tools.values()}
    if "create" not in verbs or not verbs & {"read_all", "search", "open"} or len(tools) < 3:
        return GraphToolSet()
    return GraphToolSet(kinds=kinds, tools=tools)


def confirmation(tool: ToolSpec) -> str:
    """The message a write confirms itself with, from its name: `delete_entities` -> "Entities
    deleted successfully" (the verb in the past tense, what it acted on)."""
    words = W.split_words(tool.name)
    writes = W.CREATE_VERBS | W.UPDATE_VERBS | W.DELETE_VERBS | {"add"}
    verb = next((w for w in words if w in writes), words[0] if words else "update")
    noun = " ".join(w for w in words if w != verb) or "request"
    return f"{noun.capitalize()} {W.past(verb)} successfully"
