"""Boundary checks of one tool: calls a correct tool refuses, without changing any state.

An unknown or empty id, a reference to a row that does not exist, a wrong type, a missing
required argument, a value outside an enum, a transition the record's state does not allow (it is
already there, or the lifecycle does not leave its state for it), a duplicate of a unique field;
and an empty string where one is allowed must not crash the tool.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from weft_core.models import ToolContract, ToolSpec
from weft_envsynth._internal.dbstate import diff_rows, read_workspace
from weft_envsynth._internal.jsonschema import schema_type, string_enum
from weft_envsynth.analyze import idempotent_delete
from weft_envsynth.plans import IssueCategory


class BoundaryChecks:
    """Mixin of the validator: needs `ws`, `call`, `record`, `state`, `build_args`, `pick_target`
    and `entity`."""

    ws: Path
    call: Any
    record: Any
    state: Any
    build_args: Any
    pick_target: Any
    entity: Any

    async def expect_error(
        self, tool: ToolSpec, name: str, args: dict[str, Any], category: IssueCategory, why: str
    ) -> None:
        before = self.state()
        ws_before = read_workspace(self.ws)
        res = await self.call(tool.name, args)
        changed = diff_rows(before, self.state())
        if not res.is_error:
            self.record(tool.name, name, "boundary", False, category, f"accepted {why}", args)
        elif changed or read_workspace(self.ws) != ws_before:
            self.record(
                tool.name,
                name,
                "boundary",
                False,
                "runtime",
                f"rejected {why} but changed state",
                args,
            )
        elif res.text.lower().startswith(("internal_error", "state_access")):
            self.record(
                tool.name, name, "boundary", False, "runtime", f"crashed on {why}: {res.text}", args
            )
        else:
            self.record(tool.name, name, "boundary", True, args=args)

    async def negatives(self, tool: ToolSpec, contract: ToolContract) -> None:
        state = self.state()
        target = self.pick_target(contract, state)
        base = self.build_args(tool, contract, target, state, required_only=True)
        if base is None:
            return
        ent = self.entity(contract.entity)
        key_arg = next((m.argument for m in contract.mappings if m.role == "key"), None)
        if (
            key_arg
            and contract.operation in {"read", "update", "action", "delete"}
            and key_arg in base
            and not idempotent_delete(tool, contract.operation)
        ):
            unknown = 99999999 if ent.field(ent.key).type == "integer" else "UNKNOWN-99999"
            await self.expect_error(
                tool, "boundary_unknown_id", {**base, key_arg: unknown}, "mapping", "an unknown id"
            )
            if ent.field(ent.key).type == "string":
                await self.expect_error(
                    tool, "boundary_empty_id", {**base, key_arg: ""}, "mapping", "an empty id"
                )
        for m in contract.mappings:
            if m.role == "reference" and m.argument in tool.properties:
                ref_type = schema_type(tool.properties[m.argument])
                bad = 99999999 if ref_type == "integer" else "UNKNOWN-99999"
                args = self.build_args(tool, contract, target, state, required_only=False) or dict(
                    base
                )
                await self.expect_error(
                    tool,
                    "boundary_unknown_reference",
                    {**args, m.argument: bad},
                    "mapping",
                    "a reference to an unknown row",
                )
                break
        typed = [
            a
            for a in tool.required
            if schema_type(tool.properties[a])
            in {"string", "integer", "number", "boolean", "array"}
        ]
        if typed:
            a = typed[0]
            wrong = {
                "string": {"not": "a string"},
                "integer": "not-a-number",
                "number": "not-a-number",
                "boolean": "maybe",
                "array": "not-an-array",
            }[schema_type(tool.properties[a]) or "string"]
            await self.expect_error(
                tool, "boundary_wrong_type", {**base, a: wrong}, "runtime", f"a wrong type for {a}"
            )
            missing = {k: v for k, v in base.items() if k != a}
            await self.expect_error(
                tool,
                "boundary_missing_required",
                missing,
                "runtime",
                f"a call without required {a}",
            )
        for m in contract.mappings:
            sch = tool.properties.get(m.argument)
            enum = string_enum(sch)
            if enum and m.role in {"value", "filter"} and isinstance(sch, dict) and "enum" in sch:
                await self.expect_error(
                    tool,
                    "boundary_enum_outside",
                    {**base, m.argument: "__not_a_value__"},
                    "runtime",
                    f"a value outside the enum of {m.argument}",
                )
                break
        if contract.operation == "action" and contract.transitions and key_arg:
            tr = contract.transitions[0]
            rows = list(state.get(ent.name, {}).values())
            # Already there, and (the lifecycle) in a state this transition does not leave.
            for name, barred in (
                ("boundary_precondition", [r for r in rows if r.get(tr.field) == tr.to_value]),
                (
                    "boundary_transition",
                    [
                        r
                        for r in rows
                        if tr.from_values
                        and r.get(tr.field) not in {tr.to_value, None, *tr.from_values}
                    ],
                ),
            ):
                args = (
                    self.build_args(tool, contract, barred[0], state, required_only=True)
                    if barred
                    else None
                )
                if args is not None:
                    await self.expect_error(
                        tool,
                        name,
                        args,
                        "mapping",
                        f"a {ent.name} {barred[0].get(tr.field)!r} cannot become {tr.to_value!r}",
                    )
        if contract.operation == "create":
            uniq = [
                m
                for m in contract.mappings
                if m.role == "value" and m.field and ent.field(m.field).unique
            ]
            rows = list(state.get(ent.name, {}).values())
            ufield = uniq[0].field if uniq else None
            if uniq and rows and ufield is not None and rows[0].get(ufield) is not None:
                args = self.build_args(tool, contract, None, state, required_only=False) or dict(
                    base
                )
                await self.expect_error(
                    tool,
                    "boundary_unique_conflict",
                    {**args, uniq[0].argument: rows[0][ufield]},
                    "structural",
                    f"a duplicate {ufield}",
                )
        strings = [
            a
            for a in tool.properties
            if schema_type(tool.properties[a]) == "string"
            and a != key_arg
            and not string_enum(tool.properties[a])
        ]
        if strings and contract.operation in {"create", "update", "list", "search", "compute"}:
            a = strings[0]
            sm = next((mm for mm in contract.mappings if mm.argument == a), None)
            if (sm is not None and sm.role in {"value", "option"}) or (
                sm is not None and sm.role == "filter" and sm.field is None
            ):
                before = self.state()
                tgt = self.pick_target(contract, before)
                args = self.build_args(tool, contract, tgt, before, required_only=True)
                if args is not None:
                    args[a] = ""
                    res = await self.call(tool.name, args)
                    ok = not res.is_error or not res.text.lower().startswith(
                        ("internal_error", "state_access")
                    )
                    self.record(
                        tool.name,
                        "boundary_empty_string",
                        "boundary",
                        ok,
                        "runtime",
                        "" if ok else f"crashed on an empty string: {res.text}",
                        args,
                    )
