"""Node 3, contracts: per tool the argument→state mapping, reads, writes, returns, preconditions, errors.

Programmatic strategy: derived from the tool's effect (analysis), its argument names and the schema.
LLM strategy: the model returns a ContractSet; each contract is checked against the spec and the
schema, and a contract that fails the check is replaced by the programmatic one.
"""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel

from weft_core.models import (
    ArgMapping,
    ContractSet,
    Entity,
    EntityModel,
    ErrorCase,
    MCPSpec,
    StateKind,
    ToolContract,
    ToolSpec,
)
from weft_envsynth._internal import words as W
from weft_envsynth._internal.jsonschema import string_enum
from weft_envsynth.amounts import amount_moves
from weft_envsynth.analyze import _norm_arg, id_argument_entity
from weft_envsynth.plans import Analysis, ToolEffect
from weft_envsynth.unify import resolve

_ENTITY_OPS = {"create", "read", "list", "search", "update", "delete", "action", "compute"}
_TYPE_SCHEMA = {
    "string": {"type": "string"},
    "integer": {"type": "integer"},
    "number": {"type": "number"},
    "boolean": {"type": "boolean"},
    "date": {"type": "string", "format": "date"},
    "datetime": {"type": "string", "format": "date-time"},
    "json": {},
}


def entity_schema(entity: Entity) -> dict[str, Any]:
    props: dict[str, dict[str, Any]] = {}
    for f in entity.fields:
        s: dict[str, Any] = dict(_TYPE_SCHEMA[f.type])
        if f.enum:
            s["enum"] = list(f.enum)
        props[f.name] = s
    return {"type": "object", "properties": props, "required": [entity.key]}


def _returns(op: str, entity: Entity | None) -> dict[str, Any]:
    if op.startswith("file_"):
        return {"type": "object", "properties": {"path": {"type": "string"}}}
    assert entity is not None
    row = entity_schema(entity)
    if op in {"list", "search", "compute"}:
        return {
            "type": "object",
            "properties": {
                "items": {"type": "array", "items": row},
                "count": {"type": "integer"},
                "total": {"type": "integer"},
            },
            "required": ["items", "count", "total"],
        }
    if op == "delete":
        return {
            "type": "object",
            "properties": {
                "deleted": {"type": "boolean"},
                entity.key: row["properties"][entity.key],
            },
        }
    return {"type": "object", "properties": {entity.name: row}, "required": [entity.name]}


def _file_mappings(tool: ToolSpec) -> list[ArgMapping]:
    out = []
    paths = 0
    for arg in tool.properties:
        norm = W.identifier(arg)
        if norm in W.PATH_ARGS and paths < 2:
            out.append(ArgMapping(argument=arg, role="path"))
            paths += 1
        elif norm in W.CONTENT_ARGS:
            out.append(ArgMapping(argument=arg, role="content"))
        else:
            out.append(ArgMapping(argument=arg, role="option"))
    if paths == 0:
        # A file tool whose path argument has an unusual name: the first required string is the path.
        for m in out:
            schema = tool.properties.get(m.argument, {})
            if m.role == "option" and isinstance(schema, dict) and schema.get("type") == "string":
                m.role = "path"
                break
    return out


def contract_programmatic(tool: ToolSpec, effect: ToolEffect, model: EntityModel) -> ToolContract:
    op = effect.operation
    if effect.state_kind == StateKind.WORKSPACE or op.startswith("file_"):
        file_maps = _file_mappings(tool)
        if op == "file_read" and not any(m.role == "path" for m in file_maps):
            op = "file_list"  # e.g. get_current_directory(): nothing to read but the workspace itself
        file_errors = [
            ErrorCase(
                condition="path outside the workspace",
                message="invalid_path: path is outside the workspace",
            )
        ]
        if op in {"file_read", "file_delete"}:
            file_errors.append(
                ErrorCase(condition="file does not exist", message="not_found: no such file")
            )
        return ToolContract(
            tool=tool.name,
            state_kind=StateKind.WORKSPACE,
            operation=op,
            entity=None,
            mappings=file_maps,
            reads=["workspace"] if op in {"file_read", "file_list"} else [],
            writes=["workspace"] if op in {"file_write", "file_delete"} else [],
            returns=_returns(op, None),
            preconditions=[],
            errors=file_errors,
        )
    entity = model.entity(effect.entity or "")
    fields = {f.name: f for f in entity.fields}
    mappings: list[ArgMapping] = []
    has_key = False
    has_text = False  # one free-text argument; further query-like ones are options
    for arg, schema in tool.properties.items():
        norm = _norm_arg(arg)
        target = id_argument_entity(arg, schema)
        if target is not None and norm not in fields:
            # `card_id` on a tool about credit cards: the key when the definition says so.
            desc = str(schema.get("description", "")) if isinstance(schema, dict) else ""
            target = resolve(W.identifier(target), desc, {entity.name}) or target
        if (
            norm == "id"
            or norm == entity.key
            or (
                target is not None
                and W.identifier(target) == entity.name
                and entity.key.endswith("_id")
            )
        ) and not has_key:
            mappings.append(
                ArgMapping(argument=arg, entity=entity.name, field=entity.key, role="key")
            )
            has_key = True
            continue
        if (
            op in {"list", "search", "compute", "read"}
            and norm in W.LIMIT_ARGS
            and "integer" in str(schema.get("type") if isinstance(schema, dict) else "")
        ):
            mappings.append(ArgMapping(argument=arg, role="option"))
            continue
        if op in {"list", "search", "compute"} and norm in W.QUERY_ARGS and not has_text:
            has_text = True
            mappings.append(ArgMapping(argument=arg, entity=entity.name, field=None, role="filter"))
            continue
        if op in {"list", "search", "compute", "read"} and norm in W.OPTION_ARGS:
            mappings.append(ArgMapping(argument=arg, role="option"))
            continue
        f = fields.get(norm)
        if (
            f is None
            or f.primary_key
            or (f.type == "json" and op in {"list", "search", "compute", "read", "delete"})
        ):
            mappings.append(ArgMapping(argument=arg, role="option"))
            continue
        if f.foreign_key and op in {"create", "update", "action"}:
            mappings.append(
                ArgMapping(argument=arg, entity=entity.name, field=f.name, role="reference")
            )
        elif op in {"create", "update", "action"}:
            mappings.append(
                ArgMapping(argument=arg, entity=entity.name, field=f.name, role="value")
            )
        else:
            mappings.append(
                ArgMapping(argument=arg, entity=entity.name, field=f.name, role="filter")
            )
    errors: list[ErrorCase] = []
    pre: list[str] = []
    key_arg = next((m.argument for m in mappings if m.role == "key"), None)
    if key_arg and op in {"read", "update", "delete", "action"}:
        pre.append(f"{entity.name} with {entity.key} = {key_arg} exists")
        errors.append(
            ErrorCase(
                condition=f"{entity.key} not found", message=f"not_found: {entity.name} not found"
            )
        )
    elif op in {"read", "update", "delete", "action"}:
        errors.append(
            ErrorCase(
                condition=f"no {entity.name} matches",
                message=f"not_found: no matching {entity.name}",
            )
        )
    for m in mappings:
        if m.role == "reference" and m.field:
            ref = fields[m.field].foreign_key or ""
            pre.append(f"{ref.split('.')[0]} {m.argument} exists")
            errors.append(
                ErrorCase(
                    condition=f"{m.argument} not found",
                    message=f"not_found: {ref.split('.')[0]} not found",
                )
            )
        if m.role in {"value", "filter"} and m.field and fields[m.field].enum:
            errors.append(
                ErrorCase(
                    condition=f"{m.argument} not one of {fields[m.field].enum}",
                    message="invalid_arguments",
                )
            )
    if op == "create":
        for f in entity.fields:
            if f.unique and any(m.field == f.name for m in mappings):
                errors.append(
                    ErrorCase(
                        condition=f"{f.name} already used",
                        message=f"conflict: {entity.name}.{f.name} must be unique",
                    )
                )
        if key_arg:
            errors.append(
                ErrorCase(
                    condition=f"{entity.key} already exists",
                    message=f"conflict: {entity.name} exists",
                )
            )
    for tr in effect.transitions:
        pre.append(f"{tr.entity}.{tr.field} in {tr.from_values}")
        errors.append(
            ErrorCase(
                condition=f"{tr.field} is already {tr.to_value}",
                message=f"invalid_state: {entity.name} cannot become {tr.to_value}",
            )
        )
    reads = list(effect.reads) or [entity.name]
    writes = [entity.name] if op in {"create", "update", "delete", "action"} else []
    contract = ToolContract(
        tool=tool.name,
        state_kind=effect.state_kind,
        operation=op,
        entity=entity.name,
        mappings=mappings,
        reads=reads,
        writes=writes,
        returns=_returns(op, entity),
        preconditions=pre,
        errors=errors,
        transitions=list(effect.transitions),
    )
    # Balances the call moves an amount on (amounts.py): written as `entity.field`.
    for mv in amount_moves(tool, contract, model):
        where = f"{mv.entity}.{mv.field}"
        contract.reads = list(dict.fromkeys([*contract.reads, mv.entity]))
        contract.writes = list(dict.fromkeys([*contract.writes, where]))
        if mv.no_overdraft:
            contract.preconditions.append(f"{where} of {mv.argument} >= {mv.amount}")
            contract.errors.append(
                ErrorCase(
                    condition=f"{where} of {mv.argument} below {mv.amount}",
                    message=f"insufficient_funds: {mv.entity} {mv.field} too low",
                )
            )
    return contract


def check_contract(tool: ToolSpec, contract: ToolContract, model: EntityModel) -> list[str]:
    """Problems of one contract against its tool and the schema."""
    problems: list[str] = []
    if contract.tool != tool.name:
        problems.append(f"contract names tool {contract.tool!r}")
    args = set(tool.properties)
    mapped = [m.argument for m in contract.mappings]
    for a in sorted(args - set(mapped)):
        problems.append(f"{tool.name}: argument {a!r} is not mapped")
    for a in sorted(set(mapped) - args):
        problems.append(f"{tool.name}: mapping for unknown argument {a!r}")
    if contract.state_kind == StateKind.WORKSPACE:
        if not contract.operation.startswith("file_"):
            problems.append(f"{tool.name}: workspace tool with operation {contract.operation}")
        if (
            not any(m.role == "path" for m in contract.mappings)
            and contract.operation != "file_list"
        ):
            problems.append(f"{tool.name}: workspace tool without a path argument")
        return problems
    if contract.operation not in _ENTITY_OPS:
        problems.append(f"{tool.name}: operation {contract.operation} needs workspace state")
        return problems
    try:
        entity = model.entity(contract.entity or "")
    except KeyError:
        return [*problems, f"{tool.name}: unknown entity {contract.entity!r}"]
    fields = {f.name: f for f in entity.fields}
    for m in contract.mappings:
        if m.role in {"value", "reference", "key"} and (m.field not in fields):
            problems.append(
                f"{tool.name}: argument {m.argument!r} maps to missing field {entity.name}.{m.field}"
            )
        if m.role == "filter" and m.field is not None and m.field not in fields:
            problems.append(
                f"{tool.name}: filter {m.argument!r} on missing field {entity.name}.{m.field}"
            )
        if m.role == "key" and m.field != entity.key:
            problems.append(
                f"{tool.name}: key argument {m.argument!r} maps to {m.field}, not the key {entity.key}"
            )
        if m.role in {"value", "filter"} and m.field in fields and fields[m.field].enum:
            enum = string_enum(tool.properties.get(m.argument))
            if enum and set(enum) - set(fields[m.field].enum or []):
                problems.append(
                    f"{tool.name}: {m.argument!r} allows values {entity.name}.{m.field} rejects"
                )
    if contract.operation in {"create", "update", "action", "delete"} and entity.reference_data:
        problems.append(f"{tool.name}: writes reference data {entity.name}")
    for tr in contract.transitions:
        if tr.field not in fields:
            problems.append(f"{tool.name}: transition on missing field {tr.field}")
    return problems


def contracts(
    spec: MCPSpec,
    analysis: Analysis,
    model: EntityModel,
    llm: BaseChatModel | None = None,
    *,
    only: set[str] | None = None,
    previous: ContractSet | None = None,
    feedback: list[str] | None = None,
    force_programmatic: set[str] | None = None,
) -> tuple[ContractSet, list[str], dict[str, str]]:
    """Contracts for every tool (or only `only`, keeping `previous` for the rest).

    Returns the set, notes, and tools that got no contract with the reason.
    """
    notes: list[str] = []
    failed: dict[str, str] = {}
    kept = {c.tool: c for c in (previous.contracts if previous else [])}
    proposed: dict[str, ToolContract] = {}
    if llm is not None:
        from weft_envsynth._internal.llm import ask_or_none

        targets = [t for t in spec.tools if only is None or t.name in only]
        prompt = (
            "Write a contract for each of these tools: argument→state mappings (role key/filter/value/"
            "reference/path/content/option with entity and field), reads, writes, returns (JSON Schema), "
            "preconditions and error cases, over this schema.\n"
            f"Schema: {model.model_dump_json()}\nTools: "
            + ", ".join(f"{t.name}{list(t.properties)}" for t in targets)
        )
        if feedback:
            prompt += "\nValidation found these mapping errors; fix them:\n- " + "\n- ".join(
                feedback[:20]
            )
        answer, err = ask_or_none(llm, ContractSet, prompt)
        if answer is None:
            notes.append(f"contracts: model output unusable ({err}); used programmatic contracts")
        else:
            proposed = {c.tool: c for c in answer.contracts}
    out: list[ToolContract] = []
    for tool in spec.tools:
        if only is not None and tool.name not in only and tool.name in kept:
            out.append(kept[tool.name])
            continue
        effect = analysis.effect(tool.name)
        cand = None if tool.name in (force_programmatic or set()) else proposed.get(tool.name)
        if cand is not None:
            problems = check_contract(tool, cand, model)
            if not problems:
                out.append(cand)
                continue
            notes.append(f"contracts: model contract for {tool.name} rejected ({problems[0]})")
        try:
            c = contract_programmatic(tool, effect, model)
        except KeyError as exc:
            failed[tool.name] = f"no contract: unknown entity {exc}"
            continue
        problems = check_contract(tool, c, model)
        if problems:
            failed[tool.name] = f"no valid contract: {problems[0]}"
            continue
        out.append(c)
    return ContractSet(mcp=spec.slug, contracts=out), notes, failed
