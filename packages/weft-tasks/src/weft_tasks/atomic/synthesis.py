"""The task-synthesis agent: Algorithm 1 of App. A.1 as a LangGraph state machine.

    generate -> validate -> select --(coverage < eta, rounds left)--> generate
                                   \\-> END (target reached | budget R spent | no new candidates)

`generate` asks the strategy (programmatic templates, or a chat model) for new candidates, given
the feedback of earlier rounds: failures with their diagnostics, redundant chains, uncovered
tools. `validate` runs each new candidate end to end from an independently initialized state
through a `TaskValidator` (MegaMCP sessions in production). `select` filters the validated set V
for orthogonality and measures coverage. Validated tasks stay in V and are never regenerated.
The budget R counts the first validation round.
"""

from __future__ import annotations

import functools
import json
import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Protocol

from langchain_core.language_models import BaseChatModel
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import Checkpointer
from pydantic import BaseModel, Field, ValidationError

from weft_core.exceptions import ModelOutputError
from weft_core.llm import ask_structured
from weft_core.models import AtomicTask, Check, ReferenceCall, TaskInput, ValidationEvidence
from weft_tasks.atomic.bundle import BundleView
from weft_tasks.atomic.execution import TemplateError, render_checks, template_names
from weft_tasks.atomic.orthogonality import (
    Redundancy,
    filter_orthogonal,
    tool_coverage,
    uncovered_tools,
)
from weft_tasks.atomic.templates import Draft, draft_for_tool


class TaskValidator(Protocol):
    """Runs atomic tasks end to end and says whether each passed.

    Contract: every task runs in its own session started from the bundle's seed state (never a
    state another task touched), its reference calls are real MCP calls, and its completion
    conditions are evaluated on the returns and on the session's persistent state. One
    `ValidationEvidence` per task, in order; a task-level failure is evidence, not an exception.
    """

    async def validate(
        self, bundle: BundleView, tasks: Sequence[AtomicTask]
    ) -> list[ValidationEvidence]: ...


class Failure(BaseModel):
    """One entry of F: a candidate that did not pass, with what went wrong."""

    task_id: str
    round: int
    tool_chain: list[str] = Field(default_factory=list)
    intent: str = ""
    kind: Literal["malformed", "execution", "checks"]
    diagnostic: str


class RoundReport(BaseModel):
    round: int
    generated: int = 0
    passed: int = 0
    failed: int = 0
    retained: int = 0
    redundant: int = 0
    coverage: float = 0.0


class SynthesisState(BaseModel):
    """State of Algorithm 1 for one MCP."""

    mcp: str
    budget: int = Field(ge=1, description="R: rounds, the first validation round included.")
    target: float = Field(gt=0, le=1, description="eta: target tool coverage.")
    max_chain: int = 4
    round: int = 0
    next_id: int = 1
    candidates: list[AtomicTask] = Field(default_factory=list)
    validated: Annotated[list[AtomicTask], operator.add] = Field(
        default_factory=list, description="V, in validation order (appended to)."
    )
    failures: Annotated[list[Failure], operator.add] = Field(
        default_factory=list, description="F (appended to)."
    )
    redundant: list[Redundancy] = Field(default_factory=list)
    retained: list[AtomicTask] = Field(default_factory=list)
    coverage: float = 0.0
    uncovered: list[str] = Field(default_factory=list)
    tried: Annotated[list[str], operator.add] = Field(
        default_factory=list, description="Signatures of every candidate so far (appended to)."
    )
    rounds: Annotated[list[RoundReport], operator.add] = Field(default_factory=list)
    last_generated: int = 0
    validated_in: dict[str, int] = Field(default_factory=dict, description="Task id -> its round.")
    stop_reason: str | None = None


# ----------------------------------------------------------------------------- strategies

# Alternatives tried per tool before the programmatic strategy has "no new candidates": creates
# could vary their synthesized values forever, which would only burn the round budget.
MAX_VARIANTS = 5


def _draft_to_task(mcp: str, task_id: str, d: Draft) -> AtomicTask:
    return AtomicTask(
        id=task_id,
        mcp=mcp,
        intent=d.intent,
        inputs=d.inputs,
        tool_chain=d.tool_chain,
        reference_calls=d.calls,
        checks=d.checks,
        outputs=d.outputs,
        entities=d.entities,
        writes=d.writes,
        seed_rows=d.seed_rows,
    )


def programmatic_candidates(bundle: BundleView, state: SynthesisState) -> list[Draft]:
    """Round 1: one candidate per certified tool, as a find-then-act chain where possible.
    Later rounds: alternatives (another seed row, the single-step form) for uncovered tools and
    for tools whose tasks failed."""
    tools = bundle.certified_tools
    tried = set(state.tried)
    out: list[Draft] = []
    if state.round == 0:
        wanted = [(t, 0, True) for t in tools]
    else:
        failed_tools = {t for f in state.failures for t in f.tool_chain[-1:]}
        focus = [t for t in tools if t in set(state.uncovered) | failed_tools]
        depth = min(state.round + 1, MAX_VARIANTS)
        wanted = [(t, v, c) for t in focus for v in range(depth) for c in (False, True)]
    for tool, variant, compound in wanted:
        # Two fresh alternatives per focused tool and round keep a round's cost bounded.
        if state.round > 0 and sum(1 for x in out if x.tool_chain[-1] == tool) >= 2:
            continue
        d = draft_for_tool(bundle, tool, variant, compound=compound)
        if d is None or len(d.tool_chain) > state.max_chain or d.signature in tried:
            continue
        tried.add(d.signature)
        out.append(d)
    return out


class LLMTaskDraft(BaseModel):
    """One atomic task as a model proposes it."""

    intent: str
    inputs: list[TaskInput] = Field(default_factory=list)
    reference_calls: list[ReferenceCall]
    checks: list[Check] = Field(min_length=1)
    outputs: dict[str, str] = Field(default_factory=dict)
    entities: list[str] = Field(default_factory=list)


class LLMTaskBatch(BaseModel):
    tasks: list[LLMTaskDraft]


_SYSTEM = (
    "You write atomic tasks for one MCP server: each is one user intent realised by a short ordered "
    "chain of its tools, with reference calls (string arguments may use {{input}} templates; 'bind' "
    "takes named values out of a call's result by dotted path for later calls) and completion "
    "conditions in Weft's check language over the final DB, the diff, tool returns and the ledger. "
    "Use real ids and values from the seed rows shown. Do not repeat chains that are already "
    "retained or contained in retained chains."
)


def llm_candidates(
    llm: BaseChatModel, bundle: BundleView, state: SynthesisState
) -> tuple[list[Draft], list[Failure]]:
    """Ask the model for candidates; drafts that break the task contract become failures in F."""
    prompt = _llm_prompt(bundle, state)
    batch = ask_structured(llm, LLMTaskBatch, prompt, system=_SYSTEM, what="task batch")
    drafts: list[Draft] = []
    bad: list[Failure] = []
    tried = set(state.tried)
    for n, t in enumerate(batch.tasks):
        problem = _draft_problem(bundle, t, state.max_chain)
        chain = [c.tool for c in t.reference_calls]
        if problem:
            bad.append(
                Failure(
                    task_id=f"draft-{state.round + 1}.{n + 1}",
                    round=state.round + 1,
                    tool_chain=chain,
                    intent=t.intent,
                    kind="malformed",
                    diagnostic=problem,
                )
            )
            continue
        d = Draft(
            intent=t.intent,
            tool_chain=chain,
            inputs=t.inputs,
            calls=t.reference_calls,
            checks=t.checks,
            outputs=t.outputs,
            entities=t.entities,
            writes=any((c := bundle.contract(x)) is not None and bool(c.writes) for x in chain),
            origin=f"llm:{state.round + 1}",
        )
        if d.signature not in tried:
            tried.add(d.signature)
            drafts.append(d)
    return drafts, bad


def _draft_problem(bundle: BundleView, t: LLMTaskDraft, max_chain: int) -> str | None:
    certified = set(bundle.certified_tools)
    if not t.reference_calls:
        return "no reference calls"
    if len(t.reference_calls) > max_chain:
        return f"chain of {len(t.reference_calls)} calls exceeds the limit {max_chain}"
    known = {i.name for i in t.inputs}
    for i, call in enumerate(t.reference_calls):
        if call.tool not in certified:
            return f"call {i + 1} uses {call.tool!r}, which is not a certified tool of {bundle.mcp}"
        spec = bundle.spec.tool(call.tool)
        missing = [r for r in spec.required if r not in call.arguments]
        if missing:
            return f"call {i + 1} ({call.tool}) lacks required argument(s) {missing}"
        unknown = template_names(call.arguments) - known
        if unknown:
            return f"call {i + 1} ({call.tool}) uses templates {sorted(unknown)} that no input or earlier bind provides"
        known |= set(call.bind)
    try:
        render_checks(
            t.checks,
            {
                **{i.name: i.value for i in t.inputs},
                **dict.fromkeys(known - {i.name for i in t.inputs}, 0),
            },
        )
    except (TemplateError, ValidationError) as exc:
        return f"checks reference unknown values: {exc}"
    return None


def _llm_prompt(bundle: BundleView, state: SynthesisState) -> str:
    tools = [
        {"name": t.name, "description": t.description, "input_schema": t.input_schema}
        for t in bundle.spec.tools
        if t.name in bundle.certified_tools
    ]
    contracts = [
        c.model_dump(mode="json", exclude_defaults=True) for c in bundle.contracts.contracts
    ]
    rows = {e.name: bundle.rows(e.name)[:3] for e in bundle.entities.entities}
    feedback = {
        "retained_chains": [t.tool_chain for t in state.retained],
        "uncovered_tools": state.uncovered if state.round else bundle.certified_tools,
        "failures": [
            f.model_dump(include={"tool_chain", "intent", "kind", "diagnostic"})
            for f in state.failures[-12:]
        ],
        "redundant": [r.reason for r in state.redundant[-12:]],
        "coverage": state.coverage,
        "target_coverage": state.target,
    }
    return (
        f"MCP {bundle.mcp} (domain {bundle.domain}): {bundle.spec.description}\n"
        f"Tools: {json.dumps(tools, default=str)}\nContracts: {json.dumps(contracts, default=str)}\n"
        f"Seed rows: {json.dumps(rows, default=str)}\nFeedback so far: {json.dumps(feedback, default=str)}\n"
        "Propose new atomic tasks, favouring the uncovered tools and repairing the failures."
    )


# ----------------------------------------------------------------------------- graph nodes


def generate(
    state: SynthesisState, *, bundle: BundleView, llm: BaseChatModel | None
) -> dict[str, Any]:
    failures: list[Failure] = []
    if llm is None:
        drafts = programmatic_candidates(bundle, state)
    else:
        try:
            drafts, failures = llm_candidates(llm, bundle, state)
        except ModelOutputError as exc:
            drafts, failures = (
                [],
                [
                    Failure(
                        task_id=f"round-{state.round + 1}",
                        round=state.round + 1,
                        kind="malformed",
                        diagnostic=str(exc),
                    )
                ],
            )
    tasks: list[AtomicTask] = []
    next_id = state.next_id
    for d in drafts:
        try:
            tasks.append(_draft_to_task(bundle.mcp, f"{bundle.mcp}.t{next_id:03d}", d))
        except ValidationError as exc:
            failures.append(
                Failure(
                    task_id=f"{bundle.mcp}.t{next_id:03d}",
                    round=state.round + 1,
                    tool_chain=d.tool_chain,
                    intent=d.intent,
                    kind="malformed",
                    diagnostic=str(exc.errors()[0]["msg"]),
                )
            )
        next_id += 1
    return {
        "round": state.round + 1,
        "candidates": tasks,
        "last_generated": len(tasks),
        "next_id": next_id,
        "failures": failures,
        "tried": [d.signature for d in drafts],
        "stop_reason": None if tasks else "no new candidates",
    }


async def validate(
    state: SynthesisState, *, bundle: BundleView, validator: TaskValidator
) -> dict[str, Any]:
    evidence = await validator.validate(bundle, state.candidates) if state.candidates else []
    passed: list[AtomicTask] = []
    failures: list[Failure] = []
    for task, ev in zip(state.candidates, evidence, strict=True):
        task = task.model_copy(update={"evidence": ev})
        if ev.passed:
            passed.append(task)
        else:
            failures.append(
                Failure(
                    task_id=task.id,
                    round=state.round,
                    tool_chain=task.tool_chain,
                    intent=task.intent,
                    kind="checks" if ev.evaluation else "execution",
                    diagnostic=ev.error or _failed_checks(ev),
                )
            )
    return {
        "validated": passed,
        "failures": failures,
        "candidates": [],
    }


def _failed_checks(ev: ValidationEvidence) -> str:
    if ev.evaluation is None:
        return "failed"
    return "; ".join(f"{o.check_id or o.kind}: {o.reason}" for o in ev.evaluation.failures)[:600]


def select(state: SynthesisState, *, bundle: BundleView) -> dict[str, Any]:
    retained, redundant = filter_orthogonal(state.validated)
    coverage = tool_coverage(retained, bundle.tools)
    report = RoundReport(
        round=state.round,
        generated=state.last_generated,
        passed=len(state.validated) - sum(r.passed for r in state.rounds),
        failed=sum(1 for f in state.failures if f.round == state.round),
        retained=len(retained),
        redundant=len(redundant),
        coverage=coverage,
    )
    stop = state.stop_reason
    if coverage >= state.target:
        stop = "target coverage reached"
    elif stop is None and state.round >= state.budget:
        stop = "round budget exhausted"
    return {
        "retained": retained,
        "redundant": redundant,
        "coverage": coverage,
        "uncovered": uncovered_tools(retained, bundle.tools),
        "rounds": [report],
        "stop_reason": stop,
    }


def _after_generate(state: SynthesisState) -> str:
    return "select" if state.stop_reason == "no new candidates" else "validate"


def _after_select(state: SynthesisState) -> str:
    return END if state.stop_reason else "generate"


@dataclass(frozen=True)
class SynthesisContext:
    """What a run of Algorithm 1 depends on (LangGraph `context_schema`)."""

    bundle: BundleView
    validator: TaskValidator
    llm: BaseChatModel | None = None


def _generate_node(state: SynthesisState, runtime: Runtime[SynthesisContext]) -> dict[str, Any]:
    return generate(state, bundle=runtime.context.bundle, llm=runtime.context.llm)


async def _validate_node(
    state: SynthesisState, runtime: Runtime[SynthesisContext]
) -> dict[str, Any]:
    return await validate(state, bundle=runtime.context.bundle, validator=runtime.context.validator)


def _select_node(state: SynthesisState, runtime: Runtime[SynthesisContext]) -> dict[str, Any]:
    return select(state, bundle=runtime.context.bundle)


def build_task_synthesis_graph(
    *, checkpointer: Checkpointer = None
) -> CompiledStateGraph[SynthesisState, SynthesisContext, SynthesisState, SynthesisState]:
    """Algorithm 1 for one MCP; invoke with `SynthesisState(mcp=..., budget=R, target=eta)` and
    `context=SynthesisContext(bundle, validator, llm)`."""
    g = StateGraph(SynthesisState, context_schema=SynthesisContext)
    g.add_node("generate", _generate_node)
    g.add_node("validate", _validate_node)
    g.add_node("select", _select_node)
    g.add_edge(START, "generate")
    g.add_conditional_edges("generate", _after_generate, ["validate", "select"])
    g.add_edge("validate", "select")
    g.add_conditional_edges("select", _after_select, ["generate", END])
    return g.compile(checkpointer=checkpointer)


@functools.cache
def _compiled() -> CompiledStateGraph[
    SynthesisState, SynthesisContext, SynthesisState, SynthesisState
]:
    return build_task_synthesis_graph()


async def certify(
    bundle: BundleView,
    validator: TaskValidator,
    *,
    llm: BaseChatModel | None = None,
    budget: int = 4,
    target: float = 1.0,
    max_chain: int = 4,
) -> SynthesisState:
    """Run Algorithm 1 for one MCP and return its final state (retained tasks, coverage, F)."""
    initial = SynthesisState(mcp=bundle.mcp, budget=budget, target=target, max_chain=max_chain)
    out = await _compiled().ainvoke(
        initial,
        {"recursion_limit": 4 * budget + 10},
        context=SynthesisContext(bundle, validator, llm),
    )
    return SynthesisState.model_validate(out)
