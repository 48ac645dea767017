"""What environment synthesis infers and what task synthesis reads: entities and tool contracts.

`entities.json` (EntityModel) and `contracts.json` (ContractSet) of an EnvBundle. weft-envsynth
writes them; weft-tasks reads them to synthesize atomic tasks, so they live here as the shared format.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from weft_core.models._base import Artifact, WeftModel
from weft_core.models.bundle import StateKind

FieldType = Literal["string", "integer", "number", "boolean", "date", "datetime", "json"]
Operation = Literal[
    "create",
    "read",
    "list",
    "search",
    "update",
    "delete",
    "action",
    "file_read",
    "file_write",
    "file_list",
    "file_delete",
    "compute",
]


class EntityField(WeftModel):
    name: str
    type: FieldType = "string"
    description: str = ""
    primary_key: bool = False
    unique: bool = False
    nullable: bool = True
    enum: list[str] | None = None
    foreign_key: str | None = Field(
        default=None, description="'entity.field' this field references."
    )
    examples: list[str | int | float | bool] = Field(
        default_factory=list,
        description="Values the definitions give as examples (schema `examples`/`example`/"
        "`default`, 'e.g. TIC-0001' in a description); the seed uses them and their format.",
    )


class Entity(WeftModel):
    """A business object with a table of its own, e.g. customer, order, ticket."""

    name: str = Field(description="Singular snake_case name, also the table name.")
    description: str = ""
    key: str = Field(description="Primary-key field name.")
    fields: list[EntityField]
    reference_data: bool = Field(
        default=False, description="Synthesized read-only data backing stateless tools."
    )

    def field(self, name: str) -> EntityField:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"{self.name}.{name}")


class Relation(WeftModel):
    source: str = Field(description="'entity.field' holding the reference.")
    target: str = Field(description="'entity.field' referenced.")
    kind: Literal["many_to_one", "one_to_one"] = "many_to_one"


class EntityModel(Artifact):
    """`entities.json`: the shared entities of one MCP, inferred from its complete tool set."""

    mcp: str
    entities: list[Entity] = Field(default_factory=list)
    relations: list[Relation] = Field(default_factory=list)

    def hashed_content(self) -> dict[str, Any]:
        data = super().hashed_content()
        # `examples` came after bundles were written: left out while empty, the hash of an
        # existing entities.json (and of any model without examples) stays what it was.
        for entity in data.get("entities") or []:
            for f in entity.get("fields") or []:
                if not f.get("examples"):
                    f.pop("examples", None)
        return data

    def entity(self, name: str) -> Entity:
        for e in self.entities:
            if e.name == name:
                return e
        raise KeyError(name)


class ArgMapping(WeftModel):
    """How one tool argument maps onto state."""

    argument: str
    entity: str | None = None
    field: str | None = None
    role: Literal["key", "filter", "value", "path", "content", "option", "reference"] = "value"


class ErrorCase(WeftModel):
    condition: str = Field(description="When the error happens, e.g. 'customer_id not found'.")
    message: str = Field(description="The error text the tool returns.")


class StateTransition(WeftModel):
    entity: str
    field: str
    from_values: list[str] = Field(default_factory=list)
    to_value: str | None = None


class ToolContract(WeftModel):
    """Per tool: argument→state mapping, reads, writes, returns, preconditions and error cases."""

    tool: str
    state_kind: StateKind
    operation: Operation
    entity: str | None = Field(default=None, description="The entity the tool is about.")
    mappings: list[ArgMapping] = Field(default_factory=list)
    reads: list[str] = Field(default_factory=list, description="Entities (or 'entity.field') read.")
    writes: list[str] = Field(
        default_factory=list, description="Entities (or 'entity.field') written."
    )
    returns: dict[str, Any] = Field(default_factory=dict, description="JSON Schema of the result.")
    preconditions: list[str] = Field(default_factory=list)
    errors: list[ErrorCase] = Field(default_factory=list)
    transitions: list[StateTransition] = Field(default_factory=list)


class ContractSet(Artifact):
    """`contracts.json`: one contract per tool of an MCP."""

    mcp: str
    contracts: list[ToolContract] = Field(default_factory=list)

    def contract(self, tool: str) -> ToolContract:
        for c in self.contracts:
            if c.tool == tool:
                return c
        raise KeyError(tool)
