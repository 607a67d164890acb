"""Build a tiny, offline chat model for CPU smoke runs and tests.

``build_tiny_chat_model()`` trains a byte-level BPE tokenizer with ``tokenizers``
on a small corpus generated locally (tool-call JSON, chat-template renderings,
optional environment texts), attaches TRL's shipped ``qwen2_5`` chat template
(so TRL recognises it and parses ``<tool_call>{...}</tool_call>`` blocks), and
saves a randomly initialised few-layer Qwen2 model next to it.

The result is a directory loadable with::

    AutoModelForCausalLM.from_pretrained(path)
    PreTrainedTokenizerFast.from_pretrained(path)   # not AutoTokenizer

Nothing is downloaded. Building takes a few seconds and is cached under
``$AGENTWORLD_CACHE`` (or the platformdirs user cache of ``agentworld``), keyed
by a hash of every argument, so repeated calls return immediately.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import tempfile
from pathlib import Path
from typing import Iterable, Sequence

# Tokens of the qwen2_5 chat template. The im_* ones are special (never split,
# dropped by skip_special_tokens); the tool tags are plain added tokens, as in
# real Qwen tokenizers, so decoding keeps them in the text the env parses.
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
TOOL_TAG_TOKENS = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<tools>", "</tools>"]
BUILDER_VERSION = "1"


def qwen2_5_chat_template() -> str:
    """TRL's shipped qwen2_5 chat template text (identity-compared by TRL)."""
    import trl

    path = Path(trl.__file__).parent / "chat_templates" / "qwen2_5.jinja"
    return path.read_text(encoding="utf-8")


def default_cache_dir() -> Path:
    """``$AGENTWORLD_CACHE`` if set, else the platformdirs user cache for agentworld."""
    env = os.environ.get("AGENTWORLD_CACHE")
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_cache_dir("agentworld"))


def _synthetic_corpus(rng: random.Random, n: int = 400) -> list[str]:
    """Tool-use flavoured text so the BPE merges cover JSON, tags and common words."""
    words = (
        "order user item product customer account flight hotel booking ticket status refund cancel update "
        "create delete list get search find check price total quantity address email phone name date id "
        "answer submit task policy must should only when the a an of to and or for with is are not this that "
        "error code message invalid arguments unknown tool precondition failed success true false null result"
    ).split()
    tools = ["get_order", "list_items", "search", "lookup", "update_status", "cancel_order", "submit", "answer"]
    out = []
    for _ in range(n):
        name = rng.choice(tools)
        args = {rng.choice(words): rng.choice([rng.choice(words), rng.randint(0, 9999), f"{rng.choice(words)}_{rng.randint(1, 99)}"])
                for _ in range(rng.randint(0, 3))}
        call = json.dumps({"name": name, "arguments": args})
        out.append(f"<tool_call>\n{call}\n</tool_call>")
        out.append(f"<tool_response>\n{json.dumps({'result': args})}\n</tool_response>")
        out.append(json.dumps({"error": {"code": rng.choice(["parse_error", "unknown_tool", "invalid_arguments"]),
                                         "message": " ".join(rng.choices(words, k=6))}}))
        out.append(" ".join(rng.choices(words, k=rng.randint(5, 25))).capitalize() + ".")
        out.append(json.dumps({"type": "function", "function": {"name": name, "description": " ".join(rng.choices(words, k=8)),
                                "parameters": {"type": "object", "properties": {w: {"type": "string"} for w in rng.sample(words, 2)}}}}))
    return out


def build_tokenizer(corpus: Iterable[str], vocab_size: int = 2048):
    """Train a byte-level BPE tokenizer and wrap it as a PreTrainedTokenizerFast with the qwen2_5 template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(list(corpus), trainer=trainer)
    tok.add_tokens(TOOL_TAG_TOKENS)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        padding_side="left",  # generation batches are left padded
    )
    fast.chat_template = qwen2_5_chat_template()
    return fast


def build_tiny_chat_model(
    path: str | os.PathLike | None = None,
    *,
    hidden_size: int = 64,
    num_layers: int = 2,
    num_heads: int = 4,
    num_kv_heads: int = 2,
    intermediate_size: int = 256,
    vocab_size: int = 2048,
    max_position_embeddings: int = 8192,
    extra_corpus: Sequence[str] = (),
    seed: int = 0,
    overwrite: bool = False,
) -> Path:
    """Build (or reuse) a tiny Qwen2 chat model + tokenizer and return its directory.

    Args:
        path: where to save. ``None`` uses ``default_cache_dir()/tiny-models/<hash>``.
        extra_corpus: additional texts for tokenizer training (e.g. env instructions).
        seed: seeds corpus generation and weight init, so builds are reproducible.
        overwrite: rebuild even if a complete build already exists at ``path``.
    """
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    spec = dict(hidden_size=hidden_size, num_layers=num_layers, num_heads=num_heads, num_kv_heads=num_kv_heads,
                intermediate_size=intermediate_size, vocab_size=vocab_size, max_pos=max_position_embeddings,
                seed=seed, v=BUILDER_VERSION,
                corpus=hashlib.sha256("\x00".join(extra_corpus).encode()).hexdigest()[:16])
    key = hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]
    out = Path(path) if path is not None else default_cache_dir() / "tiny-models" / key
    marker = out / "agentworld_tiny.json"
    if marker.exists() and not overwrite:
        return out

    rng = random.Random(seed)
    template_samples = []
    tokenizer = None
    corpus = _synthetic_corpus(rng) + list(extra_corpus)
    tokenizer = build_tokenizer(corpus + SPECIAL_TOKENS, vocab_size=vocab_size)
    # Second pass: add chat renderings so template scaffolding merges well.
    for text in corpus[:50]:
        template_samples.append(tokenizer.apply_chat_template(
            [{"role": "user", "content": text}, {"role": "assistant", "content": text[:40]}], tokenize=False))
    tokenizer = build_tokenizer(corpus + template_samples, vocab_size=vocab_size)

    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=intermediate_size,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=num_kv_heads,
        max_position_embeddings=max_position_embeddings,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    # Seeded init on a forked generator: building (or not, when cached) never moves the caller's stream.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Qwen2ForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id

    # Write to a temp dir then rename, so a crashed build never looks complete.
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tiny-", dir=out.parent))
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    (tmp / "agentworld_tiny.json").write_text(json.dumps(spec, indent=2))
    if marker.exists() and not overwrite:  # another process finished the same build meanwhile: keep its copy
        shutil.rmtree(tmp, ignore_errors=True)
        return out
    if out.exists():
        shutil.rmtree(out)
    try:
        tmp.rename(out)
    except OSError:  # another process won the race; its build is equivalent
        shutil.rmtree(tmp, ignore_errors=True)
    return out
