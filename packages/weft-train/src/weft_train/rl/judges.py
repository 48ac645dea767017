"""Rubric judges for task and verifier consistency filtering (paper §3.3.2, App. B.1).

A judge scores one pilot rollout from the trace and ledger evidence and the task's definition
(objective, intents, inputs, tool chains), never from the task's checks: it is the independent
second opinion the executable verifier is compared against. Two strategies, one contract:
`ProgrammaticRubricJudge` (no model) and `LLMRubricJudge` (any LangChain chat model).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field, ValidationError

from weft_core.llm import reply_payload
from weft_core.models import LedgerEntry, TaskGraph, TaskNode, Trace


class JudgeScore(BaseModel):
    """A judge's score of one rollout in [0, 1], the rubric items behind it, or why it failed."""

    score: float | None = Field(default=None, ge=0.0, le=1.0, description="None when it failed.")
    items: dict[str, bool] = Field(default_factory=dict, description="Rubric item -> satisfied.")
    reasoning: str = ""
    error: str | None = Field(default=None, description="Why no score could be given.")


@runtime_checkable
class RubricJudge(Protocol):
    """Contract: `judge(task, trace)` scores the rollout in [0, 1] from the trace's messages and
    ledger and the task's intents, inputs and tool chains; it never reads `checks` or
    `final_checks`. A judge that cannot score returns a `JudgeScore` with `error` (never raises for
    one rollout), so the rest of the batch goes on."""

    name: str

    async def judge(self, task: TaskGraph, trace: Trace) -> JudgeScore: ...


def _norm(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float):
        return f"{float(value):g}"
    return str(value).strip().lower()


def _values(obj: Any) -> set[str]:
    out: set[str] = set()
    if isinstance(obj, dict):
        for v in obj.values():
            out |= _values(v)
    elif isinstance(obj, list):
        for v in obj:
            out |= _values(v)
    elif obj is not None:
        out.add(_norm(obj))
    return out


def _chain_done(chain: Sequence[str], calls: Sequence[LedgerEntry]) -> bool:
    """The chain's tools appear in order among successful calls (other calls may interleave)."""
    it = iter(c.tool for c in calls)
    return all(any(t == tool for t in it) for tool in chain)


class ProgrammaticRubricJudge:
    """Scores each node by a rubric derived from its definition, then averages over nodes.

    Per node: (1) its tool chain was called in order without error on its MCP; (2) every given or
    upstream input value with a known value appears among that MCP's call arguments; (3) a
    state-changing node changed state on its MCP. Once per rollout: (4) the agent ended with a
    reply (not cut off mid-action).
    """

    name = "programmatic"

    def _node_items(self, node: TaskNode, ledger: Sequence[LedgerEntry]) -> dict[str, bool]:
        task = node.task
        ok = [e for e in ledger if e.mcp == task.mcp and not e.is_error]
        items = {
            f"{node.id}: tool chain {'>'.join(task.tool_chain)}": _chain_done(task.tool_chain, ok)
        }
        seen = set().union(*(_values(e.arguments) for e in ok)) if ok else set()
        for inp in node.inputs or task.inputs:
            if inp.source in ("given", "upstream") and inp.value not in (None, "", [], {}):
                wanted = _values(inp.value)
                items[f"{node.id}: uses input {inp.name}"] = bool(wanted) and wanted <= seen
        if task.writes:
            items[f"{node.id}: changes state"] = any(e.mutated for e in ok)
        return items

    async def judge(self, task: TaskGraph, trace: Trace) -> JudgeScore:
        if trace.failed_on_infrastructure:
            return JudgeScore(error=f"trace {trace.id}: rollout did not run ({trace.error})")
        items: dict[str, bool] = {}
        for node in task.nodes:
            items.update(self._node_items(node, trace.ledger))
        last = trace.messages[-1] if trace.messages else None
        items["ended with a reply"] = bool(
            last is not None and last.role == "assistant" and not last.tool_calls and last.content
        )
        score = sum(items.values()) / len(items)
        return JudgeScore(score=score, items=items, reasoning=f"{sum(items.values())}/{len(items)}")


_SYSTEM = (
    "You judge whether an agent completed a business task through tools. Score ONLY from the "
    "evidence given (the transcript and the tool-call ledger) against the rubric. Reply with JSON: "
    '{"score": <number from 0 to 1: share of the rubric satisfied>, "items": {"<rubric item>": '
    'true|false, ...}, "reasoning": "<one or two sentences>"}'
)


def _clip(value: Any, limit: int = 400) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= limit else text[:limit] + "..."


def rubric_of(task: TaskGraph) -> list[str]:
    """The rubric the LLM judge scores against: one item per node intent and its inputs."""
    items = []
    for node_id in task.order or [n.id for n in task.nodes]:
        node = task.node(node_id)
        given = {i.name: i.value for i in node.inputs if i.value is not None}
        extra = f" (inputs: {_clip(given, 200)})" if given else ""
        items.append(f"{node.id}: {node.intent}{extra}")
    return items


def evidence_text(trace: Trace, *, max_messages: int = 60) -> str:
    lines = ["TRANSCRIPT:"]
    for m in trace.messages[-max_messages:]:
        if m.tool_calls:
            calls = "; ".join(
                f"{c.function.name}({_clip(c.function.arguments, 200)})" for c in m.tool_calls
            )
            lines.append(f"[{m.role}] calls {calls}")
        elif m.content:
            lines.append(f"[{m.role}] {_clip(m.content)}")
    lines.append("LEDGER (tool calls as the server recorded them):")
    for e in trace.ledger:
        status = f"error {e.error_kind.value}" if e.error_kind else "ok"
        lines.append(
            f"{e.mcp}#{e.seq} {e.tool}({_clip(e.arguments, 200)}) -> {status}"
            f"{', changed state' if e.mutated else ''}: {_clip(e.result, 200)}"
        )
    return "\n".join(lines)


class LLMRubricJudge:
    """A rubric-guided LLM judge over any LangChain chat model."""

    name = "llm"

    def __init__(self, model: BaseChatModel) -> None:
        self.model = model

    async def judge(self, task: TaskGraph, trace: Trace) -> JudgeScore:
        if trace.failed_on_infrastructure:
            return JudgeScore(error=f"trace {trace.id}: rollout did not run ({trace.error})")
        prompt = (
            f"OBJECTIVE: {task.objective}\nRUBRIC:\n"
            + "\n".join(f"- {item}" for item in rubric_of(task))
            + "\n\n"
            + evidence_text(trace)
        )
        try:
            reply = await self.model.ainvoke([SystemMessage(_SYSTEM), HumanMessage(prompt)])
            payload = reply_payload(reply)
            if not isinstance(payload, dict):
                raise ValueError(f"expected a JSON object, got {type(payload).__name__}")
            return JudgeScore.model_validate(
                {k: payload[k] for k in ("score", "items", "reasoning") if k in payload}
                | ({} if "score" in payload else {"score": None, "error": "no score in reply"})
            )
        except (ValueError, ValidationError) as exc:
            first = str(exc).splitlines()[0]
            return JudgeScore(error=f"trace {trace.id}: judge reply unusable: {first}")
