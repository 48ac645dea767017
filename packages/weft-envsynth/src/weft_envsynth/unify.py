"""Entity unification: which real entity an id-like argument refers to.

Argument names are roles, not tables: `send_money(receiver_id)` pays a contact that `add_contact`
created, `book_flight(card_id)` charges the credit card `register_credit_card` registered. An
argument whose name alone names no entity of the tool set is resolved from the rest of its
definition, in this order, and left alone (its own reference table) when the evidence is missing
or ambiguous:

1. its description names an entity next to an id word ("User ID of the user", "the contact's id",
   "The ID of the credit card");
2. its name is a role prefix on an entity (`from_account_id`, `target_user_id`);
3. its name is the head of exactly one written entity's name (`card_id` -> `credit_card`);
4. its name is a role a person plays (`receiver`, `recipient`, `payee`, `assignee`) and the tool
   set writes exactly one entity of people.

Arguments without an id suffix are references only when their description says they carry an
id of a known entity (`recipient`: "the contact's id") or their name is `<entity>_number`.
"""

from __future__ import annotations

import re
from typing import Any

from weft_envsynth._internal import words as W
from weft_envsynth._internal.jsonschema import schema_type, string_enum

PEOPLE = {
    "customer", "employee", "user", "contact", "person", "member", "patient", "student", "agent",
    "client", "candidate", "attendee", "owner", "assignee", "author", "friend", "recipient",
    "account_holder", "cardholder", "traveler", "passenger", "guest", "buyer", "seller", "vendor",
}  # fmt: skip
# Roles a record plays in one call; stripped to find the entity (`from_account_id` -> account).
ROLE_PREFIXES = {
    "from", "to", "source", "src", "target", "destination", "dest", "dst", "origin", "sender",
    "receiver", "recipient", "payer", "payee", "beneficiary", "primary", "secondary", "other",
    "debit", "credit",
}  # fmt: skip
# Roles only people play (`receiver_id` with one entity of people is that entity).
PERSON_ROLES = {
    "receiver", "recipient", "sender", "payee", "payer", "beneficiary", "assignee", "owner",
    "author", "reviewer", "requester", "reporter", "buyer", "seller", "participant", "invitee",
    "follower", "friend", "addressee", "creator", "approver",
}  # fmt: skip
# "number" is not one: "the contact number to call" is a phone number, not a contact.
_ID_WORDS = {"id", "ids", "identifier", "identifiers", "key", "uuid"}
_NUMBER_WORDS = {"number", "no", "num"}
_ARTICLES = {"the", "a", "an", "this", "that", "its"}


def is_person(entity: str) -> bool:
    return entity in PEOPLE or entity.split("_")[-1] in PEOPLE


def _desc_words(description: str) -> list[str]:
    # "contact's" -> contact: the possessive 's' is dropped, not kept as a word.
    text = re.sub(r"'s\b", "", description.lower())
    return [W.singular(w) for w in re.findall(r"[a-z0-9]+", text)]


def described_entity(description: str, real: set[str]) -> str | None:
    """The one real entity the description names next to an id word ("User ID of the user to
    send the message to" -> user; "ID of the credit card" -> credit_card); None when none or
    several different ones are named so."""
    words = _desc_words(description)
    found: set[str] = set()
    for ent in real:
        parts = ent.split("_")
        n = len(parts)
        for i in range(len(words) - n + 1):
            if words[i : i + n] != parts:
                continue
            after = words[i + n] if i + n < len(words) else ""
            before = [w for w in words[max(0, i - 3) : i] if w not in _ARTICLES]
            if after in _ID_WORDS or (
                len(before) >= 2 and before[-1] == "of" and before[-2] in _ID_WORDS
            ):
                found.add(ent)
    # "ID of the credit card" also matches `card`: keep the longest names only.
    found = {e for e in found if not any(o != e and o.endswith("_" + e) for o in found)}
    return next(iter(found)) if len(found) == 1 else None


def resolve(
    stem: str, description: str, real: set[str], kept: set[str] | None = None
) -> str | None:
    """The real entity an id-like argument with name stem `stem` (`receiver` of `receiver_id`)
    refers to, by the rules of this module; None when the definition does not say. The name-only
    rules (a head word, a person's role) pick among `kept`, the entities tools write (default:
    all of `real`): a lookup table (`recommend_champion`) is no evidence for `champion_id`."""
    kept = real if kept is None else kept & real
    if stem in real:
        return stem
    named = described_entity(description, real)
    if named is not None:
        return named
    parts = stem.split("_")
    rest = [p for p in parts if p not in ROLE_PREFIXES]
    if rest and rest != parts and "_".join(rest) in real:
        return "_".join(rest)
    tails = [e for e in kept if e.endswith("_" + stem)]
    if len(tails) == 1:
        return tails[0]
    if parts[-1] in PERSON_ROLES:
        people = [e for e in kept if is_person(e)]
        if len(people) == 1:
            return people[0]
    return None


def reference_stem(arg: str, schema: Any) -> tuple[str, bool] | None:
    """The entity stem an argument names and whether it is an id (`*_id`) argument:
    `receiver_id` -> (receiver, True), `account_number` -> (account, False), `recipient` ->
    (recipient, False); None for flags, enums, arrays and objects."""
    if schema is not None and schema_type(schema) not in {None, "string", "integer", "number"}:
        return None
    if string_enum(schema):
        return None
    ws = W.split_words(arg)
    if len(ws) >= 2 and ws[-1] == "id":
        return "_".join(W.singular(w) for w in ws[:-1]), True
    if len(ws) >= 2 and ws[-1] in _NUMBER_WORDS:
        return "_".join(W.singular(w) for w in ws[:-1]), False
    if ws:
        return "_".join(W.singular(w) for w in ws), False
    return None


def argument_reference(arg: str, schema: Any, real: set[str]) -> str | None:
    """The real entity a non-`*_id` argument refers to: `<entity>_number` of a real entity, or an
    argument whose description says it carries an id of a real entity ("the contact's id")."""
    got = reference_stem(arg, schema)
    if got is None or got[1]:
        return None
    stem = got[0]
    desc = str(schema.get("description", "")) if isinstance(schema, dict) else ""
    if W.split_words(arg)[-1] in _NUMBER_WORDS:
        return stem if stem in real else None
    return described_entity(desc, real)
