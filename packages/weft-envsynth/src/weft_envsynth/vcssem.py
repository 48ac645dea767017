"""Version-control semantics for tool sets that manage a repository: a working tree (the session
workspace), an index of staged content and a history of commits on branches.

A tool set is version-controlled when its tools take a repository path (an argument named for
a repository, or described as one) and their names and descriptions speak of the verbs of
version control: status, stage (add), unstage (reset), commit, log / history, diff (unstaged,
staged, against a revision), branches (list, create), checkout / switch, show. Each tool's verb
comes from its name words, its description and the roles its arguments can play (a commit needs
a message argument, a checkout a branch name, a show a revision), never from one name alone, and
no tool set or tool is named here. The bundle runtime (`vcsrt`) keeps the repository in the
session DB beside the workspace, so snapshots carry both.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field

from weft_core.models import MCPSpec, ToolSpec, WeftModel
from weft_envsynth._internal import words as W
from weft_envsynth._internal.jsonschema import schema_type, string_enum

VcsVerb = Literal[
    "status",
    "diff_unstaged",
    "diff_staged",
    "diff",
    "add",
    "reset",
    "commit",
    "log",
    "branches",
    "create_branch",
    "checkout",
    "show",
]
VcsRole = Literal[
    "repo", "files", "message", "name", "base", "revision", "limit", "since", "until",
    "kind", "contains", "not_contains", "context",
]  # fmt: skip

_REPO_WORDS = {"repo", "repository"}
_REV_WORDS = {"revision", "rev", "target", "ref", "commit", "sha", "treeish", "commitish"}
_VCS_TEXT = re.compile(
    r"\b(commit(s|ted)?|branch(es)?|stag(e|ed|ing)|working (tree|directory)|repositor(y|ies)|"
    r"revision)\b",
    re.I,
)
_QUOTED = re.compile(r"['\"`]([A-Za-z][\w-]{0,30})['\"`]")


class VcsSemantics(WeftModel):
    """A version-control tool's verb and which argument plays which role."""

    verb: VcsVerb
    roles: dict[str, VcsRole] = Field(default_factory=dict, description="argument -> role.")
    choices: dict[str, list[str]] = Field(
        default_factory=dict,
        description="argument -> the only values its description allows ('local', 'all').",
    )
    evidence: str = ""


def _arg_desc(tool: ToolSpec, arg: str) -> str:
    sch = tool.properties.get(arg)
    return str(sch.get("description", "") or sch.get("title", "")) if isinstance(sch, dict) else ""


def _role(tool: ToolSpec, arg: str) -> VcsRole | None:
    sch = tool.properties.get(arg) or {}
    words = set(W.split_words(arg))
    desc = _arg_desc(tool, arg).lower()
    t = schema_type(sch)
    if t == "array":
        items = sch.get("items") if isinstance(sch, dict) else None
        if words & {"file", "files", "path", "paths", "pathspec"} and (
            not isinstance(items, dict) or schema_type(items) in {None, "string"}
        ):
            return "files"
        return None
    if t in {"integer", "number"}:
        if "context" in words:
            return "context"
        if words & {"count", "limit", "max", "n", "number", "num"}:
            return "limit"
        return None
    if t not in {None, "string"}:
        return None
    # A local repository is a folder: `repo_path`, or a repository described as a path. A hosted
    # repository's name (`owner` + `repo` of a code-hosting API) is no working tree.
    if (
        words & _REPO_WORDS and words & {"path", "dir", "directory", "folder", "root"}
    ) or re.search(
        r"\bpath (to|of) the \w* ?repositor|\brepositor(y|ies) (path|folder|directory)\b", desc
    ):
        return "repo"
    if words & {"message", "msg"}:
        return "message"
    if "contains" in words or "contain" in words:
        return "not_contains" if words & {"not", "no"} else "contains"
    if words & {"timestamp", "date", "time", "since", "until", "after", "before"}:
        return "until" if words & {"end", "until", "before", "to"} else "since"
    if words & {"file", "files", "path", "paths"}:
        return "files"
    if words & {"base", "start", "from", "source"}:
        return "base"
    if words & _REV_WORDS:
        return "revision"
    if len(_QUOTED.findall(desc)) >= 2 or string_enum(sch):
        return "kind"
    if words & {"branch", "name"}:
        return "name"
    return None


def _choices(tool: ToolSpec, arg: str) -> list[str]:
    sch = tool.properties.get(arg) or {}
    return string_enum(sch) or list(dict.fromkeys(_QUOTED.findall(_arg_desc(tool, arg))))


def vcs_semantics(tool: ToolSpec) -> VcsSemantics | None:
    """The version-control verb of one tool, when its name, description and arguments agree on
    one (None otherwise). Requires a repository argument."""
    roles: dict[str, VcsRole] = {a: r for a in tool.properties if (r := _role(tool, a))}
    if "repo" not in roles.values():
        return None
    have = set(roles.values())
    words = set(W.split_words(tool.name))
    desc = " ".join(tool.description.split()).lower()
    read_only = bool((tool.annotations or {}).get("readOnlyHint") is True)
    verb: VcsVerb | None = None
    if words & {"diff", "diffs", "changes"} or desc.startswith(("shows changes", "show changes")):
        if "unstaged" in words or re.search(r"\bnot (yet )?staged\b|\bunstaged\b", desc):
            verb = "diff_unstaged"
        elif words & {"staged", "cached"} or re.search(r"\bstaged for commit\b", desc):
            verb = "diff_staged"
        elif "revision" in have:
            verb = "diff"
        else:
            verb = "diff_unstaged"
    elif "status" in words:
        verb = "status"
    elif words & {"log", "history"} or re.search(r"\bcommit (logs?|history)\b", desc):
        verb = "log"
    elif "unstage" in words or re.search(r"\bunstages?\b|\bstaged changes\b", desc):
        # Only a reset described as unstaging: `reset(mode, to)` moves a branch, which this
        # model does not serve.
        verb = "reset"
    elif words & {"add", "stage"} and "files" in have:
        verb = "add"
    elif "commit" in words and "message" in have and not read_only:
        verb = "commit"
    elif words & {"checkout", "switch"} and "name" in have:
        verb = "checkout"
    elif words & {"branch", "branches"} and words & W.CREATE_VERBS and "name" in have:
        verb = "create_branch"
    elif words & {"branch", "branches"} and (read_only or words & (W.LIST_VERBS | W.READ_VERBS)):
        verb = "branches"
    elif "show" in words and "revision" in have:
        verb = "show"
    if verb is None:
        return None
    unserved = [a for a in tool.required if a not in roles]
    if unserved:
        return None  # a required argument no role takes: the verb would ignore what it says
    if read_only and verb in {"add", "reset", "commit", "checkout", "create_branch"}:
        return None  # the server says it changes nothing: not a write, whatever its name says
    choices = {a: c for a, r in roles.items() if r == "kind" and (c := _choices(tool, a))}
    return VcsSemantics(
        verb=verb, roles=roles, choices=choices, evidence=f"words {sorted(words)}; roles {have}"
    )


def vcs_tool_set(spec: MCPSpec) -> dict[str, VcsSemantics]:
    """The version-control tools of `spec`: empty unless the descriptions speak of version
    control and the tools found can record history (a commit) and show it (status or log)."""
    if not any(_VCS_TEXT.search(t.description) for t in spec.tools):
        return {}
    found = {t.name: s for t in spec.tools if (s := vcs_semantics(t))}
    verbs = {s.verb for s in found.values()}
    if "commit" not in verbs or not verbs & {"status", "log"} or len(found) < 3:
        return {}
    return found
