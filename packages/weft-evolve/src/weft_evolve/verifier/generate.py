"""Verifier generation from execution evidence (§3.2.1).

From a node's completion conditions and an accepted reference execution, produce deterministic
checks over the state diff and the tool returns, plus a rubric for an LLM judge. Checks pin what
the reference changed from the node's value arguments (and the state transitions its tools
declare), the rows it deleted, the entity a read retrieved and the files it wrote — never the
call sequence, so later rollouts may solve the node another way.

Acceptance (without a model): the reference executes, every call conforms to its contract, and
it makes the change the node names. Checks suspected by attribution are not required to pass.
"""

from __future__ import annotations

from typing import Any

from weft_core.checks import values_equal
from weft_core.models import Check, ContractSet, TaskGraph
from weft_core.models.check import (
    AllowedChange,
    DiffContains,
    FieldEquals,
    NoOtherChanges,
    ReturnContains,
    RowAbsent,
    RowExists,
    WorkspaceFile,
)
from weft_core.state import diff_db
from weft_evolve.attribution.conformance import contract_of, judge_call, later_writes_of
from weft_evolve.attribution.rubric import rubric_for
from weft_evolve.evidence.replay import node_evidence
from weft_evolve.models import NodeReplay, ReferenceReplay
from weft_evolve.verifier.models import GeneratedVerifier


def accept_reference(
    graph: TaskGraph,
    replay: ReferenceReplay,
    node_id: str,
    contracts: dict[str, ContractSet],
    suspect: set[str] | None = None,
) -> tuple[bool, str]:
    """The programmatic semantic evaluation of a reference execution for one node."""
    nr = replay.nodes.get(node_id)
    if nr is None or replay.error:
        return False, "no reference replay"
    if not nr.executed:
        return False, nr.template_error or next(c.text for c in nr.calls if c.is_error)
    for i, c in enumerate(nr.calls):
        j = judge_call(
            c,
            contract_of(contracts, c.mcp, c.tool),
            nr.before,
            nr.after,
            later_writes=later_writes_of(nr.calls, i, contracts),
        )
        if j.verdict != "conformant" and j.verdict != "unknown":
            return False, f"{c.tool}: {j.detail}"
    failing = [
        o.check_id
        for o in (nr.outcome.failures if nr.outcome else [])
        if o.check_id not in (suspect or set())
    ]
    if failing:
        return False, f"the reference fails checks not under suspicion: {failing}"
    node = graph.node(node_id)
    changed = (
        nr.before is not None and nr.after is not None and not diff_db(nr.before, nr.after).empty
    )
    if node.task.writes and not changed and not nr.workspace_after:
        return False, "the node writes but the reference changed nothing"
    if not node.task.writes and not any(c.value not in (None, {}, [], "") for c in nr.calls):
        return False, "the read returned nothing"
    return True, "executes, conforms to its contracts and makes the named change"


def _pk(nr: NodeReplay, table: str) -> str | None:
    db = nr.after or nr.before
    if db is None or table not in db.schemas:
        return None
    pk = db.schemas[table].primary_key
    return pk[0] if len(pk) == 1 else None


def programmatic_checks(
    graph: TaskGraph, replay: ReferenceReplay, node_id: str, contracts: dict[str, ContractSet]
) -> list[Check]:
    graph.node(node_id)
    nr = replay.nodes[node_id]
    mcp = nr.mcp
    checks: list[Check] = []
    value_fields: dict[str, dict[str, Any]] = {}  # table -> field -> value (from value arguments)
    transition_fields: dict[str, set[str]] = {}
    for c in nr.calls:
        contract = contract_of(contracts, c.mcp, c.tool)
        if contract is None:
            continue
        for m in contract.mappings:
            if (
                m.role == "value"
                and m.entity
                and m.field
                and c.arguments.get(m.argument) is not None
            ):
                value_fields.setdefault(m.entity, {})[m.field] = c.arguments[m.argument]
        for t in contract.transitions:
            transition_fields.setdefault(t.entity, set()).add(t.field)
    if nr.before is not None and nr.after is not None:
        diff = diff_db(nr.before, nr.after)
        for table, td in sorted(diff.tables.items()):
            pk = _pk(nr, table)
            wanted = value_fields.get(table, {})
            for row in td.inserts.values():
                where = {f: v for f, v in wanted.items() if values_equal(row.get(f), v)}
                if where:
                    checks.append(
                        RowExists(
                            mcp=mcp,
                            table=table,
                            where=where,
                            description=f"a new {table} with {where}",
                        )
                    )
            for _key, upd in td.updates.items():
                if pk is None:
                    continue
                fields = sorted(
                    f
                    for f, ch in upd.changed.items()
                    if (f in wanted and values_equal(ch.new, wanted[f]))
                    or f in transition_fields.get(table, set())
                )
                for f in fields:
                    checks.append(
                        FieldEquals(
                            mcp=mcp,
                            table=table,
                            where={pk: upd.new[pk]},
                            field=f,
                            value=upd.new[f],
                            description=f"{table} {upd.new[pk]} has {f} = {upd.new[f]!r}",
                        )
                    )
                if fields:
                    checks.append(
                        DiffContains(
                            mcp=mcp,
                            table=table,
                            change="update",
                            where={pk: upd.new[pk]},
                            fields=fields,
                        )
                    )
            for _key, row in td.deletes.items():
                if pk is not None and pk in row:
                    checks.append(
                        RowAbsent(
                            mcp=mcp,
                            table=table,
                            where={pk: row[pk]},
                            description=f"{table} {row[pk]} is deleted",
                        )
                    )
        episode = diff_db(replay.initial[mcp], nr.after) if mcp in replay.initial else diff
        if not episode.empty:
            checks.append(
                NoOtherChanges(
                    mcp=mcp,
                    allowed=[
                        AllowedChange(table=t)
                        for t in sorted(episode.tables)
                        if not episode.tables[t].empty
                    ],
                )
            )
    # Reads: the entity the turn retrieved must be in a return (any read tool may return it).
    for c in nr.calls:
        contract = contract_of(contracts, c.mcp, c.tool)
        if c.is_error or contract is None or contract.operation not in ("read", "list", "search"):
            continue
        entity = contract.entity
        pk = _pk(nr, entity) if entity else None
        value = _first_key(c.value, pk) if pk else None
        if value is not None:
            checks.append(
                ReturnContains(
                    mcp=mcp,
                    tool=c.tool,
                    value=value,
                    description=f"the answer shows {entity} {value!r}",
                )
            )
    # Files: every path the reference wrote, as it stands at the end of the node.
    ws = nr.workspace_after
    for c in nr.calls:
        contract = contract_of(contracts, c.mcp, c.tool)
        if c.is_error or contract is None or not contract.operation.startswith("file_"):
            continue
        for m in contract.mappings:
            if m.role in ("path",) and isinstance(c.arguments.get(m.argument), str):
                path = c.arguments[m.argument].lstrip("/")
                exists = ws is not None and path in ws.files
                content = next(
                    (
                        v
                        for k, v in c.arguments.items()
                        if k in ("content", "text", "body") and isinstance(v, str)
                    ),
                    None,
                )
                checks.append(
                    WorkspaceFile(
                        mcp=mcp,
                        path=path,
                        exists=exists,
                        contains=content
                        if exists and content and ws and content in (ws.files[path].text or "")
                        else None,
                    )
                )
    unique: dict[str, Check] = {}
    for ch in checks:
        unique.setdefault(ch.model_dump_json(exclude={"id", "description"}), ch)
    out = list(unique.values())
    return [ch.model_copy(update={"id": f"{node_id}.g{i + 1}"}) for i, ch in enumerate(out)]


def _first_key(value: Any, pk: str) -> Any:
    if isinstance(value, dict):
        if pk in value and not isinstance(value[pk], dict | list):
            return value[pk]
        for v in value.values():
            got = _first_key(v, pk)
            if got is not None:
                return got
    elif isinstance(value, list):
        for v in value:
            got = _first_key(v, pk)
            if got is not None:
                return got
    return None


def build_verifier(
    graph: TaskGraph,
    replay: ReferenceReplay,
    node_id: str,
    contracts: dict[str, ContractSet],
    checks: list[Check],
    *,
    strategy: str = "programmatic",
    version: int = 1,
) -> GeneratedVerifier:
    node = graph.node(node_id)
    nr = replay.nodes[node_id]
    return GeneratedVerifier(
        task_id=graph.id,
        node_id=node_id,
        checks=checks,
        rubric=rubric_for(node, nr, contracts),
        reference_hash=replay.task_hash,
        strategy=strategy,
        version=version,
    )


__all__ = ["accept_reference", "build_verifier", "node_evidence", "programmatic_checks"]
