"""Initial state import: a state document becomes a session's DB rows and workspace files.

A state document is a JSON object. Each key names an entity (its table name, singular or plural,
in any case style) and holds its records: a list of objects, an object of objects (the inner keys
become primary keys where the records lack one) or one object (a single record). A nested object
or list of objects under a field that names another entity becomes that entity's rows, linked to
the parent through the child's foreign key. A value shaped like a file tree
(`{"name": {"type": "directory", "contents": {...}}}`, `{"type": "file", "content": "..."}`) or a
`files` object (`{"path": "text"}`) becomes workspace files. A single top folder is the
workspace root itself, whether the document's only file-tree key holds it
(`{"workspace": {"type": "directory", ...}}`) or a tree does (`{"tree": {"root": {...}}}`): its
contents fill the workspace. Two or more top nodes keep their names as folders and files.
A `repository` object (`{"branch", "message", "author", "email", "date"}`, strings) says how the
imported files are checked in, for bundles with version-control tools (`vcssem`): the first
commit of the session repository carries them (table `weft_vcs_baseline`).
For bundles with record-graph tools (`graphsem`), a key naming a record kind (`entities`,
`relations`: the argument its records come in, or the kind) holds its records, stored where the
tools keep them (table `weft_graph_record`).

Nothing is dropped silently: the report lists every key, field and record that did not fit the
schema, and why.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from pydantic import Field

from weft_core.binding import WorkspaceEscapeError, resolve_in_workspace
from weft_core.models import Entity, EntityModel, WeftModel
from weft_envsynth._internal import words as W
from weft_envsynth.errors import BundleError, EnvSynthUserError
from weft_envsynth.graphsem import RecordKind

_NATURAL_KEYS = ("symbol", "code", "username", "user_name", "slug", "name", "title")


_WRAPPER_WORDS = {"info", "details", "data", "record", "records", "list", "map", "table"}


class StateImportReport(WeftModel):
    """What an import wrote, and what did not fit the schema (with the reason)."""

    rows: dict[str, int] = Field(default_factory=dict, description="entity -> rows written")
    files: int = Field(default=0, description="Workspace files written.")
    folders: int = Field(default=0, description="Workspace folders created.")
    not_imported: list[str] = Field(
        default_factory=list, description="'where: why' for each value that did not fit."
    )


def _norm(name: str) -> str:
    return W.singular(W.identifier(name)) if W.identifier(name) else name


def _is_node(v: Any) -> bool:
    return (
        isinstance(v, dict)
        and v.get("type") in {"directory", "file"}
        and ("contents" in v or "content" in v or v.get("type") == "directory")
    )


def _is_tree(v: Any) -> bool:
    """{name: node, ...} where every value is a file or directory node."""
    return isinstance(v, dict) and bool(v) and all(_is_node(x) for x in v.values())


# The bundle runtime's table (graphrt): a record's key is the JSON list of its key fields.
_GRAPH_TABLE = (
    "CREATE TABLE IF NOT EXISTS weft_graph_record (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
    "kind TEXT NOT NULL, key TEXT NOT NULL, body TEXT NOT NULL, UNIQUE (kind, key))"
)


class _Importer:
    def __init__(
        self,
        model: EntityModel,
        conn: sqlite3.Connection,
        ws: Path,
        kinds: list[RecordKind] | None = None,
    ) -> None:
        self.kinds: dict[str, RecordKind] = {}
        for k in kinds or []:
            self.kinds.setdefault(k.collection, k)
            self.kinds.setdefault(k.name, k)
            self.kinds.setdefault(_norm(k.collection), k)
        self.model = model
        self.conn = conn
        self.ws = ws
        self.report = StateImportReport()
        self._baseline = False  # a `repository` object was imported
        self.by_norm: dict[str, Entity] = {}
        for e in model.entities:
            self.by_norm.setdefault(_norm(e.name), e)
            self.by_norm.setdefault(e.name, e)
        self._next_int: dict[str, int] = {}

    # -- workspace -------------------------------------------------------------------------

    def write_tree(self, tree: dict[str, Any], where: Path, label: str) -> None:
        for name, node in tree.items():
            if not _is_node(node):
                self.report.not_imported.append(f"{label}/{name}: not a file or directory node")
                continue
            try:
                path = resolve_in_workspace(self.ws, (where / name).as_posix())
            except WorkspaceEscapeError:
                self.report.not_imported.append(f"{label}/{name}: path outside the workspace")
                continue
            rel = where / name
            if node.get("type") == "directory":
                path.mkdir(parents=True, exist_ok=True)
                self.report.folders += 1
                contents = node.get("contents") or {}
                if isinstance(contents, dict):
                    self.write_tree(contents, rel, f"{label}/{name}")
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                content = node.get("content", "")
                path.write_text(
                    content if isinstance(content, str) else json.dumps(content), encoding="utf-8"
                )
                self.report.files += 1

    def write_files(self, files: dict[str, Any], label: str) -> None:
        for rel, text in files.items():
            try:
                path = resolve_in_workspace(self.ws, str(rel))
            except WorkspaceEscapeError:
                self.report.not_imported.append(f"{label}/{rel}: path outside the workspace")
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text if isinstance(text, str) else json.dumps(text), encoding="utf-8")
            self.report.files += 1

    # -- database --------------------------------------------------------------------------

    def entity_for(self, key: str) -> Entity | None:
        found = self.by_norm.get(key) or self.by_norm.get(_norm(key))
        if found is not None:
            return found
        words = W.split_words(key)
        # 'watch_list' -> 'watchlist'; 'account_info' / 'user_details' -> 'account' / 'user'.
        for cand in ("".join(words), "_".join(w for w in words if w not in _WRAPPER_WORDS)):
            if cand and (found := self.by_norm.get(cand) or self.by_norm.get(_norm(cand))):
                return found
        return None

    def records(self, entity: Entity, value: Any, where: str, parent: dict[str, Any]) -> None:
        if isinstance(value, list):
            for i, rec in enumerate(value):
                if isinstance(rec, dict):
                    self.insert(entity, rec, f"{where}[{i}]", None, parent)
                else:
                    self.report.not_imported.append(
                        f"{where}[{i}]: a {type(rec).__name__}, not a record of {entity.name}"
                    )
        elif isinstance(value, dict) and value and all(isinstance(v, dict) for v in value.values()):
            for k, rec in value.items():
                self.insert(entity, rec, f"{where}.{k}", k, parent)
        elif isinstance(value, dict):
            self.insert(entity, value, where, None, parent)
        else:
            self.report.not_imported.append(
                f"{where}: a {type(value).__name__}, not records of {entity.name}"
            )

    def insert(
        self,
        entity: Entity,
        rec: dict[str, Any],
        where: str,
        outer_key: Any,
        parent: dict[str, Any],
    ) -> None:
        fields = {f.name: f for f in entity.fields}
        by_norm = {_norm(f.name): f.name for f in entity.fields}
        row: dict[str, Any] = {}
        nested: list[tuple[Entity, Any, str]] = []
        for k, v in rec.items():
            name = W.identifier(k) if W.identifier(k) in fields else by_norm.get(_norm(k))
            if name is None and _norm(k) in {"id", "key"}:
                name = entity.key
            if name is not None:
                f = fields[name]
                if isinstance(v, (dict, list)) and f.type != "json":
                    child = self.entity_for(k)
                    if child is not None and child.name != entity.name:
                        nested.append((child, v, f"{where}.{k}"))
                        continue
                    v = json.dumps(v)
                row[name] = v
                continue
            child = self.entity_for(k)
            if child is not None and child.name != entity.name and isinstance(v, (dict, list)):
                nested.append((child, v, f"{where}.{k}"))
            else:
                self.report.not_imported.append(f"{where}.{k}: {entity.name} has no field for it")
        if row.get(entity.key) is None:
            row[entity.key] = self._key(entity, outer_key)
        if outer_key is not None:
            # {"AAPL": {...}}: the outer key is also the record's natural key (symbol, code, name)
            # when the record does not repeat it.
            natural = next(
                (f for f in entity.fields if f.name in _NATURAL_KEYS and not f.primary_key), None
            )
            if natural is not None and row.get(natural.name) is None and natural.type == "string":
                row[natural.name] = str(outer_key)
        for fname, value in parent.items():
            if fname in fields and row.get(fname) is None:
                row[fname] = value
        for fname, value in list(row.items()):
            if fields[fname].type == "json" and not isinstance(value, str):
                row[fname] = json.dumps(value)
        cols = ", ".join(f'"{c}"' for c in row)
        marks = ", ".join("?" for _ in row)
        try:
            self.conn.execute(
                f'INSERT OR REPLACE INTO "{entity.name}" ({cols}) VALUES ({marks})',
                list(row.values()),
            )
        except sqlite3.Error as exc:
            self.report.not_imported.append(f"{where}: rejected by the {entity.name} table: {exc}")
            return
        self.report.rows[entity.name] = self.report.rows.get(entity.name, 0) + 1
        for child, value, cwhere in nested:
            link = {
                f.name: row[entity.key]
                for f in child.fields
                if f.foreign_key == f"{entity.name}.{entity.key}"
            }
            self.records(child, value, cwhere, link)

    def _key(self, entity: Entity, outer: Any) -> Any:
        ktype = entity.field(entity.key).type
        if outer is not None:
            if ktype == "integer":
                try:
                    return int(outer)
                except (TypeError, ValueError):
                    pass
            else:
                return str(outer)
        if ktype == "integer":
            cur = self.conn.execute(f'SELECT MAX("{entity.key}") FROM "{entity.name}"').fetchone()
            n = max(int(cur[0] or 0), self._next_int.get(entity.name, 0)) + 1
            self._next_int[entity.name] = n
            return n
        n = self._next_int.get(entity.name, 0) + 1
        self._next_int[entity.name] = n
        return f"{W.id_prefix(entity.name)}-I{n:04d}"

    def graph_records(self, kind: RecordKind, value: Any, where: str) -> None:
        """Records of a record-graph kind: objects with the kind's key fields as strings; list
        fields lists of strings; other fields are reported."""
        if not isinstance(value, list):
            self.report.not_imported.append(f"{where}: {kind.name} records must be a list")
            return
        self.conn.execute(_GRAPH_TABLE)
        for i, item in enumerate(value):
            at = f"{where}[{i}]"
            if not isinstance(item, dict):
                self.report.not_imported.append(f"{at}: not an object")
                continue
            if not all(isinstance(item.get(f), str) and item.get(f) for f in kind.key):
                self.report.not_imported.append(f"{at}: needs {', '.join(kind.key)} (strings)")
                continue
            extra = sorted(set(item) - set(kind.fields))
            for f in extra:
                self.report.not_imported.append(f"{at}.{f}: {kind.name} has no field for it")
            record: dict[str, Any] = {}
            for f in kind.fields:
                v = item.get(f)
                if f in kind.lists:
                    if v is not None and not (
                        isinstance(v, list) and all(isinstance(x, str) for x in v)
                    ):
                        self.report.not_imported.append(f"{at}.{f}: not a list of strings")
                        v = None
                    v = list(v or [])
                record[f] = v
            key = json.dumps([record[f] for f in kind.key])
            self.conn.execute(
                "INSERT OR REPLACE INTO weft_graph_record (kind, key, body) VALUES (?, ?, ?)",
                (kind.name, key, json.dumps(record)),
            )
            self.report.rows[kind.name] = self.report.rows.get(kind.name, 0) + 1

    def baseline(self, value: dict[str, Any], where: str) -> None:
        known = {"branch", "message", "author", "email", "date"}
        for k in sorted(set(value) - known):
            self.report.not_imported.append(f"{where}.{k}: not one of {sorted(known)}")
        row = {k: value[k] for k in known & set(value) if isinstance(value[k], str) and value[k]}
        for k in sorted(known & set(value) - set(row)):
            self.report.not_imported.append(f"{where}.{k}: must be a non-empty string")
        self.conn.execute(
            "CREATE TABLE IF NOT EXISTS weft_vcs_baseline (id INTEGER PRIMARY KEY CHECK (id = 1), "
            "branch TEXT, message TEXT, author TEXT, email TEXT, date TEXT, tree TEXT)"
        )
        self._baseline = True
        cols = ["id", *sorted(row)]
        self.conn.execute(
            f"INSERT OR REPLACE INTO weft_vcs_baseline ({', '.join(cols)}) "
            f"VALUES ({', '.join('?' * len(cols))})",
            [1, *(row[k] for k in sorted(row))],
        )

    def run(self, document: dict[str, Any]) -> StateImportReport:
        top_nodes = [v for v in document.values() if _is_node(v)]
        sole_top_folder = len(top_nodes) == 1 and not any(_is_tree(v) for v in document.values())
        for key, value in document.items():
            where = str(key)
            if key == "repository" and isinstance(value, dict) and "message" in value:
                self.baseline(value, where)
                continue
            if (
                key == "files"
                and isinstance(value, dict)
                and all(isinstance(v, str) for v in value.values())
            ):
                self.write_files(value, where)
                continue
            if _is_tree(value):
                tops = list(value.items())
                if len(tops) == 1 and tops[0][1].get("type") == "directory":
                    # One top folder is the root the tools start in: its contents fill the workspace.
                    self.write_tree(
                        tops[0][1].get("contents") or {}, Path("."), f"{where}/{tops[0][0]}"
                    )
                else:
                    self.write_tree(value, Path("."), where)
                continue
            if _is_node(value):
                if value.get("type") == "directory" and sole_top_folder:
                    # The document's one top folder is the root, as inside a tree value above.
                    self.write_tree(value.get("contents") or {}, Path("."), where)
                else:
                    self.write_tree({key: value}, Path("."), "")
                continue
            kind = self.kinds.get(key) or self.kinds.get(_norm(key))
            if kind is not None:
                self.graph_records(kind, value, where)
                continue
            entity = self.entity_for(key)
            if entity is None:
                self.report.not_imported.append(
                    f"{where}: no entity or workspace tree matches this key"
                )
                continue
            self.records(entity, value, where, {})
        if self._baseline:
            # The files checked in are the workspace as imported, whatever is edited before the
            # repository's first use.
            tree = {
                p.relative_to(self.ws).as_posix(): p.read_text(encoding="utf-8", errors="replace")
                for p in sorted(self.ws.rglob("*"))
                if p.is_file() and ".git" not in p.relative_to(self.ws).parts
            }
            self.conn.execute("UPDATE weft_vcs_baseline SET tree = ?", (json.dumps(tree),))
        return self.report


def import_state(
    bundle_dir: str | Path,
    document: dict[str, Any] | str | Path,
    *,
    db_path: str | Path,
    workspace: str | Path,
) -> StateImportReport:
    """Load a state document into a session's DB (a copy of the bundle's seed.sqlite, or any DB
    with its schema) and workspace folder. Rows with a key that exists replace it."""
    bundle = Path(bundle_dir)
    try:
        model = EntityModel.model_validate_json((bundle / "entities.json").read_text())
    except (OSError, ValueError) as exc:
        raise BundleError(f"{bundle}: no readable entities.json ({exc})") from exc
    if not isinstance(document, dict):
        path = Path(document)
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise EnvSynthUserError(f"{path}: not a readable JSON state document ({exc})") from exc
        if not isinstance(document, dict):
            raise EnvSynthUserError(f"{path}: a state document must be a JSON object")
    kinds: list[RecordKind] = []
    if (bundle / "spec.json").is_file():
        from weft_core.models import MCPSpec
        from weft_envsynth.bindings import graph_tools, load_bindings

        try:
            spec = MCPSpec.model_validate_json((bundle / "spec.json").read_text())
        except ValueError as exc:
            raise BundleError(f"{bundle}: spec.json is not readable ({exc})") from exc
        kinds = graph_tools(spec, load_bindings(bundle)).kinds
    ws = Path(workspace)
    ws.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(db_path))
    try:
        report = _Importer(model, conn, ws, kinds).run(document)
        conn.commit()
    finally:
        conn.close()
    return report
