"""The state of the envsynth graph: a pydantic model (serializable by LangGraph checkpointers)."""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, ConfigDict, Field

from weft_core.models import ContractSet, EntityModel, EnvBundleManifest, MCPSpec
from weft_envsynth.plans import Analysis, BackendPlan, SeedPlan, ValidationReport

Stage = Literal["schema", "contracts", "backend"]


@dataclass(frozen=True)
class EnvSynthContext:
    """What a run of the graph depends on but does not store (LangGraph `context_schema`)."""

    llm: BaseChatModel | None = None
    """Any LangChain chat model for the LLM strategies; None runs the programmatic ones."""


class Revision(BaseModel):
    """What the next revision redoes (decided by the validate node; routers only read it)."""

    target: Stage
    redo: list[str] = Field(default_factory=list, description="Tools to regenerate.")
    feedback: list[str] = Field(default_factory=list, description="Failures handed to the stage.")


class EnvSynthState(BaseModel):
    """Everything one synthesis run knows. Nodes return partial updates of these fields."""

    model_config = ConfigDict(arbitrary_types_allowed=False)

    spec: MCPSpec = Field(description="The MCP being synthesized.")
    out_dir: str = Field(
        description="Folder the certified bundle is written into (as OUT/<slug>/)."
    )
    work_dir: str | None = Field(
        default=None, description="Temporary folder the bundle is built in."
    )
    previous_bundle: str | None = Field(
        default=None, description="An earlier version of this bundle, if any."
    )
    bundle_name: str | None = Field(
        default=None,
        description="Folder name of the bundle under out_dir (default: the spec's slug).",
    )
    rounds: int = Field(
        default=3, description="Revision budget (rounds after the first validation)."
    )
    round: int = Field(default=0, description="Validation rounds run so far.")
    strategy: str = Field(
        default="programmatic", description="'programmatic' or the chat model's name."
    )
    analysis: Analysis | None = None
    entities: EntityModel | None = None
    contracts: ContractSet | None = None
    backend: BackendPlan | None = None
    seed: SeedPlan | None = None
    report: ValidationReport | None = None
    history: Annotated[list[ValidationReport], operator.add] = Field(
        default_factory=list, description="Every earlier validation report (appended to)."
    )
    revise_target: Stage | None = None
    redo: list[str] = Field(default_factory=list, description="Tools the next stage regenerates.")
    feedback: list[str] = Field(
        default_factory=list, description="Validation failures handed to the revised stage."
    )
    uncertified: dict[str, str] = Field(
        default_factory=dict, description="Tools set aside before validation, with why."
    )
    programmatic_tools: list[str] = Field(
        default_factory=list,
        description="Tools whose contract and route were regenerated programmatically.",
    )
    notes: Annotated[list[str], operator.add] = Field(
        default_factory=list, description="What each node decided (nodes append to it)."
    )
    next_revision: Revision | None = Field(
        default=None, description="Set by validate when another revision round will run."
    )
    route_code: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="Per tool, what became of the route code the model wrote (routecode).",
    )
    build_error: str | None = Field(
        default=None, description="Why writing the bundle sources failed."
    )
    schema_revision: str | None = None
    manifest: EnvBundleManifest | None = None
    bundle_path: str | None = None
    error: str | None = Field(
        default=None, description="Why the spec was rejected (no bundle written)."
    )
