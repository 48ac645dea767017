"""CapturedCall on a Trace: JSON round trip under the content hash, strict fields."""

import pytest
from pydantic import ValidationError

from weft_core.models import CapturedCall, ChatMessage, Trace


def test_a_trace_keeps_its_captured_calls_through_json():
    call = CapturedCall(
        index=0,
        request={"model": "m", "stream": True},
        prompt_messages=2,
        message_index=2,
        forced=["return_token_ids"],
        stream=True,
        prompt_token_ids=[1, 2, 3],
        completion_token_ids=[4, 5],
        completion_logprobs=[-0.1, -0.2],
        message=ChatMessage(role="assistant", content="done"),
        finish_reason="stop",
        usage={"prompt_tokens": 3, "completion_tokens": 2},
        latency_s=0.5,
    )
    trace = Trace(id="r", task_id="t", view="agentic/full", harness="hermes", captured_calls=[call])
    again = Trace.from_json(trace.to_json())
    again.verify_hash()
    assert again.captured_calls == [call] and again.captured_calls[0].has_token_ids
    tampered = trace.sealed().model_copy(
        update={"captured_calls": [call.model_copy(update={"completion_token_ids": [9]})]}
    )
    with pytest.raises(Exception, match="content_hash"):
        tampered.verify_hash()
    assert not CapturedCall(index=1).has_token_ids
    with pytest.raises(ValidationError):
        CapturedCall(index=0, prompt_ids=[1])  # unknown field: strict
