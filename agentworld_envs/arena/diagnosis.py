"""Diagnosis of an evaluation run: where the agent fails, from its episode records alone.

Deterministic: success by first/second-level category, environment, tool (the tools the
reference uses), task kind and family, difficulty and chain length; the error distribution
(per-call error codes and per-episode failure outcomes); the weakest environments and tools
with example failing episodes. :func:`diagnose` returns JSON for the self-evolving loop;
:func:`write_html` renders it with matplotlib plots for people (tables where matplotlib is not installed).
"""

from __future__ import annotations

import base64
import html
import io
import json
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

#: Per-call error codes and per-episode outcomes reported in the error distribution.
CALL_ERRORS = ("parse_error", "unknown_tool", "invalid_arguments", "not_found", "precondition_failed",
               "constraint_violation", "too_many_calls", "internal_error")
OUTCOMES = ("wrong_final_state", "wrong_answer", "turn_limit", "premature_submit", "failed_check")
MIN_SUPPORT = 2   # a group needs this many episodes to be called weak


def _rate(items: Sequence[dict[str, Any]]) -> dict[str, Any]:
    n = len(items)
    return {"episodes": n, "success_rate": round(sum(r["success"] for r in items) / n, 4) if n else 0.0}


def _group(records: Iterable[dict[str, Any]], key: Callable[[dict[str, Any]], Iterable[Any]]) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        for k in key(r):
            groups[str(k)].append(r)
    return {k: _rate(v) for k, v in sorted(groups.items())}


def _difficulty_bucket(d: float | None) -> list[str]:
    if d is None:
        return []
    lo = min(int(d), 10)
    return [f"{lo}+" if lo == 10 else f"{lo}-{lo + 1}"]


def _weakest(groups: dict[str, dict[str, Any]], n: int) -> list[dict[str, Any]]:
    rows = [{"name": k, **v} for k, v in groups.items() if v["episodes"] >= MIN_SUPPORT]
    return sorted(rows, key=lambda r: (r["success_rate"], -r["episodes"], r["name"]))[:n]


def _tool_failures(records: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per tool: episodes whose reference uses it (success rate) and calls of it that errored."""
    stats: dict[str, dict[str, Any]] = defaultdict(lambda: {"episodes": 0, "successes": 0, "calls": 0, "call_errors": 0})
    for r in records:
        for t in set(r.get("reference_tools", [])):
            stats[t]["episodes"] += 1
            stats[t]["successes"] += r["success"]
        for c in r.get("calls", []):
            if c.get("tool"):
                stats[c["tool"]]["calls"] += 1
                stats[c["tool"]]["call_errors"] += bool(c.get("error"))
    out = {}
    for t, s in sorted(stats.items()):
        out[t] = {"episodes": s["episodes"], "calls": s["calls"], "call_errors": s["call_errors"],
                  "success_rate": round(s["successes"] / s["episodes"], 4) if s["episodes"] else None,
                  "call_error_rate": round(s["call_errors"] / s["calls"], 4) if s["calls"] else None}
    return out


def _example(r: dict[str, Any]) -> dict[str, Any]:
    failed = [c for c in r.get("checks", []) if not c.get("passed")]
    return {"env_id": r["env_id"], "task_id": r["task_id"], "outcome": r["outcome"], "turns": r["turns"],
            "errors": [c for c in r.get("calls", []) if c.get("error")][:3],
            "failed_checks": [{"type": c["type"], "detail": (c.get("detail") or "")[:160]} for c in failed][:3]}


def diagnose(records: Sequence[dict[str, Any]], top: int = 5) -> dict[str, Any]:
    """The deterministic diagnosis of a run's records."""
    fails = [r for r in records if not r["success"]]
    call_errors = Counter(c["error"] for r in records for c in r.get("calls", []) if c.get("error"))
    outcomes = Counter(r["outcome"] for r in fails)
    tools = _tool_failures(records)
    by_env = _group(records, lambda r: [r["env_id"]])
    weak_tools = sorted(((t, s) for t, s in tools.items() if s["episodes"] >= MIN_SUPPORT or s["calls"] >= MIN_SUPPORT),
                        key=lambda ts: (ts[1]["success_rate"] if ts[1]["success_rate"] is not None else 1.0,
                                        -(ts[1]["call_error_rate"] or 0.0), ts[0]))[:top]
    by_chain = _group(records, lambda r: [r.get("chain_length", 0)])
    by_diff = _group(records, lambda r: _difficulty_bucket(r.get("difficulty")))
    return {
        **_rate(records),
        "reward_mean": round(sum(r["reward"] for r in records) / len(records), 4) if records else 0.0,
        "by_l1": _group(records, lambda r: [r.get("l1", "")]),
        "by_l2": _group(records, lambda r: [r.get("l2", "")]),
        "by_env": by_env,
        "by_tool": tools,
        "by_kind": _group(records, lambda r: [r.get("kind", "")]),
        "by_family": _group(records, lambda r: [r.get("family", "")]),
        "by_difficulty": by_diff,
        "by_chain_length": by_chain,
        "errors": {"calls": {k: call_errors.get(k, 0) for k in CALL_ERRORS} | {k: v for k, v in call_errors.items()
                                                                                if k not in CALL_ERRORS},
                   "episodes": {k: outcomes.get(k, 0) for k in OUTCOMES}},
        "weakest_envs": [dict(r, examples=[_example(x) for x in fails if x["env_id"] == r["name"]][:2])
                         for r in _weakest(by_env, top)],
        "weakest_tools": [{"name": t, **s, "examples": [_example(x) for x in fails
                                                         if t in x.get("reference_tools", []) or
                                                         any(c.get("tool") == t and c.get("error") for c in x.get("calls", []))][:2]}
                          for t, s in weak_tools],
        "success_drop": _success_drop(by_chain),
    }


def _success_drop(by_chain: dict[str, dict[str, Any]]) -> int | None:
    """The shortest reference chain length whose success falls below half of the best (None if none)."""
    rows = sorted(((int(k), v) for k, v in by_chain.items() if v["episodes"]), key=lambda kv: kv[0])
    if not rows:
        return None
    best = max(v["success_rate"] for _, v in rows)
    return next((k for k, v in rows if v["success_rate"] < best / 2), None)


# ------------------------------------------------------------------------------------------ HTML


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _bar(title: str, groups: dict[str, dict[str, Any]], limit: int = 25) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    items = sorted(groups.items(), key=lambda kv: kv[1].get("success_rate") or 0.0)[:limit]
    fig, ax = plt.subplots(figsize=(7, 0.3 * len(items) + 1.2))
    ax.barh([k[:40] for k, _ in items], [v.get("success_rate") or 0.0 for _, v in items], color="#4c72b0")
    ax.set_xlim(0, 1)
    ax.set_xlabel("success rate")
    ax.set_title(title)
    return _png(fig)


def _counts(title: str, counts: dict[str, int]) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3))
    ax.bar(list(counts), list(counts.values()), color="#c44e52")
    ax.set_title(title)
    ax.tick_params(axis="x", rotation=35)
    return _png(fig)


def _can_plot() -> bool:
    import importlib.util

    return importlib.util.find_spec("matplotlib") is not None


def write_html(diag: dict[str, Any], path: Path, title: str = "agentworld diagnosis") -> Path:
    """A self-contained HTML report (plots inline) of a diagnosis, written at ``path``."""
    path = Path(path)
    path.write_text(render_html(diag, title))
    return path


def render_html(diag: dict[str, Any], title: str = "agentworld diagnosis") -> str:
    """The self-contained HTML report (plots inline) of a diagnosis."""
    esc = html.escape
    parts = [f"<h1>{esc(title)}</h1>",
             f"<p>{diag['episodes']} episodes, success rate {diag['success_rate']:.3f}, mean reward {diag['reward_mean']:.3f}</p>"]
    plots = [("Success by first-level category", diag["by_l1"]), ("Success by task family", diag["by_family"]),
             ("Success by reference chain length", diag["by_chain_length"]), ("Weakest environments", diag["by_env"])]
    if _can_plot():
        for name, groups in plots:
            if groups:
                parts.append(f"<h2>{esc(name)}</h2><img src='{_bar(name, groups)}'>")
        parts.append(f"<h2>Errors</h2><img src='{_counts('Tool-call errors', diag['errors']['calls'])}'>"
                     f"<img src='{_counts('Failed episodes by outcome', diag['errors']['episodes'])}'>")
    else:  # the suite alone: the same figures as tables
        parts.append("<p>(Tables instead of plots: plots need matplotlib, in the 'train' extra.)</p>")
        for name, groups in plots:
            if groups:
                rows = "".join(f"<tr><td>{esc(str(k))}</td><td>{(v.get('success_rate') or 0):.3f}</td></tr>"
                               for k, v in sorted(groups.items(), key=lambda kv: kv[1].get("success_rate") or 0.0))
                parts.append(f"<h2>{esc(name)}</h2><table border=1 cellpadding=4><tr><th>group</th>"
                             f"<th>success</th></tr>{rows}</table>")
        for name, counts in (("Tool-call errors", diag["errors"]["calls"]),
                             ("Failed episodes by outcome", diag["errors"]["episodes"])):
            rows = "".join(f"<tr><td>{esc(str(k))}</td><td>{v}</td></tr>" for k, v in counts.items())
            parts.append(f"<h2>{esc(name)}</h2><table border=1 cellpadding=4><tr><th>kind</th><th>count</th></tr>"
                         f"{rows}</table>")
    for key, name in (("weakest_envs", "Weakest environments"), ("weakest_tools", "Weakest tools")):
        rows = "".join(f"<tr><td>{esc(r['name'])}</td><td>{r['episodes']}</td><td>{(r['success_rate'] or 0):.3f}</td>"
                       f"<td><pre>{esc(json.dumps(r['examples'], indent=1)[:1500])}</pre></td></tr>" for r in diag[key])
        parts.append(f"<h2>{name}</h2><table border=1 cellpadding=4><tr><th>name</th><th>episodes</th>"
                     f"<th>success</th><th>example failures</th></tr>{rows}</table>")
    return ("<!doctype html><meta charset='utf-8'><title>" + esc(title) + "</title><body style='font-family:sans-serif'>"
            + "\n".join(parts) + "</body>")
