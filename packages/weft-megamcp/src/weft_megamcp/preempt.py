"""Preemption of tool code that holds the event loop past its call's deadline.

An async tool that never awaits (a CPU-bound loop) runs inside one step of its task, so
`asyncio.wait_for` cannot fire and every other session on the loop stalls. `guarded` runs each
step of a tool coroutine inside a watched region; a watchdog thread raises `ToolPreempted` in
the loop's thread when a region outlives its call's deadline (CPython's per-thread asynchronous
exception, delivered between bytecodes). It cannot interrupt a step stuck inside one C call
(e.g. `time.sleep` in an async tool): that returns before it is preempted.
"""

from __future__ import annotations

import ctypes
import threading
import time
from collections.abc import Awaitable, Coroutine, Generator
from typing import Any, TypeVar

T = TypeVar("T")

_set_async_exc = ctypes.pythonapi.PyThreadState_SetAsyncExc
_set_async_exc.argtypes = [ctypes.c_ulong, ctypes.py_object]
_set_async_exc.restype = ctypes.c_int


class ToolPreempted(BaseException):
    """Raised inside a tool step that ran past its deadline. A BaseException, so the tool's own
    `except Exception` cannot swallow it."""


class _Region:
    __slots__ = ("deadline", "fired")

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.fired = False


class LoopWatchdog:
    """One daemon thread watching the guarded regions of every loop thread in this process.

    Contract: while a thread is inside a region (one step of a guarded coroutine) past the
    region's deadline (time.monotonic()), the thread gets `ToolPreempted` raised; once the
    region is left, no exception from it can still arrive.
    """

    def __init__(self, poll_s: float = 0.05) -> None:
        self.poll_s = poll_s
        self._lock = threading.Lock()
        self._regions: dict[int, _Region] = {}
        self._thread: threading.Thread | None = None
        self.preempted = 0

    def _ensure_thread(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(
                target=self._watch, name="megamcp-loop-watchdog", daemon=True
            )
            self._thread.start()

    def _watch(self) -> None:
        while True:
            time.sleep(self.poll_s)
            now = time.monotonic()
            with self._lock:
                for tid, region in self._regions.items():
                    if not region.fired and now > region.deadline:
                        region.fired = True
                        self.preempted += 1
                        _set_async_exc(tid, ToolPreempted)

    def _enter(self, deadline: float) -> int:
        tid = threading.get_ident()
        with self._lock:
            self._regions[tid] = _Region(deadline)
        return tid

    def _leave(self, tid: int) -> None:
        with self._lock:
            region = self._regions.pop(tid, None)
            if region is not None and region.fired:
                # Fired but not yet delivered (the step returned first): drop it, so it cannot
                # surface later in unrelated code on this thread.
                _set_async_exc(tid, ctypes.py_object())

    def guarded(self, coro: Coroutine[Any, Any, T], deadline: float) -> Awaitable[T]:
        """`coro` with each of its steps preempted past `deadline`."""
        self._ensure_thread()
        return _Guarded(self, coro, deadline)


class _Guarded(Awaitable[T]):
    def __init__(self, dog: LoopWatchdog, coro: Coroutine[Any, Any, T], deadline: float) -> None:
        self.dog = dog
        self.coro = coro
        self.deadline = deadline

    def __await__(self) -> Generator[Any, Any, T]:
        coro = self.coro
        value: Any = None
        error: BaseException | None = None
        while True:
            tid = self.dog._enter(self.deadline)
            try:
                yielded = coro.send(value) if error is None else coro.throw(error)
            except StopIteration as stop:
                return stop.value  # type: ignore[no-any-return]
            finally:
                self.dog._leave(tid)
            try:
                value, error = (yield yielded), None
            except BaseException as exc:  # cancellation and throws go into the tool coroutine
                value, error = None, exc


LOOP_WATCHDOG = LoopWatchdog()
"""The process's watchdog: one thread serves every loop and host in the process."""
