// Schema 2 of the dump format (docs/dump-format.md): U8 bitmask selections, a list of needles, each press's
// scores tensor, and a data tree of several model directories. A small dump is built in a scratch directory;
// each rejection test breaks one thing and expects the one-line error naming the file and field.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "audit/dump_conformance.h"
#include "core/error.h"
#include "core/io/dump.h"
#include "core/io/safetensors.h"
#include "core/io/sha256.h"

namespace {

namespace fs = std::filesystem;
using kvaudit::Index;
using kvaudit::InputError;
using kvaudit::Positions;
using nlohmann::json;

template <typename T>
kvaudit::io::RawTensor raw(const std::string& dtype, std::vector<Index> shape, const std::vector<T>& v) {
  kvaudit::io::RawTensor t{dtype, std::move(shape), {}};
  t.bytes.resize(v.size() * sizeof(T));
  std::memcpy(t.bytes.data(), v.data(), t.bytes.size());
  return t;
}

constexpr Index kT = 11, kLayers = 2;  // 11 tokens: two mask bytes per row, five padding bits in the second

// Layer 0 keeps {0, 1, 9, 10}, layer 1 keeps {2, 3, 8}: bit t of a row is byte t / 8, bit t % 8.
const std::vector<std::uint8_t> kMask = {0b00000011, 0b00000110, 0b00001100, 0b00000001};

struct SmallDump {
  fs::path dir;
  std::map<std::string, kvaudit::io::RawTensor> tensors;
  json manifest;

  explicit SmallDump(const std::string& name, const fs::path& at = {}) {
    dir = at.empty() ? fs::temp_directory_path() / ("kvaudit_schema2_" + name + "_" + std::to_string(::getpid())) : at;
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::vector<float> attn(kLayers * 2 * kT, 1.0f / kT), scores(kLayers * 1 * kT);
    for (std::size_t i = 0; i < scores.size(); ++i) scores[i] = static_cast<float>((i * 7) % 5);
    tensors["attention.window_mean"] = raw("F32", {kLayers, 2, kT}, attn);
    tensors["attention.last_query"] = raw("F32", {kLayers, 2, kT}, attn);
    for (const char* s : {"scores.snapkv", "scores.expected_attention", "scores.tova"}) tensors[s] = raw("F32", {kLayers, 1, kT}, scores);
    std::vector<std::int64_t> ids(kT);
    for (Index i = 0; i < kT; ++i) ids[static_cast<std::size_t>(i)] = i + 3;
    tensors["tokens.ids"] = raw("I64", {kT}, ids);
    tensors["kept.chunkkv_c2_tova.cr0.5"] = raw("U8", {kLayers, 2}, kMask);
    json declared = json::object();
    for (const auto& [n, t] : tensors) declared[n] = {{"dtype", t.dtype}, {"shape", t.shape}};
    manifest = {{"schema_version", 2},
                {"model", {{"id", "org/Small-" + name}}},
                {"kept_encoding", "bitmask"},
                {"presses", {{"chunkkv_c2_tova", {{"class", "ChunkKVPress"}, {"chunk_length", 2}, {"scores", "scores.tova"}}}}},
                {"prompts",
                 {{{"name", "small"}, {"kind", "needle"}, {"file", "small.safetensors"}, {"sha256", ""}, {"tokens", kT},
                   {"layers", kLayers}, {"q_heads", 2}, {"kv_heads", 1}, {"head_dim", 1}, {"window", 2}, {"qkv_layers", json::array()},
                   {"needles", {{{"begin", 1}, {"end", 3}, {"depth", 0.2}, {"retrieved", true}},
                                {{"begin", 6}, {"end", 8}, {"depth", 0.6}, {"retrieved", false}}}},
                   {"tensors", declared}}}}};
  }
  ~SmallDump() { fs::remove_all(dir); }

  // Writes the safetensors file and the manifest (sha256 filled in), after `edit` has changed either.
  void write(const std::function<void(SmallDump&)>& edit = {}) {
    if (edit) edit(*this);
    const auto bytes = kvaudit::io::encode_safetensors(tensors);
    std::ofstream(dir / "small.safetensors", std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                                                    static_cast<std::streamsize>(bytes.size()));
    if (manifest["prompts"][0]["sha256"] == "") manifest["prompts"][0]["sha256"] = kvaudit::io::sha256_hex(bytes);
    std::ofstream(dir / "manifest.json") << manifest.dump(1);
  }
};

void expect_rejected(SmallDump& d, const std::function<void(SmallDump&)>& edit, const std::string& where, const std::string& problem) {
  d.write(edit);
  try {
    kvaudit::io::load_dumps(d.dir.string());
    ADD_FAILURE() << "accepted: " << where;
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(where + ": "), std::string::npos) << what;
    EXPECT_NE(what.find(problem), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << "one line: " << what;
  }
}

TEST(IoDumpSchema2, BitmaskRowsDecodeToIncreasingPositions) {
  SmallDump d("decode");
  d.write();
  const auto dumps = kvaudit::io::load_dumps(d.dir.string());
  ASSERT_EQ(dumps.size(), 1u);
  const auto& p = dumps.front();
  EXPECT_EQ(p.model, "Small-decode");
  EXPECT_EQ(p.key(), "Small-decode/small");
  const auto& kept = p.tensor("kept.chunkkv_c2_tova.cr0.5");
  EXPECT_EQ(kvaudit::io::kept_positions(kept, 0), (Positions{0, 1, 9, 10}));
  EXPECT_EQ(kvaudit::io::kept_positions(kept, 1), (Positions{2, 3, 8}));
  ASSERT_EQ(p.needles.size(), 2u);
  EXPECT_EQ(p.needles[1].begin, 6);
  EXPECT_EQ(p.needles[1].depth, 0.6);
  EXPECT_EQ(p.needles[1].retrieved, false);
  EXPECT_EQ(p.press_scores.at("chunkkv_c2_tova"), "scores.tova");
}

TEST(IoDumpSchema2, ConformanceJudgesAgainstThePressesOwnScores) {
  SmallDump d("scores");
  d.write();
  const auto dumps = kvaudit::io::load_dumps(d.dir.string());
  const auto c = kvaudit::audit::check_dump_case(dumps.front(), "chunkkv_c2_tova", "0.5", 0);
  EXPECT_EQ(c.scores, "scores.tova");
  EXPECT_EQ(c.kept, 4);
  EXPECT_EQ(c.prompt, "Small-scores/small");
}

TEST(IoDumpSchema2, RejectsBadBitmasksNamingFileAndField) {
  SmallDump d("reject");
  const std::string file = (d.dir / "small.safetensors").string(), manifest = (d.dir / "manifest.json").string();
  const std::string kept = "kept.chunkkv_c2_tova.cr0.5";
  // A bit at position 11 = T: past the end of the context.
  expect_rejected(d, [&](SmallDump& s) { s.tensors[kept] = raw("U8", {kLayers, 2}, std::vector<std::uint8_t>{3, 0b00001110, 12, 1}); },
                  file + ": " + kept, "sets a bit past position T - 1 = 10");
}

TEST(IoDumpSchema2, RejectsWrongWidthEncodingAndPress) {
  const std::string kept = "kept.chunkkv_c2_tova.cr0.5";
  auto declare = [&](SmallDump& s) { s.manifest["prompts"][0]["tensors"][kept] = {{"dtype", s.tensors[kept].dtype}, {"shape", s.tensors[kept].shape}}; };
  {
    SmallDump d("width");  // three bytes per row for T = 11
    expect_rejected(d, [&](SmallDump& s) { s.tensors[kept] = raw("U8", {kLayers, 3}, std::vector<std::uint8_t>(6, 0)); declare(s); },
                    (d.dir / "small.safetensors").string() + ": " + kept + ".shape", "manifest sizes give (2, 2)");
  }
  {
    SmallDump d("positions_declared");  // U8 rows in a manifest that says positions
    expect_rejected(d, [](SmallDump& s) { s.manifest["kept_encoding"] = "positions"; },
                    (d.dir / "small.safetensors").string() + ": " + kept + ".dtype", "kept_encoding 'positions'");
  }
  {
    SmallDump d("i64_in_bitmask");  // I64 positions in a manifest that says bitmask
    expect_rejected(d, [&](SmallDump& s) { s.tensors[kept] = raw("I64", {kLayers, 1}, std::vector<std::int64_t>{0, 1}); declare(s); },
                    (d.dir / "small.safetensors").string() + ": " + kept + ".dtype", "needs U8");
  }
  {
    SmallDump d("unknown_press");
    expect_rejected(d, [](SmallDump& s) { s.manifest["presses"].erase("chunkkv_c2_tova"); s.manifest["presses"]["other"] = {{"scores", "scores.tova"}}; },
                    (d.dir / "small.safetensors").string() + ": " + kept, "not in the manifest's presses");
  }
  {
    SmallDump d("bad_scores");
    expect_rejected(d, [](SmallDump& s) { s.manifest["presses"]["chunkkv_c2_tova"]["scores"] = "attention.window_mean"; },
                    (d.dir / "manifest.json").string() + ": presses.chunkkv_c2_tova.scores", "is not a scores tensor");
  }
  {
    SmallDump d("encoding");
    expect_rejected(d, [](SmallDump& s) { s.manifest["kept_encoding"] = "rle"; }, (d.dir / "manifest.json").string() + ": kept_encoding",
                    "\"positions\" or \"bitmask\"");
  }
}

TEST(IoDumpSchema2, RejectsBadNeedlesNamingTheField) {
  // Each case breaks one thing of a fresh dump.
  auto rejected = [](const std::function<void(json&)>& edit, const std::string& field, const std::string& problem) {
    SmallDump d("needles");
    expect_rejected(d, [&](SmallDump& s) { edit(s.manifest); }, (d.dir / "manifest.json").string() + ": " + field, problem);
  };
  rejected([](json& m) { m["prompts"][0]["needles"] = json::object(); }, "prompts[small].needles", "must be an array");
  rejected([](json& m) { m["prompts"][0]["needles"][1]["begin"] = 2; }, "prompts[small].needles[1]", "overlaps or precedes");
  rejected([](json& m) { m["prompts"][0]["needles"][0]["depth"] = 1.5; }, "prompts[small].needles[0].depth", "in [0, 1]");
  rejected([](json& m) { m["prompts"][0]["needles"][0].erase("retrieved"); }, "prompts[small].needles[0].retrieved", "missing");
  rejected([](json& m) { m["prompts"][0]["needles"][0]["end"] = kT + 1; }, "prompts[small].needles[0]", "0 <= begin < end <= tokens");
  rejected([](json& m) { m["schema_version"] = 3; }, "schema_version", "must be 1 or 2");
  rejected([](json& m) { m.erase("model"); }, "model", "missing");
}

TEST(IoDumpSchema2, ADataTreeLoadsEveryModelGroupedAndRejectsTwins) {
  const fs::path root = fs::temp_directory_path() / ("kvaudit_schema2_tree_" + std::to_string(::getpid()));
  fs::remove_all(root);
  {
    SmallDump b("B", root / "b"), a("A", root / "a");
    a.write();
    b.write();
    EXPECT_EQ(kvaudit::io::model_dirs(root.string()), (std::vector<std::string>{(root / "a").string(), (root / "b").string()}));
    const auto all = kvaudit::io::load_all_dumps(root.string());
    ASSERT_EQ(all.size(), 2u);
    EXPECT_EQ(all[0].key(), "Small-A/small");
    EXPECT_EQ(all[1].key(), "Small-B/small");
    EXPECT_EQ(all[1].dir, (root / "b").string());
    b.manifest["model"]["id"] = "elsewhere/Small-A";
    b.write();
    try {
      kvaudit::io::load_all_dumps(root.string());
      ADD_FAILURE() << "two models with one short name accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("model.id: a second model called 'Small-A'"), std::string::npos) << e.what();
    }
  }
  try {
    kvaudit::io::load_all_dumps(root.string());
    ADD_FAILURE() << "an empty tree accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("manifest.json: file: cannot open"), std::string::npos) << e.what();
  }
  fs::remove_all(root);
}

}  // namespace
