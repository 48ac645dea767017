"""`weft-megamcp`: serve, register, inspect, stdio."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import sys
from pathlib import Path

from weft_core.exceptions import UserError, WeftError
from weft_megamcp.exceptions import MegaMCPUserError

_SERVE_EPILOG = """\
settings, highest first: these flags > environment variables WEFT_MEGAMCP_<SETTING>
(e.g. WEFT_MEGAMCP_PORT, WEFT_MEGAMCP_DATA_DIR, WEFT_MEGAMCP_ADMIN_TOKEN,
WEFT_MEGAMCP_REGISTRY_URL, WEFT_MEGAMCP_ALLOWED_HOSTS='["example.org"]') > a TOML file
(--config FILE, else ./megamcp.toml when present; keys at top level or in a [megamcp] table)
> defaults. Every setting: {fields}.
An unknown key or variable, a bad value, a busy port or an unusable data dir is one error
line and exit status 2."""


def _settings(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from weft_megamcp.settings import load_settings

    return load_settings(
        Path(args.config) if getattr(args, "config", None) else None,
        host=getattr(args, "host", None),
        port=getattr(args, "port", None),
        workers=getattr(args, "workers", None),
        data_dir=Path(args.data_dir) if getattr(args, "data_dir", None) else None,
        log_level=getattr(args, "log_level", None),
    )


def _check_data_dir(path: Path) -> None:
    if path.exists() and not path.is_dir():
        raise MegaMCPUserError(f"data dir {path} exists and is not a folder")


def _listen(host: str, port: int) -> socket.socket:
    from weft_megamcp.host import bind_socket

    try:
        return bind_socket(host, port)
    except (OSError, OverflowError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise MegaMCPUserError(f"cannot listen on {host}:{port}: {reason}") from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


def _serve(args: argparse.Namespace) -> int:
    from weft_megamcp._environ import scrub_environ

    settings = _settings(args)
    # Read once: no child process (workers, hosted servers, verifiers) inherits it, and
    # /proc/<pid>/environ no longer shows it.
    scrub_environ("WEFT_MEGAMCP_ADMIN_TOKEN")
    _check_data_dir(settings.data_dir)
    sock = _listen(settings.host, settings.port)
    if settings.workers > 1:
        from weft_megamcp._fork_server import start_fork_server

        start_fork_server()  # imports the workers' stack while this process imports the master
        from weft_megamcp.process import serve_master

        return serve_master(settings, sock)
    import uvicorn

    from weft_megamcp.app import HostASGI, HostCore
    from weft_megamcp.host import url_of, uvicorn_options
    from weft_megamcp.tuning import tune_serving_process

    try:
        core = HostCore(settings)
    except WeftError:
        raise
    except Exception as exc:  # registry/object store URLs are only reachable once tried
        sock.close()
        raise MegaMCPUserError(f"cannot start the host: {_first_line(exc)}") from None
    core.base_url = url_of(settings.host, sock.getsockname()[1])
    if settings.admin_token is None:
        print(f"admin token: {core.admin_token}", file=sys.stderr)
    print(
        f"MegaMCP serving on {core.base_url} (MCP at {core.base_url}/mcp, data in {core.data_dir})",
        file=sys.stderr,
    )
    server = uvicorn.Server(uvicorn.Config(HostASGI(core), **uvicorn_options(settings)))
    tune_serving_process(settings)
    server.run(sockets=[sock])
    if not server.started:
        print(
            "weft-megamcp: error: the host failed during startup (see the log above)",
            file=sys.stderr,
        )
        return 2
    return 0


def _suite_members(specs: list[str]) -> dict[str, list[str]]:
    """`--member NAME=COMMAND` values as {name: argv} (COMMAND split as a shell would)."""
    import shlex

    members: dict[str, list[str]] = {}
    for spec in specs:
        name, sep, command = spec.partition("=")
        if not sep or not name.strip() or not command.strip():
            raise UserError(f"--member {spec!r}: write NAME=COMMAND (e.g. git='mcp-server-git')")
        if name.strip() in members:
            raise UserError(f"--member {name.strip()!r} is given twice")
        try:
            members[name.strip()] = shlex.split(command)
        except ValueError as exc:
            raise UserError(f"--member {spec!r}: {exc}") from None
    return members


async def _register_async(args: argparse.Namespace) -> int:
    members = _suite_members(args.member or [])
    if members and not args.name:
        raise UserError("a suite (--member) needs --name")
    if args.url:
        from weft_megamcp.client import MegaMCPClient

        token = args.admin_token or os.environ.get("WEFT_MEGAMCP_ADMIN_TOKEN")
        if not token:
            raise UserError("--url needs --admin-token (or WEFT_MEGAMCP_ADMIN_TOKEN)")
        async with MegaMCPClient(args.url, token) as client:
            if members:
                rec = await client.register_suite(members, name=args.name)
            elif args.command:
                rec = await client.register_command(
                    args.command, name=args.name or Path(args.command[0]).stem
                )
            else:
                rec = await client.register(args.path, name=args.name)
    else:
        from weft_megamcp.objectstore import ObjectStore
        from weft_megamcp.registry import Registry

        settings = _settings(args)
        data = settings.data_dir.resolve()
        data.mkdir(parents=True, exist_ok=True)
        store = ObjectStore(settings.resolved_object_store_url, data / "cache" / "objects")
        registry = Registry(
            settings.resolved_registry_url,
            store,
            data / "modules",
            sandbox=settings.sandbox_policy(),
            register_timeout_s=settings.register_timeout_s,
            fork_probes=settings.register_fork_probes,
        )
        try:
            if members:
                rec = await registry.register_suite(members, name=args.name)
            elif args.command:
                rec = await registry.register_command(
                    args.command, name=args.name or Path(args.command[0]).stem
                )
            else:
                rec = await registry.register(args.path, name=args.name)
        finally:
            await registry.aclose()
    if args.json:
        print(rec.model_dump_json(indent=2))
    else:
        print(
            f"registered {rec.mcp_id} v{rec.version} ({rec.kind}, {len(rec.tools)} tools, source {rec.source_hash[:12]})"
        )
    return 0


def _register(args: argparse.Namespace) -> int:
    if sum(map(bool, (args.path, args.command, args.member))) != 1:
        raise UserError("give one of a PATH, --command ARGV... or --member NAME=COMMAND...")
    return asyncio.run(_register_async(args))


def _inspect(args: argparse.Namespace) -> int:
    from weft_megamcp.screening import main_inspect

    return main_inspect(args.path, as_json=args.json)


def _stdio(args: argparse.Namespace) -> int:
    from weft_megamcp import stdio_bridge

    return int(stdio_bridge.main_stdio(args.url, args.token, args.connect_within) or 0)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="weft-megamcp",
        description="MegaMCP: a shared MCP host with isolated per-session state.",
    )
    sub = p.add_subparsers(dest="cmd", required=True)

    from weft_megamcp.settings import MegaMCPSettings

    serve = sub.add_parser(
        "serve",
        help="run the host (MCP over streamable HTTP at /mcp, admin API at /admin)",
        epilog=_SERVE_EPILOG.format(fields=", ".join(MegaMCPSettings.model_fields)),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    serve.add_argument("--host", help="interface to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="TCP port (default: a free port)")
    serve.add_argument(
        "--workers", type=int, help="0/1: one process; N: prefork N worker processes"
    )
    serve.add_argument("--data-dir", help="data folder (default .megamcp)")
    serve.add_argument("--config", help="TOML settings file (default ./megamcp.toml if present)")
    serve.add_argument(
        "--log-level", help="critical, error, warning (default), info, debug or trace"
    )
    serve.set_defaults(fn=_serve)

    reg = sub.add_parser(
        "register", help="register an EnvBundle, a module, a stdio command or a suite of them"
    )
    reg.add_argument("path", nargs="?", help="EnvBundle folder, module package folder or .py file")
    reg.add_argument(
        "--command", nargs=argparse.REMAINDER, help="argv of a stdio MCP server (rest of the line)"
    )
    reg.add_argument(
        "--member",
        action="append",
        metavar="NAME=COMMAND",
        help="a suite member (repeat): stdio servers run side by side in each session over one "
        "workspace and DB, e.g. --member fs='mcp-server-filesystem ${WEFT_WORKSPACE}' "
        "--member git='mcp-server-git --repository ${WEFT_WORKSPACE}' --name repo",
    )
    reg.add_argument("--name", help="MCP id (default: from the bundle or file name)")
    reg.add_argument(
        "--url", help="register through a running host's admin API instead of the local registry"
    )
    reg.add_argument("--admin-token", help="admin token for --url")
    reg.add_argument("--data-dir", help="data folder of the local registry (default .megamcp)")
    reg.add_argument("--config", help="TOML settings file")
    reg.add_argument("--json", action="store_true", help="print the record as JSON")
    reg.set_defaults(fn=_register)

    ins = sub.add_parser(
        "inspect", help="screen a server module: load class, isolation tier and why"
    )
    ins.add_argument("path")
    ins.add_argument("--json", action="store_true")
    ins.set_defaults(fn=_inspect)

    st = sub.add_parser(
        "stdio", help="bridge one session to stdio for harnesses that only speak stdio"
    )
    st.add_argument("--url", required=True, help="the session's MCP URL (…/mcp)")
    st.add_argument(
        "--token", help="the session's bearer token (default $WEFT_MEGAMCP_SESSION_TOKEN)"
    )
    st.add_argument(
        "--connect-within",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="keep retrying a host that is not reachable yet this long (default 60)",
    )
    st.set_defaults(fn=_stdio)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.fn(args))
    except WeftError as exc:
        print(f"weft-megamcp: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except json.JSONDecodeError as exc:
        print(f"weft-megamcp: error: bad JSON: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a path given on the command line that cannot be used
        where = f" {exc.filename}" if exc.filename else ""
        print(f"weft-megamcp: error:{where}: {exc.strerror or exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
