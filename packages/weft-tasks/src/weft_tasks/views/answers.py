"""SimUser answers: what the simulated user says when the agent asks it something mid-turn (paper
§3.1.3 (ii)).

The user knows the facts of the turns disclosed so far — the current turn and the earlier ones —
and nothing of later turns. A fact is a node input whose value the user holds: a value the user
gives (`given`), or one the agent could look up but the user knows (`retrieved`, stated in full
view). Values created or found upstream by the agent's own tool calls are not the user's: asked
for one, the user points at the step that produces it. A later turn's values and requests are
never said, whatever the strategy (`validate_answer` enforces it with the same rule as
`validate_request`).

A value the partial or vague view withholds from the request is still given when the agent asks
for it: disclosure levels vary how explicit the *request* is, not what the user knows (the full
view states the same value), and a real user who is asked for something they know answers. The
agent that asks instead of looking it up pays with a question of the user's limited patience
(`Persona.patience`), and the turn's checks are the same either way.

Two strategies share the `Answerer` contract: the programmatic one matches the question to facts
through input names, descriptions and the business objects (entity bindings) the values belong to,
and says it does not know when nothing matches; the LLM one lets any chat model phrase the answer,
rejects one that leaks a later turn, invents a value or withholds the asked one, retries once with
the problems named, and then falls back to the programmatic answer.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal, Protocol

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from weft_core.llm import model_display_name
from weft_core.models import Disclosure, TaskGraph, TaskInput
from weft_tasks.views._llm_text import reply_field
from weft_tasks.views.disclosure import format_value
from weft_tasks.views.leaks import leak_problems, norm
from weft_tasks.views.questions import Question, read_reply

if TYPE_CHECKING:
    from weft_tasks.views.turn import TurnContext

AnswerKind = Literal["value", "pointer", "unknown", "affirm", "correct", "stick", "insist"]


@dataclass(frozen=True)
class Fact:
    """One input value the user holds (or, for `pointer`, where the agent gets it)."""

    node_id: str
    name: str
    label: str
    value: str | None
    keywords: frozenset[str]
    pointer: str = ""


# Words that say how a question is asked, not what it is about.
_STOP_WORDS = """
a an the of for to in on at by as from with and or but if so is are was were be been
being what which who whose whom where when how much many long do does did should shall
could can would will may might must i me my you your we our us it its this that these
those there here please kindly tell provide give share specify send confirm clarify let
know need want like use using used set have has had get go ahead proceed okay ok sure
just also any some exact exactly correct right value one more about into again before
after now then first next
"""
_STOP = frozenset(_STOP_WORDS.split())

# Spellings of the same thing a user and a schema both use.
_SAME = {"mail": "email", "e": "email", "identifier": "id", "ids": "id", "surname": "name"}


def words(text: str) -> frozenset[str]:
    """Content words of `text`, lower-cased, plural and possessive stripped."""
    out: set[str] = set()
    for w in re.findall(r"[a-z0-9]+", text.lower().replace("_", " ")):
        if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
            w = w[:-1]
        w = _SAME.get(w, w)
        if len(w) > 1 and w not in _STOP:
            out.add(w)
    return frozenset(out)


def input_keywords(graph: TaskGraph, inp: TaskInput) -> frozenset[str]:
    """What a question may call an input: its name, its description, and the business object
    (entity binding) and field its value belongs to."""
    keys = set(words(inp.name) | words(inp.description))
    for b in graph.bindings:
        for fname, fvalue in b.value.items():
            if inp.value is not None and fvalue == inp.value:
                keys |= words(b.name) | words(b.entity) | words(fname)
    return frozenset(keys)


def later_keywords(graph: TaskGraph, order: list[str], index: int) -> list[frozenset[str]]:
    """The keywords (never the values) of the inputs of turns after `index`: what lets the user
    recognise a question about a later step, to which the answer is that they do not know."""
    return [
        input_keywords(graph, inp)
        for nid in order[index + 1 :]
        for inp in graph.node(nid).inputs
        if inp.source != "upstream"
    ]


def user_facts(
    graph: TaskGraph, order: list[str], index: int, disclosure: Disclosure
) -> list[Fact]:
    """The facts the user holds at turn `index`: inputs with a value of turns 0..index, and pointers
    for the current turn's inputs that an earlier step produces. The current turn's facts come
    first, so an equally good match prefers what the agent is working on."""
    disclosure = Disclosure(disclosure)
    intents = {n.id: n.intent for n in graph.nodes}
    facts: list[Fact] = []
    seen: set[str] = set()
    for pos in range(index, -1, -1):
        node = graph.node(order[pos])
        for inp in node.inputs:
            label = (inp.description or inp.name.replace("_", " ")).rstrip(".")
            keys = set(input_keywords(graph, inp))
            value: str | None = None
            pointer = ""
            if inp.source == "upstream":
                # Created or found by the agent's own calls: the user never had it, except that
                # the full view states a value an earlier step reads from the initial state.
                if disclosure is Disclosure.FULL and inp.value is not None:
                    value = format_value(inp.value)
                elif pos == index:
                    step = intents.get(inp.from_node or "", "an earlier step")
                    what = (inp.from_output or inp.name).replace("_", " ")
                    pointer = f"the {what} from '{step}'"
                else:
                    continue
            elif inp.value is not None:
                value = format_value(inp.value)
            else:
                continue  # nobody has told the user this one either
            key = value if value is not None else f"pointer:{inp.name}"
            if key in seen:
                # one value asked for in several turns is one fact, known by all its names
                at = next(i for i, f in enumerate(facts) if (f.value or f"pointer:{f.name}") == key)
                facts[at] = replace(facts[at], keywords=facts[at].keywords | keys)
                continue
            seen.add(key)
            facts.append(Fact(node.id, inp.name, label, value, frozenset(keys), pointer))
    return facts


@dataclass(frozen=True)
class AnswerContext:
    """Everything an answerer may use for one question, and what the answer must not say."""

    turn: TurnContext
    question: Question
    facts: list[Fact]
    forbidden: list[str]
    # the user's requests, one per turn so far, then its answers: what the user has said
    heard: list[str] = field(default_factory=list)
    asked: int = 0
    later: list[frozenset[str]] = field(default_factory=list)

    @property
    def request(self) -> str:
        """The current turn's request."""
        return self.heard[self.turn.index] if len(self.heard) > self.turn.index else ""

    @property
    def context_words(self) -> frozenset[str]:
        """Words of what the user has asked for so far and the facts they hold."""
        out: set[str] = set()
        for text in self.heard:
            out |= words(text)
        for f in self.facts:
            out |= f.keywords
        out |= words(self.turn.node.intent)
        return frozenset(out)


@dataclass(frozen=True)
class Answer:
    """The user's reply to a question; `facts` names the inputs whose values it gives."""

    text: str
    kind: AnswerKind
    strategy: str
    facts: tuple[str, ...] = ()


class Answerer(Protocol):
    """Reads the agent's end-of-step reply and answers what it asks.

    Contract: `read` returns the question a reply puts to the user, or None when the reply ends
    the turn; `answer` replies from `ctx.facts` only (values of the current and earlier turns),
    says the user does not know when none matches, and never contains anything in
    `ctx.forbidden` nor a later turn's request. `strategy` names the answerer in traces.
    """

    strategy: str

    def read(self, reply: str | None) -> Question | None: ...

    async def answer(self, ctx: AnswerContext) -> Answer: ...


def _names_value(value: str, question: str) -> bool:
    """The question names this value: an identifier-like value or one of several words (a bare
    word such as "phone" is as likely the question's topic as another input's value)."""
    distinctive = bool(value_tokens(value)) or len(words(value)) >= 2
    return distinctive and _said(value, question)


def match_facts(
    question: str,
    facts: list[Fact],
    later: list[frozenset[str]] | None = None,
    *,
    confirming: bool = False,
) -> list[Fact]:
    """The facts a question asks about: most shared content words, a word shared by fewer inputs
    counting more (so "customer name" picks the name, not every customer value), the input's
    whole name counting one more. Ties within one turn are all returned; across turns, the
    latest turn's. A value the question names is what a confirmation is about ("should I use
    ORD-7?"), but in a question for a value it identifies the object asked about ("the id of
    order ORD-7"): the agent has it already, so another match is preferred. The inputs of later
    turns (`later`, keywords only) compete too: when one of them fits the question better ("which
    tier?" before the upgrade turn), no fact is returned, rather than a known value that merely
    shares a word."""
    asked = words(question)
    low = question.lower()
    spread: dict[str, int] = {}
    for keys in [*(f.keywords for f in facts), *(later or [])]:
        for w in keys:
            spread[w] = spread.get(w, 0) + 1
    scored: list[tuple[float, Fact]] = []
    named: list[Fact] = []
    phrase = f" {norm(question)} "
    for f in facts:
        score = sum(1.0 / spread[w] for w in asked & f.keywords)
        name = norm(f.name)
        if " " in name and f" {name} " in phrase:
            # the input's compound name, whole ("customer id", not "customer" and an "id"
            # elsewhere); a one-word name is already one of the keywords
            score += 1.0
        if f.value is not None and _names_value(f.value, low):
            if not confirming:
                named.append(f)
                continue
            score += 2.0
        if score > 0:
            scored.append((score, f))
    if not scored:
        return named
    best = max(s for s, _ in scored)
    if any(sum(1.0 / spread[w] for w in asked & keys) > best + 1e-9 for keys in later or []):
        return []
    tied = [f for s, f in scored if math.isclose(s, best)]
    # equally good matches from several turns: the agent is asking about the latest of them
    # (facts are listed current turn first); several inputs of one turn are all given
    return [f for f in tied if f.node_id == tied[0].node_id]


def _state(facts: list[Fact], ctx: AnswerContext, *, framed: bool = True) -> str:
    persona = ctx.turn.persona
    given = [f for f in facts if f.value is not None]
    if persona.verbosity == "terse":
        terse = "; ".join(f"{f.label}: {f.value}" for f in given) + "."
        return terse[:1].upper() + terse[1:]
    lines = [f"The {f.label} is {f.value}." for f in given]
    if "list" in persona.style and len(lines) > 1:
        return "\n".join(f"- {f.label}: {f.value}" for f in given)
    text = " ".join(lines)
    if framed and persona.verbosity == "wordy":
        return f"Of course. {text} That is what I have."
    return text


def programmatic_answer(ctx: AnswerContext) -> Answer:
    """The rule-based answer (see the module docstring); also the LLM answerer's fallback."""
    persona = ctx.turn.persona
    q = ctx.question
    matched = match_facts(q.text, ctx.facts, ctx.later, confirming=q.kind == "confirmation")
    with_value = [f for f in matched if f.value is not None]
    names = tuple(f.name for f in with_value)
    if q.kind == "confirmation":
        low = q.text.lower()
        if with_value and not any(str(f.value).lower() in low for f in with_value):
            # the agent is about to use something else than what the user knows: correct it
            text = f"No. {_state(with_value, ctx, framed=False)}"
            return Answer(text, "correct", "programmatic", names)
        if not matched and words(q.text) - ctx.context_words:
            # an action nobody asked for yet: neither confirm it nor say what comes later
            return Answer(persona.stick, "stick", "programmatic")
        return Answer(persona.affirm, "affirm", "programmatic", names)
    if with_value:
        return Answer(_state(with_value, ctx), "value", "programmatic", names)
    pointers = [f for f in matched if f.pointer]
    if pointers:
        where = " and ".join(f.pointer for f in pointers)
        return Answer(f"{persona.unknown} Use {where}.", "pointer", "programmatic")
    return Answer(persona.unknown, "unknown", "programmatic")


_TOKEN = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+|\b[\w-]*\d[\w.-]*\b")


def value_tokens(text: str) -> set[str]:
    """Identifier-like tokens (emails, anything with a digit): what an answer could invent."""
    return {t.lower().rstrip(".") for t in _TOKEN.findall(text)}


def validate_answer(text: str, ctx: AnswerContext, expected: Answer | None = None) -> list[str]:
    """Problems with a drafted answer, in words; empty when it respects the contract.

    `expected` is the programmatic answer: when it gives values, a draft must give one of them
    (an LLM may phrase the answer, not withhold what the user knows); when it gives none, a draft
    must not state a value the question does not name (it would answer another question)."""
    if not text.strip():
        return ["the answer is empty"]
    problems: list[str] = []
    if len(text) > 2000:
        problems.append("the answer is longer than 2000 characters")
    problems += leak_problems(text, ctx.forbidden, ctx.turn.future_intents)
    allowed: set[str] = set()
    for source in [ctx.question.text, *ctx.heard, *(f.value or "" for f in ctx.facts)]:
        allowed |= value_tokens(source)
    allowed |= {f.value.lower() for f in ctx.facts if f.value is not None}
    for token in sorted(value_tokens(text) - allowed):
        problems.append(f"it states {token!r}, which the user was never given")
    if expected is not None and expected.facts:
        values = [f.value for f in ctx.facts if f.name in expected.facts and f.value is not None]
        if values and not any(v.lower() in text.lower() for v in values):
            problems.append("it does not give the value asked for: " + ", ".join(values))
    elif expected is not None:
        # nothing the user holds answers the question: a value it holds would answer another one
        asked = ctx.question.text.lower()
        for f in ctx.facts:
            if f.value and len(f.value) >= 3 and _said(f.value, text) and not _said(f.value, asked):
                problems.append(f"it gives {f.value!r}, which the question does not ask for")
    return problems


def _said(value: str, text: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(value.lower())}(?!\w)", text.lower()) is not None


class ProgrammaticAnswerer:
    """Rule-based answers; needs no model."""

    strategy = "programmatic"

    def read(self, reply: str | None) -> Question | None:
        return read_reply(reply)

    async def answer(self, ctx: AnswerContext) -> Answer:
        return programmatic_answer(ctx)


_SYSTEM = (
    "You play a user talking to an AI assistant that can use business tools. You are {role}; "
    "your style: {style}; your answers are {verbosity}. The assistant has asked you something. "
    "Answer ONLY from the facts you are given; if they do not answer the question, say you do "
    "not know. Never mention any other value or anything you might want later. "
    'Reply as JSON: {{"answer": "..."}}.'
)


@dataclass
class AnswerLog:
    """One question's LLM drafts, the problems that rejected them, and the answer used."""

    question: str
    rejected: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    answer: Answer | None = None


class LLMAnswerer:
    """A chat model phrases each answer; drafts are validated and fall back to the rules."""

    def __init__(self, model: BaseChatModel, *, max_attempts: int = 2) -> None:
        self.model = model
        self.max_attempts = max_attempts
        self.strategy = model_display_name(model)
        self.log: list[AnswerLog] = []

    def read(self, reply: str | None) -> Question | None:
        return read_reply(reply)

    async def answer(self, ctx: AnswerContext) -> Answer:
        plain = programmatic_answer(ctx)
        known = [f"- {f.label}: {f.value}" for f in ctx.facts if f.value is not None]
        known += [
            f"- {f.label}: you don't have it; it is {f.pointer}" for f in ctx.facts if f.pointer
        ]
        persona = ctx.turn.persona
        messages: list[BaseMessage] = [
            SystemMessage(
                _SYSTEM.format(role=persona.role, style=persona.style, verbosity=persona.verbosity)
            ),
            HumanMessage(
                f"What you asked the assistant to do: {ctx.request}\n"
                f"The assistant asks: {ctx.question.text}\n"
                "Facts you know:\n" + ("\n".join(known) or "(none)") + "\n"
                f"A plain answer: {plain.text}"
            ),
        ]
        entry = AnswerLog(question=ctx.question.text)
        self.log.append(entry)
        for _ in range(self.max_attempts):
            try:
                reply = await self.model.ainvoke(messages)
            except Exception as exc:  # a broken model must not stop the rollout: use the rules
                entry.problems = [f"model call failed: {type(exc).__name__}"]
                break
            draft = reply_field(reply.content, "answer")
            problems = validate_answer(draft, ctx, plain)
            if not problems:
                entry.problems = []
                entry.answer = Answer(draft, plain.kind, "llm", plain.facts)
                return entry.answer
            entry.rejected.append(draft)
            entry.problems = problems
            messages.append(reply)
            messages.append(
                HumanMessage(
                    "Your last answer was rejected: " + "; ".join(problems) + ". Answer again."
                )
            )
        entry.answer = Answer(plain.text, plain.kind, "programmatic-fallback", plain.facts)
        return entry.answer
