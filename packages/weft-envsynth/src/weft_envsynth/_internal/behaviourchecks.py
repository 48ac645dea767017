"""Behavioural probes of database tools, generated from the definitions: what a tool set promises
across tools, not what one tool's contract says of itself.

Per record kind that a tool creates: the new record is found by every read of that kind (by its
key) and every listing or search whose filters it satisfies, and a listing of another kind taking its
id accepts it; an update is visible to every read;
a deleted record is refused by every read and gone from every listing; every tool that documents
its output answers with the documented fields. A probe is recorded on the tool that broke the
promise, with kind "behaviour" (certification reports these apart from self-consistency).
"""

from __future__ import annotations

from typing import Any

from weft_core.models import ContractSet, Entity, EntityModel, MCPSpec, ToolContract, ToolSpec
from weft_envsynth._internal import words as W
from weft_envsynth._internal.dbstate import diff_rows, same_row
from weft_envsynth._internal.jsonschema import schema_type
from weft_envsynth.analyze import id_argument_entity
from weft_envsynth.responses import resolve_response

# Existing boundary checks that are behavioural promises too (unknown ids and references refused,
# invalid transitions refused): certification counts them with the probes.
BEHAVIOUR_BOUNDARIES = {
    "boundary_unknown_id",
    "boundary_unknown_reference",
    "boundary_precondition",
    "boundary_transition",
}


def is_behaviour_check(name: str, kind: str) -> bool:
    return kind == "behaviour" or name in BEHAVIOUR_BOUNDARIES


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
}


def documented_fields(tool: ToolSpec) -> list[str]:
    """Top-level fields a tool's documented output (outputSchema) names; [] when none or when the
    schema is not an object with properties (a hostile `properties: "x"` documents nothing)."""
    schema, _notes = resolve_response(tool)
    props = schema.get("properties") if isinstance(schema, dict) else None
    return [k for k in props if isinstance(k, str)] if isinstance(props, dict) else []


def _typed(value: Any, schema: Any) -> bool:
    t = schema_type(schema)
    kinds = _JSON_TYPES.get(_ALIASES.get(t or "", t or ""))
    if kinds is None:
        return True  # untyped or contradictory: any value is the documented type
    if isinstance(value, bool) and t != "boolean":
        return False
    return isinstance(value, kinds)


# Prefix of a problem that is a type disagreement: the state holds the field, in another type
# than documented (a generated string key where the documentation says integer).
_TYPE_PROBLEM = "type: "
_ALIASES = {"dict": "object", "float": "number", "int": "integer", "bool": "boolean",
            "str": "string", "list": "array", "tuple": "array"}  # fmt: skip


def documented_problems(tool: ToolSpec, data: Any) -> list[str]:
    """How an answer departs from the documented response: a documented field it lacks, a
    required one that is null, a value of another type; a documented scalar answered otherwise."""
    schema, _notes = resolve_response(tool)
    if schema is None:
        return []
    t = schema_type(schema)
    if t in {"string", "integer", "number", "boolean", "array"}:
        got = data.get("result") if isinstance(data, dict) else None
        ok = isinstance(data, dict) and set(data) == {"result"} and _typed(got, schema)
        if not isinstance(data, dict) or set(data) != {"result"}:
            return [f"the answer is not the documented {t}"]
        return [] if ok else [f"{_TYPE_PROBLEM}the answer is {type(got).__name__}, not {t}"]
    props = schema.get("properties")
    if not isinstance(props, dict):
        return []
    if not isinstance(data, dict):
        return ["the answer is not an object"]
    listed = schema.get("required")
    required: list[Any] = listed if isinstance(listed, list) else []
    problems: list[str] = []
    for name, sub in props.items():
        if not isinstance(name, str):
            continue
        if name not in data:
            problems.append(f"{name} missing")
        elif data[name] is None:
            if name in required:
                problems.append(f"{name} is null but required")
        elif not _typed(data[name], sub):
            problems.append(
                f"{_TYPE_PROBLEM}{name} is {type(data[name]).__name__}, not {schema_type(sub)}"
            )
    return problems


class BehaviourChecks:
    """Mixin of the validator: needs `call`, `record`, `state`, `build_args` and the model."""

    spec: MCPSpec
    model: EntityModel
    contracts: ContractSet
    call: Any
    record: Any
    state: Any
    build_args: Any

    def _db_contracts(self, served: set[str]) -> list[ToolContract]:
        """Contracts of tools served as database records (not lookups, files, SQL, graphs...)."""
        stateless = {e.name for e in self.model.entities if e.reference_data}
        return [
            c
            for c in self.contracts.contracts
            if c.tool in served
            and c.entity
            and c.entity not in stateless
            and not c.operation.startswith("file_")
        ]

    async def _documented(self, tool: ToolSpec, data: Any, entity: str) -> None:
        """The answer (what the caller reads, not the route's records) has the documented
        response's fields in their types."""
        if tool.output_schema is None or (tool.name, "documented") in self._probed:
            return
        self._probed.add((tool.name, "documented"))
        problems = documented_problems(tool, data)
        typed = [p for p in problems if p.startswith(_TYPE_PROBLEM)]
        fields = [p for p in problems if not p.startswith(_TYPE_PROBLEM)]
        self.record(
            tool.name, "behaviour_documented_fields", "behaviour", not fields, "mapping",
            f"the answer lacks documented fields: {'; '.join(fields)[:300]}" if fields else "",
        )  # fmt: skip
        self.record(
            tool.name, "behaviour_documented_types", "behaviour", not typed, "mapping",
            f"the state's values are not the documented types: {'; '.join(typed)[:300]}"
            if typed else "",
        )  # fmt: skip

    async def behaviour_probes(self, served: set[str]) -> None:
        self._probed: set[tuple[str, str]] = set()
        self._served = served
        contracts = self._db_contracts(served)
        for ent in self.model.entities:
            mine = [c for c in contracts if c.entity == ent.name]
            creates = [c for c in mine if c.operation == "create"]
            if creates:
                await self._probe_entity(ent, creates[0], mine)

    async def _probe_entity(
        self, ent: Entity, create: ToolContract, mine: list[ToolContract]
    ) -> None:
        before = self.state()
        ctool = self.spec.tool(create.tool)
        args = self.build_args(ctool, create, None, before, required_only=False)
        if args is None:
            return
        res = await self.call(ctool.name, args)
        after = self.state()
        inserted = diff_rows(before, after).get(ent.name, {}).get("inserted", [])
        if res.is_error or len(inserted) != 1:
            return  # the create's own checks say what went wrong
        await self._documented(ctool, res.shaped, ent.name)
        row = after[ent.name][inserted[0]]
        reads = [c for c in mine if c.operation == "read"]
        finders = [c for c in mine if c.operation in {"list", "search"}]
        await self._found(ent, row, reads, finders, "behaviour_finds_created", create.tool)
        await self._others_accept(ent, row[ent.key], create.tool)
        for upd in (c for c in mine if c.operation in {"update", "action"}):
            await self._update_visible(ent, row[ent.key], upd, reads)
        deletes = [c for c in mine if c.operation == "delete"]
        if deletes:
            await self._delete_gone(ent, row[ent.key], deletes[0], reads, finders)

    def _row(self, ent: Entity, key: Any) -> dict[str, Any] | None:
        got: dict[str, Any] | None = self.state().get(ent.name, {}).get(key)
        return got

    async def _read(
        self, ent: Entity, rc: ToolContract, row: dict[str, Any]
    ) -> tuple[dict[str, Any] | None, Any, str]:
        """Read `row` with a read tool: (arguments, answer data, error text or '')."""
        tool = self.spec.tool(rc.tool)
        if not any(m.role == "key" for m in rc.mappings):
            return None, None, ""
        args = self.build_args(tool, rc, row, self.state(), required_only=True)
        if args is None:
            return None, None, ""
        res = await self.call(tool.name, args)
        if not res.is_error:
            await self._documented(tool, res.shaped, ent.name)
        return args, res.data, res.text if res.is_error else ""

    async def _listed(
        self, ent: Entity, fc: ToolContract, row: dict[str, Any]
    ) -> tuple[dict[str, Any] | None, list[Any] | None]:
        """The keys a listing or search answers when asked with filters the row satisfies."""
        tool = self.spec.tool(fc.tool)
        args = self.build_args(tool, fc, row, self.state(), required_only=False)
        if args is None:
            return None, None
        total = len(self.state().get(ent.name, {}))
        # A page as large as the table where the limit takes a number (a scraped `first: string`
        # does not); a page that cannot reach every row proves nothing.
        limits = [
            m.argument
            for m in fc.mappings
            if m.role == "option"
            and W.identifier(m.argument) in W.LIMIT_ARGS
            and schema_type(tool.properties.get(m.argument)) in {"integer", "number"}
        ]
        for a in limits:
            args[a] = max(total, 1)
        if total > 50 and not limits:
            return None, None
        res = await self.call(tool.name, args)
        items = (res.data or {}).get("items") if not res.is_error else None
        if not isinstance(items, list):
            return None, None  # refused or not a page: the tool's own checks say why
        await self._documented(tool, res.shaped, ent.name)
        return args, [i.get(ent.key) if isinstance(i, dict) else None for i in items]

    async def _found(
        self,
        ent: Entity,
        row: dict[str, Any],
        reads: list[ToolContract],
        finders: list[ToolContract],
        name: str,
        writer: str,
    ) -> None:
        key = row[ent.key]
        for rc in reads:
            args, data, err = await self._read(ent, rc, row)
            if args is None:
                continue
            got = (data or {}).get(ent.name) if isinstance(data, dict) else None
            why = err or (same_row(got, row) if got is not None else "no record in the answer")
            self.record(
                rc.tool, name, "behaviour", not why, "runtime",
                f"{ent.name} {key!r} written by {writer} not found: {why}" if why else "", args,
            )  # fmt: skip
        for fc in finders:
            args, keys = await self._listed(ent, fc, row)
            if args is None:
                continue
            ok = keys is not None and key in keys
            if keys is None:
                continue
            self.record(
                fc.tool, name, "behaviour", ok, "mapping",
                "" if ok else f"{ent.name} {key!r} written by {writer} is not listed "
                f"with filters it satisfies ({str(keys)[:80]})", args,
            )  # fmt: skip

    async def _others_accept(self, ent: Entity, key: Any, writer: str) -> None:
        """A listing of another kind that takes this kind's id (`list_comments(ticket_id)`) accepts
        the id of a record just written: an empty answer is fine, "not found" is not."""
        for c in self._db_contracts(self._served):
            tool = self.spec.tool(c.tool)
            # Collections only: one record of another kind "matching" a new id may rightly not
            # exist (`get_card_item(boardId)` on an empty board).
            if c.entity == ent.name or c.operation not in {"list", "search"}:
                continue
            arg = next(
                (a for a, s in tool.properties.items() if id_argument_entity(a, s) == ent.name),
                None,
            )
            if arg is None:
                continue
            state = self.state()
            # The other arguments as for any of that kind's records; the id is then the new one.
            rows = list(state.get(c.entity or "", {}).values())
            args = self.build_args(tool, c, rows[0] if rows else None, state, required_only=True)
            if args is None:
                continue
            args[arg] = key
            res = await self.call(tool.name, args)
            refused = res.is_error and res.text.lower().startswith("not_found")
            if res.is_error and not refused:
                continue  # refused for another reason: this probe has nothing to say
            self.record(
                tool.name, "behaviour_accepts_created_id", "behaviour", not refused, "runtime",
                f"{arg}={key!r} ({ent.name} written by {writer}) refused: {res.text[:120]}"
                if refused else "", args,
            )  # fmt: skip

    async def _update_visible(
        self, ent: Entity, key: Any, upd: ToolContract, reads: list[ToolContract]
    ) -> None:
        row = self._row(ent, key)
        if row is None:
            return
        tool = self.spec.tool(upd.tool)
        args = self.build_args(tool, upd, row, self.state(), required_only=False)
        if args is None:
            return
        before = self.state()
        res = await self.call(tool.name, args)
        changed = diff_rows(before, self.state()).get(ent.name, {}).get("updated", [])
        if res.is_error or changed != [key]:
            return  # refused (a transition from this state) or changed nothing: nothing to see
        await self._documented(tool, res.shaped, ent.name)
        now = self._row(ent, key)
        assert now is not None
        for rc in reads:
            rargs, data, err = await self._read(ent, rc, now)
            if rargs is None:
                continue
            got = (data or {}).get(ent.name) if isinstance(data, dict) else None
            why = err or (same_row(got, now) if got is not None else "no record in the answer")
            self.record(
                upd.tool, "behaviour_update_visible", "behaviour", not why, "runtime",
                f"{rc.tool} does not show the update: {why}" if why else "", args,
            )  # fmt: skip

    async def _delete_gone(
        self,
        ent: Entity,
        key: Any,
        dc: ToolContract,
        reads: list[ToolContract],
        finders: list[ToolContract],
    ) -> None:
        row = self._row(ent, key)
        if row is None:
            return
        tool = self.spec.tool(dc.tool)
        args = self.build_args(tool, dc, row, self.state(), required_only=True)
        if args is None:
            return
        res = await self.call(tool.name, args)
        if res.is_error or self._row(ent, key) is not None:
            return
        await self._documented(tool, res.shaped, ent.name)
        for rc in reads:
            rargs, _data, err = await self._read(ent, rc, row)
            if rargs is not None:
                self.record(
                    dc.tool, "behaviour_delete_gone", "behaviour", bool(err), "runtime",
                    "" if err else f"{rc.tool} still answers the deleted {ent.name} {key!r}",
                    args,
                )  # fmt: skip
        for fc in finders:
            fargs, keys = await self._listed(ent, fc, row)
            if fargs is not None and keys is not None:
                self.record(
                    dc.tool, "behaviour_delete_gone", "behaviour", key not in keys, "runtime",
                    "" if key not in keys else f"{fc.tool} still lists the deleted {key!r}", args,
                )  # fmt: skip
