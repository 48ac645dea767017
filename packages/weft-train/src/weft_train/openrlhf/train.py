"""`python -m weft_train.openrlhf.train OPENRLHF_ARGS...`: OpenRLHF 0.11.2's own PPO entry point
(`openrlhf.cli.train_ppo_ray`: its argument parser, its checks, its Ray launch) with the
atomic-turn overrides of `trainer` installed first. `launch` builds the arguments; run this
directly only with a command `launch --dry-run` printed."""

from __future__ import annotations

import contextlib
import runpy
import sys
from collections.abc import Iterator, Sequence
from typing import Any

OPENRLHF_ENTRY = "openrlhf.cli.train_ppo_ray"


class _Parsed(Exception):
    def __init__(self, args: Any) -> None:
        super().__init__("parsed")
        self.namespace = args


def _run_entry(argv: Sequence[str]) -> None:
    saved = sys.argv
    sys.argv = [OPENRLHF_ENTRY, *argv]
    try:
        runpy.run_module(OPENRLHF_ENTRY, run_name="__main__")
    finally:
        sys.argv = saved


@contextlib.contextmanager
def _swapped(owner: Any, name: str, value: Any) -> Iterator[None]:
    saved = getattr(owner, name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, saved)


def parse_openrlhf_args(argv: Sequence[str]) -> Any:
    """OpenRLHF's parsed and checked arguments (its nested namespace), without starting Ray: its
    `__main__` block parses and asserts, then `train(args)` stops at the first thing it builds.
    Raises SystemExit (unknown flag, bad value) or AssertionError (a check failed)."""
    import openrlhf.utils  # type: ignore[import-not-found]
    import ray  # type: ignore[import-not-found,unused-ignore]

    def stop(args: Any) -> Any:
        raise _Parsed(args)

    # train() starts Ray unless it is running, then builds the strategy: stop right there.
    with (
        _swapped(openrlhf.utils, "get_strategy", stop),
        _swapped(ray, "is_initialized", lambda: True),
    ):
        try:
            _run_entry(argv)
        except _Parsed as parsed:
            return parsed.namespace
    raise RuntimeError(f"{OPENRLHF_ENTRY} returned without reaching train()")


def main(argv: Sequence[str] | None = None) -> None:
    from weft_train.openrlhf.trainer import install

    install()
    _run_entry(sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    main()
