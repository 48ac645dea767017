import json

import pytest
from langchain_core.messages import AIMessage

from weft_core.models import Disclosure, FailureKind, ViewMode
from weft_core.testing import tool_call_message
from weft_tasks.harness import ReActHarness, ReferenceChainTeacher
from weft_tasks.rollout import (
    RolloutSettings,
    TraceSink,
    plan_rollouts,
    rollout_stats,
    run_rollout,
    run_rollouts,
    trace_ledger_problems,
)

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

QUIET = RolloutSettings(progress=False, retry_backoff_s=0.0)


def _plan(graph, mode="agentic", disclosure="full", harness="teacher"):
    return plan_rollouts([graph], [(mode, disclosure)], [harness])[0]


def _good_script():
    return [
        tool_call_message("crm_get_customer_by_email", {"email": "ada@example.com"}, id="c1"),
        AIMessage("Ada Lovelace has customer id 1."),
        tool_call_message("crm_update_customer_tier", {"customer_id": 1, "tier": "gold"}, id="c2"),
        AIMessage("Done, she is gold now."),
        tool_call_message(
            "helpdesk_create_ticket",
            {
                "customer_email": "ada@example.com",
                "subject": "Gold tier upgrade",
                "priority": "high",
            },
            id="c3",
        ),
        AIMessage("Ticket 2 is open."),
    ]


def _changes(segment):
    """{mcp: {table: {"ins": keys, "upd": {key: {field: (old, new)}}, "del": keys}}} of a turn."""
    assert segment.state_diff is not None and segment.state_diff.error is None
    out = {}
    for mcp, changes in segment.state_diff.mcps.items():
        for table, diff in changes.db.tables.items():
            out.setdefault(mcp, {})[table] = {
                "ins": sorted(diff.inserts),
                "upd": {
                    k: {f: (c.old, c.new) for f, c in u.changed.items()}
                    for k, u in diff.updates.items()
                },
                "del": sorted(diff.deletes),
            }
    return out


@pytest.mark.parametrize("mode", ["agentic", "simuser"])
async def test_teacher_rollout_passes_every_checkpoint_and_agrees_with_its_ledger(megamcp, mode):
    client, graph = megamcp
    trace = await run_rollout(
        _plan(graph, mode, "partial"), client, ReferenceChainTeacher(), settings=QUIET
    )
    assert trace.error is None, trace.error
    assert [s.node_id for s in trace.segments] == ["n1", "n2", "n3"]
    assert all(s.outcome is not None and s.outcome.passed for s in trace.segments), trace.segments
    assert trace.final is not None and trace.final.passed
    assert trace.reward == 1.0
    assert len(trace.ledger) == 3 and all(e.call_id for e in trace.ledger)
    assert trace_ledger_problems(trace.messages, trace.ledger) == []
    # Each turn's state diff (MegaMCP's, since the previous checkpoint) is what its calls did:
    # the lookup changed nothing, the upgrade one cell, the ticket one new row.
    assert [s.state_diff.since for s in trace.segments] == ["initial", "n1", "n2"]
    n1, n2, n3 = (_changes(s) for s in trace.segments)
    assert n1 == {}
    assert n2 == {
        "crm": {"customer": {"ins": [], "upd": {"1": {"tier": ("silver", "gold")}}, "del": []}}
    }
    ticket = trace.segments[2].state_diff.mcps["helpdesk"].db.tables["ticket"]
    assert n3 == {"helpdesk": {"ticket": {"ins": ["2"], "upd": {}, "del": []}}}
    assert ticket.inserts["2"]["customer_email"] == "ada@example.com"
    assert ticket.inserts["2"]["status"] == "open"
    if mode == "simuser":
        # one turn per node, each segment holds exactly its own call
        assert [s.ledger_seqs for s in trace.segments] == [
            {"crm": [0]},
            {"crm": [1]},
            {"helpdesk": [0]},
        ]
        assert trace.segments[0].end == trace.segments[1].start


async def test_react_scripted_model_completes_the_composed_task_through_megamcp(megamcp, scripted):
    client, graph = megamcp
    harness = ReActHarness(scripted(_good_script()))
    trace = await run_rollout(
        _plan(graph, "simuser", "vague", "react"), client, harness, settings=QUIET
    )
    assert trace.error is None, trace.error
    assert [s.outcome.passed for s in trace.segments] == [True, True, True]
    assert trace.final.passed
    assert trace.model == "ScriptedChatModel"
    assert trace_ledger_problems(trace.messages, trace.ledger) == []
    calls = [tc for m in trace.messages if m.tool_calls for tc in m.tool_calls]
    assert [e.call_id for e in trace.ledger] == [c.id for c in calls]
    # OpenAI format: assistant tool_calls carry JSON-encoded arguments, tool replies name the call
    assert json.loads(calls[1].function.arguments) == {"customer_id": 1, "tier": "gold"}
    assert any(m.role == "tool" and m.tool_call_id == "c2" for m in trace.messages)


async def test_a_scripted_wrong_action_fails_its_checkpoint(megamcp, scripted):
    client, graph = megamcp
    script = _good_script()
    # The policy upgrades the wrong customer (Alan, id 2): the tier checkpoint must fail.
    script[2] = tool_call_message(
        "crm_update_customer_tier", {"customer_id": 2, "tier": "gold"}, id="c2"
    )
    trace = await run_rollout(
        _plan(graph, "simuser", "full", "react"),
        client,
        ReActHarness(scripted(script)),
        settings=QUIET,
    )
    passed = {s.node_id: s.outcome.passed for s in trace.segments}
    assert passed == {"n1": True, "n2": False, "n3": True}
    failing = [o for o in trace.segments[1].outcome.outcomes if not o.passed]
    assert {o.check_id for o in failing} >= {"n2.tier"}
    # The turn's diff shows what the policy really did: Alan upgraded, Ada untouched.
    assert _changes(trace.segments[1]) == {
        "crm": {"customer": {"ins": [], "upd": {"2": {"tier": ("bronze", "gold")}}, "del": []}}
    }
    assert not trace.final.passed
    assert trace.reward == pytest.approx(2 / 3)
    assert trace.error is None and trace.infrastructure_retries == 0
    assert trace_ledger_problems(trace.messages, trace.ledger) == []


async def test_tool_errors_are_the_policys_and_are_counted(megamcp, scripted):
    client, graph = megamcp
    script = [
        tool_call_message(
            "crm_update_customer_tier", {"customer_id": 1, "tier": "platinum"}, id="c0"
        ),
        *_good_script(),
    ]
    trace = await run_rollout(
        _plan(graph, "simuser", "full", "react"),
        client,
        ReActHarness(scripted(script)),
        settings=QUIET,
    )
    assert trace.ledger[0].is_error and trace.ledger[0].call_id == "c0"
    assert trace.infrastructure_retries == 0
    stats = rollout_stats([trace])[0]
    assert stats.tool_calls == 4 and stats.tool_errors == 1


class _DeadEndpointsOnce:
    """The real MegaMCP client, except that the first group's session URLs point at a closed
    port: the harness meets a real connection failure (an infrastructure fault)."""

    def __init__(self, client):
        self.client = client
        self.broken = 0

    def __getattr__(self, name):
        return getattr(self.client, name)

    async def create_group(self, **kwargs):
        handle = await self.client.create_group(**kwargs)
        if self.broken == 0:
            self.broken += 1
            for s in handle.sessions.values():
                s.url = "http://127.0.0.1:9/mcp"
        return handle


async def test_infrastructure_failures_are_retried_not_counted_as_policy_failures(megamcp):
    client, graph = megamcp
    flaky = _DeadEndpointsOnce(client)
    trace = await run_rollout(_plan(graph), flaky, ReferenceChainTeacher(), settings=QUIET)
    assert trace.infrastructure_retries == 1
    assert trace.error is None and trace.final.passed

    always_dead = _DeadEndpointsOnce(client)
    always_dead.broken = 0

    async def dead_group(**kwargs):
        handle = await client.create_group(**kwargs)
        for s in handle.sessions.values():
            s.url = "http://127.0.0.1:9/mcp"
        return handle

    always_dead.create_group = dead_group
    settings = QUIET.model_copy(update={"max_infra_retries": 1})
    failed = await run_rollout(
        _plan(graph), always_dead, ReferenceChainTeacher(), settings=settings
    )
    assert failed.failed_on_infrastructure
    assert [f.kind for f in failed.failures] == [FailureKind.INFRASTRUCTURE]
    stats = rollout_stats([failed])[0]
    assert stats.infrastructure_failed == 1 and stats.checkpoints == 0 and stats.tasks_passed == 0


async def test_batch_runs_concurrently_appends_jsonl_and_resumes(megamcp, tmp_path):
    client, graph = megamcp
    plans = plan_rollouts(
        [graph],
        [("agentic", "full"), ("simuser", "vague"), ("simuser", "partial")],
        ["teacher", "nope"],
    )
    out = tmp_path / "traces.jsonl"
    harnesses = {"teacher": ReferenceChainTeacher()}
    settings = QUIET.model_copy(update={"concurrency": 3})
    report = await run_rollouts(plans, client, harnesses, out=out, settings=settings)
    assert len(report.traces) == 6 and report.skipped == 0
    traces, problems = TraceSink(out).load()
    assert problems == [] and len(traces) == 6
    ok = [t for t in traces if t.harness == "teacher"]
    assert all(t.final.passed for t in ok)
    assert all("unknown harness" in t.error for t in traces if t.harness == "nope")
    for t in ok:
        assert trace_ledger_problems(t.messages, t.ledger) == []
    # A torn last line (crash mid-write) is skipped and the next append starts a fresh line.
    with out.open("a") as fh:
        fh.write('{"id": "torn')
    again = await run_rollouts(plans, client, harnesses, out=out, settings=settings)
    assert again.skipped == 6 and len(again.traces) == 6
    assert len(again.sink_problems) == 1
    cells = {(c.view, c.harness): c for c in rollout_stats(again.traces)}
    assert cells[("simuser/vague", "teacher")].checkpoint_pass_rate == 1.0
    assert ViewMode.SIMUSER and Disclosure.VAGUE  # enums round-trip through the plans


@pytest.mark.slow  # a fresh Python process importing fastmcp: ~5-10 s here
async def test_external_subprocess_harness_rollout_is_verified_and_tied_to_the_ledger(megamcp):
    import sys
    from pathlib import Path

    from weft_tasks.harness import SubprocessHarness

    client, graph = megamcp
    script = Path(__file__).parents[1] / "harness" / "data" / "external_agent.py"
    harness = SubprocessHarness("external", [sys.executable, str(script)])
    trace = await run_rollout(_plan(graph, harness="external"), client, harness, settings=QUIET)
    assert trace.error is None, trace.error
    assert trace.final.passed and trace.model == "external-stand-in"
    assert [e.call_id for e in trace.ledger] == ["x0", "x1", "x2"]
    assert trace_ledger_problems(trace.messages, trace.ledger) == []
    # SimUser mode is refused for an agentic-only harness, without touching MegaMCP.
    refused = await run_rollout(
        _plan(graph, "simuser", harness="external"), client, harness, settings=QUIET
    )
    assert "does not support simuser" in refused.error


@pytest.mark.parametrize(("mode", "disclosure"), [("agentic", "vague"), ("simuser", "partial")])
async def test_react_with_the_reference_policy_passes_without_any_llm(megamcp, mode, disclosure):
    from weft_tasks.harness import reference_policy

    client, graph = megamcp
    harness = ReActHarness(reference_policy)
    trace = await run_rollout(
        _plan(graph, mode, disclosure, "react"), client, harness, settings=QUIET
    )
    assert trace.error is None, trace.error
    assert trace.model == "reference-policy"
    assert all(s.outcome.passed for s in trace.segments) and trace.final.passed
    assert trace_ledger_problems(trace.messages, trace.ledger) == []
    assert trace.messages[0].role == "system"


async def test_a_task_on_an_unregistered_mcp_fails_alone_and_the_batch_goes_on(megamcp, tmp_path):
    client, graph = megamcp
    bad_node = graph.nodes[2].model_copy(
        update={"task": graph.nodes[2].task.model_copy(update={"mcp": "no_such_mcp"})}
    )
    bad = graph.model_copy(
        update={"id": "broken", "nodes": [*graph.nodes[:2], bad_node], "content_hash": None}
    ).sealed()
    plans = plan_rollouts([bad, graph], [("agentic", "full")], ["teacher"])
    report = await run_rollouts(
        plans,
        client,
        {"teacher": ReferenceChainTeacher()},
        out=tmp_path / "t.jsonl",
        settings=QUIET,
    )
    by_task = {t.task_id: t for t in report.traces}
    assert "no_such_mcp" in by_task["broken"].error
    assert not by_task["broken"].failed_on_infrastructure  # an input error, not retried
    assert by_task["broken"].failures[0].kind is FailureKind.ROLLOUT
    assert by_task["broken"].infrastructure_retries == 0
    assert by_task[graph.id].error is None and by_task[graph.id].final.passed


def _undo_graph(graph):
    """n1 upgrades Ada to gold, n2 (state-dependent) moves her back to silver: n1's checkpoint
    holds only between the two, never on the final state."""
    from weft_core.models import EdgeKind, FieldEquals, TaskEdge

    up = graph.node("n2")
    down_task = up.task.model_copy(
        update={
            "id": "crm.downgrade",
            "intent": "Move the customer back to the silver tier",
            "reference_calls": [
                up.task.reference_calls[0].model_copy(
                    update={"arguments": {"customer_id": "{{customer_id}}", "tier": "silver"}}
                )
            ],
        }
    )
    n1 = up.model_copy(
        update={
            "id": "n1",
            "inputs": [
                i.model_copy(update={"source": "given", "value": 1, "from_node": None})
                if i.name == "customer_id"
                else i
                for i in up.inputs
            ],
        }
    )
    n1 = n1.model_copy(update={"task": n1.task.model_copy(update={"inputs": n1.inputs})})
    n2 = up.model_copy(
        update={
            "id": "n2",
            "task": down_task.model_copy(update={"inputs": n1.inputs}),
            "intent": down_task.intent,
            "inputs": n1.inputs,
            "checks": [
                FieldEquals(
                    id="n2.tier",
                    mcp="crm",
                    table="customer",
                    where={"id": 1},
                    field="tier",
                    value="silver",
                )
            ],
        }
    )
    return graph.model_copy(
        update={
            "id": "undo",
            "nodes": [n1, n2],
            "order": ["n1", "n2"],
            "edges": [TaskEdge(source="n1", target="n2", kind=EdgeKind.STATE)],
            "final_checks": [],
            "content_hash": None,
        }
    ).sealed()


@pytest.mark.parametrize("harness_name", ["teacher", "react"])
async def test_agentic_checkpoints_come_from_a_ledger_replay_in_megamcp(megamcp, harness_name):
    from weft_tasks.harness import reference_policy

    client, graph = megamcp
    undo = _undo_graph(graph)
    harness = (
        ReferenceChainTeacher() if harness_name == "teacher" else ReActHarness(reference_policy)
    )
    trace = await run_rollout(
        _plan(undo, "agentic", "full", harness_name), client, harness, settings=QUIET
    )
    assert trace.error is None, trace.error
    # On the final state n1's check (tier gold) is false; the replay saw it hold after call 1.
    assert {s.node_id: s.outcome.passed for s in trace.segments} == {"n1": True, "n2": True}
    first, second = trace.segments
    assert first.ledger_seqs == {"crm": [0]} and second.ledger_seqs == {"crm": [1]}
    assert first.start == 0 and first.end == second.start and second.end == len(trace.messages)
    assert trace_ledger_problems(trace.messages, trace.ledger) == []
    # The replay's diffs: n1 upgraded Ada, n2 (since n1) took it back.
    assert _changes(first)["crm"]["customer"]["upd"] == {"1": {"tier": ("silver", "gold")}}
    assert _changes(second)["crm"]["customer"]["upd"] == {"1": {"tier": ("gold", "silver")}}
    assert second.state_diff.since == "n1"


async def test_llm_user_simulator_in_a_rollout_is_validated_and_falls_back(megamcp):
    from weft_core.testing import ScriptedChatModel

    client, graph = megamcp
    simulator = ScriptedChatModel(
        [
            '{"request": "Hi, please find the account of ada@example.com for me."}',
            # turn 2 leaks turn 3 (the ticket) twice: rejected, then the template is used
            '{"request": "Upgrade her to gold and open a high-priority support ticket about the tier upgrade."}',
            '{"request": "Upgrade her to gold, then open a high-priority support ticket about the tier upgrade."}',
            '{"request": "Last thing: open a high-priority ticket for Ada Lovelace (ada@example.com) titled Gold tier upgrade."}',
        ]
    )
    trace = await run_rollout(
        _plan(graph, "simuser", "full"),
        client,
        ReferenceChainTeacher(),
        settings=QUIET,
        simulator_model=simulator,
    )
    users = [m.content for m in trace.messages if m.role == "user"]
    assert users[0] == "Hi, please find the account of ada@example.com for me."
    assert "support ticket" not in users[1] and "gold" in users[1]  # the validated fallback
    assert users[2].startswith("Last thing")
    assert trace.final.passed and trace.error is None
    assert simulator.remaining == 0


async def test_a_host_side_timeout_in_the_ledger_is_retried_in_a_fresh_group(tmp_path, sample_task):
    """A tool call MegaMCP times out is recorded with ErrorKind.TIMEOUT (infrastructure): the
    rollout restarts in a new group and the retry's trace holds no trace of the failed attempt."""
    from weft_core.models import SnapshotRef
    from weft_core.testing import ScriptedChatModel
    from weft_megamcp.client import MegaMCPClient
    from weft_megamcp.host import MegaMCPHost
    from weft_megamcp.settings import MegaMCPSettings
    from weft_tasks.harness import reference_policy

    sample = sample_task

    settings = MegaMCPSettings(data_dir=tmp_path / "mm", call_timeout_s=1.0)
    async with (
        MegaMCPHost.running(settings) as host,
        MegaMCPClient(host.url, host.admin_token) as client,
    ):
        snaps = {}
        for mcp in ("crm", "helpdesk"):
            bundle = sample.build_bundle(mcp, tmp_path / "b")
            await client.register(bundle)
            snaps[mcp] = SnapshotRef(
                mcp=mcp, uri=await client.put_snapshot(mcp, bundle / "seed.sqlite"), sha256=""
            )
        graph = sample.sample_graph(snaps)
        attempts = []

        def policy(task):
            attempts.append(task.rollout_id)
            if len(attempts) == 1:
                return ScriptedChatModel(
                    [
                        tool_call_message(
                            "crm_get_customer_by_email", {"email": "slow@example.com"}, id="s1"
                        ),
                        "The system seems slow.",
                    ]
                )
            return reference_policy(task)

        trace = await run_rollout(
            _plan(graph, "agentic", "full", "react"), client, ReActHarness(policy), settings=QUIET
        )
    assert len(attempts) == 2 and trace.infrastructure_retries == 1
    assert trace.error is None and trace.final.passed
    assert all(e.error_kind is None for e in trace.ledger)
    assert trace_ledger_problems(trace.messages, trace.ledger) == []


async def test_a_one_node_agentic_task_needs_no_replay_group(megamcp):
    client, graph = megamcp
    one = graph.model_copy(
        update={
            "id": "one",
            "nodes": [graph.nodes[0]],
            "edges": [],
            "order": ["n1"],
            "final_checks": [],
            "content_hash": None,
        }
    ).sealed()
    created = []

    class Counting:
        def __getattr__(self, name):
            return getattr(client, name)

        async def create_group(self, **kwargs):
            created.append(kwargs["task_id"])
            return await client.create_group(**kwargs)

    trace = await run_rollout(_plan(one), Counting(), ReferenceChainTeacher(), settings=QUIET)
    assert created == ["one"]
    assert [s.node_id for s in trace.segments] == ["n1"] and trace.segments[0].outcome.passed
    assert trace.segments[0].ledger_seqs == {"crm": [0]}


async def test_an_agentic_rollout_closes_its_group_before_the_replay_group_opens(megamcp):
    # Holding the episode's group while waiting for a replay group let rollouts under a
    # per-process cap each hold one group and wait for another (hold-and-wait).
    client, graph = megamcp
    open_now: set[str] = set()
    most_open = []

    class Tracking:
        def __getattr__(self, name):
            return getattr(client, name)

        async def create_group(self, **kwargs):
            handle = await client.create_group(**kwargs)
            open_now.add(handle.group_id)
            most_open.append(len(open_now))
            return handle

        async def close(self, group):
            open_now.discard(getattr(group, "group_id", group))
            return await client.close(group)

    trace = await run_rollout(
        _plan(graph, "agentic", "full"), Tracking(), ReferenceChainTeacher(), settings=QUIET
    )
    assert trace.error is None, trace.error
    assert len(most_open) == 2  # the episode's group, then the replay's
    assert max(most_open) == 1 and not open_now
    assert all(s.outcome.passed for s in trace.segments)
