"""The cross-MCP identity of a field (its link key), used by grounding (one object, consistent
rows in every MCP) and by composition (which MCPs share which objects).

A link key is the part of a field name that identifies a business object across services:
`customer.email`, `requester.email` and `invoice.customer_email` all carry the key `email`.
Strong keys (email, phone, sku, ...) link whatever entity holds them; any other unique string
field links only entities of the same name (a `product.code` in two MCPs).
"""

from __future__ import annotations

import re

from weft_core.models import Entity

STRONG_KEYS = (
    "email",
    "phone",
    "sku",
    "username",
    "isbn",
    "iban",
    "vin",
    "domain",
    "handle",
    "account_number",
)


def link_key(entity: Entity, field_name: str) -> str | None:
    """The cross-MCP identity a field carries, or None when it identifies nothing."""
    try:
        f = entity.field(field_name)
    except KeyError:
        return None
    if f.type != "string" or f.foreign_key:
        return None
    if f.primary_key or field_name == entity.key:
        # ids identify an object across services only between entities of the same name
        # (envsynth seeds customer CUS-0001 identically in every bundle that has customers)
        return f"{entity.name}.{field_name}"
    name = field_name.lower()
    for key in STRONG_KEYS:
        if re.search(rf"(^|_){key}($|_)", name):
            return key
    if f.unique:
        return f"{entity.name}.{name}"
    return None
