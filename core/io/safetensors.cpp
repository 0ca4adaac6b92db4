// Strict safetensors reader over a read-only mmap, and the encoder tests use to build good and bad files.
#include "core/io/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <set>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/io/half.h"

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian; so must the host be");

namespace kvaudit::io {

// Headers beyond this are rejected before parsing, as the reference implementation does (100 MB).
constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;

struct SafetensorsFile::Mapping {
  const std::uint8_t* data = nullptr;
  std::size_t size = 0;
  ~Mapping() {
    if (data != nullptr) munmap(const_cast<std::uint8_t*>(data), size);
  }
};

std::size_t safetensors_dtype_width(const std::string& dtype) {
  if (dtype == "F32" || dtype == "I32") return 4;
  if (dtype == "F16" || dtype == "BF16") return 2;
  if (dtype == "I64") return 8;
  if (dtype == "U8") return 1;
  return 0;
}

namespace {

std::shared_ptr<const SafetensorsFile::Mapping> map_file(const std::string& path);

// Reads a non-negative integer that fits in uint64 from a JSON value; false otherwise.
bool as_u64(const nlohmann::json& v, std::uint64_t& out) {
  if (v.is_number_unsigned()) {
    out = v.get<std::uint64_t>();
    return true;
  }
  if (v.is_number_integer() && v.get<std::int64_t>() >= 0) {
    out = static_cast<std::uint64_t>(v.get<std::int64_t>());
    return true;
  }
  return false;
}

SafetensorsEntry parse_entry(const std::string& path, const std::string& name, const nlohmann::json& v) {
  if (name.empty()) throw InputError(path, "header", "empty tensor name");
  if (!v.is_object()) throw InputError(path, name, "tensor entry is not an object");
  for (const auto& [key, _] : v.items()) {
    if (key != "dtype" && key != "shape" && key != "data_offsets") {
      throw InputError(path, name + "." + key, "unknown field in tensor entry");
    }
  }
  SafetensorsEntry e;
  e.name = name;
  if (!v.contains("dtype") || !v["dtype"].is_string()) throw InputError(path, name + ".dtype", "missing or not a string");
  e.dtype = v["dtype"].get<std::string>();
  std::size_t width = safetensors_dtype_width(e.dtype);
  if (width == 0) throw InputError(path, name + ".dtype", "unsupported dtype '" + e.dtype + "' (F32, F16, BF16, I32, I64, U8)");

  if (!v.contains("shape") || !v["shape"].is_array()) throw InputError(path, name + ".shape", "missing or not an array");
  // Element count and byte count with overflow checks: each multiplication is guarded before it happens.
  std::uint64_t count = 1;
  for (const auto& d : v["shape"]) {
    std::uint64_t dim = 0;
    if (!as_u64(d, dim) || dim > static_cast<std::uint64_t>(INT64_MAX)) {
      throw InputError(path, name + ".shape", "dimension is not a non-negative 64-bit integer");
    }
    if (dim != 0 && count > UINT64_MAX / dim) throw InputError(path, name + ".shape", "element count overflows 64 bits");
    count *= dim;
    e.shape.push_back(static_cast<Index>(dim));
  }
  if (count > UINT64_MAX / width) throw InputError(path, name + ".shape", "byte count overflows 64 bits");
  std::uint64_t bytes = count * width;

  const auto& off = v.contains("data_offsets") ? v["data_offsets"] : nlohmann::json();
  if (!off.is_array() || off.size() != 2 || !as_u64(off[0], e.begin) || !as_u64(off[1], e.end)) {
    throw InputError(path, name + ".data_offsets", "must be two non-negative integers [begin, end]");
  }
  if (e.begin > e.end) throw InputError(path, name + ".data_offsets", "begin > end");
  if (e.end - e.begin != bytes) {
    throw InputError(path, name + ".data_offsets",
                     "holds " + std::to_string(e.end - e.begin) + " bytes but shape x " + e.dtype + " needs " +
                         std::to_string(bytes));
  }
  return e;
}

template <typename T>
T load_le(const std::uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));  // the data region gives no alignment guarantee
  return v;
}

}  // namespace

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  SafetensorsFile f;
  f.path_ = path;
  f.mapping_ = map_file(path);
  const std::uint8_t* base = f.mapping_->data;
  const std::uint64_t size = f.mapping_->size;
  if (size < 8) throw InputError(path, "header length", "file shorter than the 8-byte header length");
  const std::uint64_t header_len = load_le<std::uint64_t>(base);
  if (header_len > kMaxHeaderBytes) throw InputError(path, "header length", "header larger than 100 MB");
  if (header_len > size - 8) {
    throw InputError(path, "header length",
                     "header of " + std::to_string(header_len) + " bytes runs past end of file (" + std::to_string(size) + " bytes)");
  }
  const std::uint64_t data_size = size - 8 - header_len;
  const char* header = reinterpret_cast<const char*>(base + 8);

  // Duplicate top-level keys are legal JSON that nlohmann silently collapses; a dump must not have them.
  std::set<std::string> seen;
  std::string duplicate;
  auto callback = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    if (depth == 1 && event == nlohmann::json::parse_event_t::key) {
      std::string key = parsed.get<std::string>();
      if (!seen.insert(key).second && duplicate.empty()) duplicate = key;
    }
    return true;
  };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(header, header + header_len, callback);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path, "header", std::string("invalid JSON: ") + e.what());
  }
  if (!duplicate.empty()) throw InputError(path, duplicate, "tensor name appears twice in the header");
  if (!j.is_object()) throw InputError(path, "header", "not a JSON object");

  for (const auto& [key, value] : j.items()) {
    if (key == "__metadata__") {
      if (!value.is_object()) throw InputError(path, "__metadata__", "not an object");
      for (const auto& [mk, mv] : value.items()) {
        if (!mv.is_string()) throw InputError(path, "__metadata__." + mk, "metadata values must be strings");
        f.metadata_[mk] = mv.get<std::string>();
      }
      continue;
    }
    f.entries_.push_back(parse_entry(path, key, value));
  }

  // Tiling: sorted by offsets, each tensor starts where the previous ended and the last ends at EOF.
  std::vector<const SafetensorsEntry*> order;
  for (const auto& e : f.entries_) order.push_back(&e);
  std::stable_sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  std::uint64_t cursor = 0;
  for (const auto* e : order) {
    if (e->end > data_size) {
      throw InputError(path, e->name + ".data_offsets",
                       "ends at " + std::to_string(e->end) + ", past the data region (" + std::to_string(data_size) + " bytes)");
    }
    if (e->begin < cursor) throw InputError(path, e->name + ".data_offsets", "overlaps another tensor");
    if (e->begin > cursor) throw InputError(path, e->name + ".data_offsets", "leaves a gap before this tensor");
    cursor = e->end;
  }
  if (cursor != data_size) {
    throw InputError(path, "data_offsets",
                     std::to_string(data_size - cursor) + " trailing bytes after the last tensor");
  }
  return f;
}

std::span<const std::uint8_t> SafetensorsFile::file_bytes() const { return {mapping_->data, mapping_->size}; }

std::span<const std::uint8_t> SafetensorsFile::data(const SafetensorsEntry& e) const {
  const std::uint64_t header_len = load_le<std::uint64_t>(mapping_->data);
  return {mapping_->data + 8 + header_len + e.begin, static_cast<std::size_t>(e.end - e.begin)};
}

const SafetensorsEntry& SafetensorsFile::entry(const std::string& name) const {
  for (const auto& e : entries_) {
    if (e.name == name) return e;
  }
  throw InputError(path_, name, "missing");
}

Tensor SafetensorsFile::read(const std::string& name) const {
  const SafetensorsEntry& e = entry(name);
  std::span<const std::uint8_t> bytes = data(e);
  const std::size_t width = safetensors_dtype_width(e.dtype);
  const std::size_t n = bytes.size() / width;
  Tensor t;
  t.shape = e.shape;
  t.dtype = e.dtype;
  const std::uint8_t* p = bytes.data();
  if (e.dtype == "F32") {
    t.values.resize(n);
    for (std::size_t i = 0; i < n; ++i) t.values[i] = load_le<float>(p + 4 * i);
  } else if (e.dtype == "F16") {
    t.values.resize(n);
    for (std::size_t i = 0; i < n; ++i) t.values[i] = f16_to_float(load_le<std::uint16_t>(p + 2 * i));
  } else if (e.dtype == "BF16") {
    t.values.resize(n);
    for (std::size_t i = 0; i < n; ++i) t.values[i] = bf16_to_float(load_le<std::uint16_t>(p + 2 * i));
  } else if (e.dtype == "I32") {
    t.integers.resize(n);
    for (std::size_t i = 0; i < n; ++i) t.integers[i] = load_le<std::int32_t>(p + 4 * i);
  } else if (e.dtype == "U8") {
    t.integers.assign(p, p + n);
  } else {  // I64: the only other dtype open() admits
    t.integers.resize(n);
    for (std::size_t i = 0; i < n; ++i) t.integers[i] = load_le<std::int64_t>(p + 8 * i);
  }
  return t;
}

std::map<std::string, Tensor> read_safetensors(const std::string& path) {
  SafetensorsFile f = SafetensorsFile::open(path);
  std::map<std::string, Tensor> out;
  for (const auto& e : f.entries()) out.emplace(e.name, f.read(e.name));
  return out;
}

std::vector<std::uint8_t> encode_safetensors(const std::map<std::string, RawTensor>& tensors,
                                             const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    header[name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  std::string text = header.dump();
  while (text.size() % 8 != 0) text.push_back(' ');  // the reference writer pads to 8-byte alignment
  std::vector<std::uint8_t> out;
  out.reserve(8 + text.size() + offset);
  const std::uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(n >> (8 * i)));
  for (char c : text) out.push_back(static_cast<std::uint8_t>(c));
  for (const auto& [_, t] : tensors) out.insert(out.end(), t.bytes.begin(), t.bytes.end());
  return out;
}

namespace {

std::shared_ptr<const SafetensorsFile::Mapping> map_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw InputError(path, "file", std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw InputError(path, "file", "not a regular file");
  }
  auto m = std::make_shared<SafetensorsFile::Mapping>();
  m->size = static_cast<std::size_t>(st.st_size);
  if (m->size > 0) {
    void* p = mmap(nullptr, m->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      ::close(fd);
      throw InputError(path, "file", std::string("cannot mmap: ") + std::strerror(errno));
    }
    m->data = static_cast<const std::uint8_t*>(p);
  }
  ::close(fd);  // the mapping outlives the descriptor
  return m;
}

}  // namespace
}  // namespace kvaudit::io
