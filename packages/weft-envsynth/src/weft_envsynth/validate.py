"""Node 5, validate: start the server in-process and check it by execution.

Structural checks (every spec tool is listed with its exact input schema), then generated normal
and boundary calls per tool (all fields, required only, enum edges, empty strings, unknown ids,
wrong types, missing required arguments, broken preconditions, escaping paths). Queries are
checked against the DB read independently with sqlite3; updates against the DB or workspace diff
and a subsequent read; then behavioural probes across tools (_internal.behaviourchecks: a created
record found by every read and listing, updates visible, deletes gone, documented fields
present). Every failure is classified: structural (-> schema), mapping
(-> contracts) or runtime / state access (-> backend).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from weft_core.binding import SessionBinding, bind_session, release_session
from weft_core.models import ContractSet, Entity, EntityModel, MCPSpec, ToolContract, ToolSpec
from weft_envsynth._internal import words as W
from weft_envsynth._internal.amountchecks import (
    moved_rows,
    moves_problem,
    only_moved,
    overdraft_refused,
)
from weft_envsynth._internal.behaviourchecks import BehaviourChecks
from weft_envsynth._internal.boundarychecks import BoundaryChecks
from weft_envsynth._internal.callgen import CallGenerator
from weft_envsynth._internal.computechecks import ComputeChecks
from weft_envsynth._internal.dbstate import (
    DbReader,
    Rows,
    diff_rows,
    same_row,
    same_value,
)
from weft_envsynth._internal.filechecks import WorkspaceChecks, error_category
from weft_envsynth._internal.graphchecks import GraphChecks
from weft_envsynth._internal.jsonschema import string_enum
from weft_envsynth._internal.sqlchecks import SqlChecks
from weft_envsynth._internal.vcschecks import VcsChecks
from weft_envsynth._templates.runtime import query_words
from weft_envsynth.amounts import amount_moves
from weft_envsynth.analyze import whole_store_read
from weft_envsynth.bindings import ToolBindings, graph_tools, load_bindings, sql_tools, vcs_tools
from weft_envsynth.computesem import compute_semantics
from weft_envsynth.errors import BundleError
from weft_envsynth.loader import import_bundle, unload_bundle
from weft_envsynth.plans import CheckRecord, IssueCategory, ValidationReport

if TYPE_CHECKING:  # fastmcp is imported where a server is validated, not at import
    from fastmcp import Client

# Tests set this: every DB read also checks that no check changed rows an earlier read returned
# (reads of an unchanged DB share their rows; see DbReader).
VERIFY_READS = False

_ORDER = {
    "read": 0,
    "list": 0,
    "search": 0,
    "compute": 0,
    "file_read": 0,
    "file_list": 0,
    "create": 1,
    "file_write": 1,
    "update": 2,
    "action": 3,
    "delete": 4,
    "file_delete": 4,
}
SEED_FILES = {
    "README.md": "# Team workspace\nShared notes and reports.\n",
    "notes/todo.txt": "- review open tickets\n- send weekly report\n",
    "reports/q1.csv": "month,revenue\njan,1200\nfeb,1350\nmar,1500\n",
}


class _Call:
    def __init__(self, is_error: bool, data: Any, text: str, shaped: Any = None) -> None:
        self.is_error = is_error
        self.data = data
        self.text = text
        # What the caller reads: the documented response's shape (data adds the route's records).
        self.shaped = data if shaped is None else shaped


class _Validator(
    BoundaryChecks,
    WorkspaceChecks,
    ComputeChecks,
    SqlChecks,
    VcsChecks,
    GraphChecks,
    BehaviourChecks,
    CallGenerator,
):
    def __init__(
        self,
        spec: MCPSpec,
        model: EntityModel,
        contracts: ContractSet,
        client: Client[Any],
        db: Path,
        ws: Path,
        bindings: ToolBindings | None = None,
    ) -> None:
        self.spec = spec
        self.bindings = bindings
        self.model = model
        self.contracts = contracts
        self.client = client
        self.db = db
        self.ws = ws
        self.seed_files = SEED_FILES
        # The tools the backend computes (same rule as backend(): stateless, an operation found).
        stateless = {e.name for e in model.entities if e.reference_data}
        entity_of = {
            c.tool: c.entity
            for c in contracts.contracts
            if c.operation in {"compute", "search", "read", "list"}
        }
        self.compute_tools = {
            t.name: sem
            for t in spec.tools
            if entity_of.get(t.name) in stateless and (sem := compute_semantics(t)) is not None
        }
        self.sql_tools = {
            n: sem for n, sem in sql_tools(spec, bindings).items() if entity_of.get(n) in stateless
        }
        self.vcs_tools = {
            n: sem for n, sem in vcs_tools(spec, bindings).items() if entity_of.get(n) in stateless
        }
        graph = graph_tools(spec, bindings)
        self.graph = graph.model_copy(
            update={
                "tools": {n: g for n, g in graph.tools.items() if entity_of.get(n) in stateless}
            }
        )
        self.checks: list[CheckRecord] = []
        self._n = 0
        self.reader = DbReader(db, model, verify=VERIFY_READS)

    # -- plumbing ---------------------------------------------------------------------------

    async def call(self, tool: str, args: dict[str, Any]) -> _Call:
        res = await self.client.call_tool(tool, args, raise_on_error=False)
        text = " ".join(getattr(c, "text", "") for c in res.content or [])
        # The checks read the route's records; the documented fields that replaced some of them
        # (runtime.ROUTE_RESULT_META) are what the documented-fields probe reads.
        shaped = res.structured_content
        own = (res.meta or {}).get("weft/route_result")
        data = (
            {**(shaped if isinstance(shaped, dict) else {}), **own}
            if isinstance(own, dict)
            else shaped
        )
        return _Call(bool(res.is_error), data, text, shaped)

    def state(self) -> Rows:
        return self.reader.read()

    def record(
        self,
        tool: str,
        name: str,
        kind: str,
        ok: bool,
        category: IssueCategory | None = None,
        detail: str = "",
        args: dict[str, Any] | None = None,
    ) -> bool:
        self.checks.append(
            CheckRecord(
                tool=tool,
                name=name,
                kind=kind,
                passed=ok,
                category=None if ok else (category or "runtime"),
                detail=detail[:300],
                arguments=args,
            )
        )
        return ok

    # -- checks -----------------------------------------------------------------------------

    async def structural(self) -> set[str]:
        listed = {t.name: t for t in await self.client.list_tools()}
        ok_tools: set[str] = set()
        have_contract = {c.tool for c in self.contracts.contracts}
        for tool in self.spec.tools:
            t = listed.get(tool.name)
            if t is None:
                reason = (
                    "no contract, so no route"
                    if tool.name not in have_contract
                    else "tool not listed by the server"
                )
                self.record(
                    tool.name,
                    "listed",
                    "structural",
                    False,
                    "structural" if tool.name in have_contract else "mapping",
                    reason,
                )
                continue
            if t.input_schema != tool.input_schema:
                self.record(
                    tool.name,
                    "input_schema",
                    "structural",
                    False,
                    "structural",
                    "listed input schema differs from the spec",
                )
                continue
            self.record(tool.name, "listed_with_schema", "structural", True)
            ok_tools.add(tool.name)
        return ok_tools

    async def run_tool(self, tool: ToolSpec, contract: ToolContract) -> None:
        gsem = self.graph.tools.get(tool.name)
        if gsem is not None:
            await self.graph_checks(tool, gsem)
            return
        reads = whole_store_read(tool, contract.operation, contract.entity, self.model)
        if reads:
            await self.whole_store_check(tool, reads)
            return
        vsem = self.vcs_tools.get(tool.name)
        if vsem is not None:
            await self.vcs_checks(tool, vsem)
            return
        ssem = self.sql_tools.get(tool.name)
        if ssem is not None:
            await self.sql_checks(tool, ssem)
            return
        csem = self.compute_tools.get(tool.name)
        if csem is not None:
            await self.compute_checks(tool, csem)
            return
        if contract.operation.startswith("file_"):
            await self.file_checks(tool, contract)
            return
        await self.positive(tool, contract, required_only=False, name="normal_all_fields")
        if set(tool.required) != set(tool.properties):
            await self.positive(tool, contract, required_only=True, name="normal_required_only")
        enum_args = [a for a in tool.properties if string_enum(tool.properties[a])]
        if enum_args:
            await self.positive(
                tool, contract, required_only=False, name="boundary_enum_edge", enum_pick=-1
            )
        await self.negatives(tool, contract)

    async def whole_store_check(self, tool: ToolSpec, reads: list[str]) -> None:
        """A whole-store read returns every row of every entity it reads, as the DB holds them."""
        state = self.state()
        res = await self.call(tool.name, {})
        problem = f"valid call failed: {res.text}" if res.is_error else None
        data = res.data if isinstance(res.data, dict) else {}
        for ent in reads:
            if problem:
                break
            got = data.get(W.plural(ent))
            want = len(state.get(ent, {}))
            if not isinstance(got, list) or len(got) != want:
                problem = f"{W.plural(ent)}: {want} rows in the DB, result has {got!r:.80}"
        self.record(
            tool.name, "reads_whole_store", "query", problem is None, "runtime", problem or ""
        )

    async def positive(
        self,
        tool: ToolSpec,
        contract: ToolContract,
        *,
        required_only: bool,
        name: str,
        enum_pick: int = 0,
    ) -> None:
        before = self.state()
        target = self.pick_target(contract, before, required_only=required_only, tool=tool)
        if contract.operation in {"read", "update", "action", "delete"} and target is None:
            self.record(
                tool.name,
                name,
                "normal",
                True,
                detail="skipped: no row in a state this call accepts",
            )
            return
        args = self.build_args(
            tool, contract, target, before, required_only=required_only, enum_pick=enum_pick
        )
        if args is None:
            self.record(
                tool.name,
                name,
                "normal",
                False,
                "mapping",
                "could not build arguments: a required argument maps to nothing in state",
            )
            return
        res = await self.call(tool.name, args)
        after = self.state()
        op = contract.operation
        kind = "query" if op in {"read", "list", "search", "compute"} else "update"
        moves = amount_moves(tool, contract, self.model)
        if res.is_error and not diff_rows(before, after):
            if overdraft_refused(moves, args, before, res.text):
                self.record(tool.name, name, kind, True, detail="refused: insufficient funds")
                return
            self.record(
                tool.name,
                name,
                kind,
                False,
                error_category(res.text),
                f"valid call failed: {res.text}",
                args,
            )
            return
        ent = self.entity(contract.entity)
        diff = diff_rows(before, after)
        problem = await self.expect(tool, contract, ent, args, target, before, after, diff, res)
        if problem is None:
            self.record(tool.name, name, kind, True, args=args)
        else:
            self.record(tool.name, name, kind, False, problem[0], problem[1], args)

    async def expect(
        self,
        tool: ToolSpec,
        contract: ToolContract,
        ent: Entity,
        args: dict[str, Any],
        target: dict[str, Any] | None,
        before: Rows,
        after: Rows,
        diff: dict[str, Any],
        res: _Call,
    ) -> tuple[IssueCategory, str] | None:
        op = contract.operation
        data = res.data or {}
        vals = {
            m.field: args[m.argument]
            for m in contract.mappings
            if m.role in {"value", "reference"} and m.field and m.argument in args
        }
        if op in {"read", "list", "search", "compute"} and diff:
            return "runtime", f"a query changed state: {diff}"
        if op == "read":
            assert target is not None
            returned = data.get(ent.name)
            key = returned.get(ent.key) if isinstance(returned, dict) else None
            stored = after.get(ent.name, {}).get(key)
            if stored is None:
                return "mapping", "the returned row is not in the DB"
            why = same_row(returned, stored)
            if why:
                return "mapping", f"returned row differs from the DB: {why}"
            filters = {
                m.field: args[m.argument]
                for m in contract.mappings
                if m.role == "filter" and m.field and m.argument in args
            }
            if (
                any(m.role == "key" and m.argument in args for m in contract.mappings)
                and key != target[ent.key]
            ):
                return "mapping", f"asked for {target[ent.key]!r}, got {key!r}"
            for f, v in filters.items():
                if not same_value(stored.get(f), v):
                    return "mapping", f"returned row has {f}={stored.get(f)!r}, asked {v!r}"
            return None
        if op in {"list", "search", "compute"}:
            items = data.get("items")
            if not isinstance(items, list):
                return "runtime", "result has no items list"
            expected = self.expected_query(contract, ent, args, after)
            got = [i.get(ent.key) if isinstance(i, dict) else None for i in items]
            if got != expected:
                return "mapping", f"returned keys {got[:5]} but the DB query gives {expected[:5]}"
            for item in items:
                why = same_row(item, after[ent.name][item[ent.key]])
                if why:
                    return "mapping", f"item differs from the DB: {why}"
            return None
        table_diff = diff.get(ent.name, {})
        moves = amount_moves(tool, contract, self.model)
        moved = moved_rows(moves, args)
        others = {
            t: d for t, d in diff.items() if t != ent.name and not only_moved(d, moved.get(t))
        }
        if others:
            return "mapping", f"tables other than {ent.name} changed: {sorted(others)}"
        why_moved = moves_problem(moves, args, before, after)
        if why_moved:
            return "mapping", why_moved
        if op == "create":
            inserted = table_diff.get("inserted", [])
            if len(inserted) != 1 or table_diff.get("updated") or table_diff.get("deleted"):
                if not table_diff:
                    return (
                        "runtime",
                        "create reported success but nothing was written (state access: not persisted)",
                    )
                return "mapping", f"create should insert one {ent.name} row, diff was {table_diff}"
            row = after[ent.name][inserted[0]]
            for f, v in vals.items():
                if not same_value(row.get(f), v):
                    return "mapping", f"argument for {f} was {v!r}, stored {row.get(f)!r}"
            key_arg = next((m.argument for m in contract.mappings if m.role == "key"), None)
            if key_arg and key_arg in args and row[ent.key] != args[key_arg]:
                return "mapping", "the new row does not carry the given key"
            why = same_row(data.get(ent.name), row)
            if why:
                return "mapping", f"returned row differs from the DB: {why}"
            return await self.reread(contract, ent, row)
        assert target is not None
        key = target[ent.key]
        if op in {"update", "action"}:
            expected_changes = dict(vals)
            for tr in contract.transitions:
                if tr.to_value is not None:
                    expected_changes[tr.field] = tr.to_value
            really_changes = any(
                not same_value(target.get(f), v) for f, v in expected_changes.items()
            )
            if not table_diff:
                if really_changes:
                    return (
                        "runtime",
                        f"{op} reported success but the DB is unchanged (state access: not persisted)",
                    )
                return None
            if (
                table_diff.get("inserted")
                or table_diff.get("deleted")
                or table_diff.get("updated") != [key]
            ):
                return (
                    "mapping",
                    f"{op} should change only {ent.name} {key!r}, diff was {table_diff}",
                )
            row = after[ent.name][key]
            for f, v in expected_changes.items():
                if not same_value(row.get(f), v):
                    return (
                        "mapping",
                        f"{f} should be {v!r} after {tool.name}, DB has {row.get(f)!r}",
                    )
            changed = {f for f in row if not same_value(row.get(f), target.get(f))}
            stray = (
                changed - set(expected_changes) - {m.field for m in moves if m.entity == ent.name}
            )
            if stray:
                return "mapping", f"{tool.name} also changed {sorted(stray)}"
            why = same_row(data.get(ent.name), row)
            if why:
                return "mapping", f"returned row differs from the DB: {why}"
            return await self.reread(contract, ent, row)
        if op == "delete":
            if not table_diff:
                return (
                    "runtime",
                    "delete reported success but the row is still there (state access: not persisted)",
                )
            if (
                table_diff.get("deleted") != [key]
                or table_diff.get("updated")
                or table_diff.get("inserted")
            ):
                return (
                    "mapping",
                    f"delete should remove only {ent.name} {key!r}, diff was {table_diff}",
                )
            return await self.reread(contract, ent, None, key=key)
        return None

    def expected_query(
        self, contract: ToolContract, ent: Entity, args: dict[str, Any], state: Rows
    ) -> list[Any]:
        rows = list(state.get(ent.name, {}).values())
        for m in contract.mappings:
            if (
                m.role == "filter"
                and m.field
                and m.argument in args
                and args[m.argument] is not None
            ):
                rows = [r for r in rows if same_value(r.get(m.field), args[m.argument])]
        text_arg = next(
            (m.argument for m in contract.mappings if m.role == "filter" and m.field is None), None
        )
        if text_arg and args.get(text_arg) is not None:
            words = query_words(args[text_arg])
            fields = [f.name for f in ent.fields if f.type == "string" and not f.primary_key]
            if words:
                rows = [
                    r
                    for r in rows
                    if any(
                        w in " ".join(str(r.get(f) or "") for f in fields).lower() for w in words
                    )
                ]
        rows.sort(key=lambda r: r[ent.key])
        limit = 50
        for m in contract.mappings:
            if (
                m.role == "option"
                and m.argument in args
                and isinstance(args[m.argument], int)
                and not isinstance(args[m.argument], bool)
            ):
                from weft_envsynth._internal.words import LIMIT_ARGS, identifier

                if identifier(m.argument) in LIMIT_ARGS and args[m.argument] >= 1:
                    limit = min(args[m.argument], 500)
                    break
        return [r[ent.key] for r in rows[:limit]]

    def read_tool(self, ent: Entity) -> tuple[ToolContract, str] | None:
        for c in self.contracts.contracts:
            if c.entity == ent.name and c.operation == "read":
                keys = [m.argument for m in c.mappings if m.role == "key"]
                tool = self.spec.tool(c.tool)
                if keys and set(tool.required) <= set(keys):
                    return c, keys[0]
        return None

    async def reread(
        self, contract: ToolContract, ent: Entity, row: dict[str, Any] | None, key: Any = None
    ) -> tuple[IssueCategory, str] | None:
        """The subsequent read: the entity's read tool must show the write."""
        found = self.read_tool(ent)
        if found is None:
            return None
        rc, key_arg = found
        k = row[ent.key] if row is not None else key
        res = await self.call(rc.tool, {key_arg: k})
        if row is None:
            if not res.is_error:
                return "runtime", f"{rc.tool} still returns the deleted {ent.name}"
            return None
        if res.is_error:
            return "runtime", f"subsequent read {rc.tool} failed: {res.text}"
        why = same_row((res.data or {}).get(ent.name), row)
        if why:
            return "mapping", f"subsequent read {rc.tool} disagrees with the DB: {why}"
        return None


def _seed_workspace(root: Path) -> None:
    for rel, text in SEED_FILES.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")


async def validate_async(
    work: Path, spec: MCPSpec, model: EntityModel, contracts: ContractSet, *, round: int = 0
) -> ValidationReport:
    """Validate the bundle sources in `work` (seed.sqlite included) against the spec and contracts,
    with the specialised bindings the sources were built with (bindings.json, else the rules')."""
    from fastmcp import Client

    report = ValidationReport(round=round)
    try:
        bindings = load_bindings(work)
        server_mod = import_bundle(work)
    except BundleError as exc:
        msg = str(exc.__cause__ or exc)
        category: IssueCategory = (
            "structural" if "models" in msg or "sqlalchemy" in msg.lower() else "runtime"
        )
        report.server_error = msg[:300]
        report.checks = [
            CheckRecord(
                tool=t.name,
                name="server_import",
                kind="structural",
                passed=False,
                category=category,
                detail=msg[:300],
            )
            for t in spec.tools
        ]
        return report
    # A RAM-backed folder when there is one: validation commits often and never needs durability.
    shm = Path("/dev/shm")
    tmp = Path(
        tempfile.mkdtemp(
            prefix="weft-validate-", dir=shm if shm.is_dir() and os.access(shm, os.W_OK) else None
        )
    )
    session_id = f"validate-{tmp.name}"
    try:
        db = tmp / "state.sqlite"
        shutil.copyfile(work / "seed.sqlite", db)
        ws = tmp / "workspace"
        _seed_workspace(ws)
        with bind_session(SessionBinding(session_id=session_id, db_path=db, workspace=ws)):
            try:
                server = server_mod.create_server()
            except Exception as exc:
                report.server_error = f"create_server failed: {type(exc).__name__}: {exc}"[:300]
                report.checks = [
                    CheckRecord(
                        tool=t.name,
                        name="create_server",
                        kind="structural",
                        passed=False,
                        category="runtime",
                        detail=report.server_error,
                    )
                    for t in spec.tools
                ]
                return report
            async with Client(server) as client:
                v = _Validator(spec, model, contracts, client, db, ws, bindings)
                try:
                    ok = await v.structural()
                    by_tool = {c.tool: c for c in contracts.contracts}
                    order = sorted(
                        (t for t in spec.tools if t.name in ok and t.name in by_tool),
                        key=lambda t: _ORDER.get(by_tool[t.name].operation, 5),
                    )
                    for tool in order:
                        try:
                            await v.run_tool(tool, by_tool[tool.name])
                        except Exception as exc:  # the validator must survive any server behaviour
                            v.record(
                                tool.name,
                                "execution",
                                "normal",
                                False,
                                "runtime",
                                f"{type(exc).__name__}: {exc}"[:300],
                            )
                    served = {t.name for t in order}
                    try:
                        await v.behaviour_probes(served)
                    except Exception as exc:  # the validator must survive any server behaviour
                        v.record(
                            sorted(served)[0] if served else spec.tools[0].name,
                            "behaviour_probes",
                            "behaviour",
                            False,
                            "runtime",
                            f"{type(exc).__name__}: {exc}"[:300],
                        )
                    report.checks = v.checks
                finally:
                    v.reader.close()
    finally:
        release_session(session_id)
        unload_bundle(server_mod)
        shutil.rmtree(tmp, ignore_errors=True)
    return report


def validate(
    work: Path, spec: MCPSpec, model: EntityModel, contracts: ContractSet, *, round: int = 0
) -> ValidationReport:
    """Synchronous wrapper (runs its own event loop, or a worker thread inside a running one)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(validate_async(work, spec, model, contracts, round=round))
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(
            asyncio.run, validate_async(work, spec, model, contracts, round=round)
        ).result()
