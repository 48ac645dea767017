"""Entity unification across argument names and tools (unify.py), and tool nouns that are words of
the server's name."""

from __future__ import annotations

from typing import Any

from weft_core.models import MCPSpec, StateKind, ToolSpec
from weft_envsynth.analyze import analyze_programmatic
from weft_envsynth.plans import Analysis
from weft_envsynth.unify import described_entity, resolve

S: dict[str, Any] = {"type": "string"}


def _tool(
    name: str,
    props: dict[str, Any],
    required: list[str] | None = None,
    desc: str = "",
    out: dict[str, Any] | None = None,
) -> ToolSpec:
    return ToolSpec(
        name=name,
        description=desc,
        input_schema={"type": "object", "properties": props, "required": required or []},
        output_schema=out,
    )


def _fk(a: Analysis, entity: str, field: str) -> str | None:
    return next(e for e in a.entities if e.name == entity).field(field).foreign_key


def _names(a: Analysis) -> set[str]:
    return {e.name for e in a.entities}


def test_receiver_id_described_as_a_user_id_references_the_users() -> None:
    # BFCL's MessageAPI: one table per argument name left `receiver_id` in a table of its own.
    spec = MCPSpec(
        name="Message API",
        tools=[
            _tool("list_users", {}, [], "List all users"),
            _tool("get_user_id", {"user": S}, ["user"], "Get the id of a user"),
            _tool(
                "send_message",
                {
                    "receiver_id": {
                        "type": "string",
                        "description": "User ID of the user to send the message to.",
                    },
                    "message": S,
                },
                ["receiver_id", "message"],
                "Send a message",
            ),
        ],
    )
    a = analyze_programmatic(spec)
    assert (_fk(a, "message", "receiver_id") or "").startswith("user.")
    assert "receiver" not in _names(a)
    assert "user" in a.effect("send_message").reads


def test_a_role_id_is_the_one_entity_of_people_the_tool_set_creates() -> None:
    spec = MCPSpec(
        name="Payments",
        tools=[
            _tool(
                "add_contact",
                {"name": S, "email": S},
                ["name"],
                "Add a contact",
                {"type": "object", "properties": {"contact_id": S}},
            ),
            _tool(
                "send_money",
                {"receiver_id": S, "amount": {"type": "number"}},
                ["receiver_id", "amount"],
                "Send money",
            ),
        ],
    )
    a = analyze_programmatic(spec)
    send = a.effect("send_money")
    assert send.operation == "create" and send.entity == "transfer"
    assert _fk(a, "transfer", "receiver_id") == "contact.contact_id"
    assert "receiver" not in _names(a)


def test_two_entities_of_people_need_the_description_to_decide() -> None:
    def spec(desc: str) -> MCPSpec:
        return MCPSpec(
            name="Payments",
            tools=[
                _tool("add_contact", {"name": S}, ["name"], "Add a contact"),
                _tool("create_user", {"name": S}, ["name"], "Create a user"),
                _tool(
                    "send_money",
                    {
                        "receiver_id": {"type": "string", "description": desc},
                        "amount": {"type": "number"},
                    },
                    ["receiver_id"],
                    "Send money",
                ),
            ],
        )

    # Ambiguous (a contact or a user?): the argument keeps a table of its own.
    a = analyze_programmatic(spec("Who receives the money."))
    assert _fk(a, "transfer", "receiver_id") == "receiver.receiver_id"
    # Named next to an id word: that entity.
    a = analyze_programmatic(spec("The contact's id."))
    assert _fk(a, "transfer", "receiver_id") == "contact.contact_id"
    # Named, but not as the id: not evidence ("user" is who pays, not what the id is).
    a = analyze_programmatic(spec("Who receives it; the user pays. Not a contact list."))
    assert _fk(a, "transfer", "receiver_id") == "receiver.receiver_id"


def test_card_id_is_the_credit_card_another_tool_registered() -> None:
    spec = MCPSpec(
        name="Travel",
        tools=[
            _tool(
                "register_credit_card",
                {"card_number": S, "cardholder_name": S},
                ["card_number"],
                "Register a credit card",
            ),
            _tool("get_all_credit_cards", {}, [], "All credit cards"),
            _tool(
                "get_credit_card_balance",
                {"card_id": {"type": "string", "description": "The ID of the credit card"}},
                ["card_id"],
                "Balance of a card",
            ),
            _tool(
                "book_flight",
                {"card_id": S, "travel_to": S},
                ["card_id", "travel_to"],
                "Book a flight",
            ),
        ],
    )
    a = analyze_programmatic(spec)
    assert "card" not in _names(a)
    assert _fk(a, "flight", "card_id") == "credit_card.credit_card_id"
    assert a.effect("get_credit_card_balance").entity == "credit_card"
    # `card_number` of the card being registered is its own field, not a reference.
    assert _fk(a, "credit_card", "card_number") is None


def test_a_head_word_shared_by_two_entities_decides_nothing() -> None:
    spec = MCPSpec(
        name="Cards",
        tools=[
            _tool("register_credit_card", {"number": S}, ["number"], "Register a credit card"),
            _tool("create_gift_card", {"value": S}, ["value"], "Create a gift card"),
            _tool("book_flight", {"card_id": S, "to": S}, ["card_id"], "Book a flight"),
        ],
    )
    a = analyze_programmatic(spec)
    assert _fk(a, "flight", "card_id") == "card.card_id"


def test_role_prefixed_ids_and_described_arguments_reference_real_entities() -> None:
    spec = MCPSpec(
        name="Bank",
        tools=[
            _tool("open_account", {"owner": S}, ["owner"], "Open an account"),
            _tool("add_contact", {"name": S}, ["name"], "Add a contact"),
            _tool(
                "schedule_payment",
                {
                    "from_account_id": S,
                    "recipient": {"type": "string", "description": "The contact's ID"},
                    "phone": {"type": "string", "description": "The contact number to call"},
                    "fee_account_number": S,
                    "account_number": S,
                    "date": S,
                },
                ["from_account_id", "recipient"],
                "Schedule a payment",
            ),
        ],
    )
    a = analyze_programmatic(spec)
    assert _fk(a, "payment", "from_account_id") == "account.account_id"
    assert _fk(a, "payment", "recipient") == "contact.contact_id"
    assert _fk(a, "payment", "phone") is None  # a phone number, not a contact's id
    assert _fk(a, "payment", "account_number") == "account.account_id"
    assert _fk(a, "payment", "fee_account_number") is None  # no `fee_account` entity


def test_description_evidence_is_an_entity_next_to_an_id_word() -> None:
    real = {"user", "credit_card", "card", "contact"}
    assert described_entity("User ID of the user to send the message to.", real) == "user"
    assert described_entity("The ID of the credit card to use", real) == "credit_card"
    assert described_entity("the contact's identifier", real) == "contact"
    assert described_entity("a user or a contact", real) is None
    assert described_entity("user id or contact id", real) is None  # two: undecided
    assert resolve("receiver", "", {"user"}) == "user"
    assert resolve("receiver", "", {"user", "customer"}) is None
    assert resolve("to_account", "", {"account"}) == "account"
    assert resolve("widget", "", {"account"}) is None


def test_a_listing_named_like_its_server_reads_the_created_rows() -> None:
    # A server named "notes": `list_notes` used to lose its only noun and become a lookup table
    # of its own, so a listing never saw a created note; `list_boards` likewise in "boards".
    spec = MCPSpec(
        name="notes",
        tools=[
            _tool("create_note", {"title": S, "content": S}, ["title"], "Create a note"),
            _tool("list_notes", {}, [], "List all notes"),
            _tool("notes_get_note", {"note_id": S}, ["note_id"], "Get a note"),
        ],
    )
    a = analyze_programmatic(spec)
    assert a.effect("list_notes").entity == "note"
    assert a.effect("list_notes").state_kind == StateKind.DATABASE
    assert a.effect("notes_get_note").entity == "note"
    boards = MCPSpec(name="boards", tools=[_tool("list_boards", {}, [], "List boards")])
    assert analyze_programmatic(boards).effect("list_boards").entity == "board"
    # A server word before another noun is still a prefix (`github_create_repository`).
    gh = MCPSpec(
        name="github",
        tools=[_tool("github_create_repository", {"name": S}, ["name"], "Create a repository")],
    )
    assert analyze_programmatic(gh).effect("github_create_repository").entity == "repository"


def test_a_reference_must_be_able_to_hold_the_key_and_lookups_are_no_evidence() -> None:
    spec = MCPSpec(
        name="Quran",
        tools=[
            _tool("add_chapter", {"title": S}, ["title"], "Add a chapter"),
            # a numeric chapter number beside text chapter keys is some other identifier
            _tool(
                "get_verse",
                {"chapter_no": {"type": "integer"}, "verse": {"type": "integer"}},
                ["chapter_no"],
                "Get a verse",
            ),
            # users only looked up (a directory nothing writes) are no evidence for a role's id
            _tool("search_users", {"query": S}, ["query"], "Search the user directory"),
            _tool("create_task", {"assignee_id": S}, ["assignee_id"], "Create a task"),
        ],
    )
    a = analyze_programmatic(spec)
    verse = next(e for e in a.entities if e.name == "verse")
    assert verse.field("chapter_no").foreign_key is None
    assert verse.field("chapter_no").type == "integer"
    task = next(e for e in a.entities if e.name == "task")
    assert task.field("assignee_id").foreign_key == "assignee.assignee_id"


def test_a_lookup_key_takes_the_type_of_the_numbers_that_reference_it() -> None:
    # metmuseum: `departmentId: number` referenced departments whose key defaulted to text, so a
    # valid call carried a department key the argument refused.
    spec = MCPSpec(
        name="Museum",
        tools=[
            _tool("list_departments", {}, [], "List the departments"),
            _tool(
                "search_objects",
                {"q": S, "departmentId": {"type": "integer"}},
                ["q"],
                "Search objects",
            ),
        ],
    )
    a = analyze_programmatic(spec)
    dept = next(e for e in a.entities if e.name == "department")
    assert dept.field(dept.key).type == "integer"
    obj = next(e for e in a.entities if e.name == a.effect("search_objects").entity)
    assert obj.field("department_id").foreign_key == f"department.{dept.key}"
    assert obj.field("department_id").type == "integer"
