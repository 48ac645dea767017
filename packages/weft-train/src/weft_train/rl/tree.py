"""Atomic-turn rollout trees and trajectory-level rollouts (paper §3.3.2, App. C.1-C.2).

Atomic turn: turns follow the task's stable topological order, one atomic task per turn. At turn
t the frozen policy samples G segments from the same history, each in its own state forked from
the same state; the atomic task's verifier gives each 1 or 0; a uniformly chosen passing segment
(a failed one if none passed) supplies the history and state of turn t+1. Every candidate is a
training sample whose loss covers only its own segment.

Trajectory level (the baseline of App. C.1): G independent trajectories from the initial state,
each through every turn; one reward per trajectory (the mean of its checkpoint outcomes) on all
its turns' tokens. Both share the segment runner below, so they differ only in credit assignment.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from weft_core.models import TaskGraph
from weft_train.policy.generate import SamplingParams, TokenGenerator
from weft_train.rl.credit import AssistantMessage, CreditRules, ParsedCall, flag_segment
from weft_train.rl.environment import TurnEnvironment
from weft_train.rl.samples import ActionSpan, TurnSample
from weft_train.rl.sampling import InfrastructureFailure
from weft_train.rl.template import TurnTemplate


@dataclass(frozen=True)
class TurnTask:
    """A composed task as turns: (checkpoint node id, user request), in stable topological order."""

    task_id: str
    system: str
    turns: tuple[tuple[str, str], ...]

    @classmethod
    def from_graph(cls, graph: TaskGraph, system: str) -> TurnTask:
        """One turn per node in the graph's stable topological order; the node's intent asks."""
        return cls(graph.id, system, tuple((n, graph.node(n).intent) for n in graph.order))


@dataclass(frozen=True)
class TreeSettings:
    group_size: int = 4  # G
    max_messages: int = 3  # assistant messages per segment before it counts as unfinished
    sampling: SamplingParams = field(default_factory=lambda: SamplingParams(max_tokens=128))
    max_infra_retries: int = 2
    credit_rules: CreditRules = field(default_factory=CreditRules)


@dataclass
class Segment:
    """What one candidate did in one turn: ids appended to the history (its own generated ids and
    the observation deltas after them) and where its generated ids are."""

    ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)  # [len(ids)], 0.0 off-action
    spans: list[tuple[int, int]] = field(default_factory=list)  # offsets into ids
    messages: list[AssistantMessage] = field(default_factory=list)
    complete: bool = False
    reward: float = 0.0
    infrastructure_error: str | None = None
    state: Any = None


@dataclass
class TreeRecord:
    """The rollout tree of one task for the App. C.2 reward report: each layer's candidate
    rewards and which candidate continued."""

    task_id: str
    layers: list[list[float]] = field(default_factory=list)
    chosen: list[int] = field(default_factory=list)
    generated_tokens: int = 0

    def leaf_trajectory_rewards(self) -> list[float]:
        """Backtrack each leaf of the final layer to the root: the mean of the leaf's outcome and
        the continued candidates' outcomes above it."""
        if not self.layers:
            return []
        path = [self.layers[t][self.chosen[t]] for t in range(len(self.layers) - 1)]
        return [(sum(path) + leaf) / len(self.layers) for leaf in self.layers[-1]]


@dataclass
class RolloutResult:
    groups: list[list[TurnSample]]  # contiguous groups of G, in turn order
    record: TreeRecord


class SegmentRunner:
    """Runs G candidates of one turn side by side: batched generation across candidates, tool
    calls in each candidate's own state, observations appended as template deltas."""

    def __init__(
        self,
        env: TurnEnvironment,
        generator: TokenGenerator,
        template: TurnTemplate,
        settings: TreeSettings,
    ) -> None:
        self.env = env
        self.generator = generator
        self.template = template
        self.settings = settings

    async def _execute(self, seg: Segment, msg: AssistantMessage) -> AssistantMessage:
        results: list[str] = []
        calls: list[ParsedCall] = []
        for call in msg.calls:
            out = await self.env.call(seg.state, call.name, call.arguments)
            results.append(out.text)
            calls.append(ParsedCall(call.name, call.arguments, out.entry))
        if msg.parse_errors and not msg.calls:
            results.append("Error: the tool call could not be parsed: " + msg.parse_errors[0])
        delta = self.template.observation_delta(results)
        seg.ids += delta
        seg.logprobs += [0.0] * len(delta)
        return AssistantMessage(msg.text, tuple(calls), msg.parse_errors)

    async def run(self, histories: Sequence[list[int]], states: list[Any]) -> list[Segment]:
        """One segment per state; candidate i continues `histories[i]`."""
        segs = [Segment(state=s) for s in states]
        active = list(range(len(segs)))
        for _ in range(self.settings.max_messages):
            if not active:
                break
            gens = await self.generator.generate(
                [histories[i] + segs[i].ids for i in active], self.settings.sampling
            )
            still: list[int] = []

            async def step(i: int, gen: Any) -> bool:
                seg = segs[i]
                start = len(seg.ids)
                seg.ids += gen.token_ids
                seg.logprobs += gen.logprobs
                seg.spans.append((start, len(seg.ids)))
                msg = self.template.parse(gen.token_ids)
                if gen.finish_reason == "length":
                    seg.messages.append(msg)
                    return False  # cut off: incomplete
                if not msg.calls and not msg.parse_errors:
                    seg.messages.append(msg)
                    seg.complete = True
                    return False
                try:
                    seg.messages.append(await self._execute(seg, msg))
                except InfrastructureFailure as exc:
                    seg.messages.append(msg)
                    seg.infrastructure_error = str(exc)
                    return False
                return True

            flags = await asyncio.gather(*(step(i, g) for i, g in zip(active, gens, strict=True)))
            still = [i for i, more in zip(active, flags, strict=True) if more]
            active = still
        return segs

    def flags(self, seg: Segment) -> list[ActionSpan]:
        found = flag_segment(seg.messages, self.env.tools, self.settings.credit_rules)
        return [
            ActionSpan(start, end, flags)
            for (start, end), flags in zip(seg.spans, found.flags, strict=True)
        ]


async def _score(env: TurnEnvironment, seg: Segment, node_id: str) -> None:
    if seg.infrastructure_error:
        return
    try:
        seg.reward = 1.0 if await env.checkpoint(seg.state, node_id) else 0.0
    except InfrastructureFailure as exc:
        seg.infrastructure_error = str(exc)


async def _fork_with_retries(env: TurnEnvironment, state: Any, n: int, retries: int) -> list[Any]:
    for attempt in range(retries + 1):
        try:
            return await env.fork(state, n)
        except InfrastructureFailure:
            if attempt == retries:
                raise
    raise AssertionError("unreachable")


async def _retry_infra(
    runner: SegmentRunner, parent: Any, history: list[int], segs: list[Segment], node_id: str
) -> None:
    """Physical retries: a candidate that hit an infrastructure failure is re-run from a fresh
    fork of the same parent state, never scored as a failure."""
    for _ in range(runner.settings.max_infra_retries):
        bad = [i for i, s in enumerate(segs) if s.infrastructure_error]
        if not bad:
            return
        try:
            fresh = await runner.env.fork(parent, len(bad))
        except InfrastructureFailure:
            continue
        for i in bad:
            await runner.env.release(segs[i].state)
        redo = await runner.run([history] * len(bad), fresh)
        for i, seg in zip(bad, redo, strict=True):
            await _score(runner.env, seg, node_id)
            segs[i] = seg


def _sample(
    runner: SegmentRunner,
    task: TurnTask,
    turn: int,
    g: int,
    node_id: str,
    history: list[int],
    seg: Segment,
) -> TurnSample:
    spans = [
        ActionSpan(len(history) + s.start, len(history) + s.end, s.flags) for s in runner.flags(seg)
    ]
    return TurnSample(
        task_id=task.task_id,
        turn=turn,
        candidate=g,
        token_ids=history + seg.ids,
        spans=spans,
        rollout_logprobs=[0.0] * len(history) + seg.logprobs,
        reward=seg.reward,
        complete=seg.complete,
        node_id=node_id,
        infrastructure_error=seg.infrastructure_error,
    )


async def atomic_turn_rollout(
    task: TurnTask,
    env: TurnEnvironment,
    generator: TokenGenerator,
    template: TurnTemplate,
    settings: TreeSettings,
    rng: random.Random,
) -> RolloutResult:
    """One task's atomic-turn tree: one group of G candidates per turn."""
    runner = SegmentRunner(env, generator, template, settings)
    record = TreeRecord(task.task_id)
    groups: list[list[TurnSample]] = []
    history = template.prompt(task.system, task.turns[0][1])
    state = await env.root()
    try:
        for t, (node_id, request) in enumerate(task.turns):
            if t > 0:
                history = history + template.user_delta(request)
            states = await _fork_with_retries(
                env, state, settings.group_size, settings.max_infra_retries
            )
            segs = await runner.run([history] * len(states), states)
            await asyncio.gather(*(_score(env, s, node_id) for s in segs))
            await _retry_infra(runner, state, history, segs, node_id)
            groups.append(
                [_sample(runner, task, t, g, node_id, history, s) for g, s in enumerate(segs)]
            )
            record.layers.append([s.reward for s in segs])
            record.generated_tokens += sum(e - s for seg in segs for s, e in seg.spans)
            usable = [g for g, s in enumerate(segs) if not s.infrastructure_error]
            if not usable:
                for s in segs:
                    await env.release(s.state)
                break  # the task cannot go on; its groups so far are screened by the caller
            passing = [g for g in usable if segs[g].reward > 0]
            pick = rng.choice(passing or usable)
            record.chosen.append(pick)
            for g, s in enumerate(segs):
                if g != pick:
                    await env.release(s.state)
            await env.release(state)
            state = segs[pick].state
            history = history + segs[pick].ids
    finally:
        await env.release(state)
    return RolloutResult(groups, record)


async def trajectory_rollout(
    task: TurnTask,
    env: TurnEnvironment,
    generator: TokenGenerator,
    template: TurnTemplate,
    settings: TreeSettings,
    rng: random.Random,
) -> RolloutResult:
    """G independent trajectories through every turn; one group, each sample's reward the mean of
    its checkpoint outcomes, its loss over all of its turns' segments."""
    del rng  # no continuation choice: every trajectory continues itself
    runner = SegmentRunner(env, generator, template, settings)
    g_size = settings.group_size
    root = await env.root()
    states = await _fork_with_retries(env, root, g_size, settings.max_infra_retries)
    await env.release(root)
    prompt = template.prompt(task.system, task.turns[0][1])
    ids: list[list[int]] = [list(prompt) for _ in range(g_size)]
    logprobs: list[list[float]] = [[0.0] * len(prompt) for _ in range(g_size)]
    spans: list[list[ActionSpan]] = [[] for _ in range(g_size)]
    outcomes: list[list[float]] = [[] for _ in range(g_size)]
    complete = [True] * g_size
    infra: list[str | None] = [None] * g_size
    record = TreeRecord(task.task_id)
    try:
        for t, (node_id, request) in enumerate(task.turns):
            if t > 0:
                for g in range(g_size):
                    delta = template.user_delta(request)
                    ids[g] += delta
                    logprobs[g] += [0.0] * len(delta)
            flat = await runner.run(ids, states)
            await asyncio.gather(*(_score(env, s, node_id) for s in flat))
            for g, seg in enumerate(flat):
                base = len(ids[g])
                spans[g] += [
                    ActionSpan(base + s.start, base + s.end, s.flags) for s in runner.flags(seg)
                ]
                ids[g] += seg.ids
                logprobs[g] += seg.logprobs
                outcomes[g].append(seg.reward)
                complete[g] = complete[g] and seg.complete
                infra[g] = infra[g] or seg.infrastructure_error
                record.generated_tokens += sum(e - s for s, e in seg.spans)
            record.layers.append([s.reward for s in flat])
    finally:
        for s in states:
            await env.release(s)
    group = [
        TurnSample(
            task_id=task.task_id,
            turn=-1,
            candidate=g,
            token_ids=ids[g],
            spans=spans[g],
            rollout_logprobs=logprobs[g],
            reward=sum(outcomes[g]) / len(outcomes[g]),
            complete=complete[g],
            infrastructure_error=infra[g],
        )
        for g in range(g_size)
    ]
    return RolloutResult([group], record)


def trajectory_rewards(records: Sequence[TreeRecord], *, atomic: bool) -> float:
    """App. C.2's reported reward: per task the mean over its root-to-leaf trajectories (atomic
    trees: backtracked from each final-layer leaf; trajectory level: each trajectory's mean
    checkpoint outcome), then the mean over tasks."""
    per_task: list[float] = []
    for r in records:
        if not r.layers:
            continue
        if atomic:
            leaves = r.leaf_trajectory_rewards()
        else:
            g = len(r.layers[0])
            leaves = [sum(layer[i] for layer in r.layers) / len(r.layers) for i in range(g)]
        per_task.append(sum(leaves) / len(leaves))
    return sum(per_task) / len(per_task) if per_task else 0.0
