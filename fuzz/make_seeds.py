#!/usr/bin/env python3
"""Regenerates fuzz/corpus/<harness>/ seeds: small slices of the shipped dumps (data/*.safetensors) plus
hand-made corner cases. Deterministic (fixed RNG seed); stdlib only. Run from the repo root:
    python3 fuzz/make_seeds.py
Every seed stays under 8 KiB so libFuzzer's -max_len never truncates it and the short CTest run stays fast."""
import json
import os
import random
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "fuzz", "corpus")
rng = random.Random(20241129)


def put(harness, name, data):
    d = os.path.join(CORPUS, harness)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    return header, raw[8 + n:]


def dump_slices():
    """(name, dtype, shape, bytes) slices of real tensors: a few tokens of layer 0 / 15, one kept row."""
    out = []
    for path in sorted(os.listdir(os.path.join(ROOT, "data"))):
        if not path.endswith(".safetensors"):
            continue
        header, data = read_safetensors(os.path.join(ROOT, "data", path))
        prompt = path[:-len(".safetensors")]
        for name, e in header.items():
            if name == "__metadata__":
                continue
            b, _ = e["data_offsets"]
            width = {"F32": 4, "F16": 2, "BF16": 2, "I32": 4, "I64": 8}[e["dtype"]]
            shape = e["shape"]
            if name.startswith("scores.") or name.startswith("attention."):
                layers, heads, tokens = shape
                take = 48
                for layer in (0, layers // 2):
                    rows = b"".join(data[b + ((layer * heads + h) * tokens) * width:
                                         b + ((layer * heads + h) * tokens + take) * width] for h in range(heads))
                    out.append((f"{prompt}.{name}.l{layer}", e["dtype"], [heads, take], rows))
            elif name.startswith("kept.") and name.endswith("cr0.9"):
                n = shape[1]
                out.append((f"{prompt}.{name}.l0", e["dtype"], [n], data[b:b + n * width]))
    return out


def npy_bytes(descr, shape, payload, version=1, header=None):
    if header is None:
        dims = ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "")
        header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (descr, dims)
    h = header.encode()
    pre = 10 if version == 1 else 12
    h += b" " * ((64 - (pre + len(h) + 1) % 64) % 64) + b"\n"
    length = struct.pack("<H", len(h)) if version == 1 else struct.pack("<I", len(h))
    return b"\x93NUMPY" + bytes([version, 0]) + length + h + payload


def safetensors_bytes(tensors, metadata=None):
    header, offset, blob = {}, 0, b""
    if metadata:
        header["__metadata__"] = metadata
    for name in sorted(tensors):
        dtype, shape, data = tensors[name]
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blob += data
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + blob


def f16_to_f32(data):
    return struct.pack("<%df" % (len(data) // 2), *struct.unpack("<%de" % (len(data) // 2), data))


def main():
    slices = dump_slices()
    if not slices:
        sys.exit("no data/*.safetensors found: run from the repo root after the dumps exist")

    # ---- npy_fuzz: real slices in every dtype the reader takes, then corner cases --------------------------
    for name, dtype, shape, data in slices[:8]:
        descr = {"F32": "<f4", "F16": "<f2", "I64": "<i8"}[dtype]
        put("npy_fuzz", name + ".npy", npy_bytes(descr, shape, data))
        if dtype == "F16":
            put("npy_fuzz", name + ".v2.f4.npy", npy_bytes("<f4", shape, f16_to_f32(data), version=2))
    put("npy_fuzz", "f8.npy", npy_bytes("<f8", [3], struct.pack("<3d", 0.5, -0.0, 1e-310)))
    put("npy_fuzz", "i4.npy", npy_bytes("<i4", [2, 2], struct.pack("<4i", 1, -1, 2**31 - 1, -2**31)))
    put("npy_fuzz", "scalar.npy", npy_bytes("<f4", [], struct.pack("<f", 1.0), header="{'descr': '<f4', 'fortran_order': False, 'shape': (), }"))
    put("npy_fuzz", "empty.npy", npy_bytes("<f4", [0], b""))
    put("npy_fuzz", "zero_T.npy", npy_bytes("<f4", [2, 0], b""))
    put("npy_fuzz", "v3.npy", npy_bytes("<f4", [2], struct.pack("<2f", 1, 2), version=3))
    put("npy_fuzz", "fortran.npy", npy_bytes("<f4", [1], b"\0\0\0\0", header="{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }"))
    put("npy_fuzz", "overflow.npy", npy_bytes("<f4", [4294967296, 4294967296, 4294967296], b""))
    put("npy_fuzz", "nan.npy", npy_bytes("<f4", [2], struct.pack("<2f", float("nan"), float("inf"))))

    # ---- safetensors_fuzz: small real files and a header-only truncation of a real one -------------------
    for i in range(0, len(slices) - 1, 2):
        a, b = slices[i], slices[i + 1]
        put("safetensors_fuzz", f"real{i:02d}.safetensors",
            safetensors_bytes({a[0]: a[1:], b[0]: b[1:]}, {"prompt": "slice"}))
    put("safetensors_fuzz", "empty_header.safetensors", safetensors_bytes({}))
    put("safetensors_fuzz", "zero_elems.safetensors", safetensors_bytes({"x": ("F32", [0, 3], b"")}))
    put("safetensors_fuzz", "bf16_i32.safetensors", safetensors_bytes({"b": ("BF16", [2], b"\x80\x3f\x00\xc0"), "i": ("I32", [1], b"\xff\xff\xff\xff")}))
    path = os.path.join(ROOT, "data", sorted(p for p in os.listdir(os.path.join(ROOT, "data")) if p.endswith(".safetensors"))[0])
    with open(path, "rb") as f:
        head = f.read(8)
        n = struct.unpack("<Q", head)[0]
        put("safetensors_fuzz", "real_header_only.safetensors", head + f.read(min(n, 7000)))

    # ---- conform_protocol_fuzz: request lines from real rows, responses in both forms --------------------
    for name, dtype, shape, data in slices:
        if dtype == "I64" or len(put.__dict__.setdefault("n", [])) >= 6:
            continue
        put.n.append(name)
        heads, tokens = shape
        vals = struct.unpack("<%d%s" % (heads * tokens, "f" if dtype == "F32" else "e"), data)
        rows = [[float(repr(v)) for v in vals[h * tokens:(h + 1) * tokens]] for h in range(heads)]
        method = "eg-chunkkv" if len(put.n) % 2 else "chunkkv"
        line = json.dumps({"id": 7, "method": method, "scores": rows, "compression_ratio": 0.9,
                           "chunk_length": 10 if method == "eg-chunkkv" else 20, "rescue_size": 4,
                           "entropy_threshold": None})
        put("conform_protocol_fuzz", f"request_{name}.json", line)
    put("conform_protocol_fuzz", "request_tau.json", '{"id": 7, "method": "eg-chunkkv", "scores": [[1, 2.5, 0, 3]], "compression_ratio": .5, "chunk_length": 2, "rescue_size": 1, "entropy_threshold": 0.25}')
    put("conform_protocol_fuzz", "response_shared.json", '{"id": 7, "kept": [0, 1, 5, 9]}')
    put("conform_protocol_fuzz", "response_per_head.json", '{"id": 7, "kept": [[0, 1], [2, 3], []]}')
    put("conform_protocol_fuzz", "response_error.json", '{"id": 7, "error": "assertion failed"}')
    put("conform_protocol_fuzz", "response_wrong_id.json", '{"id": 8, "kept": []}')
    # Page-EntroKV and partition lines (audit/conform/page_family.h, partition_family.h)
    put("conform_protocol_fuzz", "request_page.json", '{"id": 7, "method": "page-entrokv", "attention": [[0.25, 0.25, 0.0375, 0.0375, 0.0375, 0.0375, 0.35, 0], [0.25, 0.25, 0.15, 0.15, 0.05, 0.05, 0.05, 0.05], [0.25, 0.25, 0.15, 0.15, 0.05, 0.05, 0.05, 0.05]], "group_size": 3, "page_size": 2, "compression_ratio": "0.5", "sinks": 2, "pooling": "entropy", "page_score": "sum", "source": "sink-isolated", "sink_pages": "reserved", "greedy": "skip-misfits"}')
    put("conform_protocol_fuzz", "request_page_defaults.json", '{"id": 7, "attention": [[1, 0, 0, 0, 0.5, 0.5], [0, 0, 0, 0, 0, 1]], "group_size": 1, "page_size": 4, "compression_ratio": 0.75, "pooling": "mean", "greedy": "stop-at-first-misfit"}')
    put("conform_protocol_fuzz", "request_partition.json", '{"id": 7, "method": "partition", "probs": [0.5, 0.25, 0.125, 0.125], "entropy_budget": 1.5, "groups": 3}')
    put("conform_protocol_fuzz", "request_partition_free.json", '{"id": 7, "method": "partition", "probs": [0.3333333333333333, 0.6666666666666666], "entropy_budget": 0, "groups": null}')
    put("conform_protocol_fuzz", "response_pages.json", '{"id": 7, "kept_pages": [[0, 3], []], "kept_tokens": [[0, 1, 6, 7], []]}')
    put("conform_protocol_fuzz", "response_boundaries.json", '{"id": 7, "boundaries": [1, 3]}')
    put("conform_protocol_fuzz", "response_infeasible.json", '{"id": 7, "infeasible": true}')

    # ---- dump_manifest_fuzz: manifests for the harness's built-in small dump (@SHA@ = its checksum) -------
    prompt = {"name": "small", "kind": "needle", "file": "small.safetensors", "sha256": "@SHA@", "tokens": 8,
              "layers": 2, "q_heads": 2, "kv_heads": 1, "head_dim": 2, "window": 2, "qkv_layers": [0],
              "needle": {"begin": 2, "end": 5}, "tokens_file": "small.tokens.json", "tokens_file_sha256": "@TSHA@"}
    tensors = {"attention.window_mean": ("F32", [2, 2, 8]), "attention.last_query": ("F32", [2, 2, 8]),
               "scores.snapkv": ("F32", [2, 1, 8]), "scores.expected_attention": ("F32", [2, 1, 8]),
               "scores.tova": ("F32", [2, 1, 8]), "tokens.ids": ("I64", [8]), "qkv.layer0.query": ("F32", [2, 2, 2]),
               "qkv.layer0.key": ("F32", [1, 8, 2]), "qkv.layer0.value": ("F32", [1, 8, 2]),
               "kept.chunkkv_c2.cr0.5": ("I64", [2, 4])}
    prompt["tensors"] = {k: {"dtype": d, "shape": s} for k, (d, s) in tensors.items()}
    good = {"schema_version": 1, "model": "fuzz", "prompts": [prompt]}
    put("dump_manifest_fuzz", "good.json", json.dumps(good, indent=1))
    no_needle = json.loads(json.dumps(good))
    no_needle["prompts"][0]["needle"] = None
    del no_needle["prompts"][0]["tokens_file"], no_needle["prompts"][0]["tokens_file_sha256"]
    put("dump_manifest_fuzz", "no_needle.json", json.dumps(no_needle))
    twice = json.loads(json.dumps(good))
    twice["prompts"].append(json.loads(json.dumps(prompt)))
    put("dump_manifest_fuzz", "duplicate_prompt.json", json.dumps(twice))
    bad_sha = json.dumps(good).replace("@SHA@", "0" * 64)
    put("dump_manifest_fuzz", "bad_sha.json", bad_sha)
    put("dump_manifest_fuzz", "empty_prompts.json", '{"schema_version": 1, "prompts": []}')
    # Schema 2: needles as a list, each press's scores tensor, selections as U8 bitmask rows (small_bitmask).
    v2_prompt = json.loads(json.dumps(prompt))
    del v2_prompt["needle"]
    v2_prompt.update(file="small_bitmask.safetensors", sha256="@BSHA@",
                     needles=[{"begin": 2, "end": 3, "depth": 0.25, "retrieved": True},
                              {"begin": 5, "end": 7, "depth": 0.75, "retrieved": False}])
    v2_prompt["tensors"]["kept.chunkkv_c2.cr0.5"] = {"dtype": "U8", "shape": [2, 1]}
    v2 = {"schema_version": 2, "model": {"id": "fuzz/small"}, "kept_encoding": "bitmask",
          "presses": {"chunkkv_c2": {"class": "ChunkKVPress", "chunk_length": 2, "scores": "scores.snapkv"}},
          "prompts": [v2_prompt]}
    put("dump_manifest_fuzz", "good_v2_bitmask.json", json.dumps(v2, indent=1))
    positions_v2 = json.loads(json.dumps(v2))
    positions_v2["kept_encoding"] = "positions"  # U8 rows where positions are declared: rejected
    put("dump_manifest_fuzz", "v2_encoding_mismatch.json", json.dumps(positions_v2))
    overlap = json.loads(json.dumps(v2))
    overlap["prompts"][0]["needles"][1]["begin"] = 2  # needles out of order: rejected
    put("dump_manifest_fuzz", "v2_needles_overlap.json", json.dumps(overlap))
    tova = json.loads(json.dumps(v2))
    tova["presses"]["chunkkv_c2"]["scores"] = "scores.tova"
    put("dump_manifest_fuzz", "v2_press_scores_tova.json", json.dumps(tova))

    # ---- differential harnesses: FuzzedDataProvider bytes; real float32 bits feed the raw-bits regime ----
    f32 = [s for s in slices if s[1] == "F32"]
    for harness in ("chunk_select_fuzz", "page_select_fuzz", "partition_fuzz"):
        for i in range(12):
            n = rng.choice([16, 64, 256, 1024])
            put(harness, f"random{i:02d}", bytes(rng.getrandbits(8) for _ in range(n)))
        for name, _, shape, data in f32[:4]:
            put(harness, f"real_{name}", data[:1024] + bytes(rng.getrandbits(8) for _ in range(24)))


if __name__ == "__main__":
    main()
