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
