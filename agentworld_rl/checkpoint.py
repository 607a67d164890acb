"""Checkpoints that resume *exactly*: weights, optimizer, scheduler, RNG, step and data position.

Layout of ``<output_dir>/checkpoints/step-<N>/``::

    trainable.pt     trainable parameters by name (LoRA adapters, or all weights)
    adapter/         PEFT adapter (save_pretrained), loadable on the base model for inference
    optimizer.pt     optimizer state
    scheduler.pt     LR scheduler state
    rng-<rank>.pt    python / numpy / torch (and CUDA) RNG states of each process
    state.json       step, task sampler position, config
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import numpy as np
import torch


def checkpoint_dir(output_dir: str | Path, step: int) -> Path:
    return Path(output_dir) / "checkpoints" / f"step-{step}"


def latest_checkpoint(output_dir: str | Path) -> Path | None:
    root = Path(output_dir) / "checkpoints"
    done = [p for p in root.glob("step-*") if (p / "state.json").exists()] if root.exists() else []
    return max(done, key=lambda p: int(re.sub(r"\D", "", p.name))) if done else None


def rng_state() -> dict:
    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_checkpoint(accelerator, model, optimizer, scheduler, step: int, extra_state: dict,
                    output_dir: str | Path) -> Path:
    path = checkpoint_dir(output_dir, step)
    path.mkdir(parents=True, exist_ok=True)
    # Every process saves its own RNG (sampling differs per rank); the rest is rank-0 only.
    torch.save(rng_state(), path / f"rng-{accelerator.process_index}.pt")
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        unwrapped = accelerator.unwrap_model(model)
        trainable = {n: p.detach().cpu().clone() for n, p in unwrapped.named_parameters() if p.requires_grad}
        torch.save(trainable, path / "trainable.pt")
        if hasattr(unwrapped, "peft_config"):
            unwrapped.save_pretrained(path / "adapter")
        torch.save(optimizer.state_dict(), path / "optimizer.pt")
        torch.save(scheduler.state_dict(), path / "scheduler.pt")
        # state.json last: its presence marks the checkpoint complete.
        (path / "state.json").write_text(json.dumps({"step": step, **extra_state}, indent=2, default=str))
    accelerator.wait_for_everyone()
    return path


def load_checkpoint(accelerator, model, optimizer, scheduler, path: str | Path) -> dict:
    """Restore everything saved by :func:`save_checkpoint`; returns the state.json dict."""
    path = Path(path)
    state = json.loads((path / "state.json").read_text())
    unwrapped = accelerator.unwrap_model(model)
    trainable = torch.load(path / "trainable.pt", map_location="cpu")
    params = dict(unwrapped.named_parameters())
    missing = [n for n in trainable if n not in params]
    if missing:
        raise ValueError(f"checkpoint parameters not in model: {missing[:5]}")
    with torch.no_grad():
        for name, value in trainable.items():
            params[name].copy_(value.to(params[name].device, params[name].dtype))
    optimizer.load_state_dict(torch.load(path / "optimizer.pt", map_location="cpu", weights_only=False))
    scheduler.load_state_dict(torch.load(path / "scheduler.pt", weights_only=False))
    rng_file = path / f"rng-{accelerator.process_index}.pt"
    if rng_file.exists():
        set_rng_state(torch.load(rng_file, weights_only=False))
    return state
