"""Server-side verification of a group: weft-core checks or a registered Python verifier.

Evidence per MCP is the session's immutable initial DB, its DB at the checkpoint (the frozen
final DB for the final verification) and its ledger. Only the admin API can start it: the
verifier's content lives in the registry/group metadata and never in a session's reach.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from weft_core.checks import (
    Evidence,
    db_sides_read,
    evaluate,
    evidence_from_paths,
    reads_ledger,
    reads_workspace,
    tables_read,
)
from weft_core.exceptions import CheckError, UserError
from weft_core.models import Check, CheckOutcome, Verifier
from weft_megamcp._session import HostedGroup
from weft_megamcp.exceptions import MegaMCPUserError
from weft_megamcp.models import VerificationResult
from weft_megamcp.registry import Registry


def _paths(
    group: HostedGroup, registry: Registry, final_dbs: dict[str, Path]
) -> dict[str, dict[str, str | None]]:
    out: dict[str, dict[str, str | None]] = {}
    for m, s in group.sessions.items():
        initial = str(registry.snapshot_file(s.initial_uri)[0]) if s.initial_uri else None
        out[m] = {
            "initial_db": initial,
            "final_db": str(final_dbs[m]) if m in final_dbs else None,
            "ledger": str(s.root / "ledger.jsonl"),
            "workspace": str(s.workspace),
        }
    return out


def resolve_verifier(group: HostedGroup, registry: Registry) -> Verifier | bytes:
    """The group's verifier: weft-core checks, or a registered Python verifier's source. Raises
    CheckError (malformed) or a UserError (unknown); run_verifier reports those as a failed
    verification."""
    spec = group.verifier
    if spec is None:
        raise MegaMCPUserError(f"group {group.group_id} carries no verifier")
    if not isinstance(spec, str):
        return spec
    kind, content = registry.get_verifier(spec)
    if kind != "checks":
        return content
    try:
        return Verifier.model_validate_json(content)
    except ValidationError as exc:
        raise CheckError(f"registered verifier {spec!r} is malformed: {exc}") from exc


def evaluate_checks(
    checks: list[Check],
    bindings: dict[str, Any],
    paths: dict[str, dict[str, str | None]],
    *,
    frozen: bool,
) -> list[CheckOutcome]:
    # Only what the checks can read is captured: the DB sides and tables they name, the ledger
    # and the workspace when a check reads them (whole-DB captures, then opening the DBs of
    # MCPs no check of the checkpoint names, were most of a construction-time verification).
    evidence: dict[str, Evidence] = {}
    for m, p in paths.items():
        sides = db_sides_read(checks, m)
        ledger = p["ledger"] if reads_ledger(checks, m) else None
        evidence[m] = evidence_from_paths(
            initial_db=p["initial_db"] if "initial" in sides else None,
            final_db=p["final_db"] if "final" in sides else None,
            ledger=ledger if ledger and Path(ledger).exists() else [],
            workspace_after=p["workspace"] if reads_workspace(checks, m) else None,
            mcp=m,
            frozen=frozen,
            tables=tables_read(checks, m),
        )
    return evaluate(checks, evidence, bindings).outcomes


async def run_verifier(
    group: HostedGroup,
    registry: Registry,
    checkpoint: str,
    final_dbs: dict[str, Path],
    *,
    frozen: bool,
    timeout_s: float,
    resolved: Verifier | bytes | None = None,
) -> VerificationResult:
    """Judge `checkpoint` on `final_dbs`; `resolved`: the group's verifier when the caller has
    already looked it up (see `resolve_verifier`)."""
    if group.verifier is None:
        raise MegaMCPUserError(f"group {group.group_id} carries no verifier")
    paths = _paths(group, registry, final_dbs)
    try:
        spec = resolved if resolved is not None else resolve_verifier(group, registry)
        if isinstance(spec, bytes):
            return await _run_python(spec, checkpoint, group.bindings, paths, frozen, timeout_s)
        checks = spec.checks_at(checkpoint)
        if not checks:  # nothing to hold is no evidence of success
            raise CheckError(f"the verifier has no checks for checkpoint {checkpoint!r}")
        bindings = {**spec.bindings, **group.bindings}
        outcomes = await asyncio.to_thread(evaluate_checks, checks, bindings, paths, frozen=frozen)
        passed = all(o.passed for o in outcomes)
        return VerificationResult(
            checkpoint=checkpoint,
            outcomes=outcomes,
            reward=1.0 if passed else 0.0,
            passed=passed,
        )
    except (CheckError, UserError) as exc:
        return _failed(checkpoint, str(exc))


def _failed(checkpoint: str, error: str) -> VerificationResult:
    """A verification that could not judge the state: reward 0, no outcomes, the reason."""
    return VerificationResult(
        checkpoint=checkpoint, outcomes=[], reward=0.0, passed=False, error=error
    )


async def _run_python(
    source: bytes,
    checkpoint: str,
    bindings: dict[str, Any],
    paths: dict[str, Any],
    frozen: bool,
    timeout_s: float,
) -> VerificationResult:
    """Run a Python verifier in its own process (it may be slow or broken; the host is not)."""
    with tempfile.TemporaryDirectory(prefix="megamcp-verify-") as tmp:
        Path(tmp, "verifier.py").write_bytes(source)
        Path(tmp, "input.json").write_text(
            json.dumps(
                {"checkpoint": checkpoint, "bindings": bindings, "paths": paths, "frozen": frozen}
            )
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith("WEFT_MEGAMCP_")}
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "weft_megamcp._verifier_runner",
            tmp,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            cwd=tmp,
        )
        try:
            out, err = await asyncio.wait_for(proc.communicate(), timeout=timeout_s)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            return _failed(checkpoint, f"verifier timed out after {timeout_s:g} s")
        if proc.returncode != 0:
            tail = err.decode(errors="replace").strip().splitlines()[-1:] or ["no output"]
            return _failed(checkpoint, f"verifier failed: {tail[0][:300]}")
        try:
            data = json.loads(out.decode().strip().splitlines()[-1])
            outcomes = [CheckOutcome.model_validate(o) for o in data["outcomes"]]
            reward = data.get("reward")
            reward = None if reward is None else float(reward)
        except (ValueError, IndexError, KeyError, TypeError, ValidationError) as exc:
            return _failed(checkpoint, f"verifier output is malformed: {type(exc).__name__}")
        if not outcomes:
            return _failed(
                checkpoint, f"the verifier returned no outcomes for checkpoint {checkpoint!r}"
            )
        passed = all(o.passed for o in outcomes)
        return VerificationResult(
            checkpoint=checkpoint,
            outcomes=outcomes,
            reward=(1.0 if passed else 0.0) if reward is None else reward,
            passed=passed,
        )
