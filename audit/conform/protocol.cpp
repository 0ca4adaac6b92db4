// Encoding requests and decoding responses of the conform protocol (see protocol.h for the line formats).
#include "audit/conform/protocol.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/compression_ratio.h"
#include "core/error.h"

namespace kvaudit::conform {

const char* to_string(ProtocolErrorKind kind) {
  switch (kind) {
    case ProtocolErrorKind::SpawnFailed: return "spawn-failed";
    case ProtocolErrorKind::Crashed: return "crashed";
    case ProtocolErrorKind::Timeout: return "timeout";
    case ProtocolErrorKind::BadJson: return "bad-json";
    case ProtocolErrorKind::WrongId: return "wrong-id";
    case ProtocolErrorKind::BadResponse: return "bad-response";
  }
  return "?";
}

const char* method_name(Method method) { return method == Method::ChunkKV ? "chunkkv" : "eg-chunkkv"; }

Method parse_method(const std::string& text, const std::string& source) {
  if (text == "chunkkv") return Method::ChunkKV;
  if (text == "eg-chunkkv") return Method::EgChunkKV;
  throw InputError(source, "method", "expected chunkkv or eg-chunkkv, got '" + text + "'");
}

std::string json_decimal(const std::string& ratio_text) {
  auto point = ratio_text.find('.');
  std::string whole = ratio_text.substr(0, point);
  std::string fraction = point == std::string::npos ? "" : ratio_text.substr(point + 1);
  auto first = whole.find_first_not_of('0');
  whole = first == std::string::npos ? "0" : whole.substr(first);
  return fraction.empty() ? whole : whole + "." + fraction;
}

namespace {

// Shortest decimal that parses back to double(v): exact for float64 readers, bit-exact for float32 readers.
void append_float(std::string& out, float v) {
  char buf[64];
  auto result = std::to_chars(buf, buf + sizeof buf, static_cast<double>(v));
  out.append(buf, result.ptr);
}

}  // namespace

std::string encode_request(std::int64_t id, const ConformCase& c) {
  std::string out;
  out.reserve(static_cast<std::size_t>(c.heads * c.tokens) * 8 + 160);
  out += "{\"id\": " + std::to_string(id) + ", \"method\": \"" + method_name(c.params.method) + "\", \"scores\": [";
  for (Index h = 0; h < c.heads; ++h) {
    out += h ? ", [" : "[";
    for (Index t = 0; t < c.tokens; ++t) {
      float v = c.values[static_cast<std::size_t>(h * c.tokens + t)];
      if (!std::isfinite(v)) {
        throw InputError(c.origin, "scores", "non-finite value at head " + std::to_string(h) + ", token " + std::to_string(t));
      }
      if (t) out += ", ";
      append_float(out, v);
    }
    out += "]";
  }
  out += "], \"compression_ratio\": " + json_decimal(c.params.ratio.text);
  out += ", \"chunk_length\": " + std::to_string(c.params.chunk_length);
  out += ", \"rescue_size\": " + std::to_string(c.params.rescue_size);
  out += ", \"entropy_threshold\": ";
  if (c.params.entropy_threshold) {
    char buf[64];
    auto result = std::to_chars(buf, buf + sizeof buf, *c.params.entropy_threshold);
    out.append(buf, result.ptr);
  } else {
    out += "null";
  }
  out += "}";
  return out;
}

namespace {

// The number token after "compression_ratio": in the raw line; nlohmann would round it to a double and the
// exact flavour needs the decimal the user (or kvaudit) wrote.
std::string raw_number_field(const std::string& line, const std::string& key, const std::string& source) {
  auto at = line.find("\"" + key + "\"");
  if (at == std::string::npos) throw InputError(source, key, "missing");
  at = line.find(':', at);
  if (at == std::string::npos) throw InputError(source, key, "missing value");
  ++at;
  while (at < line.size() && (line[at] == ' ' || line[at] == '\t')) ++at;
  auto end = line.find_first_not_of("0123456789.+-eE", at);
  return line.substr(at, end - at);
}

}  // namespace

namespace {

// An integer request field that fits Index; InputError otherwise (never a float-to-integer conversion).
Index integer_field(const nlohmann::json& j, const char* key, const std::string& source) {
  const auto& v = j.at(key);
  if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)))
    throw InputError(source, key, "must be an integer, got " + v.dump());
  return v.get<Index>();
}

}  // namespace

ConformCase decode_request(const std::string& line, Flavour flavour, const std::string& source) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(line);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(source, "request", std::string("not JSON: ") + e.what());
  }
  ConformCase c;
  c.origin = source;
  try {
    c.params.method = parse_method(j.at("method").get<std::string>(), source);
    c.params.flavour = flavour;
    c.params.ratio = parse_compression_ratio(raw_number_field(line, "compression_ratio", source), source);
    // Hardening (fuzz/conform_protocol_fuzz): nlohmann's get<Index>() of 1e30 and get<float>() of 1e300 are
    // out-of-range conversions (undefined behaviour), and a flat "scores": [1, 2, 3] iterated as 3 heads of
    // one token. A replay line is untrusted input, so types and ranges are checked before converting.
    c.params.chunk_length = integer_field(j, "chunk_length", source);
    c.params.rescue_size = integer_field(j, "rescue_size", source);
    if (!j.at("entropy_threshold").is_null()) {
      if (!j.at("entropy_threshold").is_number()) throw InputError(source, "entropy_threshold", "must be a number or null");
      c.params.entropy_threshold = j.at("entropy_threshold").get<double>();
    }
    const auto& scores = j.at("scores");
    if (!scores.is_array() || scores.empty() || !scores.at(0).is_array() || scores.at(0).empty())
      throw InputError(source, "scores", "must be a non-empty array of rows, each a non-empty array of numbers");
    c.heads = static_cast<Index>(scores.size());
    c.tokens = static_cast<Index>(scores.at(0).size());
    for (const auto& row : scores) {
      if (!row.is_array() || static_cast<Index>(row.size()) != c.tokens) throw InputError(source, "scores", "rows of different lengths");
      for (const auto& v : row) {
        if (!v.is_number()) throw InputError(source, "scores", "holds a non-number: " + v.dump());
        const double d = v.get<double>();
        if (!(std::fabs(d) <= static_cast<double>(std::numeric_limits<float>::max())))
          throw InputError(source, "scores", "value " + v.dump() + " is outside the float32 range");
        // The protocol's scores are float32 (kvaudit writes each as the shortest decimal of its float):
        // a value float32 cannot hold is refused, never rounded.
        if (static_cast<double>(static_cast<float>(d)) != d)
          throw InputError(source, "scores", "value " + v.dump() + " is not a float32 value");
        c.values.push_back(static_cast<float>(d));
      }
    }
  } catch (const nlohmann::json::exception& e) {
    throw InputError(source, "request", e.what());
  }
  return c;
}

namespace {

Positions decode_positions(const nlohmann::json& list, const std::string& where) {
  Positions out;
  out.reserve(list.size());
  for (const auto& v : list) {
    if (!v.is_number_integer()) {
      throw ProtocolError(ProtocolErrorKind::BadResponse, where + " holds a non-integer: " + v.dump());
    }
    out.push_back(v.get<Index>());
  }
  return out;
}

}  // namespace

std::string clip(const std::string& line) { return line.size() > 200 ? line.substr(0, 200) + "..." : line; }

nlohmann::json parse_request_object(const std::string& line, const std::string& source) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(line);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(source, "request", std::string("not JSON: ") + e.what());
  }
  if (!j.is_object()) throw InputError(source, "request", "not a JSON object");
  return j;
}

nlohmann::json parse_response_envelope(const std::string& line, std::int64_t expected_id) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(line);
  } catch (const nlohmann::json::exception&) {
    throw ProtocolError(ProtocolErrorKind::BadJson, "response to request " + std::to_string(expected_id) +
                                                        " is not JSON: '" + clip(line) + "'");
  }
  if (!j.is_object() || !j.contains("id") || !j["id"].is_number_integer()) {
    throw ProtocolError(ProtocolErrorKind::BadResponse, "response to request " + std::to_string(expected_id) +
                                                            " has no integer \"id\": '" + clip(line) + "'");
  }
  if (j["id"].get<std::int64_t>() != expected_id) {
    throw ProtocolError(ProtocolErrorKind::WrongId, "expected id " + std::to_string(expected_id) + ", got " +
                                                        j["id"].dump());
  }
  return j;
}

Selection decode_response(const std::string& line, std::int64_t expected_id) {
  const nlohmann::json j = parse_response_envelope(line, expected_id);
  if (!j.contains("kept") || !j["kept"].is_array()) {
    std::string why = j.contains("error") ? "the implementation answered an error: " + j["error"].dump()
                                          : "no \"kept\" array: '" + clip(line) + "'";
    throw ProtocolError(ProtocolErrorKind::BadResponse, "response " + std::to_string(expected_id) + ": " + why);
  }
  const auto& kept = j["kept"];
  Selection s;
  // Per-head form: a non-empty list whose first element is a list. An empty list is one empty selection.
  if (!kept.empty() && kept[0].is_array()) {
    for (std::size_t h = 0; h < kept.size(); ++h) {
      if (!kept[h].is_array()) {
        throw ProtocolError(ProtocolErrorKind::BadResponse, "\"kept\" mixes lists and integers");
      }
      s.kept.push_back(decode_positions(kept[h], "\"kept\"[" + std::to_string(h) + "]"));
    }
  } else {
    s.kept.push_back(decode_positions(kept, "\"kept\""));
  }
  return s;
}

}  // namespace kvaudit::conform
