"""Per-step metrics: summarised from episodes, appended to JSONL, optionally to tensorboard, plotted at the end."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path
from typing import Sequence

from .rollout import Episode


def episode_metrics(episodes: Sequence[Episode], prefix: str = "") -> dict[str, float]:
    """Reward mean/std, success rate, turns, tokens and tool error rates (per tool call) by error code."""
    n = max(len(episodes), 1)
    rewards = [ep.reward for ep in episodes]
    mean = sum(rewards) / n
    std = math.sqrt(sum((r - mean) ** 2 for r in rewards) / n)
    errors: Counter = Counter()
    calls = 0
    for ep in episodes:
        errors.update(ep.tool_errors)
        calls += ep.turns
    out = {
        "reward_mean": mean,
        "reward_std": std,
        "shaped_reward_mean": sum(ep.shaped_reward for ep in episodes) / n,
        "success_rate": sum(ep.success for ep in episodes) / n,
        "turns_mean": sum(ep.turns for ep in episodes) / n,
        "policy_tokens_mean": sum(ep.num_policy_tokens for ep in episodes) / n,
        "total_tokens_mean": sum(len(ep.token_ids) for ep in episodes) / n,
        "truncated_rate": sum(ep.truncated for ep in episodes) / n,
        "context_overflow_rate": sum(ep.context_overflow for ep in episodes) / n,
        "retokenized_turns": float(sum(ep.retokenized for ep in episodes)),
        "tool_error_rate": sum(errors.values()) / max(calls, 1),
    }
    for code, count in sorted(errors.items()):
        out[f"tool_error_rate/{code}"] = count / max(calls, 1)
    return {prefix + k: v for k, v in out.items()}


class MetricsLogger:
    """Appends one JSON object per step to ``metrics.jsonl`` (and tensorboard if asked)."""

    def __init__(self, output_dir: str | Path, tensorboard: bool = False, resume_step: int | None = None):
        self.path = Path(output_dir) / "metrics.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if resume_step is not None and self.path.exists():
            # Drop rows from steps after the checkpoint so the resumed run rewrites them, and any
            # partial line a kill left behind (it would corrupt the next append).
            keep = [row for row in read_jsonl(self.path) if row.get("step", 0) <= resume_step]
            self.path.write_text("".join(json.dumps(row) + "\n" for row in keep))
        elif resume_step is None and self.path.exists():
            # The trainer refuses to reuse a run's directory unless --overwrite; this is that case.
            self.path.unlink()
        self.tb = None
        if tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter
                self.tb = SummaryWriter(str(Path(output_dir) / "tensorboard"))
            except ImportError:  # tensorboard is an optional extra
                print("tensorboard not installed (pip install 'agentworld[tensorboard]'); skipping")

    def log(self, step: int, metrics: dict) -> None:
        row = {"step": step, **{k: (float(v) if isinstance(v, (int, float)) else v) for k, v in metrics.items()}}
        with self.path.open("a") as f:
            f.write(json.dumps(row) + "\n")
        if self.tb is not None:
            for k, v in row.items():
                if isinstance(v, float):
                    self.tb.add_scalar(k, v, step)

    def close(self) -> None:
        if self.tb is not None:
            self.tb.close()


def read_jsonl(path: str | Path) -> list[dict]:
    """Rows of a JSONL file; lines that are not a JSON object (a write cut by a kill) are skipped."""
    rows = []
    for line in Path(path).read_text(errors="replace").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows


def plot_curves(jsonl_path: str | Path, png_path: str | Path,
                keys: Sequence[str] = ("reward_mean", "success_rate", "loss", "kl", "turns_mean",
                                       "tool_error_rate", "grad_norm", "seconds_rollout")) -> Path:
    """Training curves as a PNG grid (matplotlib Agg backend: no display needed)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = read_jsonl(jsonl_path)
    keys = [k for k in keys if any(k in r for r in rows)]
    cols = 4
    nrows = max(1, math.ceil(len(keys) / cols))
    fig, axes = plt.subplots(nrows, cols, figsize=(4 * cols, 3 * nrows), squeeze=False)
    for ax, key in zip(axes.flat, keys):
        pts = [(r["step"], r[key]) for r in rows if key in r]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=".")
        ax.set_title(key)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(keys):]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(png_path, dpi=80)
    plt.close(fig)
    return Path(png_path)
