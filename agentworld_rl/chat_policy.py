"""A loaded causal LM as an arena policy: renders each episode as the trainer's rollouts do and
generates greedily (used by ``agentworld eval --policy model`` through :class:`agentworld_rl.policy.ModelPolicy`;
the trainer evaluates through its own rollouts, :mod:`agentworld_rl.suites`).

The rendering: system prompt, the env's first observation as the user turn, earlier actions as
assistant turns, tool results as ``tool`` turns, the tools through the chat template. Multi-turn
benchmarks (BFCL): an observation the env marks as a new user message
(``info["observation_role"] == "user"``) is rendered as a ``user`` turn, and tools the env adds
mid-episode (``info["tools"]``) are the tools rendered from then on (the arena's evaluation loop
keeps both in :class:`~agentworld_envs.arena.evaluation.EpisodeState`).

An episode whose prompt leaves no room for ``max_new_tokens`` within ``max_context_tokens``
submits at once (counted in :attr:`ChatPolicy.context_overflows`), as a training rollout stops
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


class ChatPolicy:
    """Greedy generation with a loaded model and tokenizer (left padding), ``batch_size`` episodes at a time."""

    deterministic = True

    def __init__(self, model, tokenizer, name: str = "model", batch_size: int = 8, max_new_tokens: int = 256,
                 system_prompt: str | None = DEFAULT_SYSTEM_PROMPT, tool_descriptions: bool = True,
                 max_context_tokens: int = 8192, threads: Any = None):
        self.model, self.tokenizer, self.name = model, tokenizer, name
        self.device = next(model.parameters()).device
        self.batch_size, self.max_new_tokens = batch_size, max_new_tokens
        self.system_prompt, self.tool_descriptions = system_prompt, tool_descriptions
        self.max_context_tokens = max_context_tokens
        self.threads = threads   # a ThreadPicker re-checked before each batch, or None
        self.context_overflows = 0

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
        from agentworld_envs.engine.trajectories import NOOP

        out: list[str] = []
        tok = self.tokenizer
        for start in range(0, len(states), self.batch_size):
            if self.threads is not None:
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
