// load_dumps: manifest validation, per-file sha256, and every tensor's dtype and shape against the manifest.
#include "core/io/dump.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/compression_ratio.h"
#include "core/error.h"
#include "core/io/json_fields.h"
#include "core/io/npy.h"
#include "core/io/safetensors.h"
#include "core/io/sha256.h"

namespace kvaudit::io {
namespace {

// Schema 1: one optional "needle", selections as I64 positions. Schema 2 adds "needles" (a list, replacing
// "needle"), "kept_encoding", each press's "scores" tensor, and U8 bitmask selections (docs/dump-format.md).
constexpr int kMinSchema = 1, kMaxSchema = 2;

using nlohmann::json;

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "file", "cannot open");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string hex_of_file(const std::string& path) {
  std::string text = read_text(path);
  return sha256_hex({reinterpret_cast<const std::uint8_t*>(text.data()), text.size()});
}

bool is_sha256_hex(const std::string& s) {
  return s.size() == 64 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// A manifest "file" is a plain name inside the data directory: no separators, no "..", not hidden.
void require_plain_name(const std::string& manifest, const std::string& field, const std::string& name) {
  if (name.find('/') != std::string::npos || name.find('\\') != std::string::npos || name.front() == '.') {
    throw InputError(manifest, field, "must be a file name inside the data directory, got '" + name + "'");
  }
}

bool is_floating(const std::string& dtype) { return dtype == "F32" || dtype == "F16" || dtype == "BF16"; }
bool is_integer(const std::string& dtype) { return dtype == "I32" || dtype == "I64"; }

// What load_prompt needs from the manifest's top level.
struct ManifestTop {
  int schema = 1;
  std::string model;                                // short name of model.id
  std::string kept_encoding = "positions";          // "positions" or "bitmask"
  std::map<std::string, std::string> press_scores;  // press -> scores tensor
};

std::string shape_text(const std::vector<Index>& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + ")";
}

// The shape and dtype class every tensor name must have given the prompt's sizes (docs/dump-format.md).
// With `contents` false only dtypes and shapes are checked; load_prompt checks every shape before any
// contents, so a wrong size in the manifest is reported as the shape error it is.
void check_tensor(const ManifestTop& top, const PromptDump& p, const std::string& name, const Tensor& t, bool contents) {
  auto want_shape = [&](const std::vector<Index>& shape) {
    if (!shape.empty() && t.shape != shape) {
      throw InputError(p.file, name + ".shape", shape_text(t.shape) + " but the manifest sizes give " + shape_text(shape));
    }
  };
  auto want = [&](std::vector<Index> shape, bool floating) {
    if (floating ? !is_floating(t.dtype) : !is_integer(t.dtype)) {
      throw InputError(p.file, name + ".dtype", t.dtype + " but a " + (floating ? "floating" : "integer") + " dtype is required");
    }
    want_shape(shape);
  };
  // Hardening (docs/hardening.md): tensor names come from an untrusted header. libstdc++'s std::regex recurses
  // per character and overflows the stack on names of ~100 KB, so long names never reach a regex; the layer
  // index is capped at 9 digits so std::stoll cannot throw out_of_range.
  static const std::regex qkv(R"(qkv\.layer(\d{1,9})\.(query|key|value))");
  constexpr std::size_t kMaxRegexName = 256;
  std::smatch m;
  if (name == "attention.window_mean" || name == "attention.last_query") {
    want({p.layers, p.q_heads, p.tokens}, true);
  } else if (name == "scores.snapkv" || name == "scores.expected_attention" || name == "scores.tova") {
    want({p.layers, p.kv_heads, p.tokens}, true);
  } else if (name == "tokens.ids") {
    want({p.tokens}, false);
    if (!contents) return;
    for (Index id : t.integers) {
      if (id < 0) throw InputError(p.file, name, "negative token id");
    }
  } else if (name.size() <= kMaxRegexName && std::regex_match(name, m, qkv)) {
    Index layer = std::stoll(m[1].str());
    bool listed = std::find(p.qkv_layers.begin(), p.qkv_layers.end(), layer) != p.qkv_layers.end();
    if (!listed) throw InputError(p.file, name, "layer not listed in the manifest's qkv_layers");
    if (m[2] == "query") {
      want({p.q_heads, p.window, p.head_dim}, true);
    } else {
      want({p.kv_heads, p.tokens, p.head_dim}, true);
    }
  } else if (std::optional<KeptName> kept = parse_kept_name(name)) {
    if (!top.press_scores.empty() && !top.press_scores.count(kept->press))
      throw InputError(p.file, name, "press '" + kept->press + "' is not in the manifest's presses");
    if ((t.dtype == "U8") != (top.kept_encoding == "bitmask"))
      throw InputError(p.file, name + ".dtype", t.dtype + " but the manifest's kept_encoding '" + top.kept_encoding + "' needs " +
                                                    (top.kept_encoding == "bitmask" ? "U8" : "an integer dtype"));
    if (t.dtype == "U8") {
      // A bitmask row per layer: T bits, the unused high bits of the last byte zero.
      want_shape({p.layers, (p.tokens + 7) / 8});
      if (!contents) return;
      const Index width = t.shape[1], spare = width * 8 - p.tokens;
      for (Index l = 0; l < p.layers; ++l) {
        const Index last = t.integers[static_cast<std::size_t>(l * width + width - 1)];
        if (spare > 0 && (last >> (8 - spare)) != 0)
          throw InputError(p.file, name, "layer " + std::to_string(l) + " sets a bit past position T - 1 = " + std::to_string(p.tokens - 1));
      }
      return;
    }
    want({}, false);
    if (t.shape.size() != 2 || t.shape[0] != p.layers) {
      throw InputError(p.file, name + ".shape", shape_text(t.shape) + " but (layers=" + std::to_string(p.layers) + ", n) is required");
    }
    if (!contents) return;
    // Values: positions in [0, T), then only -1 padding. Order and uniqueness are the oracle's to judge.
    for (Index l = 0; l < t.shape[0]; ++l) {
      bool padding = false;
      for (Index i = 0; i < t.shape[1]; ++i) {
        Index v = t.integers[static_cast<std::size_t>(l * t.shape[1] + i)];
        if (v == -1) {
          padding = true;
        } else if (padding || v < 0 || v >= p.tokens) {
          throw InputError(p.file, name, "layer " + std::to_string(l) + " entry " + std::to_string(i) + " = " +
                                             std::to_string(v) + " is neither a position in [0, T) nor trailing -1 padding");
        }
      }
    }
  } else {
    throw InputError(p.file, name, "unknown tensor name (docs/dump-format.md lists the allowed names)");
  }
  if (contents && is_floating(t.dtype)) require_finite(t.values, p.file, name);
}

// A needle object: integers 0 <= begin < end <= tokens; schema 2 adds depth in [0, 1] and retrieved.
Needle parse_needle(const std::string& manifest, const std::string& field, const json& needle, Index tokens, int schema) {
  if (!needle.is_object()) throw InputError(manifest, field, "must be an object");
  JsonFields n{manifest, field + ".", needle};
  const json& b = n.get("begin");
  const json& e = n.get("end");
  if (!b.is_number_integer() || !e.is_number_integer() || b.get<Index>() < 0 || b.get<Index>() >= e.get<Index>() ||
      e.get<Index>() > tokens) {
    throw InputError(manifest, field, "needs integers 0 <= begin < end <= tokens");
  }
  Needle out{b.get<Index>(), e.get<Index>(), std::nullopt, std::nullopt};
  if (schema >= 2) {
    const json& depth = n.get("depth");
    if (!depth.is_number() || !(depth.get<double>() >= 0.0 && depth.get<double>() <= 1.0))
      throw InputError(manifest, field + ".depth", "must be a number in [0, 1]");
    const json& retrieved = n.get("retrieved");
    if (!retrieved.is_boolean()) throw InputError(manifest, field + ".retrieved", "must be true or false");
    out.depth = depth.get<double>();
    out.retrieved = retrieved.get<bool>();
  }
  return out;
}

PromptDump load_prompt(const std::string& data_dir, const std::string& manifest, const ManifestTop& top, std::size_t index,
                       const json& entry) {
  std::string prefix = "prompts[" + std::to_string(index) + "].";
  if (!entry.is_object()) throw InputError(manifest, "prompts[" + std::to_string(index) + "]", "must be an object");
  JsonFields f{manifest, prefix, entry};
  PromptDump p;
  p.name = f.text("name");
  f.prefix = "prompts[" + p.name + "].";
  p.kind = f.text("kind");
  std::string file = f.text("file");
  require_plain_name(manifest, f.prefix + "file", file);
  p.dir = data_dir;
  p.file = (std::filesystem::path(data_dir) / file).string();
  std::string sha = f.text("sha256");
  if (!is_sha256_hex(sha)) throw InputError(manifest, f.prefix + "sha256", "must be 64 lowercase hex digits");
  p.tokens = f.positive("tokens");
  p.layers = f.positive("layers");
  p.q_heads = f.positive("q_heads");
  p.kv_heads = f.positive("kv_heads");
  p.head_dim = f.positive("head_dim");
  p.window = f.positive("window");
  if (p.q_heads % p.kv_heads != 0) throw InputError(manifest, f.prefix + "q_heads", "not a multiple of kv_heads");
  if (p.window > p.tokens) throw InputError(manifest, f.prefix + "window", "larger than tokens");

  const json& qkv = f.get("qkv_layers");
  if (!qkv.is_array()) throw InputError(manifest, f.prefix + "qkv_layers", "must be an array");
  for (const json& l : qkv) {
    if (!l.is_number_integer() || l.get<Index>() < 0 || l.get<Index>() >= p.layers) {
      throw InputError(manifest, f.prefix + "qkv_layers", "entries must be layer indices in [0, layers)");
    }
    p.qkv_layers.push_back(l.get<Index>());
  }

  if (top.schema == 1) {
    const json& needle = f.get("needle");
    if (!needle.is_null()) p.needles.push_back(parse_needle(manifest, f.prefix + "needle", needle, p.tokens, 1));
  } else {
    const json& needles = f.get("needles");
    if (!needles.is_array()) throw InputError(manifest, f.prefix + "needles", "must be an array (empty without a needle)");
    for (std::size_t i = 0; i < needles.size(); ++i) {
      const std::string field = f.prefix + "needles[" + std::to_string(i) + "]";
      p.needles.push_back(parse_needle(manifest, field, needles[i], p.tokens, 2));
      if (i > 0 && p.needles[i].begin < p.needles[i - 1].end) throw InputError(manifest, field, "overlaps or precedes the needle before it");
    }
  }
  p.model = top.model;
  p.press_scores = top.press_scores;

  const json& declared = f.get("tensors");
  if (!declared.is_object() || declared.empty()) throw InputError(manifest, f.prefix + "tensors", "must be a non-empty object");

  // The file: checksum first (a corrupted file is reported as such, not as whatever it parses into).
  SafetensorsFile st = SafetensorsFile::open(p.file);
  std::string actual = sha256_hex(st.file_bytes());
  if (actual != sha) throw InputError(p.file, "sha256", "is " + actual + " but the manifest says " + sha);

  if (entry.contains("tokens_file")) {
    std::string tokens_file = f.text("tokens_file");
    require_plain_name(manifest, f.prefix + "tokens_file", tokens_file);
    std::string path = (std::filesystem::path(data_dir) / tokens_file).string();
    std::string want = f.text("tokens_file_sha256");
    std::string got = hex_of_file(path);
    if (got != want) throw InputError(path, "sha256", "is " + got + " but the manifest says " + want);
  }

  std::set<std::string> in_file;
  for (const auto& e : st.entries()) in_file.insert(e.name);
  for (const auto& [name, decl] : declared.items()) {
    if (!in_file.count(name)) throw InputError(p.file, name, "declared in the manifest but missing from the file");
    JsonFields d{manifest, f.prefix + "tensors." + name + ".", decl};
    if (!decl.is_object()) throw InputError(manifest, f.prefix + "tensors." + name, "must be an object");
    std::string dtype = d.text("dtype");
    const json& shape = d.get("shape");
    if (!shape.is_array()) throw InputError(manifest, d.prefix + "shape", "must be an array");
    std::vector<Index> want_shape;
    for (const json& x : shape) {
      if (!x.is_number_integer() || x.get<Index>() < 0) throw InputError(manifest, d.prefix + "shape", "entries must be non-negative integers");
      want_shape.push_back(x.get<Index>());
    }
    const SafetensorsEntry& e = st.entry(name);
    if (e.dtype != dtype) throw InputError(p.file, name + ".dtype", e.dtype + " but the manifest says " + dtype);
    if (e.shape != want_shape) {
      throw InputError(p.file, name + ".shape", shape_text(e.shape) + " but the manifest says " + shape_text(want_shape));
    }
  }
  for (const auto& name : in_file) {
    if (!declared.contains(name)) throw InputError(p.file, name, "in the file but not declared in the manifest");
  }
  for (const auto& e : st.entries()) {
    Tensor t = st.read(e.name);
    check_tensor(top, p, e.name, t, false);
    p.tensors.emplace(e.name, std::move(t));
  }
  for (const auto& [name, t] : p.tensors) check_tensor(top, p, name, t, true);
  std::vector<std::string> required = {"attention.window_mean", "attention.last_query", "scores.snapkv",
                                       "scores.expected_attention", "scores.tova", "tokens.ids"};
  for (Index l : p.qkv_layers) {
    for (const char* part : {"query", "key", "value"}) required.push_back("qkv.layer" + std::to_string(l) + "." + part);
  }
  for (const auto& name : required) {
    if (!p.tensors.count(name)) throw InputError(p.file, name, "missing");
  }
  return p;
}

}  // namespace

std::optional<KeptName> parse_kept_name(const std::string& tensor_name) {
  static const std::regex pattern(R"(kept\.([a-z0-9_]+)\.cr([0-9.]+))");
  // Hardening: std::regex overflows the stack on ~100 KB names (see check_tensor); no real name is this long.
  if (tensor_name.size() > 256) return std::nullopt;
  std::smatch m;
  if (!std::regex_match(tensor_name, m, pattern)) return std::nullopt;
  KeptName k{m[1].str(), m[2].str()};
  try {
    parse_compression_ratio(k.ratio, tensor_name);
  } catch (const InputError&) {
    return std::nullopt;
  }
  return k;
}

Positions kept_positions(const Tensor& kept, Index layer) {
  if (kept.shape.size() != 2 || layer < 0 || layer >= kept.shape[0]) {
    throw std::out_of_range("kept_positions: layer " + std::to_string(layer) + " outside a kept tensor");
  }
  Positions out;
  const Index n = kept.shape[1];
  if (kept.dtype == "U8") {  // load_dumps guarantees no bit at or past T
    for (Index i = 0; i < n; ++i) {
      const Index byte = kept.integers[static_cast<std::size_t>(layer * n + i)];
      for (Index bit = 0; bit < 8; ++bit)
        if (byte >> bit & 1) out.push_back(8 * i + bit);
    }
    return out;
  }
  for (Index i = 0; i < n; ++i) {
    Index v = kept.integers[static_cast<std::size_t>(layer * n + i)];
    if (v == -1) break;  // load_dumps guarantees -1 only as trailing padding
    out.push_back(v);
  }
  return out;
}

const Tensor& PromptDump::tensor(const std::string& name) const {
  auto it = tensors.find(name);
  if (it == tensors.end()) throw InputError(file, name, "missing");
  return it->second;
}

ScoreTensor PromptDump::scores(const std::string& name) const {
  const Tensor& t = tensor(name);
  if (t.shape.size() != 3) throw InputError(file, name + ".shape", "expected (layers, heads, tokens), got " + shape_text(t.shape));
  if (!is_floating(t.dtype)) throw InputError(file, name + ".dtype", t.dtype + " is not a floating dtype");
  return ScoreTensor{t.shape[0], t.shape[1], t.shape[2], t.values};
}

std::string PromptDump::ranked_scores_name(const std::string& press) const {
  const auto declared = press_scores.find(press);
  return declared == press_scores.end() ? "scores.snapkv" : declared->second;
}

HeadScores PromptDump::ranked_scores(const std::string& press, Index layer) const {
  const std::string name = ranked_scores_name(press);
  const Tensor& t = tensor(name);
  if (layer < 0 || layer >= layers) throw InputError(file, name, "no layer " + std::to_string(layer));
  const auto per_layer = static_cast<std::size_t>(kv_heads * tokens);
  return HeadScores{kv_heads, tokens, std::span<const float>(t.values).subspan(static_cast<std::size_t>(layer) * per_layer, per_layer)};
}

std::vector<PromptDump> load_dumps(const std::string& data_dir) {
  const std::string manifest = (std::filesystem::path(data_dir) / "manifest.json").string();
  json j;
  try {
    j = json::parse(read_text(manifest));
  } catch (const json::exception& e) {
    throw InputError(manifest, "json", std::string("invalid JSON: ") + e.what());
  }
  if (!j.is_object()) throw InputError(manifest, "json", "top level must be an object");
  JsonFields fields{manifest, "", j};
  const json& version = fields.get("schema_version");
  if (!version.is_number_integer() || version.get<int>() < kMinSchema || version.get<int>() > kMaxSchema) {
    throw InputError(manifest, "schema_version", "must be " + std::to_string(kMinSchema) + " or " + std::to_string(kMaxSchema));
  }
  ManifestTop top;
  top.schema = version.get<int>();
  // The model's short name: the last part of model.id (required from schema 2; schema 1 falls back to the
  // directory's name).
  const bool has_id = j.contains("model") && j["model"].is_object() && j["model"].contains("id");
  if (top.schema >= 2 || has_id) {
    const json& model = fields.get("model");
    if (!model.is_object()) throw InputError(manifest, "model", "must be an object");
    const std::string id = JsonFields{manifest, "model.", model}.text("id");
    top.model = id.substr(id.find_last_of('/') + 1);
    if (top.model.empty()) throw InputError(manifest, "model.id", "ends with '/'");
  } else {
    top.model = std::filesystem::absolute(data_dir).lexically_normal().filename().string();
  }
  if (top.schema >= 2) {
    top.kept_encoding = fields.text("kept_encoding");
    if (top.kept_encoding != "positions" && top.kept_encoding != "bitmask")
      throw InputError(manifest, "kept_encoding", "must be \"positions\" or \"bitmask\"");
  }
  if (j.contains("presses") || top.schema >= 2) {
    const json& presses = fields.get("presses");
    if (!presses.is_object()) throw InputError(manifest, "presses", "must be an object");
    for (const auto& [name, press] : presses.items()) {
      if (!press.is_object()) throw InputError(manifest, "presses." + name, "must be an object");
      // Schema 1 presses all ranked SnapKV's scores; schema 2 names each press's scores tensor.
      std::string scores = top.schema >= 2 ? JsonFields{manifest, "presses." + name + ".", press}.text("scores") : "scores.snapkv";
      if (scores != "scores.snapkv" && scores != "scores.expected_attention" && scores != "scores.tova")
        throw InputError(manifest, "presses." + name + ".scores", "'" + scores + "' is not a scores tensor");
      top.press_scores[name] = scores;
    }
  }
  const json& prompts = fields.get("prompts");
  if (!prompts.is_array() || prompts.empty()) throw InputError(manifest, "prompts", "must be a non-empty array");
  std::vector<PromptDump> out;
  std::set<std::string> names;
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    PromptDump p = load_prompt(data_dir, manifest, top, i, prompts[i]);
    if (!names.insert(p.name).second) throw InputError(manifest, "prompts[" + p.name + "].name", "appears twice");
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<std::string> model_dirs(const std::string& root) {
  namespace fs = std::filesystem;
  std::vector<std::string> dirs;
  std::error_code ec;
  if (fs::is_regular_file(fs::path(root) / "manifest.json", ec)) dirs.push_back(root);
  std::vector<std::string> subdirs;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_directory(ec) && fs::is_regular_file(it->path() / "manifest.json", ec)) subdirs.push_back(it->path().string());
  }
  std::sort(subdirs.begin(), subdirs.end());
  dirs.insert(dirs.end(), subdirs.begin(), subdirs.end());
  return dirs;
}

std::vector<PromptDump> load_all_dumps(const std::string& root) {
  std::vector<std::string> dirs = model_dirs(root);
  if (dirs.empty()) dirs.push_back(root);  // load_dumps then names the missing root manifest.json
  std::vector<PromptDump> out;
  std::set<std::string> models;
  for (const std::string& dir : dirs) {
    std::vector<PromptDump> part = load_dumps(dir);
    if (!models.insert(part.front().model).second)
      throw InputError((std::filesystem::path(dir) / "manifest.json").string(), "model.id", "a second model called '" + part.front().model + "'");
    for (auto& p : part) out.push_back(std::move(p));
  }
  return out;
}

}  // namespace kvaudit::io
