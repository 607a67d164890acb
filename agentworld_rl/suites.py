"""Benchmark-suite rows for the trainer's before/after table (``TrainConfig.eval_suites``)."""

from __future__ import annotations

import time

from .chat_policy import ChatPolicy
from .rollout import DEFAULT_SYSTEM_PROMPT


def add_suite_rows(ev: dict | None, model, tokenizer, cfg, main_process: bool = True) -> dict | None:
    """Evaluate the model on each benchmark suite of ``cfg.eval_suites`` and add one row per suite to the
    trainer's evaluation ``ev`` (``ev["per_env"]["<suite> (benchmark)"]``, so the report's before/after
    table shows it; ``ev["suites"]`` keeps the rows). The arena's ``evaluate_suite`` runs it: the
    benchmark's own envs, turn limits and scorers, greedy, ``cfg.eval_suite_tasks`` tasks per env of
    the held-out split. A suite whose extra is missing gets a row without scores (``skipped``).
    Runs in the main process only (the others return ``ev`` unchanged)."""
    if ev is None or not cfg.eval_suites or not main_process:
        return ev
    from agentworld_envs.evaluation import evaluate_suite, summarize
    from agentworld_envs.external import MissingExtraError

    was_training = model.training
    policy = ChatPolicy(model.eval(), tokenizer, name="trainer", batch_size=max(1, cfg.batch_size * cfg.group_size),
                        max_new_tokens=cfg.max_new_tokens, system_prompt=cfg.system_prompt or DEFAULT_SYSTEM_PROMPT,
                        tool_descriptions=cfg.tool_descriptions, max_context_tokens=cfg.max_context_tokens)
    rows: dict[str, dict] = {}
    try:
        for suite in cfg.eval_suites:
            label = f"{suite} (benchmark)"
            before, t0 = policy.context_overflows, time.time()
            try:
                records = evaluate_suite(policy, suite, split="arena", tasks_per_env=cfg.eval_suite_tasks, seed=cfg.seed,
                                         max_turns=cfg.eval_suite_max_turns or None)
            except MissingExtraError as exc:
                rows[label] = {"skipped": str(exc)}
                print(f"benchmark suite {suite} skipped: {exc}")
                continue
            summary = summarize(records)
            row = rows[label] = {k: summary[k] for k in ("episodes", "success_rate", "reward_mean", "turns_mean")}
            row["context_overflows"] = policy.context_overflows - before
            row["seconds"] = round(time.time() - t0, 1)
            print(f"benchmark {suite}: success {row['success_rate']:.3f}, reward {row['reward_mean']:.3f} over "
                  f"{row['episodes']} episodes ({row['context_overflows']} prompts longer than the context; "
                  f"{row['seconds']:.0f} s)")
    finally:
        model.train(was_training)
    ev.setdefault("per_env", {}).update(rows)
    ev["suites"] = rows
    return ev
