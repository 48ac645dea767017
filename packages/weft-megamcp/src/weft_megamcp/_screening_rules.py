"""Rule tables of the server-module screen (see weft_megamcp.screening)."""

from __future__ import annotations

from enum import StrEnum


class Severity(StrEnum):
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


# --- rule tables -------------------------------------------------------------------------------

_MUTABLE_CONSTRUCTORS = {
    "dict",
    "list",
    "set",
    "bytearray",
    "defaultdict",
    "OrderedDict",
    "deque",
    "Counter",
    "WeakValueDictionary",
    "WeakKeyDictionary",
}
_MUTATING_METHODS = {
    "append",
    "extend",
    "insert",
    "remove",
    "pop",
    "popitem",
    "clear",
    "update",
    "setdefault",
    "add",
    "discard",
    "appendleft",
    "extendleft",
    "sort",
    "reverse",
    "__setitem__",
    "__delitem__",
    "difference_update",
    "intersection_update",
    "symmetric_difference_update",
}
# dotted call name -> (rule, severity, message)
_CALL_RULES: dict[str, tuple[str, Severity, str]] = {
    "os.chdir": ("chdir", Severity.ERROR, "changes the working directory of the whole process"),
    "os.fchdir": ("chdir", Severity.ERROR, "changes the working directory of the whole process"),
    "os.putenv": ("environ-write", Severity.ERROR, "writes the process environment"),
    "os.unsetenv": ("environ-write", Severity.ERROR, "writes the process environment"),
    "os.environ.update": ("environ-write", Severity.ERROR, "writes the process environment"),
    "os.environ.setdefault": ("environ-write", Severity.ERROR, "writes the process environment"),
    "os.environ.pop": ("environ-write", Severity.ERROR, "writes the process environment"),
    "os.environ.clear": ("environ-write", Severity.ERROR, "writes the process environment"),
    "os.umask": ("process-setting", Severity.ERROR, "changes the umask of the whole process"),
    "os.fork": ("fork", Severity.ERROR, "forks the worker that hosts other sessions"),
    "os.forkpty": ("fork", Severity.ERROR, "forks the worker that hosts other sessions"),
    "os.system": ("subprocess", Severity.WARNING, "starts processes from a shared worker"),
    "os.popen": ("subprocess", Severity.WARNING, "starts processes from a shared worker"),
    "os.kill": ("signal", Severity.ERROR, "sends signals from a shared worker"),
    "signal.signal": ("signal-handler", Severity.ERROR, "installs a process-wide signal handler"),
    "signal.alarm": ("signal-handler", Severity.ERROR, "arms a process-wide alarm"),
    "signal.setitimer": ("signal-handler", Severity.ERROR, "arms a process-wide timer"),
    "atexit.register": ("atexit", Severity.WARNING, "registers a process-exit hook"),
    "sys.path.append": (
        "sys-path",
        Severity.ERROR,
        "changes imports of every module in the process",
    ),
    "sys.path.insert": (
        "sys-path",
        Severity.ERROR,
        "changes imports of every module in the process",
    ),
    "sys.path.extend": (
        "sys-path",
        Severity.ERROR,
        "changes imports of every module in the process",
    ),
    "sys.path.remove": (
        "sys-path",
        Severity.ERROR,
        "changes imports of every module in the process",
    ),
    "sys.modules.pop": ("sys-modules", Severity.ERROR, "changes the module table of the process"),
    "sys.modules.update": (
        "sys-modules",
        Severity.ERROR,
        "changes the module table of the process",
    ),
    "sys.modules.setdefault": (
        "sys-modules",
        Severity.ERROR,
        "changes the module table of the process",
    ),
    "sys.setrecursionlimit": ("process-setting", Severity.WARNING, "changes a process setting"),
    "sys.settrace": ("process-setting", Severity.ERROR, "installs a process-wide tracer"),
    "sys.setprofile": ("process-setting", Severity.ERROR, "installs a process-wide profiler"),
    "threading.Thread": ("threads", Severity.WARNING, "starts threads that outlive the call"),
    "threading.Timer": ("threads", Severity.WARNING, "starts threads that outlive the call"),
    "concurrent.futures.ThreadPoolExecutor": (
        "threads",
        Severity.WARNING,
        "starts a thread pool that outlives the call",
    ),
    "ThreadPoolExecutor": ("threads", Severity.WARNING, "starts a thread pool"),
    "concurrent.futures.ProcessPoolExecutor": (
        "multiprocessing",
        Severity.ERROR,
        "forks or spawns workers from a shared worker",
    ),
    "ProcessPoolExecutor": ("multiprocessing", Severity.ERROR, "forks or spawns workers"),
    "multiprocessing.Process": ("multiprocessing", Severity.ERROR, "forks from a shared worker"),
    "multiprocessing.Pool": ("multiprocessing", Severity.ERROR, "forks from a shared worker"),
    "multiprocessing.set_start_method": (
        "multiprocessing",
        Severity.ERROR,
        "changes a process-wide setting",
    ),
    "subprocess.run": ("subprocess", Severity.WARNING, "starts processes from a shared worker"),
    "subprocess.Popen": ("subprocess", Severity.WARNING, "starts processes from a shared worker"),
    "subprocess.call": ("subprocess", Severity.WARNING, "starts processes from a shared worker"),
    "subprocess.check_call": ("subprocess", Severity.WARNING, "starts processes"),
    "subprocess.check_output": ("subprocess", Severity.WARNING, "starts processes"),
    "asyncio.create_subprocess_exec": ("subprocess", Severity.WARNING, "starts processes"),
    "asyncio.create_subprocess_shell": ("subprocess", Severity.WARNING, "starts processes"),
    "logging.basicConfig": (
        "process-setting",
        Severity.WARNING,
        "configures the root logger of the process",
    ),
    "importlib.reload": ("sys-modules", Severity.ERROR, "reloads a module shared by sessions"),
    "socket.setdefaulttimeout": ("process-setting", Severity.WARNING, "changes a process default"),
    "locale.setlocale": ("process-setting", Severity.ERROR, "changes the locale of the process"),
    "time.tzset": ("process-setting", Severity.ERROR, "changes the timezone of the process"),
}
_CACHE_DECORATORS = {"lru_cache", "cache", "functools.lru_cache", "functools.cache", "cached"}
_FILE_OPENERS = {
    "open",
    "io.open",
    "os.open",
    "sqlite3.connect",
    "create_engine",
    "sqlalchemy.create_engine",
    "shelve.open",
    "dbm.open",
    "Path",
    "pathlib.Path",
}
# Names whose presence in a function means its file paths come from the session binding.
_BINDING_NAMES = {"current_binding", "resolve_in_workspace", "binding", "workspace", "db_path"}
_SKIP_DIRS = {"__pycache__", "migrations", "tests", ".venv", "venv", ".git", "node_modules"}
