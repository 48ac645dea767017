"""The noisy reference policy makes real mistakes and corrects the ones that fail."""

import random

from langchain_core.messages import HumanMessage, ToolMessage

from weft_evolve.testing import NoisyReferencePolicy, wrong_value
from weft_tasks.harness import ReferencePolicyModel


def test_wrong_values_are_plausible_mistakes():
    rng = random.Random(0)
    assert wrong_value("CUS-0001", rng) != "CUS-0001" and wrong_value("CUS-0001", rng).startswith(
        "CUS-000"
    )
    assert wrong_value(3, rng) == 4 and wrong_value(True, rng) is False
    assert wrong_value("shipped", rng) == "shipped (draft)"


def test_always_wrong_policy_perturbs_and_failed_mistakes_are_retried(graph):
    inner = ReferencePolicyModel(graph=graph)
    noisy = NoisyReferencePolicy(inner=inner, rate=1.0, seed="s")
    first = noisy.invoke([HumanMessage("do it")])
    intended = inner.invoke([HumanMessage("do it")])
    assert first.tool_calls and first.tool_calls[0]["id"].endswith("_m")
    assert first.tool_calls[0] != intended.tool_calls[0]
    failed = [
        HumanMessage("do it"),
        first,
        ToolMessage("not_found: x", tool_call_id=first.tool_calls[0]["id"], status="error"),
    ]
    view = NoisyReferencePolicy._without_failed_mistakes(failed)
    assert view == failed[:1]  # the failed mistake is corrected: the intended call comes next
    calm = NoisyReferencePolicy(inner=inner, rate=0.0, seed="s")
    assert calm.invoke(failed).tool_calls[0]["args"] == intended.tool_calls[0]["args"]


def test_noisy_policy_served_over_openai_messages_corrects_its_failed_mistake(graph):
    """The path Hermes / OpenClaw take: OpenAI-format messages in, tool calls out, the mistake
    mark kept through the call-id renumbering and an error result seen as an error."""
    import json

    from weft_core.models import ViewMode
    from weft_tasks.testing import reference_replies

    tools = [
        {"type": "function", "function": {"name": f"mcp__shop__{t}", "parameters": {}}}
        for t in ("get_order", "update_order")
    ]
    inner = ReferencePolicyModel(graph=graph)
    noisy = NoisyReferencePolicy(inner=inner, rate=1.0, seed="s")
    policy = reference_replies(graph, ViewMode.AGENTIC, noisy)
    messages = [{"role": "user", "content": "do it"}]
    first = policy(messages, tools)
    [call] = first["tool_calls"]
    assert call["id"].endswith("_m") and call["function"]["name"].startswith("mcp__shop__")
    intended = ReferencePolicyModel(graph=graph).invoke([HumanMessage("do it")]).tool_calls[0]
    messages += [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call["id"], "content": "not_found: order not found"},
    ]
    calm = reference_replies(
        graph, ViewMode.AGENTIC, NoisyReferencePolicy(inner=inner, rate=0.0, seed="s")
    )
    [retry] = calm(messages, tools)["tool_calls"]
    assert json.loads(retry["function"]["arguments"]) == intended["args"]
    assert retry["function"]["name"].endswith(intended["name"].split("_", 1)[1])
