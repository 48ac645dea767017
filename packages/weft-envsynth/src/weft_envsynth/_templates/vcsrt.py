"""Version-control tools of an EnvBundle (weft_envsynth.vcssem): the session workspace is the
working tree; the index, the commits and the branches live in the session DB (tables weft_vcs_*),
so snapshots, forks and restores carry the repository with the files.

A session whose DB has no repository yet starts one on first use: the files the workspace holds
then (seeded or imported) are its first commit on the default branch, the state a repository
with those files checked in and a clean working tree would be in."""

from __future__ import annotations

import datetime as dt
import difflib
import hashlib
import json
import re
import sqlite3
from pathlib import Path
from typing import Any

from weft_core.binding import current_binding

from .runtime import ToolFailure, _root_relative, workspace_root

DEFAULT_BRANCH = "master"
AUTHOR = ("weft", "weft@example.org")
BASELINE_MESSAGE = "Initial commit"
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS weft_vcs_blob (hash TEXT PRIMARY KEY, content TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS weft_vcs_commit (sha TEXT PRIMARY KEY, parent TEXT, "
    "message TEXT NOT NULL, author TEXT NOT NULL, email TEXT NOT NULL, at TEXT NOT NULL, "
    "tree TEXT NOT NULL, seq INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS weft_vcs_ref (name TEXT PRIMARY KEY, sha TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS weft_vcs_head (id INTEGER PRIMARY KEY CHECK (id = 1), "
    "ref TEXT, sha TEXT)",
    "CREATE TABLE IF NOT EXISTS weft_vcs_index (path TEXT PRIMARY KEY, hash TEXT NOT NULL)",
)
_BAD_REF = re.compile(r"(^[-/.])|(\.\.)|([\s~^:?*\[\\])|(/$)|(\.lock$)|(@\{)|(^@$)|(\.$)")
Tree = dict[str, str]  # path (posix, relative to the repository root) -> content hash


def _now() -> str:
    return dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat(sep=" ")


class Repo:
    """One call's view of the session repository (one sqlite transaction)."""

    def __init__(self, conn: sqlite3.Connection, root: Path) -> None:
        self.conn = conn
        self.root = root
        for stmt in _SCHEMA:
            conn.execute(stmt)
        if conn.execute("SELECT 1 FROM weft_vcs_head").fetchone() is None:
            self._init()

    # -- storage

    def _init(self) -> None:
        """Start the repository; an imported state's `repository` object (weft_vcs_baseline)
        names the branch and the commit its files are checked in as."""
        try:
            row = self.conn.execute(
                "SELECT branch, message, author, email, date, tree FROM weft_vcs_baseline"
            ).fetchone()
        except sqlite3.OperationalError:
            row = None
        branch, message, author, email, date, files = row or (None,) * 6
        self.conn.execute("INSERT INTO weft_vcs_head (id, ref, sha) VALUES (1, ?, NULL)",
                          (branch or DEFAULT_BRANCH,))  # fmt: skip
        if files:
            tree = {str(p): self.put(str(c)) for p, c in json.loads(files).items()}
        else:
            tree = self.worktree()
        if tree:
            self._set_index(tree)
            self.commit(
                message or BASELINE_MESSAGE,
                author=(author or AUTHOR[0], email or AUTHOR[1]),
                at=date,
            )

    def put(self, content: str) -> str:
        h = hashlib.sha1(f"blob {len(content.encode())}\0{content}".encode()).hexdigest()
        self.conn.execute("INSERT OR IGNORE INTO weft_vcs_blob VALUES (?, ?)", (h, content))
        return h

    def blob(self, h: str) -> str:
        row = self.conn.execute("SELECT content FROM weft_vcs_blob WHERE hash = ?", (h,)).fetchone()
        return str(row[0]) if row else ""

    def worktree(self) -> Tree:
        out: Tree = {}
        for p in sorted(self.root.rglob("*")):
            rel = p.relative_to(self.root).as_posix()
            if p.is_file() and not rel.startswith(".git/") and rel != ".git":
                out[rel] = self.put(p.read_text(encoding="utf-8", errors="replace"))
        return out

    def index(self) -> Tree:
        return {
            str(p): str(h) for p, h in self.conn.execute("SELECT path, hash FROM weft_vcs_index")
        }

    def _set_index(self, tree: Tree) -> None:
        self.conn.execute("DELETE FROM weft_vcs_index")
        self.conn.executemany("INSERT INTO weft_vcs_index VALUES (?, ?)", sorted(tree.items()))

    def head(self) -> tuple[str | None, str | None]:
        """(branch or None when detached, commit sha or None on an unborn branch)."""
        ref, sha = self.conn.execute("SELECT ref, sha FROM weft_vcs_head").fetchone()
        if ref is not None:
            return str(ref), self.branches().get(str(ref))
        return None, str(sha) if sha else None

    def branches(self) -> dict[str, str]:
        return {
            str(n): str(s)
            for n, s in self.conn.execute("SELECT name, sha FROM weft_vcs_ref ORDER BY name")
        }

    def commit_row(self, sha: str) -> dict[str, Any]:
        row = self.conn.execute(
            "SELECT sha, parent, message, author, email, at, tree FROM weft_vcs_commit WHERE sha = ?",
            (sha,),
        ).fetchone()
        if row is None:
            raise ToolFailure("not_found", f"unknown commit {sha}", 404)
        keys = ("sha", "parent", "message", "author", "email", "date", "tree")
        out = dict(zip(keys, row, strict=True))
        out["tree"] = json.loads(out["tree"])
        return out

    def tree_of(self, sha: str | None) -> Tree:
        return dict(self.commit_row(sha)["tree"]) if sha else {}

    def history(self, sha: str | None) -> list[dict[str, Any]]:
        out = []
        while sha:
            c = self.commit_row(sha)
            out.append(c)
            sha = c["parent"]
        return out

    # -- revisions

    def resolve(self, rev: Any, what: str = "revision") -> str:
        """A commit sha from a branch name, HEAD (with ~n / ^), or a sha prefix of 4+ hex digits."""
        if not isinstance(rev, str) or not rev.strip() or rev.startswith("-"):
            raise ToolFailure("invalid_revision", f"invalid {what}: {rev!r}")
        m = re.fullmatch(r"(.+?)((?:[~^]\d*)*)", rev.strip())
        base, moves = (m.group(1), m.group(2)) if m else (rev, "")
        branches = self.branches()
        sha: str | None
        if base == "HEAD":
            sha = self.head()[1]
        elif base in branches:
            sha = branches[base]
        elif re.fullmatch(r"[0-9a-f]{4,40}", base):
            hits = [
                r[0]
                for r in self.conn.execute(
                    "SELECT sha FROM weft_vcs_commit WHERE sha LIKE ?", (base + "%",)
                )
            ]
            sha = str(hits[0]) if len(hits) == 1 else None
        else:
            sha = None
        for step in re.findall(r"[~^]\d*", moves):
            n = int(step[1:] or 1)
            for _ in range(n):
                sha = self.commit_row(sha)["parent"] if sha else None
        if sha is None:
            raise ToolFailure("not_found", f"{what} '{rev}' did not resolve to a commit", 404)
        return sha

    # -- changes

    def commit(self, message: str, author: tuple[str, str] = AUTHOR, at: str | None = None) -> str:
        branch, parent = self.head()
        tree = self.index()
        seq = self.conn.execute("SELECT COUNT(*) FROM weft_vcs_commit").fetchone()[0]
        when = _date(at) if at else None
        at = when.replace(microsecond=0).isoformat(sep=" ") if when else _now()
        body = json.dumps([parent, sorted(tree.items()), message, at, seq])
        sha = hashlib.sha1(body.encode()).hexdigest()
        self.conn.execute(
            "INSERT INTO weft_vcs_commit VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (sha, parent, message, author[0], author[1], at, json.dumps(tree, sort_keys=True), seq),
        )
        if branch is not None:
            self.conn.execute("INSERT OR REPLACE INTO weft_vcs_ref VALUES (?, ?)", (branch, sha))
        else:
            self.conn.execute("UPDATE weft_vcs_head SET sha = ?", (sha,))
        return sha

    def changes(self) -> tuple[list[tuple[str, str]], list[tuple[str, str]], list[str]]:
        """(staged, unstaged, untracked): (kind, path) pairs as a status shows them."""
        head = self.tree_of(self.head()[1])
        index, work = self.index(), self.worktree()
        staged = [
            (_kind(head.get(p), index.get(p)), p)
            for p in sorted(set(head) | set(index))
            if head.get(p) != index.get(p)
        ]
        unstaged = [
            (_kind(index[p], work.get(p)), p) for p in sorted(index) if work.get(p) != index[p]
        ]
        untracked = [p for p in sorted(work) if p not in index]
        return staged, unstaged, untracked

    def write_tree(self, old: Tree, new: Tree) -> None:
        """Make the working tree hold `new` where it held `old` (a checkout)."""
        for p in old:
            if p not in new:
                (self.root / p).unlink(missing_ok=True)
        for p, h in new.items():
            if old.get(p) != h:
                f = self.root / p
                f.parent.mkdir(parents=True, exist_ok=True)
                f.write_text(self.blob(h), encoding="utf-8")


def _kind(before: str | None, after: str | None) -> str:
    return "new file" if before is None else "deleted" if after is None else "modified"


# ---------------------------------------------------------------------------------------------


def _repo_root(value: Any) -> Path:
    """The repository a call names must be the session workspace (its absolute path, `/` or
    `.`): a folder inside it is no repository of its own, one outside is not reachable."""
    root = workspace_root().resolve()
    if not isinstance(value, str):
        raise ToolFailure("invalid_arguments", "the repository path must be a string")
    rel = _root_relative(root, value.strip())
    if rel.strip("/") in {"", "."}:
        return root
    raise ToolFailure("not_found", f"not a repository: {value}", 404)


def _rel_path(root: Path, name: Any) -> str:
    if not isinstance(name, str) or not name.strip():
        raise ToolFailure("invalid_arguments", "a file path is required")
    rel = _root_relative(root, name.strip())
    # An absolute path names the repository only through the workspace folder's own path.
    if name.strip().startswith("/") and rel == name.strip():
        raise ToolFailure("invalid_path", f"path '{name}' is outside the repository")
    parts: list[str] = []
    for part in rel.strip("/").split("/"):
        if part in {"", "."}:
            continue
        if part == "..":
            if not parts:
                raise ToolFailure("invalid_path", f"path '{name}' is outside the repository")
            parts.pop()
        else:
            parts.append(part)
    return "/".join(parts)


def _unified(a: str, b: str, path: str, context: int, old: str | None, new: str | None) -> str:
    # Blob ids are content hashes in the common object format, so the index line names the
    # same objects any other repository holding these contents would.
    zero = "0" * 7
    head = [f"diff --git a/{path} b/{path}\n"]
    if old is None or new is None:
        head.append(f"{'new' if old is None else 'deleted'} file mode 100644\n")
        head.append(f"index {(old or zero)[:7]}..{(new or zero)[:7]}\n")
    else:
        head.append(f"index {old[:7]}..{new[:7]} 100644\n")
    lines = difflib.unified_diff(
        a.splitlines(keepends=True), b.splitlines(keepends=True),
        "/dev/null" if old is None else f"a/{path}", "/dev/null" if new is None else f"b/{path}",
        n=max(0, context),
    )  # fmt: skip
    return "".join(head + [ln if ln.endswith("\n") else ln + "\n" for ln in lines])


def _diff(repo: Repo, a: Tree, b: Tree, context: int) -> str:
    out = []
    for p in sorted(set(a) | set(b)):
        if a.get(p) != b.get(p):
            ta = repo.blob(a[p]) if p in a else ""
            tb = repo.blob(b[p]) if p in b else ""
            out.append(_unified(ta, tb, p, context, a.get(p), b.get(p)))
    return "".join(out)


def _status_text(repo: Repo) -> str:
    branch, sha = repo.head()
    staged, unstaged, untracked = repo.changes()
    lines = [f"On branch {branch}" if branch else f"HEAD detached at {(sha or '')[:7]}"]
    if sha is None:
        lines += ["", "No commits yet"]
    if staged:
        lines += ["Changes to be committed:", *(f"\t{k}:   {p}" for k, p in staged), ""]
    if unstaged:
        lines += ["Changes not staged for commit:", *(f"\t{k}:   {p}" for k, p in unstaged), ""]
    if untracked:
        lines += ["Untracked files:", *(f"\t{p}" for p in untracked), ""]
    if not staged:
        if unstaged:
            lines.append("no changes added to commit")
        elif untracked:
            lines.append("nothing added to commit but untracked files present")
        else:
            lines.append("nothing to commit, working tree clean")
    return "\n".join(lines).rstrip("\n")


def _date(value: Any) -> dt.datetime | None:
    """A point in time as a caller writes one: ISO dates and times, 'yesterday', 'N units ago'.
    Like a version-control system's lenient date reader, text that is no date means now."""
    if value is None or value == "":
        return None
    now = dt.datetime.now(dt.UTC)
    text = str(value).strip().lower()
    m = re.fullmatch(r"(\d+)\s+(second|minute|hour|day|week|month|year)s?\s+ago", text)
    if m:
        days = {
            "second": 1 / 86400,
            "minute": 1 / 1440,
            "hour": 1 / 24,
            "day": 1,
            "week": 7,
            "month": 30,
            "year": 365,
        }
        return now - dt.timedelta(days=int(m.group(1)) * days[m.group(2)])
    if text == "yesterday":
        return now - dt.timedelta(days=1)
    for fmt in (None, "%b %d %Y", "%d %b %Y"):
        try:
            d = dt.datetime.fromisoformat(text) if fmt is None else dt.datetime.strptime(text, fmt)
        except ValueError:
            continue
        return d if d.tzinfo else d.replace(tzinfo=dt.UTC)
    return now


def _connect() -> sqlite3.Connection:
    return sqlite3.connect(str(current_binding().db_path), timeout=30)


def vcs_tool(verb: str, a: dict[str, Any], choices: dict[str, list[str]]) -> dict[str, Any]:
    """Run one version-control tool call; `a` maps roles (repo, files, message, ...) to values."""
    root = _repo_root(a.get("repo"))
    conn = _connect()
    try:
        with conn:
            return _run(Repo(conn, root), verb, a, choices)
    finally:
        conn.close()


def _run(repo: Repo, verb: str, a: dict[str, Any], choices: dict[str, list[str]]) -> dict[str, Any]:
    given = a.get("context")
    ctx = given if isinstance(given, int) and not isinstance(given, bool) else 3
    branch, head = repo.head()
    if verb == "status":
        staged, unstaged, untracked = repo.changes()
        return {
            "status": _status_text(repo), "branch": branch,
            "staged": [{"change": k, "path": p} for k, p in staged],
            "unstaged": [{"change": k, "path": p} for k, p in unstaged], "untracked": untracked,
        }  # fmt: skip
    if verb == "diff_unstaged":
        work = repo.worktree()
        index = repo.index()
        return {"diff": _diff(repo, index, {p: h for p, h in work.items() if p in index}, ctx)}
    if verb == "diff_staged":
        return {"diff": _diff(repo, repo.tree_of(head), repo.index(), ctx)}
    if verb == "diff":
        target = repo.resolve(a.get("revision"), "target")
        index = repo.index()
        work = {p: h for p, h in repo.worktree().items() if p in index or p in repo.tree_of(target)}
        return {"target": a.get("revision"), "diff": _diff(repo, repo.tree_of(target), work, ctx)}
    if verb == "add":
        return _add(repo, a.get("files"))
    if verb == "reset":
        repo._set_index(repo.tree_of(head))
        return {"result": "All staged changes reset", "staged": []}
    if verb == "commit":
        message = a.get("message")
        if not isinstance(message, str) or not message.strip():
            raise ToolFailure("invalid_arguments", "a commit message is required")
        if repo.index() == repo.tree_of(head):
            raise ToolFailure(
                "nothing_to_commit", "No changes staged for commit; stage changes first"
            )
        sha = repo.commit(message)
        return {
            "result": f"Changes committed successfully with hash {sha}",
            "commit": sha,
            "branch": branch,
        }
    if verb == "log":
        return _log(repo, head, a)
    if verb == "branches":
        return _branches(repo, branch, a, choices)
    if verb == "create_branch":
        return _create_branch(repo, branch, head, a)
    if verb == "checkout":
        return _checkout(repo, head, a.get("name"))
    if verb == "show":
        return _show(repo, a.get("revision"))
    raise ToolFailure("invalid_arguments", f"unknown version-control verb {verb!r}")


def _add(repo: Repo, files: Any) -> dict[str, Any]:
    if isinstance(files, str):
        files = [files]
    if not isinstance(files, list) or not files:
        raise ToolFailure("invalid_arguments", "no files given to stage")
    work, index = repo.worktree(), repo.index()
    new = dict(index)
    for f in files:
        rel = _rel_path(repo.root, f)
        hits = [p for p in set(work) | set(index) if not rel or p == rel or p.startswith(rel + "/")]
        if not hits:
            raise ToolFailure("not_found", f"pathspec '{f}' did not match any files", 404)
        for p in hits:
            if p in work:
                new[p] = work[p]
            else:
                new.pop(p, None)
    if new == index:
        return {
            "result": "No changes were staged: the given paths had nothing new to stage",
            "staged": [],
        }
    repo._set_index(new)
    staged = sorted(p for p in set(new) | set(index) if new.get(p) != index.get(p))
    return {"result": "Files staged successfully", "staged": staged}


def _log(repo: Repo, head: str | None, a: dict[str, Any]) -> dict[str, Any]:
    limit = a.get("limit")
    since, until = _date(a.get("since")), _date(a.get("until"))
    out = []
    for c in repo.history(head):
        at = _date(c["date"])
        if at is None or (since and at < since) or (until and at > until):
            continue
        out.append(c)
    if isinstance(limit, int) and limit >= 0:
        out = out[:limit]
    entries = [
        f"Commit: {c['sha']}\nAuthor: {c['author']}\nDate: {c['date']}\nMessage: {c['message']}\n"
        for c in out
    ]
    return {
        "log": "\n".join(entries),
        "commits": [{k: c[k] for k in ("sha", "author", "date", "message")} for c in out],
    }


def _branches(
    repo: Repo, branch: str | None, a: dict[str, Any], choices: dict[str, list[str]]
) -> dict[str, Any]:
    kind = a.get("kind")
    allowed = next(iter(choices.values()), [])
    if allowed and kind not in allowed:
        raise ToolFailure(
            "invalid_arguments", f"Invalid branch type: {kind} (one of {', '.join(allowed)})"
        )
    names = list(repo.branches())
    if kind == "remote":
        names = []  # the session repository has no remotes
    for role, keep in (("contains", True), ("not_contains", False)):
        if a.get(role):
            sha = repo.resolve(a[role], "commit")
            names = [
                n
                for n in names
                if (sha in {c["sha"] for c in repo.history(repo.branches()[n])}) == keep
            ]
    text = "\n".join(f"{'*' if n == branch else ' '} {n}" for n in names)
    return {"branches": text, "names": names, "current": branch}


def _create_branch(
    repo: Repo, branch: str | None, head: str | None, a: dict[str, Any]
) -> dict[str, Any]:
    name, base = a.get("name"), a.get("base")
    if not isinstance(name, str) or _BAD_REF.search(name) or not name:
        raise ToolFailure("invalid_arguments", f"Invalid branch name: '{name}'")
    if base:
        if base not in repo.branches():
            raise ToolFailure("not_found", f"no branch named '{base}'", 404)
        base_name, sha = str(base), repo.branches()[str(base)]
    elif branch is None:
        raise ToolFailure(
            "invalid_arguments", "HEAD is detached: there is no current branch to branch from"
        )
    elif head is None:
        raise ToolFailure("invalid_arguments", f"branch '{branch}' has no commits yet")
    else:
        base_name, sha = branch, head
    if name in repo.branches():
        raise ToolFailure("conflict", f"Cannot create branch '{name}': it already exists", 409)
    repo.conn.execute("INSERT INTO weft_vcs_ref VALUES (?, ?)", (name, sha))
    return {"result": f"Created branch '{name}' from '{base_name}'", "branch": name, "commit": sha}


def _checkout(repo: Repo, head: str | None, name: Any) -> dict[str, Any]:
    if not isinstance(name, str) or not name or name.startswith("-"):
        raise ToolFailure("invalid_arguments", f"Invalid branch name: '{name}'")
    target = repo.resolve(name, "branch")
    old, new = repo.tree_of(head), repo.tree_of(target)
    index, work = repo.index(), repo.worktree()
    moving = [p for p in set(old) | set(new) if old.get(p) != new.get(p)]
    dirty = [p for p in moving if index.get(p) != old.get(p) or work.get(p) != old.get(p)]
    if dirty:
        raise ToolFailure(
            "conflict",
            f"local changes to {', '.join(sorted(dirty))} would be overwritten by checkout",
            409,
        )
    repo.write_tree(old, new)
    repo._set_index(
        {
            **{p: h for p, h in index.items() if p not in moving},
            **{p: new[p] for p in moving if p in new},
        }
    )
    if name in repo.branches():
        repo.conn.execute("UPDATE weft_vcs_head SET ref = ?, sha = NULL", (name,))
        return {"result": f"Switched to branch '{name}'", "branch": name}
    repo.conn.execute("UPDATE weft_vcs_head SET ref = NULL, sha = ?", (target,))
    return {"result": f"HEAD is now detached at {target[:7]}", "commit": target}


def _show(repo: Repo, revision: Any) -> dict[str, Any]:
    if not isinstance(revision, str) or not revision or revision.startswith("-"):
        raise ToolFailure("invalid_revision", f"Invalid revision: '{revision}'")
    rev, sep, path = revision.partition(":")
    sha = repo.resolve(rev or "HEAD")
    if sep:
        tree = repo.tree_of(sha)
        rel = path.strip("/")
        if rel in tree:
            return {"path": rel, "content": repo.blob(tree[rel])}
        under = sorted({p[len(rel) + 1 if rel else 0 :].split("/")[0] + ("/" if "/" in p[len(rel) + 1 if rel else 0 :] else "")
                        for p in tree if not rel or p.startswith(rel + "/")})  # fmt: skip
        if not under:
            raise ToolFailure(
                "not_found", f"path '{path}' does not exist in '{rev or 'HEAD'}'", 404
            )
        return {"path": rel, "entries": "\n".join(under)}
    c = repo.commit_row(sha)
    text = (
        f"commit {c['sha']}\nAuthor: {c['author']} <{c['email']}>\nDate:   {c['date']}\n\n"
        + "".join(f"    {ln}\n" for ln in str(c["message"]).rstrip("\n").split("\n"))
        + _diff(repo, repo.tree_of(c["parent"]), c["tree"], 3)
    )
    return {
        "commit": c["sha"],
        "author": c["author"],
        "date": c["date"],
        "message": c["message"],
        "show": text,
    }
