"""A local causal LM as an arena policy (``agentworld eval --policy model``).

It renders each episode as the trainer's rollouts do (system prompt, the env's first
observation as the user turn, earlier actions as assistant turns, tool results as ``tool``
turns, the tools through the chat template), generates greedily for a batch of episodes at
once (left padding), and returns the decoded assistant turns as text actions.

Multi-turn benchmarks (BFCL): an observation the env marks as a new user message
(``info["observation_role"] == "user"``) is rendered as a ``user`` turn, and tools the env adds
mid-episode (``info["tools"]``) are the tools rendered from then on (the arena's evaluation loop
keeps both in :class:`~agentworld_envs.evaluation.EpisodeState`).

An episode whose prompt leaves no room for ``max_new_tokens`` within ``max_context_tokens``
submits at once (counted in :attr:`ModelPolicy.context_overflows`), as a training rollout stops
with reward 0, rather than generating from a cut prompt.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from .rollout import DEFAULT_SYSTEM_PROMPT, render


def _strip(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if k != "description"}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


class ModelPolicy:
    """Greedy generation with a local model: an HF directory, a ``.gguf`` file, ``smollm2-135m`` or
    ``tiny``, optionally with a LoRA adapter directory on top."""

    deterministic = True

    def __init__(self, model: str, adapter: str | None = None, batch_size: int = 8, max_new_tokens: int = 256,
                 system_prompt: str | None = DEFAULT_SYSTEM_PROMPT, tool_descriptions: bool = True,
                 max_context_tokens: int = 8192, torch_threads: int = 0):
        from .threads import ThreadPicker
        from .trainer import load_model_and_tokenizer

        self.threads = ThreadPicker(torch_threads)
        self.threads.now()
        self.model, self.tokenizer, path = load_model_and_tokenizer(model)
        if adapter:
            from peft import PeftModel

            self.model = PeftModel.from_pretrained(self.model, adapter)
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        self.model = self.model.to(self.device).eval()
        self.batch_size, self.max_new_tokens = batch_size, max_new_tokens
        self.system_prompt, self.tool_descriptions = system_prompt, tool_descriptions
        self.max_context_tokens = max_context_tokens
        self.context_overflows = 0
        self.name = f"model:{path}" + (f"+{adapter}" if adapter else "")

    @classmethod
    def from_model(cls, model, tokenizer, name: str = "model", batch_size: int = 8, max_new_tokens: int = 256,
                   system_prompt: str | None = DEFAULT_SYSTEM_PROMPT, tool_descriptions: bool = True,
                   max_context_tokens: int = 8192) -> "ModelPolicy":
        """A policy over an already loaded model and tokenizer (e.g. the trainer's, mid-run), on the model's
        device; the caller restores ``model.train()`` afterwards if it needs to."""
        from .threads import ThreadPicker

        self = cls.__new__(cls)
        self.threads = ThreadPicker(0)
        self.model, self.tokenizer = model.eval(), tokenizer
        self.device = next(model.parameters()).device
        self.batch_size, self.max_new_tokens = batch_size, max_new_tokens
        self.system_prompt, self.tool_descriptions = system_prompt, tool_descriptions
        self.max_context_tokens = max_context_tokens
        self.context_overflows = 0
        self.name = name
        return self

    def _prompt(self, state) -> str:
        messages: list[dict[str, Any]] = [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        for m in state.messages:
            # The arena marks each observation: "tool" (a tool result) or "user" (the task, a new user turn).
            role = m["role"] if m["role"] in ("user", "assistant", "tool") else "user"
            messages.append({"role": role, "content": m["content"]})
        tools = state.tools if self.tool_descriptions else _strip(state.tools)
        return render(self.tokenizer, messages, tools, add_generation_prompt=True)

    @torch.no_grad()
    def act(self, states: Sequence[Any]) -> list[str]:
        from agentworld_envs.trajectories import NOOP

        out: list[str] = []
        tok = self.tokenizer
        for start in range(0, len(states), self.batch_size):
            self.threads.maybe()
            prompts = [self._prompt(s) for s in states[start:start + self.batch_size]]
            ids = [tok(p, add_special_tokens=False)["input_ids"] for p in prompts]
            fits = [len(i) + self.max_new_tokens <= self.max_context_tokens for i in ids]
            self.context_overflows += fits.count(False)
            texts = iter(self._generate([p for p, ok in zip(prompts, fits) if ok]))
            out += [next(texts) if ok else NOOP for ok in fits]
        return out

    def _generate(self, prompts: list[str]) -> list[str]:
        if not prompts:
            return []
        tok = self.tokenizer
        enc = tok(prompts, return_tensors="pt", padding=True, add_special_tokens=False).to(self.device)
        # A turn is one tool call: stop a row at its closing tag instead of running on to the token limit.
        gen = self.model.generate(**enc, max_new_tokens=self.max_new_tokens, do_sample=False,
                                  pad_token_id=tok.pad_token_id, stop_strings=["</tool_call>"], tokenizer=tok)
        new = gen[:, enc["input_ids"].shape[1]:]
        return [tok.decode(row, skip_special_tokens=True).strip() for row in new]


def add_suite_rows(ev: dict | None, model, tokenizer, cfg, main_process: bool = True) -> dict | None:
    """Evaluate the model on each benchmark suite of ``cfg.eval_suites`` and add one row per suite to the
    trainer's evaluation ``ev`` (``ev["per_env"]["<suite> (benchmark)"]``, so the report's before/after
    table shows it; ``ev["suites"]`` keeps the rows). The arena's :func:`evaluate_suite` runs it: the
    benchmark's own envs, turn limits and scorers, greedy, ``cfg.eval_suite_tasks`` tasks per env of
    the held-out split. A suite whose extra is missing gets a row without scores (``skipped``)."""
    if ev is None or not cfg.eval_suites or not main_process:
        return ev
    from agentworld_envs.evaluation import evaluate_suite, summarize
    from agentworld_envs.external import MissingExtraError

    from .rollout import DEFAULT_SYSTEM_PROMPT

    was_training = model.training
    policy = ModelPolicy.from_model(model, tokenizer, name="trainer", batch_size=max(1, cfg.batch_size * cfg.group_size),
                                    max_new_tokens=cfg.max_new_tokens, system_prompt=cfg.system_prompt or DEFAULT_SYSTEM_PROMPT,
                                    tool_descriptions=cfg.tool_descriptions, max_context_tokens=cfg.max_context_tokens)
    rows: dict[str, dict] = {}
    try:
        for suite in cfg.eval_suites:
            before = policy.context_overflows
            try:
                records = evaluate_suite(policy, suite, split="arena", tasks_per_env=cfg.eval_suite_tasks, seed=cfg.seed)
            except MissingExtraError as exc:
                rows[f"{suite} (benchmark)"] = {"skipped": str(exc)}
                print(f"benchmark suite {suite} skipped: {exc}")
                continue
            summary = summarize(records)
            rows[f"{suite} (benchmark)"] = {k: summary[k] for k in ("episodes", "success_rate", "reward_mean", "turns_mean")}
            rows[f"{suite} (benchmark)"]["context_overflows"] = policy.context_overflows - before
            row = rows[f"{suite} (benchmark)"]
            print(f"benchmark {suite}: success {row['success_rate']:.3f}, reward {row['reward_mean']:.3f} over "
                  f"{row['episodes']} episodes ({row['context_overflows']} prompts longer than the context)")
    finally:
        model.train(was_training)
    ev.setdefault("per_env", {}).update(rows)
    ev["suites"] = rows
    return ev
