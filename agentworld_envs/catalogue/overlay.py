"""Task overlays: extra (or replacement) task sets that reach every process through a file.

A trainer or the arena loop writes freshly synthesised, gated tasks to one JSON file,
``{"envs": {"<env name>": [task, ...], ...}}``, and passes its path to the environments
(``gym.make(id, task_overlay=path)``). Every process that makes the env — async vector-env
workers, ``accelerate launch`` ranks — reads the same file, so no task set lives only in the
memory of the process that synthesised it. Reads are cached per (path, size, mtime).
"""

from __future__ import annotations

import functools
import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

from ..util.errors import UserInputError
from ..util.inputs import read_regular_file

OVERLAY_MODES = ("add", "only")
#: Largest overlay file read (the registry's biggest task sets are a few MB).
MAX_OVERLAY_BYTES = 64 << 20


class OverlayError(UserInputError):
    """An overlay file that cannot be used (missing, not a regular file, too large, not an overlay, or
    tasks that fail the validation a spec's tasks get). A ``ValueError``; the CLI prints it as one line."""


def _key(name: str) -> str:
    return name.removeprefix("agentworld/").removesuffix("-v0")


def write_overlay(path: str | os.PathLike, tasks_by_env: dict[str, list[dict[str, Any]]]) -> Path:
    """Write an overlay atomically (a reader never sees half a file); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"envs": {_key(k): v for k, v in sorted(tasks_by_env.items())}}
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(payload, fh, ensure_ascii=False)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


@functools.lru_cache(maxsize=32)
def _read(path: str, size: int, mtime_ns: int, ino: int) -> dict[str, list[dict[str, Any]]]:
    data = _read_regular(path)
    try:
        payload = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise OverlayError(f"task overlay {path}: not JSON ({str(exc)[:200]})") from None
    envs = payload.get("envs") if isinstance(payload, dict) else None
    if not isinstance(envs, dict):
        raise OverlayError(f"task overlay {path}: expected {{\"envs\": {{name: [tasks]}}}}")
    for name, tasks in envs.items():
        if not isinstance(tasks, list) or not all(isinstance(t, dict) and {"id", "instruction", "solution", "checks"} <= set(t)
                                                  for t in tasks):
            raise OverlayError(f"task overlay {path}: tasks of {name!r} must be task objects with id, instruction, "
                               "solution and checks")
    return envs


def _read_regular(path: str) -> bytes:
    """The overlay's bytes: a regular file of at most :data:`MAX_OVERLAY_BYTES` (a FIFO, ``/dev/zero``, a
    directory or a larger file is one clear error, never a hang; see :mod:`agentworld_envs.util.inputs`)."""
    try:
        return read_regular_file(path, MAX_OVERLAY_BYTES, "task overlay")
    except UserInputError as exc:
        raise OverlayError(str(exc)) from None


def _stat(path: str | os.PathLike) -> tuple[Path, os.stat_result]:
    if not isinstance(path, (str, os.PathLike)) or "\x00" in os.fspath(path):
        raise OverlayError(f"task overlay must be a file path, not {str(path)[:80]!r}")
    p = Path(path)
    try:
        st = p.stat()
    except OSError:
        raise OverlayError(f"task overlay {p}: no such file") from None
    if not stat.S_ISREG(st.st_mode):
        raise OverlayError(f"task overlay {p}: not a regular file")
    if st.st_size > MAX_OVERLAY_BYTES:
        raise OverlayError(f"task overlay {p}: {st.st_size} bytes; at most {MAX_OVERLAY_BYTES} are allowed")
    return p, st


def overlay_tasks(path: str | os.PathLike, env_name: str, spec: dict[str, Any] | None = None) -> list[dict[str, Any]] | None:
    """The overlay's tasks for ``env_name`` (None if the overlay does not cover that env).

    With ``spec`` (the env's spec), the tasks are validated exactly like a spec's own tasks
    (:func:`agentworld_envs.catalogue.taskcheck.check_tasks`); a bad one is an :class:`OverlayError` naming it.
    """
    p, st = _stat(path)
    resolved = str(p.resolve())
    tasks = _read(resolved, st.st_size, st.st_mtime_ns, st.st_ino).get(_key(env_name))
    if tasks is None:
        return None
    if spec is not None:
        _validate(resolved, st.st_size, st.st_mtime_ns, st.st_ino, _key(env_name), spec)
    return list(tasks)


_VALIDATED: dict[tuple[Any, ...], dict[str, Any]] = {}


def _validate(path: str, size: int, mtime_ns: int, ino: int, name: str, spec: dict[str, Any]) -> None:
    """Validate the overlay's tasks of ``name`` once per file version and spec."""
    from ..engine.spec import SpecError
    from .taskcheck import check_tasks

    key = (path, size, mtime_ns, ino, name, id(spec))
    if key in _VALIDATED:
        return
    try:
        check_tasks(spec, _read(path, size, mtime_ns, ino)[name], base=f"$.envs.{name}")
    except SpecError as exc:
        raise OverlayError(f"task overlay {path}: {exc}") from None
    if len(_VALIDATED) > 256:
        _VALIDATED.clear()
    _VALIDATED[key] = spec   # held, so its id() is not reused while the entry lives


def merge_tasks(base: list[dict[str, Any]], extra: list[dict[str, Any]] | None, mode: str) -> list[dict[str, Any]]:
    """The task list of an env with an overlay: ``add`` appends new ids, ``only`` uses the overlay's
    tasks alone; an env the overlay does not cover (``extra`` None) keeps its own tasks."""
    if mode not in OVERLAY_MODES:
        raise OverlayError(f"overlay_mode must be one of {OVERLAY_MODES}, not {mode!r}")
    if extra is None:
        return list(base)
    if mode == "only":
        return list(extra)
    seen = {t["id"] for t in base}
    return list(base) + [t for t in extra if t["id"] not in seen]
