"""``agentworld eval`` and ``agentworld diagnose``: the arena's evaluation and failure analysis."""

from __future__ import annotations

import contextlib
import json
import random
from pathlib import Path
from typing import Optional
from urllib.parse import urlparse

import typer

#: Defaults for model / endpoint policies, sized for a CPU (scripted policies are cheap: they evaluate
#: every selected env and task with the env's own turn limit). Every one is a flag.
MODEL_DEFAULT_ENVS = 12
MODEL_DEFAULT_TASKS = 2
MODEL_DEFAULT_TURNS = 6
SCRIPTED_ROUND_TASKS = 6


def _select(ids: list[str] | None, split: str | None, l1: str | None, limit: int, seed: int) -> list[str]:
    import env_registry

    if ids:
        try:
            return [env_registry.entry(i)["id"] for i in ids]
        except KeyError as exc:
            raise typer.BadParameter(str(exc).strip("'\"")) from None
    entries = [e["id"] for e in env_registry.select(l1=l1, split=split)]
    if not entries:
        raise typer.BadParameter(f"no environment matches split={split!r} l1={l1!r}")
    if limit and len(entries) > limit:
        entries = sorted(random.Random(seed).sample(entries, limit))
    return entries


def _policy(name: str, model: str | None, base_url: str | None, adapter: str | None, api_key: str | None,
            batch_size: int, max_new_tokens: int):
    from .evaluation import SCRIPTED, OpenAIPolicy

    if name in SCRIPTED:
        for flag, value in (("--model", model), ("--base-url", base_url), ("--adapter", adapter)):
            if value is not None:
                raise typer.BadParameter(f"{flag} is for --policy model / openai, not the scripted {name!r} policy")
        return SCRIPTED[name]()
    if name == "openai":
        if not base_url or not model:
            raise typer.BadParameter("--policy openai needs --base-url and --model")
        url = urlparse(base_url)
        if url.scheme not in ("http", "https") or not url.netloc:
            raise typer.BadParameter(f"--base-url {base_url!r} is not an http(s) URL, e.g. http://127.0.0.1:8000/v1")
        return OpenAIPolicy(base_url, model, api_key=api_key, max_tokens=max_new_tokens)
    if name == "model":
        if not model:
            raise typer.BadParameter("--policy model needs --model (an HF directory, a .gguf file or smollm2-135m)")
        # The trainer provides this policy through the "agentworld.policies" entry points: the suite never imports it.
        from ..util.extras import require
        from ..util.registry import entry_point

        require("train", "--policy model")
        try:
            model_policy = entry_point("agentworld.policies", "model")
        except KeyError as exc:  # installed metadata without the entry point (an old install)
            raise typer.BadParameter(exc.args[0]) from None
        if adapter is not None and not Path(adapter).expanduser().is_dir():
            raise typer.BadParameter(f"--adapter {adapter}: no such directory (a LoRA adapter from a training run)")
        try:
            return model_policy(model, adapter=adapter, batch_size=batch_size, max_new_tokens=max_new_tokens)
        except ValueError as exc:   # the trainer's TrainError (a ValueError): a model reference naming nothing loadable
            raise typer.BadParameter(str(exc)) from None
    raise typer.BadParameter(f"unknown policy {name!r}: reference | noop | random | model | openai")


def register_arena_commands(app: typer.Typer) -> None:
    @app.command("eval")
    def eval_(ids: Optional[list[str]] = typer.Argument(None, help="environment ids (default: the --split selection)"),
              policy: str = typer.Option("reference", help="reference | noop | random | model | openai"),
              suite: str = typer.Option("arena", help="arena (agentworld's held-out envs) | bfcl (BFCL v4 multi-turn, "
                                                      "4 categories) | tau2 (τ²-bench telecom solo, retail, airline)"),
              model: Optional[str] = typer.Option(None, help="model: HF directory, .gguf file or smollm2-135m; openai: model name"),
              adapter: Optional[str] = typer.Option(None, help="LoRA adapter directory from a training run (--policy model)"),
              base_url: Optional[str] = typer.Option(None, help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1"),
              api_key: Optional[str] = typer.Option(None, envvar="OPENAI_API_KEY", help="bearer token for --base-url"),
              split: str = typer.Option("arena", help="arena (held-out) | train; with --suite bfcl|tau2 also all "
                                                      "(arena: τ²'s test split, BFCL's whole set; all: τ²'s base sets)"),
              l1: Optional[str] = typer.Option(None, help="first-level category"),
              envs: int = typer.Option(-1, help=f"evaluate at most this many envs of the selection, a seeded sample "
                                                f"(-1: all for scripted policies, {MODEL_DEFAULT_ENVS} for model/openai)"),
              tasks_per_env: int = typer.Option(-1, help=f"tasks per env (-1: all, or {SCRIPTED_ROUND_TASKS} fresh ones "
                                                         f"with --round; {MODEL_DEFAULT_TASKS} for model/openai)"),
              round_: Optional[int] = typer.Option(None, "--round", help="evaluate tasks freshly synthesised for round R"),
              seed: int = typer.Option(0),
              max_turns: int = typer.Option(-1, help=f"turn limit (0: the env's; -1: the env's for scripted "
                                                     f"policies, {MODEL_DEFAULT_TURNS} for model/openai)"),
              max_tools: int = typer.Option(0, help="tools shown per episode (0: all)"),
              show_policy: bool = typer.Option(True, "--show-policy/--hide-policy",
                                               help="put the service policy before each task (as training did); "
                                                    "hidden: trap tasks, which need it, are left out"),
              batch_size: int = typer.Option(16, help="episodes played at once (batched generation)"),
              max_new_tokens: int = typer.Option(128, help="tokens generated per turn (model/openai)"),
              out: Optional[Path] = typer.Option(None, help="run directory for records.jsonl and summary.json "
                                                              "(default runs/eval-POLICY-SPLIT)"),
              overwrite: bool = typer.Option(False, help="replace an earlier eval run in the run directory "
                                                         "(only the files agentworld wrote there are removed)"),
              env_workers: str = typer.Option("local", help="where the envs run: local (this process) | ray "
                                                             "(Ray actors, many envs each)"),
              ray_address: Optional[str] = typer.Option(None, help="with --env-workers ray: a cluster to join "
                                                                    "(auto, ray://head:10001); default: a local "
                                                                    "session bound to 127.0.0.1"),
              ray_workers: int = typer.Option(2, help="with --env-workers ray: env-worker actors"),
              as_json: bool = typer.Option(False, "--json", help="print the summary as one JSON object")) -> None:
        """Evaluate a policy on held-out environments or a real benchmark: one JSON record per episode plus a summary."""
        import agentworld_envs  # noqa: F401
        from ..util.outputs import OutputDir
        from .evaluation import EvaluationError, evaluate, select_tasks, summarize
        from ..external import SUITES

        for flag, value, lo in (("--envs", envs, -1), ("--tasks-per-env", tasks_per_env, -1), ("--max-turns", max_turns, -1),
                                ("--max-tools", max_tools, 0), ("--batch-size", batch_size, 1),
                                ("--max-new-tokens", max_new_tokens, 1), ("--round", round_ or 0, 0),
                                ("--ray-workers", ray_workers, 1), ("--seed", seed, 0)):
            if value < lo:
                raise typer.BadParameter(f"{flag} must be >= {lo}, got {value}")
        if env_workers not in ("local", "ray"):
            raise typer.BadParameter(f"--env-workers must be local or ray, not {env_workers!r}")
        if suite != "arena" and suite not in SUITES:
            raise typer.BadParameter(f"--suite must be arena, {' or '.join(SUITES)}, not {suite!r}")
        if suite != "arena":
            for flag, given in (("ids", bool(ids)), ("--l1", l1 is not None), ("--round", round_ is not None),
                                ("--envs", envs >= 0), ("--max-tools", bool(max_tools))):
                if given:
                    raise typer.BadParameter(f"{flag} applies to the arena, not to --suite {suite} (a benchmark keeps "
                                             "its own environments, tasks and tools)")
        if split not in (("arena", "train") if suite == "arena" else ("arena", "train", "all")):
            raise typer.BadParameter(f"--split must be arena or train{'' if suite == 'arena' else ' or all'}, "
                                     f"not {split!r}")
        if env_workers != "ray" and (ray_address is not None or ray_workers != 2):
            raise typer.BadParameter("--ray-address and --ray-workers are for --env-workers ray")
        if suite != "arena":
            run_dir = out or Path("runs") / f"eval-{policy}-{suite}-{split}"
        else:
            run_dir = out or Path("runs") / (f"eval-{policy}-{split}" + (f"-round{round_}" if round_ is not None else ""))
        reserved = ["records.jsonl", "summary.json"] + ([f"round-{round_}-tasks.json"] if round_ is not None else [])
        claim = dict(overwrite=overwrite, reserved=reserved, what="an earlier eval run",
                     again="pass --overwrite to replace it (only the files agentworld wrote are removed), or "
                           "choose another --out")
        claim["flag"] = "--out" if out is not None else "run directory"
        OutputDir.claim(run_dir, "eval", check_only=True, **claim)   # refuse before loading a model
        pol = _policy(policy, model, base_url, adapter, api_key, batch_size, max_new_tokens)
        scripted = policy in ("reference", "noop", "random")
        if suite != "arena":
            _eval_suite(pol, policy, suite, split, scripted, tasks_per_env, max_turns, seed, show_policy, batch_size,
                        run_dir, claim, env_workers, ray_address, ray_workers, as_json)
            return
        limit = envs if envs >= 0 else (0 if scripted else MODEL_DEFAULT_ENVS)
        if tasks_per_env < 0:
            tasks_per_env = (SCRIPTED_ROUND_TASKS if round_ is not None else 0) if scripted else MODEL_DEFAULT_TASKS
        if max_turns < 0:
            max_turns = 0 if scripted else MODEL_DEFAULT_TURNS
        env_ids = _select(ids, split, l1, limit, seed)
        fresh = not run_dir.exists()
        run_out = OutputDir.claim(run_dir, "eval", **claim)
        if overwrite:
            run_out.clear()
        try:
            pairs, overlay = select_tasks(env_ids, tasks_per_env=tasks_per_env, round_=round_, seed=seed,
                                          overlay_dir=run_dir, skip_traps=not show_policy)
            records = evaluate(pol, pairs, seed=seed, max_turns=max_turns or None, batch_size=batch_size,
                               overlay=overlay, round_=round_, max_tools=max_tools or None,
                               show_policy=show_policy, env_workers=env_workers, ray_address=ray_address, ray_workers=ray_workers)
        except EvaluationError as exc:
            if fresh:
                run_out.discard_if_empty()   # a run that failed leaves no directory it made
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from None
        summary = summarize(records, policy=getattr(pol, "name", policy), split=split, round=round_, seed=seed,
                            run_dir=str(run_dir))
        _write_run(run_out, fresh, records, summary, reserved)
        if run_out.note():
            typer.echo(run_out.note(), err=True)
        if as_json:
            print(json.dumps(summary))
        else:
            typer.echo(f"{summary['episodes']} episodes in {summary['envs']} envs: success {summary['success_rate']:.3f}, "
                       f"reward {summary['reward_mean']:.3f} -> {run_dir}/records.jsonl")

    def _write_run(run_out, fresh: bool, records, summary: dict, reserved: list[str]) -> None:
        """``records.jsonl`` then ``summary.json``, each atomically, recorded in the run's manifest with
        ``reserved``'s other files. When writing fails (a full disk), a run directory this command made
        is removed again whole, never left holding half a run."""
        from .evaluation import run_files
        from ..util.outputs import OutputError

        for name in reserved[:2]:
            run_out.target(name)   # checked again: nothing of the user's appeared there meanwhile
        try:
            run_out.record(*reserved[2:])   # the round's task file select_tasks wrote there
            for name, text in run_files(records, summary).items():
                run_out.write_text(name, text)
        except BaseException:
            if fresh:
                with contextlib.suppress(OutputError):
                    run_out.clear()
                run_out.discard_if_empty()
            raise
        run_out.record(*reserved)

    def _eval_suite(pol, policy: str, suite: str, split: str, scripted: bool, tasks_per_env: int, max_turns: int,
                    seed: int, show_policy: bool, batch_size: int, run_dir: Path, claim: dict, env_workers: str,
                    ray_address: str | None, ray_workers: int, as_json: bool) -> None:
        """``agentworld eval --suite bfcl|tau2``: the benchmark's own envs and scorers, the arena's records."""
        from .evaluation import SUITE_SPLITS, EvaluationError, evaluate_suite, summarize
        from ..external import MissingExtraError
        from ..util.outputs import OutputDir

        if tasks_per_env < 0:
            tasks_per_env = 0 if scripted else MODEL_DEFAULT_TASKS
        fresh = not run_dir.exists()
        run_out = OutputDir.claim(run_dir, "eval", **claim)
        if claim["overwrite"]:
            run_out.clear()
        try:
            # A benchmark's own turn limits unless --max-turns says otherwise (-1 and 0 alike).
            records = evaluate_suite(pol, suite, split=split, tasks_per_env=tasks_per_env, seed=seed,
                                     max_turns=max_turns if max_turns > 0 else None, batch_size=batch_size,
                                     show_policy=show_policy, env_workers=env_workers, ray_address=ray_address,
                                     ray_workers=ray_workers)
        except (EvaluationError, MissingExtraError) as exc:
            if fresh:
                run_out.discard_if_empty()   # a run that failed leaves no directory it made
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from None
        summary = summarize(records, policy=getattr(pol, "name", policy), suite=suite, split=split,
                            benchmark_split=SUITE_SPLITS[split], seed=seed, run_dir=str(run_dir), per_env=True)
        _write_run(run_out, fresh, records, summary, claim["reserved"])
        if run_out.note():
            typer.echo(run_out.note(), err=True)
        if as_json:
            print(json.dumps(summary))
        else:
            rows = ", ".join(f"{env.split('/')[-1]} {row['reward_mean']:.3f}" for env, row in summary["per_env"].items())
            typer.echo(f"{suite} ({split}): {summary['episodes']} episodes, success {summary['success_rate']:.3f}, "
                       f"reward {summary['reward_mean']:.3f} [{rows}] -> {run_dir}/records.jsonl")

    @app.command("diagnose")
    def diagnose_(run: Path = typer.Argument(..., help="an eval run directory (with records.jsonl)"),
                  top: int = typer.Option(5, help="weakest environments and tools to list"),
                  html_out: Optional[Path] = typer.Option(None, "--html", help="report path (default RUN/diagnosis.html)"),
                  as_json: bool = typer.Option(False, "--json", help="print the diagnosis as one JSON object")) -> None:
        """Where the agent fails: success by category, env, tool, kind, difficulty, chain length; the error mix."""
        from .diagnosis import diagnose, render_html
        from .evaluation import EvaluationError, read_records
        from ..util.outputs import OutputDir, check_new_file, write_new_file

        if top < 1:
            raise typer.BadParameter(f"--top must be >= 1, got {top}")
        try:
            records = read_records(run)
        except EvaluationError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from None
        if not records:
            raise typer.BadParameter(f"{run}/records.jsonl holds no episodes")
        diag = diagnose(records, top=top)
        # Into the run directory, replacing only diagnosis files agentworld wrote there before.
        run_out = OutputDir.adopt(run, "diagnosis", flag="run directory")
        html_path = run / "diagnosis.html" if html_out is None else html_out
        inside = html_path.expanduser().resolve().parent == run.resolve()
        for name in ("diagnosis.json",) + (("diagnosis.html" if html_out is None else html_path.name,) if inside else ()):
            run_out.target(name)   # refuse before writing anything
        if not inside:
            check_new_file(html_path, "--html")
        page_text = render_html(diag, title=f"agentworld diagnosis: {run}")
        run_out.write_text("diagnosis.json", json.dumps(diag, indent=1))
        page = run_out.write_text(html_path.name, page_text) if inside else write_new_file(html_path, page_text, "--html")
        if as_json:
            print(json.dumps(diag))
        else:
            typer.echo(f"success {diag['success_rate']:.3f} over {diag['episodes']} episodes; "
                       f"weakest tools: {', '.join(t['name'] for t in diag['weakest_tools']) or '-'}; report {page}")
