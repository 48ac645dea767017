from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncIterator, Iterator

import pytest

from weft_core import console as wc
from weft_core.console import WeftConsole, build_table, progress, summary_table, table_text


@pytest.fixture
def out(monkeypatch: pytest.MonkeyPatch) -> Iterator[io.StringIO]:
    monkeypatch.delenv("WEFT_QUIET", raising=False)
    monkeypatch.delenv("CI", raising=False)
    buffer = io.StringIO()
    wc.set_console(WeftConsole(file=buffer, stderr_file=buffer, width=100))
    yield buffer
    wc.set_console(None)


def test_progress_over_iterable_prints_one_plain_line_when_not_a_tty(out: io.StringIO) -> None:
    assert list(progress(range(5), description="certify")) == [0, 1, 2, 3, 4]
    text = out.getvalue()
    assert "certify: 5/5 done in" in text
    assert "\x1b[" not in text


def test_progress_generator_without_len_counts(out: io.StringIO) -> None:
    gen = (i for i in range(3))
    assert sum(progress(gen, description="gen")) == 3
    assert "gen: 3 done" in out.getvalue()


def test_progress_manual_context_manager(out: io.StringIO) -> None:
    with progress(10, description="synthesize") as p:
        for _ in range(4):
            p.advance()
        p.advance(2)
    assert p.completed == 6
    assert "synthesize: 6/10" in out.getvalue()


async def test_progress_async_iteration_and_async_with(out: io.StringIO) -> None:
    async def agen() -> AsyncIterator[int]:
        for i in range(3):
            await asyncio.sleep(0)
            yield i

    got = [i async for i in progress(agen(), total=3, description="rollouts")]
    assert got == [0, 1, 2]

    async def work(p: wc.ProgressTracker[object]) -> None:
        await asyncio.sleep(0)
        p.advance()

    async with progress(total=4, description="gather") as p:
        await asyncio.gather(*(work(p) for _ in range(4)))
    text = out.getvalue()
    assert "rollouts: 3/3" in text and "gather: 4/4" in text


async def test_async_for_over_a_plain_list(out: io.StringIO) -> None:
    assert [i async for i in progress([1, 2], description="plain")] == [1, 2]


def test_sync_iteration_of_async_iterable_is_refused(out: io.StringIO) -> None:
    async def agen() -> AsyncIterator[int]:
        yield 1

    with pytest.raises(TypeError, match="async for"):
        list(progress(agen()))


def test_quiet_via_env_and_flag(out: io.StringIO, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WEFT_QUIET", "1")
    assert wc.is_quiet()
    list(progress(range(3), description="hidden"))
    summary_table("Hidden", ["a"], [[1]])
    assert out.getvalue() == ""
    wc.get_console().error("boom: fix the config")
    assert "boom: fix the config" in out.getvalue()
    monkeypatch.delenv("WEFT_QUIET")
    wc.set_quiet(True)
    list(progress(range(3), description="hidden"))
    assert "hidden" not in out.getvalue()
    wc.set_quiet(None)
    list(progress(range(1), description="shown"))
    assert "shown: 1/1" in out.getvalue()


def test_live_only_on_interactive_terminal_outside_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    assert not WeftConsole(file=io.StringIO()).live
    term = WeftConsole(file=io.StringIO(), force_terminal=True)
    assert term.live
    monkeypatch.setenv("CI", "true")
    assert not term.live


def test_live_progress_renders(monkeypatch: pytest.MonkeyPatch) -> None:
    buffer = io.StringIO()
    con = WeftConsole(file=buffer, live=True, width=100)
    assert list(con.progress(range(3), description="live bar")) == [0, 1, 2]
    assert "live bar" in buffer.getvalue() and "3/3" in buffer.getvalue()


def test_summary_table_rows_as_sequences_and_mappings(out: io.StringIO) -> None:
    table = summary_table(
        "Rollouts", ["task", "reward", "note"], [["t1", 1.0, None], ["t2", 0.3333333, "x"]]
    )
    text = out.getvalue()
    assert "Rollouts" in text and "t2" in text and "0.3333" in text
    assert table.row_count == 2
    summary_table("By dict", rows=[{"mcp": "shop", "calls": 3}, {"mcp": "crm", "calls": 1}])
    assert "crm" in out.getvalue()
    # The contract's short form: summary_table(title, rows).
    t = summary_table("Short", [{"a": 1}], show=False)
    assert [c.header for c in t.columns] == ["a"]


def test_summary_table_errors_name_the_row() -> None:
    with pytest.raises(ValueError, match="row 1 has 1 cells for 2 columns"):
        build_table("T", ["a", "b"], [[1, 2], [3]])
    with pytest.raises(ValueError, match="columns are needed"):
        build_table("T", None, [[1, 2]])


def test_table_text_is_plain() -> None:
    text = table_text(build_table("Plain", ["k", "v"], [["a", 1]], plain=True))
    assert "Plain" in text and "| a" in text
    assert "\x1b[" not in text


def test_no_console_is_created_at_import() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("weft_console_fresh", wc.__file__)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module._default is None
