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
from weft_tasks.atomic._values import fits, new_value, schema_value
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


def _words_field(entity: Entity) -> EntityField | None:
    """The field a free-text search most likely matches: a name or title before codes."""
    strings = [
        f
        for f in entity.fields
        if f.type == "string" and f.name != entity.key and not f.foreign_key
    ]
    for hint in ("name", "title", "subject", "label"):
        for f in strings:
            if hint in f.name:
                return f
    return natural_key(entity)


def _ref(bundle: BundleView, m: Any, default: Entity | None) -> tuple[Entity | None, str | None]:
    """The entity and field an argument's value comes from. A reference argument mapped onto a
    foreign-key field (deal.customer_id) takes its value from the referenced row (customer)."""
    target = _entity(bundle, m.entity) if m.entity else default
    fname = m.field
    if target is not None and fname and m.role in ("reference", "filter"):
        try:
            fk = target.field(fname).foreign_key
        except KeyError:
            fk = None
        if fk and (m.role == "reference" or target is not default):
            parent = _entity(bundle, fk)
            if parent is not None:
                return parent, fk.partition(".")[2] or parent.key
    return target, fname


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


class _Builder:
    """Accumulates inputs, calls and fixture rows of one draft."""

    def __init__(self) -> None:
        self.inputs: list[TaskInput] = []
        self.calls: list[ReferenceCall] = []
        self.seed_rows: dict[str, list[dict[str, Any]]] = {}
        # keys a finder call retrieved: outcomes a downstream task may use (the id the agent found)
        self.found: dict[str, str] = {}

    def given(self, name: str, value: Any, description: str, source: str = "given") -> str:
        used = {i.name for i in self.inputs}
        base, n = name, 2
        while name in used:
            name, n = f"{base}_{n}", n + 1
        self.inputs.append(
            TaskInput(name=name, value=value, description=description, source=source)
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
        target, fname = _ref(bundle, m, entity) if m else (entity, None)
        row = rows.get(target.name) if target else None
        own = rows.get(entity.name) if entity is not None else None
        if name in overrides:
            args[name] = overrides[name]
        elif (
            m
            and m.role == "reference"
            and contract.operation in ("update", "action")
            and entity is not None
            and target is not entity
            and m.field
            and own is not None
            and target is not None
            and fname is not None
        ):
            # re-pointing a reference (assign a ticket to an employee) is the change itself
            choices = [r for r in bundle.rows(target.name) if r.get(fname) != own.get(m.field)]
            if not choices:
                continue
            pick = choices[salt % len(choices)]
            _fk_rows(bundle, b, target, pick)
            new_values[m.field] = pick[fname]
            args[name] = b.given(
                name, pick[fname], f"{target.name}.{fname} of {_label(target, pick)}"
            )
        elif m and m.role == "filter" and not fname and target is not None and row is not None:
            words = _words_field(target)
            if words is None or row.get(words.name) is None:
                continue
            args[name] = b.given(name, row[words.name], f"words to find {_label(target, row)}")
        elif (
            m
            and m.role in ("key", "reference", "filter")
            and target is not None
            and row is not None
            and fname is not None
            and fname in row
        ):
            args[name] = b.given(
                name, row[fname], f"{target.name}.{fname} of {_label(target, row)}"
            )
        elif m and m.role == "value" and target is not None and fname:
            try:
                f = target.field(fname)
            except KeyError:
                f = EntityField(name=fname)
            current = row.get(fname) if row else None
            # a unique value an update sets must differ from the one a create of the same
            # variant sets: one composed task may hold both
            shift = 50 if f.unique and contract.operation in ("update", "action") else 0
            value = new_value(f, current, salt + shift, schema)
            new_values[fname] = value
            args[name] = b.given(name, value, f"new {target.name}.{fname}")
        elif m and m.role == "path":
            args[name] = b.given(name, f"weft/{contract.tool}_{salt}.txt", "workspace file path")
        elif m and m.role == "content":
            args[name] = b.given(name, f"Weft note {salt} for {contract.tool}", "file content")
        elif required:
            if row is not None and name in row and fits(row[name], schema):
                args[name] = b.given(name, row[name], f"{name} of {_label(target, row)}")  # type: ignore[arg-type]
            else:
                args[name] = b.given(name, schema_value(schema, name, salt), name.replace("_", " "))
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
            fargs.setdefault(name, schema_value(fspec.properties.get(name, {}), name, salt))
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
    b.found[key_name] = f"{entity.name}.{entity.key} of {_label(entity, row)}, found with {ftool}"
    return "{{" + key_name + "}}"


def _reader(bundle: BundleView, entity: Entity) -> tuple[str, str] | None:
    """A certified tool that reads one `entity` by its key: (tool, key argument)."""
    certified = set(bundle.certified_tools)
    for c in bundle.contracts.contracts:
        if c.tool in certified and c.operation == "read" and c.entity == entity.name:
            key = next((m.argument for m in c.mappings if m.role == "key"), None)
            if key is not None:
                return c.tool, key
    return None


def _look_up(
    b: _Builder, entity: Entity, row: dict[str, Any], reader: tuple[str, str], key: Any
) -> dict[str, str]:
    """Prepend reading `row` through `reader` with the key template `key`; its fields are the
    task's outputs (named apart from the inputs, whose values the later call still needs)."""
    taken = {i.name for i in b.inputs}
    bind: dict[str, str] = {}
    outputs: dict[str, str] = {}
    for f in _scalar_fields(entity, row):
        if f.name == entity.key:
            continue
        name = f.name if f.name.startswith(entity.name) else f"{entity.name}_{f.name}"
        if name in taken:
            continue
        bind[name] = f.name
        outputs[name] = f"{entity.name}.{f.name} of {_label(entity, row)}, as looked up"
    b.calls.append(ReferenceCall(tool=reader[0], arguments={reader[1]: key}, bind=bind))
    return outputs


def _where_values(checks: list[Check]) -> list[Any]:
    """Values a create's checks expect in the new row (templates of its inputs)."""
    return [v for c in checks if isinstance(c, RowExists) for v in c.where.values()]


def _article(noun: str) -> str:
    return ("an " if noun[:1] in "aeiou" else "a ") + noun


def draft_for_tool(
    bundle: BundleView, tool: str, variant: int, *, compound: bool, salt_offset: int = 0
) -> Draft | None:
    """One candidate atomic task centred on `tool`, or None when the template has nothing new.
    `salt_offset` moves the values it makes up (two creates of one entity in one composed task
    must not collide on a unique field)."""
    contract = bundle.contract(tool)
    spec = _spec(bundle, tool)
    if contract is None or spec is None:
        return None
    op = contract.operation
    entity = _entity(bundle, contract.entity)
    salt = variant + 1 + salt_offset
    b = _Builder()
    chain: list[str] = []
    checks: list[Check] = []
    outputs: dict[str, str] = {}
    rows: dict[str, dict[str, Any]] = {}
    writes = op in ("create", "update", "delete", "action", "file_write", "file_delete")

    # Rows for every entity the arguments reference (e.g. the customer of a new order).
    for m in contract.mappings:
        if m.role not in ("reference", "filter", "key"):
            continue
        other, _ = _ref(bundle, m, entity)
        if other is not None and other is not entity:
            r = _rows(bundle, other, variant)
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
        if row is None and op == "delete":
            return _create_then_delete(bundle, contract, variant)
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
            parent = _ref(bundle, m, entity)[0] if m.role == "reference" else None
            if parent is not None and parent.name in rows and _finder(bundle, parent):
                template = _add_finder(bundle, b, parent, rows[parent.name], salt)
                if template:
                    overrides[m.argument] = template
    chain.extend(c.tool for c in b.calls)
    args, new_values = _args_for(bundle, b, contract, spec, rows, salt, overrides)
    bind: dict[str, str] = {}
    reader = _reader(bundle, entity) if compound and entity is not None else None
    if reader is not None and reader[0] == tool:
        reader = None
    looked_up: dict[str, str] = {}
    key_arg = next((m.argument for m in contract.mappings if m.role == "key"), None)
    if (
        reader is not None
        and entity is not None
        and row is not None
        and op in ("update", "action", "delete")
        and not overrides
        and key_arg in args
    ):
        # read before write: look the object up (what it is now, whom it belongs to), then act
        looked_up = _look_up(b, entity, row, reader, args[key_arg or ""])
        chain.append(reader[0])
        checks.append(
            CallMade(
                tool=reader[0],
                arguments={reader[1]: args[key_arg or ""]},
                description=f"{_label(entity, row)} was looked up first",
            )
        )
    chain.append(tool)
    ename = entity.name if entity else None

    if (
        op == "create"
        and entity is not None
        and not any(isinstance(v, _SCALAR) for v in new_values.values())
    ):
        # nothing maps onto fields: the new row itself is the evidence
        checks += [
            DiffContains(
                table=entity.name, change="insert", description=f"a new {entity.name} exists"
            ),
            CallMade(tool=tool),
        ]
        intent = f"Create {_article(entity.name.replace('_', ' '))} with {tool.replace('_', ' ')}"
    elif op == "create" and entity is not None:
        scalar = {k: v for k, v in new_values.items() if isinstance(v, _SCALAR)}
        where = {k: "{{" + _input_for(b, v) + "}}" for k, v in scalar.items()}
        # the object the new record points to (the customer of a new email) is part of what
        # was asked: the check names it, so a record for the wrong customer fails
        pointed = {
            m.field: args[m.argument]
            for m in contract.mappings
            if m.role == "reference"
            and m.field
            and (m.entity or contract.entity) == entity.name
            and isinstance(args.get(m.argument), str)
            and str(args[m.argument]).startswith("{{")
        }
        where |= pointed
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
        if pointed:
            intent += " for " + " and ".join(
                f"{k.removesuffix('_id').replace('_', ' ')} {v}" for k, v in pointed.items()
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
    if looked_up:
        intent = f"Look up {_label(entity, row)}, then " + intent[:1].lower() + intent[1:]  # type: ignore[arg-type]
    readback = next((v for v in _where_values(checks) if isinstance(v, str)), None)
    if (
        reader is not None
        and entity is not None
        and op == "create"
        and not overrides
        and bind.get(entity.key)
        and readback
    ):
        # create, then read the new record back: the agent confirms what was stored
        b.calls.append(
            ReferenceCall(tool=reader[0], arguments={reader[1]: "{{" + entity.key + "}}"})
        )
        chain.append(reader[0])
        checks.append(
            ReturnContains(
                tool=reader[0],
                value=readback,
                description=f"the new {entity.name} reads back as created",
            )
        )
        intent += ", then read it back to confirm"
    if op not in ("read", "create"):
        outputs = {} if op in ("search", "list") else outputs
    return Draft(
        intent=intent,
        tool_chain=chain,
        inputs=b.inputs,
        calls=b.calls,
        checks=checks,
        outputs=(outputs if op in ("read", "create") else {}) | b.found | looked_up,
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


def _create_then_delete(bundle: BundleView, contract: ToolContract, variant: int) -> Draft | None:
    """Every row is still referenced: create a fresh one and delete that."""
    entity = _entity(bundle, contract.entity)
    creator = next(
        (
            c
            for c in bundle.contracts.contracts
            if c.operation == "create"
            and c.entity == contract.entity
            and c.tool in bundle.certified_tools
        ),
        None,
    )
    key_arg = next((m.argument for m in contract.mappings if m.role == "key"), None)
    if entity is None or creator is None or key_arg is None or variant > 0:
        return None
    made = draft_for_tool(bundle, creator.tool, variant, compound=False, salt_offset=20)
    if made is None or not made.calls or entity.key not in made.calls[-1].bind:
        return None
    where = next((c.where for c in made.checks if isinstance(c, RowExists)), None)
    if not where:
        return None
    calls = [
        *made.calls,
        ReferenceCall(tool=contract.tool, arguments={key_arg: "{{" + entity.key + "}}"}),
    ]
    return Draft(
        intent=made.intent.replace("Create", "Create", 1) + ", then delete it again",
        tool_chain=[*made.tool_chain, contract.tool],
        inputs=made.inputs,
        calls=calls,
        checks=[
            RowAbsent(table=entity.name, where=where),
            CallMade(tool=contract.tool),
            NoOtherChanges(allowed=[]),
        ],
        entities=[entity.name],
        writes=True,
        seed_rows=made.seed_rows,
        origin=f"delete:{contract.tool}:create-then-delete:{variant}",
    )


def _file_draft(
    bundle: BundleView, contract: ToolContract, spec: ToolSpec, variant: int
) -> Draft | None:
    """Workspace tasks write their own file first, so they need no pre-existing workspace."""
    salt = variant + 1
    certified = set(bundle.certified_tools)

    def roles(c: ToolContract) -> list[str]:
        return [m.role for m in c.mappings]

    writers = [
        c
        for c in bundle.contracts.contracts
        if c.operation == "file_write"
        and c.tool in certified
        and {"path", "content"} <= set(roles(c))
    ]
    writers.sort(key=lambda c: (0 if "write" in c.tool else 1, c.tool))
    writer = writers[0] if writers else None
    if writer is None:
        return None
    b = _Builder()
    path = f"weft/report_{salt}.txt"
    content = f"Weft report {salt}: quarterly figures"
    wpath = next(m.argument for m in writer.mappings if m.role == "path")
    wcontent = next(m.argument for m in writer.mappings if m.role == "content")
    checks: list[Check] = []
    op = contract.operation
    chain = [writer.tool]
    wspec = _spec(bundle, writer.tool)
    wargs = {
        wpath: b.given("path", path, "workspace file path"),
        wcontent: b.given("content", content, "file content"),
    }
    for name in wspec.required if wspec else []:
        wargs.setdefault(name, schema_value(wspec.properties.get(name, {}), name, salt))  # type: ignore[union-attr]
    b.calls.append(ReferenceCall(tool=writer.tool, arguments=wargs))
    paths = [m.argument for m in contract.mappings if m.role == "path"]
    content_arg = next((m.argument for m in contract.mappings if m.role == "content"), None)
    if contract.tool == writer.tool:
        checks.append(WorkspaceFile(path=path, contains=content))
        intent = f"Write a file {path} containing the quarterly report note"
    else:
        targs: dict[str, Any] = {}
        if op == "file_write" and content_arg and paths:
            extra = f"Addendum {salt}: figures confirmed"
            targs = {paths[0]: "{{path}}", content_arg: b.given("addendum", extra, "text to add")}
            checks.append(WorkspaceFile(path=path, contains=extra))
            intent = f"Write {path}, then add a line with {contract.tool.replace('_', ' ')}"
        elif op == "file_write" and len(paths) >= 2:
            dest = f"weft/archive/report_{salt}.txt"
            targs = {paths[0]: "{{path}}", paths[1]: b.given("destination", dest, "new path")}
            checks.append(WorkspaceFile(path=dest, contains=content))
            if any(w in contract.tool for w in ("move", "rename")):
                checks.append(WorkspaceFile(path=path, exists=False))
            intent = f"Write {path}, then {contract.tool.replace('_', ' ')} it to {dest}"
        elif op == "file_write" and paths:
            folder = f"weft/folder_{salt}"
            b.calls.clear()
            chain.clear()
            b.inputs.clear()
            targs = {paths[0]: b.given("folder", folder, "workspace folder")}
            checks.append(CallMade(tool=contract.tool, arguments={paths[0]: folder}))
            intent = f"Create the workspace folder {folder}"
        else:
            for m in contract.mappings:
                if m.role == "path":
                    targs[m.argument] = "{{path}}" if op != "file_list" else "weft"
            if op == "file_read":
                checks.append(ReturnContains(tool=contract.tool, value=content))
                intent = f"Write {path} and read it back"
            elif op == "file_list":
                checks.append(ReturnContains(tool=contract.tool, value=path.split("/")[-1]))
                intent = f"Write {path} and list the folder it is in"
            elif op == "file_delete":
                checks.append(WorkspaceFile(path=path, exists=False))
                intent = f"Write {path}, then delete it"
            else:
                return None
        for name in spec.required:
            targs.setdefault(name, schema_value(spec.properties.get(name, {}), name, salt))
        b.calls.append(ReferenceCall(tool=contract.tool, arguments=targs))
        chain.append(contract.tool)
    return Draft(
        intent=intent,
        tool_chain=chain,
        inputs=b.inputs,
        calls=b.calls,
        checks=checks,
        writes=op in ("file_write", "file_delete"),
        origin=f"{op}:{contract.tool}:{len(chain)}:{variant}",
    )
