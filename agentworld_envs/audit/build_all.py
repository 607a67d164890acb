"""Materialise many environments into the cache in parallel, and summarise the registry.

``agentworld build --all --jobs N`` and ``agentworld stats --json`` use these.
"""

from __future__ import annotations

import os
from concurrent.futures import as_completed
from typing import Any, Callable

import env_registry

from ..util.errors import CacheError
from ..util.procs import worker_pool
from ..engine.tools import WRITE_KINDS


def env_summary(name: str) -> dict[str, Any]:
    """Build (if needed) one environment and summarise it. Runs in worker processes."""
    from ..catalogue import catalog
    from ..engine import state
    from ..engine.spec import content_hash
    from ..synthesis.schema import schema_signature

    entry = env_registry.entry(name)
    out: dict[str, Any] = {"name": entry["name"], "split": entry["split"], "l1": entry["l1"], "l2": entry["l2"]}
    if entry["source"] == "synth":
        from ..synthesis.builder import cached_spec

        spec, report = cached_spec(entry["name"])
        out.update(tools_dropped=len(report.dropped), rejected=report.rejected)
        if report.rejected:
            return out
    else:
        spec = catalog.build_spec(entry["name"])
        out.update(tools_dropped=0, rejected=None)
    golden = state.golden_bytes(spec)
    conn = state.episode_connection(golden)
    rows = sum(conn.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in state.user_tables(conn))
    conn.close()
    writes = sum(1 for t in spec["tools"] if t["impl"]["kind"] in WRITE_KINDS
                 or (t["impl"]["kind"] == "python" and "read" not in t.get("tags", [])))
    out.update(tools=len(spec["tools"]), write_tools=writes, tables=len(spec["tables"]), rows=rows,
               golden_bytes=len(golden), schema=content_hash(schema_signature(spec["tables"]))[:16])
    extra = _task_summary(entry["name"])
    out.update(extra)
    if "task_error" not in extra:
        # The one-file bundle (spec + sealed tasks + golden name) that makes later loads cheap.
        try:
            catalog.load_bundle(entry["name"])
            from .lint import lint_env, summarise

            out["lint"] = summarise(lint_env(entry["name"]))
        except CacheError:
            raise
        except Exception as exc:  # noqa: BLE001 - reported in the summary like a task error
            out["bundle_error"] = f"{type(exc).__name__}: {exc}"[:300]
    return out


def _task_summary(name: str) -> dict[str, Any]:
    """Task counts, when a task source is available (filled in by the task synthesis stage)."""
    try:
        from .task_summary import task_summary
    except ImportError:
        return {}
    return task_summary(name)


def build_many(names: list[str], jobs: int | None = None,
               progress: Callable[[dict[str, Any]], None] | None = None) -> list[dict[str, Any]]:
    jobs = jobs or max(1, (os.cpu_count() or 1))
    results: list[dict[str, Any]] = []
    if jobs == 1:
        for n in names:
            results.append(env_summary(n))
            if progress:
                progress(results[-1])
        return results
    # worker_pool: killing the build (SIGTERM/SIGINT) stops the workers too, instead of orphaning them.
    with worker_pool(jobs) as pool:
        futures = {pool.submit(env_summary, n): n for n in names}
        for fut in as_completed(futures):
            try:
                res = fut.result()
            except CacheError:
                raise  # an unusable cache breaks every env alike: stop with its one clear message
            except Exception as exc:  # one broken env must not stop the build of the others
                res = {"name": futures[fut], "rejected": f"{type(exc).__name__}: {exc}", "tools_dropped": 0}
            results.append(res)
            if progress:
                progress(res)
    order = {n: i for i, n in enumerate(names)}
    return sorted(results, key=lambda r: order[r["name"]])


def registry_stats(summaries: list[dict[str, Any]]) -> dict[str, Any]:
    ok = [s for s in summaries if not s.get("rejected")]
    tools = [s["tools"] for s in ok]
    tax = env_registry.taxonomy()
    stats: dict[str, Any] = {
        "envs": len(ok),
        "l1": len({s["l1"] for s in ok}),
        "l2": len({(s["l1"], s["l2"]) for s in ok}),
        "l3": len(ok),
        "taxonomy_l2_defined": sum(len(x["l2"]) for x in tax["l1"]),
        "tools_total": sum(tools),
        "tools_mean": round(sum(tools) / len(tools), 2) if tools else 0,
        "tools_min": min(tools) if tools else 0,
        "tables_mean": round(sum(s["tables"] for s in ok) / len(ok), 2) if ok else 0,
        "rows_mean": round(sum(s["rows"] for s in ok) / len(ok), 1) if ok else 0,
        "write_tool_share": round(sum(s["write_tools"] for s in ok) / max(1, sum(tools)), 3),
        "distinct_schemas": len({s["schema"] for s in ok}),
        "tools_dropped": sum(s.get("tools_dropped", 0) for s in summaries),
        "envs_rejected": len(summaries) - len(ok),
        "splits": {sp: sum(1 for s in ok if s["split"] == sp) for sp in env_registry.SPLITS},
        "cache_bytes_golden": sum(s["golden_bytes"] for s in ok),
    }
    linted = [s for s in ok if "lint" in s]
    if linted:
        from .lint import RULES

        stats["lint_violations"] = sum(s["lint"]["violations"] for s in linted)
        # Every class, zeros included (the world classes of issue 23 among them), so a count is never absent.
        stats["lint_by_rule"] = {r: sum(s["lint"]["by_rule"].get(r, 0) for s in linted) for r in RULES}
    if any("tasks" in s for s in ok):
        from ..tasks.store import merge_task_stats

        stats.update(merge_task_stats(summaries))
    return stats
