"""Prefix-preserving rejection sampling (paper §3.3.1, App. B.1) and its end-to-end baseline.

The teacher solves a task's atomic tasks one turn each, in the SimUser's stable topological order.
After every turn MegaMCP's server-side verifier checks that node's checkpoint. On failure the attempt
is discarded: the session group is restored to the snapshot taken before the turn (state, workspace
and ledger, no replay) and the history goes back to its pre-turn messages, then only that turn is
sampled again, up to `k` extra attempts. Once every turn passed, the kept segments form one
trajectory, and every assistant message in it is a verified teacher output.

End-to-end sampling is the baseline: a whole trajectory is sampled, and any failed checkpoint sends
it back to the initial state for a fresh try, up to `k` extra tries.

Attempts, teacher calls and completion tokens are recorded per turn (`TurnSegment`) and in total.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Sequence
from typing import Any, Literal, Protocol

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from pydantic import BaseModel, Field

from weft_core.llm import TITO_KEY
from weft_core.models import (
    Disclosure,
    EvaluationResult,
    FailureKind,
    SFTRow,
    TaskGraph,
    Trace,
    TraceFailure,
    TurnSegment,
    ViewMode,
)
from weft_core.state import CheckpointDiff
from weft_tasks.harness.mcp_tools import group_client, openai_tool, result_text
from weft_tasks.harness.messages import model_calls, to_chat_messages
from weft_tasks.harness.protocol import MCPEndpoint
from weft_tasks.harness.react import SYSTEM_PROMPT
from weft_tasks.rollout.ledger_match import match_ledger
from weft_tasks.rollout.runner import evaluation_of
from weft_tasks.views import ProgrammaticRequestWriter, SimUser, build_view, persona_of
from weft_train.errors import TrainRuntimeError

Method = Literal["prefix", "end_to_end"]


class SamplingService(Protocol):
    """What sampling needs from MegaMCP (`weft_megamcp.client.MegaMCPClient` has it all).

    Contract: `snapshot` copies the live group's state, workspace and ledger; `restore` puts the
    group back to exactly that copy; `checkpoint_verify` runs one checkpoint's checks server-side on
    the live state without changing it."""

    async def create_group(
        self,
        mcps: dict[str, str | None],
        verifier: Any = None,
        task_id: str | None = None,
        bindings: dict[str, Any] | None = None,
        workspaces: dict[str, str] | None = None,
    ) -> Any: ...

    async def checkpoint_verify(self, group: Any, checkpoint: str) -> Any: ...

    async def snapshot(self, group: Any) -> str: ...

    async def restore(self, group: Any, snapshot_id: str) -> Any: ...

    async def ledger(self, group: Any) -> Any: ...

    async def close(self, group: Any) -> Any: ...


class SamplingConfig(BaseModel):
    method: Method = Field(default="prefix", description="prefix-preserving or end-to-end.")
    k: int = Field(default=2, ge=0, description="Extra attempts per turn (prefix) or per task.")
    max_steps_per_turn: int = Field(default=6, ge=1, description="Teacher calls in one turn.")
    disclosure: Disclosure = Field(default=Disclosure.FULL, description="SimUser disclosure.")
    system_prompt: str = Field(default=SYSTEM_PROMPT, description="The teacher's system prompt.")


class SampledTrajectory(BaseModel):
    """One task's sampling outcome; `trace` holds the kept trajectory (or the last failed one)."""

    task_id: str
    method: Method
    k: int
    accepted: bool
    teacher_calls: int = Field(description="Model calls, discarded attempts included.")
    tokens: int = Field(description="Completion tokens, discarded attempts included.")
    attempts: int = Field(description="Turn samples (prefix) or whole tries (end-to-end).")
    rejected_at: str | None = Field(default=None, description="Node whose turn ran out of tries.")
    trace: Trace

    def sft_row(self) -> SFTRow:
        """The trajectory as an SFT row; only an accepted trajectory is one."""
        if not self.accepted:
            raise ValueError(f"task {self.task_id}: a rejected trajectory is not training data")
        return SFTRow(
            messages=self.trace.messages,
            tools=self.trace.tools,
            task_id=self.task_id,
            trace_id=self.trace.id,
        )


class _Turn(BaseModel):
    messages: list[Any]  # BaseMessage
    calls: int
    tokens: int


def _tokens(message: AIMessage) -> int:
    tito = message.response_metadata.get(TITO_KEY)
    if isinstance(tito, dict) and tito.get("token_ids"):
        return len(tito["token_ids"])
    usage = message.usage_metadata
    return int(usage["output_tokens"]) if usage else 0


async def _run_turn(
    teacher: Any, history: list[BaseMessage], group: Any, max_steps: int, call_no: list[int]
) -> _Turn:
    """The teacher's tool loop for one turn; a tool's failure is an observation, not an error."""
    new: list[BaseMessage] = []
    calls = tokens = 0
    for _ in range(max_steps):
        reply = await teacher.ainvoke([*history, *new])
        if not isinstance(reply, AIMessage):
            raise TrainRuntimeError(f"teacher returned {type(reply).__name__}, not an AIMessage")
        calls += 1
        tokens += _tokens(reply)
        for tc in reply.tool_calls:
            if not tc.get("id"):
                tc["id"] = f"call_{call_no[0]}"
            call_no[0] += 1
        new.append(reply)
        if not reply.tool_calls:
            break
        for tc in reply.tool_calls:
            result = await group.call_tool(tc["name"], tc["args"], raise_on_error=False)
            new.append(
                ToolMessage(
                    content=result_text(result.content),
                    tool_call_id=str(tc["id"]),
                    name=tc["name"],
                    status="error" if result.is_error else "success",
                )
            )
    return _Turn(messages=new, calls=calls, tokens=tokens)


async def sample_trajectory(
    graph: TaskGraph,
    service: SamplingService,
    teacher: BaseChatModel,
    config: SamplingConfig | None = None,
    *,
    seed: int | str = 0,
) -> SampledTrajectory:
    """Sample one trajectory of `graph` with `teacher` by `config.method`."""
    config = config or SamplingConfig()
    handle = await service.create_group(
        mcps=graph.initial_dbs(),
        verifier=graph.verifier(),
        task_id=graph.id,
        workspaces=graph.initial_workspaces(),
    )
    try:
        endpoints = {
            mcp: MCPEndpoint(mcp=mcp, url=s.url, token=s.token)
            for mcp, s in handle.sessions.items()
        }
        group = group_client(endpoints)
        async with group:
            tools = [
                openai_tool(t.name, t.description or "", t.input_schema)
                for t in await group.list_tools()
            ]
            bound = teacher.bind_tools(tools)
            sampler = _Sampler(graph, service, handle, group, bound, config, seed)
            if config.method == "prefix":
                result = await sampler.prefix_preserving()
            else:
                result = await sampler.end_to_end()
            raw = await service.ledger(handle)
    finally:
        # Closing is best effort; MegaMCP reaps an idle group.
        with contextlib.suppress(Exception):
            await service.close(handle)
    history, segments, accepted, rejected_at, calls, tokens, attempts = result
    messages = to_chat_messages(history)
    ledger = {k: list(v) for k, v in raw.items()} if isinstance(raw, dict) else {}
    entries, _, problems = match_ledger(messages, ledger)
    trace = Trace(
        id=f"sft-{config.method}-{graph.id}-{uuid.uuid4().hex[:8]}",
        task_id=graph.id,
        view=f"{ViewMode.SIMUSER.value}/{config.disclosure.value}",
        harness=f"sft-{config.method}",
        model=_name(teacher),
        tools=tools,
        messages=messages,
        ledger=entries,
        segments=segments,
        model_calls=model_calls(history),
        failures=[
            TraceFailure(kind=FailureKind.LEDGER, where="ledger", message=p) for p in problems
        ],
    )
    return SampledTrajectory(
        task_id=graph.id,
        method=config.method,
        k=config.k,
        accepted=accepted and not problems,
        teacher_calls=calls,
        tokens=tokens,
        attempts=attempts,
        rejected_at=rejected_at,
        trace=trace,
    )


_Result = tuple[list[BaseMessage], list[TurnSegment], bool, str | None, int, int, int]


class _Sampler:
    def __init__(
        self,
        graph: TaskGraph,
        service: SamplingService,
        handle: Any,
        group: Any,
        teacher: Any,
        config: SamplingConfig,
        seed: int | str,
    ) -> None:
        self.graph, self.service, self.handle, self.group = graph, service, handle, group
        self.teacher, self.config, self.seed = teacher, config, seed
        self.call_no = [0]

    def _simuser(self) -> SimUser:
        view = build_view(self.graph, ViewMode.SIMUSER, self.config.disclosure, seed=self.seed)
        persona = persona_of(view, self.graph, self.seed)
        return SimUser(self.graph, self.config.disclosure, persona, ProgrammaticRequestWriter())

    async def _verify(self, node_id: str) -> tuple[EvaluationResult | None, CheckpointDiff | None]:
        """The checkpoint's outcome and MegaMCP's state diff of the turn (None from a host
        that does not diff)."""
        result = await self.service.checkpoint_verify(self.handle, node_id)
        outcome, err = evaluation_of(result)
        if err:
            raise TrainRuntimeError(f"task {self.graph.id}: checkpoint {node_id}: {err}")
        return outcome, getattr(result, "state_diff", None)

    async def _turn(self, history: list[BaseMessage]) -> _Turn:
        return await _run_turn(
            self.teacher, history, self.group, self.config.max_steps_per_turn, self.call_no
        )

    async def prefix_preserving(self) -> _Result:
        sim = self._simuser()
        history: list[BaseMessage] = [SystemMessage(self.config.system_prompt)]
        segments: list[TurnSegment] = []
        calls = tokens = samples = 0
        while (turn := await sim.next_request()) is not None:
            history.append(HumanMessage(turn.request))
            start = len(history)
            before = await self.service.snapshot(self.handle)
            seg_calls = seg_tokens = tries = 0
            while True:
                tries += 1
                done = await self._turn(history)
                seg_calls += done.calls
                seg_tokens += done.tokens
                outcome, diff = await self._verify(turn.node_id)
                if outcome is not None and outcome.passed:
                    history += done.messages
                    break
                if tries > self.config.k:
                    history += done.messages  # kept only to show the failure; not accepted
                    break
                # Discard the attempt: state and ledger back to the pre-turn snapshot; the
                # history was never extended with it.
                await self.service.restore(self.handle, before)
            calls, tokens, samples = calls + seg_calls, tokens + seg_tokens, samples + tries
            segments.append(
                TurnSegment(
                    node_id=turn.node_id,
                    start=start - 1,
                    end=len(history),
                    outcome=outcome,
                    attempts=tries,
                    teacher_calls=seg_calls,
                    tokens=seg_tokens,
                    state_diff=diff,
                )
            )
            if outcome is None or not outcome.passed:
                return history, segments, False, turn.node_id, calls, tokens, samples
        return history, segments, True, None, calls, tokens, samples

    async def end_to_end(self) -> _Result:
        initial = await self.service.snapshot(self.handle)
        calls = tokens = 0
        tries = 0
        while True:
            tries += 1
            if tries > 1:
                await self.service.restore(self.handle, initial)
            sim = self._simuser()
            history: list[BaseMessage] = [SystemMessage(self.config.system_prompt)]
            segments: list[TurnSegment] = []
            failed: str | None = None
            while (turn := await sim.next_request()) is not None:
                history.append(HumanMessage(turn.request))
                start = len(history)
                done = await self._turn(history)
                history += done.messages
                calls, tokens = calls + done.calls, tokens + done.tokens
                outcome, diff = await self._verify(turn.node_id)
                segments.append(
                    TurnSegment(
                        node_id=turn.node_id,
                        start=start - 1,
                        end=len(history),
                        outcome=outcome,
                        attempts=1,
                        teacher_calls=done.calls,
                        tokens=done.tokens,
                        state_diff=diff,
                    )
                )
                if outcome is None or not outcome.passed:
                    failed = turn.node_id
                    break
            if failed is None:
                return history, segments, True, None, calls, tokens, tries
            if tries > self.config.k:
                return history, segments, False, failed, calls, tokens, tries


def _name(model: Any) -> str:
    for attr in ("model_name", "model"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            return value
    return type(model).__name__


async def sample_trajectories(
    graphs: Sequence[TaskGraph],
    service: SamplingService,
    teacher: BaseChatModel,
    config: SamplingConfig | None = None,
) -> list[SampledTrajectory]:
    """Sample each task in turn (the teacher is usually one local policy: no parallelism)."""
    return [
        await sample_trajectory(g, service, teacher, config, seed=i) for i, g in enumerate(graphs)
    ]
