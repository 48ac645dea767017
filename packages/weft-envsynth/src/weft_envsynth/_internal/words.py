"""Words in tool names: splitting, verbs, singular nouns and identifier-safe names."""

from __future__ import annotations

import keyword
import re

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")

# Verb -> operation. Order matters only through the first-verb-wins scan in tool_verb().
CREATE_VERBS = {
    "send",
    "compose",
    "draft",
    "create",
    "add",
    "new",
    "insert",
    "register",
    "open",
    "submit",
    "book",
    "schedule",
    "post",
    "make",
    "log",
    "record",
    "enroll",
    "issue",
    "place",
    "file",
    "hire",
    "invite",
    "generate",
    "upload",
    "save",
    "store",
    "remember",
    "put",
}
READ_VERBS = {
    "get",
    "fetch",
    "read",
    "retrieve",
    "show",
    "view",
    "describe",
    "lookup",
    "load",
    "detail",
    "inspect",
    "check",
}
LIST_VERBS = {"list", "browse", "all", "enumerate"}
SEARCH_VERBS = {
    "search",
    "find",
    "query",
    "filter",
    "lookup",
    "discover",
    "explore",
    "match",
    "scan",
}
UPDATE_VERBS = {
    "update",
    "edit",
    "modify",
    "set",
    "change",
    "patch",
    "rename",
    "assign",
    "move",
    "adjust",
    "reassign",
    "tag",
    "reschedule",
    "configure",
    "mark",
    "increment",
    "decrement",
    "transfer",
}
DELETE_VERBS = {
    "delete",
    "remove",
    "destroy",
    "drop",
    "purge",
    "erase",
    "unregister",
    "forget",
    "clear",
}

# Status-transition verbs and the state they lead to.
TRANSITION_VERBS: dict[str, str] = {
    "close": "closed",
    "resolve": "resolved",
    "approve": "approved",
    "reject": "rejected",
    "cancel": "cancelled",
    "complete": "completed",
    "ship": "shipped",
    "deliver": "delivered",
    "escalate": "escalated",
    "reopen": "open",
    "archive": "archived",
    "activate": "active",
    "deactivate": "inactive",
    "pay": "paid",
    "refund": "refunded",
    "confirm": "confirmed",
    "suspend": "suspended",
    "freeze": "frozen",
    "unfreeze": "active",
    "terminate": "terminated",
    "publish": "published",
    "unpublish": "draft",
    "accept": "accepted",
    "decline": "declined",
    "fulfill": "fulfilled",
    "start": "in_progress",
    "finish": "completed",
    "block": "blocked",
    "unblock": "active",
    "lock": "locked",
    "unlock": "active",
    "restore": "active",
    "enable": "enabled",
    "disable": "disabled",
    "void": "void",
    "settle": "settled",
    "dispatch": "dispatched",
    "return": "returned",
    "hold": "on_hold",
    "release": "released",
    "reserve": "reserved",
    "send": "sent",
    "checkin": "checked_in",
    "checkout": "checked_out",
}

FILE_NOUNS = {
    "file",
    "files",
    "directory",
    "directories",
    "folder",
    "folders",
    "dir",
    "document_file",
    "path",
}

# Words that never name an entity.
STOP_NOUNS = {
    "by",
    "id",
    "ids",
    "for",
    "of",
    "the",
    "a",
    "an",
    "to",
    "from",
    "in",
    "on",
    "with",
    "and",
    "or",
    "details",
    "detail",
    "info",
    "information",
    "data",
    "all",
    "new",
    "my",
    "current",
    "existing",
    "list",
    "item",
    "items",
    "entry",
    "entries",
    "record",
    "records",
    "status",
    "field",
    "fields",
    "tool",
    "mcp",
    "api",
    "using",
    "via",
    "into",
    "at",
    "is",
    "as",
    "be",
    "it",
    "this",
    "that",
}

LIMIT_ARGS = {
    "limit",
    "page_size",
    "per_page",
    "pagesize",
    "perpage",
    "max_results",
    "maxresults",
    "num_results",
    "numresults",
    "count",
    "top_k",
    "topk",
    "k",
    "n",
    "size",
    "max",
    "top",
    "max_items",
    "maxitems",
    "results",
    "number",
    "num",
    "first",
}
# Options that shape a call's output but never name state; the limits are among them.
OPTION_ARGS = LIMIT_ARGS | {
    "ascending",
    "cursor",
    "descending",
    "direction",
    "dry_run",
    "expand",
    "fields",
    "format",
    "include",
    "lang",
    "language",
    "last",
    "locale",
    "next_token",
    "offset",
    "order",
    "order_by",
    "orderby",
    "output_format",
    "page",
    "page_token",
    "pagetoken",
    "response_format",
    "skip",
    "sort",
    "sort_by",
    "sortby",
    "start",
    "timeout",
    "verbose",
}
QUERY_ARGS = {
    "query",
    "q",
    "search",
    "search_query",
    "searchquery",
    "keyword",
    "keywords",
    "term",
    "terms",
    "text",
    "prompt",
    "question",
    "search_term",
    "searchterm",
    "topic",
    "input",
}
PATH_ARGS = {
    "path",
    "file_path",
    "filepath",
    "filename",
    "file_name",
    "file",
    "directory",
    "dir",
    "folder",
    "dir_path",
    "directory_path",
    "folder_path",
    "relative_path",
    "target_path",
    "source",
    "destination",
    "src",
    "dst",
    "source_path",
    "destination_path",
    "target",
    "new_path",
    "old_path",
}
CONTENT_ARGS = {
    "content",
    "contents",
    "text",
    "data",
    "body",
    "file_content",
    "new_content",
    "file_text",
}
UNIQUE_FIELDS = {
    "email",
    "sku",
    "username",
    "slug",
    "code",
    "iban",
    "account_number",
    "employee_number",
    "handle",
    "isbn",
}


def split_words(name: str) -> list[str]:
    """'getCustomerOrders' / 'get-customer_orders' -> ['get', 'customer', 'orders']."""
    parts = re.split(r"[^A-Za-z0-9]+", name)
    words: list[str] = []
    for part in parts:
        if not part:
            continue
        words.extend(w.lower() for w in _CAMEL.split(part) if w)
    return words


_IRREGULAR = {
    "people": "person",
    "children": "child",
    "men": "man",
    "women": "woman",
    "data": "data",
    "series": "series",
    "news": "news",
    "status": "status",
    "address": "address",
    "analysis": "analysis",
    "analyses": "analysis",
    "indices": "index",
    "criteria": "criterion",
    "media": "media",
    "metadata": "metadata",
    "access": "access",
    "business": "business",
    "process": "process",
    "class": "class",
    "alias": "alias",
    "bus": "bus",
    "canvas": "canvas",
    "campus": "campus",
    "bonus": "bonus",
    "virus": "virus",
    "census": "census",
    "radius": "radius",
    "corpus": "corpus",
    "thesis": "thesis",
    "basis": "basis",
    "diagnosis": "diagnosis",
    "species": "species",
    "is": "is",
    "this": "this",
    "has": "has",
    "was": "was",
    "its": "its",
    "stats": "stats",
    "settings": "settings",
    "details": "details",
    "lyrics": "lyrics",
    "physics": "physics",
    "mathematics": "mathematics",
    "economics": "economics",
    "analytics": "analytics",
    "gas": "gas",
}


def singular(word: str) -> str:
    w = word.lower()
    if w in _IRREGULAR:
        return _IRREGULAR[w]
    if len(w) <= 3 or w.endswith(("ss", "us", "is")):
        return w
    if w.endswith("ies") and len(w) > 4:
        return w[:-3] + "y"
    if w.endswith(("ches", "shes", "xes", "zes", "sses")):
        return w[:-2]
    if w.endswith("s"):
        return w[:-1]
    return w


def plural(word: str) -> str:
    if word.endswith("y") and len(word) > 1 and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    if word.endswith(("s", "x", "z", "ch", "sh")):
        return word + "es"
    return word + "s"


_PAST = {
    "write": "wrote", "make": "made", "set": "set", "put": "put", "send": "sent", "get": "got",
    "run": "ran", "find": "found", "read": "read", "build": "built", "take": "took",
    "give": "gave", "mkdir": "created", "rm": "removed", "mv": "moved", "cp": "copied",
}  # fmt: skip
_DOUBLED = {"stop", "drop", "tag", "ship", "plan", "pin", "map", "zip", "log", "flag", "star"}


def past(verb: str) -> str:
    """'create' -> 'created', 'write' -> 'wrote', 'copy' -> 'copied' (a confirmation's verb)."""
    v = verb.lower()
    if v in _PAST:
        return _PAST[v]
    if v in _DOUBLED:
        return v + v[-1] + "ed"
    if v.endswith("e"):
        return v + "d"
    if v.endswith("y") and len(v) > 1 and v[-2] not in "aeiou":
        return v[:-1] + "ied"
    return v + "ed"


def identifier(name: str, *, prefix: str = "f") -> str:
    """A snake_case Python identifier for `name` that is not a keyword or a builtin clash."""
    words = split_words(name)
    ident = "_".join(words) if words else ""
    ident = re.sub(r"[^a-z0-9_]", "", ident)
    if not ident:
        ident = prefix
    if ident[0].isdigit():
        ident = f"{prefix}_{ident}"
    if keyword.iskeyword(ident) or keyword.issoftkeyword(ident) or ident in _RESERVED:
        ident = f"{ident}_"
    return ident


# Names a generated pydantic/SQLModel attribute must not take (they shadow BaseModel members).
_RESERVED = {
    "self",
    "cls",
    "metadata",
    "registry",
    "model_config",
    "model_fields",
    "model_computed_fields",
    "json",
    "dict",
    "copy",
    "schema",
    "schema_json",
    "fields",
    "validate",
    "construct",
    "parse_obj",
    "parse_raw",
    "parse_file",
    "from_orm",
    "update_forward_refs",
    "sqlmodel_update",
    "model_dump",
    "model_validate",
    "model_copy",
    "model_post_init",
    "model_extra",
    "model_fields_set",
    # names the generated class bodies use in annotations (a field 'str' would shadow the type)
    "str",
    "int",
    "float",
    "bool",
    "list",
    "sa",
    # SQLite keywords that SQLAlchemy does not quote (found by trying every keyword as a name)
    "nothing",
    "returning",
}


def class_name(name: str) -> str:
    words = split_words(name) or ["x"]
    cname = "".join(w.capitalize() for w in words)
    cname = re.sub(r"[^A-Za-z0-9]", "", cname)
    if not cname or cname[0].isdigit():
        cname = "T" + cname
    return cname


def id_prefix(entity: str) -> str:
    """'customer' -> 'CUS', 'support_ticket' -> 'ST': a stable prefix for generated string ids."""
    words = [w for w in entity.split("_") if w]
    if len(words) >= 2:
        return "".join(w[0] for w in words[:3]).upper()
    return (words[0][:3] if words else "ID").upper()
