"""The offline tiny chat model builder."""

import json

import torch

from agentworld_rl.tiny_model import build_tiny_chat_model, qwen2_5_chat_template

torch.set_num_threads(1)


def test_build_load_and_cache(tmp_path, monkeypatch):
    from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast
    monkeypatch.setenv("AGENTWORLD_CACHE", str(tmp_path / "cache"))
    path = build_tiny_chat_model()
    assert path.is_relative_to(tmp_path / "cache")
    stamp = (path / "config.json").stat().st_mtime_ns
    assert build_tiny_chat_model() == path and (path / "config.json").stat().st_mtime_ns == stamp  # cached
    model = AutoModelForCausalLM.from_pretrained(path)
    tok = PreTrainedTokenizerFast.from_pretrained(path)
    assert tok.chat_template == qwen2_5_chat_template()  # TRL recognises it -> parses tool calls
    assert model.config.vocab_size == len(tok) and model.config.eos_token_id == tok.eos_token_id
    call = '<tool_call>\n{"name": "submit", "arguments": {"answer": "4"}}\n</tool_call>'
    assert tok.decode(tok(call, add_special_tokens=False)["input_ids"]) == call
    assert tok.convert_tokens_to_ids("<tool_call>") != tok.unk_token_id
    tools = [{"type": "function", "function": {"name": "submit", "description": "d", "parameters": {"type": "object", "properties": {}}}}]
    text = tok.apply_chat_template([{"role": "user", "content": "hi"}], tools=tools, add_generation_prompt=True, tokenize=False)
    assert "<tools>" in text and text.endswith("<|im_start|>assistant\n")
    out = model.generate(**tok(text, return_tensors="pt", add_special_tokens=False), max_new_tokens=3, do_sample=False)
    assert out.shape[1] > 0


def test_trl_parses_tiny_model_tool_calls(tmp_path):
    from transformers import PreTrainedTokenizerFast
    from trl.chat_template_utils import add_response_schema
    tok = PreTrainedTokenizerFast.from_pretrained(build_tiny_chat_model(tmp_path / "m"))
    tok = add_response_schema(tok)
    ids = tok('<tool_call>\n{"name": "lookup", "arguments": {"key": "a"}}\n</tool_call><|im_end|>', add_special_tokens=False)["input_ids"]
    parsed = tok.parse_response(ids, prefix=[])
    assert parsed["tool_calls"][0]["function"]["name"] == "lookup"
    assert parsed["tool_calls"][0]["function"]["arguments"] == {"key": "a"}


def test_corpus_changes_cache_key(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTWORLD_CACHE", str(tmp_path))
    assert build_tiny_chat_model() != build_tiny_chat_model(extra_corpus=["hello retail world"])
    assert json.loads((build_tiny_chat_model() / "agentworld_tiny.json").read_text())["hidden_size"] == 64
