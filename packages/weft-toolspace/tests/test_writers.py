from __future__ import annotations

import pytest

from weft_core.testing import ScriptedChatModel
from weft_toolspace.writers import (
    Goal,
    LLMTaskWriter,
    ProgrammaticTaskWriter,
    TaskTextRejected,
)

GOALS = [
    Goal(
        text="the file 'lantern.txt' contains \"Notes about Ada\"",
        required=["lantern.txt", "Notes about Ada"],
    ),
    Goal(text='the knowledge graph has an entity "Ada Lovelace"', required=["Ada Lovelace"]),
]
TOOLS = ["write_file", "create_entities", "read_graph"]


def test_programmatic_text_has_every_value_no_tool_and_no_order() -> None:
    text = ProgrammaticTaskWriter().write(GOALS, TOOLS)
    assert "lantern.txt" in text and "Ada Lovelace" in text
    assert "write_file" not in text and "then" not in text
    # goals are listed sorted, not in call order
    assert text.index("the file") < text.index("the knowledge")


def test_llm_writer_accepts_a_good_reply_and_catches_wrong_ones() -> None:
    good = (
        "Please make sure Ada Lovelace is recorded in the knowledge graph and that lantern.txt "
        'holds the line "Notes about Ada".'
    )
    model = ScriptedChatModel(
        [
            good,
            'Call write_file on lantern.txt with "Notes about Ada" and add Ada Lovelace.',
            'First add Ada Lovelace, then write "Notes about Ada" to lantern.txt.',
            "Write the notes file and remember Ada Lovelace.",
            "   ",
        ]
    )
    writer = LLMTaskWriter(model)
    assert writer.write(GOALS, TOOLS) == good
    with pytest.raises(TaskTextRejected, match="names the tool 'write_file'"):
        writer.write(GOALS, TOOLS)
    with pytest.raises(TaskTextRejected, match="orders the work"):
        writer.write(GOALS, TOOLS)
    with pytest.raises(TaskTextRejected, match=r"drops the required value 'lantern\.txt'"):
        writer.write(GOALS, TOOLS)
    with pytest.raises(TaskTextRejected, match="empty"):
        writer.write(GOALS, TOOLS)
    model.assert_exhausted()
    assert "write_file" in str(model.prompts[0])  # the model is told what not to name


def test_tool_name_with_spaces_is_caught() -> None:
    with pytest.raises(TaskTextRejected, match="read_graph"):
        LLMTaskWriter(
            ScriptedChatModel(["Read graph for Ada Lovelace, lantern.txt, Notes about Ada"])
        ).write(GOALS, TOOLS)
