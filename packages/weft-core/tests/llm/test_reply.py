import pytest
from langchain_core.messages import AIMessage

from weft_core.llm import reply_payload, reply_text


def test_tool_call_arguments_win_over_text() -> None:
    msg = AIMessage(
        content='{"ignored": true}',
        tool_calls=[{"name": "Answer", "args": {"a": 1}, "id": "c1"}],
    )
    assert reply_payload(msg) == {"a": 1}


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1}',
        'Here it is:\n```json\n{"a": 1}\n```\nHope that helps.',
        '```\n{"a": 1}\n```',
        'Sure! {"a": 1} -- done {"b": 2}',
    ],
)
def test_json_in_text_bare_fenced_or_in_prose(text: str) -> None:
    assert reply_payload(AIMessage(content=text)) == {"a": 1}


def test_a_brace_that_is_not_json_is_skipped() -> None:
    assert reply_payload("use {braces} like [this]: [1, 2]") == [1, 2]


def test_content_blocks_are_joined() -> None:
    msg = AIMessage(content=[{"type": "text", "text": '{"a"'}, {"type": "text", "text": ": 3}"}])
    assert reply_text(msg) == '{"a": 3}'
    assert reply_payload(msg) == {"a": 3}


@pytest.mark.parametrize("text", ["", "no json here", "{not: json", "```json\n```"])
def test_no_json_is_a_value_error_naming_the_reply(text: str) -> None:
    with pytest.raises(ValueError, match="holds no JSON"):
        reply_payload(AIMessage(content=text))
