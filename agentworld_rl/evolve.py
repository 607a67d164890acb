"""``agentworld evolve``: the self-evolving loop over the arena.

Round r (1-based), with π(1) the preset's model:

1. **evaluate** π(r) on held-out arena environments with tasks freshly synthesised for round r;
2. **diagnose** the records (weak categories, task families, tools, the error mix);
3. **synthesise** targeted, gated tasks in train environments of the weak categories (a task
   overlay file every env process reads);
4. **train**: continue GRPO from π(r) on those tasks (round 1 warm-starts with SFT on their
   reference trajectories, as the preset does) → π(r+1), saved as a merged model directory.

After the last round π(N+1) is evaluated once more (round N+1 tasks), so the report shows N+1
points. Every phase writes its result under ``OUTPUT_DIR/round-R/`` and is skipped when that
result exists, so an interrupted run resumes where it stopped (training itself resumes from its
last checkpoint). ``rounds.json`` and ``evolve_report.html`` (with a plot) summarise the run.
"""

from __future__ import annotations

import dataclasses
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentworld_envs.util.errors import EnvWorkerError

from .config import PRESETS, TrainConfig
from .errors import TrainError


@dataclass
class EvolveConfig:
    rounds: int = 2
    """Rounds of evaluate -> diagnose -> synthesise -> train."""
    preset: str = "smol-cpu"
    """Trainer preset each round's training starts from (model, batch, knobs)."""
    output_dir: str = "runs/evolve"
    eval_envs: int = 12
    """Arena environments evaluated each round (a seeded sample)."""
    eval_tasks_per_env: int = 2
    """Fresh round tasks per arena environment."""
    target_tasks: int = 16
    """Targeted train tasks synthesised each round."""
    target_envs: int = 8
    """Train environments the targeted tasks are spread over."""
    train_steps: int = 0
    """GRPO steps per round (0: the preset's)."""
    sft_steps: int = -1
    """SFT warm-start steps in round 1 (-1: the preset's; later rounds continue with RL only)."""
    seed: int = 0

    def __post_init__(self) -> None:
        if self.preset not in PRESETS:
            raise TrainError(f"evolve preset: unknown preset {self.preset!r}; one of {', '.join(sorted(PRESETS))}")
        for name in ("rounds", "eval_envs", "eval_tasks_per_env", "target_tasks", "target_envs"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise TrainError(f"evolve {name}: expected an integer >= 1, got {value!r}")
        if self.train_steps < 0 or self.sft_steps < -1:
            raise TrainError("evolve train_steps must be >= 0 and sft_steps >= -1")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise TrainError(f"evolve seed: expected an integer >= 0, got {self.seed!r}")


def _arena_envs(cfg: EvolveConfig) -> list[str]:
    import env_registry

    ids = sorted(e["id"] for e in env_registry.select(split="arena"))
    return sorted(random.Random(f"evolve:{cfg.seed}").sample(ids, min(cfg.eval_envs, len(ids))))


def _evaluate(model: str, base: TrainConfig, cfg: EvolveConfig, round_: int, run_dir: Path) -> dict[str, Any]:
    """Phase 1: π on the arena's round tasks; returns the summary (cached in run_dir)."""
    from agentworld_envs.arena.evaluation import evaluate, select_tasks, summarize, write_run

    from .policy import ModelPolicy

    if (run_dir / "summary.json").is_file():
        return json.loads((run_dir / "summary.json").read_text())
    steps = base.max_solution_steps or None
    pairs, overlay = select_tasks(_arena_envs(cfg), tasks_per_env=cfg.eval_tasks_per_env, round_=round_,
                                  seed=cfg.seed, overlay_dir=run_dir, max_steps=steps,
                                  skip_traps=not base.show_policy)
    policy = ModelPolicy(model, batch_size=max(1, min(16, len(pairs))), max_new_tokens=base.max_new_tokens,
                         tool_descriptions=base.tool_descriptions, max_context_tokens=base.max_context_tokens,
                         torch_threads=base.torch_threads)
    records = evaluate(policy, pairs, seed=cfg.seed, max_turns=base.max_turns, overlay=overlay, round_=round_,
                       max_tools=base.max_tools or None, show_policy=base.show_policy, batch_size=16)
    summary = summarize(records, policy=policy.name, round=round_, split="arena", seed=cfg.seed)
    write_run(run_dir, records, summary)   # summary.json last: its presence marks the phase done
    return summary


def _diagnose(run_dir: Path) -> dict[str, Any]:
    from agentworld_envs.arena.diagnosis import diagnose, write_html
    from agentworld_envs.arena.evaluation import read_records

    path = run_dir / "diagnosis.json"
    if path.is_file():
        return json.loads(path.read_text())
    diag = diagnose(read_records(run_dir))
    write_html(diag, run_dir / "diagnosis.html")
    path.write_text(json.dumps(diag, indent=1))
    return diag


def _targets(diag: dict[str, Any], base: TrainConfig, cfg: EvolveConfig, round_: int, rd: Path) -> tuple[Path, dict]:
    from agentworld_envs.arena.targeting import plan_targets, synthesize_targeted

    report_path, overlay = rd / "targets.report.json", rd / "targets.json"
    if report_path.is_file() and overlay.is_file():
        return overlay, json.loads(report_path.read_text())
    plans = plan_targets(diag, round_=round_, total=cfg.target_tasks, envs=cfg.target_envs,
                         max_steps=base.max_solution_steps or None)
    overlay, report = synthesize_targeted(plans, round_=round_, out=overlay)
    report_path.write_text(json.dumps(report, indent=1))
    return overlay, report


def _train(model: str, overlay: Path, report: dict, cfg: EvolveConfig, round_: int, rd: Path) -> str:
    """Phase 4: GRPO from ``model`` on the targeted tasks; returns π(r+1)'s model directory."""
    from .trainer import train

    out = rd / "train"
    final = out / "final-model"
    if (final / "config.json").is_file():
        return str(final)
    envs = sorted({p["env_id"] for p in report["plans"]})
    fields = {f.name for f in dataclasses.fields(TrainConfig)}
    overrides = dict(model=model, env_ids=envs, split="train", max_envs=0, max_tasks_per_env=0,
                     task_overlay=str(overlay), overlay_mode="only", eval_split="", eval_env_ids=[],
                     output_dir=str(out), save_final_model=True,
                     # an interrupted round continues from its newest complete checkpoint
                     resume_from="latest" if (out / "checkpoints").exists() else "", overwrite=(out / "metrics.jsonl").exists()
                     and not (out / "checkpoints").exists())
    if cfg.train_steps:
        overrides["steps"] = cfg.train_steps
    if round_ > 1:
        overrides["sft_steps"] = 0   # π(r) already imitates; continue with RL only
    elif cfg.sft_steps >= 0:
        overrides["sft_steps"] = cfg.sft_steps
    train(TrainConfig(**{k: v for k, v in {**PRESETS[cfg.preset], **overrides}.items() if k in fields}))
    return str(final)


def _plot(rounds: list[dict[str, Any]], path: Path) -> str:
    import base64
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    xs = [r["round"] for r in rounds]
    ax.plot(xs, [r["arena_success"] for r in rounds], marker="o", label="arena success (round tasks)")
    ax.plot(xs, [r["arena_reward"] for r in rounds], marker="s", linestyle="--", label="arena mean reward")
    ax.set_xlabel("round (policy π(r) evaluated on round-r tasks)")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xticks(xs)
    ax.legend()
    ax.set_title("Self-evolving loop")
    fig.savefig(path.with_suffix(".png"), dpi=90, bbox_inches="tight")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _report(rounds: list[dict[str, Any]], out: Path) -> None:
    import html

    (out / "rounds.json").write_text(json.dumps(rounds, indent=1))
    img = _plot(rounds, out / "evolve_report.html")
    rows = "".join(f"<tr><td>{r['round']}</td><td>{r['arena_episodes']}</td><td>{r['arena_success']:.3f}</td>"
                   f"<td>{r['arena_reward']:.3f}</td><td>{r.get('targeted_tasks', '-')}</td>"
                   f"<td>{html.escape(json.dumps(r['errors']))}</td></tr>" for r in rounds)
    (out / "evolve_report.html").write_text(
        "<!doctype html><meta charset='utf-8'><title>agentworld evolve</title><body style='font-family:sans-serif'>"
        f"<h1>agentworld evolve</h1><img src='{img}'><table border=1 cellpadding=4><tr><th>round</th><th>episodes</th>"
        f"<th>arena success</th><th>mean reward</th><th>targeted tasks</th><th>failed episodes by outcome</th></tr>{rows}"
        "</table></body>")


def evolve(cfg: EvolveConfig) -> dict[str, Any]:
    from agentworld_envs.util.outputs import OutputDir

    base = TrainConfig(**PRESETS[cfg.preset])
    out = Path(cfg.output_dir)
    # A new or empty directory, or this command's own earlier (interrupted) run, which continues.
    run_dir = OutputDir.claim(out, "evolve", resume=True, flag="--output-dir")
    (out / "evolve_config.json").write_text(json.dumps(dataclasses.asdict(cfg), indent=1))
    model = base.model
    rounds: list[dict[str, Any]] = []
    for r in range(1, cfg.rounds + 2):
        rd = out / f"round-{r}"
        summary = _evaluate(model, base, cfg, r, rd / "eval")
        diag = _diagnose(rd / "eval")
        row = {"round": r, "model": model, "arena_episodes": summary["episodes"],
               "arena_success": summary["success_rate"], "arena_reward": summary["reward_mean"],
               "by_l1": {k: v["success_rate"] for k, v in diag["by_l1"].items()},
               "errors": diag["errors"]["episodes"], "call_errors": diag["errors"]["calls"]}
        if r <= cfg.rounds:
            overlay, report = _targets(diag, base, cfg, r, rd)
            row["targeted_tasks"] = report["kept"]
            model = _train(model, overlay, report, cfg, r, rd)
        rounds.append(row)
        _report(rounds, out)   # after every round, so an interrupted run still has its report so far
        run_dir.record_all()
    return {"rounds": rounds, "output_dir": str(out)}


def register(app) -> None:
    """Add the ``evolve`` command to the ``agentworld`` app."""
    import typer

    @app.command("evolve")
    def evolve_command(rounds: int = typer.Option(2, help="rounds of evaluate -> diagnose -> synthesise -> train"),
                       preset: str = typer.Option("smol-cpu", help=f"trainer preset: {', '.join(sorted(PRESETS))}"),
                       output_dir: str = typer.Option("runs/evolve", help="run directory (an interrupted run resumes)"),
                       eval_envs: int = typer.Option(12, help="arena environments evaluated per round"),
                       eval_tasks_per_env: int = typer.Option(2, help="fresh round tasks per arena environment"),
                       target_tasks: int = typer.Option(16, help="targeted train tasks per round"),
                       target_envs: int = typer.Option(8, help="train environments they are spread over"),
                       train_steps: int = typer.Option(0, help="GRPO steps per round (0: the preset's)"),
                       sft_steps: int = typer.Option(-1, help="round-1 SFT steps (-1: the preset's)"),
                       seed: int = typer.Option(0)) -> None:
        """The self-evolving loop: arena eval -> diagnosis -> targeted tasks -> continued GRPO, N rounds."""
        from agentworld_envs.util.extras import require

        require("train", "agentworld evolve")
        try:
            cfg = EvolveConfig(rounds=rounds, preset=preset, output_dir=output_dir, eval_envs=eval_envs,
                               eval_tasks_per_env=eval_tasks_per_env, target_tasks=target_tasks,
                               target_envs=target_envs, train_steps=train_steps, sft_steps=sft_steps, seed=seed)
            result = evolve(cfg)
        except (TrainError, EnvWorkerError) as e:
            typer.echo(f"error: {e}", err=True)
            raise typer.Exit(2) from None
        curve = ", ".join(f"{r['arena_success']:.3f}" for r in result["rounds"])
        typer.echo(f"done: {output_dir}/rounds.json, {output_dir}/evolve_report.html (arena success by round: {curve})")
