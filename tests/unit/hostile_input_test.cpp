// Hostile input against the real binary ($KVAUDIT_BIN): every rejected class of docs/hardening.md, one test per
// row, across the subcommands. Each must give exit 2, nothing on stdout, exactly one stderr line naming the
// offending file or flag, and no output file. Plus the accepted-on-purpose classes (negative, denormal scores).
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/io/sha256.h"

namespace fs = std::filesystem;

namespace {

struct Outcome {
  int code = -1;
  bool signaled = false;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << p;
}

template <typename T>
std::string le(const std::vector<T>& v) {
  std::string s(v.size() * sizeof(T), '\0');
  if (!v.empty()) std::memcpy(s.data(), v.data(), s.size());
  return s;
}

// An NPY file with the given header text (padded as numpy pads it) and raw payload; `declared_len` overrides
// the header length field (a lie, for the header-past-EOF class).
std::string npy(const std::string& header, const std::string& payload, long declared_len = -1) {
  std::string h = header;
  while ((10 + h.size() + 1) % 64 != 0) h += ' ';
  h += '\n';
  const long n = declared_len >= 0 ? declared_len : static_cast<long>(h.size());
  std::string out = std::string("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(n & 0xff);
  out += static_cast<char>((n >> 8) & 0xff);
  return out + h + payload;
}
std::string npy_f4(const std::string& shape, const std::vector<float>& v) {
  return npy("{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }", le(v));
}
std::string npy_f8(const std::string& shape, const std::vector<double>& v) {
  return npy("{'descr': '<f8', 'fortran_order': False, 'shape': " + shape + ", }", le(v));
}

const std::vector<float> kScores = {8, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 0, 0, 3, 1};

// A safetensors file: u64 header length, JSON header, data.
std::string safetensors(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  const std::uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  return out + header + data;
}

class HostileInput : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("kvaudit_hostile_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    auto at = [](const std::string& name) { return dir_ / name; };
    const std::string good = npy_f4("(16,)", kScores);
    write_bytes(at("good.npy"), good);
    write_bytes(at("truncated.npy"), good.substr(0, good.size() - 5));
    write_bytes(at("truncated_header.npy"), good.substr(0, 9));
    std::string magic = good;
    magic[5] = 'X';
    write_bytes(at("wrong_magic.npy"), magic);
    write_bytes(at("header_past_eof.npy"), npy("{'descr': '<f4', 'fortran_order': False, 'shape': (16,), }", "", 60000));
    write_bytes(at("overflow.npy"), npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296), }", ""));
    write_bytes(at("negative_dim.npy"), npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-3,), }", ""));
    write_bytes(at("absurd_dim.npy"), npy("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", ""));
    std::vector<std::uint16_t> halves(16, 0x3c00);
    write_bytes(at("dtype_mismatch.npy"), npy("{'descr': '<f4', 'fortran_order': False, 'shape': (16,), }", le(halves)));
    std::vector<std::int64_t> ints(16, 1);
    write_bytes(at("int_scores.npy"), npy("{'descr': '<i8', 'fortran_order': False, 'shape': (16,), }", le(ints)));
    write_bytes(at("bigendian.npy"), npy("{'descr': '>f4', 'fortran_order': False, 'shape': (16,), }", le(kScores)));
    std::vector<float> nan = kScores, inf = kScores, neg = kScores, denormal = kScores;
    nan[15] = std::numeric_limits<float>::quiet_NaN();
    inf[15] = std::numeric_limits<float>::infinity();
    for (float& x : neg) x = -x;
    for (float& x : denormal) x *= std::numeric_limits<float>::denorm_min();
    write_bytes(at("nan.npy"), npy_f4("(16,)", nan));
    write_bytes(at("inf.npy"), npy_f4("(16,)", inf));
    write_bytes(at("negative.npy"), npy_f4("(16,)", neg));
    write_bytes(at("denormal.npy"), npy_f4("(16,)", denormal));
    write_bytes(at("empty.npy"), npy_f4("(0,)", {}));
    write_bytes(at("zero_T.npy"), npy_f4("(2, 0)", {}));
    // Attention (3 heads, T = 16) for page-select / union-overhead: uniform rows are distributions.
    std::vector<float> attn(48, 1.0f / 16), attn_neg = attn, attn_nan = attn, attn_sum = attn;
    attn_neg[0] = -1.0f / 16;
    attn_neg[1] = 3.0f / 16;
    attn_nan[0] = std::numeric_limits<float>::quiet_NaN();
    for (int t = 0; t < 16; ++t) attn_sum[t] = 0.5f;
    write_bytes(at("attn.npy"), npy_f4("(3, 16)", attn));
    write_bytes(at("attn_neg.npy"), npy_f4("(3, 16)", attn_neg));
    write_bytes(at("attn_nan.npy"), npy_f4("(3, 16)", attn_nan));
    write_bytes(at("attn_sum.npy"), npy_f4("(3, 16)", attn_sum));
    write_bytes(at("probs.npy"), npy_f4("(4,)", {0.25f, 0.25f, 0.25f, 0.25f}));
    write_bytes(at("probs_neg.npy"), npy_f4("(4,)", {0.5f, -0.25f, 0.5f, 0.25f}));
    write_bytes(at("probs_nan.npy"), npy_f4("(4,)", {0.5f, std::numeric_limits<float>::quiet_NaN(), 0.25f, 0.25f}));
    // float64 files: values float32 cannot hold (kept exactly by the reader, narrowed only where the
    // computation is float32, and then reported), and one beyond float32's range.
    std::vector<double> scores64(kScores.begin(), kScores.end()), huge64 = scores64;
    scores64[1] = 1.0 / 3, scores64[2] = 0.1;
    huge64[3] = 1e300;
    write_bytes(at("scores_f64.npy"), npy_f8("(16,)", scores64));
    write_bytes(at("scores_f64_huge.npy"), npy_f8("(16,)", huge64));
    write_bytes(at("probs_f64.npy"), npy_f8("(3,)", {1.0 / 3, 1.0 / 3, 1.0 / 3}));
    // check --selection files.
    write_bytes(at("sel_string.json"), "{\"kept\": [0, \"x\"]}");
    write_bytes(at("sel_truncated.json"), "{\"kept\": [0, 1");
    write_bytes(at("sel_u64.json"), "{\"kept\": [18446744073709551615]}");
    write_bytes(at("sel_float.json"), "{\"kept\": [0, 1.5]}");
    // conform --replay lines: one good line, then one broken field each.
    const std::string line =
        "{\"id\": 1, \"method\": \"eg-chunkkv\", \"scores\": [[1, 2, 3, 4, 5, 6, 7, 8]], \"compression_ratio\": 0.5, "
        "\"chunk_length\": 4, \"rescue_size\": 2, \"entropy_threshold\": null}";
    auto edit = [&](const std::string& from, const std::string& to) {
      std::string s = line;
      s.replace(s.find(from), from.size(), to);
      return s + "\n";
    };
    write_bytes(at("replay_truncated.jsonl"), line.substr(0, 60) + "\n");
    write_bytes(at("replay_rho.jsonl"), edit("0.5,", "1e5,"));
    write_bytes(at("replay_float_overflow.jsonl"), edit("[[1, 2", "[[1e300, 2"));
    write_bytes(at("replay_not_float32.jsonl"), edit("[[1, 2", "[[0.1, 2"));
    write_bytes(at("replay_chunk_huge.jsonl"), edit("\"chunk_length\": 4", "\"chunk_length\": 1e30"));
    write_bytes(at("replay_chunk_float.jsonl"), edit("\"chunk_length\": 4", "\"chunk_length\": 4.5"));
    write_bytes(at("replay_flat_scores.jsonl"), edit("[[1, 2, 3, 4, 5, 6, 7, 8]]", "[1, 2, 3]"));
    write_bytes(at("replay_empty_scores.jsonl"), edit("[[1, 2, 3, 4, 5, 6, 7, 8]]", "[]"));
    write_bytes(at("replay_empty.jsonl"), "");
    // audit --data: a manifest that is not JSON, and one whose file is a truncated safetensors.
    fs::create_directories(at("data_badjson"));
    write_bytes(at("data_badjson") / "manifest.json", "{\"schema_version\": 1, \"prompts\": [");
    fs::create_directories(at("data_truncated"));
    write_bytes(at("data_truncated") / "x.safetensors", safetensors("{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", "abc"));
    write_bytes(at("data_truncated") / "manifest.json",
                "{\"schema_version\": 1, \"prompts\": [{\"name\": \"x\", \"kind\": \"qa\", \"file\": \"x.safetensors\", \"sha256\": \"" +
                    std::string(64, 'a') + "\", \"tokens\": 4, \"layers\": 1, \"q_heads\": 1, \"kv_heads\": 1, \"head_dim\": 1, "
                    "\"window\": 1, \"qkv_layers\": [], \"needle\": null, \"tensors\": {\"a\": {\"dtype\": \"F32\", \"shape\": [4]}}}]}");
    write_regex_bombs();
  }
  // Found by fuzzing: headers and tensor names long enough to overflow std::regex's recursion (SIGSEGV).
  static void write_regex_bombs() {
    std::string dims = "(";
    for (int i = 0; i < 30000; ++i) dims += "1, ";
    std::string h = "{'descr': '<f4', 'fortran_order': False, 'shape': " + dims + "), }\n";
    std::string v2 = std::string("\x93NUMPY\x02\x00", 8);
    const std::uint32_t n = static_cast<std::uint32_t>(h.size());
    v2.append(reinterpret_cast<const char*>(&n), 4);
    write_bytes(dir_ / "huge_header.npy", v2 + h + std::string(4, '\0'));

    const std::string name = "kept." + std::string(200000, 'a') + ".cr0.5";
    const std::string file = safetensors("{\"" + name + "\":{\"dtype\":\"I64\",\"shape\":[1,1],\"data_offsets\":[0,8]}}",
                                         std::string(8, '\0'));
    fs::create_directories(dir_ / "data_longname");
    write_bytes(dir_ / "data_longname" / "x.safetensors", file);
    const std::string sha = kvaudit::io::sha256_hex({reinterpret_cast<const std::uint8_t*>(file.data()), file.size()});
    write_bytes(dir_ / "data_longname" / "manifest.json",
                "{\"schema_version\": 1, \"prompts\": [{\"name\": \"x\", \"kind\": \"qa\", \"file\": \"x.safetensors\", \"sha256\": \"" +
                    sha + "\", \"tokens\": 4, \"layers\": 1, \"q_heads\": 1, \"kv_heads\": 1, \"head_dim\": 1, \"window\": 1, "
                    "\"qkv_layers\": [], \"needle\": null, \"tensors\": {\"" + name + "\": {\"dtype\": \"I64\", \"shape\": [1, 1]}}}]}");
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  void SetUp() override {
    const char* bin = std::getenv("KVAUDIT_BIN");
    ASSERT_NE(bin, nullptr) << "KVAUDIT_BIN must name the kvaudit executable (set by CTest)";
    bin_ = bin;
    ASSERT_TRUE(fs::exists(bin_)) << bin_;
  }

  static std::string p(const std::string& name) { return "'" + (dir_ / name).string() + "'"; }

  Outcome run(const std::string& args) const {
    const std::string tag = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    const fs::path out = dir_ / (tag + ".stdout"), err = dir_ / (tag + ".stderr");
    const std::string cmd = "'" + bin_ + "' " + args + " >'" + out.string() + "' 2>'" + err.string() + "'";
    const int status = std::system(cmd.c_str());
    Outcome r;
    r.signaled = WIFSIGNALED(status);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
  }

  // The policy for every rejected class: exit 2, empty stdout, exactly one stderr line holding `needle`, and
  // `must_not_exist` (an output path the command was told to write) absent afterwards.
  void expect_rejected(const std::string& args, const std::string& needle, const std::string& must_not_exist = "") const {
    const Outcome r = run(args);
    EXPECT_FALSE(r.signaled) << args;
    EXPECT_EQ(r.code, 2) << args << "\nstderr: " << r.err;
    EXPECT_EQ(r.out, "") << args;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << "\nstderr: " << r.err;
    EXPECT_EQ(r.err.rfind("kvaudit: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << "missing '" << needle << "' in: " << r.err;
    if (!must_not_exist.empty()) {
      EXPECT_FALSE(fs::exists(dir_ / must_not_exist)) << must_not_exist << " was written";
    }
  }

  std::string select(const std::string& scores, const std::string& extra = "") const {
    return "select --method eg-chunkkv --scores " + p(scores) + " --compression-ratio 0.5 --chunk-length 4 --rescue-size 2 " + extra;
  }
  std::string replay(const std::string& file, const std::string& report) const {
    return "conform --impl 'cat >/dev/null' --timeout-ms 2000 --replay " + p(file) + " --report " + p(report);
  }

  static fs::path dir_;
  std::string bin_;
};

fs::path HostileInput::dir_;

// ---- NPY files (select; the reader is shared by check, partition, page-select, union-overhead) -----------
TEST_F(HostileInput, NpyTruncatedData) { expect_rejected(select("truncated.npy"), "truncated.npy: data: holds 59 bytes"); }
TEST_F(HostileInput, NpyTruncatedHeader) { expect_rejected(select("truncated_header.npy"), "magic: not an NPY file"); }
TEST_F(HostileInput, NpyWrongMagic) { expect_rejected(select("wrong_magic.npy"), "wrong_magic.npy: magic: not an NPY file"); }
TEST_F(HostileInput, NpyHeaderPastEof) { expect_rejected(select("header_past_eof.npy"), "header_len: header runs past end of file"); }
TEST_F(HostileInput, NpyShapeProductOverflows) { expect_rejected(select("overflow.npy"), "shape: element count overflows"); }
TEST_F(HostileInput, NpyNegativeDimension) { expect_rejected(select("negative_dim.npy"), "shape: dimension '-3' is not a non-negative integer"); }
TEST_F(HostileInput, NpyAbsurdDimension) { expect_rejected(select("absurd_dim.npy"), "dimension '99999999999999999999'"); }
TEST_F(HostileInput, NpyDtypeShapeMismatch) { expect_rejected(select("dtype_mismatch.npy"), "data: holds 32 bytes, shape and dtype need 64"); }
TEST_F(HostileInput, NpyUnsupportedDtype) { expect_rejected(select("bigendian.npy"), "descr: unsupported dtype '>f4'"); }
TEST_F(HostileInput, NpyIntegerScores) { expect_rejected(select("int_scores.npy"), "dtype: expected float16, float32 or float64 scores"); }
TEST_F(HostileInput, NpyHugeHeader) { expect_rejected(select("huge_header.npy"), "huge_header.npy: shape: expected (T,) or (heads, T), got rank 30000"); }
TEST_F(HostileInput, NpyMissingFile) { expect_rejected(select("no_such_file.npy"), "no_such_file.npy: file: cannot open"); }

// ---- score values and shapes -------------------------------------------------------------------------------
TEST_F(HostileInput, SelectNaNScore) { expect_rejected(select("nan.npy"), "nan.npy: values: NaN at flat index 15"); }
TEST_F(HostileInput, SelectInfScore) { expect_rejected(select("inf.npy"), "inf.npy: values: infinity at flat index 15"); }
TEST_F(HostileInput, SelectFloat64BeyondFloat32) { expect_rejected(select("scores_f64_huge.npy"), "scores_f64_huge.npy: values (beyond float32's range): infinity at flat index 3"); }
TEST_F(HostileInput, SelectEmptyArray) { expect_rejected(select("empty.npy"), "shape: empty score array"); }
TEST_F(HostileInput, SelectZeroTokens) { expect_rejected(select("zero_T.npy"), "shape: empty score array"); }
TEST_F(HostileInput, CheckNaNScore) {
  expect_rejected("check --method eg-chunkkv --scores " + p("nan.npy") + " --compression-ratio 0.5 --selection " + p("sel_float.json"),
                  "NaN at flat index 15");
}

// ---- compression ratio text ---------------------------------------------------------------------------------
TEST_F(HostileInput, RatioOne) { expect_rejected("select --method chunkkv --scores " + p("good.npy") + " --compression-ratio 1", "must be in [0, 1), got '1'"); }
TEST_F(HostileInput, RatioAboveOne) { expect_rejected("page-select --attn " + p("attn.npy") + " --group-size 3 --compression-ratio 1.5", "must be in [0, 1), got '1.5'"); }
TEST_F(HostileInput, RatioNegative) { expect_rejected("select --method chunkkv --scores " + p("good.npy") + " --compression-ratio -0.1", "not a plain decimal number: '-0.1'"); }
TEST_F(HostileInput, RatioExponent) { expect_rejected("select --method chunkkv --scores " + p("good.npy") + " --compression-ratio 1e-1", "not a plain decimal number: '1e-1'"); }
TEST_F(HostileInput, RatioNotANumber) { expect_rejected("select --method chunkkv --scores " + p("good.npy") + " --compression-ratio nan", "not a plain decimal number: 'nan'"); }
TEST_F(HostileInput, RatioTrailingJunk) { expect_rejected("union-overhead --attn " + p("attn.npy") + " --group-size 3 --compression-ratio 0.5x", "not a plain decimal number: '0.5x'"); }
TEST_F(HostileInput, RatioTooLong) {
  expect_rejected("select --method chunkkv --scores " + p("good.npy") + " --compression-ratio 0." + std::string(5000, '5'), "longer than 4096 characters");
}
TEST_F(HostileInput, RatioEmpty) { expect_rejected("select --method chunkkv --scores " + p("good.npy") + " --compression-ratio ''", "not a plain decimal number: ''"); }

// ---- check --selection -------------------------------------------------------------------------------------
TEST_F(HostileInput, CheckSelectionNotInteger) {
  expect_rejected("check " + select("good.npy").substr(7) + " --selection " + p("sel_string.json"), "kept: every entry must be an integer");
}
TEST_F(HostileInput, CheckSelectionTruncatedJson) {
  expect_rejected("check " + select("good.npy").substr(7) + " --selection " + p("sel_truncated.json"), "json: not valid JSON");
}
TEST_F(HostileInput, CheckSelectionOutOfRange) {
  expect_rejected("check " + select("good.npy").substr(7) + " --selection " + p("sel_u64.json"), "kept: integer out of range");
}

// ---- partition -------------------------------------------------------------------------------------------------
TEST_F(HostileInput, PartitionGroupsAboveN) { expect_rejected("partition --probs " + p("probs.npy") + " --entropy-budget 1 --groups 5", "--groups: M: must be in [1, 4]"); }
TEST_F(HostileInput, PartitionGroupsZero) { expect_rejected("partition --probs " + p("probs.npy") + " --entropy-budget 1 --groups 0", "--groups: M: must be in [1, 4]"); }
TEST_F(HostileInput, PartitionNegativeProbability) { expect_rejected("partition --probs " + p("probs_neg.npy") + " --entropy-budget 1", "probabilities must be >= 0"); }
TEST_F(HostileInput, PartitionNaNProbability) { expect_rejected("partition --probs " + p("probs_nan.npy") + " --entropy-budget 1", "NaN at flat index 1"); }
TEST_F(HostileInput, PartitionNotADistribution) { expect_rejected("partition --probs " + p("good.npy") + " --entropy-budget 1", "not 1 within 1e-4"); }
TEST_F(HostileInput, PartitionEmptyVector) { expect_rejected("partition --probs " + p("empty.npy") + " --entropy-budget 1", "at least one"); }
TEST_F(HostileInput, PartitionBudgetNaN) { expect_rejected("partition --probs " + p("probs.npy") + " --entropy-budget nan", "--entropy-budget: R: must be finite and >= 0"); }
TEST_F(HostileInput, PartitionBudgetNegative) { expect_rejected("partition --probs " + p("probs.npy") + " --entropy-budget -1", "--entropy-budget: R: must be finite and >= 0"); }

// ---- page-select / union-overhead -----------------------------------------------------------------------------
TEST_F(HostileInput, PageSizeZero) { expect_rejected("page-select --attn " + p("attn.npy") + " --group-size 3 --compression-ratio 0.5 --page-size 0", "--page-size: page_size: must be >= 1"); }
TEST_F(HostileInput, UnionPageSizeZero) { expect_rejected("union-overhead --attn " + p("attn.npy") + " --group-size 3 --compression-ratio 0.5 --page-size 0", "--page-size: page_size: must be >= 1"); }
TEST_F(HostileInput, PageGroupSizeNotDividing) { expect_rejected("page-select --attn " + p("attn.npy") + " --group-size 2 --compression-ratio 0.5", "q_heads 3 is not divisible by 2"); }
TEST_F(HostileInput, PageNegativeSinks) { expect_rejected("page-select --attn " + p("attn.npy") + " --group-size 3 --compression-ratio 0.5 --sinks -1", "--sinks: sinks: must be >= 0"); }
TEST_F(HostileInput, PageNegativeAttention) { expect_rejected("page-select --attn " + p("attn_neg.npy") + " --group-size 3 --compression-ratio 0.5", "row 0 has a negative entry"); }
TEST_F(HostileInput, PageNaNAttention) { expect_rejected("union-overhead --attn " + p("attn_nan.npy") + " --group-size 3 --compression-ratio 0.5", "NaN at flat index 0"); }
TEST_F(HostileInput, PageRowNotADistribution) { expect_rejected("page-select --attn " + p("attn_sum.npy") + " --group-size 3 --compression-ratio 0.5", "row 0 sums to 8.000000, not a distribution"); }
TEST_F(HostileInput, PageZeroTokens) { expect_rejected("page-select --attn " + p("zero_T.npy") + " --group-size 1 --compression-ratio 0.5", "expected a floating (q_heads, T) array"); }

// ---- flags ---------------------------------------------------------------------------------------------------------
TEST_F(HostileInput, UnknownFlag) { expect_rejected(select("good.npy", "--bogus"), "usage: The following argument was not expected: --bogus"); }
TEST_F(HostileInput, UnknownFlagPartition) { expect_rejected("partition --probs " + p("probs.npy") + " --entropy-budget 1 --frobnicate 3", "--frobnicate"); }
TEST_F(HostileInput, NonNumericFlag) { expect_rejected("page-select --attn " + p("attn.npy") + " --group-size 3 --compression-ratio 0.5 --page-size x", "Could not convert: --page-size = x"); }

// ---- conform --replay: the request line is untrusted input --------------------------------------------------
TEST_F(HostileInput, ReplayTruncatedLine) { expect_rejected(replay("replay_truncated.jsonl", "r1.json"), "--replay line 1: request: not JSON", "r1.json"); }
TEST_F(HostileInput, ReplayRatioOutOfRange) { expect_rejected(replay("replay_rho.jsonl", "r2.json"), "--replay line 1: compression_ratio: must be a decimal number in [0, 1) (as text or a JSON number), got 1e5", "r2.json"); }
TEST_F(HostileInput, ReplayScoreOverflowsFloat32) { expect_rejected(replay("replay_float_overflow.jsonl", "r3.json"), "--replay line 1: scores:", "r3.json"); }
// A score float32 cannot hold is rounded by default (docs/conform.md), refused under --replay-strict.
TEST_F(HostileInput, ReplayScoreNotFloat32IsRefusedWhenStrict) { expect_rejected(replay("replay_not_float32.jsonl", "r10.json") + " --replay-strict", "--replay line 1: scores: value 0.1 is not a float32 value (--replay-strict)", "r10.json"); }
TEST_F(HostileInput, ReplayChunkLengthHuge) { expect_rejected(replay("replay_chunk_huge.jsonl", "r4.json"), "--replay line 1: chunk_length: must be an integer", "r4.json"); }
TEST_F(HostileInput, ReplayChunkLengthFraction) { expect_rejected(replay("replay_chunk_float.jsonl", "r5.json"), "--replay line 1: chunk_length: must be an integer", "r5.json"); }
TEST_F(HostileInput, ReplayFlatScores) { expect_rejected(replay("replay_flat_scores.jsonl", "r6.json"), "--replay line 1: scores: must be a non-empty array of rows", "r6.json"); }
TEST_F(HostileInput, ReplayEmptyScores) { expect_rejected(replay("replay_empty_scores.jsonl", "r7.json"), "--replay line 1: scores: must be a non-empty array of rows", "r7.json"); }
TEST_F(HostileInput, ReplayEmptyFile) { expect_rejected(replay("replay_empty.jsonl", "r8.json"), "holds no request line", "r8.json"); }
TEST_F(HostileInput, ConformNegativeCases) { expect_rejected("conform --impl true --cases -1 --report " + p("r9.json"), "--cases: count: must be >= 0", "r9.json"); }

// ---- audit --data with a broken manifest ----------------------------------------------------------------------
TEST_F(HostileInput, AuditManifestNotJson) {
  expect_rejected("audit --quick --quiet --data " + p("data_badjson") + " --out " + p("out_badjson"), "manifest.json: json: invalid JSON", "out_badjson");
}
TEST_F(HostileInput, AuditTruncatedSafetensors) {
  expect_rejected("audit --quick --quiet --data " + p("data_truncated") + " --out " + p("out_truncated"),
                  "x.safetensors: a.data_offsets: ends at 16, past the data region", "out_truncated");
}
TEST_F(HostileInput, AuditMissingManifest) {
  expect_rejected("audit --quick --quiet --data " + p("no_such_dir") + " --out " + p("out_missing"), "manifest.json: file: cannot open", "out_missing");
}

TEST_F(HostileInput, DumpTensorNameHuge) {
  expect_rejected("page-select --data " + p("data_longname") + " --prompt x --layer 0 --group-size 1 --compression-ratio 0.5",
                  "unknown tensor name");
}

// ---- accepted on purpose (docs/hardening.md, "Score policy") --------------------------------------------------
// Negative scores are legal for ChunkKV / EG-ChunkKV: kvpress ranks raw scores (and rebases them for the entropy),
// the exact flavour clamps them at 0. Both flavours must select, keep the budget, and say so on stdout only.
TEST_F(HostileInput, NegativeScoresAreSelectedNotRejected) {
  for (const char* flavour : {"kvpress", "exact"}) {
    const Outcome r = run(select("negative.npy", std::string("--flavour ") + flavour));
    ASSERT_EQ(r.code, 0) << flavour << ": " << r.err;
    EXPECT_EQ(r.err, "");
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["kept"].size(), 8u) << flavour << ": " << r.out;  // budget max(1, floor(0.5 * 16)) = 8
  }
}
// Denormal scores are finite numbers; they select like any other (the budget is still met).
TEST_F(HostileInput, DenormalScoresAreSelected) {
  const Outcome r = run(select("denormal.npy"));
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["kept"].size(), 8u) << r.out;
}

// float64 is never narrowed silently: select computes in float32 and says how many values that rounded;
// partition solves the stored values exactly.
TEST_F(HostileInput, Float64ScoresReportTheirNarrowing) {
  const Outcome r = run(select("scores_f64.npy"));
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["precision"]["input_dtype"], "<f8");
  EXPECT_EQ(j["precision"]["computes_in"], "float32");
  EXPECT_EQ(j["precision"]["inputs_rounded_to_float32"], 2);  // 1/3 and 0.1
  const auto f4 = nlohmann::json::parse(run(select("good.npy")).out);
  EXPECT_EQ(f4["precision"]["inputs_rounded_to_float32"], 0);
}
TEST_F(HostileInput, Float64ProbabilitiesAreSolvedAsStored) {
  const Outcome r = run("partition --probs " + p("probs_f64.npy") + " --entropy-budget 2 --solver enumerate");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["input_dtype"], "<f8");
  // Three singletons of fl(1/3) have H > log2 3 > 1.58 <= 2: all three groups, feasible, certified.
  EXPECT_EQ(j["groups"], 3);
  EXPECT_TRUE(j["certified"].get<bool>());
}
// Any number of decimal digits: trailing zeros change nothing.
TEST_F(HostileInput, RatioWithManyDigitsIsExact) {
  const auto a = nlohmann::json::parse(run("budget --tokens 1000 --compression-ratio 0.5").out);
  const Outcome r = run("budget --tokens 1000 --compression-ratio 0.5000000000000000000000000000001");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto b = nlohmann::json::parse(r.out);
  const auto c = nlohmann::json::parse(run("budget --tokens 1000 --compression-ratio 0.50000000000000000000").out);
  EXPECT_EQ(c["exact_budget"], a["exact_budget"]);
  EXPECT_EQ(b["exact_budget"].get<long>(), a["exact_budget"].get<long>() - 1);  // just above 1/2: floor(499.999...) = 499
}

}  // namespace
