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
