"""Multi-turn rollouts: a batched policy talking to a vector of tool-use envs.

Each episode is a chat: system prompt (with the env's tools rendered by the
chat template), the task as the user turn, then alternating assistant turns
(policy text, normally ``<tool_call>{...}</tool_call>``) and tool results as
``role: tool`` messages. At every step, all live episodes are extended by ONE
batched, left-padded ``generate`` call, and the vector env steps them all.

We keep the exact token ids the policy sampled (never re-tokenise them) and a
mask that is 1 only on those tokens: system/user/tool text and chat-template
scaffolding are context, not actions, and must not receive gradient. The
tokens appended after an assistant turn are found by rendering the chat with
and without the new messages and tokenising only the difference.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Sequence

import torch
import torch.nn.functional as F

from .vector_env import SlotVectorEnv

DEFAULT_SYSTEM_PROMPT = (
    "You are an agent that completes tasks by calling tools. Call one tool per turn. "
    "When the task is done, call the submit tool."
)


@dataclass
class Episode:
    """One trajectory, with everything the GRPO update and the metrics need."""

    env_id: str
    task_id: str
    group: int                       # index of its GRPO group in the batch
    messages: list[dict] = field(default_factory=list)
    tools: list[dict] = field(default_factory=list)
    token_ids: list[int] = field(default_factory=list)
    mask: list[int] = field(default_factory=list)          # 1 = policy-generated token (trained)
    logprobs: list[float] = field(default_factory=list)    # behaviour-policy logprob per token (0 where mask=0)
    context_text: str = ""           # rendered chat matching token_ids (for the suffix diff)
    reward: float = 0.0              # env reward (verifier score on submit)
    shaped_reward: float = 0.0       # reward after shaping hooks (what GRPO optimises)
    success: bool = False
    turns: int = 0
    done: bool = False
    terminated: bool = False
    truncated: bool = False
    context_overflow: bool = False
    retokenized: int = 0             # turns whose suffix needed re-tokenising (should stay 0)
    tool_errors: Counter = field(default_factory=Counter)
    tool_calls: int = 0

    @property
    def num_policy_tokens(self) -> int:
        return int(sum(self.mask))


def _strip_descriptions(obj):
    """Drop "description" fields from a tool schema (much shorter prompts for tiny models)."""
    if isinstance(obj, dict):
        return {k: _strip_descriptions(v) for k, v in obj.items() if k != "description"}
    if isinstance(obj, list):
        return [_strip_descriptions(v) for v in obj]
    return obj


def render(tokenizer, messages: list[dict], tools: list[dict] | None, add_generation_prompt: bool) -> str:
    return tokenizer.apply_chat_template(messages, tools=tools or None, add_generation_prompt=add_generation_prompt,
                                         tokenize=False)


def encode(tokenizer, text: str) -> list[int]:
    return tokenizer(text, add_special_tokens=False)["input_ids"]


class RolloutEngine:
    """Collects GRPO groups of multi-turn episodes.

    Args:
        model: a causal LM (unwrapped; may be a PEFT model).
        tokenizer: its tokenizer; needs a chat template with tool support.
        vec_env: the slot vector env (>= batch x group slots).
        max_new_tokens: per assistant turn.
        max_context_tokens: an episode whose context would exceed this stops (reward 0).
        temperature: sampling temperature (1.0 = the model's distribution).
    """

    def __init__(self, model, tokenizer, vec_env: SlotVectorEnv, *, max_new_tokens: int = 64,
                 max_context_tokens: int = 4096, temperature: float = 1.0,
                 system_prompt: str | None = DEFAULT_SYSTEM_PROMPT, tool_descriptions: bool = True):
        self.model = model
        self.tokenizer = tokenizer
        self.vec_env = vec_env
        self.max_new_tokens = max_new_tokens
        self.max_context_tokens = max_context_tokens
        self.temperature = temperature
        self.system_prompt = system_prompt
        self.tool_descriptions = tool_descriptions
        self.eos_ids = {tokenizer.eos_token_id}
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id

    # ------------------------------------------------------------------ episode text
    def _begin(self, ep: Episode, obs: str, info: dict) -> None:
        ep.tools = list(info.get("tools") or [])
        if not self.tool_descriptions:
            ep.tools = [_strip_descriptions(t) for t in ep.tools]
        if self.system_prompt:
            ep.messages.append({"role": "system", "content": self.system_prompt})
        ep.messages.append({"role": "user", "content": obs})
        ep.context_text = render(self.tokenizer, ep.messages, ep.tools, add_generation_prompt=True)
        ep.token_ids = encode(self.tokenizer, ep.context_text)
        ep.mask = [0] * len(ep.token_ids)
        ep.logprobs = [0.0] * len(ep.token_ids)

    def _append_generation(self, ep: Episode, new_ids: list[int], new_lps: list[float]) -> str:
        ep.token_ids += new_ids
        ep.mask += [1] * len(new_ids)
        ep.logprobs += new_lps
        ep.turns += 1
        ids = new_ids[:-1] if new_ids and new_ids[-1] in self.eos_ids else new_ids
        # Keep added tokens like <tool_call>; the env parses them.
        text = self.tokenizer.decode(ids, skip_special_tokens=False)
        ep.messages.append({"role": "assistant", "content": text})
        return text

    def _append_tool_result(self, ep: Episode, gen_ids: list[int], obs: str) -> None:
        """Append the tool message and the next generation prompt as masked tokens."""
        ep.messages.append({"role": "tool", "content": obs})
        full = render(self.tokenizer, ep.messages, ep.tools, add_generation_prompt=True)
        gen_text = self.tokenizer.decode(gen_ids, skip_special_tokens=False)
        rest = full[len(ep.context_text):] if full.startswith(ep.context_text) else None
        if rest is not None and rest.startswith(gen_text):
            # Exact path: the sampled tokens stay as they are, only the new text is tokenised.
            suffix_ids = encode(self.tokenizer, rest[len(gen_text):])
        else:
            # Template not prefix-preserving for this turn: re-tokenise everything after the
            # last generation prompt; counted so it shows up in metrics.
            ep.retokenized += 1
            suffix_ids = encode(self.tokenizer, full)[len(ep.token_ids):]
        ep.token_ids += suffix_ids
        ep.mask += [0] * len(suffix_ids)
        ep.logprobs += [0.0] * len(suffix_ids)
        ep.context_text = full

    # ------------------------------------------------------------------ generation
    @torch.no_grad()
    def _generate(self, contexts: list[list[int]], greedy: bool) -> tuple[list[list[int]], list[list[float]]]:
        """One batched, left-padded generate. Returns new token ids (through EOS) and their logprobs."""
        device = next(self.model.parameters()).device
        width = max(len(c) for c in contexts)
        input_ids = torch.full((len(contexts), width), self.pad_id, dtype=torch.long)
        attention = torch.zeros((len(contexts), width), dtype=torch.long)
        for i, c in enumerate(contexts):
            input_ids[i, width - len(c):] = torch.tensor(c)
            attention[i, width - len(c):] = 1
        out = self.model.generate(
            input_ids=input_ids.to(device), attention_mask=attention.to(device),
            max_new_tokens=self.max_new_tokens, do_sample=not greedy,
            temperature=self.temperature if not greedy else None, top_k=0 if not greedy else None,
            top_p=1.0 if not greedy else None,
            eos_token_id=list(self.eos_ids), pad_token_id=self.pad_id,
            return_dict_in_generate=True, output_logits=True,
        )
        new = out.sequences[:, width:].cpu()
        # Behaviour-policy logprobs from raw logits at the sampling temperature.
        logits = torch.stack(out.logits, dim=1).float().cpu()
        if not greedy:
            logits = logits / self.temperature
        lps = torch.gather(F.log_softmax(logits, dim=-1), 2, new[:, : logits.shape[1]].unsqueeze(-1)).squeeze(-1)
        ids_out, lps_out = [], []
        for i in range(len(contexts)):
            row = new[i].tolist()
            n = len(row)
            for j, t in enumerate(row):
                if t in self.eos_ids:
                    n = j + 1
                    break
            ids_out.append(row[:n])
            lps_out.append(lps[i, :n].tolist())
        return ids_out, lps_out

    # ------------------------------------------------------------------ main loop
    def collect(self, tasks: Sequence[dict], group_size: int, seed: int, greedy: bool = False) -> list[Episode]:
        """Run ``group_size`` episodes of every task (``{"env_id", "task_id"}``) to completion."""
        specs = [dict(t) for t in tasks for _ in range(group_size)]
        episodes = [Episode(env_id=s["env_id"], task_id=s.get("task_id") or "", group=i // group_size)
                    for i, s in enumerate(specs)]
        # Every member of a group sees the same env seed: the group compares policy samples, not worlds.
        seeds = [seed * 100_003 + ep.group for ep in episodes]
        for ep, (obs, info) in zip(episodes, self.vec_env.start(specs, seeds)):
            ep.task_id = info.get("task_id", ep.task_id)
            self._begin(ep, obs, info)

        was_training = self.model.training
        self.model.eval()
        try:
            while True:
                live = [i for i, ep in enumerate(episodes) if not ep.done]
                for i in list(live):
                    if len(episodes[i].token_ids) + self.max_new_tokens > self.max_context_tokens:
                        ep = episodes[i]
                        ep.done, ep.truncated, ep.context_overflow = True, True, True
                        live.remove(i)
                        # Leave the env slot: the next episode batch resets it.
                if not live:
                    break
                gen_ids, gen_lps = self._generate([episodes[i].token_ids for i in live], greedy)
                actions = {}
                for i, ids, lps in zip(live, gen_ids, gen_lps):
                    actions[i] = self._append_generation(episodes[i], ids, lps)
                results = self.vec_env.step(actions)
                for i, ids in zip(live, gen_ids):
                    ep, res = episodes[i], results[i]
                    err = res.info.get("error")
                    if err:
                        ep.tool_errors[str(err)] += 1
                    if res.info.get("tool_name"):
                        ep.tool_calls += 1
                    if res.terminated or res.truncated:
                        ep.done, ep.terminated, ep.truncated = True, res.terminated, res.truncated
                        ep.reward = res.reward
                        ep.success = bool(res.info.get("success", res.reward >= 1.0 and res.terminated))
                    else:
                        self._append_tool_result(ep, ids, res.obs)
        finally:
            self.model.train(was_training)
        for ep in episodes:
            ep.shaped_reward = ep.reward
        return episodes


def shape_rewards(episodes: Sequence[Episode], format_penalty: float = 0.0, turn_cost: float = 0.0,
                  extra_fn=None) -> None:
    """Reward shaping hooks (all off by default). Writes ``ep.shaped_reward``.

    * ``format_penalty``: subtracted per turn whose action failed to parse or named no known tool.
    * ``turn_cost``: subtracted per assistant turn (prefers short solutions).
    * ``extra_fn(episode) -> float``: added, for custom shaping.
    """
    for ep in episodes:
        r = ep.reward
        r -= format_penalty * (ep.tool_errors.get("parse_error", 0) + ep.tool_errors.get("unknown_tool", 0))
        r -= turn_cost * ep.turns
        if extra_fn is not None:
            r += float(extra_fn(ep))
        ep.shaped_reward = r
