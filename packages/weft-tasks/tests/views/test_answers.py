"""SimUser answers the agent's questions: from the facts of the current and earlier turns only."""

import pytest
from langchain_core.messages import AIMessage

from weft_core.models import Disclosure
from weft_tasks.views import (
    PERSONAS,
    LLMAnswerer,
    ProgrammaticAnswerer,
    SimUser,
    read_reply,
    user_facts,
    validate_answer,
)

MANAGER = next(p for p in PERSONAS if p.id == "busy_manager")  # terse, patience 1
ANALYST = next(p for p in PERSONAS if p.id == "careful_analyst")  # wordy, patience 3


async def _at_turn(graph, turn, persona=ANALYST, disclosure=Disclosure.VAGUE, answerer=None):
    sim = SimUser(graph, disclosure, persona, answerer=answerer or ProgrammaticAnswerer())
    for _ in range(turn + 1):
        await sim.next_request()
    return sim


@pytest.mark.parametrize(
    ("reply", "kind"),
    [
        ("What is the customer's email address?", "value"),
        ("I need the customer's email to continue.", "value"),
        ("Please provide the ticket subject.", "value"),
        ("Shall I go ahead with the upgrade?", "confirmation"),
        ("I found two accounts. Can you confirm it is ada@example.com?", "confirmation"),
        ("Do you mean the CRM account or the helpdesk contact?", "clarification"),
    ],
)
def test_questions_and_requests_addressed_to_the_user_are_read_as_questions(reply, kind):
    question = read_reply(reply)
    assert question is not None and question.kind == kind


@pytest.mark.parametrize(
    "reply",
    [
        # the teacher's and the reference policy's turn ends
        "Done: Look up the customer account with email ada@example.com. (customer_id=1)",
        "I could not complete 'Upgrade that customer to the gold tier': I have no customer_id.",
        "[turn stopped after 40 steps]",
        "How can I help?",
        # courtesy offers and offers of more work after a report
        "Customer 1 is now gold. Is there anything else I can help with?",
        "Done. Let me know if you need anything else.",
        "I've opened ticket 2. Shall I also email the customer?",
        # a question the agent quotes is reported, not asked
        "Done: the ticket says 'Is the upgrade live?'.",
        "",
        None,
    ],
)
def test_replies_that_ask_nothing_end_the_turn(reply):
    assert read_reply(reply) is None


async def test_a_value_the_vague_request_withholds_is_given_when_asked(graph):
    sim = await _at_turn(graph, 2)
    assert "Ada Lovelace" not in sim.turns[-1].request  # vague: find it with the tools
    answer = await sim.respond("What is the customer's name?")
    assert answer is not None and "Ada Lovelace" in answer
    assert sim.exchanges[-1].answer.kind == "value"
    assert sim.exchanges[-1].answer.facts == ("customer_name",)


async def test_a_later_turns_value_is_never_given_early(graph):
    sim = await _at_turn(graph, 0)
    for question in (
        "What priority should the support ticket get?",
        "What subject should the ticket have?",
        "Which tier should the customer get?",
    ):
        answer = await sim.respond(question)
        assert answer == ANALYST.unknown, question
    ctx = sim.answer_context(read_reply("Which tier?"))
    assert {"high", "Gold tier upgrade", "gold", "Ada Lovelace"} <= set(ctx.forbidden)
    assert "ada@example.com" not in ctx.forbidden  # the user holds it since turn 0


async def test_facts_cover_the_current_and_earlier_turns_only(graph):
    order = ["n1", "n2", "n3"]
    first = {f.value for f in user_facts(graph, order, 0, Disclosure.VAGUE)}
    assert first == {"ada@example.com"}
    second = user_facts(graph, order, 1, Disclosure.VAGUE)
    assert {f.value for f in second} == {"gold", "ada@example.com", None}
    assert second[0].node_id == "n2"  # the current turn's facts come first
    # the same email asked for in turns 1 and 3 is one fact, known by both names
    third = user_facts(graph, order, 2, Disclosure.VAGUE)
    emails = [f for f in third if f.value == "ada@example.com"]
    assert len(emails) == 1


async def test_an_upstream_value_is_not_the_users_it_points_at_the_step(graph):
    sim = await _at_turn(graph, 1)
    answer = await sim.respond("What's the customer id?")
    assert answer is not None and answer.startswith(ANALYST.unknown)
    assert "Look up the customer account" in answer and "1" not in answer.split("'")[0]
    assert sim.exchanges[-1].answer.kind == "pointer"


async def test_the_best_matching_fact_wins_over_shared_words(graph):
    # "customer" is shared by the email and the name; "name" decides
    sim = await _at_turn(graph, 2)
    answer = await sim.respond("What is the customer name?")
    assert "Ada Lovelace" in answer and "ada@example.com" not in answer


async def test_confirmations_are_affirmed_corrected_or_kept_to_the_turn(graph):
    sim = await _at_turn(graph, 1)
    assert await sim.respond("Shall I go ahead?") == ANALYST.affirm
    corrected = await sim.respond("Should I set the tier to platinum?")
    assert corrected.startswith("No.") and "gold" in corrected
    assert await sim.respond("Should I also open a support ticket?") == ANALYST.stick


async def test_personas_shape_answers_and_patience(graph):
    terse = await _at_turn(graph, 2, persona=MANAGER)
    wordy = await _at_turn(graph, 2, persona=ANALYST)
    q = "What subject should I use?"
    short, long = await terse.respond(q), await wordy.respond(q)
    assert "Gold tier upgrade" in short and "Gold tier upgrade" in long
    assert len(short) < len(long)
    # patience 1: one answer, then the user insists, then the turn ends
    impatient = await _at_turn(graph, 1, persona=MANAGER)
    assert "gold" in await impatient.respond("Which tier?")
    assert await impatient.respond("And which tier exactly?") == MANAGER.insist
    assert await impatient.respond("Are you sure about the tier?") is None
    assert [e.answer.kind for e in impatient.exchanges] == ["value", "insist"]
    # the count is per turn: the next turn starts with the user's full patience
    await impatient.next_request()
    assert "high" in await impatient.respond("Which priority?")


async def test_a_reply_that_asks_nothing_is_not_answered(graph):
    sim = await _at_turn(graph, 0)
    assert await sim.respond("Done: customer 1 found.") is None
    assert sim.exchanges == []


async def test_validate_answer_catches_leaks_and_invented_values(graph):
    sim = await _at_turn(graph, 0)
    ctx = sim.answer_context(read_reply("What is the customer's email?"))
    assert validate_answer("It's ada@example.com.", ctx) == []
    assert any("'high'" in p for p in validate_answer("ada@example.com, and make it high.", ctx))
    invented = validate_answer("It's ada.l@corp.example.", ctx)
    assert any("never given" in p for p in invented)
    leak = "Open a high-priority support ticket about the tier upgrade"
    assert any("later request" in p for p in validate_answer(leak, ctx))


async def test_llm_answer_is_accepted_when_it_respects_the_facts(graph, scripted):
    model = scripted([AIMessage('{"answer": "Sure, it is ada@example.com."}')])
    answerer = LLMAnswerer(model)
    sim = await _at_turn(graph, 0, answerer=answerer)
    assert await sim.respond("What's the email?") == "Sure, it is ada@example.com."
    assert sim.exchanges[-1].answer.strategy == "llm"
    # the model is shown the current request and the user's facts, never a later turn's value
    prompt = "\n".join(str(m.content) for m in model.prompts[0])
    assert sim.turns[0].request in prompt and "ada@example.com" in prompt
    assert not any(v in prompt for v in ("gold", "high", "Gold tier upgrade", "Ada Lovelace"))


async def test_llm_answer_that_leaks_a_later_value_is_retried_then_replaced(graph, scripted):
    leaky = AIMessage('{"answer": "ada@example.com, and the ticket will be high priority."}')
    model = scripted([leaky, leaky])
    answerer = LLMAnswerer(model)
    sim = await _at_turn(graph, 0, answerer=answerer)
    answer = await sim.respond("What's the email?")
    assert "high" not in answer and "ada@example.com" in answer
    assert sim.exchanges[-1].answer.strategy == "programmatic-fallback"
    assert len(answerer.log[0].rejected) == 2
    assert any("'high'" in p for p in answerer.log[0].problems)


async def test_llm_answer_that_invents_a_value_is_rejected_and_the_repair_accepted(graph, scripted):
    model = scripted(
        [
            AIMessage('{"answer": "The customer id is 42."}'),
            AIMessage('{"answer": "No idea, it comes from the lookup you did before."}'),
        ]
    )
    answerer = LLMAnswerer(model)
    sim = await _at_turn(graph, 1, answerer=answerer)
    answer = await sim.respond("What's the customer id?")
    assert answer == "No idea, it comes from the lookup you did before."
    assert answerer.log[0].rejected == ["The customer id is 42."]
    assert sim.exchanges[-1].answer.strategy == "llm"


async def test_llm_answer_that_withholds_the_known_value_is_rejected(graph, scripted):
    stonewall = AIMessage('{"answer": "I do not know."}')
    answerer = LLMAnswerer(scripted([stonewall, stonewall]))
    sim = await _at_turn(graph, 2, answerer=answerer)
    answer = await sim.respond("What is the customer's name?")
    assert "Ada Lovelace" in answer
    assert any("does not give" in p for p in answerer.log[0].problems)


async def test_a_failing_model_falls_back_to_the_rules(graph):
    from weft_core.testing import ScriptedChatModel

    answerer = LLMAnswerer(ScriptedChatModel([RuntimeError("endpoint down")]))
    sim = await _at_turn(graph, 0, answerer=answerer)
    answer = await sim.respond("What's the email?")
    assert "ada@example.com" in answer
    assert sim.exchanges[-1].answer.strategy == "programmatic-fallback"


async def test_a_value_named_in_a_question_for_a_value_identifies_the_object(graph):
    sim = await _at_turn(graph, 2)
    answer = await sim.respond("What is the customer name for ada@example.com?")
    assert "Ada Lovelace" in answer and "The customer email" not in answer
    # in a confirmation the named value is what is confirmed
    assert await sim.respond("Should I use ada@example.com?") == ANALYST.affirm


def test_a_named_value_must_be_a_whole_distinctive_token():
    from weft_tasks.views.answers import Fact, match_facts

    stock = Fact("n1", "stock", "stock", "4", frozenset({"stock"}))
    channel = Fact("n1", "channel", "ticket channel", "phone", frozenset({"channel", "ticket"}))
    phone = Fact("n1", "phone", "customer phone", "555-0100", frozenset({"phone", "customer"}))
    facts = [stock, channel, phone]
    # "4" is not named by "247"; a bare word value ("phone") is the question's topic, not a name
    assert match_facts("Should I use the order at 247 Main St?", facts, confirming=True) == []
    assert match_facts("Should I call the customer by phone?", facts, confirming=True) == [phone]
    assert match_facts("Should I set stock to 4?", facts, confirming=True) == [stock]


async def test_llm_answer_with_a_known_value_to_an_unmatched_question_is_rejected(graph, scripted):
    off = AIMessage('{"answer": "It is ada@example.com."}')
    answerer = LLMAnswerer(scripted([off, AIMessage('{"answer": "No clue, sorry."}')]))
    sim = await _at_turn(graph, 0, answerer=answerer)
    assert await sim.respond("Which tier should the customer get?") == "No clue, sorry."
    assert answerer.log[0].rejected == ["It is ada@example.com."]


def test_the_inputs_whole_name_decides_between_facts_of_one_object():
    from weft_tasks.views.answers import Fact, match_facts

    ticket = Fact("n1", "ticket_id", "ticket id", "TIC-1", frozenset({"ticket", "id", "face"}))
    owner = Fact(
        "n1", "employee_id", "employee id", "EMP-1", frozenset({"ticket", "employee", "id", "face"})
    )
    assert match_facts("What is the ticket id of ticket Face?", [ticket, owner]) == [ticket]
    # a one-word name is only a keyword: "path" must not outvote the "new path" input
    path = Fact("n1", "path", "file path", "a.txt", frozenset({"file", "path"}))
    new = [
        Fact("n1", "destination", "new path", "b/a.txt", frozenset({"destination", "new", "path"}))
    ]
    others = [Fact("n0", f"x{i}", "new x", str(i), frozenset({"new", f"x{i}"})) for i in range(5)]
    assert match_facts("What is the new path?", [path, *new, *others]) == new


async def test_equally_good_matches_from_two_turns_give_the_latest(graph):
    from weft_core.models import TaskInput

    n3 = graph.node("n3")
    other = n3.model_copy(
        update={
            "inputs": [
                TaskInput(name="customer_email", description="customer email", value="al@x.org"),
                *n3.inputs[1:],
            ]
        }
    )
    changed = graph.model_copy(update={"nodes": [graph.node("n1"), graph.node("n2"), other]})
    sim = await _at_turn(changed, 2)
    answer = await sim.respond("What is the customer email?")
    assert "al@x.org" in answer and "ada@example.com" not in answer
