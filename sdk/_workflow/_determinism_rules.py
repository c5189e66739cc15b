"""The static determinism check's rule tables, the alternatives it suggests, and its AST helpers.

Private to :mod:`spindle._workflow.determinism_check` (which documents what is checked).
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import gc

from collections.abc import Iterator
from typing import Any

_TIME = "workflow.now() (workflow time)"
_FILES = "read or write files in an activity"
_CONFIG = "pass configuration as a workflow argument, or read it in an activity"
_LOCAL_TZ = "time.gmtime(secs) (UTC), or workflow.now().astimezone(<a fixed ZoneInfo>)"
_FROM_TS = "datetime.fromtimestamp(ts, tz=timezone.utc) (or a fixed ZoneInfo)"
_RANDOM = "workflow.random() (seeded per run)"
_SEEDED = ("workflow.random(), or random.Random(seed) built in the workflow from its input "
           "or workflow.random().getrandbits(64)")
_SHARED_RNG = ("workflow.random(), or random.Random(seed) built in the run from its input: a module-level "
               "instance's state is shared by every run on the worker and differs between workers")
_LOG_LEVEL = ("log unconditionally (workflow.logger is silent during replay); pass a verbosity flag as a "
              "workflow argument if it must change what the workflow does: the log level differs per worker")
_SET_ORDER = ("sorted(...) (a fixed order): a set's iteration order depends on string hashing, "
              "which is randomized per process")
_HASH = "a stable digest (zlib.crc32(s.encode()), hashlib): hash() of a str is randomized per process"
_GETATTR = "call the function by name, so that the check sees it"
_NET = "do network I/O in an activity"
# Fully qualified callable or attribute -> deterministic alternative.
_EXACT: dict[str, str] = {
    "time.time": _TIME, "time.time_ns": _TIME, "time.monotonic": _TIME, "time.monotonic_ns": _TIME,
    "time.perf_counter": _TIME, "time.perf_counter_ns": _TIME, "time.process_time": _TIME,
    "time.process_time_ns": _TIME, "time.thread_time": _TIME, "time.thread_time_ns": _TIME,
    "time.sleep": "await workflow.sleep(...) (a durable timer)",
    "datetime.datetime.now": _TIME, "datetime.datetime.utcnow": _TIME, "datetime.datetime.today": _TIME,
    "datetime.date.today": _TIME,
    "datetime.date.fromtimestamp": _FROM_TS, "time.mktime": _LOCAL_TZ, "time.tzset": _LOCAL_TZ,
    "email.utils.localtime": _LOCAL_TZ, "dateutil.tz.tzlocal": _LOCAL_TZ,
    "uuid.uuid1": "workflow.uuid4()", "uuid.uuid4": "workflow.uuid4()",
    "os.environ": _CONFIG, "os.environb": _CONFIG, "os.getenv": _CONFIG, "os.getenvb": _CONFIG,
    "os.path.expandvars": _CONFIG, "os.path.expanduser": _CONFIG, "sys.argv": _CONFIG,
    "os.urandom": _RANDOM,
    "os.getcwd": _CONFIG, "os.getpid": "workflow.info() (workflow id and run id)",
    "os.cpu_count": _CONFIG, "os.uname": _CONFIG, "os.getlogin": _CONFIG, "os.getuid": _CONFIG,
    "os.system": "run the command in an activity", "os.popen": "run the command in an activity",
    "os.listdir": _FILES, "os.scandir": _FILES, "os.walk": _FILES, "os.stat": _FILES, "os.remove": _FILES,
    "os.unlink": _FILES, "os.mkdir": _FILES, "os.makedirs": _FILES, "os.rename": _FILES, "os.replace": _FILES,
    "os.rmdir": _FILES, "os.path.exists": _FILES, "os.path.isfile": _FILES, "os.path.isdir": _FILES,
    "os.path.getsize": _FILES, "os.path.getmtime": _FILES,
    "open": _FILES, "io.open": _FILES, "builtins.open": _FILES,
    "json.load": _CONFIG, "tomllib.load": _CONFIG, "tomli.load": _CONFIG, "pickle.load": _CONFIG,
    "plistlib.load": _CONFIG, "marshal.load": _CONFIG,
    "locale.getlocale": _CONFIG, "locale.getdefaultlocale": _CONFIG, "locale.getpreferredencoding": _CONFIG,
    "locale.setlocale": _CONFIG,
    "input": "receive data with a signal or an update",
}
# Attributes that are the worker's local time zone.
_TZ_ATTRIBUTES = {"time.timezone", "time.altzone", "time.tzname", "time.daylight"}
# Clock readers that are pure when given the time to convert: name -> index of that argument.
_CLOCK_UNLESS_GIVEN: dict[str, int] = {
    "time.gmtime": 0, "time.localtime": 0, "time.ctime": 0, "time.asctime": 0, "time.strftime": 1,
    "email.utils.formatdate": 0,
}
# Given a time, these still depend on the worker's time zone.
_LOCAL_TIME_ZONE = {"time.localtime", "time.ctime"}
# Any use of these modules or submodules (dotted prefixes) -> alternative.
_MODULES: dict[str, str] = {
    "random": _RANDOM, "numpy.random": _RANDOM,
    "secrets": "workflow.random()",
    "socket": _NET, "requests": _NET, "httpx": _NET, "aiohttp": _NET, "urllib.request": _NET,
    "urllib.robotparser": _NET, "http.client": _NET, "http.server": _NET,
    "threading": "use asyncio tasks (asyncio.gather / workflow handles) instead of threads",
    "concurrent": "use asyncio tasks; run blocking work in an activity",
    "multiprocessing": "run the work in an activity",
    "subprocess": "run the command in an activity",
    "shutil": "touch files in an activity",
    "dotenv": _CONFIG, "platform": _CONFIG, "getpass": _CONFIG,
    "tzlocal": _LOCAL_TZ,
}
# Modules whose functions ``getattr(module, name)`` may hand out.
_GETATTR_MODULES = {"time", "uuid", "random", "secrets", "os", "datetime", "datetime.datetime", "datetime.date"}
# Config parsers: their ``read``/``read_file`` read files.
_PARSER_CLASSES = {"configparser.ConfigParser", "configparser.RawConfigParser", "configparser.SafeConfigParser"}
_PARSER_READS = {"read", "read_file"}
# Logger methods and attributes that reveal the worker's log level.
_LEVEL_METHODS = {"isEnabledFor", "getEffectiveLevel"}
# Calls whose result is an iterable in the argument's order (so a set gives a per-process order).
_ORDERING_CALLS = {"list", "tuple", "enumerate", "iter", "next", "zip", "map", "filter", "reversed"}
# Values (not callables) read from the worker's process: flagged wherever they are read.
_VALUES = ("os.environ", "os.environb", "sys.argv")
# Calls whose result does not depend on the order of the iterable they are given.
_ORDER_FREE = {"sorted", "any", "all", "sum", "min", "max", "len", "set", "frozenset"}
_SET_METHODS = {"union", "intersection", "difference", "symmetric_difference", "copy"}
_RANDOM_CLASSES = {"random.Random"}
# Method names that mean file I/O whatever the receiver.
_FILE_METHODS = {"read_text", "write_text", "read_bytes", "write_bytes"}
# Concrete path classes (``PurePath`` and friends never touch the file system).
_PATH_CLASSES = {"pathlib.Path", "pathlib.PosixPath", "pathlib.WindowsPath"}
# Path methods that touch the file system or read process state (cwd, home directory).
_PATH_IO = {
    "open", "exists", "is_file", "is_dir", "is_symlink", "is_mount", "is_socket", "is_fifo", "is_block_device",
    "is_char_device", "is_junction", "iterdir", "glob", "rglob", "walk", "stat", "lstat", "owner", "group", "chmod",
    "lchmod", "mkdir", "rmdir", "unlink", "touch", "rename", "replace", "resolve", "absolute", "samefile",
    "readlink", "symlink_to", "hardlink_to", "link_to", "expanduser", "cwd", "home",
} | _FILE_METHODS
# Path methods and attributes that give another path (so the result is a path too).
_PATH_DERIVED = {"parent", "joinpath", "with_name", "with_suffix", "with_stem", "relative_to", "with_segments"}
# The modules ``spindle.workflow`` re-exports its calls from (code may import them from there).
_API_MODULES = ("spindle._workflow.info_calls", "spindle._workflow.wait_calls", "spindle._workflow.activity_calls",
                "spindle._workflow.child_calls", "spindle._workflow.history_calls", "spindle._workflow.unsafe")


@dataclasses.dataclass(frozen=True)
class Finding:
    """One non-deterministic call in workflow code.

    ``via`` is set when the call is in a helper function outside the workflow: it names the
    workflow's call that reached the helper (``file:line``).
    """

    file: str
    line: int
    column: int
    call: str
    alternative: str
    via: str = ""

    def __str__(self) -> str:
        reached = f" (reached from {self.via})" if self.via else ""
        return (f"{self.file}:{self.line}: {self.call} is not deterministic in workflow code{reached}; "
                f"instead: {self.alternative}")


@dataclasses.dataclass(frozen=True)
class Binding:
    """A module-level (or class-level) name whose value depends on the worker: read at import."""

    line: int
    call: str
    alternative: str


@dataclasses.dataclass
class ModuleFacts:
    """What the check needs of a module: its imports, its functions, its names bound at import."""

    filename: str
    imports: dict[str, str]
    functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef]
    bindings: dict[str, Binding]  # names whose value depends on the worker (read at import)
    loggers: set[str]  # names bound to logging.getLogger(...)
    parsers: set[str]  # names bound to a configparser parser


def stored_names(fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> set[str]:
    args = fn.args
    names = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
    names |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    body: list[ast.AST] = [fn.body] if isinstance(fn, ast.Lambda) else list(fn.body)
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
    return names


class _Imports(ast.NodeVisitor):
    """Local name -> fully qualified name, from a module's imports."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}

    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            if a.asname:
                self.names[a.asname] = a.name
            else:
                top = a.name.split(".")[0]
                self.names[top] = top

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level or not node.module:
            return
        for a in node.names:
            self.names[a.asname or a.name] = f"{node.module}.{a.name}"


def imports_of(tree: ast.AST) -> dict[str, str]:
    imports = _Imports()
    imports.visit(tree)
    return imports.names


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the garbage collector while source is parsed.

    CPython 3.11 tracks the AST builder's recursion depth in global state (gh-106905): a
    finalizer that runs during a parse and parses too (logging a never-retrieved
    exception formats a traceback, which parses source lines to place its carets) makes
    the outer parse fail with ``SystemError: AST constructor recursion depth mismatch``.
    ``inspect.getsource`` parses as well, so the whole source gathering runs paused.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def parse(source: str, mode: str = "exec") -> Any:
    with gc_paused():
        return ast.parse(source, mode=mode)


def dotted(node: ast.AST) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def module_alternative(qualified: str) -> str | None:
    for prefix, alternative in _MODULES.items():
        if qualified == prefix or qualified.startswith(prefix + "."):
            return alternative
    return None


def hazard_of(qualified: str) -> str | None:
    """The alternative to a qualified callable or attribute, or None when it is deterministic."""
    return _EXACT.get(qualified) or module_alternative(qualified)


def is_none(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def is_number(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float, complex)) or (
        isinstance(node, ast.UnaryOp) and is_number(node.operand))


def annotation_is_string_set(annotation: ast.AST | None) -> bool:
    """Whether an annotation says ``set``/``frozenset`` of something other than numbers."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = parse(annotation.value, mode="eval").body
        except SyntaxError:
            return False
    base, arg = (annotation.value, annotation.slice) if isinstance(annotation, ast.Subscript) else (annotation, None)
    name = dotted(base) if base is not None else None
    if name is None or name.rpartition(".")[2] not in {"set", "frozenset", "Set", "FrozenSet", "AbstractSet",
                                                       "MutableSet"}:
        return False
    return not (isinstance(arg, ast.Name) and arg.id in {"int", "float", "bool"})
