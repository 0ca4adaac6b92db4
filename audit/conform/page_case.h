// One Page-EntroKV conform case and answer, and their wire format (JSON lines): shared by the conform family, the
// CLI's `check-pages` replay lines and the Python package, so it holds nothing of the case generators.
//
// Request  {"id": 3, "method": "page-entrokv", "attention": [[...T floats...], ...q_heads], "group_size": 6,
//           "page_size": 16, "compression_ratio": "0.8", "sinks": 4, "pooling": "entropy", "page_score": "sum",
//           "source": "sink-isolated", "sink_pages": "reserved", "greedy": "skip-misfits", "temperature": "1",
//           "entropy_on": "sink-isolated", "budget_unit": "tokens", "page_count_rule": "paper"}
//          (every knob is sent; a request read back may also name a "preset", knobs given override it)
// Response {"id": 3, "kept_pages": [[0, 3, 5], [0, 1, 7]]}          one sorted list per KV group
//          optional "kept_tokens": [[...], [...]]                    the positions each group retains
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "audit/conform/protocol.h"
#include "core/types.h"

namespace kvaudit::conform {

// One layer: q_heads rows of T attention values (head h in KV group h / G) and every Page-EntroKV knob.
struct PageCase {
  Index q_heads = 0;
  Index tokens = 0;
  std::vector<float> values;  // row-major (q_heads, tokens), each row non-negative (a distribution)
  PageParams params;
  std::string origin;

  Index groups() const { return params.group_size > 0 ? q_heads / params.group_size : 0; }
  std::span<const float> row(Index h) const {
    return {values.data() + h * tokens, static_cast<std::size_t>(tokens)};
  }
  ScoreTensor tensor() const { return {1, q_heads, tokens, values}; }
};

struct PageAnswer {
  std::vector<std::vector<Index>> kept_pages;                    // per KV group, as sent
  std::optional<std::vector<std::vector<Index>>> kept_tokens;    // per KV group, when sent
};

std::string encode_page_request(std::int64_t id, const PageCase& c);
// Throws InputError naming `source` and showing the value. compression_ratio may be decimal text or a number (its
// raw text is kept); attention values that are not float32 values are rounded to the nearest float32 (noted in the
// case's origin), or refused under Float32Input::Strict, as for every method (protocol.h).
PageCase decode_page_request(const std::string& line, const std::string& source, Float32Input values = Float32Input::Round);
// Throws ProtocolError (BadJson, WrongId, BadResponse); never judges the pages themselves.
PageAnswer decode_page_response(const std::string& line, std::int64_t expected_id);

}  // namespace kvaudit::conform
