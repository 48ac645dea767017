"""Node 4, backend: a route plan per tool, rendered into server.py (FastAPI routes + FastMCP server).

Programmatic strategy: the route plan follows the contract. LLM strategy: the model returns a
BackendPlan; each route is checked against its contract and the schema and replaced by the
programmatic one when the check fails. Validation catches what these checks cannot (a route that
never commits, writes the wrong field...), and revision regenerates those routes.
"""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel

from weft_core.models import ContractSet, EntityModel, MCPSpec, ToolContract, ToolSpec
from weft_envsynth._internal import words as W
from weft_envsynth._internal.jsonschema import schema_type, string_enum
from weft_envsynth.amounts import amount_moves
from weft_envsynth.analyze import file_tool_set, idempotent_delete, whole_store_read
from weft_envsynth.bindings import ToolBindings, graph_tools, sql_tools, vcs_tools
from weft_envsynth.computesem import compute_semantics, operand_roles
from weft_envsynth.filesem import edit_pairs, media_result, text_result
from weft_envsynth.gloss import write_confirmation
from weft_envsynth.graphsem import confirmation
from weft_envsynth.plans import BackendPlan, RoutePlan, Transition
from weft_envsynth.responses import documents_records, response_notes, response_shape
from weft_envsynth.schema import model_class


def route_programmatic(contract: ToolContract, model: EntityModel) -> RoutePlan:
    plan = RoutePlan(tool=contract.tool, operation=contract.operation, entity=contract.entity)
    if contract.operation.startswith("file_"):
        paths = [m.argument for m in contract.mappings if m.role == "path"]
        plan.path_argument = paths[0] if paths else None
        plan.target_argument = paths[1] if len(paths) > 1 else None
        plan.content_argument = next(
            (m.argument for m in contract.mappings if m.role == "content"), None
        )
        return plan
    entity = model.entity(contract.entity or "")
    for m in contract.mappings:
        if m.role == "key":
            plan.key_argument = m.argument
        elif m.role in {"value", "reference"} and m.field:
            plan.assignments[m.field] = m.argument
            if m.role == "reference":
                target = entity.field(m.field).foreign_key or ""
                plan.references[m.argument] = target.split(".")[0]
        elif m.role == "filter" and m.field:
            plan.filters[m.field] = m.argument
        elif m.role == "filter" and m.field is None:
            plan.text_argument = plan.text_argument or m.argument
        elif m.role == "option" and W.identifier(m.argument) in W.LIMIT_ARGS:
            plan.limit_argument = plan.limit_argument or m.argument
    if plan.text_argument:
        plan.text_fields = [
            f.name for f in entity.fields if f.type == "string" and not f.primary_key
        ]
    if contract.transitions:
        tr = contract.transitions[0]
        plan.transition = Transition(
            field=tr.field, to_value=tr.to_value or "", from_values=tr.from_values
        )
    return plan


def check_route(
    route: RoutePlan, contract: ToolContract, tool: ToolSpec, model: EntityModel
) -> list[str]:
    """Static problems of one route plan (undetectable bugs are left to execution-based validation)."""
    problems: list[str] = []
    args = set(tool.properties)
    if route.operation != contract.operation:
        problems.append(
            f"{tool.name}: route operation {route.operation} differs from contract {contract.operation}"
        )
    used = [
        route.key_argument,
        route.text_argument,
        route.limit_argument,
        route.path_argument,
        route.target_argument,
        route.content_argument,
        *route.assignments.values(),
        *route.filters.values(),
    ]
    for a in used:
        if a is not None and a not in args:
            problems.append(f"{tool.name}: route uses unknown argument {a!r}")
    if route.entity is not None:
        try:
            entity = model.entity(route.entity)
        except KeyError:
            return [*problems, f"{tool.name}: route entity {route.entity!r} does not exist"]
        names = {f.name for f in entity.fields}
        for f in [*route.assignments, *route.filters, *route.text_fields]:
            if f not in names:
                problems.append(f"{tool.name}: route field {route.entity}.{f} does not exist")
        if route.transition and route.transition.field not in names:
            problems.append(
                f"{tool.name}: transition field {route.transition.field} does not exist"
            )
        for target in route.references.values():
            try:
                model.entity(target)
            except KeyError:
                problems.append(f"{tool.name}: reference to unknown entity {target!r}")
    elif not route.operation.startswith("file_"):
        problems.append(f"{tool.name}: route without entity")
    return problems


def backend(
    spec: MCPSpec,
    model: EntityModel,
    contract_set: ContractSet,
    llm: BaseChatModel | None = None,
    *,
    only: set[str] | None = None,
    previous: BackendPlan | None = None,
    feedback: list[str] | None = None,
    force_programmatic: set[str] | None = None,
    bindings: ToolBindings | None = None,
) -> tuple[BackendPlan, list[str]]:
    """`bindings`: the specialised tools the analysis bound (None: the rules', bindings.py)."""
    notes: list[str] = []
    kept = {r.tool: r for r in (previous.routes if previous else [])}
    proposed: dict[str, RoutePlan] = {}
    if llm is not None:
        from weft_envsynth._internal.llm import ask_or_none

        targets = [c for c in contract_set.contracts if only is None or c.tool in only]
        prompt = (
            "Plan the FastAPI backend route of each tool (a BackendPlan: per tool its operation, entity, "
            "key argument, assignments field->argument, filters, text search, limit, references, "
            "transition, file arguments, and whether it commits).\n"
            f"Schema: {model.model_dump_json()}\nContracts: "
            + ContractSet(mcp=spec.slug, contracts=targets).model_dump_json()
        )
        if feedback:
            prompt += (
                "\nValidation found these runtime or state-access errors; fix them:\n- "
                + "\n- ".join(feedback[:20])
            )
        answer, err = ask_or_none(llm, BackendPlan, prompt)
        if answer is None:
            notes.append(f"backend: model output unusable ({err}); used programmatic routes")
        else:
            proposed = {r.tool: r for r in answer.routes}
    routes: list[RoutePlan] = []
    for c in contract_set.contracts:
        if only is not None and c.tool not in only and c.tool in kept:
            routes.append(kept[c.tool])
            continue
        tool = spec.tool(c.tool)
        cand = None if c.tool in (force_programmatic or set()) else proposed.get(c.tool)
        if cand is not None:
            problems = check_route(cand, c, tool, model)
            if not problems:
                routes.append(cand)
                continue
            notes.append(f"backend: model route for {c.tool} rejected ({problems[0]})")
        routes.append(route_programmatic(c, model))
    # Balances moved by transfers, payments, withdrawals and deposits (amounts.py), whoever
    # planned the route.
    for i, c in enumerate(contract_set.contracts[: len(routes)]):
        if routes[i].tool == c.tool and routes[i].entity is not None:
            routes[i] = routes[i].model_copy(
                update={"moves": amount_moves(spec.tool(c.tool), c, model)}
            )
    shell = file_tool_set(spec, bindings)
    for i, r in enumerate(routes):
        sem = shell.get(r.tool)
        if sem is not None and r.operation.startswith("file_"):
            routes[i] = r.model_copy(
                update={
                    "file_verb": sem.verb,
                    "file_roles": dict(sem.roles),
                    "response_fields": list(sem.response_fields),
                }
            )
    stateless = {e.name for e in model.entities if e.reference_data}
    for i, r in enumerate(routes):
        if r.file_verb or r.operation not in {"compute", "search", "read", "list"}:
            continue
        if r.entity not in stateless:
            continue
        csem = compute_semantics(spec.tool(r.tool))
        if csem is not None:
            routes[i] = r.model_copy(
                update={
                    "compute_op": csem.op,
                    "compute_roles": operand_roles(csem),
                    "compute_constants": dict(csem.constants),
                    "response_fields": list(csem.response_fields),
                }
            )
    for i, r in enumerate(routes):
        if r.file_verb or r.compute_op:
            continue
        reads = whole_store_read(spec.tool(r.tool), r.operation, r.entity, model)
        if reads:
            routes[i] = r.model_copy(update={"reads_all": reads})
    sql = sql_tools(spec, bindings)
    for i, r in enumerate(routes):
        ssem = sql.get(r.tool)
        if ssem is not None and not r.file_verb and r.entity in stateless:
            routes[i] = r.model_copy(
                update={
                    "sql_verb": ssem.verb,
                    "sql_argument": ssem.statement_argument or ssem.table_argument,
                    "compute_op": None,
                    "compute_roles": {},
                }
            )
    vcs = vcs_tools(spec, bindings)
    for i, r in enumerate(routes):
        vsem = vcs.get(r.tool)
        if vsem is not None and not r.file_verb and r.entity in stateless:
            routes[i] = r.model_copy(
                update={
                    "vcs_verb": vsem.verb,
                    "vcs_roles": dict(vsem.roles),
                    "vcs_choices": dict(vsem.choices),
                    "compute_op": None,
                    "compute_roles": {},
                    "sql_verb": None,
                    "reads_all": [],
                }
            )
    graphs = graph_tools(spec, bindings)
    kinds = [k.model_dump() for k in graphs.kinds]
    for i, r in enumerate(routes):
        gsem = graphs.tools.get(r.tool)
        if gsem is not None and not r.file_verb and r.entity in stateless:
            routes[i] = r.model_copy(
                update={
                    "graph_verb": gsem.verb,
                    "graph": {
                        "sem": gsem.model_dump(),
                        "kinds": kinds,
                        "message": confirmation(spec.tool(r.tool)),
                    },
                    "compute_op": None,
                    "compute_roles": {},
                    "sql_verb": None,
                    "vcs_verb": None,
                    "reads_all": [],
                }
            )
    notes += [f"backend: {n}" for n in response_notes(spec)]
    return BackendPlan(routes=routes), notes


# ---------------------------------------------------------------------------------------------
# Rendering server.py


def _py_type(schema: Any) -> str:
    enum = string_enum(schema)
    if enum:
        return "Literal[" + ", ".join(repr(v) for v in enum) + "]"
    t = schema_type(schema)
    return {
        "string": "str",
        "integer": "int",
        "number": "float",
        "boolean": "bool",
        "array": "list[Any]",
        "object": "dict[str, Any]",
    }.get(t or "", "Any")


def arg_fields(tool: ToolSpec) -> dict[str, str]:
    """Argument name -> attribute name in its generated pydantic model (unique identifiers)."""
    out: dict[str, str] = {}
    used: set[str] = set()
    for arg in tool.properties:
        ident = W.identifier(arg, prefix="arg")
        if ident.startswith("model_") or ident.startswith("_"):
            ident = f"arg_{ident.lstrip('_')}"
        base, n = ident, 2
        while ident in used:
            ident = f"{base}_{n}"
            n += 1
        used.add(ident)
        out[arg] = ident
    return out


def _render_args_model(tool: ToolSpec, cname: str) -> list[str]:
    names = arg_fields(tool)
    extra = "forbid" if tool.input_schema.get("additionalProperties") is False else "ignore"
    lines = [
        f"class {cname}(BaseModel):",
        f'    model_config = ConfigDict(extra="{extra}", populate_by_name=True)',
    ]
    required = set(tool.required)
    if not names:
        lines.append("    pass")
    for arg, ident in names.items():
        schema = tool.properties[arg]
        py = _py_type(schema)
        alias = f", alias={arg!r}" if ident != arg else ""
        if arg in required:
            lines.append(
                f"    {ident}: {py} = Field(...{alias})" if alias else f"    {ident}: {py}"
            )
        else:
            opt = py if py == "Any" else f"Optional[{py}]"
            lines.append(
                f"    {ident}: {opt} = Field(default=None{alias})"
                if alias
                else f"    {ident}: {opt} = None"
            )
    return lines


def _docstring(tool: ToolSpec) -> str:
    lines = [ln for ln in tool.description.splitlines() if ln.strip()]
    doc = (lines[0] if lines else tool.name)[:90].replace("\\", "/").replace('"', "'").strip()
    return '"""' + (doc or tool.name) + ' """'


def _render_route(
    route: RoutePlan, tool: ToolSpec, model: EntityModel, fn: str, args_cls: str, path: str
) -> list[str]:
    a = arg_fields(tool)

    def arg(name: str | None) -> str:
        return f"body.{a[name]}" if name else "None"

    op = route.operation
    head = [
        f"@router.post({path!r}, operation_id={fn!r})",
    ]
    if route.code is not None:
        # Route code the model wrote and validation passed (routecode): kept as text in the
        # bundle, loaded in a restricted namespace, run with a time limit in one transaction.
        code = f"CODE_{fn.upper()}"
        return [
            f"{code} = load_route({tool.name!r}, (BUNDLE_DIR / {code_file(path)!r}).read_text("
            "encoding='utf-8'))",
            "",
            "",
            *head,
            f"def {fn}(body: {args_cls}, session: Session = Depends(db_session)) -> dict[str, Any]:",
            "    " + _docstring(tool),
            f"    return run_route({code}, body.model_dump(by_alias=True, exclude_none=True),"
            " session, m)",
        ]
    if op.startswith("file_"):
        head.append(f"def {fn}(body: {args_cls}) -> dict[str, Any]:")
        head.append("    " + _docstring(tool))
        body = _render_file_route(route, arg, tool)
        return head + ["    " + line if line else "" for line in body]
    if route.graph_verb and tool is not None:
        head.append(f"def {fn}(body: {args_cls}) -> dict[str, Any]:")
        head.append("    " + _docstring(tool))
        pairs = ", ".join(f"{a!r}: {arg(a)}" for a in tool.properties)
        g = route.graph
        return [
            *head,
            f"    return graph_tool({route.graph_verb!r}, {g['sem']!r}, {g['kinds']!r},"
            f" {{{pairs}}}, {g['message']!r})",
        ]
    if route.reads_all:
        head.append(
            f"def {fn}(body: {args_cls}, session: Session = Depends(db_session)) -> dict[str, Any]:"
        )
        head.append("    " + _docstring(tool))
        parts = ", ".join(
            f"{W.plural(e)!r}: [row_dict(r) for r in session.exec(select(m.{model_class(e)})).all()]"
            for e in route.reads_all
        )
        return [*head, f"    return {{{parts}}}"]
    if route.vcs_verb:
        head.append(f"def {fn}(body: {args_cls}) -> dict[str, Any]:")
        head.append("    " + _docstring(tool))
        pairs = ", ".join(f"{role!r}: {arg(a)}" for a, role in route.vcs_roles.items())
        return [
            *head,
            f"    return vcs_tool({route.vcs_verb!r}, {{{pairs}}}, {route.vcs_choices!r})",
        ]
    if route.sql_verb:
        head.append(f"def {fn}(body: {args_cls}) -> dict[str, Any]:")
        head.append("    " + _docstring(tool))
        given = arg(route.sql_argument)
        table = route.sql_verb == "describe"
        call = f"{route.sql_verb!r}, table={given}" if table else f"{route.sql_verb!r}, {given}"
        return [*head, f"    return sql_tool({call})"]
    if route.compute_op:
        head.append(f"def {fn}(body: {args_cls}) -> dict[str, Any]:")
        head.append("    " + _docstring(tool))
        pairs = ", ".join(f"{role!r}: {arg(a)}" for a, role in route.compute_roles.items())
        return [
            *head,
            f"    a = {{k: v for k, v in {{{pairs}}}.items() if v is not None}}",
            *([f"    a.update({route.compute_constants!r})"] if route.compute_constants else []),
            f"    return compute({route.compute_op!r}, a, {route.response_fields!r})",
        ]
    entity = model.entity(route.entity or "")
    cls = f"m.{model_class(entity.name)}"
    key = entity.key
    head.append(
        f"def {fn}(body: {args_cls}, session: Session = Depends(db_session)) -> dict[str, Any]:"
    )
    head.append("    " + _docstring(tool))
    out: list[str] = []
    ename = entity.name
    for argname, target in route.references.items():
        tgt = model.entity(target)
        out.append(f"require_row(session, m.{model_class(tgt.name)}, {arg(argname)}, {tgt.name!r})")

    def locate() -> None:
        pad = ""
        if route.key_argument:
            out.append(f"row = get_row(session, {cls}, {arg(route.key_argument)}, {ename!r})")
            if route.key_argument in tool.required:
                return
            # An optional key: without it the tool acts on the first row matching the filters.
            out[-1] = f"if {arg(route.key_argument)} is not None:"
            out.append(f"    row = get_row(session, {cls}, {arg(route.key_argument)}, {ename!r})")
            out.append("else:")
            pad = "    "
        out.append(f"{pad}stmt = select({cls})")
        for f, argname in route.filters.items():
            out.append(f"{pad}if {arg(argname)} is not None:")
            out.append(f"{pad}    stmt = stmt.where({cls}.{f} == {arg(argname)})")
        out.append(f"{pad}row = first_row(session, stmt.order_by({cls}.{key}), {ename!r})")

    def assign() -> None:
        for f, argname in route.assignments.items():
            out.append(f"if {arg(argname)} is not None:")
            out.append(f"    row.{f} = {arg(argname)}")

    def move() -> None:
        # Amounts moved onto balances (amounts.py), in the same transaction as the row.
        for mv in route.moves:
            cls_mv = f"m.{model_class(mv.entity)}"
            out.append(
                f"move_amount(session, {cls_mv}, {arg(mv.argument)}, {mv.entity!r}, "
                f"{mv.field!r}, {mv.sign}, {arg(mv.amount)}, {mv.no_overdraft!r})"
            )

    def commit(refresh: bool = True) -> None:
        if route.commit:
            out.append("session.add(row)")
            out.append("session.commit()")
            if refresh:
                out.append("session.refresh(row)")

    if op == "create":
        key_type = entity.field(key).type
        if route.key_argument:
            out.append(f"key = {arg(route.key_argument)}")
            out.append("if key is None:")
        if key_type == "integer":
            keyexpr = "None"
        else:
            keyexpr = f"next_key(session, {cls}, {key!r}, {W.id_prefix(ename)!r})"
        if route.key_argument:
            out.append(f"    key = {keyexpr}")
            out.append(f"elif session.get({cls}, key) is not None:")
            out.append(
                f"    raise ToolFailure('conflict', f'{ename} {{key!r}} already exists', 409)"
            )
        else:
            out.append(f"key = {keyexpr}")
        values = ", ".join(f"{f}={arg(argname)}" for f, argname in route.assignments.items())
        out.append(f"row = {cls}({key}=key{', ' + values if values else ''})")
        if route.transition is None:
            status_default = next(
                (
                    f
                    for f in entity.fields
                    if f.enum
                    and f.name in {"status", "state", "stage"}
                    and f.name not in route.assignments
                ),
                None,
            )
            if status_default is not None and status_default.enum:
                out.append(f"row.{status_default.name} = {status_default.enum[0]!r}")
        move()
        commit()
        said = _confirmation(tool, ename)
        out.append(f"return {{{ename!r}: row_dict(row){said}}}")
    elif op == "read" and not route.key_argument and documents_records(tool):
        # `get_watchlist()` documents a list: every record its filters match, under items (the
        # first one stays under its kind, as for any read).
        locate()
        out.append(f"rows = list(session.exec(stmt.order_by({cls}.{key})).all())")
        out.append(f"return {{{ename!r}: row_dict(row), **page(rows, None)}}")
    elif op == "read":
        locate()
        out.append(f"return {{{ename!r}: row_dict(row)}}")
    elif op in {"list", "search", "compute"}:
        out.append(f"stmt = select({cls})")
        for f, argname in route.filters.items():
            out.append(f"if {arg(argname)} is not None:")
            out.append(f"    stmt = stmt.where({cls}.{f} == {arg(argname)})")
        out.append(f"rows = list(session.exec(stmt.order_by({cls}.{key})).all())")
        if route.text_argument:
            out.append(
                f"rows = text_match(rows, {arg(route.text_argument)}, {route.text_fields!r})"
            )
        out.append(f"return page(rows, {arg(route.limit_argument)})")
    elif op == "update":
        locate()
        assign()
        move()
        commit()
        out.append(f"return {{{ename!r}: row_dict(row)}}")
    elif op == "action":
        locate()
        if route.transition:
            t = route.transition
            out.append(
                f"check_transition(row, {t.field!r}, {t.to_value!r}, {t.from_values!r}, {ename!r})"
            )
            out.append(f"row.{t.field} = {t.to_value!r}")
        assign()
        move()
        commit()
        out.append(f"return {{{ename!r}: row_dict(row)}}")
    elif op == "delete" and idempotent_delete(tool, op):
        # Declared idempotent (MCP `idempotentHint`): what is already gone is deleted, not an error.
        start = len(out)
        locate()
        body = ["    " + line for line in out[start:]]
        del out[start:]
        out += ["try:", *body, "except ToolFailure as exc:", "    if exc.code != 'not_found':"]
        out += ["        raise", f"    return {{'deleted': False, {key!r}: None}}"]
        out.append(f"deleted_key = row.{key}")
        out.append("session.delete(row)")
        if route.commit:
            out.append("session.commit()")
        out.append(f"return {{'deleted': True, {key!r}: deleted_key}}")
    elif op == "delete":
        locate()
        out.append(f"deleted_key = row.{key}")
        out.append("session.delete(row)")
        if route.commit:
            out.append("session.commit()")
        out.append(f"return {{'deleted': True, {key!r}: deleted_key}}")
    else:
        out.append(f"raise ToolFailure('unsupported', 'operation {op} is not supported', 501)")
    return head + ["    " + line for line in out]


def _confirmation(tool: ToolSpec, entity: str) -> str:
    """`, 'message': ...` for a create whose definition documents no output: real servers confirm
    a write in words, and the words are the ones its description uses ("Add a business insight
    to the memo" -> "Business insight added to the memo"), else its name's."""
    if tool.output_schema is not None:
        return ""
    key = "message" if entity != "message" else "confirmation"
    return f", {key!r}: {write_confirmation(tool) or confirmation(tool)!r}"


def _render_file_route(route: RoutePlan, arg: Any, tool: ToolSpec | None = None) -> list[str]:
    op = route.operation
    if route.file_verb:
        pairs = ", ".join(
            f"{role!r}: {arg(a)}" for a, role in route.file_roles.items() if role != "other"
        )
        return [
            f"a = {{k: v for k, v in {{{pairs}}}.items() if v is not None}}",
            f"return shell({route.file_verb!r}, a, {route.response_fields!r})",
        ]
    style = text_result(tool, op) if tool is not None else None
    if style is not None:
        pairs = ", ".join(f"{role!r}: {arg(a)}" for a, role in style.roles.items())
        return [
            f"a = {{k: v for k, v in {{{pairs}}}.items() if v is not None}}",
            f"return file_text({style.op!r}, a, {style.model_dump()!r})",
        ]
    media = media_result(tool, op) if tool is not None else None
    if media is not None:
        return [f"return file_media({{'path': {arg(media.path)}}}, {media.model_dump()!r})"]
    p = arg(route.path_argument)
    out: list[str] = []
    if op == "file_read":
        out += [
            f"path = ws_path({p} or '')",
            "if not path.is_file():",
            "    raise ToolFailure('not_found', 'no such file', 404)",
            "return {'path': ws_rel(path), 'content': path.read_text(encoding='utf-8', errors='replace')}",
        ]
    elif op == "file_list":
        out += [
            f"path = ws_path({p} or '/')" if route.path_argument else "path = ws_path('/')",
            "if not path.exists():",
            "    raise ToolFailure('not_found', 'no such directory', 404)",
            "entries = sorted(path.rglob('*') if path.is_dir() else [path])",
            # A symlink is listed as one, never stat'ed through: its target may lie outside.
            "items = [{'path': ws_rel(e), 'type': 'symlink' if e.is_symlink() else 'directory' if e.is_dir() else 'file', 'size': e.stat().st_size if e.is_file() and not e.is_symlink() else 0} for e in entries]",
            "return {'path': ws_rel(path), 'items': items, 'count': len(items)}",
        ]
    elif op == "file_delete":
        out += [
            f"path = ws_path({p} or '')",
            "if path == workspace_root().resolve():",
            "    raise ToolFailure('invalid_path', 'cannot delete the workspace root')",
            "if path.is_dir():",
            "    shutil.rmtree(path)",
            "elif path.is_file():",
            "    path.unlink()",
            "else:",
            "    raise ToolFailure('not_found', 'no such file', 404)",
            "return {'path': ws_rel(path), 'deleted': True}",
        ]
    elif op == "file_write":
        out.append(f"path = ws_path({p} or '')")
        if route.target_argument:
            out += [
                f"target = ws_path({arg(route.target_argument)} or '')",
                "if not path.exists():",
                "    raise ToolFailure('not_found', 'no such file', 404)",
                "target.parent.mkdir(parents=True, exist_ok=True)",
                "shutil.move(str(path), str(target))",
                "return {'path': ws_rel(target), 'moved_from': ws_rel(path)}",
            ]
        elif route.content_argument:
            out += [
                "if path == workspace_root().resolve() or path.is_dir():",
                "    raise ToolFailure('invalid_path', 'path is a directory')",
                "path.parent.mkdir(parents=True, exist_ok=True)",
                f"content = {arg(route.content_argument)}",
                "text = content if isinstance(content, str) else json.dumps(content)",
                "with path.open('a' if APPEND else 'w', encoding='utf-8') as fh:".replace(
                    "APPEND", "True" if "append" in route.tool.lower() else "False"
                ),
                "    fh.write(text)",
                "return {'path': ws_rel(path), 'bytes': len(text.encode('utf-8'))}",
            ]
        elif tool is not None and (pair := edit_pairs(tool)) is not None:
            # `edit_file(path, edits=[{oldText, newText}])`: replacements in an existing file;
            # an old text that is not there refuses the whole edit (nothing half-written).
            edits, old, new = pair
            out += [
                "if not path.is_file():",
                "    raise ToolFailure('not_found', f'no such file: {path.name}', 404)",
                "text = path.read_text(encoding='utf-8')",
                f"for e in {arg(edits)} or []:",
                f"    o, n = (e.get({old!r}), e.get({new!r})) if isinstance(e, dict) else (None, None)",
                "    if not isinstance(o, str) or not isinstance(n, str) or o not in text:",
                "        raise ToolFailure('no_match', f'could not find text to replace: {o!r}')",
                "    text = text.replace(o, n, 1)",
                "path.write_text(text, encoding='utf-8')",
                "return {'path': ws_rel(path), 'edits': len(" + arg(edits) + " or [])}",
            ]
        else:
            out += [
                "path.mkdir(parents=True, exist_ok=True)",
                "return {'path': ws_rel(path), 'created': True}",
            ]
    return out


def route_path(i: int, tool: str) -> str:
    """The FastAPI path of the i-th route of a plan."""
    return f"/tools/{i:03d}_{W.identifier(tool)}"


def code_file(path: str) -> str:
    """Where a route's model-written code is kept in the bundle (relative to its folder)."""
    return "routes_code/" + path.rsplit("/", 1)[-1] + ".py"


def render_server(spec: MCPSpec, model: EntityModel, plan: BackendPlan) -> str:
    tools = {t.name: t for t in spec.tools}
    lines = [
        f'"""MCP server of {spec.name.replace(chr(34), chr(39))[:80]} (generated by weft-envsynth).',
        "",
        "A FastAPI app with one route per tool (SQLModel sessions on the session binding's DB, file",
        "tools on its workspace) and create_server(), the FastMCP server whose tools carry the spec's",
        'names and input schemas and call those routes in-process."""',
        "",
        "import json  # noqa: F401",
        "import shutil  # noqa: F401",
        "from typing import Any, Literal, Optional  # noqa: F401",
        "",
        "from fastapi import APIRouter, Depends, FastAPI",
        "from fastmcp import FastMCP",
        "from pydantic import BaseModel, ConfigDict, Field  # noqa: F401",
        "from sqlmodel import Session, select  # noqa: F401",
        "",
        "from . import models as m  # noqa: F401",
        "from .sqlrt import sql_tool  # noqa: F401",
        "from .vcsrt import vcs_tool  # noqa: F401",
        "from .graphrt import graph_tool  # noqa: F401",
        "from .fsrt import file_media, file_text  # noqa: F401",
        "from .computert import compute  # noqa: F401",
        *(
            ["from .codert import load_route, run_route"]
            if any(r.code is not None for r in plan.routes)
            else []
        ),
        "from .runtime import (  # noqa: F401",
        "    BUNDLE_DIR,",
        "    ToolFailure,",
        "    build_mcp,",
        "    certified_tools,",
        "    check_transition,",
        "    db_session,",
        "    first_row,",
        "    get_row,",
        "    install_error_handlers,",
        "    move_amount,",
        "    next_key,",
        "    page,",
        "    require_row,",
        "    row_dict,",
        "    shell,",
        "    text_match,",
        "    workspace_root,",
        "    ws_path,",
        "    ws_rel,",
        ")",
        "",
        f"SERVER_NAME = {spec.slug!r}",
        "router = APIRouter()",
        "ROUTES: dict[str, str] = {}",
        "# Per tool its documented response, as results are shaped after it (weft_envsynth.responses).",
        "SHAPES: dict[str, dict[str, Any]] = {}",
        "",
        "",
    ]
    used_fns: set[str] = set()
    for i, route in enumerate(plan.routes):
        tool = tools[route.tool]
        fn = "tool_" + W.identifier(route.tool, prefix="t")
        while fn in used_fns:
            fn = f"{fn}_{i}"
        used_fns.add(fn)
        args_cls = W.class_name(route.tool) + "Args"
        path = route_path(i, route.tool)
        lines += _render_args_model(tool, args_cls)
        lines += ["", ""]
        lines += _render_route(route, tool, model, fn, args_cls, path)
        lines += ["", "", f"ROUTES[{route.tool!r}] = {path!r}"]
        shape = response_shape(tool, route, model, spec.tools)
        if shape is not None:
            lines.append(f"SHAPES[{route.tool!r}] = {shape!r}")
        lines += ["", ""]
    lines += [
        "def create_app() -> FastAPI:",
        '    """The FastAPI backend: one POST route per tool; the body is the tool\'s arguments."""',
        "    app = FastAPI(title=SERVER_NAME)",
        "    install_error_handlers(app)",
        "    app.include_router(router)",
        "    return app",
        "",
        "",
        "def create_server() -> FastMCP:",
        '    """The FastMCP server of this bundle (serves the certified tools once manifest.json exists)."""',
        "    return build_mcp(create_app(), SERVER_NAME, ROUTES, certified_tools(), SHAPES)",
        "",
    ]
    return "\n".join(lines)
