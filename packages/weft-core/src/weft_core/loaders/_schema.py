"""Normalize one real-world JSON Schema into the subset Weft's generators and MCP clients rely on.

Real tool specs are sloppy: `$ref`s into `$defs` (sometimes recursive), types spelled like Python
or OpenAPI (`dict`, `float`, `nullable`), enums without a type, `required` lists naming properties
that do not exist, property schemas that are not schemas at all. `normalize_schema` returns a
self-contained schema (every local `$ref` inlined, `$defs` removed) and reports each change through
a callback; what cannot be repaired raises `SchemaRejected` with a reason naming the location.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

# Spellings seen in OpenAI/BFCL docs, OpenAPI and hand-written specs -> (JSON type, format).
_TYPE_ALIASES: dict[str, tuple[str, str | None]] = {
    "object": ("object", None),
    "dict": ("object", None),
    "map": ("object", None),
    "hash": ("object", None),
    "record": ("object", None),
    "string": ("string", None),
    "str": ("string", None),
    "text": ("string", None),
    "char": ("string", None),
    "date": ("string", "date"),
    "datetime": ("string", "date-time"),
    "date-time": ("string", "date-time"),
    "time": ("string", "time"),
    "uuid": ("string", "uuid"),
    "email": ("string", "email"),
    "uri": ("string", "uri"),
    "url": ("string", "uri"),
    "integer": ("integer", None),
    "int": ("integer", None),
    "int32": ("integer", None),
    "int64": ("integer", None),
    "long": ("integer", None),
    "number": ("number", None),
    "float": ("number", None),
    "double": ("number", None),
    "decimal": ("number", None),
    "numeric": ("number", None),
    "boolean": ("boolean", None),
    "bool": ("boolean", None),
    "array": ("array", None),
    "list": ("array", None),
    "tuple": ("array", None),
    "set": ("array", None),
    "null": ("null", None),
    "none": ("null", None),
}
# Spellings that mean "any value": JSON Schema says that by leaving `type` out.
_ANY_TYPES = {"any", "*", "mixed", "unknown", "object|any"}

# Keywords whose value is one schema, a list of schemas, or a map name -> schema.
_SUBSCHEMA = ("additionalProperties", "not", "contains", "propertyNames", "if", "then", "else")
_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SUBSCHEMA_MAPS = ("patternProperties", "dependentSchemas")
# Containers of definitions: they only exist to be referenced, so they go once refs are inlined.
_DEFINITION_KEYS = ("$defs", "definitions")

DEFAULT_MAX_DEPTH = 64
DEFAULT_MAX_NODES = 20_000


class SchemaRejected(Exception):
    """The schema cannot be repaired; `reason` says what and where."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


Warn = Callable[[str], None]


def normalize_schema(
    schema: Any,
    *,
    warn: Warn,
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_nodes: int = DEFAULT_MAX_NODES,
) -> dict[str, Any]:
    """A normalized deep copy of `schema` (which must be a JSON object)."""
    if not isinstance(schema, dict):
        raise SchemaRejected(f"schema is a {_kind(schema)}, not a JSON object")
    out = _Normalizer(schema, warn, max_depth, max_nodes).schema(schema, "(root)", (), 0)
    if out is False:
        raise SchemaRejected("schema resolves to false (no value is valid)")
    return out if isinstance(out, dict) else {}


def json_type_of(value: Any) -> str:
    """The JSON Schema type name of a JSON value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() and math.isfinite(value) else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _copy_json(value: Any) -> Any:
    """A deep copy of a parsed JSON value (much cheaper than copy.deepcopy)."""
    if isinstance(value, dict):
        return {k: _copy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy_json(v) for v in value]
    return value


def _kind(value: Any) -> str:
    return {
        "null": "null",
        "boolean": "boolean",
        "integer": "number",
        "number": "number",
        "string": "string",
        "array": "list",
        "object": "JSON object",
    }[json_type_of(value)]


def _types_of(values: list[Any]) -> list[str]:
    """Type names covering `values`, integers folded into number when both occur."""
    found: list[str] = []
    for v in values:
        t = json_type_of(v)
        if t not in found:
            found.append(t)
    if "integer" in found and "number" in found:
        found.remove("integer")
    return found


def _is_misplaced_schema(props: dict[str, Any]) -> bool:
    return (
        props.get("type") == "object"
        and isinstance(props.get("properties"), dict)
        and all(not isinstance(v, dict) for k, v in props.items() if k != "properties")
    )


def _compatible(declared: list[str], value_types: list[str]) -> bool:
    return all(t in declared or (t == "integer" and "number" in declared) for t in value_types)


class _Normalizer:
    def __init__(self, root: dict[str, Any], warn: Warn, max_depth: int, max_nodes: int) -> None:
        self.root = root
        self.warn = warn
        self.max_depth = max_depth
        self.max_nodes = max_nodes
        self.nodes = 0

    # -- references ---------------------------------------------------------------------------

    def _resolve(self, ref: str, path: str) -> Any:
        if not ref.startswith("#"):
            raise SchemaRejected(f"{path}: external $ref {ref!r} is not supported (only '#/...')")
        target: Any = self.root
        pointer = unquote(ref[1:])
        if pointer in ("", "/"):
            return target
        for raw in pointer.lstrip("/").split("/"):
            part = raw.replace("~1", "/").replace("~0", "~")
            if isinstance(target, dict) and part in target:
                target = target[part]
            elif isinstance(target, list) and part.isdigit() and int(part) < len(target):
                target = target[int(part)]
            else:
                raise SchemaRejected(f"{path}: unresolvable $ref {ref!r}")
        return target

    def _inline_ref(
        self, node: dict[str, Any], path: str, stack: tuple[str, ...], depth: int
    ) -> Any:
        ref = node["$ref"]
        if not isinstance(ref, str):
            raise SchemaRejected(f"{path}: $ref is a {_kind(ref)}, not a string")
        siblings = {k: v for k, v in node.items() if k != "$ref"}
        if ref in stack:
            # A recursive type (a tree, a linked list). Inlining it would never end, so cut the
            # recursion here and keep only the outer shape, which is what a tool call can use.
            target = self._resolve(ref, path)
            cut: dict[str, Any] = {}
            if isinstance(target, dict) and isinstance(target.get("type"), str):
                cut["type"] = target["type"]
            cut["description"] = f"Recursive reference to {ref} (not expanded)."
            self.warn(f"{path}: recursive $ref {ref!r} cut after one level")
            return self.schema({**cut, **siblings}, path, stack, depth)
        target = self._resolve(ref, path)
        if isinstance(target, bool):
            rest = {k: v for k, v in siblings.items() if k not in _DEFINITION_KEYS}
            if target is False or not rest:
                return target
            return self.schema(rest, path, stack, depth)
        if not isinstance(target, dict):
            raise SchemaRejected(f"{path}: $ref {ref!r} points at a {_kind(target)}, not a schema")
        merged = {k: v for k, v in target.items() if k not in _DEFINITION_KEYS}
        merged.update(siblings)
        # Each hop counts as a level so a long alias chain cannot exhaust Python's stack.
        return self.schema(merged, path, (*stack, ref), depth + 1)

    # -- one schema node ----------------------------------------------------------------------

    def schema(self, node: Any, path: str, stack: tuple[str, ...], depth: int) -> Any:
        """Normalize one schema; booleans (JSON Schema's any/none) pass through."""
        self.nodes += 1
        if self.nodes > self.max_nodes:
            raise SchemaRejected(
                f"schema too large after inlining $refs (over {self.max_nodes} nodes)"
            )
        if depth > self.max_depth:
            where = path if len(path) <= 80 else path[:60] + "…" + path[-20:]
            raise SchemaRejected(f"{where}: schema nested deeper than {self.max_depth} levels")
        if isinstance(node, bool):
            return node
        if not isinstance(node, dict):
            raise SchemaRejected(f"{path}: schema is a {_kind(node)}, not a JSON object")
        if "$ref" in node:
            return self._inline_ref(node, path, stack, depth)

        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in _DEFINITION_KEYS:
                continue
            if key == "properties":
                out[key], lifted = self._properties(value, path, stack, depth)
                if lifted:
                    listed = node.get("required")
                    listed = listed if isinstance(listed, list) else []
                    out["required"] = [*listed, *(n for n in lifted if n not in listed)]
            elif key == "items":
                if isinstance(value, list):
                    self.warn(f"{path}: tuple-form 'items' list rewritten as 'prefixItems'")
                    out["prefixItems"] = self._schema_list(value, f"{path}.items", stack, depth)
                else:
                    out[key] = self._sub(value, f"{path}.items", stack, depth)
            elif key in _SUBSCHEMA:
                if isinstance(value, dict | bool):
                    out[key] = self.schema(value, f"{path}.{key}", stack, depth + 1)
                else:
                    self.warn(f"{path}: '{key}' is a {_kind(value)}, not a schema; dropped")
            elif key in _SUBSCHEMA_LISTS:
                if isinstance(value, list) and value:
                    out[key] = self._schema_list(value, f"{path}.{key}", stack, depth)
                else:
                    self.warn(f"{path}: '{key}' is not a non-empty list of schemas; dropped")
            elif key in _SUBSCHEMA_MAPS:
                if isinstance(value, dict):
                    out[key] = {
                        k: self.schema(v, f"{path}.{key}.{k}", stack, depth + 1)
                        for k, v in value.items()
                    }
                else:
                    self.warn(f"{path}: '{key}' is not a JSON object; dropped")
            elif key == "required" and "required" in out:
                continue  # already merged with draft-3 per-property flags above
            else:
                # Values, not schemas (default, enum, examples, description...): copied untouched.
                out[key] = _copy_json(value)

        self._normalize_type(out, path)
        self._normalize_enum(out, path)
        self._infer_type(out, path)
        self._fix_integer(out, path)
        if "required" in out:
            self._normalize_required(out, path, root=depth == 0)
        return out

    def _sub(self, value: Any, path: str, stack: tuple[str, ...], depth: int) -> Any:
        if isinstance(value, dict | bool):
            return self.schema(value, path, stack, depth + 1)
        raise SchemaRejected(f"{path}: schema is a {_kind(value)}, not a JSON object")

    def _schema_list(
        self, values: list[Any], path: str, stack: tuple[str, ...], depth: int
    ) -> list[Any]:
        return [self._sub(v, f"{path}[{i}]", stack, depth) for i, v in enumerate(values)]

    def _properties(
        self, props: Any, path: str, stack: tuple[str, ...], depth: int
    ) -> tuple[dict[str, Any], list[str]]:
        """The normalized properties, and the names flagged `required: true` draft-3 style."""
        if not isinstance(props, dict):
            raise SchemaRejected(f"{path}: 'properties' is a {_kind(props)}, not a JSON object")
        if _is_misplaced_schema(props):
            # `properties: {type: object, properties: {...}, required: [...]}`: a whole schema
            # pasted one level too deep. Its own properties are what the author meant.
            self.warn(f"{path}: 'properties' holds a whole object schema; its properties used")
            inner = props["properties"]
            lifted_names = props.get("required")
            props, extra = self._properties(inner, path, stack, depth)
            names = (
                [n for n in lifted_names if isinstance(n, str)]
                if isinstance(lifted_names, list)
                else []
            )
            return props, [*names, *(n for n in extra if n not in names)]
        out: dict[str, Any] = {}
        lifted: list[str] = []
        for name, sub in props.items():
            where = f"{path}.properties.{name}"
            if isinstance(sub, dict) and isinstance(sub.get("required"), bool):
                if sub["required"]:
                    lifted.append(name)
                    self.warn(f"{where}: draft-3 'required: true' moved to the parent's list")
                sub = {k: v for k, v in sub.items() if k != "required"}
            if sub is True:
                out[name] = {}
            elif sub is False:
                self.warn(f"{where}: property schema is false (never valid); dropped")
            elif isinstance(sub, dict):
                out[name] = self.schema(sub, where, stack, depth + 1)
            else:
                self.warn(
                    f"{where}: property schema is a {_kind(sub)} ({sub!r}), not a schema; dropped"
                )
        return out, lifted

    # -- keyword repairs ----------------------------------------------------------------------

    def _normalize_type(self, out: dict[str, Any], path: str) -> None:
        if out.pop("nullable", None) is True:
            # OpenAPI 3.0 spelling of "or null".
            declared = out.get("type")
            if isinstance(declared, str):
                out["type"] = [declared, "null"]
            elif isinstance(declared, list) and "null" not in declared:
                out["type"] = [*declared, "null"]
            if isinstance(out.get("enum"), list) and None not in out["enum"]:
                out["enum"] = [*out["enum"], None]
        if "type" not in out:
            return
        raw = out["type"]
        names = raw if isinstance(raw, list) else [raw]
        result: list[str] = []
        for name in names:
            if not isinstance(name, str):
                self.warn(f"{path}: type {name!r} is not a type name; dropped")
                continue
            key = name.strip().lower()
            if "[" in key:  # Python-style generics: list[str], Dict[str, Any], Optional[int]
                key = key.split("[", 1)[0]
                if key == "optional":
                    self.warn(f"{path}: type {name!r} read as any value")
                    out.pop("type")
                    return
            if key in _ANY_TYPES:
                out.pop("type")
                return
            alias = _TYPE_ALIASES.get(key)
            if alias is None:
                self.warn(f"{path}: unknown type {name!r}; dropped (any value)")
                continue
            json_type, fmt = alias
            if name != json_type:
                self.warn(f"{path}: type {name!r} rewritten as {json_type!r}")
            if fmt and "format" not in out:
                out["format"] = fmt
            if json_type not in result:
                result.append(json_type)
        if not result:
            out.pop("type")
        elif len(result) == 1:
            out["type"] = result[0]
        else:
            out["type"] = result

    def _normalize_enum(self, out: dict[str, Any], path: str) -> None:
        if "enum" not in out:
            return
        values = out["enum"]
        if not isinstance(values, list):
            self.warn(f"{path}: 'enum' is a {_kind(values)}, not a list; dropped")
            out.pop("enum")
            return
        # Keyed by (type, value), so 1, 1.0 and True stay distinct: linear, where comparing each
        # value with every kept one took minutes for a 100,000-value enum.
        seen: set[tuple[type, Any]] = set()
        unique: list[Any] = []
        for v in values:
            try:
                key: tuple[type, Any] = (type(v), v)
                hash(key)
            except TypeError:  # lists and objects: compared by their canonical JSON
                key = (type(v), json.dumps(v, sort_keys=True, default=str))
            if key not in seen:
                seen.add(key)
                unique.append(v)
        if len(unique) != len(values):
            self.warn(f"{path}: duplicate enum values removed")
        if not unique:
            self.warn(f"{path}: empty 'enum' (no value could be valid); dropped")
            out.pop("enum")
            return
        out["enum"] = unique
        inferred = _types_of(unique)
        declared = out.get("type")
        if declared is None:
            out["type"] = inferred[0] if len(inferred) == 1 else inferred
            return
        declared_list = declared if isinstance(declared, list) else [declared]
        if not _compatible(declared_list, inferred):
            new = inferred[0] if len(inferred) == 1 else inferred
            self.warn(f"{path}: type {declared!r} contradicts enum values; type set to {new!r}")
            out["type"] = new

    def _infer_type(self, out: dict[str, Any], path: str) -> None:
        if "type" in out:
            return
        if "const" in out:
            out["type"] = json_type_of(out["const"])
        elif "properties" in out or "additionalProperties" in out:
            out["type"] = "object"
        elif "items" in out or "prefixItems" in out:
            out["type"] = "array"

    def _fix_integer(self, out: dict[str, Any], path: str) -> None:
        """`integer` with fractional examples means `number` (a common hand-written slip)."""
        declared = out.get("type")
        if declared != "integer" and not (isinstance(declared, list) and "integer" in declared):
            return
        samples = [out.get("default"), out.get("minimum"), out.get("maximum"), out.get("const")]
        samples += out.get("enum") or []
        if any(isinstance(v, float) and not v.is_integer() for v in samples):
            self.warn(f"{path}: type 'integer' has fractional values; rewritten as 'number'")
            out["type"] = (
                "number"
                if declared == "integer"
                else ["number" if t == "integer" else t for t in declared]
            )

    def _normalize_required(self, out: dict[str, Any], path: str, *, root: bool) -> None:
        required_in: Any = out.get("required", [])
        required: list[str] = []
        if isinstance(required_in, bool):
            self.warn(f"{path}: boolean 'required' (draft-3 style) outside a property; dropped")
        elif not isinstance(required_in, list):
            self.warn(f"{path}: 'required' is a {_kind(required_in)}, not a list; dropped")
        else:
            for name in required_in:
                if not isinstance(name, str):
                    self.warn(f"{path}: 'required' entry {name!r} is not a name; dropped")
                elif name not in required:
                    required.append(name)
        props = out.get("properties")
        # Without its own properties a schema may list names defined by its parent (the
        # `oneOf: [{required: [a]}, {required: [b]}]` idiom), so only check where they live.
        if isinstance(props, dict) or root:
            props = props if isinstance(props, dict) else {}
            absent = [name for name in required if name not in props]
            if absent:
                self.warn(f"{path}: 'required' names absent properties {absent}; dropped")
                required = [name for name in required if name not in absent]
        if required:
            out["required"] = required
        else:
            out.pop("required", None)
