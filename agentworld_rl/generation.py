"""Rollout backends: token ids in, sampled token ids and their sampler log-probs out.

A backend serves :class:`~agentworld_rl.rollout.RolloutEngine` one batched turn at a time::

    generator.start()                                   # a new batch of episodes
    gens = generator.generate(keys, contexts, greedy=False, seed=s)
    ...                                                 # one call per turn, each context extends the last
    generator.finish()

``keys[i]`` names the episode whose whole token context is ``contexts[i]``; every turn's context
starts with the previous turn's context plus the tokens generated for it, so a backend may keep
what it computed for that prefix (the HF backend keeps its KV cache, vLLM its prefix cache).
Sampling is a pure function of ``seed`` and the contexts: the same call gives the same tokens
whatever the caller's global RNG state (so runs never depend on what ran before them, and every
rank can be handed its own stream).

:class:`HFGenerator` is the default: batched ``transformers`` generation with a KV cache kept
across turns. ``agentworld_rl.vllm_backend`` holds the vLLM backend (``--rollout-engine vllm``).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Hashable, Protocol, Sequence

import torch
from transformers.cache_utils import DynamicCache

from .kvcache import GrowingCache

PREFILL_MODES = ("auto", "rows", "batched")


@dataclass
class Generation:
    """One sampled assistant turn: token ids (through EOS when it ended) and their sampler log-probs."""

    ids: list[int]
    logprobs: list[float]
    finished: bool  # ended with an EOS token (False: cut at max_new_tokens)


class Generator(Protocol):
    """What a rollout backend provides (see the module docstring)."""

    prefilled_tokens: int
    generated_tokens: int

    def start(self) -> None: ...

    def generate(self, keys: Sequence[Hashable], contexts: Sequence[list[int]], *, greedy: bool,
                 seed: int) -> list[Generation]: ...

    def finish(self) -> None: ...

    def sync_weights(self, model) -> None: ...


def turn_seed(seed: int, turn: int) -> int:
    """The sampling seed of one batched turn of a collect seeded ``seed`` (63-bit, never negative)."""
    return (seed * 1_000_003 + turn * 7_919 + 12_345) % (1 << 63)


@contextlib.contextmanager
def seeded(seed: int, device: torch.device):
    """Run the block on torch's global generators seeded with ``seed``, restoring them afterwards:
    sampling inside depends on ``seed`` alone and leaves the caller's random streams untouched."""
    devices = [device.index if device.index is not None else torch.cuda.current_device()] \
        if device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices, device_type=device.type if device.type != "cpu" else "cuda"):
        torch.manual_seed(seed)
        yield


class HFGenerator:
    """Batched ``model.generate`` over left-padded contexts, with the KV cache kept across turns.

    Each turn prefills only the tokens that are new since the last turn. ``prefill`` chooses how:

    * ``rows`` (CPU default): each row's new tokens run on their own, on top of that row's cached
      past, so no compute is spent on padding; identical rows with no past (the members of a GRPO
      group at their first turn) run once. The keys/values are written into the batch cache at the
      exact columns the attention mask marks as that row's tokens, so a row's tokens may sit anywhere
      (the previous turn's last sampled token, which ``generate`` never caches, sits left of the
      padding that aligns the new tokens on the right).
    * ``batched`` (accelerator default): the first turn as ``rows``; later turns hand ``generate``
      the cached batch and every new column at once (positions come from the attention mask, so
      holes do not shift them; on a GPU a forward per row is launch-bound while padding is cheap).

    When holes make the cache much wider than the live contexts it is dropped and rebuilt compactly.
    """

    def __init__(self, model, tokenizer, *, max_new_tokens: int = 64, temperature: float = 1.0,
                 autocast=None, reuse_cache: bool = True, prefill: str = "auto"):
        if prefill not in PREFILL_MODES:
            raise ValueError(f"prefill must be one of {PREFILL_MODES}, got {prefill!r}")
        self.model = model
        self.tokenizer = tokenizer
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.autocast = autocast or contextlib.nullcontext
        self.reuse_cache = reuse_cache
        self.prefill = prefill
        self.eos_ids = {tokenizer.eos_token_id}
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        self.prefilled_tokens = 0   # tokens run through the model as context (not generated)
        self.generated_tokens = 0
        self._was_training = False
        self._reset()

    # ------------------------------------------------------------------ batch state
    def _reset(self) -> None:
        """Forget the cached batch (row r of seq/att/cache belongs to ``self._keys[r]``)."""
        self._keys: list[Hashable] = []
        self._fed: dict[Hashable, list[int]] = {}  # the tokens of each row now in seq
        self._seq = self._att = self._cache = None

    def start(self) -> None:
        self._reset()
        self._was_training = self.model.training
        self.model.eval()

    def finish(self) -> None:
        self._reset()
        self.model.train(self._was_training)

    def sync_weights(self, model) -> None:
        """The HF backend samples from the training model itself: only the reference changes."""
        self.model = model

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def _prefill_rows(self) -> bool:
        return self.prefill == "rows" or (self.prefill == "auto" and self.device.type == "cpu")

    # ------------------------------------------------------------------ one turn
    @torch.no_grad()
    def generate(self, keys: Sequence[Hashable], contexts: Sequence[list[int]], *, greedy: bool,
                 seed: int) -> list[Generation]:
        keys, contexts = list(keys), [list(c) for c in contexts]
        seq, att, cache = self._extend(keys, contexts)
        cache = self._prefill(seq, att, cache)
        with seeded(seed, self.device):
            gens, sequences, cache = self._generate(seq, att, cache, greedy)
        # Post-EOS padding generated for finished rows is masked out for later turns.
        gen_att = torch.zeros((len(keys), sequences.shape[1] - seq.shape[1]), dtype=torch.long)
        for r, g in enumerate(gens):
            gen_att[r, :len(g.ids)] = 1
        self._seq, self._att, self._cache, self._keys = sequences, torch.cat([att, gen_att], 1), cache, keys
        self._fed = {k: ctx + g.ids for k, ctx, g in zip(keys, contexts, gens)}
        return gens

    def _extend(self, keys: list, contexts: list[list[int]]):
        """The left-padded batch for this turn and the cache that covers a prefix of it (or None)."""
        cache = self._cache if self.reuse_cache else None
        if cache is not None:
            index = {k: r for r, k in enumerate(self._keys)}
            fed = self._fed
            if not all(k in index and ctx[:len(fed[k])] == fed[k] for k, ctx in zip(keys, contexts)):
                cache = None  # a context that does not extend what the cache holds: start over
        if cache is not None:
            keep = [index[k] for k in keys]
            seq, att = self._seq, self._att
            if keep != list(range(len(self._keys))):
                cache.batch_select_indices(torch.tensor(keep, device=self.device))
                seq, att = seq[keep], att[keep]
            new_ids, new_att = left_pad([ctx[len(self._fed[k]):] for k, ctx in zip(keys, contexts)], self.pad_id)
            seq, att = torch.cat([seq, new_ids], 1), torch.cat([att, new_att], 1)
            if seq.shape[1] > 2 * max(len(c) for c in contexts):  # mostly holes: cheaper to prefill compactly
                cache = None
        if cache is None:
            seq, att = left_pad(contexts, self.pad_id)
        return seq, att, cache

    @torch.no_grad()
    def _prefill(self, seq: torch.Tensor, att: torch.Tensor, cache):
        """Fill ``cache`` with every column of ``seq`` but the last (see the class docstring);
        returns it (a new one if ``cache`` is None)."""
        B, W = seq.shape
        device = self.device
        past = cache.get_seq_length() if cache is not None else 0
        cache = cache if cache is not None else GrowingCache()
        todo = W - 1 - past
        if todo <= 0 or (past and not self._prefill_rows()):
            return cache  # generate() prefills the new columns batched
        computed: dict[tuple, list[tuple[torch.Tensor, torch.Tensor]]] = {}
        row_cols = [past + torch.nonzero(att[r, past:W - 1], as_tuple=True)[0] for r in range(B)]
        # At the first turn every row starts with the same system prompt and tool preamble: run it once.
        shared_len, shared = self._shared_prefix([seq[r, c] for r, c in enumerate(row_cols)]) if past == 0 \
            else (0, None)
        filled = False
        for r in range(B):
            # This row's tokens among the new columns, wherever they sit (holes are padding).
            cols = row_cols[r]
            n = len(cols)
            if n == 0:
                continue
            ids = seq[r, cols]
            key = tuple(ids.tolist()) if past == 0 else None
            kv = computed.get(key) if key is not None else None
            if kv is None:
                start = int(att[r, :past].sum())  # attended tokens before: the first new position
                skip = min(shared_len, n - 1)     # the shared prefix's keys/values are reused as they are
                pos = torch.arange(start + skip, start + n, device=device)[None]
                if past:
                    # [:past]: once the first row is written, the layers already hold the new columns
                    row_cache = DynamicCache(ddp_cache_data=[(layer.keys[r:r + 1, :, :past],
                                                              layer.values[r:r + 1, :, :past])
                                                             for layer in cache.layers])
                    mask = torch.cat([att[r, :past], torch.ones(n, dtype=att.dtype)])[None].to(device)
                elif skip:
                    row_cache = DynamicCache(ddp_cache_data=[(k[..., :skip, :], v[..., :skip, :]) for k, v in shared])
                    mask = None  # no padding: plain causal attention over the shared prefix and the rest
                else:
                    row_cache, mask = DynamicCache(), None  # no past, no padding: plain causal attention
                with self.autocast():
                    self.model(input_ids=ids[None, skip:].to(device), attention_mask=mask, position_ids=pos,
                               past_key_values=row_cache, use_cache=True, logits_to_keep=1)
                self.prefilled_tokens += n - skip
                kv = [(layer.keys[..., -n:, :], layer.values[..., -n:, :]) for layer in row_cache.layers]
                if key is not None:
                    computed[key] = kv
            if not filled:  # extend every layer by `todo` columns once, then write rows in place
                for i, (k, v) in enumerate(kv):
                    cache.update(k.new_zeros((B, k.shape[1], todo, k.shape[-1])),
                                 v.new_zeros((B, v.shape[1], todo, v.shape[-1])), i)
                filled = True
            where = cols.to(device)
            for layer, (k, v) in zip(cache.layers, kv):
                layer.keys[r, :, where] = k[0]
                layer.values[r, :, where] = v[0]
        return cache

    def _shared_prefix(self, rows: list[torch.Tensor], min_len: int = 16):
        """Keys/values of the longest prefix every distinct row shares (None if shorter than ``min_len``
        or if there is only one distinct row, which the per-row pass runs once anyway)."""
        distinct = {tuple(r.tolist()) for r in rows if len(r)}
        if len(distinct) < 2:
            return 0, None
        first, *others = distinct
        n = min(len(r) for r in distinct) - 1
        for other in others:
            n = next((i for i in range(n) if first[i] != other[i]), n)
        if n < min_len:
            return 0, None
        cache = DynamicCache()
        with self.autocast():
            self.model(input_ids=torch.tensor([first[:n]], device=self.device), past_key_values=cache, use_cache=True,
                       logits_to_keep=1)
        self.prefilled_tokens += n
        return n, [(layer.keys, layer.values) for layer in cache.layers]

    def _generate(self, input_ids: torch.Tensor, attention: torch.Tensor, cache, greedy: bool):
        """One batched generate over left-padded ``input_ids`` whose first columns are in ``cache``."""
        device = self.device
        past = cache.get_seq_length() if cache is not None else 0
        self.prefilled_tokens += int(attention[:, past:].sum())  # what generate() itself runs as context
        sampling = {} if greedy else dict(temperature=self.temperature, top_k=0, top_p=1.0)
        with self.autocast():
            out = self.model.generate(
                input_ids=input_ids.to(device), attention_mask=attention.to(device), past_key_values=cache,
                max_new_tokens=self.max_new_tokens, do_sample=not greedy, **sampling,
                eos_token_id=list(self.eos_ids), pad_token_id=self.pad_id,
                return_dict_in_generate=True, output_logits=True, use_cache=True,
            )
        width = input_ids.shape[1]
        new = out.sequences[:, width:].cpu()
        # Sampler log-probs from raw logits at the sampling temperature, one step at a time
        # (never a [B, T, V] fp32 copy). Greedy turns report the temperature-1 distribution.
        lps = torch.zeros(new.shape, dtype=torch.float32)
        for t, step_logits in enumerate(out.logits[: new.shape[1]]):
            logits = step_logits.float()
            if not greedy and self.temperature != 1.0:
                logits = logits / self.temperature
            lps[:, t] = (logits.gather(1, new[:, t:t + 1].to(logits.device)).squeeze(1)
                         - torch.logsumexp(logits, dim=-1)).cpu()
        gens = []
        for i in range(new.shape[0]):
            row = new[i].tolist()
            n = next((j + 1 for j, t in enumerate(row) if t in self.eos_ids), len(row))
            gens.append(Generation(row[:n], lps[i, :n].tolist(), finished=n > 0 and row[n - 1] in self.eos_ids))
        self.generated_tokens += sum(len(g.ids) for g in gens)
        return gens, out.sequences.cpu(), getattr(out, "past_key_values", None)


def left_pad(rows: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Left-padded ids and attention mask of ``rows``."""
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    att = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        if len(r):
            ids[i, width - len(r):] = torch.tensor(list(r))
            att[i, width - len(r):] = 1
    return ids, att
