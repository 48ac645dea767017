"""Hermes and OpenClaw end to end, each in its native loop: MegaMCP session groups of the sample
composed task (crm + helpdesk, three atomic tasks), the scripted OpenAI-compatible model server
on 127.0.0.1 (it streams, issues real tool calls through the harness's own tool names and returns
token ids) behind the capture gateway. Each rollout's ledger must show the harness's calls, the
server-side verifier must score it, the gateway must have captured every model call with ids, and
the trace must pass the checks `weft verify` runs.

The scripted model plays the reference solution (label: reference), so a pass here measures the
plumbing, not a policy. The harness is installed under `HarnessSettings.home` when missing; the
test is skipped, with the installer's error, only when that install fails.
"""

import time

import pytest

from weft_core.models import ViewMode
from weft_tasks.gateway import CaptureGateway, merge_calls
from weft_tasks.harness.external import (
    HarnessSettings,
    HermesHarness,
    OpenClawHarness,
    install,
    installed,
)
from weft_tasks.harness.mcp_tools import split_tool_name
from weft_tasks.rollout import RolloutSettings, plan_rollouts, run_rollout, trace_ledger_problems
from weft_tasks.testing import ScriptedOpenAIServer, reference_replies

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.asyncio(loop_scope="module")]

ADAPTERS = {"hermes": HermesHarness, "openclaw": OpenClawHarness}
# How each harness spells the crm tool `get_customer_by_email` to its model.
NATIVE_NAME = {
    "hermes": "mcp__crm__get_customer_by_email",
    "openclaw": "crm__get_customer_by_email",
}


def _installed_or_skip(name: str, settings: HarnessSettings) -> None:
    if installed(name, settings.home) is not None:
        return
    try:
        install(name, settings.home)
    except Exception as exc:  # the package cannot be installed here: say why
        pytest.skip(f"{name} cannot be installed: {type(exc).__name__}: {exc}")


@pytest.mark.parametrize("name", ["hermes", "openclaw"])
async def test_harness_runs_the_task_in_its_native_loop(megamcp, name):
    client, graph = megamcp
    settings = HarnessSettings(timeout_s=300)
    _installed_or_skip(name, settings)
    upstream = ScriptedOpenAIServer(reference_replies(graph), model="weft-scripted")
    async with upstream.running() as url:
        gateway = CaptureGateway(url)
        async with gateway.running():
            harness = ADAPTERS[name](gateway, "weft-scripted", settings=settings)
            [plan] = plan_rollouts(
                [graph], [(ViewMode.AGENTIC, "full")], [name], models={name: harness.model_name}
            )
            started = time.perf_counter()
            trace = await run_rollout(
                plan,
                client,
                harness,
                settings=RolloutSettings(max_infra_retries=0),
                gateway=gateway,
            )
            seconds = time.perf_counter() - started

    import os

    if os.environ.get("DBG"):
        for m in trace.messages[1:]:
            print(repr(m)[:1500])
    assert trace.error is None, trace.error
    # the ledger shows the harness's calls: the reference chain of every node, in order
    chain = [(n.task.mcp, c.tool) for n in graph.nodes for c in n.task.reference_calls]
    assert [(e.mcp, e.tool) for e in trace.ledger] == chain
    assert all(e.call_id for e in trace.ledger) and not any(e.is_error for e in trace.ledger)
    # the server-side verifier scored it: every checkpoint and the final checks
    assert trace.final is not None and trace.final.passed
    assert [s.node_id for s in trace.segments] == [n.id for n in graph.nodes]
    assert all(s.outcome is not None and s.outcome.passed for s in trace.segments)
    assert trace.reward == 1.0
    # the transcript is the harness's own: its system prompt, its tool names
    assert trace.messages[0].role == "system" and len(trace.messages[0].content or "") > 1000
    names = [tc.function.name for m in trace.messages for tc in m.tool_calls or []]
    assert NATIVE_NAME[name] in names
    assert all(split_tool_name(n, graph.mcps) for n in names)
    assert trace_ledger_problems(trace.messages, trace.ledger) == []
    # the model saw the task's MCP tools (no MCP resource/prompt utilities) and, for OpenClaw,
    # its own session tools; no shell, file or memory tools
    offered = {t["function"]["name"] for t in trace.tools}
    mcp_tools = {n for n in offered if split_tool_name(n, graph.mcps)}
    assert NATIVE_NAME[name] in mcp_tools
    assert not any(n.endswith(("prompts_list", "resources_list")) for n in offered)
    assert offered - mcp_tools <= {"gateway", "session_status"}
    # the gateway captured every model call, with token ids, tied to the transcript
    calls = trace.captured_calls
    assert len(calls) == len(upstream.requests) == len(chain) + 1
    assert all(c.has_token_ids and c.completion_logprobs for c in calls)
    assert all(c.stream for c in calls)  # both harnesses stream
    assert all(c.message_index is not None for c in calls)
    assert [c.finish_reason for c in calls] == ["tool_calls"] * len(chain) + ["stop"]
    for c in calls:
        assert trace.messages[c.message_index].role == "assistant"
    report = merge_calls(calls)
    assert report.calls_with_ids == len(calls)
    assert report.merged + report.mismatches == len(calls) - 1
    print(
        f"\n{name}: {len(calls)} calls captured, {report.mismatches} merge mismatch(es), "
        f"{report.merged} merged, {seconds:.1f}s"
    )
    for index, at in report.diverged_at:
        prompt = bytes(
            t for t in calls[index].prompt_token_ids[max(0, at - 60) : at + 60] if t < 256
        )
        print(f"  call {index} diverges at token {at}: ...{prompt.decode(errors='replace')!r}...")


@pytest.mark.parametrize("name", ["hermes", "openclaw"])
async def test_an_unreachable_model_is_an_infrastructure_failure(megamcp, name):
    """Hermes exits 0 and OpenClaw times out when the model is down; both must come back as an
    infrastructure failure (retried, excluded from policy statistics), not as a policy's trace."""
    client, graph = megamcp
    settings = HarnessSettings(timeout_s=120)
    _installed_or_skip(name, settings)
    gateway = CaptureGateway("http://127.0.0.1:9/v1")  # nothing listens on port 9
    async with gateway.running():
        harness = ADAPTERS[name](gateway, "weft-scripted", settings=settings)
        [plan] = plan_rollouts([graph], [(ViewMode.AGENTIC, "full")], [name])
        trace = await run_rollout(
            plan, client, harness, settings=RolloutSettings(max_infra_retries=0), gateway=gateway
        )
    assert trace.failed_on_infrastructure and trace.error is not None
    assert "HarnessInfrastructureError" in trace.error
    assert trace.ledger == [] and trace.final is None
