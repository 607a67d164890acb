"""The ``agentworld`` command line (typer + rich).

Environment commands live here; other packages add theirs through the
``agentworld.cli`` entry-point group (``register(app)``), e.g. the trainer's ``train``.
"""

from __future__ import annotations

import json
import random
import sys
from importlib.metadata import entry_points
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

import env_registry

from .util.errors import UserInputError

app = typer.Typer(help="agentworld: stateful, verifiable tool-use environments for LLM agents.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)
console = Console()
#: Most worker processes a command starts (a typo such as --jobs 99999999 must not fork-bomb the machine).
MAX_JOBS = 256


def _ids(ids: list[str] | None, all_: bool, sample: int | None = None, l1: str | None = None,
         seed: int = 0) -> list[str]:
    if l1 and not env_registry.select(l1=l1):
        # A filter that matches nothing is almost always a typo; building or validating nothing is not success.
        known = sorted({e["l1"] for e in env_registry.manifest()})
        raise UserInputError(f"--l1 {l1!r} matches no environment; known: {', '.join(known[:12])}, ...")
    if all_ or sample or l1:
        chosen = [e["id"] for e in env_registry.select(l1=l1)] if (all_ or l1) else []
        if sample:
            pool = [e["id"] for e in env_registry.manifest()]
            chosen += random.Random(seed).sample(pool, min(sample, len(pool)))
        return list(dict.fromkeys(chosen + [env_registry.entry(i)["id"] for i in ids or []]))
    if not ids:
        raise typer.BadParameter("name at least one environment id, or use --all / --sample / --l1")
    return [env_registry.entry(i)["id"] for i in ids]


def _split(value: Optional[str]) -> Optional[str]:
    if value is not None and value not in env_registry.SPLITS:
        raise typer.BadParameter(f"{value!r} is not a split; use one of {', '.join(env_registry.SPLITS)}")
    return value


@app.command("list")
def list_(split: Optional[str] = typer.Option(None, help="train | arena", callback=_split),
          l1: Optional[str] = typer.Option(None, help="first-level category slug"),
          as_json: bool = typer.Option(False, "--json", help="one JSON object per line")) -> None:
    """List registered environments."""
    entries = env_registry.select(l1=l1, split=split)
    if as_json:
        for e in entries:
            print(json.dumps(e, ensure_ascii=False))
        return
    table = Table(title=f"{len(entries)} environments")
    for col in ("id", "split", "l1", "l2", "l3"):
        table.add_column(col)
    for e in entries:
        table.add_row(e["id"], e["split"], e["l1"], e["l2"], e["l3"])
    console.print(table)


@app.command()
def show(env_id: str, as_json: bool = typer.Option(False, "--json"),
         graph: bool = typer.Option(False, "--graph", help="print the tool dependency graph"),
         table: Optional[str] = typer.Option(None, help="print this table's rows (as `agentworld db` exports them)"),
         task: Optional[str] = typer.Option(None, help="with --table --after-solution: the task to replay"),
         after_solution: bool = typer.Option(False, "--after-solution", help="with --table: the state after the "
                                             "task's reference solution"),
         limit: int = typer.Option(20, min=0, help="with --table: rows to print (0: all)")) -> None:
    """Describe one environment: taxonomy, tables, tools, tasks; or print one table's rows (--table)."""
    if table is not None:
        from .serving.integrations.cli import print_table

        print_table(env_id, table, task, after_solution, limit, as_json)
        return
    if task is not None or after_solution:
        raise typer.BadParameter("--task and --after-solution go with --table")
    import agentworld_envs  # noqa: F401
    from .catalogue.catalog import load_bundle
    from .engine import state

    bundle = load_bundle(env_id)
    spec = bundle.spec
    conn = bundle.initial
    counts = {t: conn.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in state.user_tables(conn)}
    if graph:
        from .tasks.graph import describe_graph, graph_json, tool_graph

        g = tool_graph(spec)
        if as_json:
            print(json.dumps(graph_json(g)))
        else:
            console.print(describe_graph(g))
        return
    info = {
        "env_id": bundle.env_id, "title": spec["title"], "description": spec.get("description", ""),
        "taxonomy": spec["taxonomy"], "split": bundle.split, "now": spec["now"],
        "tables": [{"name": t["name"], "columns": [c["name"] for c in t["columns"]], "rows": counts[t["name"]]}
                   for t in spec["tables"]],
        "tools": [{"name": t["name"], "kind": t["impl"]["kind"], "description": t["description"]} for t in spec["tools"]],
        "tasks": len(bundle.tasks), "golden_bytes": bundle.golden_size,
        "example_task": bundle.tasks[0]["instruction"] if bundle.tasks else None,
    }
    if as_json:
        print(json.dumps(info, ensure_ascii=False, indent=1))
        return
    console.print(f"[bold]{info['title']}[/]  ({info['env_id']}, {info['split']})")
    console.print(" / ".join(spec["taxonomy"].values()))
    console.print(info["description"])
    tables = Table(title="tables")
    tables.add_column("table")
    tables.add_column("rows", justify="right")
    tables.add_column("columns")
    for t in info["tables"]:
        tables.add_row(t["name"], str(t["rows"]), ", ".join(t["columns"]))
    console.print(tables)
    tools = Table(title=f"{len(info['tools'])} tools")
    tools.add_column("tool")
    tools.add_column("kind")
    tools.add_column("description")
    for t in info["tools"]:
        tools.add_row(t["name"], t["kind"], t["description"])
    console.print(tools)
    console.print(f"{info['tasks']} tasks; e.g.: {info['example_task']}")


@app.command()
def play(env_id: str, task: Optional[str] = typer.Option(None, help="task id (default: seeded pick)"),
         seed: int = typer.Option(0, min=0), solution: bool = typer.Option(False, "--solution", help="replay the reference solution"),
         max_turns: Optional[int] = typer.Option(None, min=1)) -> None:
    """Play an episode at the prompt (type a tool call as JSON or <tool_call>…), or replay the solution."""
    import gymnasium as gym

    import agentworld_envs  # noqa: F401

    env = gym.make(env_registry.entry(env_id)["id"], **({"max_turns": max_turns} if max_turns else {}))
    obs, info = env.reset(seed=seed, options={"task_id": task} if task else None)
    console.print(f"[bold]{info['env_id']}[/]  task {info['task_id']}\n")
    console.print(obs, markup=False)
    console.print("\n[dim]tools: " + ", ".join(t["function"]["name"] for t in info["tools"]) + "[/]")
    scripted = iter(env.unwrapped.solution_actions()) if solution else None
    while True:
        if scripted is not None:
            action = next(scripted)
            console.print(f"\n[cyan]> {action}[/]", markup=True, highlight=False)
        else:
            try:
                action = console.input("\n[cyan]> [/]")
            except (EOFError, KeyboardInterrupt):
                console.print("\n[dim]bye[/]")
                return
        obs, reward, terminated, truncated, step_info = env.step(action)
        console.print(obs, markup=False, highlight=False)
        if terminated or truncated:
            console.print(f"\n[bold]reward {reward}[/]  success={step_info.get('success')}  turns={step_info['turn']}")
            for check in step_info.get("checks", []):
                mark = "[green]✓[/]" if check["passed"] else "[red]✗[/]"
                console.print(f"  {mark} {check['type']} {check.get('description') or ''} {check.get('detail') or ''}",
                              highlight=False)
            return


@app.command()
def validate(ids: Optional[list[str]] = typer.Argument(None), all_: bool = typer.Option(False, "--all"),
             sample: Optional[int] = typer.Option(None, min=1, max=100_000, help="also validate N ids drawn with --seed"),
             l1: Optional[str] = typer.Option(None, help="validate every env of a first-level category"),
             seed: int = typer.Option(0, min=0), quick: bool = typer.Option(False, help="skip random and near-miss checks"),
             jobs: int = typer.Option(1, min=0, max=MAX_JOBS, help="worker processes (0: one per core)"),
             as_json: bool = typer.Option(False, "--json", help="one JSON object per env")) -> None:
    """Check envs: gymnasium check_env, reference solutions, no-op/random/near-miss rejection, determinism."""
    import agentworld_envs  # noqa: F401
    from .audit.validation import validate_many

    failed = 0
    for record in validate_many(_ids(ids, all_, sample, l1, seed), thorough=not quick, jobs=jobs or None):
        failed += not record["ok"]
        if as_json:
            print(json.dumps(record, ensure_ascii=False), flush=True)
        else:
            mark = "[green]ok[/]" if record["ok"] else "[red]FAIL[/]"
            console.print(f"{mark} {record['env_id']}: tools={record['tools']} tasks={record['tasks']} "
                          f"solution_pass={record['solution_pass']} noop_fail={record['noop_fail']} "
                          f"random_fail={record.get('random_fail', '-')} nearmiss_fail={record.get('nearmiss_fail', '-')} "
                          f"check_env={record['check_env']} deterministic={record['deterministic']}")
    raise typer.Exit(1 if failed else 0)


@app.command()
def bench(env_id: str = typer.Argument("retail"), as_json: bool = typer.Option(False, "--json"),
          n: int = typer.Option(2000, min=2, max=1_000_000, help="samples per latency figure"),
          live: int = typer.Option(1024, min=1, max=100_000, help="live episodes for the memory figure")) -> None:
    """Measure reset/step/verify latency, replay throughput, memory per live episode, vector throughput."""
    import agentworld_envs  # noqa: F401
    from .audit.bench import bench_env, summary_lines

    result = bench_env(env_registry.entry(env_id)["id"], n=n, live=live)
    if as_json:
        print(json.dumps(result))
    else:
        for line in summary_lines(result):
            console.print(line, highlight=False)


@app.command()
def build(ids: Optional[list[str]] = typer.Argument(None), all_: bool = typer.Option(False, "--all"),
          l1: Optional[str] = typer.Option(None), jobs: int = typer.Option(0, min=0, max=MAX_JOBS, help="worker processes (0: one per core)")) -> None:
    """Materialise environments (spec, golden SQLite, tasks) into the cache."""
    import time

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from .audit.build_all import build_many

    names = [env_registry.entry(i)["name"] for i in _ids(ids, all_, None, l1)]
    t0 = time.perf_counter()
    rejected = []
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=Console(stderr=True)) as progress:
        bar = progress.add_task("building", total=len(names))

        def tick(res):
            if res.get("rejected"):
                rejected.append(res)
            progress.update(bar, advance=1, description=f"building {res['name'][:40]:<40}")

        build_many(names, jobs=jobs or None, progress=tick)
    console.print(f"built {len(names) - len(rejected)} environments in {time.perf_counter() - t0:.1f} s; "
                  f"rejected {len(rejected)}")
    for r in rejected[:20]:
        console.print(f"  [red]rejected[/] {r['name']}: {r['rejected']}")


@app.command()
def lint(ids: Optional[list[str]] = typer.Argument(None), all_: bool = typer.Option(False, "--all"),
         l1: Optional[str] = typer.Option(None, help="lint every env of a first-level category"),
         jobs: int = typer.Option(0, min=0, max=MAX_JOBS, help="worker processes (0: one per core)"),
         as_json: bool = typer.Option(False, "--json", help="one JSON summary")) -> None:
    """Check that environments make sense: key names, vocabularies, value ranges, dates, tool names, instructions."""
    from .audit.lint import RULES
    from .audit.build_all import build_many

    names = [env_registry.entry(i)["name"] for i in _ids(ids, all_, None, l1)]
    summaries = build_many(names, jobs=jobs or None)
    by_rule: dict[str, int] = {r: 0 for r in RULES}
    envs_with, broken, examples = [], [], []
    for s in summaries:
        if "lint" not in s:
            broken.append({"env": s["name"], "error": s.get("rejected") or s.get("bundle_error") or s.get("task_error")})
            continue
        for rule, n in s["lint"]["by_rule"].items():
            by_rule[rule] = by_rule.get(rule, 0) + n
        if s["lint"]["violations"]:
            envs_with.append(s["name"])
            for rule_examples in s["lint"]["examples"].values():
                examples += [{"env": s["name"], **e} for e in rule_examples[:1]]
    result = {"envs": len(names), "envs_linted": len(names) - len(broken), "violations": sum(by_rule.values()),
              "envs_with_violations": len(envs_with), "by_rule": by_rule, "examples": examples[:50], "not_linted": broken}
    if as_json:
        print(json.dumps(result))
    else:
        console.print(f"linted {result['envs_linted']} of {len(names)} environments: {result['violations']} violations "
                      f"in {len(envs_with)} environments", highlight=False)
        for rule, n in by_rule.items():
            if n:
                console.print(f"  {rule}: {n}", highlight=False)
        for e in examples[:20]:
            console.print(f"  [red]{e['rule']}[/] {e['env']} {e['where']}: {e['detail']}", highlight=False)
        for b in broken[:20]:
            console.print(f"  [red]not linted[/] {b['env']}: {b['error']}", highlight=False)
    raise typer.Exit(1 if result["violations"] or broken else 0)


@app.command()
def stats(as_json: bool = typer.Option(False, "--json"), jobs: int = typer.Option(0, min=0, max=MAX_JOBS)) -> None:
    """Registry totals (builds whatever is not in the cache yet)."""
    from .audit.build_all import build_many, registry_stats

    summaries = build_many([e["name"] for e in env_registry.manifest()], jobs=jobs or None)
    result = registry_stats(summaries)
    if as_json:
        print(json.dumps(result))
        return
    table = Table(title="agentworld registry")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for k, v in result.items():
        table.add_row(k, json.dumps(v) if isinstance(v, (dict, list)) else str(v))
    console.print(table)


from .arena.cli import register_arena_commands  # noqa: E402
from .serving.mcp_server import register_mcp_command  # noqa: E402  (typer-only import; the server loads lazily)

from .serving.integrations.cli import register_integration_commands  # noqa: E402  (frameworks load lazily)

register_mcp_command(app)
register_arena_commands(app)
register_integration_commands(app)


tasks_app = typer.Typer(help="Verified task synthesis.", no_args_is_help=True)
app.add_typer(tasks_app, name="tasks")


@tasks_app.command("synth")
def tasks_synth(env_id: str, n: int = typer.Option(10, "--n", min=1, max=2000, help="tasks to produce"),
                seed: int = typer.Option(1, min=0),
                focus_tools: Optional[str] = typer.Option(None, help="comma-separated tool names the tasks must use"),
                min_difficulty: Optional[float] = typer.Option(None),
                as_json: bool = typer.Option(False, "--json", help="one JSON task per line, then the report")) -> None:
    """Synthesise fresh tasks on demand (each passes the self-verification gate)."""
    import agentworld_envs  # noqa: F401
    from .catalogue.fresh_tasks import synthesize_tasks

    focus = [t.strip() for t in focus_tools.split(",") if t.strip()] if focus_tools else None
    tasks, report = synthesize_tasks(env_registry.entry(env_id)["id"], n=n, seed=seed, focus_tools=focus,
                                     min_difficulty=min_difficulty)
    if as_json:
        for t in tasks:
            print(json.dumps(t, ensure_ascii=False))
        print(json.dumps({"report": report}))
        return
    for t in tasks:
        console.print(f"[bold]{t['id']}[/] {t['kind']} d={t['difficulty']} calls={t['knobs']['chain_length']}: "
                      f"{t['instruction']}", highlight=False)
    console.print(f"kept {report['kept']} in {report['seconds']} s; rejected {report['rejected']}")


export_app = typer.Typer(help="Export tasks and reference trajectories as JSON lines and Hugging Face datasets.", no_args_is_help=True)
app.add_typer(export_app, name="export")


@export_app.command("tasks")
def export_tasks_cmd(out: str = typer.Option(..., "--out", help="a new or empty directory"),
                     ids: Optional[list[str]] = typer.Option(None, "--ids"),
                     split: Optional[str] = typer.Option(None, callback=_split),
                     limit: Optional[int] = typer.Option(None, min=1, max=1_000_000),
                     overwrite: bool = typer.Option(False, help="replace an earlier task export in --out")) -> None:
    """Tasks as tasks.jsonl and a Hugging Face dataset (env_id, task_id, split, kind, difficulty, instruction, tools, prompt)."""
    import agentworld_envs  # noqa: F401
    from .serving.export import export_tasks, select_envs

    n = export_tasks(out, select_envs(ids, split, limit), overwrite=overwrite)
    console.print(f"wrote {n} tasks to {out}{_arrow_note()}", markup=False, soft_wrap=True)


@export_app.command("sft")
def export_sft_cmd(out: str = typer.Option(..., "--out", help="a new or empty directory"),
                   ids: Optional[list[str]] = typer.Option(None, "--ids"),
                   split: Optional[str] = typer.Option(None, callback=_split),
                   limit: Optional[int] = typer.Option(None, min=1, max=1_000_000),
                   overwrite: bool = typer.Option(False, help="replace an earlier SFT export in --out")) -> None:
    """Reference trajectories as OpenAI-style messages (only those that replay to reward 1.0)."""
    import agentworld_envs  # noqa: F401
    from .serving.export import export_sft, select_envs

    n = export_sft(out, select_envs(ids, split, limit), overwrite=overwrite)
    console.print(f"wrote {n} trajectories to {out}{_arrow_note()}", markup=False, soft_wrap=True)


def _arrow_note() -> str:
    from .serving.export import arrow_available

    return "" if arrow_available() else " (JSON lines only: the Arrow dataset needs the 'train' extra, " \
                                        "pip install 'agentworld[train]')"


def _load_plugins() -> None:
    """Add the commands of the ``agentworld.cli`` entry points (``name = "module:register [extra]"``)."""
    for ep in entry_points(group="agentworld.cli"):
        try:
            register = ep.load()
        except ImportError as exc:
            from .util.extras import EXTRAS, missing

            absent = [x for x in ep.extras if x not in EXTRAS or missing(x)]
            if absent:  # its extra is not installed: the command still exists and says which one
                _missing_extra_command(ep.name, absent[0])
            else:  # installed but broken: say so, and keep the other commands working
                print(f"agentworld: skipping command {ep.name!r}: {exc}", file=sys.stderr)
            continue
        register(app)


def _missing_extra_command(name: str, extra: str) -> None:
    from .util.extras import MissingExtraError, message

    @app.command(name, help=f"(needs the '{extra}' extra: pip install 'agentworld[{extra}]')",
                 context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
    def stub(ctx: typer.Context) -> None:
        raise MissingExtraError(message(extra, f"agentworld {name}"))


def main() -> None:
    from .util.errors import run_cli

    _load_plugins()
    # User errors (bad ids, specs, cache, options) become one line + exit 2; bugs keep their traceback.
    run_cli(app)


if __name__ == "__main__":
    main()
