"""Exports: tasks and reference trajectories (OpenAI-style SFT messages) as JSON lines and Hugging Face datasets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

import env_registry

from ..util.outputs import MACHINE_ERRNOS, OutputDir, OutputError


def prepare_output_dir(out: str | Path, kind: str, overwrite: bool = False, check_only: bool = False) -> OutputDir:
    """The export directory for ``kind`` ("tasks" / "sft"), claimed through :mod:`agentworld_envs.util.outputs`.

    A new or empty directory is used as is; one holding agentworld's earlier export of the same
    kind only with ``overwrite`` (which removes only the files that export wrote, unchanged);
    anything else (``--out ~``, a directory of other work, a copied marker) is refused.
    ``check_only``: decide without touching anything (the exporters check before the slow part
    and replace after it, so a failed export leaves the old one intact).
    """
    return OutputDir.claim(out, kind, overwrite=overwrite, check_only=check_only)


def _save(out: str | Path, kind: str, overwrite: bool, rows: list[dict[str, Any]], jsonl_name: str) -> OutputDir:
    """Save ``rows`` into a staging directory, then replace the earlier export: as JSON lines
    (``datasets.load_dataset("json", ...)`` reads them), and as a Hugging Face Arrow dataset
    (``datasets.load_from_disk``) when ``datasets`` is installed, so the suite alone can export."""
    fresh = not Path(out).expanduser().exists()
    target = prepare_output_dir(out, kind, overwrite)
    try:
        with target.staging() as staged:
            if arrow_available():
                from datasets import Dataset

                Dataset.from_list(rows).save_to_disk(str(staged))
            with open(staged / jsonl_name, "w", encoding="utf-8") as fh:
                for r in rows:
                    fh.write(json.dumps(r, ensure_ascii=False) + "\n")
            target.install(staged, replace=True)   # the earlier export's own files go once the new one is complete
    except BaseException as exc:
        if fresh:
            target.discard_if_empty()   # a failed export leaves no directory it made
        if isinstance(exc, OSError) and exc.errno in MACHINE_ERRNOS:
            raise OutputError(f"--out {out}: cannot write the export ({exc.strerror})") from None
        raise
    return target


def select_envs(ids: Iterable[str] | None = None, split: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
    entries = env_registry.select(ids=list(ids) if ids else None, split=split)
    return entries[:limit] if limit else entries


def task_rows(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from ..catalogue.catalog import load_bundle

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
    prepare_output_dir(out, "tasks", overwrite, check_only=True)
    rows = task_rows(entries)
    _save(out, "tasks", overwrite, rows, "tasks.jsonl")
    return len(rows)


def arrow_available() -> bool:
    """Whether the Hugging Face ``datasets`` package (the ``train`` extra) is installed to write Arrow datasets."""
    import importlib.util

    return importlib.util.find_spec("datasets") is not None


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
    prepare_output_dir(out, "sft", overwrite, check_only=True)
    rows = sft_rows(entries)
    _save(out, "sft", overwrite, rows, "sft.jsonl")
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
