"""Atomic-turn trees and trajectory-level rollouts on a real MegaMCP host (stockroom module)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from weft_train.policy import Generation, SamplingParams, build_tokenizer
from weft_train.rl.credit import CreditFlag
from weft_train.rl.environment import MegaMCPEnvironment, ToolOutcome
from weft_train.rl.sampling import InfrastructureFailure, screen_group
from weft_train.rl.template import HermesTemplate
from weft_train.rl.tree import (
    TreeRecord,
    TreeSettings,
    atomic_turn_rollout,
    trajectory_rewards,
    trajectory_rollout,
)

from ._stockroom import stockroom, stockroom_tasks

pytestmark = pytest.mark.integration

TOK = build_tokenizer()
TPL = HermesTemplate(TOK)
END = TOK.convert_tokens_to_ids("<|im_end|>")


def ids(text: str) -> list[int]:
    return list(TOK.encode(text, add_special_tokens=False))


class ScriptedPolicy:
    """Stands in for the policy: per prompt, answers the current turn correctly or wrongly as
    `plan(turn, call_index)` says. Each reply is given as raw byte ids (no special-token merge) so
    any retokenization of the history would show."""

    def __init__(self, graph: Any, plan: Any) -> None:
        self.graph, self.plan, self.calls = graph, plan, 0
        self.sampled: list[list[int]] = []

    async def generate(
        self, prompts: Sequence[list[int]], params: SamplingParams
    ) -> list[Generation]:
        out = []
        for p in prompts:
            text = TPL.decode(p)
            turn = text.count("<|im_start|>user\n") - 1
            node = self.graph.order[turn]
            if text.endswith("</tool_response><|im_end|>\n<|im_start|>assistant\n"):
                reply = "Done."
            else:
                call, _ = stockroom_tasks().reference_reply(self.graph, node)
                good = self.plan(turn, self.calls)
                self.calls += 1
                reply = call if good else call.replace('"qty":', '"qty":9', 1)
            # raw bytes: '<tool_call>' spelled out byte by byte, not as its special id
            body = [
                TOK.convert_tokens_to_ids(c)
                for piece, _ in TOK.backend_tokenizer.pre_tokenizer.pre_tokenize_str(reply)
                for c in piece
            ]
            toks = [*body, END]
            self.sampled.append(toks)
            out.append(
                Generation(token_ids=toks, logprobs=[-0.5] * len(toks), finish_reason="stop")
            )
        return out


async def test_atomic_turn_tree(tmp_path: Path) -> None:
    async with stockroom(tmp_path, n=1, turns=2) as (client, graphs):
        graph = graphs[0]
        env = MegaMCPEnvironment(client, graph)
        # turn 0: candidates 0 and 2 right; turn 1: nobody right
        policy = ScriptedPolicy(graph, lambda turn, k: turn == 0 and k % 2 == 0)
        task = stockroom_tasks().turn_task(graph)
        res = await atomic_turn_rollout(
            task, env, policy, TPL, TreeSettings(group_size=4), random.Random(3)
        )
        g0, g1 = res.groups
        assert [s.reward for s in g0] == [1.0, 0.0, 1.0, 0.0]
        assert [s.reward for s in g1] == [0.0] * 4
        assert res.record.layers == [[1.0, 0.0, 1.0, 0.0], [0.0] * 4]
        pick = res.record.chosen[0]
        assert pick in (0, 2)  # a passing segment continues
        # every candidate of turn 1 starts from the chosen segment's exact ids (no retokenization)
        chosen = g0[pick]
        for s in g1:
            assert s.token_ids[: len(chosen.token_ids)] == chosen.token_ids
            assert s.turn == 1 and s.node_id == "n1"
        # the loss of a turn-1 sample covers only its own segment
        assert all(span.start >= len(chosen.token_ids) for s in g1 for span in s.spans)
        # the sampled ids are kept as sampled (byte ids, not the '<tool_call>' special id)
        first = g0[0]
        span = first.spans[0]
        assert first.token_ids[span.start : span.end] == policy.sampled[0]
        assert first.rollout_logprobs[span.start : span.end] == [-0.5] * (span.end - span.start)
        assert all(
            lp == 0.0 for i, lp in enumerate(first.rollout_logprobs) if not first.action_mask()[i]
        )
        assert screen_group(g0) is None and screen_group(g1) is not None  # constant rewards
        # backtracked trajectories: (1 + 0) / 2 for each of the 4 leaves
        assert res.record.leaf_trajectory_rewards() == [0.5] * 4
        # a failed turn-0 candidate's state was not the one continued: turn 1 ran in forks of
        # the chosen state only, and all groups were closed
        assert (await client.stats())["groups"] == 0


async def test_trajectory_level_gives_one_reward_per_trajectory(tmp_path: Path) -> None:
    async with stockroom(tmp_path, n=1, turns=2) as (client, graphs):
        graph = graphs[0]
        env = MegaMCPEnvironment(client, graph)
        # calls are made in trajectory order per turn: turn 0 -> k=0..3, turn 1 -> k=4..7
        policy = ScriptedPolicy(graph, lambda turn, k: k in (0, 1, 4))
        res = await trajectory_rollout(
            stockroom_tasks().turn_task(graph),
            env,
            policy,
            TPL,
            TreeSettings(group_size=4),
            random.Random(0),
        )
        (group,) = res.groups
        assert [s.reward for s in group] == [1.0, 0.5, 0.0, 0.0]
        assert all(len(s.spans) == 4 for s in group)  # call + "Done." in each of 2 turns
        assert trajectory_rewards([res.record], atomic=False) == pytest.approx(0.375)


class FlakyEnv(MegaMCPEnvironment):
    """The real environment with one injected transport failure on the first tool call."""

    failed = False

    async def call(self, state: Any, name: str, arguments: Any) -> ToolOutcome:
        if not self.failed:
            self.failed = True
            raise InfrastructureFailure("injected: connection reset")
        return await super().call(state, name, arguments)


async def test_infrastructure_failure_is_retried_physically_not_scored(tmp_path: Path) -> None:
    async with stockroom(tmp_path, n=1, turns=1) as (client, graphs):
        graph = graphs[0]
        env = FlakyEnv(client, graph)
        policy = ScriptedPolicy(graph, lambda turn, k: True)
        res = await atomic_turn_rollout(
            stockroom_tasks().turn_task(graph),
            env,
            policy,
            TPL,
            TreeSettings(group_size=2),
            random.Random(0),
        )
        assert env.failed
        assert [s.reward for s in res.groups[0]] == [1.0, 1.0]  # never a 0 for the crash
        assert all(s.infrastructure_error is None for s in res.groups[0])


async def test_flags_reach_the_sample_spans(tmp_path: Path) -> None:
    async with stockroom(tmp_path, n=1, turns=1) as (client, graphs):
        graph = graphs[0]
        env = MegaMCPEnvironment(client, graph)

        class Unknown(ScriptedPolicy):
            async def generate(
                self, prompts: Sequence[list[int]], params: SamplingParams
            ) -> list[Generation]:
                toks = [*ids('<tool_call>{"name":"st_drop","arguments":{}}</tool_call>'), END]
                return [
                    Generation(token_ids=toks, logprobs=[-0.1] * len(toks), finish_reason="stop")
                    for _ in prompts
                ]

        res = await atomic_turn_rollout(
            stockroom_tasks().turn_task(graph),
            env,
            Unknown(graph, None),
            TPL,
            TreeSettings(group_size=2, max_messages=2),
            random.Random(0),
        )
        s = res.groups[0][0]
        assert CreditFlag.INTERFACE_VIOLATION in s.spans[0].flags
        assert CreditFlag.NO_PROGRESS_REPEAT in s.spans[1].flags
        assert not s.complete  # never ended its turn within the message budget


def test_leaf_backtracking() -> None:
    rec = TreeRecord("t", layers=[[1, 0], [0, 1], [1, 1]], chosen=[0, 1])
    assert rec.leaf_trajectory_rewards() == pytest.approx([1.0, 1.0])
    rec = TreeRecord("t", layers=[[0, 0], [1, 0]], chosen=[1])
    assert rec.leaf_trajectory_rewards() == pytest.approx([0.5, 0.0])
    assert trajectory_rewards(
        [rec, TreeRecord("u", layers=[[1, 1]], chosen=[])], atomic=True
    ) == pytest.approx(0.625)
