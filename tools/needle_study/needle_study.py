#!/usr/bin/env python3
"""Needle-retrieval study through kvpress's own pipeline (issue 28): answers, teacher-forced value log-probs and
value-token retention per press, on seeded public-domain haystacks.

kvpress pieces used as they are: ``KVPressTextGenerationPipeline.preprocess`` (chat template, context/question
split, tokenization), its prefill call (``model.model(input_ids, past_key_values=cache)`` inside each press's
``press(model)`` context), ``generate_answer`` (greedy decoding over the compressed cache, the answer decoded
as the pipeline decodes it) and kvpress's head-wise key masking (attention_patch) for presses that use it.

One prefill per (haystack, mode) feeds every press: every press installs its own forward hooks; before each
press's hook the layer's cache is reset to the full keys/values the attention layer produced (so the hook gets
exactly the arguments it gets when its press runs alone: prefill activations never read the compressed
cache), and after it the compressed layer is stored for that press (the exporter's capture trick,
tools/export/kvpress_capture.py, extended to keep each press's cache). `equivalence.py` checks the answers
against ``pipeline(context, question=..., press=...)`` called press by press, token for token.

Modes: question-agnostic = the pipeline's default (the context is compressed, then the question is read);
question-aware = the question is appended to the context before compression (``question=""``). The token
stream is the same text in both modes; only where compression happens differs.

Conditions added later (``--add-conditions``) run on the completed study's own haystacks, which its seed fixes;
the first haystack of every invocation also replays a recorded condition, and the run stops unless the replay
matches its records (study.json lists the replays in the segment that added the conditions).

Usage (one model; records.jsonl grows one line per run, study.json is rewritten after every haystack):
  /opt/kvenv/bin/python tools/needle_study/needle_study.py --gguf ~/.cache/kvaudit-gguf/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf \\
      --model-id Qwen/Qwen2.5-Coder-0.5B-Instruct --out data/qwen2.5-coder-0.5b-instruct/needle_study \\
      --haystacks 60 --deadline 10:45
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import fcntl
import hashlib
import json
import math
import os
import platform
import random
import re
import shlex
import sys
import time

os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("TQDM_DISABLE", "1")

import torch  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer, DynamicCache  # noqa: E402

import kvpress  # noqa: E402
from kvpress import ChunkKVPress, EntropyGatedChunkKVPress, KVPressTextGenerationPipeline, SnapKVPress  # noqa: E402

from kvaudit.page_entrokv_press import PageEntroKVPress  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMA = "kvaudit-needle-study/1"
FILLER = os.path.join(HERE, "filler.txt")
FILLER_PROVENANCE = os.path.join(HERE, "filler.provenance.json")
MODES = ("question-agnostic", "question-aware")
CHUNK_RATIOS = (0.85, 0.9, 0.95)
SNAP_RATIOS = (0.8, 0.85, 0.9, 0.95)
CHUNK = 10
RESCUE = 4
CONTROL_RESCUE = 8  # >= every value's token length here (Qwen splits digits: 7; words: checked per haystack)
PAGE = dict(compression_ratio=0.8, page_size=16, sinks=4)
VALUE_KINDS = ("digits3", "digits5", "digits7", "word")
DEPTHS = tuple(round(0.1 * k, 1) for k in range(1, 10))
# Keys and word values: two-word keys as RULER's; value words that do not occur in the filler (checked).
KEY_A = ("amber", "copper", "velvet", "silent", "crimson", "hollow", "golden", "frozen", "quiet", "distant",
         "scarlet", "misty", "rusty", "silver", "gentle", "bitter")
KEY_B = ("lighthouse", "orchard", "harbor", "glacier", "meadow", "canyon", "lantern", "falcon", "river",
         "cathedral", "compass", "willow", "summit", "village", "garden", "bridge")
WORDS = ("marmalade", "tambourine", "pelican", "saffron", "walrus", "juniper", "porcupine", "lavender", "mongoose",
         "cinnamon", "armadillo", "tangerine", "flamingo", "nutmeg", "chameleon", "apricot", "toucan", "paprika")


def conditions():
    """name -> (record fields, factory() -> fresh press or None). Order is the record order."""
    out = {"none": ({"method": "none", "compression_ratio": 0.0}, lambda: None)}
    for r in SNAP_RATIOS:
        out[f"snapkv_{r}"] = ({"method": "snapkv", "compression_ratio": r, "window_size": 64},
                              lambda r=r: SnapKVPress(compression_ratio=r, window_size=64))
    for r in CHUNK_RATIOS:
        out[f"chunkkv_c{CHUNK}_{r}"] = (
            {"method": "chunkkv", "compression_ratio": r, "chunk_length": CHUNK, "inner": "SnapKVPress"},
            lambda r=r: ChunkKVPress(press=SnapKVPress(compression_ratio=r, window_size=64), chunk_length=CHUNK))
        for rescue in (RESCUE, CONTROL_RESCUE):
            out[f"eg_chunkkv_c{CHUNK}_r{rescue}_{r}"] = (
                {"method": "eg-chunkkv", "compression_ratio": r, "chunk_length": CHUNK, "rescue_size": rescue,
                 "inner": "SnapKVPress", "role": "mechanism-control" if rescue == CONTROL_RESCUE else "claim"},
                lambda r=r, rescue=rescue: EntropyGatedChunkKVPress(
                    press=SnapKVPress(compression_ratio=r, window_size=64), chunk_length=CHUNK,
                    low_entropy_chunk_length=rescue))
    for pooling in ("entropy", "mean"):
        out[f"page_entrokv_{pooling}_0.8"] = (
            {"method": "page-entrokv", "pooling": pooling, **PAGE, "window_size": 64},
            lambda pooling=pooling: PageEntroKVPress(pooling=pooling, window_size=64, **PAGE))
    # The authors' released pooler (PageEntro-KV core.py) as kvaudit's `released` preset: tau 0.5, raw pooled rows,
    # max page score, a page count K = floor((1 - rho) T / P) by top-k, sinks compete (docs/page-entrokv.md, 8).
    # Mean pooling under the same preset is the paper's own baseline for its "100 % vs 0 %" needle claim.
    for pooling, name in (("entropy", "page_entrokv_released_0.8"), ("mean", "page_entrokv_released_mean_0.8")):
        out[name] = ({"method": "page-entrokv", "pooling": pooling, "preset": "released", **PAGE, "window_size": 64},
                     lambda pooling=pooling: PageEntroKVPress(preset="released", pooling=pooling, window_size=64, **PAGE))
    return out


# ----------------------------------------------------------------------------------------------- haystacks
def filler_paragraphs():
    text = open(FILLER, encoding="utf-8").read()
    paras = [p for p in text.split("\n\n") if p.strip()]
    if not paras:
        raise SystemExit(f"needle_study: {FILLER}: no paragraphs")
    return paras


def haystack_spec(seed: int, index: int):
    """The index-th haystack's design, deterministic in (seed, index): value kind cycles through VALUE_KINDS,
    depth steps through DEPTHS with stride 5 (coprime with 9 and 4: all 36 pairs before a repeat)."""
    rng = random.Random(f"kvaudit-needle:{seed}:{index}")
    kind = VALUE_KINDS[index % len(VALUE_KINDS)]
    depth = DEPTHS[(index * 5) % len(DEPTHS)]
    key = f"{rng.choice(KEY_A)}-{rng.choice(KEY_B)}"
    if kind == "word":
        value = rng.choice(WORDS)
        sentence = f"The special magic word for {key} is: {value}."
        question = f"What is the special magic word for {key} mentioned in the provided text?"
        prefix = f"The special magic word for {key} mentioned in the provided text is"
    else:
        n = int(kind[len("digits"):])
        value = str(rng.randint(10 ** (n - 1), 10 ** n - 1))
        sentence = f"One of the special magic numbers for {key} is: {value}."
        question = f"What is the special magic number for {key} mentioned in the provided text?"
        prefix = f"The special magic number for {key} mentioned in the provided text is"
    return {"index": index, "seed": seed, "value_kind": kind, "depth": depth, "key": key, "value": value,
            "needle": sentence, "question": question, "answer_prefix": prefix, "rng": rng}


def build_document(tokenizer, spec, paragraphs, target_tokens):
    """Filler paragraphs in a seeded order until the document reaches target_tokens, the needle inserted at the
    paragraph boundary nearest to `depth` of the characters."""
    rng = spec.pop("rng")
    order = list(range(len(paragraphs)))
    rng.shuffle(order)
    chosen, count, k = [], 0, 0
    while count < target_tokens:
        p = paragraphs[order[k % len(order)]]
        k += 1
        if k > len(order):
            raise SystemExit(f"needle_study: {FILLER}: filler holds fewer than {target_tokens} tokens")
        count += len(tokenizer.encode("\n\n" + p, add_special_tokens=False))
        chosen.append(p)
    total, run, out, placed = sum(len(p) for p in chosen), 0, [], False
    for p in chosen:
        if not placed and run + len(p) / 2 >= spec["depth"] * total:
            out.append(spec["needle"])
            placed = True
        out.append(p)
        run += len(p)
    if not placed:
        out.append(spec["needle"])
    doc = "\n\n".join(out)
    for what in (spec["value"], spec["key"]):
        pattern = r"(?<!\d)" + what + r"(?!\d)" if what.isdigit() else r"\b" + re.escape(what) + r"\b"
        if len(re.findall(pattern, doc, flags=re.I)) != 1:
            raise SystemExit(f"needle_study: haystack {spec['index']}: {what!r} must occur exactly once")
    return doc


def mode_inputs(spec, doc, mode):
    """(context, question) as given to the pipeline; the same text in both modes."""
    if mode == "question-agnostic":
        return doc, "\n\n" + spec["question"]
    return doc + "\n\n" + spec["question"], ""


def templated_context(tokenizer, context):
    """The context string kvpress's preprocess tokenizes (same code path, to map characters to tokens)."""
    if tokenizer.chat_template is None:
        return getattr(tokenizer, "bos_token", "") + context
    separator = "#" * (len(context) + 10)
    text = tokenizer.apply_chat_template([{"role": "user", "content": context + separator}],
                                         add_generation_prompt=True, tokenize=False, enable_thinking=False)
    return text.split(separator)[0]


def value_span(tokenizer, text, ids, value, needle):
    """Token span [begin, end) covering the value's characters inside the needle sentence."""
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    if enc["input_ids"] != ids:
        raise SystemExit("needle_study: offsets tokenization differs from kvpress preprocess's")
    start = text.index(needle) + needle.index(value)
    end = start + len(value)
    cover = [i for i, (a, b) in enumerate(enc["offset_mapping"]) if a < end and b > start]
    assert cover == list(range(cover[0], cover[-1] + 1)), "value tokens must be contiguous"
    assert value in tokenizer.decode(ids[cover[0]:cover[-1] + 1]), "value tokens must decode to the value"
    return cover[0], cover[-1] + 1


def retrieved(answer, value):
    pattern = r"(?<!\d)" + value + r"(?!\d)" if value.isdigit() else r"\b" + re.escape(value) + r"\b"
    return re.search(pattern, answer, flags=re.I) is not None


# ------------------------------------------------------------------------------------ shared prefill
def kept_positions(full_keys, comp_keys, masked):
    """Per KV head, the positions of the full cache whose key rows the compressed cache holds (matched by a
    projection, then verified row for row: exact). `masked`: (heads, slots) excluded (kvpress masks them)."""
    heads = full_keys.shape[1]
    # Exact row fingerprints: the float32 bit patterns as integers, weighted by small integers (no rounding,
    # no overflow: |bits| < 2^31, weights < 2^20, d <= 256), so equal rows give equal fingerprints.
    weights = torch.arange(1, full_keys.shape[-1] + 1, dtype=torch.int64) * 7919 % (1 << 20)
    out = []
    for h in range(heads):
        f = (full_keys[0, h].float().contiguous().view(torch.int32).long() * weights).sum(-1)
        c = (comp_keys[0, h].float().contiguous().view(torch.int32).long() * weights).sum(-1)
        order = torch.argsort(f)
        pos = order[torch.searchsorted(f[order], c).clamp(max=len(f) - 1)]
        if not torch.equal(full_keys[0, h, pos], comp_keys[0, h]):
            raise RuntimeError("compressed cache holds a key row that is not a row of the full cache")
        keep = torch.ones(len(pos), dtype=torch.bool)
        for hh, slot in masked:
            if hh == h:
                keep[slot] = False
        out.append(pos[keep])
    return out


def shared_prefill(model, context_ids, presses):
    """One prefill, every press's hooks. Returns (full cache layers, {name: (layers, masked per layer)})."""
    cache = DynamicCache()
    pristine, stored = {}, {name: ({}, {}) for name in presses}
    modules = {}
    originals = {}

    def isolate(name, press):
        original = press.forward_hook

        def hook(module, input, kwargs, output):
            layer = cache.layers[module.layer_idx]
            keys, values = pristine.setdefault(module.layer_idx, (layer.keys, layer.values))
            modules[module.layer_idx] = module
            layer.keys, layer.values = keys, values
            module.masked_key_indices = None
            out = original(module, input, kwargs, output)
            stored[name][0][module.layer_idx] = (layer.keys, layer.values)
            stored[name][1][module.layer_idx] = getattr(module, "masked_key_indices", None)
            module.masked_key_indices = None
            layer.keys, layer.values = keys, values
            return out

        press.forward_hook = hook
        originals[name] = press

    for name, press in presses.items():
        isolate(name, press)
    try:
        with torch.no_grad(), contextlib.ExitStack() as stack:
            for press in presses.values():
                stack.enter_context(press(model))
            model.model(input_ids=context_ids, past_key_values=cache)  # the pipeline's prefill call
    finally:
        for press in presses.values():
            del press.forward_hook
    n_layers = len(cache.layers)
    full = {l: (cache.layers[l].keys, cache.layers[l].values) for l in range(n_layers)}
    for name, (layers, _) in stored.items():
        assert sorted(layers) == list(range(n_layers)), f"{name}: hooks ran on {len(layers)} of {n_layers} layers"
    return full, stored, modules


def make_cache(layers):
    cache = DynamicCache()
    for l in range(len(layers)):
        k, v = layers[l]
        cache.update(k, v, l)
    return cache


@contextlib.contextmanager
def masking(modules, masked):
    """Installs a press's head-wise masked slots (kvpress attention_patch) for decoding, then removes them."""
    try:
        for l, m in modules.items():
            m.masked_key_indices = masked.get(l) if masked else None
        yield
    finally:
        for m in modules.values():
            m.masked_key_indices = None


class IdCapture:
    """Records the ids generate_answer decodes (instance wrapper on the tokenizer's decode; class untouched)."""

    def __init__(self, tokenizer):
        self.tokenizer, self.ids = tokenizer, None
        self.original = tokenizer.decode

    def __enter__(self):
        def decode(ids, *a, **kw):
            self.ids = [int(x) for x in ids]
            return self.original(ids, *a, **kw)
        self.tokenizer.decode = decode
        return self

    def __exit__(self, *exc):
        del self.tokenizer.decode


def teacher_forced(model, cache, question_ids, value_ids, context_length):
    """Mean log-prob and argmax agreement of the value tokens given the question (and answer prefix)."""
    ids = torch.cat([question_ids, torch.tensor([value_ids])], dim=1)
    pos = torch.arange(context_length, context_length + ids.shape[1]).unsqueeze(0)
    with torch.no_grad():
        logits = model(input_ids=ids, past_key_values=cache, position_ids=pos).logits[0].float()
    q = question_ids.shape[1]
    lp = torch.log_softmax(logits[q - 1:q - 1 + len(value_ids)], dim=-1)
    target = torch.tensor(value_ids)
    token_lp = lp[torch.arange(len(value_ids)), target]
    argmax = lp.argmax(dim=-1) == target
    return float(token_lp.mean()), bool(argmax.all()), float(argmax.float().mean())


def run_haystack_mode(pipe, spec, doc, mode, max_new_tokens, names=None, log=print):
    """All conditions of one (haystack, mode) from one shared prefill. Returns the run records."""
    model, tok = pipe.model, pipe.tokenizer
    conds = conditions()
    names = names or list(conds)
    context, question = mode_inputs(spec, doc, mode)
    inputs = pipe.preprocess(context, [question], spec["answer_prefix"], max_context_length=10 ** 10)
    context_ids, question_ids = inputs["context_ids"], inputs["questions_ids"][0]
    text = templated_context(tok, context)
    ids = context_ids[0].tolist()
    vb, ve = value_span(tok, text, ids, spec["value"], spec["needle"])
    # The value as the answer continues the prefix: " <value>" tokenized after the prefix.
    prefix_ids = tok.encode(spec["answer_prefix"], add_special_tokens=False)
    both = tok.encode(spec["answer_prefix"] + " " + spec["value"], add_special_tokens=False)
    assert both[:len(prefix_ids)] == prefix_ids, "answer prefix tokenizes differently before the value"
    answer_value_ids = both[len(prefix_ids):]
    presses = {n: conds[n][1]() for n in names if n != "none"}
    t0 = time.time()
    full, stored, modules = shared_prefill(model, context_ids, presses)
    prefill_s = time.time() - t0
    context_length = context_ids.shape[1]
    records = []
    for name in names:
        fields = conds[name][0]
        layers, masked = (full, {}) if name == "none" else stored[name]
        lengths = sorted({int(layers[l][0].shape[2]) for l in range(len(layers))})
        t1 = time.time()
        error = None
        try:
            with torch.no_grad(), masking(modules, masked), IdCapture(tok) as cap:
                answer = pipe.generate_answer(question_ids=question_ids, cache=make_cache(layers),
                                              context_length=context_length, max_new_tokens=max_new_tokens)
        except RuntimeError as e:
            # kvpress 0.5.5's pipeline fails the same way (one cache length per model, layers of different
            # lengths): recorded as an error, never as a retrieval failure.
            error = f"{type(e).__name__}: {e}"
            answer, cap.ids = None, None
        decode_s = time.time() - t1
        t2 = time.time()
        tf_lp = tf_all = tf_frac = None
        if error is None:
            with masking(modules, masked):
                tf_lp, tf_all, tf_frac = teacher_forced(model, make_cache(layers), question_ids, answer_value_ids,
                                                        context_length)
        tf_s = time.time() - t2
        per_layer = []
        kept_tokens = []
        for l in range(len(full)):
            mk = masked.get(l)
            slots = list(zip(mk[1].tolist(), mk[2].tolist())) if mk is not None else []
            heads = kept_positions(full[l][0], layers[l][0], slots)
            kept_tokens.append(min(len(h) for h in heads))
            per_layer.append(round(sum(int(((h >= vb) & (h < ve)).sum()) for h in heads) / (len(heads) * (ve - vb)), 4))
        rec = {"schema": SCHEMA, "kind": "run", "haystack": spec["index"], "mode": mode, "condition": name,
               **fields, "value_kind": spec["value_kind"], "value": spec["value"], "depth": spec["depth"],
               "context_tokens": context_length, "question_tokens": int(question_ids.shape[1]),
               "value_span": [vb, ve], "value_tokens": ve - vb, "answer": answer, "answer_ids": cap.ids,
               "error": error, "layer_cache_lengths": lengths,
               "retrieved": None if error else retrieved(answer, spec["value"]), "tf_value_ids": answer_value_ids,
               "tf_mean_logprob": None if error else round(tf_lp, 6), "tf_argmax_match": tf_all,
               "tf_argmax_fraction": None if error else round(tf_frac, 4),
               "value_kept_per_layer": per_layer, "value_kept_mean": round(sum(per_layer) / len(per_layer), 4),
               "kept_tokens_min_per_layer": min(kept_tokens),
               "wall_s": {"shared_prefill": round(prefill_s, 2), "decode": round(decode_s, 2),
                          "teacher_forced": round(tf_s, 2)}}
        records.append(rec)
        log(f"  [{spec['index']} {mode} {name}] {answer!r} retrieved={rec['retrieved']} tf_lp={tf_lp} "
            f"value kept {rec['value_kept_mean']:.2f} ({decode_s:.1f}s+{tf_s:.1f}s)")
    return records, prefill_s


# ----------------------------------------------------------------------------------------- provenance
def sha256_file(path):
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def package_versions():
    from importlib.metadata import version

    out = {"python": platform.python_version()}
    for p in ["torch", "transformers", "kvpress", "gguf", "tokenizers", "numpy", "kvaudit"]:
        try:
            out[p] = version(p)
        except Exception:  # noqa: BLE001
            out[p] = None
    return out


def load(gguf, model_id):
    folder, name = os.path.split(os.path.abspath(gguf))
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32,
                                                 attn_implementation="sdpa")
    model.eval()
    cfg = model.config
    info = {"id": model_id, "gguf_file": name, "gguf_sha256": sha256_file(gguf),
            "weights": "GGUF tensors dequantized to float32 by transformers", "architecture": type(model).__name__,
            "layers": cfg.num_hidden_layers, "q_heads": cfg.num_attention_heads, "kv_heads": cfg.num_key_value_heads,
            "attn_implementation": cfg._attn_implementation, "compute_dtype": "float32"}
    return KVPressTextGenerationPipeline(model=model, tokenizer=tok), info


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--model-id", required=True)
    ap.add_argument("--out", required=True, help="folder for records.jsonl and study.json")
    ap.add_argument("--haystacks", type=int, default=60, help="haystacks planned")
    ap.add_argument("--seed", type=int, default=28)
    ap.add_argument("--tokens", type=int, default=3900, help="filler tokens per haystack document")
    ap.add_argument("--max-new-tokens", type=int, default=12)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--deadline", default=None, help="UTC HH:MM: start no haystack expected to end after it")
    ap.add_argument("--conditions", default=None, help="comma-separated subset of the conditions (default all)")
    ap.add_argument("--note", default="")
    ap.add_argument("--resume", action="store_true",
                    help="continue a study cut by its deadline: same model, seed, tokens and conditions; "
                         "starts at the first haystack not completed (a partial haystack's lines are dropped)")
    ap.add_argument("--add-conditions", default=None,
                    help="comma-separated conditions to add to a complete study at --out: run on each of its completed "
                         "haystacks, kept in records.adding.jsonl (resumable) until every haystack has them, then merged "
                         "into records.jsonl in record order")
    ap.add_argument("--add-range", default=None,
                    help="with --add-conditions: START:END, the haystacks this invocation runs (several may run at once "
                         "on disjoint ranges; the last to finish merges)")
    ap.add_argument("--replay-check", default="page_entrokv_entropy_0.8",
                    help="with --add-conditions: a recorded condition replayed on the first haystack, which must "
                         "reproduce its records (answer ids, retention, teacher-forced log-prob) before any is added")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    if a.add_conditions:
        return add_conditions(a)
    names = a.conditions.split(",") if a.conditions else list(conditions())
    unknown = [n for n in names if n not in conditions()]
    if unknown:
        raise SystemExit(f"needle_study: --conditions: unknown condition {unknown[0]!r}")
    os.makedirs(a.out, exist_ok=True)
    records_path = os.path.join(a.out, "records.jsonl")
    study_path = os.path.join(a.out, "study.json")
    if os.path.exists(records_path) and not a.resume:
        raise SystemExit(f"needle_study: {records_path}: exists; move it away to regenerate (or --resume)")
    if a.resume and not os.path.exists(study_path):
        raise SystemExit(f"needle_study: --resume: {study_path} not found")
    deadline = parse_deadline(a.deadline)
    started = dt.datetime.now(dt.timezone.utc)
    log = lambda s: print(s, flush=True)  # noqa: E731
    t0 = time.time()
    pipe, info = load(a.gguf, a.model_id)
    log(f"loaded {a.model_id} in {time.time() - t0:.1f}s")
    filler = filler_paragraphs()
    filler_prov = json.load(open(FILLER_PROVENANCE, encoding="utf-8"))
    if filler_prov["sha256"] != sha256_file(FILLER):
        raise SystemExit(f"needle_study: {FILLER}: sha256 differs from {FILLER_PROVENANCE}")
    study = {"schema": SCHEMA, "model": info, "packages": package_versions(), "command": shlex.join(sys.argv),
             "threads": a.threads, "platform": platform.platform(), "seed": a.seed,
             "haystack_design": {"filler_tokens": a.tokens, "value_kinds": VALUE_KINDS, "depths": DEPTHS,
                                 "kind_rule": "index % 4", "depth_rule": "DEPTHS[(index * 5) % 9]",
                                 "rng": "random.Random('kvaudit-needle:<seed>:<index>')"},
             "filler": {"file": os.path.relpath(FILLER, os.path.dirname(os.path.dirname(HERE))),
                        "sha256": filler_prov["sha256"], "license": filler_prov["license"],
                        "source": filler_prov["source"], "dedication": filler_prov["dedication_required_in_header"]},
             "max_new_tokens": a.max_new_tokens, "conditions": {n: conditions()[n][0] for n in names},
             "modes": MODES, "planned_haystacks": a.haystacks, "deadline_utc": a.deadline, "note": a.note,
             "started_utc": started.isoformat(timespec="seconds"), "completed_haystacks": 0, "status": "running",
             "protocol": "stand-in: our seeded needle protocol on stand-in models, not the seeds' unpublished one"}

    def write_study():
        tmp = study_path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(study, f, indent=1)
            f.write("\n")
        os.replace(tmp, study_path)

    first = 0
    per_haystack = []
    if a.resume:
        prev = json.load(open(study_path, encoding="utf-8"))
        require_same_design(prev, a, study_path, "--resume")
        require_same_model(prev, info, study_path, "--resume")
        if list(prev["conditions"]) != names:
            raise SystemExit(f"needle_study: --resume: {study_path}: field 'conditions' differs")
        first = prev["completed_haystacks"]
        lines = [l for l in open(records_path, encoding="utf-8") if json.loads(l)["haystack"] < first]
        with open(records_path, "w", encoding="utf-8") as f:
            f.writelines(lines)
        per_haystack = list(prev.get("haystack_wall_s", []))
        study["completed_haystacks"] = first
        study["haystack_wall_s"] = per_haystack[:]
        study["segments"] = prev.get("segments", [{"command": prev["command"], "started_utc": prev["started_utc"],
                                                   "finished_utc": prev.get("finished_utc"),
                                                   "stopped": prev.get("stopped"), "haystacks": [0, first]}])
        study["started_utc"] = prev["started_utc"]
        log(f"resuming at haystack {first}")
    write_study()
    segment_start = first
    for i in range(first, a.haystacks):
        stop = haystack_deadline_passed(deadline, per_haystack, i, a.haystacks)
        if stop:
            study["stopped"] = stop
            log(stop)
            break
        th = time.time()
        spec = haystack_spec(a.seed, i)
        doc = build_document(pipe.tokenizer, spec, filler, a.tokens)
        log(f"haystack {i}: {spec['value_kind']} value {spec['value']} depth {spec['depth']}")
        added = []
        for mode in MODES:
            records, prefill_s = run_haystack_mode(pipe, spec, doc, mode, a.max_new_tokens, names, log)
            with open(records_path, "a", encoding="utf-8") as f:
                for r in records:
                    f.write(json.dumps(r) + "\n")
            log(f"  [{i} {mode}] shared prefill {prefill_s:.1f}s")
        per_haystack.append(time.time() - th)
        study["completed_haystacks"] = i + 1
        study["haystack_wall_s"] = [round(x, 1) for x in per_haystack]
        write_study()
        log(f"haystack {i} done in {per_haystack[-1]:.0f}s")
    study["status"] = "complete"
    study["finished_utc"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    if a.resume:
        study["segments"].append({"command": shlex.join(sys.argv), "started_utc": started.isoformat(timespec="seconds"),
                                  "finished_utc": study["finished_utc"], "stopped": study.get("stopped"),
                                  "haystacks": [segment_start, study["completed_haystacks"]]})
    study["records_sha256"] = sha256_file(records_path) if os.path.exists(records_path) else None
    write_study()


def require_same_design(study, a, study_path, flag):
    """The recorded study ran as this invocation would: same seed, decoding length, threads and filler length."""
    for key, recorded, mine in (("seed", study["seed"], a.seed), ("max_new_tokens", study["max_new_tokens"], a.max_new_tokens),
                                ("threads", study["threads"], a.threads),
                                ("haystack_design.filler_tokens", study["haystack_design"]["filler_tokens"], a.tokens)):
        if recorded != mine:
            raise SystemExit(f"needle_study: {flag}: {study_path}: field {key!r} is {recorded!r}, this run has {mine!r}")


def require_same_model(study, info, study_path, flag):
    if study["model"]["gguf_sha256"] != info["gguf_sha256"]:
        raise SystemExit(f"needle_study: {flag}: {study_path}: field 'model.gguf_sha256' is another model")


def haystack_deadline_passed(deadline, per_haystack, i, planned):
    """The stop message when the next haystack (expected: the mean of the last three) would end after deadline."""
    if not deadline or not per_haystack:
        return None
    expected = sum(per_haystack[-3:]) / len(per_haystack[-3:])  # the recent haystacks: load changes
    if dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=expected) <= deadline:
        return None
    return (f"time budget: {i} of {planned} haystacks done; the next one (about {expected:.0f}s) would end after the "
            f"deadline {deadline.strftime('%H:%M')} UTC")


def parse_deadline(text):
    if not text:
        return None
    h, m = map(int, text.split(":"))
    now = dt.datetime.now(dt.timezone.utc)
    deadline = now.replace(hour=h, minute=m, second=0, microsecond=0)
    return deadline if deadline > now else deadline + dt.timedelta(days=1)  # a deadline past midnight


@contextlib.contextmanager
def locked(path):
    """An exclusive lock on path + ".lock": --add-range invocations share the records.adding files."""
    with open(path + ".lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


REPLAYED = ("answer_ids", "retrieved", "value_kept_per_layer", "kept_tokens_min_per_layer", "layer_cache_lengths",
            "tf_mean_logprob")


def add_conditions(a):
    """--add-conditions: the new conditions on every completed haystack of the study at a.out (see --help)."""
    names = a.add_conditions.split(",")
    records_path = os.path.join(a.out, "records.jsonl")
    study_path = os.path.join(a.out, "study.json")
    adding_path = os.path.join(a.out, "records.adding.jsonl")
    replay_path = os.path.join(a.out, "records.adding.replays.jsonl")  # the replay checks that passed, for study.json
    study = json.load(open(study_path, encoding="utf-8"))
    for n in names:
        if n not in conditions():
            raise SystemExit(f"needle_study: --add-conditions: unknown condition {n!r}")
        if n in study["conditions"]:
            raise SystemExit(f"needle_study: --add-conditions: {study_path}: field 'conditions' already has {n!r}")
    if study["status"] != "complete":
        raise SystemExit(f"needle_study: --add-conditions: {study_path}: field 'status' is {study['status']!r}, not 'complete'")
    require_same_design(study, a, study_path, "--add-conditions")
    if a.replay_check not in study["conditions"]:
        raise SystemExit(f"needle_study: --replay-check: {a.replay_check!r} is not one of the study's conditions")
    log = lambda s: print(s, flush=True)  # noqa: E731
    started = dt.datetime.now(dt.timezone.utc)
    t0 = time.time()
    pipe, info = load(a.gguf, a.model_id)
    require_same_model(study, info, study_path, "--add-conditions")
    log(f"loaded {a.model_id} in {time.time() - t0:.1f}s")
    recorded = [json.loads(l) for l in open(records_path, encoding="utf-8")]
    n = study["completed_haystacks"]

    def completed_adding():
        """The added records of the haystacks that have all of them (a haystack's lines are appended at once)."""
        adding = [json.loads(l) for l in open(adding_path, encoding="utf-8")] if os.path.exists(adding_path) else []
        done = {h for h in {r["haystack"] for r in adding} if sum(r["haystack"] == h for r in adding) == len(MODES) * len(names)}
        return [r for r in adding if r["haystack"] in done], done

    lo, hi = map(int, a.add_range.split(":")) if a.add_range else (0, n)
    if not 0 <= lo < hi <= n:
        raise SystemExit(f"needle_study: --add-range: expected START:END within 0:{n}, got {a.add_range!r}")
    with locked(adding_path):  # drops what a cut invocation left of a haystack (every other haystack is whole)
        adding, done = completed_adding()
        with open(adding_path, "w", encoding="utf-8") as f:
            f.write("".join(json.dumps(r) + "\n" for r in adding))
    filler = filler_paragraphs()
    deadline = parse_deadline(a.deadline)
    per_haystack = []
    for i in range(lo, hi):
        if i in done:
            continue
        stop = haystack_deadline_passed(deadline, per_haystack, i, n)
        if stop:
            log(stop)
            raise SystemExit(f"needle_study: --add-conditions: stopped; rerun the same command to continue ({stop})")
        th = time.time()
        spec = haystack_spec(a.seed, i)
        doc = build_document(pipe.tokenizer, spec, filler, a.tokens)
        replay = [a.replay_check] if not per_haystack else []  # every invocation's first haystack
        log(f"haystack {i}: {spec['value_kind']} value {spec['value']} depth {spec['depth']}")
        added = []
        for mode in MODES:
            records, _ = run_haystack_mode(pipe, spec, doc, mode, a.max_new_tokens, names + replay, log)
            for r in records[len(names):]:
                old = next(x for x in recorded if (x["haystack"], x["mode"], x["condition"]) == (i, mode, r["condition"]))
                for field in REPLAYED:
                    if r[field] != old[field]:
                        raise SystemExit(f"needle_study: --replay-check: {records_path}: haystack {i} {mode} "
                                         f"{r['condition']}: field {field!r} was {old[field]!r}, replayed {r[field]!r}")
                log(f"  [{i} {mode}] replay of {r['condition']} reproduces its record ({', '.join(REPLAYED)})")
                with locked(adding_path), open(replay_path, "a", encoding="utf-8") as f:
                    f.write(json.dumps({"haystack": i, "mode": mode, "condition": r["condition"], "reproduced": REPLAYED,
                                        "utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}) + "\n")
            added += records[:len(names)]
        with locked(adding_path), open(adding_path, "a", encoding="utf-8") as f:
            f.write("".join(json.dumps(r) + "\n" for r in added))
        per_haystack.append(time.time() - th)
        log(f"haystack {i} done in {per_haystack[-1]:.0f}s")
    with locked(adding_path):
        adding, done = completed_adding()
        missing = sorted(set(range(n)) - done)
        if missing:  # another invocation (--add-range) still runs them, or a cut one left them
            log(f"haystacks {lo}-{hi - 1} added; {len(missing)} haystacks still lack them (first {missing[0]}): not merged yet")
            return
        merge_added(a, study, names, recorded, adding, started, n)


def merge_added(a, study, names, recorded, adding, started, n):
    """Every haystack has the new conditions: merge in record order (haystack, mode, condition) and register them."""
    records_path = os.path.join(a.out, "records.jsonl")
    study_path = os.path.join(a.out, "study.json")
    adding_path = os.path.join(a.out, "records.adding.jsonl")
    replay_path = os.path.join(a.out, "records.adding.replays.jsonl")
    order = list(study["conditions"]) + names
    merged = sorted(recorded + adding, key=lambda r: (r["haystack"], MODES.index(r["mode"]), order.index(r["condition"])))
    tmp = records_path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(r) + "\n" for r in merged)
    os.replace(tmp, records_path)
    finished = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    for n_ in names:
        study["conditions"][n_] = conditions()[n_][0]
    study.setdefault("segments", [{"command": study["command"], "started_utc": study["started_utc"],
                                   "finished_utc": study.get("finished_utc"), "stopped": study.get("stopped"),
                                   "haystacks": [0, n]}])
    study["segments"].append({"command": shlex.join(sys.argv), "added_conditions": names,
                              "replay_checks": [json.loads(l) for l in open(replay_path, encoding="utf-8")],
                              "packages": package_versions(),
                              "started_utc": started.isoformat(timespec="seconds"), "finished_utc": finished,
                              "haystacks": [0, n]})
    study["records_sha256"] = sha256_file(records_path)
    tmp = study_path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(study, f, indent=1)
        f.write("\n")
    os.replace(tmp, study_path)
    os.remove(adding_path)
    os.remove(replay_path)
    os.remove(adding_path + ".lock")
    print(f"added {names} on {n} haystacks", flush=True)


if __name__ == "__main__":
    main()
