"""User personas for SimUser mode, sampled reproducibly from a seed."""

from __future__ import annotations

import random

from weft_core.models import WeftModel


class Persona(WeftModel):
    """Who the simulated user is and how they phrase requests."""

    id: str
    role: str
    style: str
    greeting: str
    connector: str
    closing: str

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
    ),
    Persona(
        id="careful_analyst",
        role="a careful business analyst",
        style="polite and precise, states every detail explicitly",
        greeting="Hello, I need some help with our systems today.",
        connector="Thank you. The next thing I need:",
        closing="Please let me know once it is done.",
    ),
    Persona(
        id="new_hire",
        role="a new employee learning the tools",
        style="friendly, slightly unsure, explains why they need things",
        greeting="Hi! I'm new here and my lead asked me to sort something out.",
        connector="Great, thanks! Now I also have to",
        closing="Does that make sense?",
    ),
    Persona(
        id="support_agent",
        role="a customer-support agent handling a case",
        style="practical, mentions the customer's situation",
        greeting="Hey, I'm working a customer case.",
        connector="Okay, and for the same case:",
        closing="Appreciate it.",
    ),
    Persona(
        id="founder",
        role="a small-business owner",
        style="informal and direct, writes in short sentences",
        greeting="Hey there.",
        connector="Cool. Also",
        closing="Cheers.",
    ),
)


def sample_persona(seed: int | str, personas: tuple[Persona, ...] = PERSONAS) -> Persona:
    """The persona for `seed`; the same seed always gives the same persona."""
    if not personas:
        raise ValueError("no personas to sample from")
    return random.Random(str(seed)).choice(personas)
