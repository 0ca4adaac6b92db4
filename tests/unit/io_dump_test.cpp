// The shipped real dumps (data/): they load, shapes agree with the manifest, attention rows are
// distributions, recorded kvpress selections have kvpress's budget sizes; and load_dumps rejects
// corrupted manifests and files naming the field.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "audit/dump_conformance.h"
#include "core/compression_ratio.h"
#include "core/error.h"
#include "core/io/dump.h"

namespace {

using kvaudit::Index;
using kvaudit::InputError;
using kvaudit::io::PromptDump;

std::string data_dir() {
  const char* root = std::getenv("KVAUDIT_ROOT");
  return (std::filesystem::path(root ? root : ".") / "data").string();
}

const std::vector<PromptDump>& dumps() {
  static const std::vector<PromptDump> d = kvaudit::io::load_dumps(data_dir());
  return d;
}

nlohmann::json manifest() {
  std::ifstream in(std::filesystem::path(data_dir()) / "manifest.json");
  return nlohmann::json::parse(in);
}

TEST(IoDump, ShipsTheRequiredPrompts) {
  const auto& d = dumps();
  ASSERT_GE(d.size(), 4u);
  std::set<std::string> kinds;
  for (const auto& p : d) {
    kinds.insert(p.kind);
    EXPECT_GE(p.tokens, 1000) << p.name;
    EXPECT_LE(p.tokens, 4096) << p.name;
    EXPECT_EQ(p.layers, 30) << p.name;  // SmolLM2-135M-Instruct
    EXPECT_EQ(p.q_heads, 9) << p.name;
    EXPECT_EQ(p.kv_heads, 3) << p.name;
    EXPECT_EQ(p.head_dim, 64) << p.name;
    EXPECT_EQ(p.window, 64) << p.name;
    EXPECT_EQ(p.qkv_layers, (std::vector<Index>{0, 15, 29})) << p.name;
    EXPECT_EQ(p.needles.size(), p.kind == "needle" ? 1u : 0u) << p.name;
  }
  for (const char* k : {"needle", "qa", "code"}) EXPECT_TRUE(kinds.count(k)) << "no prompt of kind " << k;
}

TEST(IoDump, ShapesMatchTheManifestSizes) {
  for (const auto& p : dumps()) {
    const auto wm = p.scores("attention.window_mean");
    EXPECT_EQ(wm.layers, p.layers);
    EXPECT_EQ(wm.heads, p.q_heads);
    EXPECT_EQ(wm.tokens, p.tokens);
    for (const char* s : {"scores.snapkv", "scores.expected_attention", "scores.tova"}) {
      const auto t = p.scores(s);
      EXPECT_EQ(std::vector<Index>({t.layers, t.heads, t.tokens}), std::vector<Index>({p.layers, p.kv_heads, p.tokens})) << s;
      EXPECT_EQ(p.tensor(s).dtype, "F32") << "scores must stay float32: the oracle replays them";
    }
    EXPECT_EQ(p.tensor("tokens.ids").integers.size(), static_cast<std::size_t>(p.tokens));
    for (Index l : p.qkv_layers) {
      const std::string base = "qkv.layer" + std::to_string(l);
      EXPECT_EQ(p.tensor(base + ".query").shape, (std::vector<Index>{p.q_heads, p.window, p.head_dim}));
      EXPECT_EQ(p.tensor(base + ".key").shape, (std::vector<Index>{p.kv_heads, p.tokens, p.head_dim}));
      EXPECT_EQ(p.tensor(base + ".value").shape, (std::vector<Index>{p.kv_heads, p.tokens, p.head_dim}));
    }
  }
}

// Each stored row is a float32 softmax (or a mean of 64 of them) rounded to float16. Rounding each entry
// to f16 moves it by at most 2^-11 relative (normal range) or 2^-25 absolute (subnormal spacing 2^-24), so
// |sum - 1| <= 2^-11 * sum + T * 2^-25; the float32 softmax and window mean add < 2^-20, and the test sums
// in double. With sum <= 1 + tol this gives the bound below.
double attention_row_tolerance(Index tokens) { return std::ldexp(1.0, -11) * 1.001 + tokens * std::ldexp(1.0, -25) + std::ldexp(1.0, -20); }

TEST(IoDump, AttentionRowsAreDistributions) {
  for (const auto& p : dumps()) {
    const double tol = attention_row_tolerance(p.tokens);
    for (const char* name : {"attention.window_mean", "attention.last_query"}) {
      const auto a = p.scores(name);
      double worst = 0.0;
      for (Index l = 0; l < a.layers; ++l) {
        for (Index h = 0; h < a.heads; ++h) {
          double sum = 0.0;
          for (float v : a.row(l, h)) {
            ASSERT_GE(v, 0.0f) << p.name << " " << name;
            sum += v;
          }
          worst = std::max(worst, std::abs(sum - 1.0));
          EXPECT_LE(std::abs(sum - 1.0), tol) << p.name << " " << name << " layer " << l << " head " << h;
        }
      }
      std::cout << p.name << " " << name << ": max |row sum - 1| = " << worst << " (tolerance " << tol << ")\n";
    }
  }
}

// kvpress 0.5.5's budget rules, written here from the Python source (ints as Python's int() truncates).
Index kvpress_int(double x) { return static_cast<Index>(x); }

TEST(IoDump, RecordedSelectionsHaveKvpressBudgetSizes) {
  Index checked = 0, with_partial = 0;
  for (const auto& p : dumps()) {
    for (const auto& [name, t] : p.tensors) {
      auto k = kvaudit::io::parse_kept_name(name);
      if (!k) continue;
      auto press = kvaudit::audit::parse_dump_press(k->press);
      ASSERT_TRUE(press) << name;
      const double rho = kvaudit::parse_compression_ratio(k->ratio).value;
      const Index T = p.tokens, c = press->chunk_length;
      for (Index l = 0; l < p.layers; ++l) {
        const Index n = static_cast<Index>(kvaudit::io::kept_positions(t, l).size());
        if (press->method == kvaudit::Method::EgChunkKV) {
          // EntropyGatedChunkKVPress: budget = max(1, int(kv_len * (1 - compression_ratio))), exactly.
          EXPECT_EQ(n, std::max<Index>(1, kvpress_int(T * (1 - rho)))) << p.name << " " << name << " layer " << l;
        } else {
          // ChunkKVPress: n_chunks_kept = max(1, int((complete + (rem > 0)) * (1 - ratio))) whole chunks; the
          // partial chunk (T % c tokens) counts as one chunk.
          const Index complete = T / c, rem = T % c;
          const Index chunks = std::max<Index>(1, kvpress_int(static_cast<double>(complete + (rem > 0)) * (1 - rho)));
          const bool partial = rem > 0 && kvaudit::io::kept_positions(t, l).back() == T - 1;
          with_partial += partial;
          EXPECT_EQ(n, partial ? (chunks - 1) * c + rem : chunks * c) << p.name << " " << name << " layer " << l;
        }
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, static_cast<Index>(dumps().size()) * 3 * 6 * 30) << "3 presses x 6 ratios x 30 layers per prompt";
  std::cout << checked << " recorded selections checked, " << with_partial << " ChunkKV ones include the partial chunk\n";
}

TEST(IoDump, NeedleSpanCoversTheNeedleTokens) {
  const auto m = manifest();
  Index needles = 0;
  for (const auto& entry : m["prompts"]) {
    // Schema 1: "needle" (null or one object); schema 2: "needles" (a list).
    const nlohmann::json spans = entry.contains("needles") ? entry["needles"]
                                 : entry["needle"].is_null() ? nlohmann::json::array() : nlohmann::json::array({entry["needle"]});
    std::ifstream in(std::filesystem::path(data_dir()) / entry["tokens_file"].get<std::string>());
    const auto tokens = nlohmann::json::parse(in);
    for (const auto& n : spans) {
      ++needles;
      const Index b = n["begin"], e = n["end"];
      std::string text;
      for (Index i = b; i < e; ++i) text += tokens["decoded"][static_cast<std::size_t>(i)].get<std::string>();
      const std::string needle = n["text"];
      EXPECT_NE(text.find(needle.substr(needle.size() - 9)), std::string::npos) << "needle tokens decode to: " << text;
    }
    EXPECT_EQ(tokens["ids"].size(), static_cast<std::size_t>(entry["tokens"].get<Index>()));
  }
  EXPECT_EQ(needles, 1);
}

// ---- Rejections: a scratch copy of data/ (files symlinked) with one thing broken. --------------------------

struct Scratch {
  std::filesystem::path dir;
  explicit Scratch(const std::string& name) {
    dir = std::filesystem::temp_directory_path() / ("kvaudit_io_dump_" + name + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    for (const auto& e : std::filesystem::directory_iterator(data_dir())) {
      if (e.path().filename() != "manifest.json") std::filesystem::create_symlink(std::filesystem::absolute(e.path()), dir / e.path().filename());
    }
  }
  ~Scratch() { std::filesystem::remove_all(dir); }
  void write_manifest(const nlohmann::json& m) const { std::ofstream(dir / "manifest.json") << m.dump(1); }
  void replace_file(const std::string& name, const std::vector<char>& bytes) const {
    std::filesystem::remove(dir / name);
    std::ofstream out(dir / name, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
};

void expect_load_rejected(const Scratch& s, const std::string& source_suffix, const std::string& field, const std::string& problem) {
  try {
    kvaudit::io::load_dumps(s.dir.string());
    ADD_FAILURE() << "accepted: " << field;
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(source_suffix + ": " + field + ": "), std::string::npos) << what;
    EXPECT_NE(what.find(problem), std::string::npos) << what;
  }
}

TEST(IoDumpRejects, ManifestErrorsNameTheField) {
  const auto good = manifest();
  const std::string first = good["prompts"][0]["name"];
  {
    Scratch s("version");
    auto m = good;
    m["schema_version"] = 3;
    s.write_manifest(m);
    expect_load_rejected(s, "manifest.json", "schema_version", "must be 1 or 2");
  }
  {
    Scratch s("missing");
    auto m = good;
    m["prompts"][0].erase("tokens");
    s.write_manifest(m);
    expect_load_rejected(s, "manifest.json", "prompts[" + first + "].tokens", "missing");
  }
  {
    Scratch s("type");
    auto m = good;
    m["prompts"][0]["kv_heads"] = "3";
    s.write_manifest(m);
    expect_load_rejected(s, "manifest.json", "prompts[" + first + "].kv_heads", "must be a positive integer, got \"3\"");
  }
  {
    Scratch s("escape");
    auto m = good;
    m["prompts"][0]["file"] = "../x.safetensors";
    s.write_manifest(m);
    expect_load_rejected(s, "manifest.json", "prompts[" + first + "].file", "inside the data directory");
  }
  {
    Scratch s("json");
    std::ofstream(s.dir / "manifest.json") << "{\"schema_version\": 1, ";
    expect_load_rejected(s, "manifest.json", "json", "invalid JSON");
  }
}

TEST(IoDumpRejects, ChecksumAndShapeMismatchesNameTheFileAndField) {
  const auto good = manifest();
  const std::string file = good["prompts"][0]["file"];
  {
    Scratch s("sha");
    auto m = good;
    m["prompts"][0]["sha256"] = std::string(64, '0');
    s.write_manifest(m);
    expect_load_rejected(s, file, "sha256", "but the manifest says");
  }
  {
    // Sizes in the manifest disagree with the file: T one less.
    Scratch s("tokens");
    auto m = good;
    m["prompts"][0]["tokens"] = m["prompts"][0]["tokens"].get<Index>() - 1;
    s.write_manifest(m);
    try {
      kvaudit::io::load_dumps(s.dir.string());
      ADD_FAILURE() << "accepted a manifest whose tokens disagree with the file";
    } catch (const InputError& e) {
      // Whichever (layers, heads, T)-shaped tensor comes first in the file is named, with its .shape field.
      EXPECT_TRUE(std::regex_search(std::string(e.what()), std::regex(file + R"(: [a-z_.0-9]+\.shape: .*manifest sizes give)")))
          << e.what();
    }
  }
  {
    Scratch s("declared_dtype");
    auto m = good;
    m["prompts"][0]["tensors"]["scores.snapkv"]["dtype"] = "F16";
    s.write_manifest(m);
    expect_load_rejected(s, file, "scores.snapkv.dtype", "the manifest says F16");
  }
  {
    // One flipped byte in the data region: the checksum catches it before anything is parsed.
    Scratch s("flip");
    std::ifstream in(std::filesystem::path(data_dir()) / file, std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    bytes[bytes.size() - 5] ^= 0x01;
    s.replace_file(file, bytes);
    s.write_manifest(good);
    expect_load_rejected(s, file, "sha256", "but the manifest says");
  }
}

}  // namespace
