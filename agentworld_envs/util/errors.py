"""User-facing error types and the CLI wrapper that turns them into one line and exit code 2.

A user error (a bad id, a broken spec, an unusable cache, a bad option) is reported as one
line on stderr; anything else is a bug and keeps its traceback. The classes subclass the
builtin a caller would have caught before (``KeyError``, ``ValueError``, ``RuntimeError``), so
existing ``except`` clauses keep working.
"""

from __future__ import annotations

import errno
import sys
from pathlib import Path
from typing import Any, NoReturn

from env_registry import UnknownEnvError

__all__ = ["SpecError", "CacheError", "EnvWorkerError", "UnknownEnvError", "UnknownTaskError", "UnknownToolError",
           "UserInputError", "USER_ERRORS", "run_cli"]

#: Exit status of every user error (click's own usage errors use 2 as well).
USER_ERROR_EXIT = 2


class SpecError(ValueError):
    """A spec does not conform to the schema or is internally inconsistent."""

    def __init__(self, path: str, message: str):
        self.path, self.message = path, message
        super().__init__(f"{path}: {message}")

    def __reduce__(self) -> tuple[Any, ...]:  # rebuilt from its fields when it crosses a process pool
        return (type(self), (self.path, self.message))


class UnknownTaskError(KeyError):
    """``task_id`` names no task of the environment."""

    def __str__(self) -> str:  # KeyError would print the repr of its message, quotes and all
        return str(self.args[0]) if self.args else "unknown task"


class UnknownToolError(KeyError):
    """A tool name (e.g. ``--focus-tools``) that the environment does not have."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown tool"


class CacheError(RuntimeError):
    """A cached artefact is unusable and cannot be rebuilt (read-only or full cache directory).

    The message names the file, what went wrong and what to do about it.
    """

    def __init__(self, path: Path | str, problem: str, remedy: str):
        self.path = Path(path)
        self.problem, self.remedy = problem, remedy
        super().__init__(f"cache file {self.path}: {problem}; {remedy}")

    def __reduce__(self) -> tuple[Any, ...]:  # rebuilt from its fields when it crosses a process pool
        return (type(self), (self.path, self.problem, self.remedy))


class EnvWorkerError(RuntimeError):
    """Env workers that cannot run or that died (Ray missing, a worker process lost mid-episode).

    Raised instead of scoring the lost episodes: a dead worker never turns into a zero reward.
    """


class UserInputError(ValueError):
    """A CLI argument that typer cannot check by itself (a filter that matches nothing, an unsafe path)."""


#: Exceptions the CLI reports as one line instead of a traceback.
USER_ERRORS: tuple[type[BaseException], ...] = (SpecError, CacheError, UnknownEnvError, UnknownTaskError,
                                                UnknownToolError, UserInputError, EnvWorkerError)


#: errno values that describe the disk (space, size limits, quotas, read-only mounts), never a bug.
DISK_ERRNOS = frozenset(getattr(errno, name) for name in ("ENOSPC", "EFBIG", "EDQUOT", "EROFS")
                            if hasattr(errno, name))


def _one_line(text: Any) -> str:
    return " ".join(str(text).split())


def _click_class(name: str) -> Any:
    # typer vendors its own click; its public BadParameter is a UsageError and a ClickException.
    import typer

    return next(c for c in typer.BadParameter.__mro__ if c.__name__ == name)


def run_cli(app: Any, prog: str = "agentworld", args: list[str] | None = None) -> NoReturn:
    """Run a typer app; user errors become ``prog: error: ...`` on one line and exit status 2."""
    import typer

    usage_error, click_exception = _click_class("UsageError"), _click_class("ClickException")
    try:
        code = app(args=args, prog_name=prog, standalone_mode=False)
    except usage_error as exc:
        ctx = getattr(exc, "ctx", None)
        if type(exc).__name__ == "NoArgsIsHelpError" and ctx is not None:
            print(ctx.get_help(), file=sys.stderr)  # a bare command: show its help, as click would
            sys.exit(USER_ERROR_EXIT)
        where = f" (see `{ctx.command_path} --help`)" if ctx is not None else ""
        print(f"{prog}: error: {_one_line(exc.format_message())}{where}", file=sys.stderr)
        sys.exit(getattr(exc, "exit_code", USER_ERROR_EXIT))
    except click_exception as exc:
        print(f"{prog}: error: {_one_line(exc.format_message())}", file=sys.stderr)
        sys.exit(getattr(exc, "exit_code", 1))
    except typer.Abort:
        print(f"{prog}: aborted", file=sys.stderr)
        sys.exit(130)
    except USER_ERRORS as exc:
        print(f"{prog}: error: {_one_line(exc)}", file=sys.stderr)
        sys.exit(USER_ERROR_EXIT)
    except OSError as exc:
        # A full disk, a file-size limit, a quota or a read-only file system is the machine's state,
        # not a bug: one line naming the file. Any other OSError keeps its traceback.
        if exc.errno not in DISK_ERRNOS:
            raise
        where = f" ({exc.filename})" if exc.filename else ""
        print(f"{prog}: error: cannot write{where}: {exc.strerror or exc}", file=sys.stderr)
        sys.exit(USER_ERROR_EXIT)
    sys.exit(code if isinstance(code, int) else 0)
