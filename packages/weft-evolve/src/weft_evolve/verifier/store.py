"""Versioned verifiers on disk: ROOT/<task>/<node>/v<N>.json, never overwritten."""

from __future__ import annotations

import re
from pathlib import Path

from weft_evolve.verifier.models import GeneratedVerifier

_V = re.compile(r"^v(\d+)\.json$")


class VerifierStore:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def _dir(self, task_id: str, node_id: str) -> Path:
        return self.root / task_id / node_id

    def versions(self, task_id: str, node_id: str) -> list[int]:
        d = self._dir(task_id, node_id)
        if not d.is_dir():
            return []
        return sorted(int(m.group(1)) for p in d.iterdir() if (m := _V.match(p.name)))

    def latest(self, task_id: str, node_id: str) -> GeneratedVerifier | None:
        vs = self.versions(task_id, node_id)
        if not vs:
            return None
        return GeneratedVerifier.load(self._dir(task_id, node_id) / f"v{vs[-1]}.json")

    def save(self, verifier: GeneratedVerifier) -> GeneratedVerifier:
        vs = self.versions(verifier.task_id, verifier.node_id)
        v = verifier.model_copy(update={"version": (vs[-1] + 1) if vs else 1, "content_hash": None})
        v = v.sealed()
        path = self._dir(v.task_id, v.node_id) / f"v{v.version}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        v.save(path)
        return v
