"""The backend agent writes route code (paper §3.1.1: backends are generated code that validation
checks, and runtime errors go back to the backend for revision).

With a model and `WEFT_ENVSYNTH_ROUTE_CODE=true`, each database tool's route is asked of the model
as a Python function `route(args, db) -> dict` over the bundle's tables (`codert.Tables`). A reply
is loaded in the restricted namespace of `codert` (a refused reply is one error naming the tool
and the rule); the loaded code is served by the bundle and run through the same validation as
every other route. A tool whose checks fail gets the evidence back (the failing checks with their
calls, the traceback summary the runtime reports, the rows of its table the calls started from)
and the model revises its code, up to `route_code_rounds` times. Code that passes is kept in the
bundle (`routes_code/`, so the bundle runs without the model) and served; a tool whose code never
passes keeps its planned route, and `validation.json` (`route_code`) says why.
"""

from __future__ import annotations

import json
import re
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from pydantic import Field

from weft_core.models import ContractSet, EntityModel, MCPSpec, WeftModel
from weft_envsynth._templates.codert import ALLOWED_IMPORTS, CodeRefused, load_route
from weft_envsynth.plans import BackendPlan, RoutePlan, ValidationReport

_DATABASE_OPERATIONS = frozenset({"create", "read", "list", "search", "update", "action", "delete"})
_FENCE = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL)

RESULT_SHAPES = {
    "create": '{"<entity>": <the stored row>} (one row inserted; the key argument when given, '
    "else db.new_key; a key that exists is fail('conflict', ...))",
    "read": '{"<entity>": <the row>} (no such row: fail("not_found", ...))',
    "list": '{"items": <rows in key order, at most limit (default 50, at most 500)>, '
    '"count": <len(items)>, "total": <rows matching before the limit>}',
    "update": '{"<entity>": <the stored row after the change>} (unknown key: fail("not_found", ...))',
    "delete": '{"deleted": True, "<key column>": <key>} (unknown key: fail("not_found", ...))',
}
RESULT_SHAPES["search"] = RESULT_SHAPES["list"]
RESULT_SHAPES["action"] = RESULT_SHAPES["update"] + (
    "; a transition from a state it does not allow is fail('invalid_state', ...)"
)

API = f"""Write the route as one Python function:

    def route(args, db):
        ...
        return {{...}}

`args` is a dict of the call's arguments (absent optional arguments are missing). `db` is the
session's database; rows are dicts keyed by column name:
  db.get(table, key) -> dict | None
  db.rows(table, **column_equals) -> list[dict]   (in key order)
  db.insert(table, values) -> dict                (the stored row; key from db.new_key if absent)
  db.update(table, key, values) -> dict           (the stored row)
  db.delete(table, key) -> bool
  db.new_key(table), db.key_of(table), db.tables()
Refuse a call with fail(code, message) (codes: not_found, invalid_arguments, conflict,
invalid_state). Changes commit when route returns and roll back when it raises. Only these
imports are allowed: {", ".join(sorted(ALLOWED_IMPORTS))}; no files, network, processes, names
or attributes starting with an underscore, or bare `except:`; calls have a time limit.
Reply with the code only, in one ```python block."""


class CodeOutcome(WeftModel):
    """What happened to one tool's model-written route code (validation.json `route_code`)."""

    tool: str
    status: Literal["served", "planned_route"] = Field(
        description="served: the model's code passed validation and the bundle runs it; "
        "planned_route: it never passed, the planned route is served."
    )
    attempts: int = Field(description="Code replies the model gave for this tool.")
    reason: str = Field(default="", description="Why the code was not kept.")
    history: list[str] = Field(
        default_factory=list, description="Per attempt, the first problem found (or 'passed')."
    )
    source: str = Field(default="", description="The last code the model wrote.")


def code_targets(plan: BackendPlan, tools: set[str] | None = None) -> list[str]:
    """Tools whose route is a plain database route (no file, compute, SQL, VCS or graph verb)."""
    return [
        r.tool
        for r in plan.routes
        if r.operation in _DATABASE_OPERATIONS
        and r.entity is not None
        and r.code is None
        and not (r.file_verb or r.compute_op or r.sql_verb or r.vcs_verb or r.graph_verb)
        and not r.reads_all
        and (tools is None or r.tool in tools)
    ]


def extract_code(reply: Any) -> str:
    """The code of a model reply: its first fenced block, else the whole text."""
    if isinstance(reply, list):  # content blocks
        reply = "".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in reply)
    text = str(reply)
    m = _FENCE.search(text)
    if m is None and "def " not in text:
        return ""  # prose: refused as code that defines no route
    return (m.group(1) if m else text).strip() + "\n"


def _tables(model: EntityModel) -> str:
    out = []
    for e in model.entities:
        cols = []
        for f in e.fields:
            extra = " key" if f.primary_key else ""
            if f.foreign_key:
                extra += f" -> {f.foreign_key}"
            if f.enum:
                extra += f" in {f.enum}"
            cols.append(f"{f.name}: {f.type}{extra}")
        out.append(f"  {e.name}({', '.join(cols)})")
    return "\n".join(out)


def code_prompt(
    spec: MCPSpec,
    model: EntityModel,
    contracts: ContractSet,
    route: RoutePlan,
    *,
    previous: str | None = None,
    evidence: list[str] | None = None,
) -> str:
    tool = spec.tool(route.tool)
    contract = next(c for c in contracts.contracts if c.tool == route.tool)
    plan = route.model_dump(mode="json", exclude_defaults=True)
    text = (
        f"You write the backend route of the MCP tool {tool.name!r} of {spec.name!r}.\n"
        f"Tool definition: {json.dumps(tool.model_dump(mode='json', include={'name', 'description', 'input_schema'}))[:4000]}\n"
        f"Contract: {contract.model_dump_json(exclude_defaults=True)[:3000]}\n"
        f"Route plan: {json.dumps(plan)[:2000]}\n"
        f"Tables:\n{_tables(model)[:4000]}\n"
        f"Result: {RESULT_SHAPES.get(route.operation, 'a dict')} (<entity> is {route.entity!r}).\n"
        f"{API}\n"
    )
    if previous is not None:
        text += (
            "\nYour previous code failed validation. Previous code:\n```python\n"
            f"{previous.rstrip()}\n```\nEvidence:\n- "
            + "\n- ".join(evidence or ["(none)"])
            + "\nFix the code; reply with the whole corrected function."
        )
    return text


def _seed_rows(work: Path, table: str, limit: int = 3) -> str:
    """The first rows of `table` in seed.sqlite: the state validation's calls start from."""
    try:
        with closing(sqlite3.connect(f"file:{work / 'seed.sqlite'}?mode=ro", uri=True)) as conn:
            conn.row_factory = sqlite3.Row
            rows = conn.execute(f'SELECT * FROM "{table}" LIMIT ?', (limit,)).fetchall()
    except sqlite3.Error as exc:
        return f"(could not read {table}: {exc})"
    return json.dumps([dict(r) for r in rows], default=str)[:1200]


def evidence(report: ValidationReport, tool: str, work: Path, entity: str | None) -> list[str]:
    """The failing checks of `tool` as lines for the model: check, detail (with the traceback
    summary the runtime reports), the call, and the rows its table started from."""
    lines = []
    for c in report.failing_tools().get(tool, [])[:4]:
        call = json.dumps(c.arguments, default=str)[:400] if c.arguments is not None else "-"
        lines.append(f"check {c.name} ({c.kind}) failed: {c.detail}; call {tool}({call})")
    if entity is not None:
        lines.append(f"state: first rows of {entity} before validation: {_seed_rows(work, entity)}")
    return lines


def _ask(llm: BaseChatModel, prompt: str) -> tuple[str | None, str]:
    try:
        return extract_code(llm.invoke(prompt).content), ""
    except Exception as exc:  # a failing endpoint: the tool keeps its planned route
        return None, f"model call failed: {type(exc).__name__}: {exc}"[:300]


def write_route_code(
    work: Path,
    spec: MCPSpec,
    model: EntityModel,
    contracts: ContractSet,
    plan: BackendPlan,
    llm: BaseChatModel,
    *,
    rounds: int = 2,
    tools: set[str] | None = None,
    format_code: bool = True,
) -> tuple[BackendPlan, list[str], dict[str, CodeOutcome]]:
    """Ask the model for the route code of each target tool, validate it in the bundle in `work`
    (seed.sqlite and sources written), route failures back with their evidence for up to `rounds`
    revisions; rewrite server.py with the code that passed. Returns the plan (routes carrying the
    passing code), notes and the outcome per tool."""
    from weft_envsynth._internal.assemble import write_server
    from weft_envsynth.validate import validate

    routes = {r.tool: r for r in plan.routes}
    pending: dict[str, tuple[str | None, list[str]]] = {
        t: (None, []) for t in code_targets(plan, tools)
    }
    outcomes: dict[str, CodeOutcome] = {}
    accepted: dict[str, str] = {}
    history: dict[str, list[str]] = {t: [] for t in pending}
    last: dict[str, str] = {}
    for _ in range(rounds + 1):
        if not pending:
            break
        loaded: dict[str, str] = {}
        retry: dict[str, tuple[str | None, list[str]]] = {}
        for tool, (previous, ev) in pending.items():
            prompt = code_prompt(
                spec, model, contracts, routes[tool], previous=previous, evidence=ev
            )
            source, why = _ask(llm, prompt)
            if source is None:
                outcomes[tool] = _kept_plan(tool, history[tool], why, last.get(tool, ""))
                continue
            last[tool] = source
            try:
                load_route(tool, source)
            except CodeRefused as exc:
                history[tool].append(str(exc))
                retry[tool] = (source, [str(exc)])
                continue
            loaded[tool] = source
        if loaded:
            trial = _with_code(plan, {**accepted, **loaded})
            write_server(work, spec, model, trial, format_code=False)
            report = validate(work, spec, model, contracts, round=0)
            for tool, source in loaded.items():
                failing = report.failing_tools().get(tool)
                if report.server_error is not None or failing:
                    ev = evidence(report, tool, work, routes[tool].entity)
                    if report.server_error is not None:
                        ev.insert(0, f"the server did not start: {report.server_error}")
                    history[tool].append(ev[0])
                    retry[tool] = (source, ev)
                else:
                    history[tool].append("passed")
                    accepted[tool] = source
        pending = retry
    for tool, (_, ev) in pending.items():
        outcomes[tool] = _kept_plan(
            tool,
            history[tool],
            f"no code passed in {len(history[tool])} attempt(s); last: {ev[0] if ev else '?'}",
            last.get(tool, ""),
        )
    for tool, source in accepted.items():
        outcomes[tool] = CodeOutcome(
            tool=tool,
            status="served",
            attempts=len(history[tool]),
            history=history[tool],
            source=source,
        )
    final = _with_code(plan, accepted)
    write_server(work, spec, model, final, format_code=format_code)
    notes = [
        f"backend: route code of {len(accepted)} of {len(history)} tool(s) passed validation"
    ] + [
        f"backend: {t} keeps its planned route ({o.reason[:160]})"
        for t, o in sorted(outcomes.items())
        if o.status != "served"
    ]
    return final, notes, dict(sorted(outcomes.items()))


def _kept_plan(tool: str, history: list[str], reason: str, source: str) -> CodeOutcome:
    return CodeOutcome(
        tool=tool,
        status="planned_route",
        attempts=len(history),
        reason=reason[:400],
        history=history,
        source=source,
    )


def _with_code(plan: BackendPlan, code: dict[str, str]) -> BackendPlan:
    return BackendPlan(
        routes=[
            r.model_copy(update={"code": code[r.tool]}) if r.tool in code else r
            for r in plan.routes
        ]
    )
