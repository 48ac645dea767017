"""The source formats a spec can come in: how to recognise each and where its tools live."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from weft_core.exceptions import SpecError
from weft_core.loaders._tools import ToolOptions
from weft_core.models import MCPSpec


class SpecFormat(StrEnum):
    """What `detect_format` can answer."""

    WEFT = "weft"  # an MCPSpec JSON written by weft-core
    MCP_TOOLS_LIST = (
        "mcp_tools_list"  # an MCP tools/list result (or JSON-RPC response, or tool list)
    )
    OPENAI_FUNCTIONS = (
        "openai_functions"  # OpenAI / BFCL function docs, bare or wrapped, one or many
    )
    TOUCAN = "toucan"  # Toucan's labeled MCP server metadata
    UNKNOWN = "unknown"


# Toucan's crawl of Smithery pages: the page's settings box and header text, not tools.
_TOUCAN_OPTIONS = ToolOptions(
    drop_self_named_param=True,
    junk_descriptions=(re.compile(r"^Deploy Server\b.*\bTry in Playground\b", re.S),),
    not_tools=frozenset({("Optional Settings", "Access and manage servers by signing in.")}),
)


@dataclass
class Extracted:
    """The raw tool entries of a source and what it says about its server."""

    tools: list[Any]
    name: str | None = None
    domain: str | None = None
    description: str | None = None
    requirements: list[str] = field(default_factory=list)
    version: int = 1
    origin: str | None = None  # a Weft spec's own `source`, kept so re-loading keeps its hash
    options: ToolOptions = field(default_factory=ToolOptions)
    warnings: list[str] = field(default_factory=list)


def _has_key(items: list[Any], *keys: str) -> bool:
    return any(isinstance(i, dict) and any(k in i for k in keys) for i in items)


def _is_openai_item(item: Any) -> bool:
    if not isinstance(item, dict):
        return False
    if item.get("type") == "function" and isinstance(item.get("function"), dict):
        return True
    return "name" in item and "parameters" in item


def _list_format(items: list[Any]) -> SpecFormat:
    if _has_key(items, "inputSchema", "input_schema"):
        return SpecFormat.MCP_TOOLS_LIST
    if any(_is_openai_item(i) for i in items):
        return SpecFormat.OPENAI_FUNCTIONS
    if items and all(isinstance(i, dict) and "name" in i for i in items):
        # Tools without any schema key: tools/list entries of argument-less tools.
        return SpecFormat.MCP_TOOLS_LIST
    return SpecFormat.UNKNOWN


def detect_format(data: Any) -> str:
    """The SpecFormat value of a parsed JSON document ('unknown' when none fits)."""
    if isinstance(data, list):
        return _list_format(data).value
    if not isinstance(data, dict):
        return SpecFormat.UNKNOWN.value
    metadata = data.get("metadata")
    if isinstance(metadata, dict) and (
        "server_info_crawled" in metadata or "remote_server_response" in metadata
    ):
        return SpecFormat.TOUCAN.value
    if isinstance(data.get("result"), dict) and "tools" in data["result"]:
        return SpecFormat.MCP_TOOLS_LIST.value
    tools = data.get("tools")
    if isinstance(tools, list):
        if "schema_version" in data or "content_hash" in data:
            return SpecFormat.WEFT.value
        if any(_is_openai_item(i) for i in tools):
            return SpecFormat.OPENAI_FUNCTIONS.value
        if _has_key(tools, "inputSchema"):
            return SpecFormat.MCP_TOOLS_LIST.value
        if _has_key(tools, "input_schema") and "name" in data:
            return SpecFormat.WEFT.value
        return SpecFormat.MCP_TOOLS_LIST.value
    if "tools" in data:
        # A malformed tool list still says what the document meant to be; extraction then
        # reports the real problem ("'tools' is a dict, not a list").
        weft = "schema_version" in data or "content_hash" in data
        return (SpecFormat.WEFT if weft else SpecFormat.MCP_TOOLS_LIST).value
    if isinstance(data.get("functions"), list) or isinstance(data.get("function"), list | dict):
        return SpecFormat.OPENAI_FUNCTIONS.value
    if _is_openai_item(data):
        return SpecFormat.OPENAI_FUNCTIONS.value
    if "name" in data and ("inputSchema" in data or "input_schema" in data):
        return SpecFormat.MCP_TOOLS_LIST.value
    return SpecFormat.UNKNOWN.value


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def extract(data: Any, fmt: SpecFormat, *, source: str) -> Extracted:
    """The raw tools and server facts of `data`, which `detect_format` said is `fmt`."""
    if fmt is SpecFormat.TOUCAN:
        return _extract_toucan(data, source)
    if fmt is SpecFormat.WEFT:
        return _extract_weft(data, source)
    if fmt is SpecFormat.MCP_TOOLS_LIST:
        return _extract_mcp(data, source)
    if fmt is SpecFormat.OPENAI_FUNCTIONS:
        return _extract_openai(data, source)
    raise SpecError(
        "unknown format: expected an MCP tools/list result, OpenAI/BFCL function docs, "
        "a Weft MCPSpec or Toucan server metadata",
        source=source,
    )


def _tool_list(value: Any, where: str, source: str) -> list[Any]:
    if not isinstance(value, list):
        raise SpecError(
            f"'{where}' is a {type(value).__name__}, not a list of tools", source=source
        )
    return value


def _extract_toucan(data: dict[str, Any], source: str) -> Extracted:
    meta = data["metadata"]
    labels = _obj(data.get("labels"))
    crawled = _obj(meta.get("server_info_crawled"))
    remote = _obj(meta.get("remote_server_response"))
    warnings: list[str] = []
    tools = crawled.get("tools") or []
    where = "metadata.server_info_crawled.tools"
    if not tools:
        tools = remote.get("tools") or []
        where = "metadata.remote_server_response.tools"
        if tools:
            warnings.append(f"crawled tool list empty; tools taken from {where}")
    return Extracted(
        tools=_tool_list(tools, where, source),
        name=_text(crawled.get("name")) or _text(meta.get("server_name")),
        domain=_text(labels.get("primary_label")),
        description=_text(crawled.get("overview")),
        options=_TOUCAN_OPTIONS,
        warnings=warnings,
    )


def _extract_weft(data: dict[str, Any], source: str) -> Extracted:
    schema_version = data.get("schema_version", 1)
    if not isinstance(schema_version, int) or schema_version > MCPSpec.SCHEMA_VERSION:
        raise SpecError(
            f"MCPSpec schema_version {schema_version!r} is newer than this weft-core understands "
            f"({MCPSpec.SCHEMA_VERSION}); upgrade weft-core",
            source=source,
        )
    if data.get("content_hash") is not None:
        try:
            sealed = MCPSpec.model_validate(data)
        except ValueError:
            sealed = None  # not a clean MCPSpec; normalization below repairs or rejects it
        if sealed is not None and sealed.content_hash != sealed.compute_hash():
            raise SpecError(
                "content does not match its content_hash (the file was changed after it was "
                "sealed; re-save it or remove content_hash)",
                source=source,
            )
    version = data.get("version", 1)
    requirements = data.get("requirements") or []
    return Extracted(
        tools=_tool_list(data["tools"], "tools", source),
        name=_text(data.get("name")),
        domain=_text(data.get("domain")),
        description=_text(data.get("description")),
        requirements=[r for r in requirements if isinstance(r, str)]
        if isinstance(requirements, list)
        else [],
        version=version if isinstance(version, int) and version >= 1 else 1,
        origin=_text(data.get("source")),
    )


def _extract_mcp(data: Any, source: str) -> Extracted:
    if isinstance(data, list):
        return Extracted(tools=data)
    if "tools" not in data and "result" not in data:
        return Extracted(tools=[data])  # one tool on its own
    body = data["result"] if isinstance(data.get("result"), dict) else data
    info = body.get("serverInfo") or data.get("serverInfo")
    info = info if isinstance(info, dict) else {}
    return Extracted(
        tools=_tool_list(body.get("tools"), "tools", source),
        name=_text(info.get("name")) or _text(body.get("name")),
        description=_text(body.get("description")) or _text(info.get("description")),
        domain=_text(body.get("domain")),
    )


def _extract_openai(data: Any, source: str) -> Extracted:
    if isinstance(data, list):
        return Extracted(tools=data)
    for key in ("tools", "functions", "function"):
        if key in data:
            value = data[key]
            tools = [value] if isinstance(value, dict) else _tool_list(value, key, source)
            return Extracted(
                tools=tools,
                name=_text(data.get("name")) if key != "function" else None,
                description=_text(data.get("description")) if key != "function" else None,
                domain=_text(data.get("domain")),
            )
    return Extracted(tools=[data])
