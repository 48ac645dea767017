from weft_core.models import ErrorKind, LedgerEntry
from weft_train.rl.credit import (
    AssistantMessage,
    CreditFlag,
    ParsedCall,
    flag_segment,
    interface_violation,
    mask_advantage,
)

TOOLS = {
    "find_customer": {
        "type": "object",
        "properties": {"email": {"type": "string"}},
        "required": ["email"],
    },
    "update_status": {
        "type": "object",
        "properties": {"id": {"type": "integer"}, "status": {"type": "string"}},
        "required": ["id", "status"],
        "additionalProperties": False,
    },
}


def entry(
    seq: int, tool: str, *, mutated: bool = False, kind: ErrorKind | None = None
) -> LedgerEntry:
    return LedgerEntry(
        seq=seq,
        session_id="s",
        mcp="crm",
        tool=tool,
        mutated=mutated,
        error_kind=kind,
        is_error=kind is not None,
    )


def call(name: str, args: object, seq: int = 0, **kw: object) -> ParsedCall:
    return ParsedCall(name, args, entry(seq, name, **kw))  # type: ignore[arg-type]


def msg(text: str = "", *calls: ParsedCall, errors: tuple[str, ...] = ()) -> AssistantMessage:
    return AssistantMessage(text=text, calls=calls, parse_errors=errors)


def flags_of(*messages: AssistantMessage) -> list[frozenset[CreditFlag]]:
    return flag_segment(messages, TOOLS).flags


def test_clean_segment_is_not_flagged() -> None:
    segment = [
        msg("<think>look up first</think>", call("find_customer", {"email": "a@b.c"}, 0)),
        msg("", call("update_status", {"id": 3, "status": "vip"}, 1, mutated=True)),
        msg("Done: customer 3 is now vip."),
    ]
    assert flags_of(*segment) == [frozenset()] * 3


def test_malformed_tool_call_markup_is_flagged() -> None:
    assert flags_of(msg("<tool_call>{bad json", errors=("tool call 1: not JSON",)))[0] == {
        CreditFlag.MALFORMED_TOOL_CALL
    }


def test_malformed_reasoning_structure_is_flagged() -> None:
    for text in (
        "<think>never closed",
        "</think>closed before opened<think>",
        "<think>a</think><think>b</think>",
        "<think>plan <tool_call>{}</tool_call></think>",
    ):
        assert CreditFlag.MALFORMED_REASONING in flags_of(msg(text))[0], text


def test_interface_violations_are_flagged() -> None:
    bad = [
        call("drop_table", {}),  # not offered
        call("find_customer", ["a@b.c"]),  # not an object
        call("find_customer", {}),  # missing required
        call("update_status", {"id": 3, "status": "x", "force": True}),  # unknown argument
        call("update_status", {"id": "3", "status": "x"}),  # wrong type
        call("find_customer", {"email": "a@b.c"}, kind=ErrorKind.INVALID_ARGUMENTS),
    ]
    for c in bad:
        assert interface_violation(c, TOOLS), c
        assert flags_of(msg("", c))[0] == {CreditFlag.INTERFACE_VIOLATION}, c
    # A tool error is the world answering, not an interface violation.
    ok = call("find_customer", {"email": "x@y.z"}, kind=ErrorKind.TOOL_ERROR)
    assert interface_violation(ok, TOOLS) is None


def test_repeat_without_progress_flags_only_the_repeating_message() -> None:
    first = msg("", call("find_customer", {"email": "a@b.c"}, 0))
    again = msg("", call("find_customer", {"email": "a@b.c"}, 1))
    assert flags_of(first, again) == [frozenset(), {CreditFlag.NO_PROGRESS_REPEAT}]


def test_repeat_after_a_state_change_is_progress() -> None:
    segment = [
        msg("", call("find_customer", {"email": "a@b.c"}, 0)),
        msg("", call("update_status", {"id": 3, "status": "vip"}, 1, mutated=True)),
        msg("", call("find_customer", {"email": "a@b.c"}, 2)),
    ]
    assert flags_of(*segment) == [frozenset()] * 3


def test_excessive_within_turn_repetition_is_flagged() -> None:
    looping = " ".join(["I will check the customer now."] * 8)
    assert CreditFlag.EXCESSIVE_REPETITION in flags_of(msg(looping))[0]
    lines = "\n".join(["Checking..."] * 3)
    assert CreditFlag.EXCESSIVE_REPETITION in flags_of(msg(lines))[0]
    twice = msg(
        "", call("find_customer", {"email": "a@b.c"}), call("find_customer", {"email": "a@b.c"})
    )
    assert CreditFlag.EXCESSIVE_REPETITION in flags_of(twice)[0]
    varied = "Customer 3 has two open tickets; the older one is about billing and the newer about a late delivery of order 17."
    assert flags_of(msg(varied))[0] == frozenset()


def test_mask_removes_only_positive_credit() -> None:
    assert mask_advantage(0.8, True) == 0.0
    assert mask_advantage(-0.8, True) == -0.8
    assert mask_advantage(0.8, False) == 0.8
