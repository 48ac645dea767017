"""What a tool's description says it does: the leading verb, the thing it acts on, and where
("Add a business insight to the memo" -> add / "business insight" / "to the memo").

Two uses. A tool name whose verb no word list knows (`append_insight`) is glossed by its
description when the description's verb acts on what the name names; and a write whose
definition documents no output confirms itself with the sentence its description implies
("Business insight added to the memo"), as real servers answer a write in prose.
"""

from __future__ import annotations

import re

from weft_core.models import ToolSpec
from weft_core.models.env import Operation
from weft_envsynth._internal import words as W

_ARTICLES = {"a", "an", "the", "one", "some", "any"}
# Words that end the object of the leading verb ("Add <object> to the memo").
_PREPOSITIONS = {
    "to", "in", "into", "on", "onto", "for", "from", "with", "by", "at", "within", "inside",
    "under", "as", "via", "using", "and", "or", "that", "which", "if", "when",
}  # fmt: skip
# "Generate a summary / an image / a report": produced for the caller, not a record kept (over the
# toucan corpus every such gloss was a report, chart or media tool).
_WRITE_OPS: dict[str, Operation] = {
    **{v: "create" for v in W.CREATE_VERBS - {"generate"}},
    **{v: "update" for v in W.UPDATE_VERBS},
    **{v: "delete" for v in W.DELETE_VERBS},
}
_MAX_WORDS = 14


class Gloss:
    """The description's first clause read as `verb object [place]`."""

    def __init__(self, verb: str, obj: list[str], place: list[str]) -> None:
        self.verb, self.obj, self.place = verb, obj, place

    def nouns(self) -> set[str]:
        return {W.singular(w.lower()) for w in self.obj}


def _clause(description: str) -> list[str]:
    first = re.split(r"[.;:!?\n(]|,\s", description.strip(), maxsplit=1)[0]
    return re.findall(r"[A-Za-z0-9][A-Za-z0-9_'-]*", first)


def description_gloss(tool: ToolSpec) -> Gloss | None:
    """The description's leading write verb (imperative or third person: "Add", "Adds") with the
    object it takes and the phrase after it; None when the description does not start so."""
    tokens = _clause(tool.description)
    if len(tokens) < 2:
        return None
    lead = tokens[0].lower()
    verb = lead if lead in _WRITE_OPS else W.singular(lead)
    if verb not in _WRITE_OPS:
        return None
    rest = tokens[1:]
    cut = next((i for i, w in enumerate(rest) if w.lower() in _PREPOSITIONS), len(rest))
    obj = [w for w in rest[:cut] if w.lower() not in _ARTICLES]
    if not obj:
        return None
    place = rest[cut:] if cut < len(rest) and rest[cut].lower() not in {"and", "or"} else []
    return Gloss(verb, obj[:_MAX_WORDS], place[: max(0, _MAX_WORDS - len(obj))])


def glossed_write(tool: ToolSpec, name_words: list[str]) -> tuple[Operation, str] | None:
    """The write a name with no known verb performs, read from its description: the name's
    leading word is taken as a verb when the description's leading write verb acts on a noun
    the rest of the name names (`append_insight`: "Add a business insight to the memo" is a
    create of insights; "Add days to a date" on `shift_date` creates nothing)."""
    if len(name_words) < 2:
        return None
    gloss = description_gloss(tool)
    if gloss is None:
        return None
    head, nouns = name_words[0], {W.singular(w) for w in name_words[1:]}
    acted_on = nouns & gloss.nouns()
    if head in nouns or not acted_on:
        return None
    op = _WRITE_OPS[gloss.verb]
    # "Adds the tweet to bookmarks" given a required `tweet_id`: the record exists already; it is
    # put somewhere, not created.
    if op == "create" and any(_id_of(a) in acted_on for a in tool.required):
        return None
    return op, head


def _id_of(arg: str) -> str | None:
    ws = W.split_words(arg)
    return "_".join(W.singular(w) for w in ws[:-1]) if len(ws) >= 2 and ws[-1] == "id" else None


def write_confirmation(tool: ToolSpec) -> str | None:
    """The sentence a write's description implies once done: "Add a business insight to the
    memo" -> "Business insight added to the memo"; None when it does not lead with a write verb."""
    gloss = description_gloss(tool)
    if gloss is None:
        return None
    words = [*gloss.obj, W.past(gloss.verb), *gloss.place]
    text = " ".join(words)
    return text[:1].upper() + text[1:]
