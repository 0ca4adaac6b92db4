// Real-model attention dumps: data/manifest.json + one safetensors file per prompt (docs/dump-format.md).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/types.h"

namespace kvaudit::io {

// A tensor read from a dump. Floating dtypes (F32, F16, BF16) are widened into `values`; integer dtypes
// (I32, I64) land in `integers`.
struct Tensor {
  std::vector<Index> shape;
  std::string dtype;
  std::vector<float> values;
  std::vector<Index> integers;
};

// Needle span [begin, end) in token positions, for needle-in-a-haystack prompts.
struct Needle {
  Index begin = 0;
  Index end = 0;
  std::optional<double> depth;     // schema 2: where it was inserted, as a fraction of the haystack
  std::optional<bool> retrieved;   // schema 2: the model's greedy answer contains the needle's value
};

struct PromptDump {
  std::string model;  // the model's short name: the last part of the manifest's model.id
  std::string name;   // manifest "name", e.g. "needle"
  std::string kind;   // "needle", "qa", "code", ...
  std::string dir;    // the data directory whose manifest lists it (what --data takes)
  std::string file;   // path of the safetensors file
  Index tokens = 0, layers = 0, q_heads = 0, kv_heads = 0, window = 0;
  Index head_dim = 0;
  std::vector<Index> qkv_layers;  // layers with qkv.layer{L}.query/key/value tensors
  std::vector<Needle> needles;    // in text order; schema 1 has at most one
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> press_scores;  // press -> the scores.* tensor its inner scorer produced

  // "model/name": unique across the models of a data tree.
  std::string key() const { return model + "/" + name; }

  // The tensor called `name`; throws InputError(file, name, "missing") if absent.
  const Tensor& tensor(const std::string& name) const;
  // A 3-D floating tensor (layers, heads, T) as a ScoreTensor; throws InputError on wrong rank or dtype.
  ScoreTensor scores(const std::string& name) const;
  // The scores.* tensor that press `press`'s inner scorer ranked: its name (schema 1 dumps: always scores.snapkv),
  // and its row `layer` as (kv heads, T) HeadScores viewing this dump. Throws InputError if absent or no such layer.
  std::string ranked_scores_name(const std::string& press) const;
  HeadScores ranked_scores(const std::string& press, Index layer) const;
};

// A recorded kvpress selection tensor is named kept.<press>.cr<ratio>, e.g. kept.eg_chunkkv_c10_r4.cr0.85.
struct KeptName {
  std::string press;  // e.g. "chunkkv_c10"
  std::string ratio;  // the decimal text, e.g. "0.85"
};
// The parts of a kept.* tensor name; nullopt if `tensor_name` is not one.
std::optional<KeptName> parse_kept_name(const std::string& tensor_name);
// Row `layer` of a kept.* tensor: (layers, n) integer positions with their trailing -1 padding removed, in
// stored order, or (layers, ceil(T / 8)) U8 bitmask rows (bit t in byte t / 8, bit t % 8), in increasing order.
Positions kept_positions(const Tensor& kept, Index layer);

// Loads every prompt listed in `data_dir`/manifest.json, validating the manifest, each file's sha256,
// and each tensor's shape against the manifest's sizes. Throws InputError naming file and field.
std::vector<PromptDump> load_dumps(const std::string& data_dir);

// The model directories of a data tree: `root` itself when it holds a manifest.json, then every direct
// subdirectory that holds one, in name order.
std::vector<std::string> model_dirs(const std::string& root);
// load_dumps over model_dirs(root), concatenated: grouped by model, then in each manifest's prompt order.
// Throws InputError as load_dumps does (a tree without any manifest.json: the root's is reported missing), and
// when two models share a short name.
std::vector<PromptDump> load_all_dumps(const std::string& root);

}  // namespace kvaudit::io
