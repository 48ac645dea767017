"""Load spec files and dicts of any supported format into normalized MCPSpecs."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from weft_core.exceptions import SpecError
from weft_core.loaders._formats import Extracted, SpecFormat, detect_format, extract
from weft_core.loaders._result import LoadedSpec, SpecBatch
from weft_core.loaders._tools import normalize_tools
from weft_core.models import MCPSpec

PathLike = str | os.PathLike[str]


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _decode(raw: bytes, *, source: str) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SpecError(f"not UTF-8 text (byte {exc.start})", source=source) from None


def parse_json(text: str | bytes, *, source: str) -> Any:
    """Strict JSON (no NaN/Infinity), with errors that name the file, line and column."""
    if isinstance(text, bytes):
        text = _decode(text, source=source)
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        raise SpecError(
            f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}", source=source
        ) from None
    except ValueError as exc:
        raise SpecError(f"invalid JSON: {exc}", source=source) from None
    except RecursionError:
        raise SpecError("invalid JSON: nested too deeply", source=source) from None


def _fallback_name(source: str) -> str:
    stem = Path(source).name
    for suffix in (".json", ".jsonl"):
        stem = stem.removesuffix(suffix)
    return stem.strip() or "mcp"


def _extract_document(data: Any, source: str) -> tuple[SpecFormat, Extracted]:
    fmt = SpecFormat(detect_format(data))
    if fmt is SpecFormat.UNKNOWN:
        if data in ([], {}):
            raise SpecError("no tools: the document is empty", source=source)
        kind = "list" if isinstance(data, list) else type(data).__name__
        if isinstance(data, dict):
            keys = ", ".join(sorted(map(str, data))[:8])
            kind = f"object with keys {keys}"
        raise SpecError(
            f"unknown format ({kind}): expected an MCP tools/list result, OpenAI/BFCL function "
            "docs, a Weft MCPSpec or Toucan server metadata",
            source=source,
        )
    return fmt, extract(data, fmt, source=source)


def _build(
    fmt: SpecFormat, found: Extracted, *, source: str, name: str | None, domain: str | None
) -> LoadedSpec:
    if not found.tools:
        raise SpecError("no tools: the tool list is empty", source=source)
    tools, rejected, tool_warnings = normalize_tools(found.tools, options=found.options)
    if not tools:
        if len(rejected) == 1:
            raise SpecError(rejected[0].reason, source=source, tool=rejected[0].name)
        reasons = "; ".join(f"{r.name!r}: {r.reason}" for r in rejected[:3])
        more = f"; and {len(rejected) - 3} more" if len(rejected) > 3 else ""
        raise SpecError(
            f"every tool was rejected ({len(rejected)}): {reasons}{more}", source=source
        )
    try:
        spec = MCPSpec(
            name=name or found.name or _fallback_name(source),
            domain=domain or found.domain or "general",
            description=found.description or "",
            tools=tools,
            requirements=found.requirements,
            source=found.origin or source,
            version=found.version,
        ).sealed()
    except ValidationError as exc:
        first = exc.errors()[0]
        raise SpecError(f"not a valid MCPSpec: {first['msg']}", source=source) from None
    return LoadedSpec(
        spec=spec,
        rejected_tools=rejected,
        warnings=[*found.warnings, *tool_warnings],
        format=fmt.value,
        source=source,
    )


def load_spec_dict(
    data: Any, *, source: str = "<dict>", name: str | None = None, domain: str | None = None
) -> LoadedSpec:
    """Normalize parsed JSON of any supported format; `name`/`domain` override the source's.

    Raises SpecError when the document is unusable: unknown format, no tools, or every tool
    rejected. Per-tool problems go to `rejected_tools`, repairs to `warnings`.
    """
    fmt, found = _extract_document(data, source)
    return _build(fmt, found, source=source, name=name, domain=domain)


def _parse_json_lines(text: str, *, source: str) -> list[tuple[int, Any]]:
    docs: list[tuple[int, Any]] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            docs.append((lineno, json.loads(line, parse_constant=_refuse_constant)))
        except (ValueError, RecursionError) as exc:
            msg = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc) or "too deep"
            raise SpecError(
                f"invalid JSON on line {lineno} (JSON Lines): {msg}", source=source
            ) from None
    if not docs:
        raise SpecError("no tools: the document is empty", source=source)
    return docs


def _load_json_lines(
    docs: list[tuple[int, Any]], *, source: str, name: str | None, domain: str | None
) -> LoadedSpec:
    """One spec from a JSON Lines file (e.g. a BFCL category): the lines' tools together."""
    formats: set[SpecFormat] = set()
    merged = Extracted(tools=[])
    for lineno, doc in docs:
        try:
            fmt, found = _extract_document(doc, source)
        except SpecError as exc:
            raise SpecError(f"line {lineno}: {exc.reason}", source=source, tool=exc.tool) from None
        formats.add(fmt)
        merged.tools.extend(found.tools)
        merged.warnings.extend(found.warnings)
        merged.name = merged.name or found.name
        merged.domain = merged.domain or found.domain
        merged.options = found.options
    if len(formats) > 1:
        kinds = ", ".join(sorted(f.value for f in formats))
        raise SpecError(f"JSON Lines file mixes formats ({kinds})", source=source)
    merged.warnings.insert(0, f"JSON Lines: tools of {len(docs)} documents merged")
    return _build(formats.pop(), merged, source=source, name=name, domain=domain)


def load_spec_file(
    path: PathLike, *, name: str | None = None, domain: str | None = None
) -> LoadedSpec:
    """Load one spec file (format auto-detected). Raises SpecError naming the file when unusable.

    A JSON Lines file (`.jsonl`, or a `.json` holding one document per line as BFCL's do) gives
    one spec with the tools of all its lines; identical repeats across lines are dropped.
    """
    p = Path(path)
    source = str(p)
    try:
        raw = p.read_bytes()
    except IsADirectoryError:
        raise SpecError("is a directory, not a spec file", source=source) from None
    except OSError as exc:
        raise SpecError(f"cannot read: {exc.strerror or exc}", source=source) from None
    if p.suffix == ".jsonl":
        text = _decode(raw, source=source)
        docs = _parse_json_lines(text, source=source)
        return _load_json_lines(docs, source=source, name=name, domain=domain)
    try:
        data = parse_json(raw, source=source)
    except SpecError as exc:
        # BFCL ships JSON Lines under a .json name: one document per line.
        if "Extra data" not in exc.reason:
            raise
        try:
            docs = _parse_json_lines(_decode(raw, source=source), source=source)
        except SpecError:
            raise exc from None  # not JSON Lines either: the first error says where it broke
        return _load_json_lines(docs, source=source, name=name, domain=domain)
    return load_spec_dict(data, source=source, name=name, domain=domain)


def _expand(paths: Iterable[PathLike]) -> list[Path]:
    out: list[Path] = []
    for item in paths:
        p = Path(item)
        if p.is_dir():
            out.extend(
                sorted(c for c in p.iterdir() if c.suffix in (".json", ".jsonl") and c.is_file())
            )
        else:
            out.append(p)
    return out


def load_spec_files(paths: PathLike | Iterable[PathLike]) -> SpecBatch:
    """Load many files (folders expand to *.json and *.jsonl, sorted); one bad file never stops it.

    Each failure is a SpecError in `failed`, naming the file and the reason.
    """
    items = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
    batch = SpecBatch()
    for path in _expand(items):
        try:
            batch.loaded.append(load_spec_file(path))
        except SpecError as exc:
            batch.failed.append(exc)
        except Exception as exc:  # a loader bug must not sink the other files of the batch
            batch.failed.append(
                SpecError(f"unexpected {type(exc).__name__}: {exc}", source=str(path))
            )
    return batch
