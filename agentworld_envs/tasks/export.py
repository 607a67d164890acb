"""Exports: tasks and reference trajectories (OpenAI-style SFT messages) as JSON lines and Hugging Face datasets."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Iterable

import env_registry

from ..errors import UserInputError

#: Written into every export directory, so ``--overwrite`` only ever replaces our own exports of the same kind.
MARKER = "agentworld-export.json"


def prepare_output_dir(out: str | Path, kind: str, overwrite: bool = False, clear: bool = True) -> Path:
    """An empty directory to export ``kind`` ("tasks" / "sft") into, or :class:`UserInputError`.

    A new or empty directory is used as is. A non-empty one is refused unless ``overwrite`` is
    set *and* it holds an earlier export of the same kind (its marker file says so): then its
    contents are removed first. So ``--out /`` or ``--out ~`` can never be written into, and an
    SFT export never replaces a task export in place. ``clear=False`` only checks (the exporters
    check before the slow part and clear after it, so a failed export leaves the old one intact).
    """
    path = Path(out).expanduser()
    if path.exists() and not path.is_dir():
        raise UserInputError(f"--out {path} is a file, not a directory")
    if path.is_dir() and any(path.iterdir()):
        try:
            marker = json.loads((path / MARKER).read_text(encoding="utf-8"))
            previous = marker.get("kind") if isinstance(marker, dict) else None
        except (OSError, ValueError):
            previous = None
        if previous is None:
            raise UserInputError(f"--out {path} is a non-empty directory that is not an agentworld export; "
                                 "choose a new or empty directory")
        if previous != kind:
            raise UserInputError(f"--out {path} holds a {previous!r} export; a {kind!r} export will not replace it "
                                 "(choose another directory)")
        if not overwrite:
            raise UserInputError(f"--out {path} already holds a {kind!r} export; pass --overwrite to replace it")
        if not clear:
            return path
        for child in path.iterdir():
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()
    if not clear:
        return path
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserInputError(f"--out {path}: cannot create the directory ({exc.strerror or exc})") from None
    return path


def _mark(path: Path, kind: str, rows: int) -> None:
    (path / MARKER).write_text(json.dumps({"kind": kind, "rows": rows}), encoding="utf-8")


def select_envs(ids: Iterable[str] | None = None, split: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
    entries = env_registry.select(ids=list(ids) if ids else None, split=split)
    return entries[:limit] if limit else entries


def task_rows(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from ..catalog import load_bundle

    rows = []
    for e in entries:
        b = load_bundle(e["id"])
        tools = json.dumps(b.tool_schemas(), ensure_ascii=False)
        for t in b.tasks:
            rows.append({"env_id": b.env_id, "task_id": t["id"], "split": b.split, "kind": t.get("kind", "handcrafted"),
                         "difficulty": float(t.get("difficulty", 0.0)), "instruction": t["instruction"], "tools": tools,
                         "prompt": f"# Policy\n{b.spec['policy']}\n\n# Task\n{t['instruction']}"})
    return rows


def export_tasks(out: str | Path, entries: list[dict[str, Any]], overwrite: bool = False) -> int:
    prepare_output_dir(out, "tasks", overwrite, clear=False)
    rows = task_rows(entries)
    path = prepare_output_dir(out, "tasks", overwrite)
    _save_rows(rows, path, "tasks.jsonl")
    _mark(path, "tasks", len(rows))
    return len(rows)


def arrow_available() -> bool:
    """Whether the Hugging Face ``datasets`` package (the ``train`` extra) is installed to write Arrow datasets."""
    import importlib.util

    return importlib.util.find_spec("datasets") is not None


def _save_rows(rows: list[dict[str, Any]], path: Path, jsonl_name: str) -> None:
    """``rows`` as JSON lines (``datasets.load_dataset("json", ...)`` reads them), and as a Hugging Face
    Arrow dataset (``datasets.load_from_disk``) when ``datasets`` is installed: the suite alone can export."""
    if arrow_available():
        from datasets import Dataset

        Dataset.from_list(rows).save_to_disk(str(path))
    with open(path / jsonl_name, "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")


def sft_messages(env, task_id: str) -> tuple[list[dict[str, Any]], float]:
    """Replay the reference of ``task_id`` through ``env`` and record it as chat messages; returns (messages, reward)."""
    obs, info = env.reset(options={"task_id": task_id})
    msgs: list[dict[str, Any]] = [
        {"role": "system", "content": obs.split("\n\n# Task\n")[0].removeprefix("# Policy\n"), "tool_calls": None, "tool_call_id": None},
        {"role": "user", "content": info["instruction"], "tool_calls": None, "tool_call_id": None}]
    reward = 0.0
    for i, step in enumerate(env.unwrapped.task["solution"]):
        cid = f"call_{i}"
        name = env.unwrapped.shown_name(step["name"])
        tc = {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(step["arguments"], ensure_ascii=False)}}
        assistant = {"role": "assistant", "content": "", "tool_calls": [tc], "tool_call_id": None}
        msgs.append(assistant)
        obs, reward, terminated, truncated, _ = env.step(assistant)
        msgs.append({"role": "tool", "content": obs, "tool_calls": None, "tool_call_id": cid})
        if terminated or truncated:
            break
    return msgs, float(reward)


def sft_rows(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    import gymnasium as gym

    rows = []
    for e in entries:
        env = gym.make(e["id"])
        for tid in env.unwrapped.task_ids:
            msgs, reward = sft_messages(env, tid)
            if reward < 1.0:  # only trajectories that verify
                continue
            rows.append({"env_id": e["id"], "task_id": tid, "messages": msgs, "tools": json.dumps(env.unwrapped.tools)})
        env.close()
    return rows


def export_sft(out: str | Path, entries: list[dict[str, Any]], overwrite: bool = False) -> int:
    prepare_output_dir(out, "sft", overwrite, clear=False)
    rows = sft_rows(entries)
    path = prepare_output_dir(out, "sft", overwrite)
    _save_rows(rows, path, "sft.jsonl")
    _mark(path, "sft", len(rows))
    return len(rows)


def replay_messages(env_id: str, task_id: str, messages: list[dict[str, Any]]) -> float:
    """Feed the assistant messages of an SFT row to a fresh ``gym.make`` env; returns the final reward."""
    import gymnasium as gym

    env = gym.make(env_id)
    env.reset(options={"task_id": task_id})
    reward = 0.0
    for m in messages:
        if m["role"] != "assistant" or not m.get("tool_calls"):
            continue
        _, reward, terminated, truncated, _ = env.step({"role": "assistant", "tool_calls": m["tool_calls"]})
        if terminated or truncated:
            break
    env.close()
    return float(reward)
