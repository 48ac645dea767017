"""`weft-train`: build, serve and train Weft's own policies.

weft-train init-policy DIR [--preset tiny|mini|small|base] [--seed S] [--corpus FILE --merges N]
weft-train serve MODEL_DIR [--host H] [--port P]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from weft_core.exceptions import UserError, WeftRuntimeError


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="weft-train", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    i = sub.add_parser("init-policy", help="write a from-scratch Qwen3 policy + tokenizer to DIR")
    i.add_argument("dir", type=Path, help="output model folder")
    i.add_argument("--preset", default="tiny", choices=["tiny", "mini", "small", "base"])
    i.add_argument("--seed", type=int, default=0, help="initialisation seed")
    i.add_argument("--corpus", type=Path, default=None, help="text file to learn BPE merges from")
    i.add_argument("--merges", type=int, default=0, help="BPE merges to learn from --corpus")
    s = sub.add_parser("serve", help="OpenAI-compatible chat server with vLLM's token fields")
    s.add_argument("model_dir", type=Path, help="a Hugging Face model folder")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=8000)
    s.add_argument("--name", default=None, help="model name to answer to (default: folder name)")
    s.add_argument(
        "--threads",
        type=int,
        default=0,
        help="torch intra-op threads (0 = torch's default; 1 is fastest on a busy small machine)",
    )
    return ap


def _init_policy(args: argparse.Namespace) -> int:
    from weft_core.console import get_console
    from weft_train.errors import TrainUserError
    from weft_train.policy import Policy, init_policy, parameter_count

    corpus = None
    if args.corpus is not None:
        if not args.corpus.is_file():
            raise TrainUserError(f"--corpus {args.corpus}: no such file")
        corpus = args.corpus.read_text(encoding="utf-8").splitlines()
    out = init_policy(args.dir, args.preset, seed=args.seed, corpus=corpus, merges=args.merges)
    policy = Policy.load(out)
    get_console().print(
        f"policy {out}: Qwen3, {parameter_count(policy.model):,} parameters, "
        f"vocabulary {len(policy.tokenizer)}"
    )
    return 0


def _serve(args: argparse.Namespace) -> int:
    from weft_train.serve import serve

    if args.threads > 0:
        import torch

        torch.set_num_threads(args.threads)
    serve(args.model_dir, host=args.host, port=args.port, name=args.name)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    from weft_core.console import get_console

    try:
        if args.command == "init-policy":
            return _init_policy(args)
        return _serve(args)
    except UserError as exc:
        get_console().error(f"weft-train {args.command}: {exc}")
        return 2
    except WeftRuntimeError as exc:
        get_console().error(f"weft-train {args.command}: failed: {exc}")
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
