"""The programmatic task-synthesis strategy: atomic tasks from contracts, entities and seed rows.

Each tool's contract says which entity it acts on, how its arguments map onto fields and what it
reads and writes; the seed DB gives real ids and values. From these, one template per operation
writes an intent, its inputs, the ordered reference calls and completion conditions over returns
and persistent state. Where an entity can be found by a unique field through a search tool, a
mutation becomes a two-step "find, then act" chain whose key is retrieved, not given.

`variant` walks through alternative seed rows and simpler chains, so a later round of Algorithm 1
asks for something new instead of repeating a failure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from weft_core.models import (
    AllowedChange,
    CallMade,
    Check,
    DiffContains,
    Entity,
    EntityField,
    FieldEquals,
    NoOtherChanges,
    ReferenceCall,
    ReturnContains,
    RowAbsent,
    RowExists,
    TaskInput,
    ToolContract,
    ToolSpec,
    WorkspaceFile,
)
from weft_tasks.atomic.bundle import BundleView

_SCALAR = (str, int, float, bool)


@dataclass
class Draft:
    """An atomic task before it has an id."""

    intent: str
    tool_chain: list[str]
    inputs: list[TaskInput]
    calls: list[ReferenceCall]
    checks: list[Check]
    outputs: dict[str, str] = field(default_factory=dict)
    entities: list[str] = field(default_factory=list)
    writes: bool = False
    seed_rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    origin: str = ""

    @property
    def signature(self) -> str:
        """Identity for "already tried": chain, concrete arguments and completion conditions."""
        values = {i.name: i.value for i in self.inputs}
        return repr(
            (
                self.tool_chain,
                [(c.tool, sorted(c.arguments.items(), key=str)) for c in self.calls],
                sorted(values.items(), key=str),
                [c.model_dump_json() for c in self.checks],
            )
        )


def natural_key(entity: Entity) -> EntityField | None:
    """The field a person would name the object by: a unique non-key string, else a likely name."""
    strings = [
        f
        for f in entity.fields
        if f.name != entity.key and f.type == "string" and not f.foreign_key
    ]
    for f in strings:
        if f.unique:
            return f
    for hint in ("email", "sku", "code", "username", "name", "title"):
        for f in strings:
            if hint in f.name:
                return f
    return strings[0] if strings else None


def _entity(bundle: BundleView, name: str | None) -> Entity | None:
    if not name:
        return None
    try:
        return bundle.entities.entity(name.split(".")[0])
    except KeyError:
        return None


def _spec(bundle: BundleView, tool: str) -> ToolSpec | None:
    try:
        return bundle.spec.tool(tool)
    except KeyError:
        return None


def _finder(bundle: BundleView, entity: Entity) -> tuple[str, str, EntityField] | None:
    """A search/list tool that filters `entity` by a unique field: (tool, argument, field)."""
    best: tuple[int, tuple[str, str, EntityField]] | None = None
    certified = set(bundle.certified_tools)
    for c in bundle.contracts.contracts:
        if (
            c.tool not in certified
            or c.operation not in ("search", "list")
            or c.entity != entity.name
        ):
            continue
        for m in c.mappings:
            if m.role != "filter" or not m.field or m.field == entity.key:
                continue
            try:
                f = entity.field(m.field)
            except KeyError:
                continue
            rank = 0 if f.unique else 1
            if f.type == "string" and (best is None or rank < best[0]):
                best = (rank, (c.tool, m.argument, f))
    return best[1] if best and best[0] == 0 else None


def _scalar_fields(entity: Entity, row: dict[str, Any]) -> list[EntityField]:
    return [f for f in entity.fields if isinstance(row.get(f.name), _SCALAR) and f.type != "json"]


def _label(entity: Entity, row: dict[str, Any]) -> str:
    nk = natural_key(entity)
    if nk and row.get(nk.name) is not None:
        return f"{entity.name.replace('_', ' ')} {row[nk.name]!s}"
    return f"{entity.name.replace('_', ' ')} {row.get(entity.key)!s}"


def _new_value(
    f: EntityField, current: Any, salt: int, schema: dict[str, Any] | None = None
) -> Any:
    schema = schema or {}
    enum = schema.get("enum") or f.enum
    if enum:
        others = [v for v in enum if v != current]
        return others[salt % len(others)] if others else enum[0]
    kind = f.type
    if schema.get("type") in ("integer", "number", "boolean"):
        kind = schema["type"]
    if kind == "integer":
        value = (current if isinstance(current, int) else 0) + 3 + salt
        return _clamp(value, schema)
    if kind == "number":
        value = round((current if isinstance(current, (int, float)) else 0) + 12.5 + salt, 2)
        return _clamp(value, schema)
    if kind == "boolean":
        return not bool(current)
    if kind == "date":
        return f"2026-0{1 + salt % 9}-1{salt % 9}"
    if kind == "datetime":
        return f"2026-0{1 + salt % 9}-1{salt % 9}T10:30:00"
    if kind == "json":
        return {"note": f"weft {salt}"}
    if "email" in f.name:
        return f"weft.{f.name}.{salt}@example.org"
    return f"Weft {f.name.replace('_', ' ')} {salt}"


def _clamp(value: float, schema: dict[str, Any]) -> Any:
    lo, hi = schema.get("minimum"), schema.get("maximum")
    if hi is not None and value > hi:
        value = hi
    if lo is not None and value < lo:
        value = lo
    return value


def _schema_value(schema: dict[str, Any], name: str, salt: int) -> Any:
    if "default" in schema:
        return schema["default"]
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "integer":
        return _clamp(1 + salt, schema)
    if kind == "number":
        return _clamp(1.5 + salt, schema)
    if kind == "boolean":
        return True
    if kind == "array":
        return []
    if kind == "object":
        return {}
    if "email" in name:
        return f"weft.{salt}@example.org"
    return f"weft {name.replace('_', ' ')} {salt}"


class _Builder:
    """Accumulates inputs, calls and fixture rows of one draft."""

    def __init__(self) -> None:
        self.inputs: list[TaskInput] = []
        self.calls: list[ReferenceCall] = []
        self.seed_rows: dict[str, list[dict[str, Any]]] = {}

    def given(self, name: str, value: Any, description: str, source: str = "given") -> str:
        used = {i.name for i in self.inputs}
        base, n = name, 2
        while name in used:
            name, n = f"{base}_{n}", n + 1
        self.inputs.append(
            TaskInput(name=name, value=value, description=description, source=source)  # type: ignore[arg-type]
        )
        return "{{" + name + "}}"

    def fixture(self, table: str, row: dict[str, Any], key: str) -> None:
        rows = self.seed_rows.setdefault(table, [])
        if all(r.get(key) != row.get(key) for r in rows):
            rows.append(dict(row))


def _rows(
    bundle: BundleView, entity: Entity, variant: int, pred: Any = None
) -> dict[str, Any] | None:
    rows = [r for r in bundle.rows(entity.name) if pred is None or pred(r)]
    if not rows:
        return None
    return rows[variant] if variant < len(rows) else None


def _referenced_keys(bundle: BundleView, entity: Entity) -> set[Any]:
    """Keys of `entity` that some other row references (deleting them would break a FK)."""
    refs: set[Any] = set()
    for other in bundle.entities.entities:
        for f in other.fields:
            if f.foreign_key and f.foreign_key.split(".")[0] == entity.name:
                refs.update(r.get(f.name) for r in bundle.rows(other.name))
    return refs


def _args_for(
    bundle: BundleView,
    b: _Builder,
    contract: ToolContract,
    spec: ToolSpec,
    rows: dict[str, dict[str, Any]],
    salt: int,
    overrides: dict[str, str],
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Arguments of one call and the new field values it sets ({field: value})."""
    entity = _entity(bundle, contract.entity)
    args: dict[str, Any] = {}
    new_values: dict[str, Any] = {}
    mappings = {m.argument: m for m in contract.mappings}
    for name, schema in spec.properties.items():
        m = mappings.get(name)
        required = name in spec.required
        target = _entity(bundle, m.entity) if m and m.entity else entity
        row = rows.get(target.name) if target else None
        fname = m.field if m and m.field else None
        if name in overrides:
            args[name] = overrides[name]
        elif m and m.role in ("key", "reference", "filter") and row is not None and fname in row:
            args[name] = b.given(
                name, row[fname], f"{target.name}.{fname} of {_label(target, row)}"
            )  # type: ignore[union-attr]
        elif m and m.role == "value" and target is not None and fname:
            try:
                f = target.field(fname)
            except KeyError:
                f = EntityField(name=fname)
            current = row.get(fname) if row else None
            value = _new_value(f, current, salt, schema)
            new_values[fname] = value
            args[name] = b.given(name, value, f"new {target.name}.{fname}")
        elif m and m.role == "path":
            args[name] = b.given(name, f"weft/{contract.tool}_{salt}.txt", "workspace file path")
        elif m and m.role == "content":
            args[name] = b.given(name, f"Weft note {salt} for {contract.tool}", "file content")
        elif required:
            if row is not None and name in row and row[name] is not None:
                args[name] = b.given(name, row[name], f"{name} of {_label(target, row)}")  # type: ignore[arg-type]
            else:
                args[name] = b.given(
                    name, _schema_value(schema, name, salt), name.replace("_", " ")
                )
    return args, new_values


def _fk_rows(bundle: BundleView, b: _Builder, entity: Entity, row: dict[str, Any]) -> None:
    """Add `row` and the rows it references to the draft's fixture."""
    b.fixture(entity.name, row, entity.key)
    for f in entity.fields:
        if f.foreign_key and row.get(f.name) is not None:
            parent = _entity(bundle, f.foreign_key)
            if parent is None:
                continue
            pfield = f.foreign_key.split(".")[1] if "." in f.foreign_key else parent.key
            for prow in bundle.rows(parent.name):
                if prow.get(pfield) == row[f.name]:
                    _fk_rows(bundle, b, parent, prow)
                    break


def _add_finder(
    bundle: BundleView, b: _Builder, entity: Entity, row: dict[str, Any], salt: int
) -> str | None:
    """Prepend "find the entity by its unique field" and return the template of its key."""
    finder = _finder(bundle, entity)
    if finder is None or row.get(finder[2].name) is None:
        return None
    ftool, farg, ffield = finder
    fspec = _spec(bundle, ftool)
    fargs: dict[str, Any] = {
        farg: b.given(farg, row[ffield.name], f"{entity.name}.{ffield.name} of the {entity.name}")
    }
    if fspec is not None:
        for name in fspec.required:
            fargs.setdefault(name, _schema_value(fspec.properties.get(name, {}), name, salt))
    key_name = f"{entity.name}_{entity.key}" if entity.key == "id" else entity.key
    b.calls.append(ReferenceCall(tool=ftool, arguments=fargs, bind={key_name: entity.key}))
    b.inputs.append(
        TaskInput(
            name=key_name,
            source="retrieved",
            value=row.get(entity.key),
            description=f"{entity.name}.{entity.key}, found with {ftool}",
        )
    )
    return "{{" + key_name + "}}"


def _article(noun: str) -> str:
    return ("an " if noun[:1] in "aeiou" else "a ") + noun


def draft_for_tool(bundle: BundleView, tool: str, variant: int, *, compound: bool) -> Draft | None:
    """One candidate atomic task centred on `tool`, or None when the template has nothing new."""
    contract = bundle.contract(tool)
    spec = _spec(bundle, tool)
    if contract is None or spec is None:
        return None
    op = contract.operation
    entity = _entity(bundle, contract.entity)
    salt = variant + 1
    b = _Builder()
    chain: list[str] = []
    checks: list[Check] = []
    outputs: dict[str, str] = {}
    rows: dict[str, dict[str, Any]] = {}
    writes = op in ("create", "update", "delete", "action", "file_write", "file_delete")

    # Rows for every entity the arguments reference (e.g. the customer of a new order).
    for m in contract.mappings:
        if (
            m.role in ("reference", "filter", "key")
            and m.entity
            and m.entity != (entity.name if entity else None)
        ):
            other = _entity(bundle, m.entity)
            r = _rows(bundle, other, variant) if other else None
            if other and r is not None:
                rows[other.name] = r
                _fk_rows(bundle, b, other, r)

    if op in ("file_write", "file_read", "file_list", "file_delete"):
        return _file_draft(bundle, contract, spec, variant)

    overrides: dict[str, str] = {}
    row: dict[str, Any] | None = None
    if entity is not None and op in ("read", "update", "delete", "action", "search", "list"):
        pred = None
        if op == "action" and contract.transitions:
            t = contract.transitions[0]
            if t.from_values:
                pred = lambda r, t=t: str(r.get(t.field)) in t.from_values  # noqa: E731
        if op == "delete":
            refs = _referenced_keys(bundle, entity)
            pred = lambda r, refs=refs: r.get(entity.key) not in refs  # noqa: E731
        row = _rows(bundle, entity, variant, pred)
        if row is None:
            return None
        rows[entity.name] = row
        _fk_rows(bundle, b, entity, row)
        if compound and op in ("read", "update", "delete", "action"):
            finder = _finder(bundle, entity)
            if finder and finder[0] != tool:
                key_arg = next((m.argument for m in contract.mappings if m.role == "key"), None)
                template = _add_finder(bundle, b, entity, row, salt)
                if key_arg and template:
                    overrides[key_arg] = template
    if compound and op == "create":
        # A new object that references another (a ticket of a requester) finds it first.
        for m in contract.mappings:
            parent = _entity(bundle, m.entity) if m.role == "reference" else None
            if parent is not None and parent.name in rows and _finder(bundle, parent):
                template = _add_finder(bundle, b, parent, rows[parent.name], salt)
                if template:
                    overrides[m.argument] = template
    chain.extend(c.tool for c in b.calls)
    args, new_values = _args_for(bundle, b, contract, spec, rows, salt, overrides)
    bind: dict[str, str] = {}
    chain.append(tool)
    ename = entity.name if entity else None

    if op == "create" and entity is not None:
        scalar = {k: v for k, v in new_values.items() if isinstance(v, _SCALAR)}
        if not scalar:
            return None
        where = {k: "{{" + _input_for(b, v) + "}}" for k, v in scalar.items()}
        checks += [
            RowExists(table=entity.name, where=where, description=f"a new {entity.name} exists"),
            DiffContains(table=entity.name, change="insert", where=where),
            NoOtherChanges(allowed=_allowed(contract)),
        ]
        bind[entity.key] = entity.key
        outputs[entity.key] = f"{entity.name}.{entity.key} of the new {entity.name}"
        for k in scalar:
            outputs[k] = f"{entity.name}.{k} of the new {entity.name}"
        intent = f"Create {_article(entity.name.replace('_', ' '))} with " + ", ".join(
            f"{k} {{{{{_input_for(b, v)}}}}}" for k, v in scalar.items()
        )
    elif op in ("update", "action") and entity is not None and row is not None:
        where_key = {entity.key: row.get(entity.key)}
        changed = dict(new_values)
        for t in contract.transitions:
            if t.entity == entity.name and t.to_value is not None:
                changed.setdefault(t.field, t.to_value)
        if not changed:
            return None
        for fname, value in changed.items():
            v = "{{" + _input_for(b, value) + "}}" if _input_for(b, value) else value
            checks.append(FieldEquals(table=entity.name, where=where_key, field=fname, value=v))
        checks.append(
            DiffContains(
                table=entity.name, change="update", where=where_key, fields=sorted(changed)
            )
        )
        checks.append(NoOtherChanges(allowed=_allowed(contract)))
        verb = "Update" if op == "update" else tool.split("_")[0].capitalize()
        intent = f"{verb} {_label(entity, row)}: set " + ", ".join(
            f"{k} to {v!s}" for k, v in changed.items()
        )
    elif op == "delete" and entity is not None and row is not None:
        where_key = {entity.key: row.get(entity.key)}
        checks += [
            RowAbsent(table=entity.name, where=where_key),
            DiffContains(table=entity.name, change="delete", where=where_key),
            NoOtherChanges(allowed=_allowed(contract)),
        ]
        intent = f"Delete {_label(entity, row)}"
    elif op in ("read", "search", "list") and entity is not None and row is not None:
        shown = [
            f for f in _scalar_fields(entity, row) if f.type == "string" and f.name not in args
        ]
        if not shown:
            shown = [f for f in _scalar_fields(entity, row) if f.name != entity.key]
        if not shown:
            return None
        target = shown[0]
        checks.append(
            ReturnContains(
                tool=tool,
                value=row[target.name],
                description=f"the answer shows {entity.name}.{target.name}",
            )
        )
        for f in _scalar_fields(entity, row):
            outputs[f.name] = f"{entity.name}.{f.name} of {_label(entity, row)}"
            bind[f.name] = f.name
        what = target.name.replace("_", " ")
        if op == "list" and args:
            crit = ", ".join(
                f"{k} {i.value}" for k in args for i in b.inputs if "{{" + i.name + "}}" == args[k]
            )
            intent = f"List the {entity.name.replace('_', ' ')}s with {crit} and report the {what} of {_label(entity, row)}"
        else:
            intent = f"Look up {_label(entity, row)} and report its {what}"
    else:
        checks.append(CallMade(tool=tool, description=f"{tool} answered without error"))
        intent = (spec.description.split(".")[0] or f"Use {tool}").strip()
        if not args and not spec.properties:
            intent = f"{intent} (no arguments)"
    # Bind only what the result can hold: outputs name fields of the entity the tool returns.
    b.calls.append(
        ReferenceCall(tool=tool, arguments=args, bind=bind if op in ("read", "create") else {})
    )
    if op not in ("read", "create"):
        outputs = {} if op in ("search", "list") else outputs
    return Draft(
        intent=intent,
        tool_chain=chain,
        inputs=b.inputs,
        calls=b.calls,
        checks=checks,
        outputs=outputs if op in ("read", "create") else {},
        entities=sorted({ename, *rows} - {None}),  # type: ignore[arg-type]
        writes=writes,
        seed_rows=b.seed_rows,
        origin=f"{op}:{tool}:{'compound' if len(chain) > 1 else 'single'}:{variant}",
    )


def _input_for(b: _Builder, value: Any) -> str:
    for i in b.inputs:
        if i.value == value and i.source == "given":
            return i.name
    return ""


def _allowed(contract: ToolContract) -> list[AllowedChange]:
    tables = {w.split(".")[0] for w in contract.writes} | (
        {contract.entity} if contract.entity else set()
    )
    return [AllowedChange(table=t) for t in sorted(tables)]


def _file_draft(
    bundle: BundleView, contract: ToolContract, spec: ToolSpec, variant: int
) -> Draft | None:
    """Workspace tasks write their own file first, so they need no pre-existing workspace."""
    salt = variant + 1
    writer = next(
        (
            c
            for c in bundle.contracts.contracts
            if c.operation == "file_write" and c.tool in bundle.certified_tools
        ),
        None,
    )
    if writer is None:
        return None
    wspec = _spec(bundle, writer.tool)
    if wspec is None:
        return None
    b = _Builder()
    path_arg = next((m.argument for m in writer.mappings if m.role == "path"), None)
    content_arg = next((m.argument for m in writer.mappings if m.role == "content"), None)
    if path_arg is None or content_arg is None:
        return None
    path = f"weft/report_{salt}.txt"
    content = f"Weft report {salt}: quarterly figures"
    wargs = {
        path_arg: b.given("path", path, "workspace file path"),
        content_arg: b.given("content", content, "file content"),
    }
    for name in wspec.required:
        wargs.setdefault(name, _schema_value(wspec.properties.get(name, {}), name, salt))
    b.calls.append(ReferenceCall(tool=writer.tool, arguments=wargs))
    chain = [writer.tool]
    checks: list[Check] = []
    op = contract.operation
    if op == "file_write":
        checks.append(WorkspaceFile(path=path, contains=content))
        intent = f"Write a file {path} containing the quarterly report note"
    else:
        targs: dict[str, Any] = {}
        for m in contract.mappings:
            if m.role == "path":
                targs[m.argument] = "{{path}}" if op != "file_list" else "weft"
        for name in spec.required:
            targs.setdefault(name, _schema_value(spec.properties.get(name, {}), name, salt))
        b.calls.append(ReferenceCall(tool=contract.tool, arguments=targs))
        chain.append(contract.tool)
        if op == "file_read":
            checks.append(ReturnContains(tool=contract.tool, value=content))
            intent = f"Write {path} and read it back"
        elif op == "file_list":
            checks.append(ReturnContains(tool=contract.tool, value=path.split("/")[-1]))
            intent = f"Write {path} and list the folder it is in"
        else:
            checks.append(WorkspaceFile(path=path, exists=False))
            intent = f"Write {path}, then delete it"
    return Draft(
        intent=intent,
        tool_chain=chain,
        inputs=b.inputs,
        calls=b.calls,
        checks=checks,
        writes=True,
        origin=f"{op}:{contract.tool}:{len(chain)}:{variant}",
    )
