"""Multi-turn rollouts: a batched policy talking to a vector of tool-use envs.

Each episode is a chat: system prompt (with the env's tools rendered by the
chat template), the task as the user turn, then alternating assistant turns
(policy text, normally ``<tool_call>{...}</tool_call>``) and observations. An
observation is a ``role: tool`` message, or a new ``role: user`` message when the
env says so (``info["observation_role"] == "user"``: a simulated user speaking in
external benchmarks such as tau2 or BFCL multi-turn). A step may also hand a new
full tool list (``info["tools"]``); it is announced in a system message before the
observation and is the list of every later turn (the first rendering of the tools,
in the prompt, never changes, so the context only ever grows).

At every step, all live episodes are extended by ONE batched call of the rollout
backend (:mod:`.generation`: HF ``generate`` by default, vLLM with
``--rollout-engine vllm``), and the vector env steps them all.

We keep the exact token ids the policy sampled (never re-tokenise them) and a
mask that is 1 only on those tokens: system/user/tool text and chat-template
scaffolding are context, not actions, and must not receive gradient.

Token accounting is incremental and independent of what the policy wrote
(:class:`ChatRecorder`): the text appended after a turn (end of the assistant
message, the observation, the next generation prompt) is found by rendering the
chat with a fixed placeholder in place of every assistant message, with and
without the new messages, and tokenising only that difference. Decoding the
sampled tokens never has to round-trip, so ``retokenized`` stays 0 for any
prefix-stable template (ChatML/qwen2_5 included); a template that is not gets the
whole context re-tokenised for that turn, counted in ``retokenized_turns``.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Sequence

from .generation import Generator, HFGenerator, turn_seed
from .vector_env import SlotVectorEnv

DEFAULT_SYSTEM_PROMPT = (
    "You are an agent that completes tasks by calling tools. Call one tool per turn. "
    "When the task is done, call the submit tool."
)
TOOLS_CHANGED = ("The available tools have changed. From now on you may call these functions, given as signatures "
                 "within <tools></tools> XML tags:\n<tools>\n{tools}\n</tools>")


@dataclass
class Episode:
    """One trajectory, with everything the GRPO update and the metrics need."""

    env_id: str
    task_id: str
    group: int                       # index of its GRPO group in the batch
    messages: list[dict] = field(default_factory=list)
    tools: list[dict] = field(default_factory=list)         # the tools the policy may call now
    prompt_tools: list[dict] = field(default_factory=list)  # the tools rendered in the prompt (never change)
    token_ids: list[int] = field(default_factory=list)
    mask: list[int] = field(default_factory=list)          # 1 = policy-generated token (trained)
    logprobs: list[float] = field(default_factory=list)    # sampler logprob per token (0 where mask=0)
    context_text: str = ""           # rendered chat (assistant turns as placeholders) matching token_ids
    template_messages: list[dict] = field(default_factory=list)  # messages with assistant placeholders
    observation_role: str = "tool"   # role of observations unless a step says otherwise
    reward: float = 0.0              # env reward (verifier score on submit)
    shaped_reward: float = 0.0       # reward after shaping hooks (what GRPO optimises)
    success: bool = False
    turns: int = 0
    done: bool = False
    terminated: bool = False
    truncated: bool = False          # the env's turn limit, or the context limit, ended it
    context_overflow: bool = False
    overlong_turns: int = 0          # assistant turns cut at max_new_tokens (no EOS)
    retokenized: int = 0             # turns whose suffix needed re-tokenising (should stay 0)
    tool_errors: Counter = field(default_factory=Counter)
    tool_calls: int = 0
    rank: int = 0                    # the process that collected it

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


class ChatRecorder:
    """Renders episodes as token ids with a policy mask, one append at a time (see the module docstring).

    Used by rollouts and by SFT's reference replays, so demonstrations are rendered exactly as
    rollouts are.
    """

    def __init__(self, tokenizer, system_prompt: str | None = DEFAULT_SYSTEM_PROMPT, tool_descriptions: bool = True):
        self.tokenizer = tokenizer
        self.system_prompt = system_prompt
        self.tool_descriptions = tool_descriptions
        self.eos_ids = {tokenizer.eos_token_id}
        self.eos_text = tokenizer.decode([tokenizer.eos_token_id], skip_special_tokens=False)

    def _tools(self, tools) -> list[dict]:
        tools = list(tools or [])
        return tools if self.tool_descriptions else [_strip_descriptions(t) for t in tools]

    def begin(self, ep: Episode, obs: str, info: dict) -> None:
        """The prompt: system prompt, the env's tools, the first observation as the user turn."""
        ep.tools = ep.prompt_tools = self._tools(info.get("tools"))
        ep.observation_role = "user" if info.get("observation_role") == "user" else "tool"
        if self.system_prompt:
            ep.messages.append({"role": "system", "content": self.system_prompt})
        ep.messages.append({"role": "user", "content": obs})
        ep.template_messages = list(ep.messages)
        ep.context_text = render(self.tokenizer, ep.messages, ep.prompt_tools, add_generation_prompt=True)
        ep.token_ids = encode(self.tokenizer, ep.context_text)
        ep.mask = [0] * len(ep.token_ids)
        ep.logprobs = [0.0] * len(ep.token_ids)

    def append_generation(self, ep: Episode, new_ids: list[int], new_lps: list[float]) -> str:
        """Append sampled tokens (trained); returns the action text the env receives."""
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

    def append_observation(self, ep: Episode, gen_ids: list[int], obs: str, info: dict | None = None) -> None:
        """Append the env's answer to the last turn and the next generation prompt, as masked tokens.

        ``info["observation_role"] == "user"`` makes ``obs`` a user message (else a tool result);
        a new ``info["tools"]`` list is announced first and becomes the episode's tool list.
        """
        info = info or {}
        new: list[dict] = []
        tools = info.get("tools")
        if tools is not None and self._tools(tools) != ep.tools:
            ep.tools = self._tools(tools)
            new.append({"role": "system",
                        "content": TOOLS_CHANGED.format(tools="\n".join(json.dumps(t) for t in ep.tools))})
        role = info.get("observation_role") or ep.observation_role
        new.append({"role": "user" if role == "user" else "tool", "content": obs})
        ep.messages += new
        ep.template_messages += new
        suffix = self._suffix_text(ep, len(new), bool(gen_ids) and gen_ids[-1] in self.eos_ids)
        if suffix is not None:
            suffix_ids = encode(self.tokenizer, suffix)
        else:
            # Template not prefix-stable for this turn: re-tokenise the real chat after the
            # sampled tokens; counted so it shows up in metrics.
            ep.retokenized += 1
            full = render(self.tokenizer, ep.messages, ep.prompt_tools, add_generation_prompt=True)
            suffix_ids = encode(self.tokenizer, full)[len(ep.token_ids):]
            ep.context_text = render(self.tokenizer, ep.template_messages, ep.prompt_tools, add_generation_prompt=True)
        ep.token_ids += suffix_ids
        ep.mask += [0] * len(suffix_ids)
        ep.logprobs += [0.0] * len(suffix_ids)

    def _suffix_text(self, ep: Episode, n_new: int, ended_with_eos: bool) -> str | None:
        """Text after the sampled tokens up to the next generation prompt, or None if the template
        is not prefix-stable here. ``ep.template_messages`` already ends with the ``n_new`` new messages."""
        with_assistant = render(self.tokenizer, ep.template_messages[:-n_new], ep.prompt_tools,
                                add_generation_prompt=False)
        full = render(self.tokenizer, ep.template_messages, ep.prompt_tools, add_generation_prompt=True)
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


class RolloutEngine:
    """Collects GRPO groups of multi-turn episodes.

    Args:
        model: a causal LM (unwrapped; may be a PEFT model) for the default HF backend.
        tokenizer: its tokenizer; needs a chat template with tool support.
        vec_env: the slot vector env (>= batch x group slots).
        max_new_tokens: per assistant turn.
        max_context_tokens: an episode whose context would exceed this stops (reward 0).
        temperature: sampling temperature (1.0 = the model's distribution).
        autocast: context-manager factory wrapped around generation (``accelerator.autocast``).
        reuse_cache: keep the KV cache across turns (prefill only new tokens).
        on_turn: called before every batched turn (the trainer re-checks torch's thread count there).
        generator: a rollout backend (:mod:`.generation`); default: :class:`~.generation.HFGenerator`.
        rank: recorded on every episode (the process that collected it).
    """

    def __init__(self, model, tokenizer, vec_env: SlotVectorEnv | None, *, max_new_tokens: int = 64,
                 max_context_tokens: int = 4096, temperature: float = 1.0,
                 system_prompt: str | None = DEFAULT_SYSTEM_PROMPT, tool_descriptions: bool = True,
                 autocast=None, reuse_cache: bool = True, on_turn=None, generator: Generator | None = None,
                 prefill: str = "auto", rank: int = 0):
        self.tokenizer = tokenizer
        self.vec_env = vec_env
        self.max_new_tokens = max_new_tokens
        self.max_context_tokens = max_context_tokens
        self.recorder = ChatRecorder(tokenizer, system_prompt, tool_descriptions)
        self.generator = generator if generator is not None else HFGenerator(
            model, tokenizer, max_new_tokens=max_new_tokens, temperature=temperature, autocast=autocast,
            reuse_cache=reuse_cache, prefill=prefill)
        self.on_turn = on_turn
        self.rank = rank

    @property
    def model(self):
        return getattr(self.generator, "model", None)

    @model.setter
    def model(self, model) -> None:
        self.generator.sync_weights(model)

    @property
    def prefilled_tokens(self) -> int:
        return self.generator.prefilled_tokens

    @property
    def generated_tokens(self) -> int:
        return self.generator.generated_tokens

    def collect(self, tasks: Sequence[dict], group_size: int, seed: int, greedy: bool = False) -> list[Episode]:
        """Run ``group_size`` episodes of every task (``{"env_id", "task_id"[, "seed"]}``) to completion.

        Env seeds and sampling both derive from ``seed`` alone: the same call gives the same episodes.
        """
        specs = [dict(t) for t in tasks for _ in range(group_size)]
        episodes = [Episode(env_id=s["env_id"], task_id=s.get("task_id") or "", group=i // group_size, rank=self.rank)
                    for i, s in enumerate(specs)]
        # Every member of a group sees the same env seed: the group compares policy samples, not worlds.
        # A task may bring its own ("seed"), e.g. an evaluation's, fixed whatever batch it lands in.
        seeds = [int(s.pop("seed", seed * 100_003 + ep.group)) for s, ep in zip(specs, episodes)]
        for ep, (obs, info) in zip(episodes, self.vec_env.start(specs, seeds)):
            ep.task_id = info.get("task_id", ep.task_id)
            self.recorder.begin(ep, obs, info)

        self.generator.start()
        try:
            for turn in range(1 << 30):
                live = [i for i, ep in enumerate(episodes) if not ep.done]
                for i in list(live):
                    ep = episodes[i]
                    if len(ep.token_ids) + self.max_new_tokens > self.max_context_tokens:
                        ep.done, ep.truncated, ep.context_overflow = True, True, True
                        live.remove(i)  # its env slot is left as it is: the next batch resets it
                if not live:
                    break
                if self.on_turn is not None:
                    self.on_turn()
                gens = self.generator.generate(live, [episodes[i].token_ids for i in live], greedy=greedy,
                                               seed=turn_seed(seed, turn))
                actions = {}
                for i, gen in zip(live, gens):
                    actions[i] = self.recorder.append_generation(episodes[i], gen.ids, gen.logprobs)
                    episodes[i].overlong_turns += not gen.finished
                results = self.vec_env.step(actions)
                for i, gen in zip(live, gens):
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
                        self.recorder.append_observation(ep, gen.ids, res.obs, res.info)
        finally:
            self.generator.finish()
        for ep in episodes:
            ep.shaped_reward = ep.reward
        return episodes


def shape_rewards(episodes: Sequence[Episode], format_penalty: float = 0.0, turn_cost: float = 0.0,
                  extra_fn=None, tool_error_penalty: float = 0.0) -> None:
    """Reward shaping hooks (all off by default). Writes ``ep.shaped_reward``.

    * ``format_penalty``: subtracted per turn whose action failed to parse or named no known tool.
    * ``tool_error_penalty``: subtracted per turn whose call failed otherwise (invalid arguments, a
      refused precondition, ...).
    * ``turn_cost``: subtracted per assistant turn (prefers short solutions).
    * ``extra_fn(episode) -> float``: added, for custom shaping.
    """
    format_codes = ("parse_error", "unknown_tool")
    for ep in episodes:
        r = ep.reward
        r -= format_penalty * sum(ep.tool_errors.get(c, 0) for c in format_codes)
        r -= tool_error_penalty * sum(n for c, n in ep.tool_errors.items() if c not in format_codes)
        r -= turn_cost * ep.turns
        if extra_fn is not None:
            r += float(extra_fn(ep))
        ep.shaped_reward = r
