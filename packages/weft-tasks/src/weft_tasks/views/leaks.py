"""What a simulated user must never say early: a value of a later turn, or a later request.

Shared by the request writers (`validate_request`) and the answerers (`validate_answer`), so a
user who is asked a question is held to exactly the rule that holds for the user who asks.
"""

from __future__ import annotations

import re


def norm(text: str) -> str:
    """Lower-case words separated by single spaces (punctuation and case never hide a leak)."""
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def leak_problems(text: str, forbidden: list[str], future_intents: list[str]) -> list[str]:
    """Problems, in words, for every forbidden value and later request `text` reveals."""
    problems: list[str] = []
    low = text.lower()
    for value in forbidden:
        if value.lower() in low:
            problems.append(f"it discloses {value!r}, which this turn must not reveal")
    key_text = norm(text)
    for intent in future_intents:
        key = norm(intent)
        # short intents ("Pay") are words of ordinary speech, not a recognisable request
        if len(key) >= 12 and key in key_text:
            problems.append(f"it leaks a later request ({intent!r})")
    return problems
