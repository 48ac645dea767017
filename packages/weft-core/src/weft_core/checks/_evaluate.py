"""The one deterministic evaluator of the check language."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import TypeAdapter, ValidationError

from weft_core.checks._evidence import Evidence
from weft_core.checks._results import result_views
from weft_core.checks._values import (
    WHERE_OPS,
    EvalFailure,
    as_number,
    compare,
    contains_binding,
    is_binding_ref,
    is_operator,
    iter_nodes,
    json_subset,
    resolve,
    short,
    values_equal,
    where_matches,
)
from weft_core.exceptions import CheckError
from weft_core.models.check import (
    CallMade,
    Check,
    CheckOutcome,
    CheckSet,
    DiffContains,
    EvaluationResult,
    FieldEquals,
    NoOtherChanges,
    ReturnContains,
    RowAbsent,
    RowCount,
    RowExists,
    WorkspaceFile,
)
from weft_core.models.task import EntityBinding
from weft_core.state import DBState, StateDiff
from weft_core.state._workspace import normalize_relpath

_CHECK_ADAPTER: TypeAdapter[Check] = TypeAdapter(Check)
_ORDERING_OPS = {"eq", "ne", "gt", "ge", "lt", "le"}
# How many offending items a failure reason lists before summarizing the rest.
_LIST_LIMIT = 5

AnyCheck = (
    RowExists
    | RowAbsent
    | FieldEquals
    | RowCount
    | DiffContains
    | NoOtherChanges
    | ReturnContains
    | CallMade
    | WorkspaceFile
)
Bindings = Mapping[str, Any] | Sequence[EntityBinding]


# ---------------------------------------------------------------- structure


def _label(index: int, check: Any) -> str:
    cid = getattr(check, "id", None) or (check.get("id") if isinstance(check, Mapping) else None)
    return f"check {index}" + (f" ({cid!r})" if cid else "")


def _structural_problems(check: AnyCheck) -> list[str]:
    problems: list[str] = []
    table = getattr(check, "table", None)
    if table is not None and not table.strip():
        problems.append("table is empty")
    where = getattr(check, "where", None) or {}
    for column, cond in where.items():
        if not column:
            problems.append("where has an empty column name")
        if is_operator(cond) and not is_binding_ref(cond):
            unknown = sorted(k for k in cond if k not in WHERE_OPS)
            if unknown:
                problems.append(
                    f"where on {column!r} uses unknown operator {unknown[0]!r} "
                    f"(known: {', '.join(sorted(WHERE_OPS))})"
                )
    if (
        isinstance(check, FieldEquals | RowCount)
        and not contains_binding(check.value)
        and check.op in ("in", "not_in")
        and not isinstance(check.value, list)
    ):
        problems.append(f"op {check.op!r} needs a list value, got {short(check.value)}")
    if isinstance(check, FieldEquals) and not check.field:
        problems.append("field is empty")
    if isinstance(check, RowCount):
        if check.op not in _ORDERING_OPS | {"in", "not_in"}:
            problems.append(f"row_count does not support op {check.op!r}")
        elif (
            check.op in _ORDERING_OPS
            and not contains_binding(check.value)
            and (isinstance(check.value, bool) or as_number(check.value) is None)
        ):
            problems.append(f"row_count value must be a number, got {short(check.value)}")
    if isinstance(check, CallMade):
        if check.min_count < 0:
            problems.append("min_count is negative")
        if check.max_count is not None and check.max_count < check.min_count:
            problems.append(f"max_count {check.max_count} is below min_count {check.min_count}")
    if isinstance(check, ReturnContains | CallMade) and not check.tool:
        problems.append("tool is empty")
    if isinstance(check, WorkspaceFile):
        if not normalize_relpath(check.path):
            problems.append("path is empty")
        if not check.exists and (check.contains is not None or check.equals is not None):
            problems.append("exists=false cannot be combined with contains/equals")
    if isinstance(check, DiffContains) and check.fields is not None and check.change != "update":
        problems.append(f"fields applies to updates only, not {check.change!r}")
    return problems


def parse_checks(checks: Sequence[AnyCheck | Mapping[str, Any]]) -> list[AnyCheck]:
    """Validate every check; raise one CheckError naming each malformed one (index, id, field)."""
    parsed: list[AnyCheck] = []
    errors: list[str] = []
    for i, raw in enumerate(checks):
        try:
            check = raw if not isinstance(raw, Mapping) else _CHECK_ADAPTER.validate_python(raw)
            if not isinstance(check, AnyCheck):
                raise TypeError(f"not a check: {type(raw).__name__}")
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = ".".join(str(p) for p in first["loc"]) or "(root)"
            errors.append(f"{_label(i, raw)}: {loc}: {first['msg']}")
            continue
        except TypeError as exc:
            errors.append(f"{_label(i, raw)}: {exc}")
            continue
        errors.extend(f"{_label(i, check)}: {p}" for p in _structural_problems(check))
        parsed.append(check)
    if errors:
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise CheckError(
            "invalid check: " + errors[0] + more + ("\n" + "\n".join(errors[1:]) if more else "")
        )
    return parsed


# ---------------------------------------------------------------- evidence selection


def _select(check: AnyCheck, evidence: Evidence | Mapping[str, Evidence]) -> Evidence:
    if isinstance(evidence, Evidence):
        if check.mcp is not None and evidence.mcp is not None and check.mcp != evidence.mcp:
            raise EvalFailure(f"unknown MCP {check.mcp!r}: evidence is for {evidence.mcp!r}")
        return evidence
    if check.mcp is None:
        if len(evidence) == 1:
            return next(iter(evidence.values()))
        known = ", ".join(sorted(evidence)) or "none"
        raise EvalFailure(f"check names no MCP but the evidence has {len(evidence)} MCPs ({known})")
    if check.mcp not in evidence:
        known = ", ".join(sorted(evidence)) or "none"
        raise EvalFailure(f"unknown MCP {check.mcp!r} (evidence has: {known})")
    return evidence[check.mcp]


def _db(ev: Evidence, side: str) -> DBState:
    state = ev.initial if side == "initial" else ev.final
    if state is None:
        raise EvalFailure(f"the evidence has no {side} DB state")
    return state


def _table_rows(db: DBState, table: str, side: str) -> list[dict[str, Any]]:
    if table not in db.tables:
        known = ", ".join(db.table_names) or "none"
        raise EvalFailure(f"unknown table {table!r} in the {side} DB (tables: {known})")
    return db.rows(table)


def _check_columns(db: DBState, table: str, names: Sequence[str]) -> None:
    columns = db.columns(table)
    if not columns:
        return  # an empty table without a recorded schema: nothing to check against
    for name in names:
        if name not in columns:
            raise EvalFailure(
                f"table {table!r} has no column {name!r} (columns: {', '.join(columns)})"
            )


def _key_candidates(value: Any) -> set[str] | None:
    """Row keys a single-column primary key equal to `value` (by `values_equal`) can have."""
    if value is None or isinstance(value, Mapping | list | tuple):
        return None
    keys = {value} if isinstance(value, str) else set()
    number = as_number(value)
    if isinstance(value, str) and number is None:
        return keys
    if number is None:
        return None
    if float(number).is_integer():
        keys.add(str(int(number)))
    keys.add(json.dumps(float(number)))
    return keys


def _matching(db: DBState, table: str, where: Mapping[str, Any], side: str) -> list[dict[str, Any]]:
    rows = _table_rows(db, table, side)
    _check_columns(db, table, list(where))
    schema = db.schemas.get(table)
    if schema is not None and len(schema.primary_key) == 1:
        pk = schema.primary_key[0]
        cond = where.get(pk)
        keys = None if pk not in where or is_operator(cond) else _key_candidates(cond)
        if keys is not None:
            # Primary-key lookup instead of a scan: verifiers on big tables mostly pin the key.
            by_key = db.tables[table]
            found = [by_key[k] for k in sorted(keys) if k in by_key]
            return [r for r in found if where_matches(r, where)]
    return [r for r in rows if where_matches(r, where)]


def _diff(ev: Evidence) -> StateDiff:
    diff = ev.state_diff()
    if diff is None:
        raise EvalFailure(
            "the evidence has no diff and lacks the initial or final DB to compute one"
        )
    return diff


def _where_text(where: Mapping[str, Any]) -> str:
    return short(dict(where), 120) if where else "(any row)"


# ---------------------------------------------------------------- one handler per kind


def _row_exists(c: RowExists, ev: Evidence, b: Mapping[str, Any]) -> tuple[bool, str]:
    where = resolve(c.where, b)
    rows = _matching(_db(ev, c.db), c.table, where, c.db)
    if rows:
        return True, f"{len(rows)} row(s) in {c.db} {c.table} match {_where_text(where)}"
    return False, f"no row in {c.db} {c.table} matches {_where_text(where)}"


def _row_absent(c: RowAbsent, ev: Evidence, b: Mapping[str, Any]) -> tuple[bool, str]:
    where = resolve(c.where, b)
    rows = _matching(_db(ev, c.db), c.table, where, c.db)
    if not rows:
        return True, f"no row in {c.db} {c.table} matches {_where_text(where)}"
    return (
        False,
        f"{len(rows)} row(s) in {c.db} {c.table} match {_where_text(where)}, expected none: {short(rows[0], 160)}",
    )


def _field_equals(c: FieldEquals, ev: Evidence, b: Mapping[str, Any]) -> tuple[bool, str]:
    where, expected = resolve(c.where, b), resolve(c.value, b)
    db = _db(ev, c.db)
    rows = _matching(db, c.table, where, c.db)
    _check_columns(db, c.table, [c.field])
    if len(rows) != 1:
        what = "no row matches" if not rows else f"ambiguous: {len(rows)} rows match"
        return (
            False,
            f"{what} {_where_text(where)} in {c.db} {c.table}; field_equals needs exactly one",
        )
    actual = rows[0].get(c.field)
    if c.field not in rows[0]:
        raise EvalFailure(f"table {c.table!r} has no column {c.field!r}")
    ok = compare(actual, c.op, expected)
    verdict = "holds" if ok else "fails"
    return ok, f"{c.table}.{c.field} = {short(actual)}; {c.op} {short(expected)} {verdict}"


def _row_count(c: RowCount, ev: Evidence, b: Mapping[str, Any]) -> tuple[bool, str]:
    where, expected = resolve(c.where, b), resolve(c.value, b)
    if c.op in _ORDERING_OPS and (isinstance(expected, bool) or as_number(expected) is None):
        raise EvalFailure(f"row_count value must be a number, the binding gave {short(expected)}")
    n = len(_matching(_db(ev, c.db), c.table, where, c.db))
    ok = compare(n, c.op, expected)
    return (
        ok,
        f"{n} row(s) in {c.db} {c.table} match {_where_text(where)}; {c.op} {short(expected)} {'holds' if ok else 'fails'}",
    )


def _diff_contains(c: DiffContains, ev: Evidence, b: Mapping[str, Any]) -> tuple[bool, str]:
    where = resolve(c.where, b)
    diff = _diff(ev)
    known = set(ev.initial.table_names if ev.initial else ()) | set(
        ev.final.table_names if ev.final else ()
    )
    if known and c.table not in known:
        raise EvalFailure(f"unknown table {c.table!r} (tables: {', '.join(sorted(known))})")
    table = diff.table(c.table)
    if c.change == "insert":
        candidates = [(k, r) for k, r in table.inserts.items()]
    elif c.change == "delete":
        candidates = [(k, r) for k, r in table.deletes.items()]
    else:
        candidates = [(k, u.new) for k, u in table.updates.items()]
    matched = [k for k, r in candidates if where_matches(r, where)]
    if c.change == "update" and c.fields:
        wanted = set(c.fields)
        full = [k for k in matched if wanted <= set(table.updates[k].changed)]
        if not full and matched:
            changed = sorted(table.updates[matched[0]].changed)
            return False, (
                f"update of {c.table} row {matched[0]} matches {_where_text(where)} but changed "
                f"{changed}, not all of {sorted(wanted)}"
            )
        matched = full
    if matched:
        return (
            True,
            f"{c.change} in {c.table} matches {_where_text(where)}: key(s) {matched[:_LIST_LIMIT]}",
        )
    counts = table.counts()
    return False, (
        f"no {c.change} in {c.table} matches {_where_text(where)} "
        f"({counts['inserts']} inserts, {counts['updates']} updates, {counts['deletes']} deletes there)"
    )


def _no_other_changes(c: NoOtherChanges, ev: Evidence, b: Mapping[str, Any]) -> tuple[bool, str]:
    diff = _diff(ev)
    ignore = set(c.ignore_fields)
    allowed = [(a.table, a.change) for a in c.allowed]

    def is_allowed(table: str, change: str) -> bool:
        return any(t == table and (k is None or k == change) for t, k in allowed)

    offending: list[str] = []
    for table, tdiff in diff.tables.items():
        for key in tdiff.inserts:
            if not is_allowed(table, "insert"):
                offending.append(f"insert {table}[{key}]")
        for key in tdiff.deletes:
            if not is_allowed(table, "delete"):
                offending.append(f"delete {table}[{key}]")
        for key, upd in tdiff.updates.items():
            fields = sorted(set(upd.changed) - ignore)
            if fields and not is_allowed(table, "update"):
                offending.append(f"update {table}[{key}] {fields}")
    if offending:
        more = f" and {len(offending) - _LIST_LIMIT} more" if len(offending) > _LIST_LIMIT else ""
        return (
            False,
            f"{len(offending)} unexpected change(s): {'; '.join(offending[:_LIST_LIMIT])}{more}",
        )
    return (
        True,
        f"only allowed changes ({sum(sum(t.counts().values()) for t in diff.tables.values())} in all)",
    )


def _return_matches(expected: Any, result: Any) -> bool:
    texts, structured = result_views(result)
    if isinstance(expected, str):
        if any(expected in t for t in texts):
            return True
        for node in (n for s in structured for n in iter_nodes(s)):
            if isinstance(node, str) and expected in node:
                return True
            if (
                isinstance(node, int | float)
                and not isinstance(node, bool)
                and values_equal(node, expected)
            ):
                return True
        return False
    if not isinstance(expected, dict | list) and any(
        values_equal(t.strip(), expected) for t in texts
    ):
        return True
    return any(json_subset(expected, node) for s in structured for node in iter_nodes(s))


def _return_contains(c: ReturnContains, ev: Evidence, b: Mapping[str, Any]) -> tuple[bool, str]:
    expected = resolve(c.value, b)
    calls = [e for e in ev.ledger if e.tool == c.tool]
    ok_calls = [e for e in calls if not e.is_error]
    if not ok_calls:
        failed = len(calls) - len(ok_calls)
        return False, f"no successful call of {c.tool!r}" + (
            f" ({failed} failed)" if failed else ""
        )
    for entry in ok_calls:
        if _return_matches(expected, entry.result):
            return True, f"{c.tool} call #{entry.seq} returned {short(expected)}"
    return False, (
        f"none of {len(ok_calls)} successful {c.tool!r} return(s) contains {short(expected)}; "
        f"last returned {short(ok_calls[-1].result, 160)}"
    )


def _call_made(c: CallMade, ev: Evidence, b: Mapping[str, Any]) -> tuple[bool, str]:
    arguments = resolve(c.arguments, b)
    calls = [e for e in ev.ledger if e.tool == c.tool]
    if c.ok is not None:
        calls = [e for e in calls if e.is_error != c.ok]
    matched = [e for e in calls if json_subset(arguments, e.arguments)]
    n = len(matched)
    bounds = f"at least {c.min_count}" + (
        f" and at most {c.max_count}" if c.max_count is not None else ""
    )
    ok = n >= c.min_count and (c.max_count is None or n <= c.max_count)
    status = {True: "successful ", False: "failed ", None: ""}[c.ok]
    reason = f"{n} {status}call(s) of {c.tool!r} match arguments {short(arguments, 120)}; expected {bounds}"
    if not ok and not matched and calls:
        reason += f"; closest: {short(calls[-1].arguments, 120)}"
    return ok, reason


def _workspace_file(c: WorkspaceFile, ev: Evidence, b: Mapping[str, Any]) -> tuple[bool, str]:
    if ev.workspace_after is None:
        raise EvalFailure("the evidence has no final workspace")
    path = normalize_relpath(c.path)
    state = ev.workspace_after.files.get(path)
    if not c.exists:
        return (state is None), (
            f"{path} is absent" if state is None else f"{path} exists, expected absent"
        )
    if state is None:
        return False, f"{path} does not exist in the workspace"
    if c.contains is None and c.equals is None:
        return True, f"{path} exists ({state.size} bytes)"
    if state.text is None:
        return (
            False,
            f"{path} has no text to compare (binary, symlink or {state.size} bytes over the text limit)",
        )
    if c.equals is not None:
        expected = resolve(c.equals, b)
        # Files differ in trailing newlines for no semantic reason; everything else must match.
        if state.text.rstrip("\n") != str(expected).rstrip("\n"):
            return False, f"{path} text {short(state.text)} does not equal {short(expected)}"
    if c.contains is not None:
        needle = str(resolve(c.contains, b))
        if needle not in state.text:
            return False, f"{path} does not contain {short(needle)}"
    return True, f"{path} has the expected text"


_HANDLERS: dict[type, Callable[[Any, Evidence, Mapping[str, Any]], tuple[bool, str]]] = {
    RowExists: _row_exists,
    RowAbsent: _row_absent,
    FieldEquals: _field_equals,
    RowCount: _row_count,
    DiffContains: _diff_contains,
    NoOtherChanges: _no_other_changes,
    ReturnContains: _return_contains,
    CallMade: _call_made,
    WorkspaceFile: _workspace_file,
}


def _bindings_map(bindings: Bindings | None) -> dict[str, Any]:
    if bindings is None:
        return {}
    if isinstance(bindings, Mapping):
        return dict(bindings)
    out: dict[str, Any] = {}
    for item in bindings:
        if not isinstance(item, EntityBinding):
            raise CheckError(
                f"bindings must be a mapping or EntityBinding list, got {type(item).__name__}"
            )
        out[item.name] = item.value
    return out


def evaluate(
    checks: Sequence[AnyCheck | Mapping[str, Any]] | CheckSet,
    evidence: Evidence | Mapping[str, Evidence],
    bindings: Bindings | None = None,
) -> EvaluationResult:
    """Evaluate every check against the evidence, in order, deterministically.

    `checks` may be a CheckSet, whose bindings apply under any given here. `evidence` is one `Evidence` or a mapping MCP id -> Evidence (a check's `mcp` selects one;
    None is allowed when there is one). `bindings` maps binding names to values (or is the task's
    EntityBinding list); `{"$binding": "customer.email"}` reads `bindings["customer"]["email"]`.
    Data problems (unknown binding, table, column or MCP, missing evidence, an ambiguous
    field_equals) fail that check with a reason; a malformed check raises CheckError before
    anything is evaluated.
    """
    if isinstance(checks, CheckSet):
        # A stored verifier carries its own bindings; explicit ones (the task's) take precedence.
        bindings = {**checks.bindings, **_bindings_map(bindings)}
        checks = checks.checks
    parsed = parse_checks(checks)
    resolved = _bindings_map(bindings)
    outcomes: list[CheckOutcome] = []
    for i, check in enumerate(parsed):
        check_id = check.id or f"check-{i}"
        try:
            passed, reason = _HANDLERS[type(check)](check, _select(check, evidence), resolved)
        except EvalFailure as exc:
            passed, reason = False, str(exc)
        outcomes.append(
            CheckOutcome(check_id=check_id, kind=check.kind, passed=passed, reason=reason)
        )
    return EvaluationResult(outcomes=outcomes)
