"""SimUser mode: a user simulator that discloses one atomic-task request per turn, in dependency
order, in the voice of a sampled persona (paper §3.1.3 (ii)).

Two request writers share one contract (`RequestWriter`): the programmatic one fills templates
from the node's intent, inputs and outcomes; the LLM one lets a chat model phrase the request and
validates it (every value the disclosure level requires is present; no hidden value, no value or
intent of a later step leaks) — a draft that fails is retried once with the problems named, then
replaced by the programmatic text, so a simulator never discloses out of order.

Between requests the user answers the agent's questions (`SimUser.respond`, strategies in
`weft_tasks.views.answers`) from what it holds for the current and earlier turns, within the
persona's patience; it moves on to the next request only when the turn ends.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Annotated, Any, Protocol

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import Checkpointer
from pydantic import BaseModel, Field

from weft_core.llm import model_display_name
from weft_core.models import Disclosure, TaskGraph, TaskNode, TaskView, ViewMode
from weft_tasks.views._llm_text import reply_field
from weft_tasks.views._order import disclosure_order
from weft_tasks.views.answers import (
    Answer,
    AnswerContext,
    Answerer,
    ProgrammaticAnswerer,
    later_keywords,
    user_facts,
)
from weft_tasks.views.disclosure import (
    disclose_inputs,
    format_value,
    hidden_values,
    intent_text,
    required_values,
)
from weft_tasks.views.leaks import leak_problems
from weft_tasks.views.personas import PERSONAS, Persona, sample_persona
from weft_tasks.views.questions import Question
from weft_tasks.views.turn import TurnContext


class RequestWriter(Protocol):
    """Writes the user's message for one atomic-task turn.

    Contract: the text asks for `ctx.node`'s intent only, states every value in `ctx.required`,
    and contains nothing in `ctx.forbidden` nor any of `ctx.future_intents`. `strategy` names the
    writer for traces ("programmatic" or the model's name).
    """

    strategy: str

    async def write(self, ctx: TurnContext) -> str: ...


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:] if text else text


def render_request(
    graph: TaskGraph, node: TaskNode, index: int, persona: Persona, disclosure: Disclosure
) -> str:
    """The programmatic request: persona framing around the intent, inputs and wanted outcomes."""
    intents = {n.id: n.intent for n in graph.nodes}
    items = [d.text for d in disclose_inputs(node, disclosure, graph.bindings, intents)]
    intent = intent_text(node, disclosure, graph.bindings)
    head = (
        f"{persona.greeting} {intent}."
        if index == 0
        else f"{persona.connector} {_lower_first(intent)}."
    )
    wanted = (
        "Tell me the " + " and the ".join(node.outcomes.values()).rstrip(".") + "."
        if node.outcomes
        else ""
    )
    if "list" in persona.style or "precise" in persona.style:
        lines = [head, *(f"- {i}" for i in items), wanted, persona.closing]
        return "\n".join(line for line in lines if line)
    details = " Details: " + "; ".join(items) + "." if items else ""
    return " ".join(p for p in (head + details, wanted, persona.closing) if p)


class ProgrammaticRequestWriter:
    """Template requests; needs no model."""

    strategy = "programmatic"

    async def write(self, ctx: TurnContext) -> str:
        return ctx.template


def validate_request(text: str, ctx: TurnContext) -> list[str]:
    """Problems with a drafted request, in words; empty when it respects the contract."""
    problems: list[str] = []
    low = text.lower()
    if not text.strip():
        return ["the request is empty"]
    if len(text) > 4000:
        problems.append("the request is longer than 4000 characters")
    for value in ctx.required:
        if value.lower() not in low:
            problems.append(f"it drops the required value {value!r}")
    problems += leak_problems(text, ctx.forbidden, ctx.future_intents)
    return problems


class SimUserTurnState(BaseModel):
    """State of the LLM request writer's graph for one turn."""

    system: str
    facts: str
    draft: str = ""
    problems: list[str] = Field(default_factory=list)
    rejected: Annotated[list[str], operator.add] = Field(
        default_factory=list, description="Drafts the validator refused (appended to)."
    )
    attempts: int = 0
    max_attempts: int = Field(default=2, description="Drafts before the template is used.")
    request: str = ""
    strategy: str = ""


@dataclass(frozen=True)
class SimUserContext:
    """What one turn's graph run depends on (LangGraph `context_schema`)."""

    model: BaseChatModel
    turn: TurnContext


def _parse_request(content: Any) -> str:
    return reply_field(content, "request")


async def draft_node(state: SimUserTurnState, runtime: Runtime[SimUserContext]) -> dict[str, Any]:
    messages = [SystemMessage(state.system), HumanMessage(state.facts)]
    if state.problems:
        messages.append(
            HumanMessage(
                "Your last draft was rejected: " + "; ".join(state.problems) + ". Write it again."
            )
        )
    reply = await runtime.context.model.ainvoke(messages)
    return {"draft": _parse_request(reply.content), "attempts": state.attempts + 1}


def validate_node(state: SimUserTurnState, runtime: Runtime[SimUserContext]) -> dict[str, Any]:
    problems = validate_request(state.draft, runtime.context.turn)
    if problems:
        return {"problems": problems, "rejected": [state.draft]}
    return {"problems": [], "request": state.draft, "strategy": "llm"}


def fallback_node(state: SimUserTurnState, runtime: Runtime[SimUserContext]) -> dict[str, Any]:
    return {"request": runtime.context.turn.template, "strategy": "programmatic-fallback"}


def route_after_validate(state: SimUserTurnState) -> str:
    if not state.problems:
        return END
    return "draft" if state.attempts < state.max_attempts else "fallback"


def build_simuser_graph(
    *, checkpointer: Checkpointer = None
) -> CompiledStateGraph[SimUserTurnState, SimUserContext, SimUserTurnState, SimUserTurnState]:
    """draft (LLM) -> validate -> (done | draft again with the problems | programmatic fallback).

    Compiled once per writer; each turn runs it with `context=SimUserContext(model, turn)`.
    """
    g = StateGraph(SimUserTurnState, context_schema=SimUserContext)
    g.add_node("draft", draft_node)
    g.add_node("validate", validate_node)
    g.add_node("fallback", fallback_node)
    g.add_edge(START, "draft")
    g.add_edge("draft", "validate")
    g.add_conditional_edges("validate", route_after_validate, ["draft", "fallback", END])
    g.add_edge("fallback", END)
    return g.compile(checkpointer=checkpointer)


_SYSTEM = (
    "You play a user talking to an AI assistant that can use business tools. You are {role}; "
    "your style: {style}. Write ONLY your next message to the assistant, asking for exactly one "
    'thing. Reply as JSON: {{"request": "..."}}.'
)


class LLMRequestWriter:
    """A chat model phrases each request; the output is validated and falls back to the template."""

    def __init__(self, model: BaseChatModel, *, max_attempts: int = 2) -> None:
        self.model = model
        self.max_attempts = max_attempts
        self.strategy = model_display_name(model)
        self.log: list[SimUserTurnState] = []
        self.graph = build_simuser_graph()

    async def write(self, ctx: TurnContext) -> str:
        must = "; ".join(ctx.required) or "(none)"
        facts = (
            f"What you want now: {ctx.node.intent}\n"
            f"A plain version of the message: {ctx.template}\n"
            f"You must mention these values verbatim: {must}\n"
            "Do not mention anything else you will ask for later, and do not state values the "
            "plain version does not state."
        )
        state = SimUserTurnState(
            system=_SYSTEM.format(role=ctx.persona.role, style=ctx.persona.style),
            facts=facts,
            max_attempts=self.max_attempts,
        )
        try:
            out = await self.graph.ainvoke(state, context=SimUserContext(self.model, ctx))
            result = SimUserTurnState.model_validate(out)
        except Exception as exc:  # a broken model must not stop the rollout: use the template
            result = state.model_copy(
                update={
                    "request": ctx.template,
                    "strategy": "programmatic-fallback",
                    "problems": [f"model call failed: {type(exc).__name__}"],
                }
            )
        self.log.append(result)
        return result.request


@dataclass
class DisclosedTurn:
    node_id: str
    request: str
    strategy: str


@dataclass
class Exchange:
    """One question the agent asked during a turn and the user's answer."""

    turn: int
    node_id: str
    question: str
    answer: Answer


@dataclass
class SimUser:
    """Discloses the graph's atomic tasks one per turn, in stable topological order, and answers
    the agent's questions in between (`respond`)."""

    graph: TaskGraph
    disclosure: Disclosure
    persona: Persona
    writer: RequestWriter = field(default_factory=ProgrammaticRequestWriter)
    answerer: Answerer = field(default_factory=ProgrammaticAnswerer)
    order: list[str] = field(init=False)
    turns: list[DisclosedTurn] = field(init=False, default_factory=list)
    exchanges: list[Exchange] = field(init=False, default_factory=list)

    def __post_init__(self) -> None:
        self.order = disclosure_order(self.graph)

    def context(self, index: int) -> TurnContext:
        node = self.graph.node(self.order[index])
        required = required_values(node, self.disclosure, self.graph.bindings)
        allowed = {
            v.lower()
            for nid in self.order[: index + 1]
            for v in required_values(self.graph.node(nid), self.disclosure, self.graph.bindings)
        }
        forbidden: set[str] = set(hidden_values(node, self.disclosure, self.graph.bindings))
        for later in self.order[index + 1 :]:
            forbidden.update(
                required_values(self.graph.node(later), self.disclosure, self.graph.bindings)
            )
        forbidden = {v for v in forbidden if v.lower() not in allowed and len(v) >= 3}
        return TurnContext(
            graph=self.graph,
            node=node,
            index=index,
            persona=self.persona,
            disclosure=self.disclosure,
            required=required,
            forbidden=sorted(forbidden),
            future_intents=[self.graph.node(n).intent for n in self.order[index + 1 :]],
            template=render_request(self.graph, node, index, self.persona, self.disclosure),
        )

    def answer_context(self, question: Question) -> AnswerContext:
        """What the user may say about `question` during the current (last disclosed) turn."""
        index = len(self.turns) - 1
        turn = self.context(index)
        facts = user_facts(self.graph, self.order, index, self.disclosure)
        known = {f.value.lower() for f in facts if f.value is not None}
        later: set[str] = set(turn.forbidden)
        for nid in self.order[index + 1 :]:
            later.update(
                format_value(i.value) for i in self.graph.node(nid).inputs if i.value is not None
            )
        heard = [t.request for t in self.turns]
        heard += [e.answer.text for e in self.exchanges]
        return AnswerContext(
            turn=turn,
            question=question,
            facts=facts,
            # a value of a later turn the user already holds now may be said; nothing else
            forbidden=sorted(v for v in later if len(v) >= 3 and v.lower() not in known),
            heard=heard,
            asked=sum(1 for e in self.exchanges if e.turn == index),
            later=later_keywords(self.graph, self.order, index),
        )

    async def respond(self, reply: str | None) -> str | None:
        """The user's answer to the agent's end-of-step `reply`, or None when the turn is over:
        the reply asks nothing, or the user's patience ran out. After `persona.patience` answers
        in one turn the user insists that the agent goes ahead; a question after that ends the
        turn, so no agent can hold a turn open."""
        if not self.turns:
            return None
        question = self.answerer.read(reply)
        if question is None:
            return None
        index = len(self.turns) - 1
        asked = [e for e in self.exchanges if e.turn == index]
        if len(asked) >= self.persona.patience:
            if any(e.answer.kind == "insist" for e in asked):
                return None
            answer = Answer(self.persona.insist, "insist", "persona")
        else:
            answer = await self.answerer.answer(self.answer_context(question))
        self.exchanges.append(Exchange(index, self.turns[index].node_id, question.text, answer))
        return answer.text

    @property
    def done(self) -> bool:
        return len(self.turns) >= len(self.order)

    async def next_request(self) -> DisclosedTurn | None:
        """The next turn's request, or None when every atomic task has been requested."""
        if self.done:
            return None
        ctx = self.context(len(self.turns))
        text = await self.writer.write(ctx)
        strategy = self.writer.strategy
        if self.writer.strategy != "programmatic" and text == ctx.template:
            strategy = "programmatic-fallback"
        turn = DisclosedTurn(node_id=ctx.node.id, request=text, strategy=strategy)
        self.turns.append(turn)
        return turn


def build_simuser_view(
    graph: TaskGraph, disclosure: Disclosure = Disclosure.FULL, seed: int | str = 0
) -> TaskView:
    """The SimUser view with its persona and the programmatic requests, one per node in order."""
    persona = sample_persona(f"{graph.id}:{seed}")
    order = disclosure_order(graph)
    requests = [
        render_request(graph, graph.node(nid), i, persona, disclosure)
        for i, nid in enumerate(order)
    ]
    return TaskView(
        mode=ViewMode.SIMUSER,
        disclosure=disclosure,
        persona=f"{persona.id}: {persona.describe()}",
        requests=requests,
    )


def persona_of(view: TaskView, graph: TaskGraph, seed: int | str = 0) -> Persona:
    """The persona a view names (falls back to sampling by seed)."""
    if view.persona:
        pid = view.persona.split(":", 1)[0]
        for p in PERSONAS:
            if p.id == pid:
                return p
    return sample_persona(f"{graph.id}:{seed}")
