"""Checkpoints that resume *exactly*: weights, optimizer, scheduler, RNG, step and data position.

Layout of ``<output_dir>/checkpoints/step-<N>/``::

    trainable.pt     trainable parameters by name (LoRA adapters, or all weights)
    adapter/         PEFT adapter (save_pretrained), loadable on the base model for inference
    optimizer.pt     optimizer state
    scheduler.pt     LR scheduler state
    rng-<rank>.pt    python / numpy / torch (and CUDA) RNG states of each process
    state.json       step, task sampler position, config
    hashes.json      the SHA-256 of every other file, written last

Kills leave debris, so writing and reading are both defensive: a checkpoint is
written into ``step-<N>.tmp/`` and renamed into place when complete; reading
only considers ``step-<digits>`` directories, checks every file against the
hash recorded when it was written (a flipped bit or an edited file is refused
like a truncated one), loads every file into memory before touching the model
(a damaged file changes nothing), and :func:`resume_candidates` lists
complete-looking checkpoints newest first so the trainer can fall back past a
damaged one.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import shutil
from pathlib import Path

import numpy as np
import torch


def checkpoint_dir(output_dir: str | Path, step: int) -> Path:
    return Path(output_dir) / "checkpoints" / f"step-{step}"


REQUIRED_FILES = ("state.json", "trainable.pt", "optimizer.pt", "scheduler.pt", "hashes.json")
HASHES = "hashes.json"
_STEP_DIR = re.compile(r"step-(\d+)")


class CheckpointError(Exception):
    """A checkpoint directory that cannot be restored (missing or unreadable file)."""


def resume_candidates(output_dir: str | Path) -> list[Path]:
    """``checkpoints/step-<N>`` dirs, newest first (odd names like ``step-`` or ``step-3.tmp`` are skipped)."""
    root = Path(output_dir) / "checkpoints"
    found = []
    for p in root.iterdir() if root.is_dir() else []:
        m = _STEP_DIR.fullmatch(p.name)
        if m and p.is_dir():
            found.append((int(m.group(1)), p))
    return [p for _, p in sorted(found, reverse=True)]


def latest_checkpoint(output_dir: str | Path) -> Path | None:
    """Newest checkpoint with all required files present (not checked for truncation; see read_checkpoint)."""
    for p in resume_candidates(output_dir):
        if all((p / f).exists() for f in REQUIRED_FILES):
            return p
    return None


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
    tmp = path.with_name(path.name + ".tmp")
    if accelerator.is_main_process and tmp.exists():
        shutil.rmtree(tmp)
    accelerator.wait_for_everyone()
    tmp.mkdir(parents=True, exist_ok=True)
    # Every process saves its own RNG (sampling differs per rank); the rest is rank-0 only.
    torch.save(rng_state(), tmp / f"rng-{accelerator.process_index}.pt")
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        unwrapped = accelerator.unwrap_model(model)
        trainable = {n: p.detach().cpu().clone() for n, p in unwrapped.named_parameters() if p.requires_grad}
        torch.save(trainable, tmp / "trainable.pt")
        if hasattr(unwrapped, "peft_config"):
            unwrapped.save_pretrained(tmp / "adapter")
        torch.save(optimizer.state_dict(), tmp / "optimizer.pt")
        torch.save(scheduler.state_dict(), tmp / "scheduler.pt")
        (tmp / "state.json").write_text(json.dumps({"step": step, **extra_state}, indent=2, default=str))
        (tmp / HASHES).write_text(json.dumps(file_hashes(tmp), indent=1, sort_keys=True))
        # Complete: move into place (a rerun of the same step replaces the old copy).
        if path.exists():
            shutil.rmtree(path)
        os.replace(tmp, path)
    accelerator.wait_for_everyone()
    return path


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def file_hashes(root: Path) -> dict[str, str]:
    """SHA-256 of every file under ``root`` (but hashes.json), by relative path."""
    return {p.relative_to(root).as_posix(): _sha256(p) for p in sorted(root.rglob("*"))
            if p.is_file() and p.name != HASHES}


def verify_hashes(path: Path, process_index: int = 0) -> None:
    """CheckpointError unless the files this process restores match the hashes recorded at save time."""
    try:
        recorded = json.loads((path / HASHES).read_text())
        if not isinstance(recorded, dict):
            raise ValueError("not a mapping")
    except (OSError, ValueError) as e:
        raise CheckpointError(f"{path.name}/{HASHES} is unreadable ({str(e).splitlines()[0][:80]})") from e
    needed = [f for f in REQUIRED_FILES if f != HASHES]
    rng = f"rng-{process_index}.pt"
    if (path / rng).exists() or rng in recorded:
        needed.append(rng)
    for name in needed:
        if name not in recorded:
            raise CheckpointError(f"{path.name}/{name} has no recorded hash")
        if not (path / name).is_file():
            raise CheckpointError(f"{path.name} is incomplete (missing {name})")
        if _sha256(path / name) != recorded[name]:
            raise CheckpointError(f"{path.name}/{name} does not match the hash recorded when it was written "
                                  f"(damaged or edited)")


def read_checkpoint(path: str | Path, process_index: int = 0) -> dict:
    """Load every file of a checkpoint into memory; CheckpointError (one line) if any is missing or unreadable."""
    path = Path(path)
    if not path.is_dir():
        raise CheckpointError(f"{path} is not a checkpoint directory")
    missing = [f for f in REQUIRED_FILES if not (path / f).exists()]
    if missing:
        raise CheckpointError(f"{path.name} is incomplete (missing {', '.join(missing)})")
    verify_hashes(path, process_index)
    out = {}
    try:
        out["state"] = json.loads((path / "state.json").read_text())
        out["trainable"] = torch.load(path / "trainable.pt", map_location="cpu")
        out["optimizer"] = torch.load(path / "optimizer.pt", map_location="cpu", weights_only=False)
        out["scheduler"] = torch.load(path / "scheduler.pt", weights_only=False)
        rng_file = path / f"rng-{process_index}.pt"
        out["rng"] = torch.load(rng_file, weights_only=False) if rng_file.exists() else None
    except Exception as e:  # truncated zip, bad JSON, unpickling error: all mean "unusable"
        raise CheckpointError(f"{path.name} is unreadable ({type(e).__name__}: {str(e).splitlines()[0][:120]})") from e
    if not isinstance(out["state"], dict) or "step" not in out["state"]:
        raise CheckpointError(f"{path.name}/state.json has no step")
    return out


def apply_checkpoint(accelerator, model, optimizer, scheduler, ckpt: dict, name: str = "checkpoint") -> dict:
    """Restore a :func:`read_checkpoint` dict into model/optimizer/scheduler/RNG; returns its state.json dict."""
    unwrapped = accelerator.unwrap_model(model)
    params = dict(unwrapped.named_parameters())
    missing = [n for n, v in ckpt["trainable"].items() if n not in params or params[n].shape != v.shape]
    if missing:  # checked before any copy: a mismatch leaves the model untouched
        raise CheckpointError(f"{name}: parameters missing from this model or of another shape: {missing[:3]}")
    with torch.no_grad():
        for pname, value in ckpt["trainable"].items():
            params[pname].copy_(value.to(params[pname].device, params[pname].dtype))
    optimizer.load_state_dict(ckpt["optimizer"])
    scheduler.load_state_dict(ckpt["scheduler"])
    if ckpt["rng"] is not None:
        set_rng_state(ckpt["rng"])
    return ckpt["state"]


def load_checkpoint(accelerator, model, optimizer, scheduler, path: str | Path) -> dict:
    """Restore everything saved by :func:`save_checkpoint`; returns the state.json dict.

    Every file is read before anything is applied, so a CheckpointError leaves model and
    optimizer untouched and the caller can try an older checkpoint.
    """
    return apply_checkpoint(accelerator, model, optimizer, scheduler,
                            read_checkpoint(path, accelerator.process_index), Path(path).name)
