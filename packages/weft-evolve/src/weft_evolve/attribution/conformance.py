"""Does a replayed call do what its tool contract (contracts.json) says? (§3.2.2, environment)

The contract states each argument's role (key, value, filter), the entity read and written, and
the declared error cases. A reference call is judged against the state MegaMCP kept:

- an error whose code the contract never declares (e.g. `internal_error`) is the backend's;
- `not_found` for a key whose row exists in the state the call ran on is the backend's (stale or
  wrong reads); for a row that is absent, the task's initial state or binding is at fault;
- a write must leave every value argument in the field the contract maps it to;
- a read must return the row as the DB holds it, and a filtered list only matching rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

from pydantic import Field

from weft_core.checks import values_equal
from weft_core.models import ContractSet, ToolContract
from weft_core.models._base import WeftModel
from weft_core.state import DBState
from weft_evolve.models import CallRecord

Verdict = Literal["conformant", "environment", "task", "unknown"]
_WRITE_OPS = {"create", "update", "action", "delete"}
_READ_OPS = {"read", "list", "search"}


class CallJudgement(WeftModel):
    """One reference call judged against its contract and the state it ran on."""

    verdict: Verdict
    rule: str
    detail: str
    data: dict[str, Any] = Field(default_factory=dict)


def declared_codes(contract: ToolContract) -> set[str]:
    codes = {e.message.split(":", 1)[0].strip() for e in contract.errors}
    # Argument validation is the host's and every tool's, declared or not.
    return codes | {"invalid_arguments"}


def _key_mapping(contract: ToolContract) -> tuple[str, str, str] | None:
    """(argument, entity, field) of the contract's key argument."""
    for m in contract.mappings:
        if m.role == "key" and m.entity and m.field:
            return m.argument, m.entity, m.field
    return None


def _row_by(db: DBState | None, table: str, field: str, value: Any) -> dict[str, Any] | None:
    if db is None or table not in db.tables:
        return None
    for row in db.tables[table].values():
        if values_equal(row.get(field), value):
            return row
    return None


def _objects(value: Any) -> Iterator[dict[str, Any]]:
    if isinstance(value, dict):
        yield value
        for v in value.values():
            yield from _objects(v)
    elif isinstance(value, list):
        for v in value:
            yield from _objects(v)


def _entity_key(db: DBState | None, table: str) -> str | None:
    if db is None or table not in db.schemas:
        return None
    pk = db.schemas[table].primary_key
    return pk[0] if len(pk) == 1 else None


def judge_call(
    call: CallRecord,
    contract: ToolContract | None,
    before: DBState | None,
    after: DBState | None,
    *,
    later_writes: set[str] | None = None,
) -> CallJudgement:
    """Judge one replayed reference call. `before`/`after`: the MCP's state around its node;
    `later_writes`: entities later calls of the same node write (then `after` is not this
    call's state and its write cannot be judged from it)."""
    if contract is None:
        return CallJudgement(
            verdict="unknown", rule="no_contract", detail=f"no contract for {call.tool}"
        )
    if call.is_error:
        return _judge_error(call, contract, before)
    if contract.operation in _WRITE_OPS:
        if contract.entity in (later_writes or set()):
            return CallJudgement(
                verdict="unknown", rule="overwritten_in_node", detail="a later call rewrites it"
            )
        return _judge_write(call, contract, before, after)
    if contract.operation in _READ_OPS:
        return _judge_read(call, contract, before)
    return CallJudgement(
        verdict="conformant", rule="no_state_contract", detail="nothing to compare"
    )


def _judge_error(call: CallRecord, contract: ToolContract, before: DBState | None) -> CallJudgement:
    code = call.error_code or "unknown"
    data: dict[str, Any] = {"tool": call.tool, "error": call.text[:300], "code": code}
    if code not in declared_codes(contract):
        return CallJudgement(
            verdict="environment",
            rule="undeclared_error",
            detail=f"{call.tool} failed with {code!r}, which its contract never declares "
            f"(declared: {sorted(declared_codes(contract))})",
            data=data,
        )
    key = _key_mapping(contract)
    if code == "not_found" and key is not None and key[0] in call.arguments:
        arg, entity, field = key
        value = call.arguments[arg]
        row = _row_by(before, entity, field, value)
        data |= {"entity": entity, "field": field, "value": value, "row_present": row is not None}
        if row is not None:
            return CallJudgement(
                verdict="environment",
                rule="not_found_but_present",
                detail=f"{call.tool} says {entity} {value!r} is not found, but the state it ran on "
                f"holds that row",
                data=data,
            )
        return CallJudgement(
            verdict="task",
            rule="key_absent_from_state",
            detail=f"{entity} {field}={value!r} does not exist in the state the task starts from",
            data=data,
        )
    if code in ("invalid_state", "conflict", "not_found"):
        return CallJudgement(
            verdict="task",
            rule="declared_precondition_failed",
            detail=f"{call.tool} refused with its declared error {code!r}: the task's state "
            f"violates the precondition ({call.text[:160]})",
            data=data,
        )
    return CallJudgement(
        verdict="task",
        rule="reference_arguments_rejected",
        detail=f"{call.tool} rejected the reference arguments ({call.text[:160]})",
        data=data,
    )


def _judge_write(
    call: CallRecord, contract: ToolContract, before: DBState | None, after: DBState | None
) -> CallJudgement:
    if contract.operation == "delete" or after is None:
        return CallJudgement(
            verdict="conformant", rule="write_unchecked", detail="no value mapping"
        )
    values = [
        m
        for m in contract.mappings
        if m.role == "value" and m.entity and m.field and m.argument in call.arguments
    ]
    if not values:
        return CallJudgement(
            verdict="conformant", rule="no_value_arguments", detail="nothing written"
        )
    key = _key_mapping(contract)
    rows: list[dict[str, Any]] = []
    table = values[0].entity or ""
    if key is not None and key[0] in call.arguments and contract.operation != "create":
        row = _row_by(after, key[1], key[2], call.arguments[key[0]])
        rows = [row] if row is not None else []
        table = key[1]
    elif contract.operation == "create":
        old = set((before.tables.get(table) or {}) if before else {})
        rows = [r for k, r in (after.tables.get(table) or {}).items() if k not in old]
    else:
        # An update located by something other than a key (e.g. a reference): any row of the
        # table may be the one it wrote.
        rows = list((after.tables.get(table) or {}).values())
    if not rows:
        return CallJudgement(
            verdict="environment",
            rule="write_left_no_row",
            detail=f"{call.tool} succeeded but no {table} row it should have written exists",
            data={"tool": call.tool, "table": table},
        )
    best: tuple[int, dict[str, Any], list[dict[str, Any]]] | None = None
    for row in rows:
        wrong = [
            {
                "argument": m.argument,
                "field": m.field,
                "expected": call.arguments[m.argument],
                "got": row.get(m.field or ""),
                "found_in": [
                    f
                    for f, v in row.items()
                    if f != m.field and values_equal(v, call.arguments[m.argument])
                ],
            }
            for m in values
            if call.arguments[m.argument] is not None
            and not values_equal(row.get(m.field or ""), call.arguments[m.argument])
        ]
        if best is None or len(wrong) < best[0]:
            best = (len(wrong), row, wrong)
    assert best is not None
    if best[0] == 0:
        return CallJudgement(verdict="conformant", rule="write_matches_contract", detail="ok")
    w = best[2][0]
    how = f"the value landed in {w['found_in']}" if w["found_in"] else "the argument was ignored"
    return CallJudgement(
        verdict="environment",
        rule="write_mismatch",
        detail=f"{call.tool}: argument {w['argument']}={w['expected']!r} should set "
        f"{table}.{w['field']}, which holds {w['got']!r} ({how})",
        data={"tool": call.tool, "table": table, "mismatches": best[2]},
    )


def _judge_read(call: CallRecord, contract: ToolContract, before: DBState | None) -> CallJudgement:
    entity = contract.entity
    if entity is None or before is None or entity not in before.tables:
        return CallJudgement(
            verdict="conformant", rule="read_unchecked", detail="no table to compare"
        )
    pk = _entity_key(before, entity)
    if pk is None:
        return CallJudgement(verdict="conformant", rule="read_unchecked", detail="no single key")
    stale: list[dict[str, Any]] = []
    for obj in _objects(call.value):
        if pk not in obj:
            continue
        row = _row_by(before, entity, pk, obj[pk])
        if row is None:
            stale.append({"key": obj[pk], "field": pk, "returned": obj[pk], "db": None})
            continue
        for f, v in obj.items():
            if f in row and not isinstance(v, dict | list) and not values_equal(row[f], v):
                stale.append({"key": obj[pk], "field": f, "returned": v, "db": row[f]})
    filters = [
        m
        for m in contract.mappings
        if m.role == "filter" and m.field and m.argument in call.arguments
    ]
    ignored: list[dict[str, Any]] = []
    for m in filters:
        want = call.arguments[m.argument]
        if want is None or isinstance(want, dict | list):
            continue
        for obj in _objects(call.value):
            if pk in obj and (m.field or "") in obj and not values_equal(obj[m.field or ""], want):
                ignored.append({"argument": m.argument, "key": obj[pk], "got": obj[m.field or ""]})
    returned = [o for o in _objects(call.value) if pk in o]
    if not returned and filters:
        # An empty answer: does the state hold what the call asked for?
        rows = list(before.tables[entity].values())
        wanted = {
            m.argument: (m.field or "", call.arguments[m.argument])
            for m in filters
            if call.arguments[m.argument] is not None
            and not isinstance(call.arguments[m.argument], dict | list)
        }
        matching = [r for r in rows if all(values_equal(r.get(f), v) for f, v in wanted.values())]
        if matching:
            return CallJudgement(
                verdict="environment",
                rule="empty_answer_but_rows_match",
                detail=f"{call.tool} returned no {entity} although {len(matching)} row(s) of the "
                f"state match {wanted}",
                data={"tool": call.tool, "matching": len(matching)},
            )
        if wanted:
            # The filter that matches nothing on its own names the culprit; if each matches
            # something, the state lacks the combination.
            alone = [
                a
                for a, (f, v) in wanted.items()
                if not any(values_equal(r.get(f), v) for r in rows)
            ]
            arg = alone[0] if alone else next(iter(wanted))
            field, value = wanted[arg]
            return CallJudgement(
                verdict="task",
                rule="no_matching_state",
                detail=f"no {entity} in the state the task starts from matches {wanted}, so "
                f"{call.tool} has nothing to return",
                data={
                    "entity": entity,
                    "field": field,
                    "value": value,
                    "argument": arg,
                    "alone": bool(alone),
                },
            )
    if stale:
        s = stale[0]
        return CallJudgement(
            verdict="environment",
            rule="read_disagrees_with_state",
            detail=f"{call.tool} returned {entity} {s['key']!r} with {s['field']}={s['returned']!r} "
            f"but the DB holds {s['db']!r}",
            data={"tool": call.tool, "stale": stale[:5]},
        )
    if ignored:
        i = ignored[0]
        return CallJudgement(
            verdict="environment",
            rule="filter_ignored",
            detail=f"{call.tool} returned {entity} {i['key']!r} whose {i['argument']} is "
            f"{i['got']!r}, not the requested value",
            data={"tool": call.tool, "ignored": ignored[:5]},
        )
    return CallJudgement(verdict="conformant", rule="read_matches_state", detail="ok")


def contract_of(contracts: dict[str, ContractSet], mcp: str, tool: str) -> ToolContract | None:
    cs = contracts.get(mcp)
    if cs is None:
        return None
    try:
        return cs.contract(tool)
    except KeyError:
        return None


def later_writes_of(
    calls: list[CallRecord], index: int, contracts: dict[str, ContractSet]
) -> set[str]:
    """Entities written by the calls after `index` in one node."""
    out: set[str] = set()
    for c in calls[index + 1 :]:
        contract = contract_of(contracts, c.mcp, c.tool)
        if contract is not None and contract.operation in _WRITE_OPS and contract.entity:
            out.add(contract.entity)
    return out
