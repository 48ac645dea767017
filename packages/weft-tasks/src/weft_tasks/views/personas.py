"""User personas for SimUser mode, sampled reproducibly from a seed."""

from __future__ import annotations

import random
from typing import Literal

from pydantic import Field

from weft_core.models import WeftModel

Verbosity = Literal["terse", "normal", "wordy"]


class Persona(WeftModel):
    """Who the simulated user is, how they phrase requests and how they answer questions.

    `patience` is how many of the agent's questions the user answers in one turn before insisting
    that the agent goes ahead with what it has; `verbosity` shapes answers (terse: the bare
    values; wordy: a framing sentence and what each value is for); the phrases voice the answers
    that carry no value.
    """

    id: str
    role: str
    style: str
    greeting: str
    connector: str
    closing: str
    patience: int = Field(default=2, ge=0, description="Questions answered per turn.")
    verbosity: Verbosity = "normal"
    unknown: str = "I don't know, sorry."
    insist: str = "Please just go ahead with what you have."
    affirm: str = "Yes, go ahead."
    stick: str = "Let's stick to what I asked for now."

    def describe(self) -> str:
        """One line for an LLM simulator's prompt and for `TaskView.persona`."""
        return f"{self.role}; {self.style}"


PERSONAS: tuple[Persona, ...] = (
    Persona(
        id="busy_manager",
        role="an operations manager between meetings",
        style="terse, gives facts as a list, no small talk",
        greeting="Quick one.",
        connector="Next:",
        closing="Thanks.",
        patience=1,
        verbosity="terse",
        unknown="Don't know.",
        insist="No more questions, please just go ahead.",
        affirm="Yes.",
        stick="Just that for now.",
    ),
    Persona(
        id="careful_analyst",
        role="a careful business analyst",
        style="polite and precise, states every detail explicitly",
        greeting="Hello, I need some help with our systems today.",
        connector="Thank you. The next thing I need:",
        closing="Please let me know once it is done.",
        patience=3,
        verbosity="wordy",
        unknown="I'm afraid I don't have that information.",
        insist="I have told you everything I know; please go ahead with it.",
        affirm="Yes, that is correct, please proceed.",
        stick="Please only do what I asked in this step for now.",
    ),
    Persona(
        id="new_hire",
        role="a new employee learning the tools",
        style="friendly, slightly unsure, explains why they need things",
        greeting="Hi! I'm new here and my lead asked me to sort something out.",
        connector="Great, thanks! Now I also have to",
        closing="Does that make sense?",
        patience=3,
        verbosity="wordy",
        unknown="Hmm, I don't know that, sorry! Nobody told me.",
        insist="I'm not sure what else to tell you, could you just go ahead?",
        affirm="Yes, I think so, go ahead!",
        stick="I think just this part for now!",
    ),
    Persona(
        id="support_agent",
        role="a customer-support agent handling a case",
        style="practical, mentions the customer's situation",
        greeting="Hey, I'm working a customer case.",
        connector="Okay, and for the same case:",
        closing="Appreciate it.",
        patience=2,
        verbosity="normal",
        unknown="I don't know that one, the customer didn't say.",
        insist="The customer is waiting, please just go ahead.",
        affirm="Yes, go ahead.",
        stick="Let's stick to this part of the case for now.",
    ),
    Persona(
        id="founder",
        role="a small-business owner",
        style="informal and direct, writes in short sentences",
        greeting="Hey there.",
        connector="Cool. Also",
        closing="Cheers.",
        patience=1,
        verbosity="terse",
        unknown="No idea.",
        insist="Just go ahead.",
        affirm="Yep.",
        stick="Just that for now.",
    ),
)


def sample_persona(seed: int | str, personas: tuple[Persona, ...] = PERSONAS) -> Persona:
    """The persona for `seed`; the same seed always gives the same persona."""
    if not personas:
        raise ValueError("no personas to sample from")
    return random.Random(str(seed)).choice(personas)
