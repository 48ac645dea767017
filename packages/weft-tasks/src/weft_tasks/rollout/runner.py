"""The rollout runner (paper §3.1.3): many concurrent rollouts, each in its own MegaMCP session
group created from the task's initial snapshots with the task's checks as the group's verifier.

In SimUser mode a reply that asks the user something (a value, a confirmation) is answered by
the simulated user and the turn goes on; a reply that asks nothing, or a question after the
persona's patience ran out, ends the turn. After every atomic-task turn the runner asks MegaMCP for that node's checkpoint outcome (the
verifier runs server-side, where the agent cannot reach it); after the episode it freezes the
group, runs the final verification, fetches the ledger and builds one `Trace`: messages in OpenAI
format, each tool call tied to its ledger entry, per-turn segments with outcomes. Infrastructure
failures restart the rollout in a fresh group (counted in `infrastructure_retries`, never as a
policy failure); a rollout that still cannot run is recorded with an infrastructure
`TraceFailure` and excluded from policy statistics.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel

from weft_core.models import (
    CapturedCall,
    ChatMessage,
    EvaluationResult,
    FailureKind,
    TaskGraph,
    Trace,
    TraceFailure,
    TurnSegment,
    ViewMode,
)
from weft_core.state import CheckpointDiff
from weft_megamcp.models import VerificationResult
from weft_megamcp.service import GroupService
from weft_tasks.gateway import CaptureGateway, mark_merges, tie_calls
from weft_tasks.harness.protocol import Harness, HarnessTask, MCPEndpoint
from weft_tasks.rollout.agentic import replay_checkpoints, verifier_failure
from weft_tasks.rollout.infra import infrastructure_entries, is_infrastructure_error
from weft_tasks.rollout.ledger_match import match_ledger
from weft_tasks.rollout.plan import RolloutPlan
from weft_tasks.rollout.settings import RolloutSettings
from weft_tasks.rollout.sink import TraceSink
from weft_tasks.views import (
    LLMAnswerer,
    LLMRequestWriter,
    ProgrammaticAnswerer,
    ProgrammaticRequestWriter,
    SimUser,
    build_view,
    disclosure_order,
    persona_of,
)

log = logging.getLogger(__name__)


class _InfrastructureInLedger(Exception):
    """The ledger shows a crash or timeout of MegaMCP, not of the policy."""


def evaluation_of(result: VerificationResult) -> tuple[EvaluationResult | None, str | None]:
    """(outcome, None) from a MegaMCP verification result, or (None, why it has none)."""
    if result.error:
        return None, result.error
    return EvaluationResult(outcomes=list(result.outcomes)), None


def _rollout_scoped(entry: Any, rollout_id: str) -> Any:
    """A ledger entry as a trace keeps it: the host's group and session ids are handles of one
    run (random, like tokens), so the trace names the rollout and the MCP instead and the same
    episode gives the same trace."""
    return entry.model_copy(
        update={"group_id": rollout_id, "session_id": f"{rollout_id}/{entry.mcp}"}
    )


def _last_reply(transcript: list[ChatMessage]) -> str | None:
    """The agent's reply that ended the step (what the simulated user reads), if any."""
    last = transcript[-1] if transcript else None
    if last is None or last.role != "assistant" or last.tool_calls:
        return None
    return last.content


@dataclass
class _Turn:
    node_ids: list[str]
    start: int
    end: int
    outcomes: dict[str, EvaluationResult | None] = field(default_factory=dict)
    diffs: dict[str, CheckpointDiff | None] = field(default_factory=dict)


async def _attempt(
    plan: RolloutPlan,
    service: GroupService,
    harness: Harness,
    simulator_model: BaseChatModel | None,
    gateway: CaptureGateway | None = None,
) -> tuple[Trace, list[TraceFailure]]:
    graph = plan.task
    if gateway is not None:
        gateway.discard(plan.rollout_id)  # calls of a failed earlier attempt
    seed = f"{plan.rollout_id}:{plan.sample}"
    view = build_view(graph, plan.mode, plan.disclosure, seed=seed)
    order = disclosure_order(graph)
    sim: SimUser | None = None
    if plan.mode is ViewMode.SIMUSER:
        writer = (
            LLMRequestWriter(simulator_model) if simulator_model else ProgrammaticRequestWriter()
        )
        answerer = LLMAnswerer(simulator_model) if simulator_model else ProgrammaticAnswerer()
        sim = SimUser(graph, plan.disclosure, persona_of(view, graph, seed), writer, answerer)
        first_turn = await sim.next_request()
        assert first_turn is not None  # a graph has at least one node
        first = first_turn.request
    else:
        first = view.brief or ""
    snapshots, workspaces = graph.initial_dbs(), graph.initial_workspaces()
    verifier = graph.verifier()
    handle = await service.create_group(
        mcps=snapshots,
        # A graph with no checks at all has nothing to verify (a host refuses such a verifier).
        verifier=verifier if verifier.has_checks else None,
        task_id=graph.id,
        workspaces=workspaces,
    )
    problems: list[TraceFailure] = []
    turns: list[_Turn] = []
    try:
        endpoints = {
            mcp: MCPEndpoint(mcp=mcp, url=s.url, token=s.token)
            for mcp, s in handle.sessions.items()
        }

        async def on_turn(transcript: list[ChatMessage]) -> str | None:
            if sim is None:
                return None  # agentic: one turn; checkpoints come from the ledger replay
            if len(turns) >= len(sim.turns):
                return None  # a harness that keeps going after the episode ended
            answer = await sim.respond(_last_reply(transcript))
            if answer is not None:
                return answer  # a question mid-turn: answered, the turn goes on unverified
            start = turns[-1].end if turns else 0
            node_id = sim.turns[len(turns)].node_id
            turn = _Turn(node_ids=[node_id], start=start, end=len(transcript))
            result = await service.checkpoint_verify(handle, node_id)
            turn.outcomes[node_id], err = evaluation_of(result)
            turn.diffs[node_id] = result.state_diff
            if err:
                problems.append(verifier_failure(f"checkpoint {node_id}", err))
            turns.append(turn)
            nxt = await sim.next_request()
            return nxt.request if nxt else None

        task = HarnessTask(graph=graph, view=view, first_request=first, rollout_id=plan.rollout_id)
        run = await harness.run(task, endpoints, on_turn)
        if run.stopped:
            problems.append(
                TraceFailure(kind=FailureKind.HARNESS, where="harness", message=run.stopped)
            )
        raw_ledger = await service.ledger(handle)
        entries, matched, ledger_problems = match_ledger(run.messages, raw_ledger)
        entries = [_rollout_scoped(e, plan.rollout_id) for e in entries]
        if infrastructure_entries(entries):
            raise _InfrastructureInLedger(
                ", ".join(
                    f"{e.mcp}#{e.seq} {e.error_kind}" for e in infrastructure_entries(entries)
                )
            )
        agentic_replay = sim is None and len(order) > 1
        reached = {n for t in turns for n in t.outcomes}
        for node_id in [n for n in order if n not in reached and not agentic_replay]:
            # SimUser nodes the harness never reached, and a one-node agentic task, are
            # verified on the state the episode left behind.
            verified = await service.checkpoint_verify(handle, node_id)
            evaluation, err = evaluation_of(verified)
            if err:
                problems.append(verifier_failure(f"checkpoint {node_id}", err))
            start = turns[-1].end if turns else 0
            turns.append(
                _Turn(
                    node_ids=[node_id],
                    start=start,
                    end=len(run.messages),
                    outcomes={node_id: evaluation},
                    diffs={node_id: verified.state_diff},
                )
            )
        await service.freeze(handle)
        final, err = evaluation_of(await service.verify(handle))
        if err:
            problems.append(verifier_failure("final verification", err))
    finally:
        with contextlib.suppress(Exception):
            await service.close(handle)
    if agentic_replay:
        # After the episode's group is closed, so a rollout never holds two groups: under a
        # per-process cap, rollouts each holding one group while waiting for a replay group
        # could starve one another until the placement wait ran out.
        turns = await _agentic_turns(
            service, graph, order, entries, run.messages, snapshots, problems
        )

    problems += [
        TraceFailure(kind=FailureKind.LEDGER, where="ledger", message=p) for p in ledger_problems
    ]
    segments = _segments(graph, turns, run.messages, matched, entries)
    captured: list[CapturedCall] = []
    if gateway is not None:
        await gateway.settle(plan.rollout_id)
        captured = mark_merges(tie_calls(run.messages, gateway.take(plan.rollout_id)))
    trace = Trace(
        id=plan.rollout_id,
        task_id=graph.id,
        task_hash=graph.content_hash or graph.compute_hash(),
        view=f"{plan.mode.value}/{plan.disclosure.value}",
        harness=plan.harness,
        model=run.model,
        reference=run.reference,
        tools=run.tools,
        messages=run.messages,
        model_calls=run.model_calls,
        ledger=entries,
        segments=segments,
        final=final,
        captured_calls=captured,
        failures=problems,
    )
    return trace, problems


async def _agentic_turns(
    service: GroupService,
    graph: TaskGraph,
    order: list[str],
    entries: list[Any],
    messages: list[ChatMessage],
    snapshots: dict[str, str | None],
    problems: list[TraceFailure],
) -> list[_Turn]:
    """One turn per node, split where the ledger replay saw each checkpoint pass."""
    served = sorted(entries, key=lambda e: (e.started_at, e.mcp, e.seq))
    replay = await replay_checkpoints(
        service,
        graph,
        order,
        served,
        snapshots=snapshots,
        verifier=graph.verifier(),
        evaluation=evaluation_of,
    )
    problems += replay.problems
    reply_at = {m.tool_call_id: i for i, m in enumerate(messages) if m.role == "tool"}
    turns: list[_Turn] = []
    start = 0
    for node_id in order:
        at = replay.passed_at.get(node_id)
        end = len(messages)
        if at is not None and served[at].call_id in reply_at:
            end = reply_at[served[at].call_id] + 1
        end = max(end, start)
        turns.append(
            _Turn(
                node_ids=[node_id],
                start=start,
                end=end,
                outcomes={node_id: replay.outcomes.get(node_id)},
                diffs={node_id: replay.diffs.get(node_id)},
            )
        )
        start = end
    if turns:
        turns[-1].end = len(messages)
    return turns


def _segments(
    graph: TaskGraph,
    turns: list[_Turn],
    messages: list[ChatMessage],
    matched: dict[str, tuple[str, int]],
    entries: list[Any],
) -> list[TurnSegment]:
    call_at = {tc.id: i for i, m in enumerate(messages) if m.tool_calls for tc in m.tool_calls}
    segments: list[TurnSegment] = []
    for turn in turns:
        in_turn = [
            (cid, where)
            for cid, where in matched.items()
            if turn.start <= call_at.get(cid, -1) < turn.end
        ]
        for node_id in turn.node_ids:
            node = graph.node(node_id)
            seqs: dict[str, list[int]] = {}
            for _cid, (mcp, seq) in in_turn:
                tool = next((e.tool for e in entries if e.mcp == mcp and e.seq == seq), None)
                # One node per turn owns all its calls; in agentic mode a call belongs to the
                # nodes whose MCP and tool chain it serves.
                if len(turn.node_ids) == 1 or (
                    mcp == node.task.mcp and tool in node.task.tool_chain
                ):
                    seqs.setdefault(mcp, []).append(seq)
            segments.append(
                TurnSegment(
                    node_id=node_id,
                    start=turn.start,
                    end=turn.end,
                    ledger_seqs={k: sorted(v) for k, v in seqs.items()},
                    outcome=turn.outcomes.get(node_id),
                    state_diff=turn.diffs.get(node_id),
                )
            )
    return segments


async def run_rollout(
    plan: RolloutPlan,
    service: GroupService,
    harness: Harness,
    *,
    settings: RolloutSettings | None = None,
    simulator_model: BaseChatModel | None = None,
    gateway: CaptureGateway | None = None,
) -> Trace:
    """One rollout, retried in a fresh group after infrastructure failures. With `gateway`, the
    model calls it captured for this rollout (any harness pointed at it) join the trace."""
    settings = settings or RolloutSettings()
    if plan.mode not in harness.modes:
        why = f"harness {harness.name!r} does not support {plan.mode.value} mode"
        return _failed(plan, harness, TraceFailure(kind=FailureKind.HARNESS, message=why), 0)
    retries = 0
    while True:
        try:
            trace, _ = await _attempt(plan, service, harness, simulator_model, gateway)
            return trace.model_copy(update={"infrastructure_retries": retries})
        except Exception as exc:
            infra = isinstance(exc, _InfrastructureInLedger) or is_infrastructure_error(exc)
            if infra and retries < settings.max_infra_retries:
                retries += 1
                log.warning(
                    "rollout %s: infrastructure failure (%s); retry %d",
                    plan.rollout_id,
                    exc,
                    retries,
                )
                await asyncio.sleep(settings.retry_backoff_s * retries)
                continue
            failure = TraceFailure(
                kind=FailureKind.INFRASTRUCTURE if infra else FailureKind.ROLLOUT,
                message=f"{type(exc).__name__}: {exc}"[:2000],
            )
            return _failed(plan, harness, failure, retries)


def _failed(plan: RolloutPlan, harness: Harness, failure: TraceFailure, retries: int) -> Trace:
    return Trace(
        id=plan.rollout_id,
        task_id=plan.task.id,
        task_hash=plan.task.content_hash or plan.task.compute_hash(),
        view=f"{plan.mode.value}/{plan.disclosure.value}",
        harness=plan.harness,
        model=harness.model_name,
        failures=[failure],
        infrastructure_retries=retries,
    )


@dataclass
class RolloutReport:
    traces: list[Trace]
    skipped: int = 0
    sink_problems: list[str] = field(default_factory=list)


async def run_rollouts(
    plans: Sequence[RolloutPlan],
    service: GroupService,
    harnesses: Mapping[str, Harness],
    *,
    out: Path | None = None,
    settings: RolloutSettings | None = None,
    simulator_model: BaseChatModel | None = None,
    gateway: CaptureGateway | None = None,
) -> RolloutReport:
    """Run `plans` with at most `settings.concurrency` at once. With `out`, each finished trace is
    appended to that JSONL file at once, and plans whose id is already there are skipped (resume).
    Unknown harness names are recorded as failed traces, not raised, so the batch goes on."""
    settings = settings or RolloutSettings()
    sink = TraceSink(out) if out else None
    done: dict[str, Trace] = {}
    problems: list[str] = []
    if sink:
        existing, problems = sink.load()
        done = {t.id: t for t in existing if not t.failed_on_infrastructure}
    todo = [p for p in plans if p.rollout_id not in done]
    sem = asyncio.Semaphore(settings.concurrency)
    results: list[Trace] = [done[p.rollout_id] for p in plans if p.rollout_id in done]

    from weft_tasks.rollout._progress import progress_bar

    with progress_bar(len(todo), "rollouts", enabled=settings.progress) as advance:

        async def one(plan: RolloutPlan) -> None:
            async with sem:
                harness = harnesses.get(plan.harness)
                if harness is None:
                    trace = Trace(
                        id=plan.rollout_id,
                        task_id=plan.task.id,
                        view=plan.view_label,
                        harness=plan.harness,
                        failures=[
                            TraceFailure(
                                kind=FailureKind.HARNESS,
                                message=f"unknown harness {plan.harness!r}",
                            )
                        ],
                    )
                else:
                    trace = await run_rollout(
                        plan,
                        service,
                        harness,
                        settings=settings,
                        simulator_model=simulator_model,
                        gateway=gateway,
                    )
                if sink:
                    sink.append(trace)
                results.append(trace)
                advance()

        await asyncio.gather(*(one(p) for p in todo))
    # Plan order, whatever order the rollouts finished in (concurrency, timing).
    by_id = {t.id: t for t in results}
    ordered = [by_id[p.rollout_id] for p in plans if p.rollout_id in by_id]
    if sink and todo:
        planned = {p.rollout_id for p in plans}
        # lines of other plans in the same file are kept, after this batch
        sink.rewrite(ordered + [t for t in sink.load()[0] if t.id not in planned])
    return RolloutReport(traces=ordered, skipped=len(plans) - len(todo), sink_problems=problems)
