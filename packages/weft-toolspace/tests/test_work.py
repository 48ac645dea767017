"""What a step works on (`work.work_of`): the node and the values the chain carried into it."""

from __future__ import annotations

from weft_toolspace.work import carried_values, work_of

TICKET = {"ticket": {"ticket_id": "TIC-0003", "customer_id": "CUS-0001", "status": "open"}}
OTHER = {"ticket": {"ticket_id": "TIC-0004", "customer_id": "CUS-0001", "status": "open"}}
UPDATE = "helpdesk/update_ticket(ticket_id)"


def test_the_same_tool_on_the_same_object_is_the_same_work() -> None:
    earlier = [TICKET, {"customer_id": "CUS-0001"}]
    first = work_of(UPDATE, {"ticket_id": "TIC-0003"}, earlier)
    again = work_of(UPDATE, {"ticket_id": "TIC-0003"}, [*earlier, {"ticket": TICKET["ticket"]}])
    assert first == again == (UPDATE, '["\\"TIC-0003\\""]')
    # A new object (another ticket the chain made) is new work for the same tool.
    assert work_of(UPDATE, {"ticket_id": "TIC-0004"}, [*earlier, OTHER]) != first
    # Another tool on the same object is new work too.
    assert work_of("helpdesk/get_ticket(ticket_id)", {"ticket_id": "TIC-0003"}, earlier) != first


def test_an_argument_value_the_chain_did_not_supply_is_not_the_object() -> None:
    """`subject` and `priority` come from the recorded instance; the customer id from the chain."""
    args = {"customer_id": "CUS-0001", "subject": "lantern", "priority": "high"}
    assert carried_values(args, [TICKET]) == ['"CUS-0001"']
    assert carried_values(args, [{"customer": {"customer_id": "CUS-0001"}}]) == ['"CUS-0001"']


def test_a_token_carried_inside_a_string_names_the_object() -> None:
    made = {"query": "CREATE TABLE orbit (id INTEGER PRIMARY KEY, name TEXT)"}
    read = {"query": "SELECT * FROM orbit"}
    assert carried_values(read, [made, "Table created successfully"]) == []  # no token leaf
    assert carried_values(read, [[{"name": "orbit"}]]) == ['"orbit"']
    note = {"path": "a.md", "content": "TIC-0003: follow up on engines"}
    assert carried_values(note, [TICKET]) == ['"TIC-0003"']


def test_a_call_that_carries_nothing_is_its_own_object() -> None:
    assert work_of("time/get_current_time(timezone)", {"timezone": "UTC"}, []) == (
        "time/get_current_time(timezone)",
        '{"timezone": "UTC"}',
    )
