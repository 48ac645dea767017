"""Load spec files and dicts of any supported format into normalized MCPSpecs."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from weft_core.exceptions import SpecError
from weft_core.loaders._formats import SpecFormat, detect_format, extract
from weft_core.loaders._result import LoadedSpec, SpecBatch
from weft_core.loaders._tools import normalize_tools
from weft_core.models import MCPSpec

PathLike = str | os.PathLike[str]


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def parse_json(text: str | bytes, *, source: str) -> Any:
    """Strict JSON (no NaN/Infinity), with errors that name the file, line and column."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise SpecError(f"not UTF-8 text (byte {exc.start})", source=source) from None
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


def load_spec_dict(
    data: Any, *, source: str = "<dict>", name: str | None = None, domain: str | None = None
) -> LoadedSpec:
    """Normalize parsed JSON of any supported format; `name`/`domain` override the source's.

    Raises SpecError when the document is unusable: unknown format, no tools, or every tool
    rejected. Per-tool problems go to `rejected_tools`, repairs to `warnings`.
    """
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
    found = extract(data, fmt, source=source)
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


def load_spec_file(
    path: PathLike, *, name: str | None = None, domain: str | None = None
) -> LoadedSpec:
    """Load one spec file (format auto-detected). Raises SpecError naming the file when unusable."""
    p = Path(path)
    source = str(p)
    try:
        raw = p.read_bytes()
    except IsADirectoryError:
        raise SpecError("is a directory, not a spec file", source=source) from None
    except OSError as exc:
        raise SpecError(f"cannot read: {exc.strerror or exc}", source=source) from None
    data = parse_json(raw, source=source)
    return load_spec_dict(data, source=source, name=name, domain=domain)


def _expand(paths: Iterable[PathLike]) -> list[Path]:
    out: list[Path] = []
    for item in paths:
        p = Path(item)
        if p.is_dir():
            out.extend(sorted(c for c in p.iterdir() if c.suffix == ".json" and c.is_file()))
        else:
            out.append(p)
    return out


def load_spec_files(paths: PathLike | Iterable[PathLike]) -> SpecBatch:
    """Load many files (folders expand to their *.json files, sorted); one bad file never stops it.

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
