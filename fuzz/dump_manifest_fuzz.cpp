// libFuzzer harness for the dump manifest parser (core/io/dump.h load_dumps). The input is the text of
// data/manifest.json; it points at small valid dumps written once into a scratch directory: small.safetensors
// (selections as I64 positions) and small_bitmask.safetensors (the same selections as U8 bitmask rows, schema
// 2). Because every prompt's sha256 must match, the harness replaces the placeholders @SHA@ and @BSHA@ in the
// input by the real checksums of the two files and @TSHA@ by that of the tokens file, so mutations reach the
// checks behind the checksum.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/io/dump.h"
#include "core/io/safetensors.h"
#include "core/io/sha256.h"
#include "fuzz/fuzz_support.h"

using namespace kvaudit;
using kvaudit::fuzz::report_and_trap;

namespace {

std::string g_dir;
std::string g_sha, g_bitmask_sha, g_tokens_sha;

template <typename T>
io::RawTensor raw(const std::string& dtype, std::vector<Index> shape, const std::vector<T>& v) {
  io::RawTensor t{dtype, std::move(shape), {}};
  t.bytes.resize(v.size() * sizeof(T));
  std::memcpy(t.bytes.data(), v.data(), t.bytes.size());
  return t;
}

// T = 8 tokens, 2 layers, 2 query heads, 1 KV head, head_dim 2, window 2, qkv for layer 0: the smallest
// dump with every required tensor (the fuzz/corpus/dump_manifest_fuzz seeds describe exactly this file).
std::vector<std::uint8_t> small_dump(bool bitmask) {
  std::vector<float> attn(2 * 2 * 8), kv(2 * 1 * 8), q(2 * 2 * 2), k(1 * 8 * 2);
  for (std::size_t i = 0; i < attn.size(); ++i) attn[i] = static_cast<float>(i % 8 + 1) / 36.0f;
  for (std::size_t i = 0; i < kv.size(); ++i) kv[i] = static_cast<float>((i * 5) % 8);
  for (std::size_t i = 0; i < q.size(); ++i) q[i] = static_cast<float>(i) - 3.5f;
  for (std::size_t i = 0; i < k.size(); ++i) k[i] = 0.25f * static_cast<float>(i);
  std::map<std::string, io::RawTensor> t;
  t["attention.window_mean"] = raw("F32", {2, 2, 8}, attn);
  t["attention.last_query"] = raw("F32", {2, 2, 8}, attn);
  t["scores.snapkv"] = raw("F32", {2, 1, 8}, kv);
  t["scores.expected_attention"] = raw("F32", {2, 1, 8}, kv);
  t["scores.tova"] = raw("F32", {2, 1, 8}, kv);
  t["tokens.ids"] = raw("I64", {8}, std::vector<std::int64_t>{1, 5, 9, 2, 6, 3, 7, 4});
  t["qkv.layer0.query"] = raw("F32", {2, 2, 2}, q);
  t["qkv.layer0.key"] = raw("F32", {1, 8, 2}, k);
  t["qkv.layer0.value"] = raw("F32", {1, 8, 2}, k);
  if (bitmask)  // positions {0, 1, 6, 7} and {2, 3}: bit t of byte 0 is position t
    t["kept.chunkkv_c2.cr0.5"] = raw("U8", {2, 1}, std::vector<std::uint8_t>{0b11000011, 0b00001100});
  else
    t["kept.chunkkv_c2.cr0.5"] = raw("I64", {2, 4}, std::vector<std::int64_t>{0, 1, 6, 7, 2, 3, -1, -1});
  return io::encode_safetensors(t, {{"format", "kvaudit-fuzz"}});
}

void write_file(const std::string& path, const void* data, std::size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    std::abort();
  }
}

void remove_dir() { std::filesystem::remove_all(g_dir); }

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* base = std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : "/tmp";
  std::string templ = std::string(base) + "/kvaudit-fuzz-dump-XXXXXX";
  if (mkdtemp(templ.data()) == nullptr) std::abort();
  g_dir = templ;
  std::atexit(remove_dir);
  std::vector<std::uint8_t> dump = small_dump(false), bitmask = small_dump(true);
  write_file(g_dir + "/small.safetensors", dump.data(), dump.size());
  write_file(g_dir + "/small_bitmask.safetensors", bitmask.data(), bitmask.size());
  g_sha = io::sha256_hex({dump.data(), dump.size()});
  g_bitmask_sha = io::sha256_hex({bitmask.data(), bitmask.size()});
  const std::string tokens = "[1, 5, 9, 2, 6, 3, 7, 4]\n";
  write_file(g_dir + "/small.tokens.json", tokens.data(), tokens.size());
  g_tokens_sha = io::sha256_hex({reinterpret_cast<const std::uint8_t*>(tokens.data()), tokens.size()});
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string manifest(reinterpret_cast<const char*>(data), size);
  replace_all(manifest, "@TSHA@", g_tokens_sha);
  replace_all(manifest, "@SHA@", g_sha);
  replace_all(manifest, "@BSHA@", g_bitmask_sha);
  write_file(g_dir + "/manifest.json", manifest.data(), manifest.size());
  std::vector<io::PromptDump> dumps;
  try {
    dumps = io::load_dumps(g_dir);
  } catch (const InputError&) {
    return 0;
  }
  // Accepted: every promise load_dumps makes to the audit must hold.
  for (const auto& p : dumps) {
    for (const char* name : {"attention.window_mean", "scores.snapkv", "scores.tova"}) {
      ScoreTensor s = p.scores(name);
      if (static_cast<std::size_t>(s.layers * s.heads * s.tokens) != s.values.size() || s.tokens != p.tokens)
        report_and_trap("dump: score tensor inconsistent with the manifest", manifest);
    }
    for (const auto& [name, t] : p.tensors) {
      if (!io::parse_kept_name(name)) continue;
      for (Index l = 0; l < p.layers; ++l) {
        for (Index pos : io::kept_positions(t, l)) {
          if (pos < 0 || pos >= p.tokens) report_and_trap("dump: kept position outside [0, T) accepted", manifest);
        }
      }
    }
    for (const io::Needle& n : p.needles)
      if (n.begin < 0 || n.end > p.tokens || n.begin >= n.end) report_and_trap("dump: needle outside the prompt accepted", manifest);
  }
  return 0;
}
