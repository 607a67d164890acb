"""A local causal LM as an arena policy (``agentworld eval --policy model``).

It renders each episode exactly as the trainer's rollouts do (system prompt, the env's
observation as the user turn, earlier actions as assistant turns, tool results as ``tool``
turns, the tools through the chat template), generates greedily for a batch of episodes at
once (left padding), and returns the decoded assistant turns as text actions.
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
        self.name = f"model:{path}" + (f"+{adapter}" if adapter else "")

    def _prompt(self, state) -> str:
        messages: list[dict[str, Any]] = [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        for i, m in enumerate(state.messages):
            # the first user turn is the task; later user turns are tool results, as in training
            role = "tool" if m["role"] == "user" and i > 0 else m["role"]
            messages.append({"role": role, "content": m["content"]})
        tools = state.tools if self.tool_descriptions else _strip(state.tools)
        return render(self.tokenizer, messages, tools, add_generation_prompt=True)

    @torch.no_grad()
    def act(self, states: Sequence[Any]) -> list[str]:
        out: list[str] = []
        tok = self.tokenizer
        for start in range(0, len(states), self.batch_size):
            self.threads.maybe()
            prompts = [self._prompt(s) for s in states[start:start + self.batch_size]]
            enc = tok(prompts, return_tensors="pt", padding=True, add_special_tokens=False,
                      truncation=True, max_length=self.max_context_tokens).to(self.device)
            # A turn is one tool call: stop a row at its closing tag instead of running on to the token limit.
            gen = self.model.generate(**enc, max_new_tokens=self.max_new_tokens, do_sample=False,
                                      pad_token_id=tok.pad_token_id, stop_strings=["</tool_call>"], tokenizer=tok)
            new = gen[:, enc["input_ids"].shape[1]:]
            out += [tok.decode(row, skip_special_tokens=True).strip() for row in new]
        return out
