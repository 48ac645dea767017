"""Fixtures of the atomic-task tests: real fixture bundles and an in-process validator fake.

`InProcessValidator` is a fake of MegaMCP for the Algorithm 1 unit tests: it really runs each
task's reference calls against the bundle's FastMCP server on a fresh copy of the seed DB and
evaluates the checks with weft-core on the real DB files, but in-process rather than over HTTP.
The MegaMCP path itself is covered by the integration tests.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
import tempfile
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from fastmcp.exceptions import ToolError

from weft_core.binding import SessionBinding, bind_session
from weft_core.checks import evaluate, evidence_from_paths
from weft_core.models import AtomicTask, EvaluationResult, LedgerEntry, ValidationEvidence
from weft_tasks.atomic.bundle import BundleView
from weft_tasks.atomic.execution import ToolReturn, input_values, render_checks, run_calls

DATA = Path(__file__).parent / "data"


def _fixture_module() -> Any:
    spec = importlib.util.spec_from_file_location(
        "_weft_tasks_fixture_bundles", DATA / "fixture_bundles.py"
    )
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="session")
def bundle_dirs() -> dict[str, Path]:
    root = Path(tempfile.mkdtemp(prefix="weft-tasks-bundles-"))
    yield _fixture_module().build_bundles(root)
    shutil.rmtree(root, ignore_errors=True)


class _Caller:
    def __init__(self, server: Any, binding: SessionBinding, ledger: list[LedgerEntry]) -> None:
        self.server, self.binding, self.ledger = server, binding, ledger

    async def call(self, mcp: str, tool: str, arguments: dict[str, Any]) -> ToolReturn:
        with bind_session(self.binding):
            try:
                res = await self.server.call_tool(tool, arguments)
            except ToolError as exc:
                ret = ToolReturn(is_error=True, text=str(exc))
            else:
                text = "".join(getattr(c, "text", "") for c in res.content)
                ret = ToolReturn(is_error=False, value=res.structured_content, text=text)
        self.ledger.append(
            LedgerEntry(
                seq=len(self.ledger),
                session_id=self.binding.session_id,
                mcp=mcp,
                tool=tool,
                arguments=arguments,
                result=ret.value if not ret.is_error else ret.text,
                is_error=ret.is_error,
            )
        )
        return ret


class InProcessValidator:
    """Runs tasks on fresh seed copies against the bundle's server, checks with weft-core."""

    def __init__(self, fail_tools: Sequence[str] = ()) -> None:
        self.fail_tools = set(fail_tools)
        self.seen: list[str] = []
        self._servers: dict[Path, Any] = {}

    def server(self, bundle: BundleView) -> Any:
        if bundle.path not in self._servers:
            name = f"_weft_ip_{uuid.uuid4().hex[:8]}"
            spec = importlib.util.spec_from_file_location(
                name, bundle.path / "__init__.py", submodule_search_locations=[str(bundle.path)]
            )
            assert spec and spec.loader
            pkg = importlib.util.module_from_spec(spec)
            sys.modules[name] = pkg
            spec.loader.exec_module(pkg)
            self._servers[bundle.path] = importlib.import_module(f"{name}.server").create_server()
        return self._servers[bundle.path]

    async def validate(
        self, bundle: BundleView, tasks: Sequence[AtomicTask]
    ) -> list[ValidationEvidence]:
        out = []
        for task in tasks:
            self.seen.append(task.id)
            root = Path(tempfile.mkdtemp(prefix="weft-ip-"))
            try:
                db = root / "state.sqlite"
                shutil.copyfile(bundle.seed_path, db)
                binding = SessionBinding(session_id=task.id, db_path=db, workspace=root / "ws")
                ledger: list[LedgerEntry] = []
                env = input_values(task)
                run = await run_calls(
                    _Caller(self.server(bundle), binding, ledger),
                    bundle.mcp,
                    task.reference_calls,
                    env,
                )
                if not run.ok or self.fail_tools & set(task.tool_chain):
                    out.append(
                        ValidationEvidence(passed=False, error=run.diagnostic or "injected failure")
                    )
                    continue
                ev = evidence_from_paths(
                    bundle.seed_path, db, ledger, None, root / "ws", mcp=bundle.mcp
                )
                res: EvaluationResult = evaluate(render_checks(task.checks, env), ev)
                out.append(
                    ValidationEvidence(passed=res.passed, evaluation=res, ledger_size=len(ledger))
                )
            finally:
                shutil.rmtree(root, ignore_errors=True)
        return out


@pytest.fixture
def scripted() -> Any:
    """A scripted chat model factory (weft_core.testing when available)."""
    try:
        from weft_core.testing import ScriptedChatModel
    except ImportError:  # pragma: no cover - until weft-core ships it
        ScriptedChatModel = None
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
    from langchain_core.messages import AIMessage, BaseMessage

    class _Fake(FakeMessagesListChatModel):
        def bind_tools(self, tools: Any, **kw: Any) -> Any:
            return self

    def make(responses: list[Any]) -> Any:
        msgs: list[BaseMessage] = [
            r if isinstance(r, BaseMessage) else AIMessage(content=r) for r in responses
        ]
        return _Fake(responses=msgs)

    del ScriptedChatModel
    return make
