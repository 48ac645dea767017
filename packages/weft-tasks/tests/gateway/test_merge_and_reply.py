"""Prefix merging and SSE parsing on their own (no server)."""

import json

from weft_core.models import CapturedCall
from weft_tasks.gateway import Reply, SSEParser, mark_merges, merge_calls


def _call(i, prompt, completion):
    return CapturedCall(
        index=i,
        prompt_token_ids=prompt,
        completion_token_ids=completion,
        completion_logprobs=[-0.5] * len(completion) if completion is not None else None,
    )


def test_exact_prefix_merges_and_anything_else_does_not():
    calls = [
        _call(0, [1, 2], [3]),
        _call(1, [1, 2, 3, 9], [4]),  # extends: observation 9 joins with mask 0
        _call(2, [1, 2, 3, 8, 4], [5]),  # history rewritten: a new sequence
        _call(3, None, None),  # no ids: breaks the chain, not a mismatch
        _call(4, [7], [6]),
    ]
    report = merge_calls(calls)
    assert (report.calls, report.calls_with_ids, report.merged, report.mismatches) == (5, 4, 1, 1)
    first, second, third = report.sequences
    assert first.token_ids == [1, 2, 3, 9, 4] and first.loss_mask == [0, 0, 1, 0, 1]
    assert first.logprobs == [None, None, -0.5, None, -0.5] and first.calls == [0, 1]
    assert second.calls == [2] and third.calls == [4]
    assert report.diverged_at == [(2, 3)]
    assert [c.merges_with_previous for c in mark_merges(calls)] == [None, True, False, None, None]


def test_sse_events_split_anywhere_parse_to_the_same_reply():
    events = [
        {"prompt_token_ids": [1, 2], "choices": [{"index": 0, "delta": {"role": "assistant"}}]},
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "c1",
                                "function": {"name": "crm__find", "arguments": '{"a"'},
                            }
                        ]
                    },
                    "token_ids": [5, 6],
                    "logprobs": {
                        "content": [
                            {"token": "token_id:5", "logprob": -0.1},
                            {"token": "token_id:6", "logprob": -0.2},
                        ]
                    },
                }
            ]
        },
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {"tool_calls": [{"index": 0, "function": {"arguments": ": 1}"}}]},
                    "token_ids": [7],
                    "logprobs": {"content": [{"token": "token_id:7", "logprob": -0.3}]},
                    "finish_reason": "tool_calls",
                }
            ]
        },
        {"choices": [], "usage": {"prompt_tokens": 2, "completion_tokens": 3}},
    ]
    raw = (
        b"".join(b"data: " + json.dumps(e).encode() + b"\r\n\r\n" for e in events)
        + b"data: [DONE]\n\n"
    )
    for size in (1, 7, len(raw)):
        reply = Reply()
        parser = SSEParser(reply)
        for i in range(0, len(raw), size):
            parser.feed(raw[i : i + size])
        parser.close()
        message = reply.message()
        assert message.tool_calls[0].function.arguments == '{"a": 1}'
        assert (reply.prompt_token_ids, reply.completion_ids) == ([1, 2], [5, 6, 7])
        assert reply.logprobs == [-0.1, -0.2, -0.3] and reply.finish_reason == "tool_calls"
        assert reply.usage["completion_tokens"] == 3


def test_an_error_event_in_the_stream_is_kept():
    reply = Reply()
    reply.feed_sse_event(json.dumps({"error": {"message": "context length exceeded"}}))
    assert reply.error == "context length exceeded" and reply.message() is None
