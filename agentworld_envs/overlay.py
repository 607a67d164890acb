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
import tempfile
from pathlib import Path
from typing import Any

OVERLAY_MODES = ("add", "only")


class OverlayError(ValueError):
    """An overlay file that cannot be used (missing, not an overlay, or tasks of the wrong shape)."""


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
def _read(path: str, size: int, mtime_ns: int) -> dict[str, list[dict[str, Any]]]:
    try:
        payload = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise OverlayError(f"task overlay {path}: cannot be read ({exc})") from None
    envs = payload.get("envs") if isinstance(payload, dict) else None
    if not isinstance(envs, dict):
        raise OverlayError(f"task overlay {path}: expected {{\"envs\": {{name: [tasks]}}}}")
    for name, tasks in envs.items():
        if not isinstance(tasks, list) or not all(isinstance(t, dict) and {"id", "instruction", "solution", "checks"} <= set(t)
                                                  for t in tasks):
            raise OverlayError(f"task overlay {path}: tasks of {name!r} must be task objects with id, instruction, "
                               "solution and checks")
    return envs


def overlay_tasks(path: str | os.PathLike, env_name: str) -> list[dict[str, Any]] | None:
    """The overlay's tasks for ``env_name`` (None if the overlay does not cover that env)."""
    p = Path(path)
    try:
        st = p.stat()
    except OSError:
        raise OverlayError(f"task overlay {p}: no such file") from None
    tasks = _read(str(p.resolve()), st.st_size, st.st_mtime_ns).get(_key(env_name))
    return None if tasks is None else list(tasks)


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
