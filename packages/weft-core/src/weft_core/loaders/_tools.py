"""Turn raw tool entries of any supported format into ToolSpecs, or say why not.

Tool names are rewritten to `[A-Za-z_][A-Za-z0-9_]{0,63}` (valid as an MCP tool name, an OpenAI
function name and a Python identifier, which generated backends need), keeping the source name in
`original_name`. Duplicates are settled deterministically: an identical repeat is dropped, a
different tool with a taken name gets `_2`, `_3`...; names that were valid in the source win.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from weft_core._hashing import canonical_json
from weft_core.loaders._result import RejectedTool
from weft_core.loaders._schema import SchemaRejected, Warn, normalize_schema
from weft_core.models import ToolSpec

NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
MAX_NAME = 64
MAX_NESTING = 200  # JSON levels in one tool entry; real specs stay far below
_INPUT_KEYS = ("inputSchema", "input_schema", "parameters")
_OUTPUT_KEYS = ("outputSchema", "output_schema", "response")  # BFCL docs say "response"


class ToolRejected(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class ToolOptions:
    """Source-specific repairs, set by the format that produced the raw tools."""

    # Toucan's crawled Smithery pages list parameters as {name, required, type} rows and repeat
    # the tool's own name as an optional first row; drop that row.
    drop_self_named_param: bool = False
    # Descriptions that are known page furniture rather than text about the tool.
    junk_descriptions: tuple[re.Pattern[str], ...] = ()
    # (name, description) pairs that are page elements scraped as if they were tools.
    not_tools: frozenset[tuple[str, str]] = frozenset()


@dataclass
class _Candidate:
    index: int
    source_name: str
    name: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    annotations: dict[str, Any] | None
    original_name: str | None = None  # carried over when re-loading a Weft MCPSpec
    warnings: list[str] = field(default_factory=list)


def _nesting_exceeds(value: Any, limit: int) -> bool:
    """Whether a JSON value nests deeper than `limit`, checked without recursion (hostile input
    could otherwise exhaust the stack in every later recursive step)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values() if isinstance(v, dict | list))
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node if isinstance(v, dict | list))
    return False


def rewrite_name(name: str) -> str:
    """A valid tool name for `name`: invalid runs become '_', a leading digit gets a prefix."""
    out = re.sub(r"[^A-Za-z0-9_]+", "_", name).strip("_")
    if not out:
        return "tool"
    if out[0].isdigit():
        out = f"tool_{out}"
    return out[:MAX_NAME].rstrip("_") or "tool"


def synthesize_description(name: str) -> str:
    """'getUserProfile' / 'get-user_profile' -> 'Get user profile.'"""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name)
    words = [w.lower() for w in re.split(r"[^A-Za-z0-9]+", spaced) if w]
    if not words:
        return "A tool."
    text = " ".join(words)
    return text[0].upper() + text[1:] + "."


def normalize_tools(
    raw_tools: list[Any], *, options: ToolOptions | None = None
) -> tuple[list[ToolSpec], list[RejectedTool], list[str]]:
    """Normalize every entry; returns (tools, rejected, warnings). Never raises for one bad tool."""
    opts = options or ToolOptions()
    candidates: list[_Candidate] = []
    rejected: list[RejectedTool] = []
    for index, entry in enumerate(raw_tools):
        label = _label(entry, index)
        try:
            candidates.append(_candidate(entry, index, opts))
        except ToolRejected as exc:
            rejected.append(RejectedTool(name=label, reason=exc.reason, index=index))
    kept, warnings = _dedupe(candidates)
    tools: list[ToolSpec] = []
    for cand in kept:
        try:
            tools.append(
                ToolSpec(
                    name=cand.name,
                    description=cand.description,
                    input_schema=cand.input_schema,
                    output_schema=cand.output_schema,
                    annotations=cand.annotations,
                    original_name=cand.original_name
                    or (cand.source_name if cand.source_name != cand.name else None),
                )
            )
        except ValidationError as exc:
            first = exc.errors()[0]
            reason = str(first.get("ctx", {}).get("error") or first["msg"])
            rejected.append(RejectedTool(name=cand.source_name, reason=reason, index=cand.index))
            continue
        warnings.extend(cand.warnings)
    rejected.sort(key=lambda r: r.index if r.index is not None else -1)
    return tools, rejected, warnings


def _label(entry: Any, index: int) -> str:
    if isinstance(entry, dict):
        inner: dict[str, Any] = (
            entry["function"] if isinstance(entry.get("function"), dict) else entry
        )
        name = inner.get("name")
        if isinstance(name, str) and name.strip():
            return name.strip()
    return f"#{index}"


def _candidate(entry: Any, index: int, opts: ToolOptions) -> _Candidate:
    if not isinstance(entry, dict):
        raise ToolRejected(f"tool entry #{index} is a {type(entry).__name__}, not a JSON object")
    if _nesting_exceeds(entry, MAX_NESTING):
        raise ToolRejected(f"tool entry #{index} is nested deeper than {MAX_NESTING} levels")
    if entry.get("type") == "function" and isinstance(entry.get("function"), dict):
        entry = entry["function"]
    name = entry.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ToolRejected(f"tool entry #{index} has no name")
    source_name = name.strip()
    warnings: list[str] = []

    def warn(message: str) -> None:
        warnings.append(f"tool {source_name!r}: {message}")

    description = entry.get("description")
    if isinstance(description, str) and (source_name, description) in opts.not_tools:
        raise ToolRejected("a page element scraped as if it were a tool (not a tool)")

    input_schema = _input_schema(entry, opts, source_name, warn)
    output_schema = _output_schema(entry, warn)
    annotations = _annotations(entry, warn)

    if not isinstance(description, str):
        if description is not None:
            warn(f"description is a {type(description).__name__}, not text; replaced")
        description = ""
    description = description.strip()
    if description and any(p.search(description) for p in opts.junk_descriptions):
        warn("description is scraped page text; replaced")
        description = ""
    if not description:
        description = synthesize_description(source_name)
        warn(f"empty description; synthesized {description!r} from the name")

    new_name = source_name if NAME_RE.match(source_name) else rewrite_name(source_name)
    original = entry.get("original_name")
    return _Candidate(
        index=index,
        source_name=source_name,
        name=new_name,
        description=description,
        input_schema=input_schema,
        output_schema=output_schema,
        annotations=annotations,
        original_name=original if isinstance(original, str) and original else None,
        warnings=warnings,
    )


def _input_schema(
    entry: dict[str, Any], opts: ToolOptions, tool: str, warn: Warn
) -> dict[str, Any]:
    key = next((k for k in _INPUT_KEYS if k in entry), None)
    raw = entry.get(key) if key else None
    if raw is None:
        return {"type": "object", "properties": {}}
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            raise ToolRejected(f"'{key}' is a string that is not JSON") from None
        warn(f"'{key}' was a JSON string; decoded")
    if isinstance(raw, list):
        raw = _schema_from_rows(raw, opts, tool, warn)
    if not isinstance(raw, dict):
        raise ToolRejected(f"'{key}' is a {type(raw).__name__}, not a JSON Schema object")
    try:
        schema = normalize_schema(raw, warn=lambda m: warn(f"input schema {m}"))
    except SchemaRejected as exc:
        raise ToolRejected(f"input schema: {exc.reason}") from None
    return _as_object_schema(schema, warn)


def _as_object_schema(schema: dict[str, Any], warn: Warn) -> dict[str, Any]:
    declared = schema.get("type")
    if declared is None:
        schema = {"type": "object", **schema}
    elif isinstance(declared, list):
        if "object" not in declared:
            raise ToolRejected(
                f"input schema has type {declared!r}; tool arguments must be an object"
            )
        warn(f"input schema type {declared!r} narrowed to 'object' (arguments are an object)")
        schema["type"] = "object"
    elif declared != "object":
        raise ToolRejected(f"input schema has type {declared!r}; tool arguments must be an object")
    schema.setdefault("properties", {})
    return schema


def _schema_from_rows(rows: list[Any], opts: ToolOptions, tool: str, warn: Warn) -> dict[str, Any]:
    """A parameter table ([{name, type, required, description}...]) as an object schema."""
    props: dict[str, Any] = {}
    required: list[str] = []
    for i, row in enumerate(rows):
        if not isinstance(row, dict) or not isinstance(row.get("name"), str) or not row["name"]:
            warn(f"parameter row #{i} has no name; dropped")
            continue
        name = row["name"]
        if opts.drop_self_named_param and i == 0 and name == tool and not row.get("required"):
            warn("parameter row repeating the tool's own name dropped (scraping artifact)")
            continue
        if name in props:
            warn(f"parameter {name!r} listed twice; first kept")
            continue
        sub = {k: v for k, v in row.items() if k not in ("name", "required")}
        props[name] = sub
        if row.get("required") is True:
            required.append(name)
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        schema["required"] = required
    return schema


def _output_schema(entry: dict[str, Any], warn: Warn) -> dict[str, Any] | None:
    key = next((k for k in _OUTPUT_KEYS if k in entry), None)
    raw = entry.get(key) if key else None
    if raw is None:
        return None
    if not isinstance(raw, dict):
        warn(f"'{key}' is a {type(raw).__name__}, not a schema; dropped")
        return None
    try:
        return normalize_schema(raw, warn=lambda m: warn(f"output schema {m}"))
    except SchemaRejected as exc:
        warn(f"output schema dropped: {exc.reason}")
        return None


def _annotations(entry: dict[str, Any], warn: Warn) -> dict[str, Any] | None:
    raw = entry.get("annotations")
    out: dict[str, Any] = {}
    if isinstance(raw, dict):
        out.update(raw)
    elif raw is not None:
        warn(f"'annotations' is a {type(raw).__name__}, not an object; dropped")
    title = entry.get("title")
    if isinstance(title, str) and title.strip() and "title" not in out:
        out["title"] = title.strip()
    return out or None


def _content_key(cand: _Candidate) -> str:
    return canonical_json(
        [
            cand.source_name,
            cand.description,
            cand.input_schema,
            cand.output_schema,
            cand.annotations,
        ]
    )


def _dedupe(candidates: list[_Candidate]) -> tuple[list[_Candidate], list[str]]:
    warnings: list[str] = []
    seen_content: dict[str, int] = {}
    unique: list[_Candidate] = []
    name_counts = Counter(c.source_name for c in candidates)
    for cand in candidates:
        if name_counts[cand.source_name] == 1:
            unique.append(cand)  # a unique source name cannot be an identical repeat
            continue
        key = _content_key(cand)
        if key in seen_content:
            warnings.append(
                f"tool {cand.source_name!r}: identical repeat of tool #{seen_content[key]}; dropped"
            )
            continue
        seen_content[key] = cand.index
        unique.append(cand)

    # Names valid in the source are reserved first, so a rewritten or repeated name never takes
    # a name some later tool already has in the source.
    reserved: set[str] = set()
    owners: set[int] = set()
    for cand in unique:
        if cand.name == cand.source_name and cand.name not in reserved:
            reserved.add(cand.name)
            owners.add(cand.index)
    assigned: set[str] = set()
    for cand in unique:
        if cand.index in owners:
            assigned.add(cand.name)
            continue
        base = cand.name
        name = base
        n = 2
        while name in assigned or name in reserved:
            suffix = f"_{n}"
            name = base[: MAX_NAME - len(suffix)] + suffix
            n += 1
        if name != base:
            cand.warnings.append(
                f"tool {cand.source_name!r}: name {base!r} already taken; renamed {name!r}"
            )
        elif name != cand.source_name:
            cand.warnings.append(f"tool {cand.source_name!r}: renamed {name!r} (invalid name)")
        cand.name = name
        assigned.add(name)
    return unique, warnings
