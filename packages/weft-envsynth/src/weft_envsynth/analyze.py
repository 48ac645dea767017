"""Node 1, analyze: shared entities, relations and each tool's effects from the complete tool set.

Programmatic strategy: verbs and nouns in tool names, argument names and JSON types, `*_id`
references between tools. LLM strategy: the chat model returns an `Analysis` (structured output),
which is checked against the spec and repaired from the programmatic result where it is wrong.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from langchain_core.language_models import BaseChatModel

from weft_core.models import (
    Entity,
    EntityField,
    EntityModel,
    MCPSpec,
    Relation,
    StateKind,
    ToolSpec,
)
from weft_core.models.env import Operation
from weft_envsynth import examples as X
from weft_envsynth import lifecycle
from weft_envsynth._internal import words as W
from weft_envsynth._internal.jsonschema import field_type, schema_type, string_enum
from weft_envsynth.amounts import (
    CREDIT_ROLES,
    DEBIT_ROLES,
    MONEY_NOUNS,
    MOVE_RECORD,
    MOVE_VERBS,
    amount_argument,
    move_verb,
)
from weft_envsynth.analysischecks import WRITE_OPS as _WRITE_OPS
from weft_envsynth.analysischecks import check_analysis
from weft_envsynth.bindings import ToolBindings, graph_tools, sql_tools, vcs_tools
from weft_envsynth.computesem import compute_semantics
from weft_envsynth.errors import SpecRejected
from weft_envsynth.filesem import OPERATION as FILE_OPERATION
from weft_envsynth.filesem import FileSemantics, file_semantics, mentions_files
from weft_envsynth.gloss import glossed_write
from weft_envsynth.plans import Analysis, ToolEffect
from weft_envsynth.unify import argument_reference, resolve

_FILE_VERBS: dict[str, Operation] = {
    "read": "file_read",
    "get": "file_read",
    "cat": "file_read",
    "view": "file_read",
    "open": "file_read",
    "show": "file_read",
    "fetch": "file_read",
    "load": "file_read",
    "download": "file_read",
    "write": "file_write",
    "create": "file_write",
    "save": "file_write",
    "append": "file_write",
    "edit": "file_write",
    "update": "file_write",
    "put": "file_write",
    "upload": "file_write",
    "move": "file_write",
    "copy": "file_write",
    "rename": "file_write",
    "make": "file_write",
    "mkdir": "file_write",
    "list": "file_list",
    "ls": "file_list",
    "tree": "file_list",
    "browse": "file_list",
    "search": "file_list",
    "find": "file_list",
    "glob": "file_list",
    "delete": "file_delete",
    "remove": "file_delete",
    "rm": "file_delete",
    "unlink": "file_delete",
}
_PEOPLE = {
    "customer",
    "employee",
    "user",
    "contact",
    "person",
    "member",
    "patient",
    "student",
    "agent",
    "client",
    "candidate",
    "attendee",
    "owner",
    "assignee",
    "author",
}
_TABLE_RESERVED = {"alembic_version", "sqlite_master", "sqlite_sequence", "workspace"}


def id_argument_entity(arg: str, schema: Any = None) -> str | None:
    """'customer_id' / 'customerId' -> 'customer'; None for other names and for ids that are not
    strings or numbers (a boolean 'include_id' is a flag, not a reference)."""
    ws = W.split_words(arg)
    if len(ws) >= 2 and ws[-1] == "id":
        if schema is not None and schema_type(schema) not in {None, "string", "integer", "number"}:
            return None
        if string_enum(
            schema
        ):  # 'languageId' with a fixed set of values is a category, not a reference
            return None
        return "_".join(W.singular(w) for w in ws[:-1])
    return None


def _id_is_integer(schema: Any) -> bool:
    return schema_type(schema) in {"integer", "number"}


def _norm_arg(arg: str) -> str:
    ident = W.identifier(arg)
    # `initial_balance` of an opening call is the balance later calls move (amounts.py).
    for prefix in ("initial_", "opening_", "starting_", "start_"):
        if ident.startswith(prefix) and "balance" in ident[len(prefix) :].split("_"):
            return ident[len(prefix) :]
    for prefix in ("new_", "updated_"):
        if ident.startswith(prefix) and len(ident) > len(prefix):
            rest = ident[len(prefix) :]
            # 'new_str' must not become 'str' (a name the generated code needs)
            return rest if W.identifier(rest) == rest else ident
    return ident


def _is_file_tool(tool: ToolSpec, words: list[str]) -> bool:
    """A tool on workspace files: a file noun plus a path-like argument (or no arguments at all);
    'update_folder(folder_id)' of a document API is a database tool, not a file tool."""
    props = {W.identifier(a) for a in tool.properties}
    pathish = bool(props & W.PATH_ARGS)
    # `read_multiple_files(paths: string[])`: an array of paths is path-like for a reading tool.
    if not pathish and words[:1] and words[0] in W.READ_VERBS:
        pathish = any(
            schema_type(s) == "array" and W.singular(W.identifier(a)) in W.PATH_ARGS
            for a, s in tool.properties.items()
        )
    if any(id_argument_entity(a, sc) for a, sc in tool.properties.items()) and not pathish:
        return False
    if any(w in _FILE_NOUNS for w in words):
        return pathish or not props or props <= W.CONTENT_ARGS | W.OPTION_ARGS
    return bool(props & {"path", "file_path", "filepath"}) and any(
        w in _FILE_VERBS for w in words[:1]
    )


_FILE_NOUNS = {"file", "files", "directory", "directories", "folder", "folders", "dir", "mkdir"}


def annotation(tool: ToolSpec, hint: str) -> bool | None:
    """An MCP annotation hint (`readOnlyHint`, or its snake_case form) as the server declared it;
    None when absent or not a boolean (a hostile `"readOnlyHint": "yes"` decides nothing)."""
    ann = tool.annotations if isinstance(tool.annotations, dict) else {}
    value = ann.get(hint, ann.get(re.sub(r"([A-Z])", r"_\1", hint).lower()))
    return value if isinstance(value, bool) else None


def idempotent_delete(tool: ToolSpec, operation: str) -> bool:
    """A delete the server declares idempotent: deleting what is already gone succeeds."""
    return operation in {"delete", "file_delete"} and annotation(tool, "idempotentHint") is True


# Nouns that name a whole store rather than one kind of row (`read_graph`, `dump_memory`).
_STORE_NOUNS = {"graph", "store", "memory", "database", "db", "state", "snapshot", "everything"}


def whole_store_read(
    tool: ToolSpec, operation: str, entity: str | None, model: EntityModel
) -> list[str]:
    """The entities a tool reads when it reads the whole store: an argument-free read whose noun
    names a store, over an entity nothing writes, in a tool set that writes other entities (the
    memory server's `read_graph` returns its entities and relations). Empty otherwise."""
    if operation not in {"read", "list", "search", "compute"} or tool.required:
        return []
    if not set(W.split_words(tool.name)) & _STORE_NOUNS:
        return []
    ent = next((e for e in model.entities if e.name == entity), None)
    if ent is None or not ent.reference_data:
        return []
    return [e.name for e in model.entities if not e.reference_data]


def classify_operation(tool: ToolSpec) -> tuple[Operation, str | None]:
    """The tool's operation and the verb that decided it (None when none was found).

    A tool the server annotates `readOnlyHint: true` is never a write, whatever its name's verb
    says (`open_nodes` opens nothing): it reads one row by its key, lists, or searches."""
    op, verb = _classify_by_words(tool)
    if annotation(tool, "readOnlyHint") is True and op in _WRITE_OPS | {
        "file_write",
        "file_delete",
    }:
        if op.startswith("file_"):
            return "file_read", verb
        props = {W.identifier(a) for a in tool.properties}
        if props & W.QUERY_ARGS:
            return "search", verb
        return ("read" if tool.required else "list"), verb
    return op, verb


def _classify_by_words(tool: ToolSpec) -> tuple[Operation, str | None]:
    words = W.split_words(tool.name)
    if _is_file_tool(tool, words):
        for w in words:
            if w in _FILE_VERBS:
                return _FILE_VERBS[w], w
        return "file_read", None
    scan = words[:1] + words[1:]
    for w in scan:
        if w in W.TRANSITION_VERBS and w not in {
            "start",
            "return",
            "send",
            "hold",
            "release",
            "restore",
        }:
            return "action", w
        if w in W.CREATE_VERBS:
            return "create", w
        if w in W.DELETE_VERBS:
            return "delete", w
        if w in W.UPDATE_VERBS:
            return "update", w
        if w in W.LIST_VERBS:
            return "list", w
        if w in W.SEARCH_VERBS:
            return "search", w
        if w in W.READ_VERBS:
            return "read", w
        if w in W.TRANSITION_VERBS:
            return "action", w
    # A name verb no list knows, glossed by a description whose write verb acts on what the name
    # names (`append_insight`: "Add a business insight to the memo").
    glossed = glossed_write(tool, words)
    if glossed is not None:
        return glossed
    # No verb in the name: the description's leading verb ("Retrieves ...", "Searches ...") decides
    # between the read-only operations; writes are never inferred from prose alone.
    for w in W.split_words(" ".join(tool.description.split()[:4])):
        v = W.singular(w)
        if v in W.SEARCH_VERBS:
            return "search", None
        if v in W.LIST_VERBS:
            return "list", None
        if v in W.READ_VERBS:
            return "read", None
    props = {W.identifier(a) for a in tool.properties}
    if props & W.QUERY_ARGS:
        return "search", None
    if any(id_argument_entity(a, sc) for a, sc in tool.properties.items()) or "id" in props:
        return "read", None
    return "compute", None


def _noun_words(tool: ToolSpec, verb: str | None, server_words: set[str]) -> list[str]:
    """The nouns of a tool's name. A word of the server's name is a prefix to drop
    (`github_create_issue`) only when another noun remains: `list_notes` in a server named
    "notes" lists the notes (its only noun), it is not a tool about nothing."""
    out: list[str] = []
    dropped: list[str] = []
    for w in W.split_words(tool.name):
        if w == verb or w in W.STOP_NOUNS or w.isdigit():
            continue
        if w in server_words:
            dropped.append(w)
            continue
        if (
            w
            in W.CREATE_VERBS
            | W.READ_VERBS
            | W.LIST_VERBS
            | W.SEARCH_VERBS
            | W.UPDATE_VERBS
            | W.DELETE_VERBS
        ):
            continue
        out.append(W.singular(w))
    if not out:
        out = [
            W.singular(w)
            for w in dropped
            if w not in W.CREATE_VERBS | W.READ_VERBS | W.LIST_VERBS | W.SEARCH_VERBS
        ]
    return out


def _entity_name(raw: str) -> str:
    name = W.identifier(raw, prefix="e")
    if name in _TABLE_RESERVED or name.startswith("sqlite"):
        name = f"{name}_entity"
    return name[:48]


class _EntityDraft:
    def __init__(self, name: str) -> None:
        self.name = name
        self.key: str | None = None
        self.key_type: str = "string"
        self.key_examples: list[Any] = []  # what the entity's own id arguments give as examples
        self.fields: dict[str, EntityField] = {}
        self.written = False
        self.tools: list[str] = []
        self.description = ""

    def add_field(self, name: str, schema: Any, *, description: str = "", more: Any = ()) -> None:
        ftype, enum = field_type(schema), string_enum(schema)
        found = [*X.schema_values(schema), *X.text_values(description), *more]
        if name in self.fields:
            existing = self.fields[name]
            if existing.type != ftype and ftype != "json":
                # Tools disagree about the type: keep the wider one so every tool's values fit.
                widened = "number" if {existing.type, ftype} == {"integer", "number"} else "string"
                if existing.type == "json":
                    widened = "json"
                self.fields[name] = existing.model_copy(update={"type": widened, "enum": None})
            elif enum and existing.enum:
                merged = list(dict.fromkeys(existing.enum + enum))
                self.fields[name] = existing.model_copy(update={"enum": merged})
            self.fields[name] = X.merged(self.fields[name], found)
            return
        enum = enum if ftype == "string" else None
        field = EntityField(name=name, type=ftype, description=description[:200], enum=enum)
        self.fields[name] = X.merged(field, found)


_MAX_RESPONSE_FIELDS = 24


def _response_fields(d: _EntityDraft, tool: ToolSpec) -> None:
    """Scalar fields of the documented response are fields of the entity the tool returns (what a
    real `get_stock_info` answers, `price`, `volume`, becomes stored state the seed and an imported
    state fill). A response that wraps its data in one object or a list of objects is unwrapped
    once; nested structures and malformed schemas add nothing."""
    out = tool.output_schema
    props = out.get("properties") if isinstance(out, dict) else None
    if not isinstance(props, dict):
        return
    if len(props) == 1:
        only = next(iter(props.values()))
        inner = (
            only.get("items") if isinstance(only, dict) and schema_type(only) == "array" else only
        )
        if isinstance(inner, dict) and isinstance(inner.get("properties"), dict):
            props = inner["properties"]
    added = 0
    for name, schema in props.items():
        if added >= _MAX_RESPONSE_FIELDS or not isinstance(schema, dict):
            break
        if schema_type(schema) not in {"string", "integer", "number", "boolean"}:
            continue
        norm = _norm_arg(str(name))
        if norm in d.fields or norm == d.key or norm in {"id", "status_code", "error", "message"}:
            continue
        d.add_field(norm, schema, description=str(schema.get("description", "")))
        added += 1


def _amount_movers(
    spec: MCPSpec, ops: dict[str, tuple[Operation, str | None]], bindings: ToolBindings | None
) -> dict[str, str]:
    """Tools that move an amount between records (amounts.py), by their verb; their operation
    becomes a write: one record named -> an update of its balance (`withdraw(account_id,
    amount)`), two or more -> a record of the movement (`transfer(from_account_id,
    to_account_id, amount)` creates a transfer). Tools other semantics claimed stay as they are."""
    out: dict[str, str] = {}
    claimed: set[str] | None = None
    for t in spec.tools:
        verb = move_verb(t)
        op = ops[t.name][0]
        if verb is None or op.startswith("file_") or compute_semantics(t) is not None:
            continue
        if claimed is None:
            claimed = set(sql_tools(spec, bindings)) | set(vcs_tools(spec, bindings))
            claimed |= set(graph_tools(spec, bindings).tools)
        if t.name in claimed:
            continue
        ids = [a for a, sc in t.properties.items() if id_argument_entity(a, sc)]
        if not ids:
            continue
        if len(ids) >= 2 and op in {"update", "read", "search", "list", "compute"}:
            ops[t.name] = ("create", verb)
        elif len(ids) == 1 and op in {"read", "search", "list", "compute"}:
            ops[t.name] = ("update", verb)
        out[t.name] = verb
    return out


def analyze_programmatic(spec: MCPSpec, bindings: ToolBindings | None = None) -> Analysis:
    """Infer entities, relations and tool effects from names, descriptions and argument schemas;
    `bindings`: the specialised tools a model bound (None: the rules', bindings.py)."""
    if not spec.tools:
        raise SpecRejected("the spec has no tools", source=spec.source)
    server_words = {w for w in W.split_words(spec.name) if len(w) > 2}
    server_words -= {"file", "files", "order", "orders"}
    ops: dict[str, tuple[Operation, str | None]] = {
        t.name: classify_operation(t) for t in spec.tools
    }
    # A recognisable computation (add(a, b), mean(numbers)) is not a create or a lookup.
    for t in spec.tools:
        if compute_semantics(t) is not None:
            ops[t.name] = ("compute", None)
    # SQL tool sets (a statement argument, table listings): served on the session's own tables.
    for name in sql_tools(spec, bindings):
        ops[name] = ("compute", None)
    # File-oriented tool sets (cd, ls, cat, mv, ...): the whole definition decides, not a CRUD verb.
    for name, sem in file_tool_set(spec, bindings).items():
        ops[name] = (FILE_OPERATION[sem.verb], sem.verb)  # type: ignore[assignment]
    # Version-control tool sets (status, add, commit, log, branches over a repository path): the
    # session repository, whatever file or CRUD verb a single tool's words suggest (`git_add`).
    for name in vcs_tools(spec, bindings):
        ops[name] = ("compute", None)
    # Record-graph tool sets (batches of named records, links, notes on them): the session's
    # records, whatever CRUD verb a single tool's words suggest (`open_nodes`, `add_observations`).
    for name in graph_tools(spec, bindings).tools:
        ops[name] = ("compute", None)
    movers = _amount_movers(spec, ops, bindings)

    # Entity candidates: every `*_id` argument and the head noun of every tool that writes.
    id_entities: Counter[str] = Counter()
    for t in spec.tools:
        for arg, sch in t.properties.items():
            ent = id_argument_entity(arg, sch)
            if ent:
                id_entities[_entity_name(ent)] += 1
    noun_of: dict[str, list[str]] = {}
    write_nouns: set[str] = set()
    for t in spec.tools:
        op, verb = ops[t.name]
        nouns = _noun_words(t, verb, server_words)
        if t.name in movers:
            # `withdraw_funds(account_id, amount)` acts on the account; the funds are the amount.
            nouns = [n for n in nouns if n not in MONEY_NOUNS and n not in MOVE_VERBS]
            if not nouns and op == "create":
                nouns = [MOVE_RECORD[movers[t.name]]]
        noun_of[t.name] = nouns
        if op in _WRITE_OPS and nouns:
            write_nouns.add(_entity_name("_".join(nouns[-2:])))
            write_nouns.add(_entity_name(nouns[-1]))
    candidates = set(id_entities) | write_nouns

    drafts: dict[str, _EntityDraft] = {}
    tool_entity: dict[str, str | None] = {}
    pending: dict[str, str] = {}  # tools known only by the id they require
    for t in spec.tools:
        op, _verb = ops[t.name]
        if op.startswith("file_"):
            tool_entity[t.name] = None
            continue
        nouns = noun_of[t.name]
        chosen: str | None = None
        phrases = ["_".join(nouns[i:]) for i in range(len(nouns))] + ["_".join(nouns[:1])]
        for p in phrases:
            if p and _entity_name(p) in candidates:
                chosen = _entity_name(p)
                break
        if chosen is None:
            # A multi-word entity inside the name (`get_credit_card_balance`: credit_card) before
            # one of its words (`card`).
            inner = [
                "_".join(nouns[i:j])
                for i in range(len(nouns))
                for j in range(len(nouns), i + 1, -1)
            ]
            chosen = next((_entity_name(p) for p in inner if _entity_name(p) in candidates), None)
        if chosen is None:
            for n in reversed(nouns):
                if _entity_name(n) in candidates:
                    chosen = _entity_name(n)
                    break
        own_ids = [
            id_argument_entity(a, t.properties.get(a))
            for a in t.required
            if id_argument_entity(a, t.properties.get(a))
        ]
        if chosen is None and own_ids and op in {"read", "update", "delete", "action"}:
            pending[t.name] = own_ids[-1] or ""  # resolved once the real entities are known
            continue
        if chosen is None:
            chosen = _entity_name("_".join(nouns[-2:]) if nouns else t.name)
        tool_entity[t.name] = chosen
    # Entity unification: an id-like argument refers to the entity of the tool set its
    # definition names (`receiver_id` "User ID of the user" -> user), not a table of its own.
    real = {e for e in tool_entity.values() if e is not None}
    kept = {e for n, e in tool_entity.items() if e is not None and ops[n][0] in _WRITE_OPS}
    ref_of: dict[tuple[str, str], str] = {}
    for t in spec.tools:
        for arg, sch in t.properties.items():
            stem = id_argument_entity(arg, sch)
            desc = str(sch.get("description", "")) if isinstance(sch, dict) else ""
            if stem:
                ref_of[(t.name, arg)] = _entity_name(
                    resolve(_entity_name(stem), desc, real, kept) or stem
                )
            elif (other := argument_reference(arg, sch, real)) is not None:
                ref_of[(t.name, arg)] = other
    for name, stem in pending.items():
        tool = spec.tool(name)
        arg = next(
            a for a in reversed(tool.required) if id_argument_entity(a, tool.properties.get(a))
        )
        tool_entity[name] = ref_of.get((name, arg), _entity_name(stem))
    for t in spec.tools:
        chosen = tool_entity[t.name]
        if chosen is None:
            continue
        drafts.setdefault(chosen, _EntityDraft(chosen)).tools.append(t.name)
        if ops[t.name][0] in _WRITE_OPS:
            drafts[chosen].written = True

    # Fields, keys and references.
    referenced: dict[str, str] = {}  # entity -> key type
    field_ref: dict[tuple[str, str], str] = {}  # (entity, field) -> entity it references
    key_typed: set[str] = set()  # entities whose key type an argument of their own gives
    for t in spec.tools:
        ent = tool_entity[t.name]
        if ent is None:
            continue
        d = drafts[ent]
        op = ops[t.name][0]
        for arg, schema in t.properties.items():
            norm = _norm_arg(arg)
            if norm in W.OPTION_ARGS and op in {"list", "search", "compute", "read"}:
                continue
            if t.name in movers and op in {"update", "action"} and arg == amount_argument(t):
                continue  # moved onto the record's balance, not stored as a field of it
            if norm in W.QUERY_ARGS and op in {"search", "list", "compute"}:
                continue
            raw = id_argument_entity(arg, schema)
            # `card_id` of a tool about credit cards is the credit card's key (unify.resolve).
            own = raw is not None and ref_of.get((t.name, arg)) == ent
            if norm == "id" or own or (raw is not None and _entity_name(raw) == ent):
                if d.key is None:
                    d.key = "id" if norm == "id" else f"{ent}_id"
                if _id_is_integer(schema):
                    d.key_type = "integer"
                d.key_examples += X.argument_values(t, arg)
                key_typed.add(ent)
                continue
            target = ref_of.get((t.name, arg))
            # A reference to the tool's own entity (`card_number` of a credit card) is a field.
            if target is not None and (target == ent or ent.endswith("_" + target)):
                target = None
            if target is not None:
                referenced.setdefault(
                    target, "integer" if schema_type(schema) == "integer" else "string"
                )
                field_ref[(ent, norm)] = target
            desc = schema.get("description", "") if isinstance(schema, dict) else ""
            d.add_field(norm, schema, description=str(desc), more=X.mentioned(t, arg))
        if not d.description:
            d.description = t.description[:200]
        if op in {"read", "list", "search", "compute", "create", "update", "action"}:
            _response_fields(d, t)

    for tname, ktype in referenced.items():
        if tname in drafts:
            continue
        ref = _EntityDraft(tname)
        ref.key, ref.key_type = f"{tname}_id", ktype
        ref.add_field("name", {"type": "string"})
        if tname in _PEOPLE or tname.split("_")[-1] in _PEOPLE:
            ref.add_field("email", {"type": "string"})
        ref.description = f"A {tname.replace('_', ' ')} referenced by id."
        drafts[tname] = ref
    # A record a money-moving tool debits or credits keeps a balance (the amount lands there).
    for name, verb in movers.items():
        tool = spec.tool(name)
        ent = tool_entity[name]
        for arg, sch in tool.properties.items():
            target = ref_of.get((name, arg))
            raw = id_argument_entity(arg, sch)
            if raw is not None and _entity_name(raw) == ent:
                target = ent
            if target is None or target not in drafts:
                continue
            directed = MOVE_VERBS[verb] or set(W.split_words(arg)) & (DEBIT_ROLES | CREDIT_ROLES)
            has_balance = any(
                "balance" in W.split_words(f) or f in {"funds", "credits", "points", "wallet"}
                for f in drafts[target].fields
            )
            if directed and not has_balance and ops[name][0] in {"create", "update", "action"}:
                drafts[target].add_field(
                    "balance", {"type": "number"}, description="Balance the amounts move."
                )

    # Status transitions of `action` tools, with the states each may leave.
    transitions = lifecycle.status_transitions(
        spec, ops, tool_entity, {n: d.fields for n, d in drafts.items()}
    )

    # A reference holds its entity's key. A key no argument of its own types takes the type of
    # the numbers that reference it (`chapter_no` -> an integer chapter key); a key typed by the
    # entity's own tools that the reference cannot hold (`appId` "Bundle ID" beside a numeric
    # app `id`) means some other identifier: no reference.
    not_refs: set[tuple[str, str]] = set()
    for (ent, fname), target in field_ref.items():
        f_ref = drafts[ent].fields.get(fname)
        if f_ref is None or target not in drafts:
            continue
        numeric = f_ref.type in {"integer", "number"}
        if numeric == (drafts[target].key_type == "integer"):
            continue
        if target not in key_typed and f_ref.type == "integer" and not drafts[target].written:
            drafts[target].key_type = "integer"
            key_typed.add(target)
        else:
            not_refs.add((ent, fname))
    entities: list[Entity] = []
    relations: list[Relation] = []
    for d in drafts.values():
        key = d.key or ("id" if not d.written else f"{d.name}_id")
        if key in d.fields:
            d.fields.pop(key)
        key_field = EntityField(
            name=key,
            type="integer" if d.key_type == "integer" else "string",
            primary_key=True,
            nullable=False,
            description=f"Identifier of the {d.name.replace('_', ' ')}.",
            examples=X.typed(d.key_examples, "integer" if d.key_type == "integer" else "string"),
        )
        fields = [key_field]
        if not d.fields:
            d.add_field("name", {"type": "string"})
        if not d.written and d.tools:
            # Reference data behind stateless tools needs content a caller can read and match.
            for extra in ("title", "content"):
                if extra not in d.fields:
                    d.add_field(extra, {"type": "string"})
        for f in d.fields.values():
            target = field_ref.get((d.name, f.name))
            if target is None and f.type in {"string", "integer", "number"}:
                stem = id_argument_entity(f.name)
                target = (
                    _entity_name(resolve(_entity_name(stem), "", real, kept) or stem)
                    if stem
                    else None
                )
            fk = None
            if (d.name, f.name) in not_refs:
                target = None
            if target and target in drafts and target != d.name:
                tgt = drafts[target]
                tgt_key = tgt.key or ("id" if not tgt.written else f"{tgt.name}_id")
                fk = f"{tgt.name}.{tgt_key}"
                relations.append(Relation(source=f"{d.name}.{f.name}", target=fk))
                f = f.model_copy(
                    update={"type": "integer" if tgt.key_type == "integer" else "string"}
                )
            unique = f.name in W.UNIQUE_FIELDS and f.type == "string"
            fields.append(
                f.model_copy(update={"foreign_key": fk, "unique": unique, "nullable": True})
            )
        entities.append(
            Entity(
                name=d.name,
                description=d.description,
                key=key,
                fields=fields,
                reference_data=not d.written,
            )
        )
    if not entities and not any(op.startswith("file_") for op, _ in ops.values()):
        raise SpecRejected("no entity could be inferred from the tool set", source=spec.source)

    entities = X.share_key_examples(entities)
    by_name = {e.name: e for e in entities}
    effects: list[ToolEffect] = []
    for t in spec.tools:
        op, verb = ops[t.name]
        ent = tool_entity[t.name]
        if ent is None:
            kind = StateKind.WORKSPACE
            reads = ["workspace"] if op in {"file_read", "file_list"} else []
            writes = ["workspace"] if op in {"file_write", "file_delete"} else []
        else:
            e = by_name[ent]
            kind = StateKind.STATELESS if e.reference_data else StateKind.DATABASE
            reads = [ent]
            writes = [ent] if op in _WRITE_OPS else []
            for arg in t.properties:
                target = ref_of.get((t.name, arg))
                if (
                    target
                    and target in by_name
                    and not (target == ent or ent.endswith("_" + target))
                ):
                    reads.append(target)
        effects.append(
            ToolEffect(
                tool=t.name,
                operation=op,
                state_kind=kind,
                entity=ent,
                reads=list(dict.fromkeys(reads)),
                writes=writes,
                transitions=transitions.get(t.name, []),
                rationale=f"verb {verb!r}" if verb else "no verb; decided by arguments",
            )
        )
    return Analysis(entities=entities, relations=relations, tools=effects, bindings=bindings)


def analyze(spec: MCPSpec, llm: BaseChatModel | None = None) -> tuple[Analysis, list[str]]:
    """Run the node: the LLM strategy when a model is given (checked, with fallback), else programmatic.

    Returns the analysis and notes about what was repaired.
    """
    if llm is None:
        return analyze_programmatic(spec), []
    from weft_envsynth._internal.llm import ask_or_none, spec_digest
    from weft_envsynth.bindmodel import bind, effect_problems

    bindings, notes = bind(spec, llm)
    base = analyze_programmatic(spec, bindings)

    prompt = (
        "Analyze this MCP tool set for a stateful environment. Infer the shared business entities "
        "(snake_case names, fields with JSON types, one primary key each, foreign keys as 'entity.key'), "
        "the relations, and for every tool: operation, state kind (database/workspace/stateless), "
        "entity, reads, writes and status transitions.\n\n" + spec_digest(spec)
    )
    proposed, err = ask_or_none(llm, Analysis, prompt)
    if proposed is None:
        return base, [*notes, f"analyze: model output unusable ({err}); used programmatic analysis"]
    problems = check_analysis(spec, proposed) + effect_problems(spec, proposed, bindings)
    if problems:
        return base, [
            *notes,
            f"analyze: model analysis rejected ({problems[0]}; {len(problems)} problem(s)); used programmatic",
        ]
    return proposed.model_copy(update={"bindings": bindings}), [
        *notes,
        "analyze: model analysis accepted",
    ]


def file_tool_set(spec: MCPSpec, bindings: ToolBindings | None = None) -> dict[str, FileSemantics]:
    """Tools of `spec` that act on the session workspace, when the tool set is file-oriented.

    A tool set is file-oriented when its descriptions talk about files or folders and at least two
    of its tools get a file verb; then every tool with a verb is bound to the workspace.
    """
    context = any(mentions_files(t.description) for t in spec.tools)
    vcs = vcs_tools(spec, bindings)
    found = {
        t.name: s
        for t in spec.tools
        if t.name not in vcs and (s := file_semantics(t, file_context=context))
    }
    if len(found) < 2 or not context:
        return {}
    if any(s.verb == "navigate" for s in found.values()):
        return found  # the tools imply a current directory: every file verb follows it
    # No current directory: path-addressed file tools keep their plain file routes (read_file
    # returns {path, content}); the verbs cover the tools those rules do not recognise.
    by_name = {t.name: t for t in spec.tools}
    return {
        n: s for n, s in found.items() if not classify_operation(by_name[n])[0].startswith("file_")
    }
