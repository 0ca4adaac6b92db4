// Encoding requests and decoding responses of the conform protocol (see protocol.h for the line formats).
#include "audit/conform/protocol.h"

#include <cctype>
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

Method parse_method(const std::string& text, const std::string& source) {
  if (const std::optional<Method> m = method_from_name(text)) return *m;
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

// The number token after `"key":` in the raw line: nlohmann would round it to a double, and the exact flavour needs
// the decimal as written. Empty when the key is absent or its value is not a bare number.
std::string raw_number_token(const std::string& line, const std::string& key) {
  auto at = line.find("\"" + key + "\"");
  if (at == std::string::npos) return "";
  at = line.find(':', at);
  if (at == std::string::npos) return "";
  ++at;
  while (at < line.size() && (line[at] == ' ' || line[at] == '\t' || line[at] == '\r' || line[at] == '\n')) ++at;
  auto end = line.find_first_not_of("0123456789.+-eE", at);
  return line.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

// An integer request field that fits Index; InputError showing the value otherwise (never a float-to-integer
// conversion).
Index integer_field(const nlohmann::json& j, const char* key, const std::string& source) {
  if (!j.contains(key)) throw InputError(source, key, "missing");
  const auto& v = j.at(key);
  if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)))
    throw InputError(source, key, "must be an integer, got " + clip(v.dump()));
  return v.get<Index>();
}

}  // namespace

std::string plain_decimal(const std::string& number) {
  // [-]digits[.digits][(e|E)[+-]digits] -> [-]digits[.digits] with the same value; anything else unchanged.
  std::size_t i = 0;
  std::string sign;
  if (i < number.size() && (number[i] == '-' || number[i] == '+')) sign = number[i++] == '-' ? "-" : "";
  std::string digits;
  long long point = -1;
  for (; i < number.size() && (std::isdigit(static_cast<unsigned char>(number[i])) || number[i] == '.'); ++i) {
    if (number[i] == '.') {
      if (point >= 0) return number;
      point = static_cast<long long>(digits.size());
    } else {
      digits += number[i];
    }
  }
  if (digits.empty()) return number;
  if (point < 0) point = static_cast<long long>(digits.size());
  if (i < number.size()) {
    if (number[i] != 'e' && number[i] != 'E') return number;
    const std::string exponent = number.substr(i + 1);
    long long e = 0;
    auto [ptr, ec] = std::from_chars(exponent.data() + (exponent.size() && exponent[0] == '+'), exponent.data() + exponent.size(), e);
    if (ec != std::errc() || ptr != exponent.data() + exponent.size() || e > 4096 || e < -4096) return number;
    point += e;
  } else if (sign.empty()) {
    return number;  // already plain
  }
  if (point < 0) digits.insert(0, static_cast<std::size_t>(-point), '0'), point = 0;
  if (point > static_cast<long long>(digits.size())) digits.append(static_cast<std::size_t>(point) - digits.size(), '0');
  std::string whole = digits.substr(0, static_cast<std::size_t>(point)), fraction = digits.substr(static_cast<std::size_t>(point));
  return sign + (whole.empty() ? "0" : whole) + (fraction.empty() ? "" : "." + fraction);
}

CompressionRatio ratio_field(const std::string& line, const nlohmann::json& request, const std::string& source) {
  if (!request.contains("compression_ratio")) throw InputError(source, "compression_ratio", "missing");
  const auto& v = request.at("compression_ratio");
  std::string written;
  if (v.is_string()) {
    written = v.get<std::string>();
  } else if (v.is_number()) {
    written = raw_number_token(line, "compression_ratio");
    if (written.empty()) written = v.dump();
  } else {
    throw InputError(source, "compression_ratio", "must be decimal text or a number, got " + clip(v.dump()));
  }
  const std::string text = plain_decimal(written);
  try {
    return parse_compression_ratio(text, source);
  } catch (const InputError&) {
    throw InputError(source, "compression_ratio", "must be a decimal number in [0, 1) (as text or a JSON number), got " +
                                                      clip(v.is_string() ? v.dump() : written));
  }
}

const char* to_string(Float32Input mode) { return mode == Float32Input::Strict ? "strict" : "round"; }

std::string Float32Rounding::note(const std::string& noun) const {
  if (rounded == 0) return "";
  return " (" + std::to_string(rounded) + " " + noun + (rounded > 1 ? "s" : "") + " rounded to the nearest float32, e.g. " +
         example + ")";
}

float replay_float32(const nlohmann::json& v, Float32Input mode, const std::string& source, const char* field,
                     Float32Rounding& rounding) {
  if (!v.is_number()) throw InputError(source, field, "holds a non-number: " + clip(v.dump()));
  const double d = v.get<double>();
  // Round to nearest float32, ties to even, from the double the text parses to (what Python's float32(float(text))
  // does). From 2^128 - 2^103 (FLT_MAX plus half an ulp) on, that rounding overflows: refused, never made infinite
  // (and never converted: a double beyond float's range has no defined float conversion).
  const double overflow = std::ldexp(1.0, 128) - std::ldexp(1.0, 103);
  if (!std::isfinite(d) || std::fabs(d) >= overflow)
    throw InputError(source, field, "value " + v.dump() + " is outside the float32 range");
  const float f = static_cast<float>(d);
  if (static_cast<double>(f) != d) {
    if (mode == Float32Input::Strict)
      throw InputError(source, field, "value " + v.dump() + " is not a float32 value (--replay-strict)");
    if (rounding.rounded++ == 0) {
      char buf[64];
      auto r = std::to_chars(buf, buf + sizeof buf, static_cast<double>(f));
      rounding.example = v.dump() + " -> " + std::string(buf, r.ptr);
    }
  }
  return f;
}

ConformCase decode_request(const std::string& line, Flavour flavour, const std::string& source, Float32Input scores_mode) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(line);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(source, "request", std::string("not JSON: ") + e.what());
  }
  if (!j.is_object()) throw InputError(source, "request", "not a JSON object: " + clip(line));
  ConformCase c;
  c.origin = source;
  try {
    if (!j.contains("method")) throw InputError(source, "method", "missing");
    if (!j.at("method").is_string()) throw InputError(source, "method", "expected chunkkv or eg-chunkkv, got " + clip(j.at("method").dump()));
    c.params.method = parse_method(j.at("method").get<std::string>(), source);
    c.params.flavour = flavour;
    c.params.ratio = ratio_field(line, j, source);
    // Hardening (fuzz/conform_protocol_fuzz): nlohmann's get<Index>() of 1e30 and get<float>() of 1e300 are
    // out-of-range conversions (undefined behaviour), and a flat "scores": [1, 2, 3] iterated as 3 heads of
    // one token. A replay line is untrusted input, so types and ranges are checked before converting.
    c.params.chunk_length = integer_field(j, "chunk_length", source);
    c.params.rescue_size = integer_field(j, "rescue_size", source);
    if (j.contains("entropy_threshold") && !j.at("entropy_threshold").is_null()) {
      if (!j.at("entropy_threshold").is_number())
        throw InputError(source, "entropy_threshold", "must be a number or null, got " + clip(j.at("entropy_threshold").dump()));
      c.params.entropy_threshold = j.at("entropy_threshold").get<double>();
    }
    if (!j.contains("scores")) throw InputError(source, "scores", "missing");
    const auto& scores = j.at("scores");
    if (!scores.is_array() || scores.empty() || !scores.at(0).is_array() || scores.at(0).empty())
      throw InputError(source, "scores", "must be a non-empty array of rows, each a non-empty array of numbers, got " +
                                             clip(scores.dump()));
    c.heads = static_cast<Index>(scores.size());
    c.tokens = static_cast<Index>(scores.at(0).size());
    Float32Rounding rounding;
    for (std::size_t h = 0; h < scores.size(); ++h) {
      const auto& row = scores[h];
      if (!row.is_array() || static_cast<Index>(row.size()) != c.tokens)
        throw InputError(source, "scores", "row " + std::to_string(h) + " is not a list of " + std::to_string(c.tokens) +
                                               " numbers like row 0: " + clip(row.dump()));
      for (const auto& v : row) c.values.push_back(replay_float32(v, scores_mode, source, "scores", rounding));
    }
    c.origin += rounding.note("score");
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
