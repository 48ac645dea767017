"""Validation of record-graph tools (graphsem): each verb's effect is read back from the session
DB's record table with sqlite3 beside the tool (a created record is stored once, a note is on its
record, a deleted record and the links naming it are gone, reads find what was written) and the
refusal a record graph has (a note on a record that does not exist changes nothing)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from weft_core.models import ToolSpec
from weft_envsynth.graphsem import GraphSemantics, GraphToolSet, RecordKind


class GraphChecks:
    """Mixin of the validator: needs `call`, `record`, `db` and `graph` (the tool set)."""

    call: Any
    record: Any
    db: Path
    graph: GraphToolSet
    _graph_n: int = 0

    def _graph_rows(self, kind: str) -> list[dict[str, Any]]:
        conn = sqlite3.connect(str(self.db), timeout=30)
        try:
            rows = conn.execute(
                "SELECT body FROM weft_graph_record WHERE kind = ? ORDER BY seq", (kind,)
            )
            return [json.loads(r[0]) for r in rows]
        except sqlite3.OperationalError:  # no record written yet
            return []
        finally:
            conn.close()

    def _word(self) -> str:
        self._graph_n += 1
        return f"graphprobe{self._graph_n}"

    def _creator(self, kind: str) -> tuple[str, GraphSemantics] | None:
        return next(
            ((n, s) for n, s in self.graph.tools.items() if s.verb == "create" and s.kind == kind),
            None,
        )

    async def _make(self, kind: RecordKind) -> dict[str, Any] | None:
        """One new record of `kind` through the tool that creates it (its links' ends first)."""
        made = self._creator(kind.name)
        if made is None or made[1].argument is None:
            return None
        item: dict[str, Any] = {}
        for f in kind.fields:
            target = self.graph.kind(kind.refs.get(f))
            if target is not None:
                end = await self._make(target)
                if end is None:
                    return None
                item[f] = end[target.key[0]]
            else:
                item[f] = [self._word()] if f in kind.lists else self._word()
        res = await self.call(made[0], {made[1].argument: [item]})
        return None if res.is_error else item

    def _stored(self, kind: RecordKind, record: dict[str, Any]) -> dict[str, Any] | None:
        key = [record.get(f) for f in kind.key]
        return next(
            (r for r in self._graph_rows(kind.name) if [r.get(f) for f in kind.key] == key), None
        )

    async def _graph_ok(self, tool: ToolSpec, name: str, args: dict[str, Any]) -> Any:
        res = await self.call(tool.name, args)
        if res.is_error:
            self.record(
                tool.name, name, "query", False, "runtime", f"valid call failed: {res.text}", args
            )
            return None
        return res

    def _verdict(self, tool: ToolSpec, name: str, problem: str | None, args: Any) -> None:
        self.record(tool.name, name, "query", problem is None, "runtime", problem or "", args)

    async def graph_checks(self, tool: ToolSpec, sem: GraphSemantics) -> None:
        kind = self.graph.kind(sem.kind)
        named = next((k for k in self.graph.kinds if not k.refs), None)
        subject = kind or named
        if subject is None:
            self.record(tool.name, "graph_kind", "query", False, "mapping", "no record kind")
            return
        if sem.verb == "create" and sem.argument:
            item = await self._make(subject)
            problem = None if item and self._stored(subject, item) else "created record not stored"
            if item is not None and problem is None:
                before = len(self._graph_rows(subject.name))
                again = await self.call(tool.name, {sem.argument: [item]})
                if again.is_error or len(self._graph_rows(subject.name)) != before:
                    problem = "creating an existing record again stored it twice or failed"
            self._verdict(tool, "graph_create_stored_once", problem, None)
            return
        rec = await self._make(subject)
        if rec is None:
            self.record(tool.name, "graph_setup", "query", False, "runtime",
                        f"no tool creates a {subject.name}")  # fmt: skip
            return
        key = rec[subject.key[0]]
        if sem.verb in {"append", "detach"} and sem.argument and sem.item_ref and sem.item_list:
            note = rec[sem.target_list or ""][0] if sem.verb == "detach" else self._word()
            args = {sem.argument: [{sem.item_ref: key, sem.item_list: [note]}]}
            if await self._graph_ok(tool, f"graph_{sem.verb}", args) is None:
                return
            got = (self._stored(subject, rec) or {}).get(sem.target_list or "") or []
            present = note in got
            wrong = present if sem.verb == "detach" else not present
            self._verdict(tool, f"graph_{sem.verb}_on_record",
                          f"{note!r} {'still' if present else 'not'} in {key}" if wrong else None,
                          args)  # fmt: skip
            if sem.verb == "append":
                rows_before = self._graph_rows(subject.name)
                missing = {sem.argument: [{sem.item_ref: self._word(), sem.item_list: ["x"]}]}
                res = await self.call(tool.name, missing)
                ok = res.is_error and self._graph_rows(subject.name) == rows_before
                self.record(tool.name, "graph_append_unknown_refused", "boundary", ok, "runtime",
                            "" if ok else "a note on a missing record was accepted or changed state",
                            missing)  # fmt: skip
        elif sem.verb in {"delete", "delete_match"} and sem.argument:
            args = {sem.argument: [key] if sem.verb == "delete" else [rec]}
            if await self._graph_ok(tool, f"graph_{sem.verb}", args) is None:
                return
            gone = self._stored(subject, rec) is None
            links = [
                r
                for k in self.graph.kinds
                if k.name in sem.cascade
                for r in self._graph_rows(k.name)
                if key in [r.get(f) for f in k.refs]
            ]
            self._verdict(tool, f"graph_{sem.verb}_gone",
                          None if gone and not links else f"{key} or its links still stored",
                          args)  # fmt: skip
        elif sem.verb in {"read_all", "search", "open"}:
            args = (
                {}
                if sem.argument is None
                else {sem.argument: key if sem.verb == "search" else [key]}
            )
            res = await self._graph_ok(tool, f"graph_{sem.verb}_finds", args)
            if res is None:
                return
            seen = json.dumps(res.data, default=str) + res.text
            self._verdict(tool, f"graph_{sem.verb}_finds",
                          None if key in seen else f"{key} not in the result", args)  # fmt: skip
            if sem.verb == "open" and sem.argument:
                other = {sem.argument: [self._word()]}
                res = await self.call(tool.name, other)
                seen = json.dumps(res.data, default=str) + res.text
                self._verdict(tool, "graph_open_unknown_empty",
                              "an unknown name failed or matched" if res.is_error or key in seen
                              else None, other)  # fmt: skip
