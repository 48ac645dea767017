"""Static screening of an MCP server module for process-global side effects (paper §3.3.3).

MegaMCP imports many server modules into one worker process and serves many sessions from one
imported module. That is only safe when a tool keeps all of its state behind the session binding
(`weft_core.binding.current_binding()`); state a tool writes into the process (module globals,
closure variables of the server factory, `os.environ`, the working directory, `sys.path`, signal
handlers...) leaks between sessions or between modules. `screen_path` reads the source with `ast`
(it never imports or runs it) and returns a `ScreenReport`: every finding with its file and line,
the load class (how many instances may share one process) and the isolation tier.

Severity decides the class: any `error` finding puts the server in the dedicated tier (one process
per session, its own workspace); `warning` findings make it `limited` (a small cap per process);
`info` findings are reported but harmless. Servers whose source cannot be parsed, and servers
started from a command (third-party stdio servers), are dedicated.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from weft_megamcp._screening_ast import (
    _bound_names,
    _collect_scope,
    _dotted,
    _emptied_names,
    _is_absolute_path_literal,
    _is_mutable_value,
    _own_nodes,
    _root_name,
    _Scope,
    _string_literal,
    release_hook_names,
)
from weft_megamcp._screening_rules import (
    _CACHE_DECORATORS,
    _CALL_RULES,
    _FILE_OPENERS,
    _MUTATING_METHODS,
    _SKIP_DIRS,
    Severity,
)
from weft_megamcp.exceptions import MegaMCPUserError

__all__ = [
    "Finding",
    "IsolationTier",
    "LoadClass",
    "ScreenError",
    "ScreenReport",
    "ScreeningSettings",
    "Severity",
    "main_inspect",
    "render_inspect",
    "screen_command",
    "screen_path",
    "screen_source",
]


class ScreenError(MegaMCPUserError):
    """The path to screen does not exist or holds no Python source."""


class LoadClass(StrEnum):
    """How many instances of a server may share one worker process."""

    SHARED = "shared"
    LIMITED = "limited"
    DEDICATED = "dedicated"


class IsolationTier(StrEnum):
    """`shared_process`: imported as a module into a shared worker; `dedicated_process`: one
    process per session with its own workspace."""

    SHARED_PROCESS = "shared_process"
    DEDICATED_PROCESS = "dedicated_process"


class ScreeningSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="WEFT_MEGAMCP_SCREEN_")

    shared_cap: int = Field(
        default=100_000,
        ge=1,
        description="Instances per process for servers with a clean screen: nothing process-global "
        "to protect, so no real cap; placement balances the sessions workers hold instead.",
    )
    limited_cap: int = Field(
        default=4, ge=1, description="Instances per process for servers with warning findings."
    )


def session_cap(screen: dict[str, Any], settings: ScreeningSettings | None = None) -> int | None:
    """Sessions of a screened module one process may serve at once, from its recorded load
    class and this host's settings (so WEFT_MEGAMCP_SCREEN_* apply at placement, in one
    process and with workers alike); None for dedicated servers (a process per session)."""
    settings = settings or ScreeningSettings()
    load_class = screen.get("load_class", LoadClass.SHARED.value)
    if screen.get("tier") == IsolationTier.DEDICATED_PROCESS.value:
        return None
    if load_class == LoadClass.LIMITED.value:
        return settings.limited_cap
    return settings.shared_cap


class Finding(BaseModel):
    rule: str = Field(description="Rule identifier, e.g. 'global-write' or 'environ-write'.")
    file: str = Field(description="File path relative to the screened root.")
    line: int
    snippet: str = Field(description="The offending source line, stripped.")
    severity: Severity
    message: str = Field(description="Why this matters for shared serving.")


class ScreenReport(BaseModel):
    source: str = Field(description="What was screened: a path or a command line.")
    files: list[str] = Field(default_factory=list, description="Python files screened.")
    findings: list[Finding] = Field(default_factory=list)
    load_class: LoadClass
    cap: int = Field(description="Maximum instances of this server in one worker process.")
    tier: IsolationTier
    reasons: list[str] = Field(default_factory=list, description="Why this class and tier.")

    @property
    def shareable(self) -> bool:
        return self.tier is IsolationTier.SHARED_PROCESS


class _Screener(ast.NodeVisitor):
    def __init__(self, file: str, source: str, hook_names: set[str] | None = None) -> None:
        self.file = file
        self.lines = source.splitlines()
        self.findings: list[Finding] = []
        self.scopes: list[_Scope] = []
        self.aliases: dict[str, str] = {}  # local name -> dotted origin, from imports
        self.hook_names = hook_names or set()
        self.released: set[str] = set()  # module containers emptied by a release hook

    # reporting
    def add(self, node: ast.AST, rule: str, severity: Severity, message: str) -> None:
        line = getattr(node, "lineno", 0)
        snippet = self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""
        key = (rule, line)
        if any((f.rule, f.line) == key for f in self.findings):
            return
        self.findings.append(
            Finding(
                rule=rule,
                file=self.file,
                line=line,
                snippet=snippet[:160],
                severity=severity,
                message=message,
            )
        )

    # name resolution
    def canonical(self, node: ast.AST) -> str | None:
        name = _dotted(node)
        if name is None:
            return None
        head, _, rest = name.partition(".")
        origin = self.aliases.get(head)
        if origin:
            return f"{origin}.{rest}" if rest else origin
        return name

    @property
    def in_function(self) -> bool:
        return any(s.kind == "function" for s in self.scopes)

    def resolve(self, name: str) -> _Scope | None:
        """The scope that owns `name` as seen from the current function (None: builtin/unknown)."""
        current = self.scopes[-1]
        if name in current.globals_declared:
            return self.scopes[0]
        if name in current.locals and name not in current.nonlocals_declared:
            return current
        for scope in reversed(self.scopes[:-1]):
            if scope.kind == "class":
                continue  # class bodies are not enclosing scopes for functions
            if name in scope.locals:
                return scope
        return None

    def outer_mutable(self, name: str | None) -> _Scope | None:
        """The enclosing (module or factory) scope if `name` is a mutable container owned there."""
        if name is None or not self.in_function:
            return None
        owner = self.resolve(name)
        if owner is None or owner is self.scopes[-1]:
            return None
        return owner if name in owner.mutables else None

    def _factory_owned(self, name: str) -> bool:
        """Whether the nearest enclosing function owning `name` is a server factory."""
        for scope in reversed(self.scopes):
            if scope.kind == "function" and name in scope.locals:
                return scope.registers_handlers
        return False

    def report_shared_write(self, node: ast.AST, name: str, owner: _Scope, how: str) -> None:
        if owner.kind == "function" and not owner.registers_handlers:
            return  # a helper's local, fresh on every call of the helper: nothing is shared
        if owner.kind == "module":
            if name in self.released:
                self.add(
                    node,
                    "session-cache",
                    Severity.INFO,
                    f"module-level {name!r} is {how} by a function and emptied by the module's "
                    "release hook, so it is taken as a per-session cache",
                )
            else:
                self.add(
                    node,
                    "module-state-write",
                    Severity.ERROR,
                    f"module-level {name!r} is {how} inside a function, so sessions sharing the "
                    "process share it",
                )
        else:
            self.add(
                node,
                "closure-state-write",
                Severity.ERROR,
                f"{name!r} of the enclosing function {owner.name!r} is {how} by a nested "
                "function (a tool); every session served by this server instance shares it",
            )

    # scopes
    def visit_Module(self, node: ast.Module) -> None:
        hooks = self.hook_names | release_hook_names(node)
        for fn in node.body:
            if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) and fn.name in hooks:
                self.released |= _emptied_names(fn)
        self.scopes.append(_collect_scope("module", "<module>", node, node.body))
        self.generic_visit(node)
        self.scopes.pop()

    def _visit_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for dec in node.decorator_list:
            target = dec.func if isinstance(dec, ast.Call) else dec
            name = self.canonical(target) or ""
            if name in _CACHE_DECORATORS or name.rsplit(".", 1)[-1] in {"lru_cache", "cache"}:
                self.add(
                    dec,
                    "global-cache",
                    Severity.WARNING,
                    f"{node.name!r} memoizes results process-wide; cached values cross sessions",
                )
            self.visit(dec)
        for default in [*node.args.defaults, *node.args.kw_defaults]:
            if default is not None and _is_mutable_value(default):
                self.add(
                    default,
                    "mutable-default",
                    Severity.WARNING,
                    f"{node.name!r} has a mutable default argument shared by every call",
                )
        scope = _collect_scope("function", node.name, node, node.body)
        if scope.globals_declared:
            written = scope.globals_declared & {
                n
                for sub in _own_nodes(node.body)
                if isinstance(sub, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Delete)
                for t in (sub.targets if isinstance(sub, ast.Assign | ast.Delete) else [sub.target])
                for n in _bound_names(t)
            }
            for n in sorted(written or scope.globals_declared):
                self.add(
                    node,
                    "global-write",
                    Severity.ERROR,
                    f"{node.name!r} declares `global {n}` and rebinds module state shared by "
                    "all sessions in the process",
                )
        shared = {n for n in scope.nonlocals_declared if self._factory_owned(n)}
        if shared and self.in_function:
            self.add(
                node,
                "closure-state-write",
                Severity.ERROR,
                f"{node.name!r} rebinds `nonlocal {', '.join(sorted(shared))}`, "
                "state of the server factory shared by every session",
            )
        self.scopes.append(scope)
        for stmt in node.body:
            self.visit(stmt)
        self.scopes.pop()

    visit_FunctionDef = _visit_function
    visit_AsyncFunctionDef = _visit_function

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self.scopes.append(_collect_scope("function", "<lambda>", node, [node.body]))
        self.visit(node.body)
        self.scopes.pop()

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for dec in node.decorator_list:
            self.visit(dec)
        for base in node.bases:
            self.visit(base)
        self.scopes.append(_collect_scope("class", node.name, node, node.body))
        for stmt in node.body:
            self.visit(stmt)
        self.scopes.pop()

    # imports
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.asname:
                self.aliases[alias.asname] = alias.name
            else:
                head = alias.name.split(".")[0]
                self.aliases[head] = head
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module and node.level == 0:
            for alias in node.names:
                self.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        self.generic_visit(node)

    # writes
    def _check_store_target(self, target: ast.AST, node: ast.AST, how: str) -> None:
        if isinstance(target, ast.Tuple | ast.List):
            for elt in target.elts:
                self._check_store_target(elt, node, how)
            return
        if isinstance(target, ast.Subscript | ast.Attribute):
            dotted = self.canonical(target.value) if isinstance(target, ast.Subscript) else None
            if dotted == "os.environ":
                self.add(node, "environ-write", Severity.ERROR, "writes the process environment")
                return
            if dotted == "sys.modules":
                self.add(node, "sys-modules", Severity.ERROR, "changes the module table")
                return
            full = self.canonical(target)
            if full in {"sys.path", "sys.stdout", "sys.stderr", "sys.stdin"}:
                self.add(node, "sys-path", Severity.ERROR, f"rebinds {full} for the process")
                return
            root = _root_name(target)
            if not self.in_function or root is None:
                return
            owner = self.resolve(root)
            if owner is None or owner is self.scopes[-1]:
                return
            if isinstance(target, ast.Attribute) and root in self.aliases:
                mod = self.aliases[root]
                self.add(
                    node,
                    "module-attribute-write",
                    Severity.ERROR,
                    f"assigns an attribute of imported {mod!r}, which every module shares",
                )
                return
            if root in owner.mutables or isinstance(target, ast.Attribute):
                self.report_shared_write(node, root, owner, how)

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._check_store_target(target, node, "assigned")
        self._check_paths_in_value(node.value, node)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if isinstance(node.target, ast.Name):
            owner = self.resolve(node.target.id) if self.in_function else None
            # `global`/`nonlocal` rebinds are reported with the function; this is the in-place case.
            if (
                owner is not None
                and owner is not self.scopes[-1]
                and node.target.id in owner.mutables
            ):
                self.report_shared_write(node, node.target.id, owner, "updated in place")
        else:
            self._check_store_target(node.target, node, "updated in place")
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._check_store_target(node.target, node, "assigned")
        if node.value is not None:
            self._check_paths_in_value(node.value, node)
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            self._check_store_target(target, node, "deleted from")
        self.generic_visit(node)

    # calls
    def visit_Call(self, node: ast.Call) -> None:
        name = self.canonical(node.func)
        if name is not None:
            rule = _CALL_RULES.get(name)
            if rule is not None:
                self.add(node, rule[0], rule[1], rule[2])
            if isinstance(node.func, ast.Attribute) and node.func.attr in _MUTATING_METHODS:
                receiver = node.func.value
                if self.canonical(receiver) == "os.environ":
                    pass  # covered by _CALL_RULES
                elif self.canonical(receiver) == "sys.path":
                    self.add(node, "sys-path", Severity.ERROR, "changes sys.path for the process")
                else:
                    root = _root_name(receiver)
                    owner = self.outer_mutable(root)
                    if owner is not None and root is not None:
                        self.report_shared_write(node, root, owner, f"mutated ({node.func.attr})")
            self._check_file_call(name, node)
        self.generic_visit(node)

    def _check_file_call(self, name: str, node: ast.Call) -> None:
        short = name.rsplit(".", 1)[-1]
        if name not in _FILE_OPENERS and short not in {"create_engine", "connect", "open"}:
            return
        if short == "connect" and not name.startswith("sqlite3"):
            return
        if not node.args:
            return
        first = node.args[0]
        if _is_absolute_path_literal(first):
            self.add(
                node,
                "fixed-path",
                Severity.ERROR,
                f"{short}() of a fixed absolute path: every session would share that file",
            )
            return
        literal = _string_literal(first)
        if literal is not None and short in {"open", "connect", "create_engine"}:
            if literal in (":memory:", "sqlite://", "sqlite:///:memory:"):
                return
            self.add(
                node,
                "fixed-path",
                Severity.ERROR,
                f"{short}({literal!r}) opens a path relative to the process working directory, "
                "shared by every session",
            )
            return
        if short == "open" and self.in_function and not self._binding_in_scope():
            self.add(
                node,
                "unbound-open",
                Severity.WARNING,
                "open() of a path not derived from the session binding "
                "(current_binding()/resolve_in_workspace) in this function",
            )

    def _binding_in_scope(self) -> bool:
        return any(s.uses_binding for s in self.scopes if s.kind == "function")

    def _check_paths_in_value(self, value: ast.AST, node: ast.AST) -> None:
        """Module-level constants like DB = '/var/lib/app.db' are fixed paths too."""
        if self.in_function:
            return
        if _is_absolute_path_literal(value):
            text = _string_literal(value) or ""
            if text.startswith("sqlite:///") or text.endswith((".db", ".sqlite", ".sqlite3")):
                self.add(
                    node,
                    "fixed-path",
                    Severity.ERROR,
                    "a module-level constant names a fixed database file shared by every session",
                )


# --- public API --------------------------------------------------------------------------------


def _classify(
    findings: list[Finding], settings: ScreeningSettings
) -> tuple[LoadClass, int, IsolationTier, list[str]]:
    errors = [f for f in findings if f.severity is Severity.ERROR]
    warnings = [f for f in findings if f.severity is Severity.WARNING]
    if errors:
        rules = sorted({f.rule for f in errors})
        return (
            LoadClass.DEDICATED,
            1,
            IsolationTier.DEDICATED_PROCESS,
            [
                f"{len(errors)} process-global side effect(s) ({', '.join(rules)}): "
                "one process per session with its own workspace"
            ],
        )
    if warnings:
        rules = sorted({f.rule for f in warnings})
        return (
            LoadClass.LIMITED,
            settings.limited_cap,
            IsolationTier.SHARED_PROCESS,
            [
                f"{len(warnings)} warning(s) ({', '.join(rules)}): at most "
                f"{settings.limited_cap} instances per process"
            ],
        )
    return (
        LoadClass.SHARED,
        settings.shared_cap,
        IsolationTier.SHARED_PROCESS,
        [
            f"no process-global side effects found: up to {settings.shared_cap} instances per process"
        ],
    )


def screen_source(
    source: str, file: str = "<source>", hook_names: set[str] | None = None
) -> list[Finding]:
    """Findings of one file's source text. A syntax error is itself an error finding."""
    try:
        tree = ast.parse(source, filename=file)
    except SyntaxError as exc:
        return [
            Finding(
                rule="syntax-error",
                file=file,
                line=exc.lineno or 0,
                snippet=(exc.text or "").strip()[:160],
                severity=Severity.ERROR,
                message=f"cannot be parsed: {exc.msg}",
            )
        ]
    screener = _Screener(file, source, hook_names)
    screener.visit(tree)
    return sorted(screener.findings, key=lambda f: (f.file, f.line, f.rule))


def _python_files(root: Path) -> list[Path]:
    if root.is_file():
        return [root]
    return sorted(
        p
        for p in root.rglob("*.py")
        if not any(part in _SKIP_DIRS for part in p.relative_to(root).parts[:-1])
    )


def screen_path(path: str | Path, settings: ScreeningSettings | None = None) -> ScreenReport:
    """Screen a server module file or a package folder (e.g. an EnvBundle) without importing it.

    Raises ScreenError when `path` does not exist or holds no `.py` file.
    """
    settings = settings or ScreeningSettings()
    root = Path(path)
    if not root.exists():
        raise ScreenError(f"cannot screen {str(path)!r}: no such file or folder")
    if root.is_file() and root.suffix != ".py":
        raise ScreenError(f"cannot screen {str(path)!r}: not a .py file or a package folder")
    files = _python_files(root)
    if not files:
        raise ScreenError(f"cannot screen {str(path)!r}: the folder holds no .py files")
    findings: list[Finding] = []
    names: list[str] = []
    sources: dict[str, str] = {}
    base = root.parent if root.is_file() else root
    for file in files:
        rel = file.relative_to(base).as_posix()
        names.append(rel)
        try:
            sources[rel] = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            findings.append(
                Finding(
                    rule="unreadable",
                    file=rel,
                    line=0,
                    snippet="",
                    severity=Severity.ERROR,
                    message=f"cannot be read as UTF-8 source: {exc.__class__.__name__}",
                )
            )
    # A hook may be registered in one module (server.py) and defined in another (runtime.py).
    hooks: set[str] = set()
    for text in sources.values():
        try:
            hooks |= release_hook_names(ast.parse(text))
        except SyntaxError:
            continue  # reported by screen_source below
    for rel, text in sources.items():
        findings.extend(screen_source(text, rel, hooks))
    load_class, cap, tier, reasons = _classify(findings, settings)
    return ScreenReport(
        source=str(path),
        files=names,
        findings=findings,
        load_class=load_class,
        cap=cap,
        tier=tier,
        reasons=reasons,
    )


def screen_command(command: Sequence[str] | str) -> ScreenReport:
    """A command-based (stdio) server cannot be screened: it always runs dedicated."""
    text = command if isinstance(command, str) else " ".join(command)
    return ScreenReport(
        source=text,
        load_class=LoadClass.DEDICATED,
        cap=1,
        tier=IsolationTier.DEDICATED_PROCESS,
        reasons=[
            "command-based server: its source is not screened, so it runs one process per session"
        ],
    )


def render_inspect(report: ScreenReport) -> str:
    """The text `weft-megamcp inspect PATH` prints."""
    out = [
        f"source:     {report.source}",
        f"files:      {len(report.files)}",
        f"load class: {report.load_class.value} (cap {report.cap} per process)",
        f"tier:       {report.tier.value}",
        "why:",
        *(f"  - {r}" for r in report.reasons),
    ]
    if report.findings:
        out.append(f"findings ({len(report.findings)}):")
        for f in report.findings:
            out.append(f"  {f.severity.value:<7} {f.rule:<22} {f.file}:{f.line}  {f.message}")
            if f.snippet:
                out.append(f"          | {f.snippet}")
    else:
        out.append("findings:   none")
    return "\n".join(out)


def main_inspect(path: str | Path, *, as_json: bool = False) -> int:
    """Print the screen of `path`; exit code 0 when it can share a process, 1 when dedicated.

    ScreenError propagates so the CLI's top-level handler prints it as one line.
    """
    report = screen_path(path)
    print(report.model_dump_json(indent=2) if as_json else render_inspect(report))
    return 0 if report.shareable else 1
