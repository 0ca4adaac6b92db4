// The Page-EntroKV conform wire format (see page_case.h).
#include "audit/conform/page_case.h"

#include <charconv>
#include <cmath>

#include <nlohmann/json.hpp>

#include "audit/conform/protocol.h"
#include "core/error.h"
#include "core/paging/page_options.h"
#include "oracle/page_params.h"

namespace kvaudit::conform {

namespace {

void append_float(std::string& out, float v) {
  char buf[64];
  auto result = std::to_chars(buf, buf + sizeof buf, static_cast<double>(v));
  out.append(buf, result.ptr);
}


// The raw text of a number field (the exact decimal), or the string's contents when it is sent as text.
std::string ratio_text(const std::string& line, const nlohmann::json& v, const std::string& source) {
  if (v.is_string()) return v.get<std::string>();
  if (!v.is_number()) throw InputError(source, "compression_ratio", "must be decimal text or a number");
  auto at = line.find("\"compression_ratio\"");
  at = line.find(':', at);
  ++at;
  while (at < line.size() && (line[at] == ' ' || line[at] == '\t')) ++at;
  auto end = line.find_first_not_of("0123456789.+-eE", at);
  return line.substr(at, end - at);
}

Index int_field(const nlohmann::json& j, const char* key, Index fallback, const std::string& source) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  const auto& v = j[key];
  if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT32_MAX)) ||
      (v.is_number_integer() && (v.get<std::int64_t>() < INT32_MIN || v.get<std::int64_t>() > INT32_MAX)))
    throw InputError(source, key, "must be an integer, got " + v.dump());
  return v.get<Index>();
}

// A choice field's text (a non-string is shown as JSON, so the parser's message quotes what was sent).
std::string text_field(const nlohmann::json& j, const char* key, const std::string& fallback) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  return j[key].is_string() ? j[key].get<std::string>() : j[key].dump();
}

std::vector<std::vector<Index>> lists_of_integers(const nlohmann::json& v, const char* key, std::int64_t id) {
  const std::string where = "response " + std::to_string(id) + ": \"" + key + "\"";
  if (!v.is_array()) throw ProtocolError(ProtocolErrorKind::BadResponse, where + " is not an array");
  std::vector<std::vector<Index>> out;
  for (std::size_t g = 0; g < v.size(); ++g) {
    if (!v[g].is_array())
      throw ProtocolError(ProtocolErrorKind::BadResponse, where + " must hold one list per KV group, element " +
                                                              std::to_string(g) + " is " + clip(v[g].dump()));
    out.emplace_back();
    for (const auto& x : v[g]) {
      if (!x.is_number_integer() || (x.is_number_unsigned() && x.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)))
        throw ProtocolError(ProtocolErrorKind::BadResponse, where + "[" + std::to_string(g) + "] holds a non-integer: " + x.dump());
      out.back().push_back(x.get<Index>());
    }
  }
  return out;
}

}  // namespace

std::string encode_page_request(std::int64_t id, const PageCase& c) {
  const auto& p = c.params;
  std::string out;
  out.reserve(static_cast<std::size_t>(c.q_heads * c.tokens) * 12 + 300);
  out += "{\"id\": " + std::to_string(id) + ", \"method\": \"page-entrokv\", \"attention\": [";
  for (Index h = 0; h < c.q_heads; ++h) {
    out += h ? ", [" : "[";
    for (Index t = 0; t < c.tokens; ++t) {
      const float v = c.values[static_cast<std::size_t>(h * c.tokens + t)];
      if (!std::isfinite(v)) throw InputError(c.origin, "attention", "non-finite value at head " + std::to_string(h));
      if (t) out += ", ";
      append_float(out, v);
    }
    out += "]";
  }
  out += "], \"group_size\": " + std::to_string(p.group_size) + ", \"page_size\": " + std::to_string(p.page_size);
  out += ", \"compression_ratio\": " + nlohmann::json(p.ratio_text).dump();
  out += ", \"sinks\": " + std::to_string(p.n_sink);
  out += std::string(", \"pooling\": \"") + oracle::paging::to_string(p.pooling) + "\"";
  out += std::string(", \"page_score\": \"") + oracle::paging::to_string(p.page_score) + "\"";
  out += std::string(", \"source\": \"") + oracle::paging::to_string(p.source) + "\"";
  out += std::string(", \"sink_pages\": \"") + oracle::paging::to_string(p.sink_pages) + "\"";
  out += std::string(", \"greedy\": \"") + oracle::paging::to_string(p.greedy) + "\"";
  out += ", \"temperature\": \"" + paging::temperature_text(p.inverse_temperature) + "\"";
  out += std::string(", \"entropy_on\": \"") + oracle::paging::to_string(p.entropy_on) + "\"";
  out += std::string(", \"budget_unit\": \"") + oracle::paging::to_string(p.budget_unit) + "\"";
  out += std::string(", \"page_count_rule\": \"") + oracle::paging::to_string(p.page_count_rule) + "\"}";
  return out;
}

PageCase decode_page_request(const std::string& line, const std::string& source, Float32Input values) {
  nlohmann::json j = parse_request_object(line, source);
  PageCase c;
  c.origin = source;
  try {
    if (j.contains("method") && j["method"] != "page-entrokv")
      throw InputError(source, "method", "expected \"page-entrokv\", got " + j["method"].dump());
    // Every option through the one parser the CLI and Python use; JSON types are checked here first.
    paging::PageOptions o;
    const PageParams defaults;
    o.group_size = int_field(j, "group_size", defaults.group_size, source);
    o.page_size = int_field(j, "page_size", defaults.page_size, source);
    o.sinks = int_field(j, "sinks", defaults.n_sink, source);
    o.ratio = j.contains("compression_ratio") && !j["compression_ratio"].is_null() ? ratio_text(line, j["compression_ratio"], source)
                                                                                  : defaults.ratio_text;
    o.pooling = text_field(j, "pooling", o.pooling);
    o.page_score = text_field(j, "page_score", o.page_score);
    o.source = text_field(j, "source", o.source);
    o.sink_pages = text_field(j, "sink_pages", o.sink_pages);
    o.greedy = text_field(j, "greedy", o.greedy);
    o.preset = text_field(j, "preset", o.preset);
    o.temperature = text_field(j, "temperature", o.temperature);
    o.entropy_on = text_field(j, "entropy_on", o.entropy_on);
    o.budget_unit = text_field(j, "budget_unit", o.budget_unit);
    o.page_count_rule = text_field(j, "page_count_rule", o.page_count_rule);
    c.params = paging::parse_page_options(o, source);
    const PageParams& p = c.params;
    const auto& a = j.at("attention");
    if (!a.is_array() || a.empty() || !a.at(0).is_array() || a.at(0).empty())
      throw InputError(source, "attention", "must be a non-empty array of rows, each a non-empty array of numbers");
    c.q_heads = static_cast<Index>(a.size());
    c.tokens = static_cast<Index>(a.at(0).size());
    Float32Rounding rounding;  // float32 on the wire: other numbers rounded (or, strict, refused) as for every method
    for (std::size_t h = 0; h < a.size(); ++h) {
      const auto& row = a[h];
      if (!row.is_array() || static_cast<Index>(row.size()) != c.tokens)
        throw InputError(source, "attention", "row " + std::to_string(h) + " is not a list of " + std::to_string(c.tokens) +
                                                  " numbers like row 0: " + clip(row.dump()));
      for (const auto& v : row) {
        const float f = replay_float32(v, values, source, "attention", rounding);
        // The value as sent, not as rounded: -1e-50 is negative even though float32 rounds it to -0.
        if (v.get<double>() < 0.0) throw InputError(source, "attention", "value " + v.dump() + " is negative");
        c.values.push_back(f);
      }
    }
    c.origin += rounding.note("attention value");
    if (c.q_heads % p.group_size != 0)
      throw InputError(source, "group_size", "does not divide the " + std::to_string(c.q_heads) + " attention rows");
  } catch (const nlohmann::json::exception& e) {
    throw InputError(source, "request", e.what());
  }
  return c;
}

PageAnswer decode_page_response(const std::string& line, std::int64_t expected_id) {
  const nlohmann::json j = parse_response_envelope(line, expected_id);
  if (!j.contains("kept_pages")) {
    std::string why = j.contains("error") ? "the implementation answered an error: " + j["error"].dump()
                                          : "no \"kept_pages\": '" + clip(line) + "'";
    throw ProtocolError(ProtocolErrorKind::BadResponse, "response " + std::to_string(expected_id) + ": " + why);
  }
  PageAnswer a;
  a.kept_pages = lists_of_integers(j["kept_pages"], "kept_pages", expected_id);
  if (j.contains("kept_tokens") && !j["kept_tokens"].is_null())
    a.kept_tokens = lists_of_integers(j["kept_tokens"], "kept_tokens", expected_id);
  return a;
}

}  // namespace kvaudit::conform
