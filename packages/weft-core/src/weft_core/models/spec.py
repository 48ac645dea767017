"""MCPSpec and ToolSpec: one MCP server's definition."""

from __future__ import annotations

import re
from typing import Any, ClassVar, Self

from pydantic import Field, field_validator, model_validator

from weft_core.models._base import Artifact, WeftModel

# MCP tool names allow these characters; loaders rewrite anything else (see weft_core.loaders).
TOOL_NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_\-.]{0,127}$")


class ToolSpec(WeftModel):
    """One tool: name, description, JSON-Schema input (always an object schema) and optional output."""

    name: str = Field(description="Tool name as the MCP server exposes it.")
    description: str = Field(default="", description="What the tool does, for the agent.")
    input_schema: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}},
        description="JSON Schema of the arguments; type object, $refs inlined by the loaders.",
    )
    output_schema: dict[str, Any] | None = Field(
        default=None, description="JSON Schema of the result."
    )
    annotations: dict[str, Any] | None = Field(default=None, description="MCP tool annotations.")
    original_name: str | None = Field(
        default=None, description="The name in the source when the loader had to rewrite it."
    )

    @model_validator(mode="after")
    def _check(self) -> Self:
        if not TOOL_NAME_RE.match(self.name):
            raise ValueError(f"tool name {self.name!r} is not a valid MCP tool name")
        if self.input_schema.get("type") != "object":
            raise ValueError(f"tool {self.name!r}: input_schema must be an object schema")
        return self

    @property
    def properties(self) -> dict[str, dict[str, Any]]:
        props = self.input_schema.get("properties") or {}
        return props if isinstance(props, dict) else {}

    @property
    def required(self) -> list[str]:
        req = self.input_schema.get("required") or []
        return [r for r in req if isinstance(r, str)]


class MCPSpec(Artifact):
    """One MCP server's definition, as loaded from any supported source."""

    name: str = Field(description="Server name; also the default MCP identifier (slugified).")
    domain: str = Field(default="general", description="Business domain label, e.g. 'CRM'.")
    description: str = Field(default="", description="What the server is for.")
    tools: list[ToolSpec] = Field(description="The complete tool set.")
    requirements: list[str] = Field(
        default_factory=list, description="Optional business requirements the backend must honour."
    )
    source: str | None = Field(
        default=None,
        description="Where the spec came from: a file name or URL, never a local path; not hashed.",
    )

    PROVENANCE_FIELDS: ClassVar[frozenset[str]] = frozenset({"source"})

    @field_validator("source")
    @classmethod
    def _label(cls, value: str | None) -> str | None:
        return source_label(value) if value is not None else None

    @model_validator(mode="after")
    def _unique_tools(self) -> Self:
        seen: set[str] = set()
        for tool in self.tools:
            if tool.name in seen:
                raise ValueError(f"duplicate tool name {tool.name!r}")
            seen.add(tool.name)
        return self

    @property
    def slug(self) -> str:
        return slugify(self.name)

    def tool(self, name: str) -> ToolSpec:
        for t in self.tools:
            if t.name == name:
                return t
        raise KeyError(name)


def slugify(name: str) -> str:
    """A lowercase identifier-safe form of a name: 'Acme CRM v2' -> 'acme_crm_v2'."""
    slug = re.sub(r"[^0-9a-zA-Z]+", "_", name).strip("_").lower()
    if not slug:
        return "mcp"
    return slug if not slug[0].isdigit() else f"m_{slug}"


def source_label(source: str) -> str:
    """What a spec records as its source: a URL as is, a local path as its file name only, so
    the same file given by a relative or an absolute path (or moved) is recorded identically."""
    from weft_core.refs import is_absolute_path, is_url

    if is_url(source) and not is_absolute_path(source):
        return source
    return source.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1] or source
