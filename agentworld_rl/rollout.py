"""Multi-turn rollouts: a batched policy talking to a vector of tool-use envs.

Each episode is a chat: system prompt (with the env's tools rendered by the
chat template), the task as the user turn, then alternating assistant turns
(policy text, normally ``<tool_call>{...}</tool_call>``) and tool results as
``role: tool`` messages. At every step, all live episodes are extended by ONE
batched, left-padded ``generate`` call, and the vector env steps them all.

We keep the exact token ids the policy sampled (never re-tokenise them) and a
mask that is 1 only on those tokens: system/user/tool text and chat-template
scaffolding are context, not actions, and must not receive gradient.

Token accounting is incremental and independent of what the policy wrote: the
text appended after a turn (end of the assistant message, the tool message,
the next generation prompt) is found by rendering the chat with a fixed
placeholder in place of every assistant message, with and without the new
tool message, and tokenising only that difference. Decoding the sampled tokens
never has to round-trip, so ``retokenized`` stays 0 for any prefix-stable
template (ChatML/qwen2_5 included); a template that is not gets the whole
context re-tokenised for that turn, counted in ``retokenized_turns``.

Speed: each turn prefills only the new tokens, row by row (no compute on padding; the
members of a group share their first-turn prompt), into one batch KV cache that appends in
place (:mod:`.kvcache`) and is kept across turns; the next ``generate`` gets the cached
sequence plus each row's last token, with attention-mask holes over padding (positions come
from the attention mask, so holes do not shift them). When holes make the cache much wider
than the live contexts it is dropped and rebuilt compactly.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Sequence

import torch

from transformers.cache_utils import DynamicCache

from .kvcache import GrowingCache
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
    context_text: str = ""           # rendered chat (assistant turns as placeholders) matching token_ids
    template_messages: list[dict] = field(default_factory=list)  # messages with assistant placeholders
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


# Stands in for every assistant message when rendering: the template's text around
# a message does not depend on its content, so the appended tokens do not either.
_PLACEHOLDER = "\u2063AGENTWORLD_ASSISTANT_TURN\u2063"


class RolloutEngine:
    """Collects GRPO groups of multi-turn episodes.

    Args:
        model: a causal LM (unwrapped; may be a PEFT model).
        tokenizer: its tokenizer; needs a chat template with tool support.
        vec_env: the slot vector env (>= batch x group slots).
        max_new_tokens: per assistant turn.
        max_context_tokens: an episode whose context would exceed this stops (reward 0).
        temperature: sampling temperature (1.0 = the model's distribution).
        autocast: context-manager factory wrapped around generation (``accelerator.autocast``).
        reuse_cache: keep the KV cache across turns (prefill only new tokens).
        on_turn: called before every batched turn (the trainer re-checks torch's thread count there).
    """

    def __init__(self, model, tokenizer, vec_env: SlotVectorEnv, *, max_new_tokens: int = 64,
                 max_context_tokens: int = 4096, temperature: float = 1.0,
                 system_prompt: str | None = DEFAULT_SYSTEM_PROMPT, tool_descriptions: bool = True,
                 autocast=None, reuse_cache: bool = True, on_turn=None):
        self.model = model
        self.tokenizer = tokenizer
        self.vec_env = vec_env
        self.max_new_tokens = max_new_tokens
        self.max_context_tokens = max_context_tokens
        self.temperature = temperature
        self.system_prompt = system_prompt
        self.tool_descriptions = tool_descriptions
        self.autocast = autocast or contextlib.nullcontext
        self.reuse_cache = reuse_cache
        self.on_turn = on_turn
        self.eos_ids = {tokenizer.eos_token_id}
        self.eos_text = tokenizer.decode([tokenizer.eos_token_id], skip_special_tokens=False)
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        self.prefilled_tokens = 0   # tokens run through the model as prompt (not generated); for benchmarks
        self.generated_tokens = 0

    # ------------------------------------------------------------------ episode text
    def _begin(self, ep: Episode, obs: str, info: dict) -> None:
        ep.tools = list(info.get("tools") or [])
        if not self.tool_descriptions:
            ep.tools = [_strip_descriptions(t) for t in ep.tools]
        if self.system_prompt:
            ep.messages.append({"role": "system", "content": self.system_prompt})
        ep.messages.append({"role": "user", "content": obs})
        ep.template_messages = list(ep.messages)
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
        ep.template_messages.append({"role": "assistant", "content": _PLACEHOLDER})
        return text

    def _suffix_text(self, ep: Episode, ended_with_eos: bool) -> str | None:
        """Text after the sampled tokens up to the next generation prompt, or None if the template
        is not prefix-stable here. ``ep.template_messages`` already holds the new tool message."""
        with_assistant = render(self.tokenizer, ep.template_messages[:-1], ep.tools, add_generation_prompt=False)
        full = render(self.tokenizer, ep.template_messages, ep.tools, add_generation_prompt=True)
        cut = with_assistant.rfind(_PLACEHOLDER)
        if cut < 0 or with_assistant[:cut] != ep.context_text or not full.startswith(with_assistant):
            return None
        tail = with_assistant[cut + len(_PLACEHOLDER):]  # e.g. "<|im_end|>\n"
        if ended_with_eos:
            if not tail.startswith(self.eos_text):
                return None
            tail = tail[len(self.eos_text):]  # the sampled EOS token already is this text
        ep.context_text = full
        return tail + full[len(with_assistant):]

    def _append_tool_result(self, ep: Episode, gen_ids: list[int], obs: str, role: str = "tool") -> None:
        """Append the observation (a tool message, or a user message when the env says so: ``role``)
        and the next generation prompt as masked tokens."""
        ep.messages.append({"role": role, "content": obs})
        ep.template_messages.append({"role": role, "content": obs})
        suffix = self._suffix_text(ep, bool(gen_ids) and gen_ids[-1] in self.eos_ids)
        if suffix is not None:
            suffix_ids = encode(self.tokenizer, suffix)
        else:
            # Template not prefix-stable for this turn: re-tokenise the real chat after the
            # sampled tokens; counted so it shows up in metrics.
            ep.retokenized += 1
            full = render(self.tokenizer, ep.messages, ep.tools, add_generation_prompt=True)
            suffix_ids = encode(self.tokenizer, full)[len(ep.token_ids):]
            ep.context_text = render(self.tokenizer, ep.template_messages, ep.tools, add_generation_prompt=True)
        ep.token_ids += suffix_ids
        ep.mask += [0] * len(suffix_ids)
        ep.logprobs += [0.0] * len(suffix_ids)

    # ------------------------------------------------------------------ generation
    @torch.no_grad()
    def _generate(self, input_ids: torch.Tensor, attention: torch.Tensor, cache, greedy: bool):
        """One batched generate over left-padded ``input_ids`` (whose first ``cache`` positions are
        already in ``cache``). Returns new ids (through EOS), their logprobs, the sequences and the cache."""
        device = next(self.model.parameters()).device
        past = cache.get_seq_length() if cache is not None else 0
        self.prefilled_tokens += int(attention[:, past:].sum())
        with self.autocast():
            out = self.model.generate(
                input_ids=input_ids.to(device), attention_mask=attention.to(device), past_key_values=cache,
                max_new_tokens=self.max_new_tokens, do_sample=not greedy,
                temperature=self.temperature if not greedy else None, top_k=0 if not greedy else None,
                top_p=1.0 if not greedy else None,
                eos_token_id=list(self.eos_ids), pad_token_id=self.pad_id,
                return_dict_in_generate=True, output_logits=True, use_cache=True,
            )
        width = input_ids.shape[1]
        new = out.sequences[:, width:].cpu()
        # Behaviour-policy logprobs from raw logits at the sampling temperature, one step at a
        # time: never a [B, T, V] fp32 copy.
        lps = torch.zeros(new.shape, dtype=torch.float32)
        for t, step_logits in enumerate(out.logits[: new.shape[1]]):
            logits = step_logits.float()
            if not greedy:
                logits = logits / self.temperature
            lps[:, t] = (logits.gather(1, new[:, t:t + 1].to(logits.device)).squeeze(1)
                         - torch.logsumexp(logits, dim=-1)).cpu()
        ids_out, lps_out = [], []
        for i in range(new.shape[0]):
            row = new[i].tolist()
            n = len(row)
            for j, t in enumerate(row):
                if t in self.eos_ids:
                    n = j + 1
                    break
            ids_out.append(row[:n])
            lps_out.append(lps[i, :n].tolist())
        self.generated_tokens += sum(len(r) for r in ids_out)
        return ids_out, lps_out, out.sequences.cpu(), getattr(out, "past_key_values", None)

    @torch.no_grad()
    def _prefill(self, seq: torch.Tensor, att: torch.Tensor, cache):
        """Fill ``cache`` with every column of the left-padded batch ``seq`` but the last, row by row
        (on an accelerator: only at the first turn).

        Each row's uncached tokens (right-aligned; holes on their left are padding) run through
        the model on their own, on top of that row's cached past, so no compute is spent on
        padding: with batch 24 and prompts of 300-700 tokens a padded prefill wasted ~40 %.
        Identical rows with no past (the members of a GRPO group at their first turn) run once.
        The results are written into one batch cache (holes stay masked by ``att``); ``generate``
        then runs the last column and decodes. Returns the cache (a new one if ``cache`` is None).
        """
        B, W = seq.shape
        device = next(self.model.parameters()).device
        past = cache.get_seq_length() if cache is not None else 0
        cache = cache if cache is not None else GrowingCache()
        todo = W - 1 - past
        if todo <= 0 or (past and device.type != "cpu"):
            # On an accelerator padding is nearly free and a forward per row is launch-bound: after the
            # first turn (whose group prompts are still shared here), generate() prefills batched.
            return cache
        computed: dict[tuple, list[tuple[torch.Tensor, torch.Tensor]]] = {}
        filled = False
        for r in range(B):
            n = int(att[r, past:W - 1].sum())
            if n == 0:
                continue
            ids = seq[r, W - 1 - n:W - 1]
            key = tuple(ids.tolist()) if past == 0 else None
            kv = computed.get(key) if key is not None else None
            if kv is None:
                start = int(att[r, :W - 1 - n].sum())  # attended tokens before: the first new position
                pos = torch.arange(start, start + n, device=device)[None]
                if past:
                    # [:past]: once the first row is written, the layers already hold the new columns
                    row_cache = DynamicCache(ddp_cache_data=[(layer.keys[r:r + 1, :, :past], layer.values[r:r + 1, :, :past])
                                                             for layer in cache.layers])
                    mask = torch.cat([att[r, :past], torch.ones(n, dtype=att.dtype)])[None].to(device)
                else:
                    row_cache, mask = DynamicCache(), None  # no past, no padding: plain causal attention
                with self.autocast():
                    self.model(input_ids=ids[None].to(device), attention_mask=mask, position_ids=pos,
                               past_key_values=row_cache, use_cache=True, logits_to_keep=1)
                self.prefilled_tokens += n
                kv = [(layer.keys[..., -n:, :], layer.values[..., -n:, :]) for layer in row_cache.layers]
                if key is not None:
                    computed[key] = kv
            if not filled:  # extend every layer by `todo` columns once, then write rows in place
                for i, (k, v) in enumerate(kv):
                    cache.update(k.new_zeros((B, k.shape[1], todo, k.shape[-1])),
                                 v.new_zeros((B, v.shape[1], todo, v.shape[-1])), i)
                filled = True
            for layer, (k, v) in zip(cache.layers, kv):
                layer.keys[r, :, past + todo - n:past + todo] = k[0]
                layer.values[r, :, past + todo - n:past + todo] = v[0]
        return cache

    @staticmethod
    def _left_pad(rows: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
        width = max(len(r) for r in rows)
        ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
        att = torch.zeros((len(rows), width), dtype=torch.long)
        for i, r in enumerate(rows):
            if r:
                ids[i, width - len(r):] = torch.tensor(r)
                att[i, width - len(r):] = 1
        return ids, att

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

        # Batch state carried across turns: row r of seq/att/cache belongs to episodes[rows[r]];
        # fed[i] = how many of episode i's tokens are already in seq.
        rows: list[int] = []
        seq = att = cache = None
        fed = [0] * len(episodes)
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
                if self.on_turn is not None:
                    self.on_turn()
                if cache is not None and self.reuse_cache:
                    keep = [rows.index(i) for i in live]
                    if len(keep) < len(rows):
                        cache.batch_select_indices(torch.tensor(keep, device=next(self.model.parameters()).device))
                        seq, att = seq[keep], att[keep]
                    new_ids, new_att = self._left_pad([episodes[i].token_ids[fed[i]:] for i in live], self.pad_id)
                    seq, att = torch.cat([seq, new_ids], 1), torch.cat([att, new_att], 1)
                    longest = max(len(episodes[i].token_ids) for i in live)
                    if seq.shape[1] > 2 * longest:  # mostly holes: cheaper to prefill compactly
                        cache = None
                if cache is None or not self.reuse_cache:
                    seq, att = self._left_pad([episodes[i].token_ids for i in live], self.pad_id)
                    cache = None
                cache = self._prefill(seq, att, cache)
                gen_ids, gen_lps, sequences, cache = self._generate(seq, att, cache, greedy)
                # Post-EOS padding generated for finished rows is masked out for later turns.
                gen_att = torch.zeros((len(live), sequences.shape[1] - seq.shape[1]), dtype=torch.long)
                for r, ids in enumerate(gen_ids):
                    gen_att[r, :len(ids)] = 1
                seq, att, rows = sequences, torch.cat([att, gen_att], 1), list(live)
                actions = {}
                for i, ids, lps in zip(live, gen_ids, gen_lps):
                    actions[i] = self._append_generation(episodes[i], ids, lps)
                    fed[i] = len(episodes[i].token_ids)
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
                        # Benchmark envs mark new user messages (agentworld_envs.external.common).
                        role = "user" if res.info.get("observation_role") == "user" else "tool"
                        self._append_tool_result(ep, ids, res.obs, role)
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
