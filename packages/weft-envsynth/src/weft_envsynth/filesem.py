"""Workspace semantics of file-oriented tools, read from the whole definition.

A tool set like a shell (`cd`, `ls`, `cat`, `mv`, `grep`, ...) names its tools with words no
create/read/update/delete rule knows. What they do is in the description ("Change the current
working directory", "Search for lines in a file ... that contain the pattern"), the parameters
(`source`/`destination`, `lines: integer`, `a: boolean`) and the documented response. This module
reads those and assigns each tool one *file verb* with real semantics (see the bundle runtime's
`shell()`), the role of each argument, and the documented response fields the result must carry.

Programmatic only: the evidence is scored by rules over names, descriptions and parameter
types; a verb is assigned only when the evidence is unambiguous, and never to a tool whose tool
set does not talk about files or folders.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field

from weft_core.models import ToolSpec, WeftModel
from weft_envsynth._internal import words as W
from weft_envsynth._internal.jsonschema import schema_type, string_enum

FileVerb = Literal[
    "navigate",
    "where",
    "list",
    "read",
    "tail",
    "head",
    "grep",
    "sort",
    "count",
    "diff",
    "find",
    "usage",
    "write",
    "touch",
    "mkdir",
    "move",
    "copy",
    "remove",
    "rmdir",
]
ArgRole = Literal["path", "target", "content", "pattern", "count", "mode", "flag", "other"]

# verb -> (tool-name words, description patterns). A name word is strong evidence, a description
# phrase is evidence on its own; both together decide ties.
_RULES: dict[str, tuple[set[str], list[str]]] = {
    "navigate": (
        {"cd", "chdir"},
        [r"\bchange (the )?(current )?(working )?director", r"\bnavigate to\b"],
    ),
    "where": ({"pwd", "cwd"}, [r"\b(return|print|show|get)s? (the )?current working director"]),
    "list": ({"ls", "dir", "listdir"}, [r"\blist (the )?(contents|files|entries)\b"]),
    "read": (
        {"cat", "read", "view"},
        [r"\b(display|read|show|print)s? the contents? of (a |the )?file"],
    ),
    "tail": ({"tail"}, [r"\blast (part|\w+ lines|lines)\b"]),
    "head": ({"head"}, [r"\bfirst (part|\w+ lines|lines)\b"]),
    "grep": ({"grep"}, [r"\bsearch(es)? for lines\b", r"\blines .*(contain|match)"]),
    "sort": ({"sort"}, [r"\bsort(s)? the contents?\b", r"\bsort .* line by line"]),
    "count": ({"wc"}, [r"\bcount (the )?number of (lines|words|characters)"]),
    "diff": ({"diff", "compare"}, [r"\bcompare two files\b", r"\bline by line\b.*\bcompare"]),
    "find": (
        {"find", "locate"},
        [r"\bfind (any )?(files?|director)", r"\bsearch(es)? for files\b"],
    ),
    "usage": ({"du"}, [r"\bdisk usage\b"]),
    "write": (
        {"echo", "write"},
        [r"\bwrite (the )?content to (a )?file", r"\bwrites? .* to a file"],
    ),
    "touch": ({"touch"}, [r"\bcreate (a )?(new )?(empty )?file\b"]),
    "mkdir": (
        {"mkdir", "makedirs"},
        [r"\bcreate (a )?(new )?director", r"\bcreate (a )?(new )?folder"],
    ),
    "move": ({"mv", "move", "rename"}, [r"\bmove (a )?(file|director)", r"\brename (a )?file"]),
    "copy": ({"cp", "copy"}, [r"\bcopy (a )?(file|director)"]),
    "remove": ({"rm", "remove", "delete", "unlink"}, [r"\b(remove|delete) (a )?file\b"]),
    "rmdir": ({"rmdir"}, [r"\b(remove|delete) (a |the )?(empty )?director"]),
}
# Verbs whose result is read-only and verbs that change the workspace (the contract's operation).
READ_VERBS = {
    "where",
    "list",
    "read",
    "tail",
    "head",
    "grep",
    "sort",
    "count",
    "diff",
    "find",
    "usage",
}
OPERATION: dict[str, str] = {
    **{v: "file_read" for v in READ_VERBS},
    "list": "file_list",
    "find": "file_list",
    "navigate": "file_read",  # the workspace files stay; only the session's cwd moves
    "write": "file_write",
    "touch": "file_write",
    "mkdir": "file_write",
    "move": "file_write",
    "copy": "file_write",
    "remove": "file_delete",
    "rmdir": "file_delete",
}
_FILE_CONTEXT = re.compile(r"\b(files?|director(y|ies)|folders?|file ?system|workspace)\b", re.I)
_PATTERN_ARGS = {"pattern", "regex", "query", "search", "keyword", "name", "term"}


class FileSemantics(WeftModel):
    """What a file-oriented tool does: its verb, argument roles and documented response fields."""

    verb: FileVerb
    roles: dict[str, ArgRole] = Field(default_factory=dict, description="argument -> role")
    response_fields: list[str] = Field(
        default_factory=list, description="Documented result fields, in order."
    )
    evidence: str = ""


def _text(tool: ToolSpec) -> str:
    # Tool sets often prefix every description with the same blurb about the whole server; the
    # part after "Tool description:" (when present) is about this tool.
    desc = tool.description
    if "tool description:" in desc.lower():
        desc = desc[desc.lower().rindex("tool description:") + len("tool description:") :]
    return " ".join(desc.split()).lower()


def response_fields(tool: ToolSpec) -> list[str]:
    out = tool.output_schema or {}
    props = out.get("properties") if isinstance(out, dict) else None
    return [str(k) for k in props] if isinstance(props, dict) else []


def _roles(tool: ToolSpec, verb: str) -> dict[str, ArgRole]:
    roles: dict[str, ArgRole] = {}
    paths = 0
    for arg, schema in tool.properties.items():
        ident = W.identifier(arg)
        st = schema_type(schema)
        if st == "boolean":
            roles[arg] = "flag"
        elif st in {"integer", "number"}:
            roles[arg] = "count"
        elif string_enum(schema) or ident == "mode":
            roles[arg] = "mode"
        elif ident in W.CONTENT_ARGS or "content" in ident:
            roles[arg] = "content"
        elif verb in {"grep", "find"} and (ident in _PATTERN_ARGS or ident.endswith("pattern")):
            roles[arg] = "pattern"
        elif st in {None, "string"}:
            roles[arg] = "path" if paths == 0 else ("target" if paths == 1 else "other")
            paths += 1
        else:
            roles[arg] = "other"
    return roles


def file_semantics(tool: ToolSpec, *, file_context: bool = True) -> FileSemantics | None:
    """The tool's file verb from its name words and description, or None when unclear.

    `file_context`: whether the tool set talks about files at all (see `file_tool_set`); without
    it only a name word that is a shell command of its own (`cd`, `ls`, `mkdir`) counts.
    """
    text = _text(tool)
    names = set(W.split_words(tool.name))
    scores: dict[str, int] = {}
    for verb, (name_words, patterns) in _RULES.items():
        s = 0
        if names & name_words:
            s += 2
        if any(re.search(p, text) for p in patterns):
            s += 2
        if s:
            scores[verb] = s
    if not scores:
        return None
    best = max(scores.values())
    top = sorted(v for v, s in scores.items() if s == best)
    if len(top) > 1:
        # "remove a directory" also says "remove"; the more specific rule wins when it matched
        # on the description too.
        for specific, general in (("rmdir", "remove"), ("grep", "find"), ("mkdir", "touch")):
            if specific in top and general in top:
                top.remove(general)
        if len(top) > 1:
            return None
    verb = top[0]
    if not file_context and not (names & _RULES[verb][0] and len(tool.name) <= 6):
        return None
    if not file_context and not _FILE_CONTEXT.search(text) and best < 4:
        return None
    roles = _roles(tool, verb)
    needs_path = verb in {
        "read",
        "tail",
        "head",
        "grep",
        "sort",
        "count",
        "diff",
        "write",
        "touch",
        "mkdir",
        "move",
        "copy",
        "remove",
        "rmdir",
        "navigate",
    }
    if needs_path and "path" not in roles.values():
        return None
    if verb in {"move", "copy", "diff"} and "target" not in roles.values():
        return None
    return FileSemantics(
        verb=verb,
        roles=roles,
        response_fields=response_fields(tool),
        evidence=f"name {sorted(names)} / description: {text[:80]!r}",
    )


def mentions_files(text: str) -> bool:
    """Whether a description talks about files, folders or a workspace."""
    return _FILE_CONTEXT.search(text) is not None


def semantic_args(roles: dict[str, str], args: dict[str, Any]) -> dict[str, Any]:
    """Arguments renamed to their roles (what the runtime's `shell()` takes)."""
    out: dict[str, Any] = {}
    for arg, role in roles.items():
        if arg in args and args[arg] is not None and role != "other":
            out.setdefault(role, args[arg])
    return out


_EDIT_VERBS = {"edit", "modify", "patch", "replace", "update"}


def edit_pairs(tool: ToolSpec) -> tuple[str, str, str] | None:
    """(edits argument, old-text field, new-text field) of an edit tool: an edit verb in the name
    and an array argument whose items pair an old text with a new one."""
    if not set(W.split_words(tool.name)) & _EDIT_VERBS:
        return None
    for name, sch in tool.properties.items():
        items = sch.get("items") if isinstance(sch, dict) and sch.get("type") == "array" else None
        props = items.get("properties") if isinstance(items, dict) else None
        if not isinstance(props, dict):
            continue
        words = {k: set(W.split_words(k)) for k in props}
        old = next((k for k, w in words.items() if w & {"old", "search", "find", "from"}), None)
        new = next(
            (k for k, w in words.items() if w & {"new", "replace", "replacement", "to"}), None
        )
        if old and new and old != new:
            return name, old, new
    return None


# ---------------------------------------------------------------------------------------------
# Text results: a file tool whose documented output is one string (`{"content": string}`)
# answers in text, and its description says how that text reads.

TextOp = Literal[
    "read", "read_many", "info", "list", "tree", "search", "roots", "write", "edit", "mkdir",
    "move", "delete",
]  # fmt: skip
_MARKER = re.compile(r"\[([A-Z]{2,10})\]")
_QUOTED_KEY = re.compile(r"['\"`]([a-z][A-Za-z]{1,20})['\"`]")
_INFO = re.compile(r"\b(metadata|information about|file info|stat(us)? of)\b")
_ROOTS = re.compile(
    r"\bdirectories (that )?(this server|it|you) (is |are )?allowed\b|\ballowed director"
)


class TextResult(WeftModel):
    """How a file tool's one documented string reads, from its definition."""

    field: str = Field(description="The documented output's one string property.")
    op: TextOp
    roles: dict[str, str] = Field(default_factory=dict, description="argument -> role.")
    markers: dict[str, str] = Field(
        default_factory=dict, description="'dir'/'file' -> the bracketed prefix described."
    )
    tree_keys: list[str] = Field(default_factory=list, description="Quoted entry keys described.")
    indent: int = 2
    sizes: bool = False
    message: str = Field(default="", description="A write's confirmation words.")
    pair: list[str] = Field(default_factory=list, description="An edit's old/new text fields.")
    info_keys: list[str] = Field(
        default_factory=list, description="The metadata a file-info tool says it returns."
    )


def _text_roles(tool: ToolSpec) -> dict[str, str]:
    roles: dict[str, str] = {}
    pair = edit_pairs(tool)
    for arg, sch in tool.properties.items():
        ident = W.identifier(arg)
        words = set(W.split_words(arg))
        st = schema_type(sch)
        desc = str(sch.get("description", "")).lower() if isinstance(sch, dict) else ""
        if pair is not None and arg == pair[0]:
            roles[arg] = "edits"
        elif st == "array" and words & {"exclude", "ignore"}:
            roles[arg] = "exclude"
        elif st == "array" and W.singular(ident) in W.PATH_ARGS | {"path"}:
            roles[arg] = "paths"
        elif st in {"integer", "number"} and ("first" in desc or words == {"head"}):
            roles[arg] = "head"
        elif st in {"integer", "number"} and ("last" in desc or words == {"tail"}):
            roles[arg] = "tail"
        elif st == "boolean" and words & {"dry", "preview"}:
            roles[arg] = "dry_run"
        elif ident in _PATTERN_ARGS or ident.endswith("pattern"):
            roles[arg] = "pattern"
        elif ident in W.CONTENT_ARGS or "content" in ident:
            roles[arg] = "content"
        elif st in {None, "string"} and string_enum(sch) is None:
            taken = list(roles.values())
            if ident in W.PATH_ARGS or "path" not in taken:
                roles[arg] = "path" if "path" not in taken else "target"
    return roles


def text_result(tool: ToolSpec, operation: str) -> TextResult | None:
    """The text a file tool answers with, when its documented output is one string; None else.

    The operation comes from the plain file operation and what the definition adds: an array of
    paths reads many files, "metadata" is a file's information, a "tree" is recursive, a pattern
    searches, no path at all lists the directories the server may use; a list's entry prefixes
    (`[FILE]`, `[DIR]`), a tree's entry keys ('name', 'type', 'children') and its indentation
    are read from the description."""
    out = tool.output_schema if isinstance(tool.output_schema, dict) else {}
    props = out.get("properties")
    if not isinstance(props, dict) or len(props) != 1:
        return None
    field, sch = next(iter(props.items()))
    if not isinstance(sch, dict) or schema_type(sch) != "string":
        return None
    text = _text(tool)
    names = set(W.split_words(tool.name))
    roles = _text_roles(tool)
    given = set(roles.values())
    op: TextOp
    if operation == "file_delete":
        op = "delete"
    elif operation == "file_write":
        if "edits" in given:
            op = "edit"
        elif "target" in given and "content" not in given:
            op = "move"
        elif "content" in given:
            op = "write"
        else:
            op = "mkdir"
    elif "paths" in given:
        op = "read_many"
    elif _INFO.search(text):
        op = "info"
    elif "tree" in names or re.search(r"\brecursive tree\b", text):
        op = "tree"
    elif "pattern" in given:
        op = "search"
    elif "path" not in given and _ROOTS.search(text):
        op = "roots"
    elif operation == "file_list" or names & {"list", "ls"}:
        op = "list"
    elif operation == "file_read":
        op = "read"
    else:
        return None
    markers: dict[str, str] = {}
    for m in _MARKER.finditer(tool.description):
        word = m.group(1).lower()
        kind = (
            "dir"
            if word.startswith("dir") or word == "folder"
            else "file"
            if word == "file"
            else None
        )
        if kind:
            markers.setdefault(kind, f"[{m.group(1)}]")
    indent = re.search(r"\b(\d)[- ]space indent", text)
    message = ""
    if op == "roots":  # a heading naming what is listed: "Allowed directories:"
        listed = [w for w in W.split_words(tool.name) if w not in W.LIST_VERBS | W.READ_VERBS]
        message = " ".join(listed).capitalize() + ":" if listed else ""
    if op in {"write", "mkdir", "move", "delete"}:
        words = W.split_words(tool.name)
        verb = next((w for w in words if w in _WRITE_WORDS), words[0] if words else op)
        noun = " ".join(w for w in words if w != verb and w not in {"file", "files"})
        message = " ".join(x for x in ("Successfully", W.past(verb), noun) if x)
    return TextResult(
        field=field,
        op=op,
        roles=roles,
        markers=markers,
        tree_keys=_QUOTED_KEY.findall(tool.description) if op == "tree" else [],
        indent=int(indent.group(1)) if indent else 2,
        sizes="size" in names or "sizes" in names,
        message=message,
        pair=list((edit_pairs(tool) or ("", "", ""))[1:]) if op == "edit" else [],
        info_keys=_info_keys(text) if op == "info" else [],
    )


# What a metadata description lists -> the key its line gets.
_INFO_KEYS = (
    ("size", r"\bsizes?\b"),
    ("created", r"\bcreat(ion|ed)\b"),
    ("modified", r"\bmodifi(ed|cation)\b"),
    ("accessed", r"\baccess(ed)? time\b"),
    ("permissions", r"\bpermissions?\b"),
    ("type", r"\btype\b"),
)


def _info_keys(text: str) -> list[str]:
    return [key for key, pattern in _INFO_KEYS if re.search(pattern, text)] or ["size", "type"]


_WRITE_WORDS = W.CREATE_VERBS | W.UPDATE_VERBS | W.DELETE_VERBS | {"mkdir", "mv", "rm", "write"}


class MediaResult(WeftModel):
    """A file read answered as a base64 content block, as the documented output lists it: one
    array property whose alternatives carry the encoded bytes with their MIME type, typed by
    media kind (`image`, `audio`) or embedded as a resource (`uri`, `blob`)."""

    field: str
    path: str = Field(description="The path argument.")
    kinds: dict[str, str] = Field(
        default_factory=dict, description="media major type -> the block's `type` value."
    )
    data_field: str = "data"
    resource: str = Field(default="", description="The resource block's `type`, if any.")


def _alternatives(sch: Any) -> list[dict[str, Any]]:
    items = sch.get("items") if isinstance(sch, dict) else None
    alts = (items.get("anyOf") or items.get("oneOf") or [items]) if isinstance(items, dict) else []
    return [a for a in alts if isinstance(a, dict) and isinstance(a.get("properties"), dict)]


def media_result(tool: ToolSpec, operation: str) -> MediaResult | None:
    """The content block a reading tool answers with, when its description says base64 and its
    documented output is one array of blocks carrying a MIME type; None else."""
    if operation != "file_read" or "base64" not in _text(tool):
        return None
    out = tool.output_schema if isinstance(tool.output_schema, dict) else {}
    props = out.get("properties")
    if not isinstance(props, dict) or len(props) != 1:
        return None
    field, sch = next(iter(props.items()))
    path = next((a for a, r in _text_roles(tool).items() if r == "path"), None)
    if path is None:
        return None
    found = MediaResult(field=field, path=path)
    for alt in _alternatives(sch):
        aprops = alt["properties"]
        kind = aprops.get("type") if isinstance(aprops.get("type"), dict) else {}
        values = [str(v) for v in (kind.get("enum") or [kind.get("const")]) if v]
        if "mimeType" in aprops and values:
            data = next((f for f, x in aprops.items() if f not in {"type", "mimeType"}), "data")
            found.data_field = data
            found.kinds.update({v: v for v in values})
        nested = aprops.get("resource") if isinstance(aprops.get("resource"), dict) else {}
        if values and "blob" in (nested.get("properties") or {}):
            found.resource = values[0]
    return found if found.kinds or found.resource else None
