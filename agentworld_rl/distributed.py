"""What the trainer needs from the process group, in one place (one process: all no-ops).

Every process runs the same loop on its own slice of the work: rollouts of its own prompts,
its own shard of each evaluation and of the SFT batches. ``Dist`` wraps the collectives
that glue them together (gathering records, summing counts, averaging gradients by hand
before Accelerate wraps the model), :func:`replica_digest` fingerprints the trained
weights so a run can show its replicas stay identical, and :func:`full_params_for_generation`
lets generation run on a model whose parameters are sharded (FSDP, DeepSpeed ZeRO-3).
"""

from __future__ import annotations

import contextlib
import hashlib
from dataclasses import dataclass
from typing import Any, Sequence

import torch


@dataclass
class Dist:
    """Rank, world size and the collectives of an ``accelerate.Accelerator`` (or of one process)."""

    rank: int = 0
    world: int = 1
    device: torch.device = torch.device("cpu")

    @classmethod
    def of(cls, accelerator) -> "Dist":
        return cls(accelerator.process_index, accelerator.num_processes, accelerator.device)

    @property
    def main(self) -> bool:
        return self.rank == 0

    def shard(self, items: Sequence) -> list:
        """This process's share of ``items`` (every ``world``-th, starting at ``rank``)."""
        return list(items[self.rank::self.world])

    def gather(self, obj: Any) -> list:
        """``obj`` of every process, in rank order (a list of one in a single process)."""
        if self.world == 1:
            return [obj]
        from accelerate.utils import gather_object
        return gather_object([obj])

    def unshard(self, parts: list[list]) -> list:
        """Undo :meth:`shard`: the gathered per-rank lists back in the original order."""
        out: list = []
        for i in range(max((len(p) for p in parts), default=0)):
            out += [p[i] for p in parts if i < len(p)]
        return out

    def sum(self, value: float) -> float:
        if self.world == 1:
            return float(value)
        t = torch.tensor([float(value)], dtype=torch.float64, device=self.device)
        torch.distributed.all_reduce(t)
        return float(t.item())

    def sum_gradients(self, params) -> None:
        """All-reduce (sum) the ``.grad`` of ``params`` (for a model that Accelerate has not wrapped,
        e.g. during the SFT warm start, whose per-process losses are already whole-batch normalised)."""
        if self.world == 1:
            return
        for p in params:
            if p.grad is None:
                p.grad = torch.zeros_like(p)
            torch.distributed.all_reduce(p.grad)


def replica_digest(model) -> str:
    """A hash of the trainable parameters' bytes: equal on every replica iff they hold the same weights."""
    h = hashlib.sha1()
    for name, p in model.named_parameters():
        if p.requires_grad:
            h.update(name.encode())
            h.update(p.detach().float().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


def full_params_for_generation(accelerator, model):
    """A context in which the unwrapped ``model`` holds its full parameters for ``generate``.

    FSDP shards parameters across processes and DeepSpeed ZeRO-3 partitions them; generation
    needs them whole on every process for its own rollouts (TRL does the same). Other setups
    (one process, DDP) already have them: a null context.
    """
    state = getattr(accelerator, "state", None)
    plugin = getattr(state, "deepspeed_plugin", None)
    if plugin is not None and getattr(plugin, "zero_stage", 0) == 3:
        import deepspeed
        return deepspeed.zero.GatheredParameters(list(model.parameters()), modifier_rank=None)
    if getattr(state, "fsdp_plugin", None) is not None:
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        if isinstance(model, FSDP):
            return FSDP.summon_full_params(model, writeback=False, recurse=True)
    return contextlib.nullcontext()
