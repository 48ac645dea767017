"""Reading the agent's reply at the end of a step: is it asking the user something, or is the turn
over? (paper §3.1.3 (ii): the simulated user answers clarification requests.)

The rules look only at what the reply says to the user:

- quoted spans ('…', "…", `…`) and code are what the agent reports or repeats, never what it asks;
- a sentence asks when it ends with "?" or is a request addressed to the user ("please provide
  the …", "let me know which …", "I need the … to continue", "can you confirm …");
- courtesy offers ("anything else?", "let me know if you need …", "what would you like next?")
  close a turn rather than ask, and so does an offer of more work after the reply reports what
  it did ("Done. Shall I also …?"): the work asked for is finished (a confirmation about the
  work itself — "I found two accounts. Shall I use the first?" — still asks);
- what is asked: a value ("what / which / who … ?", "please provide the …"), a confirmation
  ("shall I …?", "do you want me to …?", "is that correct?"), or another clarification.

Deciding this by rules for every strategy keeps turn boundaries (and so checkpoints) a function
of the transcript, not of a sampled simulator.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

QuestionKind = Literal["value", "confirmation", "clarification"]

_QUOTED = re.compile(
    r"```.*?```|`[^`\n]*`|\"[^\"\n]*\"|“[^”\n]*”|‘[^’\n]*’|(?<![\w])'[^'\n]+'(?![\w])", re.S
)
_SENTENCE = re.compile(r"(?<=[.?!:])\s+|\n+")

# Offers of further help end a turn: the agent has nothing it needs from the user.
_OFFER = re.compile(
    r"\banything else\b|\bsomething else\b|\bwhat else\b|\blet me know if (you|there|anything)\b"
    r"|\bif you (need|want|would like|'d like)\b|\bfeel free\b|\bhappy to help\b"
    r"|\bhope (this|that) helps\b|\bwhat would you like (me to do )?next\b"
    r"|\bhow (else )?can i (help|assist)\b|\bis there (any|some)thing\b"
)
# Requests addressed to the user that do not end with "?".
_REQUEST = re.compile(
    r"\b(please|kindly)\s+(provide|share|send|give|tell|specify|confirm|clarify|indicate|"
    r"let me know)\b|\blet me know (which|what|who|whether|the|your|how)\b"
    r"|\bi(?:'ll| will| would)? need (the|your|to know|you to)\b|\bcould you (provide|tell|confirm)\b"
)
_CONFIRM = re.compile(
    r"^(shall|should|may|can) i\b|\b(do|would) you (want|like) me to\b|\bconfirm\b"
    r"|\b(is|are) (that|this|these|those|it) (correct|right|ok|okay|fine)\b|\bproceed\b"
    r"|\bgo ahead\b|\bok(ay)? (to|if)\b|\bright\?$|\bcorrect\?$"
)
_VALUE = re.compile(
    r"\b(what|which|who|whose|whom|where|when|how (much|many|long))\b"
    r"|\b(provide|specify|share|send|give|tell)\b|\bneed (the|your|to know)\b"
)
# Words with which a reply reports finished work; an offer after them is not a question.
_REPORT = re.compile(
    r"\b(done|completed?|finished|created|updated|opened|closed|upgraded|found|sent|added|"
    r"deleted|removed|scheduled|booked|cancell?ed|approved|rejected|recorded|saved|"
    r"successfully|has been|have been|i(?:'ve| have))\b"
)

# Words that offer work beyond what was asked.
_MORE = re.compile(r"\b(also|additionally|as well|too|further|another|other|more)\b")


@dataclass(frozen=True)
class Question:
    """What the agent asks the user: the asking sentences and what kind of answer they want."""

    kind: QuestionKind
    text: str


def _sentences(text: str) -> list[str]:
    bare = _QUOTED.sub(" ", text)
    return [s.strip() for s in _SENTENCE.split(bare) if s.strip()]


def _asks(sentence: str) -> bool:
    low = sentence.lower()
    if _OFFER.search(low):
        return False
    return sentence.rstrip().endswith("?") or _REQUEST.search(low) is not None


def read_reply(text: str | None) -> Question | None:
    """The question `text` puts to the user, or None when the reply ends the turn."""
    if not text or not text.strip():
        return None
    sentences = _sentences(text)
    asking = [s for s in sentences if _asks(s)]
    if not asking:
        return None
    low = " ".join(asking).lower()
    confirmation = any(_CONFIRM.search(s.lower()) for s in asking)
    value = any(_VALUE.search(s.lower()) for s in asking)
    if confirmation and not value:
        reported = [s for s in sentences if s not in asking and _REPORT.search(s.lower())]
        if reported and _MORE.search(low):
            # "I opened ticket 7. Shall I also notify the customer?": an offer after the work
            # ("I found two accounts. Shall I use the first?" still asks about the work).
            return None
        return Question(kind="confirmation", text=" ".join(asking))
    if value:
        return Question(kind="value", text=" ".join(asking))
    return Question(kind="clarification" if "?" in low else "value", text=" ".join(asking))
