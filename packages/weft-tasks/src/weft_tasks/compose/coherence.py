"""The coherence judge: do these MCPs support one business objective? (paper App. A.2)

Programmatic strategy: the MCPs must form one connected component over shared business objects
(link keys such as a customer email), and the objective names that object and the services.
LLM strategy: an evaluation model reads the MCP descriptions, entities and links and answers a
`Verdict`; a verdict about MCPs outside the combination, or an empty objective, is caught and
counted as a rejection.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import Checkpointer
from pydantic import BaseModel, Field

from weft_core.exceptions import ModelOutputError
from weft_core.llm import ask_structured
from weft_tasks.atomic.bundle import BundleView
from weft_tasks.compose.links import link_fields, linked, shared_keys


class MCPCard(BaseModel):
    """What the judge sees of one MCP."""

    mcp: str
    domain: str
    description: str
    entities: list[str]
    tools: list[str]
    link_keys: list[str]


class Verdict(BaseModel):
    coherent: bool
    objective: str = Field(
        default="", description="The shared business objective, in one sentence."
    )
    reason: str = ""
    mcps: list[str] = Field(default_factory=list, description="The MCPs the objective uses.")


class CoherenceState(BaseModel):
    cards: list[MCPCard]
    shared: list[str] = Field(default_factory=list, description="Link keys shared by some pair.")
    verdict: Verdict | None = None
    rejection: str | None = None


def cards_for(bundles: list[BundleView]) -> list[MCPCard]:
    return [
        MCPCard(
            mcp=b.mcp,
            domain=b.domain,
            description=b.spec.description,
            entities=[e.name for e in b.entities.entities],
            tools=b.certified_tools,
            link_keys=sorted({f.key for f in link_fields(b)}),
        )
        for b in bundles
    ]


def programmatic_verdict(state: CoherenceState, bundles: list[BundleView]) -> Verdict:
    """Coherent when the MCPs that hold business data share objects (one connected component);
    MCPs without tables (a notes workspace, a calculator) serve any objective."""
    names = [c.mcp for c in state.cards]
    core = [b for b in bundles if any(not e.reference_data for e in b.entities.entities)]
    utilities = [b.mcp for b in bundles if b not in core]
    if not core:
        return Verdict(coherent=False, mcps=names, reason="no MCP holds business data to act on")
    if not linked(core):
        return Verdict(
            coherent=False,
            mcps=names,
            reason="no shared business object connects " + ", ".join(b.mcp for b in core),
        )
    keys = sorted({k for i, a in enumerate(core) for b in core[i + 1 :] for k in shared_keys(a, b)})
    domains = sorted({c.domain for c in state.cards})
    if keys:
        about = f"the account identified by its {keys[0].split('.')[-1]}"
    else:
        first = core[0].entities.entities[0].name.replace("_", " ")
        about = f"a {first} and its records"
    extra = f", recording the outcome with {', '.join(utilities)}" if utilities else ""
    return Verdict(
        coherent=True,
        mcps=names,
        reason=f"shared keys: {keys or ['single service']}",
        objective=f"Handle {about} end to end across {', '.join(domains)} "
        f"({', '.join(b.mcp for b in core)}){extra}",
    )


_SYSTEM = (
    "You judge whether a set of tool services (MCP servers) can serve ONE coherent business "
    "objective in a single user task. Say coherent only if a realistic person would use all of "
    "them together for one goal, typically through a shared business object."
)


@dataclass(frozen=True)
class CoherenceContext:
    """What one judgement depends on (LangGraph `context_schema`)."""

    bundles: list[BundleView]
    llm: BaseChatModel | None = None


def judge(state: CoherenceState, runtime: Runtime[CoherenceContext]) -> dict[str, Any]:
    bundles, llm = runtime.context.bundles, runtime.context.llm
    if llm is None:
        verdict = programmatic_verdict(state, bundles)
    else:
        prompt = (
            "Services:\n"
            + "\n".join(c.model_dump_json() for c in state.cards)
            + f"\nShared link keys: {state.shared}\nAnswer with a Verdict listing the MCPs the objective uses."
        )
        try:
            verdict = ask_structured(llm, Verdict, prompt, system=_SYSTEM, what="verdict")
        except ModelOutputError as exc:
            return {"verdict": None, "rejection": f"judge output invalid: {exc}"}
    return {"verdict": verdict}


def audit(state: CoherenceState) -> dict[str, Any]:
    """Deterministic guard on the verdict, whoever wrote it."""
    v = state.verdict
    if v is None:
        return {}
    names = {c.mcp for c in state.cards}
    if not v.coherent:
        return {"rejection": f"incoherent combination: {v.reason or 'judge said no'}"}
    if set(v.mcps) - names:
        return {
            "rejection": f"judge named MCPs outside the combination: {sorted(set(v.mcps) - names)}"
        }
    if v.mcps and set(v.mcps) != names:
        return {"rejection": f"objective leaves out {sorted(names - set(v.mcps))}"}
    if len(v.objective.strip()) < 8:
        return {"rejection": "judge gave no objective"}
    return {}


def build_coherence_graph(
    *, checkpointer: Checkpointer = None
) -> CompiledStateGraph[CoherenceState, CoherenceContext, CoherenceState, CoherenceState]:
    """Judge one combination; invoke with `CoherenceState(cards=cards_for(bundles))` and
    `context=CoherenceContext(bundles, llm)`."""
    g = StateGraph(CoherenceState, context_schema=CoherenceContext)
    g.add_node("judge", judge)
    g.add_node("audit", audit)
    g.add_edge(START, "judge")
    g.add_edge("judge", "audit")
    g.add_edge("audit", END)
    return g.compile(checkpointer=checkpointer)


@functools.cache
def _compiled() -> CompiledStateGraph[
    CoherenceState, CoherenceContext, CoherenceState, CoherenceState
]:
    return build_coherence_graph()


def check_coherence(bundles: list[BundleView], llm: BaseChatModel | None = None) -> CoherenceState:
    shared = sorted(
        {k for i, a in enumerate(bundles) for b in bundles[i + 1 :] for k in shared_keys(a, b)}
    )
    out = _compiled().invoke(
        CoherenceState(cards=cards_for(bundles), shared=shared),
        context=CoherenceContext(bundles, llm),
    )
    return CoherenceState.model_validate(out)
