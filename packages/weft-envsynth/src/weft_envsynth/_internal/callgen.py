"""Generating tool calls for validation: arguments from the contract and the current state.

Normal calls take keys, references and filter values from rows that exist, fresh values for
writes; boundary calls vary them (enum edges, required-only). Values are deterministic per run.
"""

from __future__ import annotations

from typing import Any

from weft_core.models import ContractSet, Entity, EntityModel, MCPSpec, ToolContract, ToolSpec
from weft_envsynth._internal.dbstate import Rows
from weft_envsynth._internal.jsonschema import schema_type, string_enum


class CallGenerator:
    """Builds arguments for `spec`'s tools from their contracts and a DB state."""

    spec: MCPSpec
    model: EntityModel
    contracts: ContractSet
    _n: int

    def fresh(self, kind: str) -> Any:
        self._n += 1
        return {"integer": 900000 + self._n, "number": 12.5 + self._n, "boolean": True}.get(
            kind, f"validation {self._n}"
        )

    def entity(self, name: str | None) -> Entity:
        return self.model.entity(name or "")

    def value_for(
        self,
        tool: ToolSpec,
        arg: str,
        contract: ToolContract,
        target: dict[str, Any] | None,
        state: Rows,
        *,
        enum_pick: int = 0,
    ) -> tuple[bool, Any]:
        schema = tool.properties.get(arg, {})
        mapping = next((m for m in contract.mappings if m.argument == arg), None)
        role = mapping.role if mapping else "option"
        stype = schema_type(schema)
        enum = string_enum(schema)
        if contract.operation.startswith("file_"):
            return True, self._file_value(contract, role, arg, stype)
        ent = self.entity(contract.entity)
        if role == "key":
            if contract.operation == "create":
                kf = ent.field(ent.key)
                return True, self.fresh(
                    "integer"
                ) if kf.type == "integer" else f"NEW-{self._n + 1:05d}"
            return (target is not None), (target or {}).get(ent.key)
        if role == "reference" and mapping and mapping.field:
            parent = (ent.field(mapping.field).foreign_key or "").split(".")[0]
            rows = list(state.get(parent, {}))
            if (
                target is not None
                and target.get(mapping.field) is not None
                and contract.operation != "update"
            ):
                return True, target[mapping.field]
            return bool(rows), rows[min(1, len(rows) - 1)] if rows else None
        if role == "filter":
            if mapping and mapping.field is None:
                if target is None:
                    return True, "record"
                words = " ".join(
                    str(target.get(f.name) or "")
                    for f in ent.fields
                    if f.type == "string" and not f.primary_key
                ).split()
                word = next(
                    (w for w in words if len(w) >= 4 and w.isalpha()),
                    words[0] if words else "record",
                )
                return True, word if stype in (None, "string") else None
            if target is not None and mapping and mapping.field:
                v = target.get(mapping.field)
                if v is None:
                    return False, None
                return True, v
            return False, None
        if enum:
            return True, enum[enum_pick % len(enum)] if enum_pick >= 0 else enum[-1]
        if role == "value" and mapping and mapping.field:
            f = ent.field(mapping.field)
            if f.enum:
                return True, f.enum[enum_pick % len(f.enum)] if enum_pick >= 0 else f.enum[-1]
        return True, self._typed_value(schema, stype, arg)

    def _typed_value(self, schema: Any, stype: str | None, arg: str) -> Any:
        if stype == "integer":
            lo = schema.get("minimum", 1) if isinstance(schema, dict) else 1
            hi = schema.get("maximum", 10) if isinstance(schema, dict) else 10
            return max(int(lo), min(5, int(hi)))
        if stype == "number":
            lo = schema.get("minimum", 1) if isinstance(schema, dict) else 1
            return max(float(lo), 2.5)
        if stype == "boolean":
            return True
        if stype == "array":
            item = schema.get("items", {}) if isinstance(schema, dict) else {}
            it = schema_type(item)
            return [self._typed_value(item, it, arg)] if it else ["x"]
        if stype == "object":
            return {}
        if stype == "string" or stype is None:
            fmt = schema.get("format") if isinstance(schema, dict) else None
            if fmt == "date":
                return "2026-05-01"
            if fmt == "date-time":
                return "2026-05-01T10:00:00Z"
            if fmt == "email" or "email" in arg.lower():
                self._n += 1
                return f"validator{self._n}@example.com"
            if fmt in {"uri", "url"} or "url" in arg.lower():
                return "https://example.com/validation"
            self._n += 1
            return f"validation {arg} {self._n}"
        return None

    def _file_value(self, contract: ToolContract, role: str, arg: str, stype: str | None) -> Any:
        paths = [m.argument for m in contract.mappings if m.role == "path"]
        if role == "path":
            if contract.operation == "file_write":
                if len(paths) > 1 and arg == paths[0]:
                    return "notes/todo.txt"
                self._n += 1
                return f"validation/file_{self._n}.txt"
            if contract.operation == "file_list":
                return "/"
            return "notes/todo.txt" if contract.operation == "file_read" else "reports/q1.csv"
        if role == "content":
            return "written by validation\n"
        return self._typed_value({}, stype, arg)

    def build_args(
        self,
        tool: ToolSpec,
        contract: ToolContract,
        target: dict[str, Any] | None,
        state: Rows,
        *,
        required_only: bool,
        enum_pick: int = 0,
    ) -> dict[str, Any] | None:
        args: dict[str, Any] = {}
        for arg in tool.properties:
            required = arg in tool.required
            if required_only and not required:
                continue
            mapping = next((m for m in contract.mappings if m.argument == arg), None)
            role = mapping.role if mapping else "option"
            if not required and role == "option" and not contract.operation.startswith("file_"):
                stype = schema_type(tool.properties[arg])
                if stype not in {"integer"} or string_enum(tool.properties[arg]):
                    continue
            ok, value = self.value_for(tool, arg, contract, target, state, enum_pick=enum_pick)
            if not ok or value is None:
                if required:
                    return None
                continue
            args[arg] = value
        return args

    def referenced_keys(self, ent: Entity, state: Rows) -> set[Any]:
        """Keys of `ent` rows that other rows point at (foreign keys forbid deleting them)."""
        referenced: set[Any] = set()
        for e in self.model.entities:
            for f in e.fields:
                if f.foreign_key == f"{ent.name}.{ent.key}":
                    referenced |= {r.get(f.name) for r in state.get(e.name, {}).values()}
        return referenced

    def pick_target(
        self,
        contract: ToolContract,
        state: Rows,
        *,
        required_only: bool = False,
        tool: ToolSpec | None = None,
    ) -> dict[str, Any] | None:
        if contract.entity is None:
            return None
        ent = self.entity(contract.entity)
        rows = sorted(state.get(ent.name, {}).values(), key=lambda r: r[ent.key])
        if not rows:
            return None
        keys = [m.argument for m in contract.mappings if m.role == "key"]
        # Without a key argument in the call, the route acts on the first row matching the filters.
        keyless = not keys or (required_only and tool is not None and keys[0] not in tool.required)
        if keyless and contract.operation in {"read", "update", "action", "delete"}:
            # The route acts on the first row (by key) matching the filters taken from that row.
            first = rows[0]
            if contract.operation == "delete" and first[ent.key] in self.referenced_keys(
                ent, state
            ):
                return None  # deleting a referenced row is refused by the foreign keys: nothing to check
            for tr in contract.transitions:
                if first.get(tr.field) == tr.to_value or (
                    tr.from_values and first.get(tr.field) not in tr.from_values
                ):
                    return None
            return first
        if contract.operation == "action" and contract.transitions:
            tr = contract.transitions[0]
            ok = [
                r
                for r in rows
                if r.get(tr.field) != tr.to_value
                and (not tr.from_values or r.get(tr.field) in tr.from_values)
            ]
            return ok[0] if ok else None
        if contract.operation == "delete":
            referenced = self.referenced_keys(ent, state)
            free = [r for r in rows if r[ent.key] not in referenced]
            return free[-1] if free else None
        if contract.operation in {"list", "search", "compute"}:
            return rows[len(rows) // 2]
        return rows[0]
