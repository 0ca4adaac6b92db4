// Safetensors reader: exact round trips of every dtype, and each malformation class rejected with an
// InputError that names the file and the field at fault.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/io/half.h"
#include "core/io/safetensors.h"

namespace {

using kvaudit::Index;
using kvaudit::InputError;
using kvaudit::io::RawTensor;
using kvaudit::io::SafetensorsFile;

std::filesystem::path temp_dir() {
  auto dir = std::filesystem::temp_directory_path() / ("kvaudit_io_safetensors_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

std::string write_file(const std::string& name, const std::vector<std::uint8_t>& bytes) {
  std::string path = (temp_dir() / name).string();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return path;
}

// A file from a literal header and data region (the header length is computed, unless overridden).
std::vector<std::uint8_t> raw_file(const std::string& header, std::size_t data_bytes, std::optional<std::uint64_t> length = {}) {
  std::vector<std::uint8_t> out;
  const std::uint64_t n = length ? *length : header.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(n >> (8 * i)));
  for (char c : header) out.push_back(static_cast<std::uint8_t>(c));
  out.resize(out.size() + data_bytes, 0x5a);
  return out;
}

template <typename T>
std::vector<std::uint8_t> bytes_of(const std::vector<T>& v) {
  std::vector<std::uint8_t> out(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(out.data(), v.data(), out.size());
  return out;
}

// Asserts that opening `bytes` throws InputError "<path>: <field>: ..." whose problem mentions `problem`.
void expect_rejected(const std::string& name, const std::vector<std::uint8_t>& bytes, const std::string& field,
                     const std::string& problem) {
  std::string path = write_file(name, bytes);
  try {
    SafetensorsFile::open(path);
    ADD_FAILURE() << name << ": accepted a malformed file";
  } catch (const InputError& e) {
    std::string what = e.what();
    EXPECT_EQ(what.rfind(path + ": " + field + ": ", 0), 0u) << name << ": message names the wrong field: " << what;
    EXPECT_NE(what.find(problem), std::string::npos) << name << ": unexpected problem text: " << what;
  }
}

TEST(IoSafetensors, RoundTripsEveryDtypeExactly) {
  std::vector<float> f32 = {0.0f, -1.5f, 3.25f, 1e-30f, -7e20f, 0.1f};
  // F16 / BF16 bit patterns with known float values, including a subnormal half and negative zero.
  std::vector<std::uint16_t> f16 = {0x3c00 /*1*/, 0xc000 /*-2*/, 0x0001 /*2^-24*/, 0x8000 /*-0*/, 0x7bff /*65504*/};
  std::vector<std::uint16_t> bf16 = {0x3f80 /*1*/, 0xc040 /*-3*/, 0x4049 /*3.140625*/};
  std::vector<std::int32_t> i32 = {-1, 0, 2147483647};
  std::vector<std::int64_t> i64 = {-1, 4096, INT64_MAX};
  std::map<std::string, RawTensor> tensors = {
      {"a.f32", {"F32", {2, 3}, bytes_of(f32)}}, {"b.f16", {"F16", {5}, bytes_of(f16)}},
      {"c.bf16", {"BF16", {3, 1}, bytes_of(bf16)}}, {"d.i32", {"I32", {3}, bytes_of(i32)}},
      {"e.i64", {"I64", {1, 3}, bytes_of(i64)}}, {"f.empty", {"F32", {0, 4}, {}}}};
  std::string path = write_file("good.safetensors", kvaudit::io::encode_safetensors(tensors, {{"format", "pt"}}));
  SafetensorsFile f = SafetensorsFile::open(path);
  EXPECT_EQ(f.metadata().at("format"), "pt");
  ASSERT_EQ(f.entries().size(), 6u);

  auto a = f.read("a.f32");
  EXPECT_EQ(a.shape, (std::vector<Index>{2, 3}));
  EXPECT_EQ(a.values, f32);
  auto b = f.read("b.f16");
  EXPECT_EQ(b.values, (std::vector<float>{1.0f, -2.0f, std::ldexp(1.0f, -24), -0.0f, 65504.0f}));
  EXPECT_TRUE(std::signbit(b.values[3]));
  auto c = f.read("c.bf16");
  EXPECT_EQ(c.values, (std::vector<float>{1.0f, -3.0f, 3.140625f}));
  EXPECT_EQ(f.read("d.i32").integers, (std::vector<Index>{-1, 0, 2147483647}));
  EXPECT_EQ(f.read("e.i64").integers, (std::vector<Index>{-1, 4096, INT64_MAX}));
  EXPECT_TRUE(f.read("f.empty").values.empty());
  EXPECT_EQ(f.read("f.empty").shape, (std::vector<Index>{0, 4}));
  EXPECT_THROW(f.read("nope"), InputError);
}

TEST(IoSafetensors, RejectsFileShorterThanHeaderLength) {
  expect_rejected("short.st", {1, 2, 3}, "header length", "shorter than the 8-byte");
  expect_rejected("empty.st", {}, "header length", "shorter than the 8-byte");
}

TEST(IoSafetensors, RejectsHeaderPastEndOfFile) {
  expect_rejected("past_eof.st", raw_file("{}", 0, 1000), "header length", "past end of file");
  expect_rejected("huge_header.st", raw_file("{}", 0, std::uint64_t{1} << 62), "header length", "larger than 100 MB");
}

TEST(IoSafetensors, RejectsTruncatedData) {
  auto good = kvaudit::io::encode_safetensors({{"x", {"F32", {4}, bytes_of(std::vector<float>{1, 2, 3, 4})}}});
  good.resize(good.size() - 3);
  expect_rejected("truncated.st", good, "x.data_offsets", "past the data region");
}

TEST(IoSafetensors, RejectsBadJson) {
  expect_rejected("bad_json.st", raw_file("{\"x\": {\"dtype\": ", 0), "header", "invalid JSON");
  expect_rejected("not_object.st", raw_file("[1, 2]", 0), "header", "not a JSON object");
  expect_rejected("entry_not_object.st", raw_file("{\"x\": 3}", 0), "x", "not an object");
}

TEST(IoSafetensors, RejectsOffsetsOutsideAndInconsistent) {
  expect_rejected("outside.st", raw_file(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4),
                  "x.data_offsets", "past the data region");
  expect_rejected("reversed.st", raw_file(R"({"x":{"dtype":"F32","shape":[0],"data_offsets":[8,4]}})", 8),
                  "x.data_offsets", "begin > end");
  expect_rejected("negative.st", raw_file(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}})", 4),
                  "x.data_offsets", "non-negative");
  expect_rejected("three.st", raw_file(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}})", 4),
                  "x.data_offsets", "two non-negative integers");
  expect_rejected("overlap.st",
                  raw_file(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"y":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8),
                  "y.data_offsets", "overlaps");
  expect_rejected("gap.st", raw_file(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8), "x.data_offsets",
                  "gap");
  expect_rejected("trailing.st", raw_file(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 12),
                  "data_offsets", "trailing bytes");
}

TEST(IoSafetensors, RejectsShapeBytesMismatch) {
  expect_rejected("mismatch.st", raw_file(R"({"x":{"dtype":"F16","shape":[3],"data_offsets":[0,8]}})", 8),
                  "x.data_offsets", "needs 6");
  expect_rejected("bad_dim.st", raw_file(R"({"x":{"dtype":"F16","shape":[-3],"data_offsets":[0,6]}})", 6), "x.shape",
                  "non-negative");
  expect_rejected("float_dim.st", raw_file(R"({"x":{"dtype":"F16","shape":[1.5],"data_offsets":[0,6]}})", 6), "x.shape",
                  "non-negative");
  expect_rejected("no_shape.st", raw_file(R"({"x":{"dtype":"F16","data_offsets":[0,6]}})", 6), "x.shape", "missing");
}

TEST(IoSafetensors, RejectsUnknownDtype) {
  expect_rejected("f64.st", raw_file(R"({"x":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})", 8), "x.dtype",
                  "unsupported dtype 'F64'");
  expect_rejected("dtype_num.st", raw_file(R"({"x":{"dtype":4,"shape":[1],"data_offsets":[0,4]}})", 4), "x.dtype",
                  "not a string");
}

TEST(IoSafetensors, RejectsOverflowingShapes) {
  // 2^32 * 2^32 elements overflows the element count; 2^62 elements of 4 bytes overflows the byte count.
  expect_rejected("overflow_count.st",
                  raw_file(R"({"x":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}})", 0), "x.shape",
                  "element count overflows");
  expect_rejected("overflow_bytes.st",
                  raw_file(R"({"x":{"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,0]}})", 0), "x.shape",
                  "byte count overflows");
  expect_rejected("overflow_dim.st",
                  raw_file(R"({"x":{"dtype":"F32","shape":[18446744073709551615],"data_offsets":[0,0]}})", 0), "x.shape",
                  "64-bit");
}

TEST(IoSafetensors, RejectsDuplicatesUnknownFieldsAndBadMetadata) {
  expect_rejected("dup.st",
                  raw_file(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4),
                  "x", "appears twice");
  expect_rejected("extra_field.st", raw_file(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"scale":2}})", 4),
                  "x.scale", "unknown field");
  expect_rejected("meta_num.st", raw_file(R"({"__metadata__":{"a":1}})", 0), "__metadata__.a", "must be strings");
  expect_rejected("meta_array.st", raw_file(R"({"__metadata__":[]})", 0), "__metadata__", "not an object");
}

TEST(IoSafetensors, MissingFileNamesTheFile) {
  std::string path = (temp_dir() / "does_not_exist.safetensors").string();
  try {
    SafetensorsFile::open(path);
    ADD_FAILURE() << "opened a missing file";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(path + ": file: ", 0), 0u) << e.what();
  }
}

// Any random set of tensors round trips bit-exactly; every strict prefix of the file is rejected with an
// InputError (never a crash, never a silently shorter tensor).
RC_GTEST_PROP(IoSafetensors, RandomFilesRoundTripAndEveryTruncationIsRejected, ()) {
  const auto count = *rc::gen::inRange<int>(1, 4);
  std::map<std::string, RawTensor> tensors;
  for (int i = 0; i < count; ++i) {
    const std::string dtype = *rc::gen::element<std::string>("F32", "F16", "BF16", "I32", "I64");
    const auto dims = *rc::gen::container<std::vector<Index>>(*rc::gen::inRange<int>(0, 3), rc::gen::inRange<Index>(0, 5));
    Index n = 1;
    for (Index d : dims) n *= d;
    const std::size_t width = kvaudit::io::safetensors_dtype_width(dtype);
    auto bytes = *rc::gen::container<std::vector<std::uint8_t>>(static_cast<std::size_t>(n) * width, rc::gen::arbitrary<std::uint8_t>());
    tensors["t" + std::to_string(i)] = {dtype, dims, bytes};
  }
  RC_CLASSIFY(count > 1, "several tensors");
  const auto file = kvaudit::io::encode_safetensors(tensors);
  const std::string path = write_file("prop.st", file);
  SafetensorsFile f = SafetensorsFile::open(path);
  for (const auto& [name, t] : tensors) {
    const auto& e = f.entry(name);
    RC_ASSERT(e.dtype == t.dtype);
    RC_ASSERT(e.shape == t.shape);
    auto d = f.data(e);
    RC_ASSERT(std::vector<std::uint8_t>(d.begin(), d.end()) == t.bytes);
  }
  const auto cut = *rc::gen::inRange<std::size_t>(0, file.size());
  const std::string cut_path = write_file("prop_cut.st", std::vector<std::uint8_t>(file.begin(), file.begin() + static_cast<long>(cut)));
  // A cut that leaves the whole header and only drops bytes of zero-sized data cannot happen: if the data
  // region is empty the cut removes header bytes; otherwise it removes data. Either way: rejected.
  RC_ASSERT_THROWS_AS(SafetensorsFile::open(cut_path), InputError);
}

}  // namespace
