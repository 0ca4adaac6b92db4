// NPY format: magic "\x93NUMPY", version, header length, a Python-dict header, then raw data.
#include "core/io/npy.h"

#include <cctype>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>

#include "core/error.h"
#include "core/io/half.h"

namespace kvaudit::io {
namespace {

constexpr Index kMaxElements = Index{1} << 34;  // 16 Gi values: beyond any real dump, far below overflow

// The value after 'key': a quoted string, True/False or a parenthesized tuple (quotes and parentheses kept).
// Hardening (docs/hardening.md): this used std::regex, which recurses per character in libstdc++ and crashed
// (stack overflow, SIGSEGV) on a 20 KB header; a plain scan does the same matching in constant stack.
std::string header_field(const std::string& header, const std::string& key, const std::string& path) {
  const std::string quoted = "'" + key + "'";
  auto skip_space = [&](std::size_t i) {
    while (i < header.size() && std::isspace(static_cast<unsigned char>(header[i]))) ++i;
    return i;
  };
  for (std::size_t at = header.find(quoted); at != std::string::npos; at = header.find(quoted, at + 1)) {
    std::size_t i = skip_space(at + quoted.size());
    if (i >= header.size() || header[i] != ':') continue;
    i = skip_space(i + 1);
    if (i >= header.size()) break;
    if (header[i] == '\'' || header[i] == '(') {
      const std::size_t close = header.find(header[i] == '\'' ? '\'' : ')', i + 1);
      if (close != std::string::npos) return header.substr(i, close - i + 1);
    } else if (header.compare(i, 4, "True") == 0) {
      return "True";
    } else if (header.compare(i, 5, "False") == 0) {
      return "False";
    }
  }
  throw InputError(path, key, "missing or malformed in NPY header");
}

std::vector<Index> parse_shape(const std::string& tuple, const std::string& path) {
  std::vector<Index> shape;
  Index product = 1;
  std::string body = tuple.substr(1, tuple.size() - 2);
  std::size_t pos = 0;
  while (pos < body.size()) {
    std::size_t comma = body.find(',', pos);
    std::string item = body.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    item.erase(0, item.find_first_not_of(" "));
    item.erase(item.find_last_not_of(" ") + 1);
    if (!item.empty()) {
      if (item.size() > 12 || item.find_first_not_of("0123456789") != std::string::npos)
        throw InputError(path, "shape", "dimension '" + item + "' is not a non-negative integer of sane size");
      Index dim = std::stoll(item);
      if (dim != 0 && product > kMaxElements / dim) throw InputError(path, "shape", "element count overflows the size limit");
      product *= dim;
      shape.push_back(dim);
    }
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return shape;
}

}  // namespace

NpyArray read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "file", "cannot open");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) throw InputError(path, "magic", "not an NPY file");
  unsigned major = static_cast<unsigned char>(bytes[6]);
  std::size_t header_len, header_start;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) throw InputError(path, "header_len", "truncated");
    header_len = 0;
    for (int i = 0; i < 4; ++i) header_len |= static_cast<std::size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
    header_start = 12;
  } else {
    throw InputError(path, "version", "unsupported NPY version " + std::to_string(major));
  }
  if (header_len > bytes.size() - header_start) throw InputError(path, "header_len", "header runs past end of file");
  std::string header = bytes.substr(header_start, header_len);
  NpyArray a;
  std::string descr = header_field(header, "descr", path);
  a.dtype = descr.substr(1, descr.size() - 2);
  if (header_field(header, "fortran_order", path) != "False") throw InputError(path, "fortran_order", "Fortran-order arrays are not supported");
  a.shape = parse_shape(header_field(header, "shape", path), path);
  Index count = 1;
  for (Index d : a.shape) count *= d;

  static const std::vector<std::pair<std::string, int>> kinds = {
      {"<f2", 2}, {"<f4", 4}, {"<f8", 8}, {"<i4", 4}, {"<i8", 8}, {"|u1", 1}};
  int width = 0;
  for (const auto& [name, w] : kinds)
    if (a.dtype == name) width = w;
  if (width == 0 || a.dtype == "|u1") throw InputError(path, "descr", "unsupported dtype '" + a.dtype + "' (want <f2, <f4, <f8, <i4 or <i8)");
  std::size_t data_start = header_start + header_len;
  std::size_t expected = static_cast<std::size_t>(count) * static_cast<std::size_t>(width);
  if (bytes.size() - data_start != expected)
    throw InputError(path, "data", "holds " + std::to_string(bytes.size() - data_start) + " bytes, shape and dtype need " + std::to_string(expected));
  const char* p = bytes.data() + data_start;
  if (a.dtype[1] == 'f') {
    a.values.resize(count);
    for (Index i = 0; i < count; ++i) {
      if (width == 2) {
        std::uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        a.values[i] = f16_to_float(h);
      } else if (width == 4) {
        float f;
        std::memcpy(&f, p + 4 * i, 4);
        a.values[i] = f;
      } else {
        std::memcpy(&a.values[i], p + 8 * i, 8);
      }
    }
  } else {
    a.integers.resize(count);
    for (Index i = 0; i < count; ++i) {
      if (width == 4) {
        std::int32_t v;
        std::memcpy(&v, p + 4 * i, 4);
        a.integers[i] = v;
      } else {
        std::memcpy(&a.integers[i], p + 8 * i, 8);
      }
    }
  }
  return a;
}

namespace {
template <class T>
void write_npy_as(const std::string& path, const std::vector<Index>& shape, const std::vector<T>& values,
                  const char* descr) {
  std::string dims;
  for (Index d : shape) dims += std::to_string(d) + ", ";
  if (shape.size() > 1) dims.erase(dims.size() - 2);
  std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (" + dims + "), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  out.write("\x93NUMPY\x01\x00", 8);
  char len[2] = {static_cast<char>(header.size() & 0xff), static_cast<char>(header.size() >> 8)};
  out.write(len, 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(reinterpret_cast<const char*>(values.data()), static_cast<std::streamsize>(values.size() * sizeof(T)));
  if (!out) throw InputError(path, "file", "cannot write");
}

template <class T>
void require_finite_as(std::span<const T> values, const std::string& source, const std::string& field) {
  for (std::size_t i = 0; i < values.size(); ++i)
    if (!std::isfinite(values[i]))
      throw InputError(source, field, std::string(std::isnan(values[i]) ? "NaN" : "infinity") + " at flat index " + std::to_string(i));
}
}  // namespace

void write_npy(const std::string& path, const std::vector<Index>& shape, const std::vector<float>& values) {
  write_npy_as(path, shape, values, "<f4");
}
void write_npy_f64(const std::string& path, const std::vector<Index>& shape, const std::vector<double>& values) {
  write_npy_as(path, shape, values, "<f8");
}

void require_finite(std::span<const float> values, const std::string& source, const std::string& field) {
  require_finite_as(values, source, field);
}
void require_finite(std::span<const double> values, const std::string& source, const std::string& field) {
  require_finite_as(values, source, field);
}

Float32Values to_float32(const std::vector<double>& values) {
  Float32Values out;
  out.values.reserve(values.size());
  for (double v : values) {
    const float f = static_cast<float>(v);
    out.changed += static_cast<double>(f) != v;
    out.values.push_back(f);
  }
  return out;
}

}  // namespace kvaudit::io
