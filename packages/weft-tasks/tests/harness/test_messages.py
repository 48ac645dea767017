"""LangChain -> OpenAI messages keep a token-capturing model's own bytes (TITO)."""

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from weft_core.llm import TITO_KEY
from weft_tasks.harness.messages import model_calls, to_chat_message


def _reply() -> AIMessage:
    return AIMessage(
        "",
        tool_calls=[{"id": "c1", "name": "crm__get", "args": {"email": "a@x", "n": 1}}],
        response_metadata={
            TITO_KEY: {
                "prompt_token_ids": [1, 2, 3],
                "token_ids": [7, 8, 9],
                "logprobs": [-0.1, -0.2, -0.3],
                "text": '<tool_call>\n{"name": "crm__get", "arguments": {"n":1,  "email":"a@x"}}',
                "finish_reason": "tool_calls",
                "arguments": ['{"n":1,  "email":"a@x"}'],
            }
        },
    )


def test_arguments_stay_verbatim_and_ids_are_kept():
    msg = to_chat_message(_reply())
    assert msg.tool_calls is not None
    assert msg.tool_calls[0].function.arguments == '{"n":1,  "email":"a@x"}'
    assert msg.token_ids == [7, 8, 9]
    assert msg.logprobs == [-0.1, -0.2, -0.3]


def test_a_model_without_token_capture_serialises_its_arguments_in_its_order():
    msg = to_chat_message(
        AIMessage("", tool_calls=[{"id": "c", "name": "t", "args": {"b": 1, "a": 2}}])
    )
    assert msg.tool_calls is not None
    assert msg.tool_calls[0].function.arguments == '{"b": 1, "a": 2}'
    assert msg.token_ids is None


def test_model_calls_index_the_replies_in_the_transcript():
    calls = model_calls([SystemMessage("s"), HumanMessage("u"), _reply(), AIMessage("done")])
    assert len(calls) == 1
    assert calls[0].message_index == 2
    assert calls[0].prompt_token_ids == [1, 2, 3]
    assert calls[0].completion_token_ids == [7, 8, 9]
    assert calls[0].finish_reason == "tool_calls"
