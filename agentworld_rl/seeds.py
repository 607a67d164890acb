"""One preset trained with several seeds, and whether GRPO's gain holds across them.

    python -m agentworld_rl.seeds --preset smol-gpu --seeds 0,1,2 --output-dir runs/smol-gpu-seeds

Each seed is a full run (``<output-dir>/seed-<s>``; an interrupted one resumes from its newest
checkpoint). ``seeds.md`` / ``seeds.json`` then give, per evaluation suite, each seed's success
after SFT (or before GRPO) and after GRPO, and the gain pooled over every (seed, task) pair with
its 95 % interval.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .config import make_config
from .evaluate import gain
from .stats import paired_gain


def run_seeds(preset: str, seeds: list[int], output_dir: str, overrides: dict | None = None) -> dict:
    from agentworld_envs.util.outputs import OutputDir, OutputError

    from .errors import TrainError
    from .trainer import train

    out = Path(output_dir)
    try:  # a new or empty directory, or this command's own earlier (interrupted) run, which continues
        out_dir = OutputDir.claim(out, "seeds", resume=True, flag="--output-dir")
    except OutputError as e:
        raise TrainError(str(e)) from None
    per_seed = {}
    for seed in seeds:
        run_dir = out / f"seed-{seed}"
        resume = "latest" if (run_dir / "checkpoints").is_dir() else ""
        cfg = make_config(preset, overrides={**(overrides or {}), "seed": seed, "output_dir": str(run_dir),
                                             "resume_from": resume,
                                             "overwrite": not resume and (run_dir / "metrics.jsonl").exists()})
        train(cfg)
        per_seed[seed] = {stage: json.loads((run_dir / f"eval_{stage}.json").read_text())
                          for stage in ("before", "after") if (run_dir / f"eval_{stage}.json").exists()}
    result = summarise(per_seed)
    out_dir.write_text("seeds.json", json.dumps(result, indent=1))
    out_dir.write_text("seeds.md", markdown(result))
    out_dir.record_all()
    return result


def summarise(per_seed: dict[int, dict[str, dict[str, dict]]]) -> dict:
    """Per suite: each seed's before/after success and gain, and the gain pooled over seeds and tasks."""
    suites = sorted({name for evs in per_seed.values() for name in evs.get("after", {})})
    out = {}
    for suite in suites:
        rows, before_all, after_all = [], [], []
        for seed, evs in sorted(per_seed.items()):
            b, a = evs.get("before", {}).get(suite), evs.get("after", {}).get(suite)
            if not (a and b):
                continue
            g = gain(b, a)
            rows.append({"seed": seed, "before": b["success_rate"], "after": a["success_rate"],
                         "tasks": a["episodes"], "gain": g[0] if g else None})
            common = sorted(set(b["tasks"]) & set(a["tasks"]))
            before_all += [float(b["tasks"][t]) for t in common]
            after_all += [float(a["tasks"][t]) for t in common]
        pooled = paired_gain(before_all, after_all) if before_all else None
        out[suite] = {"seeds": rows, "pooled_gain": pooled, "pairs": len(before_all)}
    return out


def markdown(result: dict) -> str:
    lines = ["# GRPO's gain across seeds", ""]
    for suite, r in result.items():
        lines += [f"## {suite}", "", "| seed | tasks | success before GRPO | after GRPO | gain |", "|---:|---:|---:|---:|---:|"]
        lines += [f"| {row['seed']} | {row['tasks']} | {row['before']:.3f} | {row['after']:.3f} | {row['gain']:+.3f} |"
                  for row in r["seeds"]]
        if r["pooled_gain"]:
            g, lo, hi = r["pooled_gain"]
            where = "outside" if lo > 0 or hi < 0 else "inside"
            lines += ["", f"Pooled over {r['pairs']} (seed, task) pairs: gain {g:+.3f}, 95 % CI {lo:+.3f} to {hi:+.3f} "
                          f"(zero is {where} the interval).", ""]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preset", default="smol-gpu")
    p.add_argument("--seeds", default="0,1,2", help="comma-separated")
    p.add_argument("--output-dir", default=None, help="default: runs/<preset>-seeds")
    args = p.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    from .errors import TrainError

    try:
        result = run_seeds(args.preset, seeds, args.output_dir or f"runs/{args.preset}-seeds")
    except TrainError as e:  # a user error: one line, exit status 2
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    print(markdown(result))


if __name__ == "__main__":  # pragma: no cover
    main()
