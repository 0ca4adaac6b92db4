// libFuzzer harness for the conform protocol's JSON line parsers (audit/conform/protocol.h, page_family.h,
// partition_family.h): a response line decodes or raises ProtocolError; a request line decodes or raises
// InputError, and a decoded request survives encode -> decode unchanged (values bit for bit, parameters equal),
// which is what `conform --replay` relies on. A decoded page or partition request is also judged against its
// canonical answer, which must conform (or the case is rejected as invalid), never crash.
#include <cstdint>
#include <cstring>
#include <string>

#include "audit/conform/page_family.h"
#include "audit/conform/partition_family.h"
#include "audit/conform/protocol.h"
#include "core/error.h"
#include "fuzz/fuzz_support.h"

using namespace kvaudit;
using kvaudit::fuzz::report_and_trap;

namespace {

bool same_case(const conform::ConformCase& a, const conform::ConformCase& b) {
  if (a.heads != b.heads || a.tokens != b.tokens || a.values.size() != b.values.size()) return false;
  if (a.values.size() != 0 && std::memcmp(a.values.data(), b.values.data(), a.values.size() * sizeof(float)) != 0)
    return false;
  const auto& p = a.params;
  const auto& q = b.params;
  return p.method == q.method && p.ratio.value == q.ratio.value &&
         conform::json_decimal(p.ratio.text) == conform::json_decimal(q.ratio.text) &&
         p.chunk_length == q.chunk_length && p.rescue_size == q.rescue_size &&
         p.entropy_threshold == q.entropy_threshold;
}

bool same_page_case(const conform::PageCase& a, const conform::PageCase& b) {
  if (a.q_heads != b.q_heads || a.tokens != b.tokens || a.values.size() != b.values.size()) return false;
  if (!a.values.empty() && std::memcmp(a.values.data(), b.values.data(), a.values.size() * sizeof(float)) != 0) return false;
  const auto& p = a.params;
  const auto& q = b.params;
  return p.group_size == q.group_size && p.page_size == q.page_size && p.ratio_text == q.ratio_text && p.n_sink == q.n_sink &&
         p.pooling == q.pooling && p.page_score == q.page_score && p.source == q.source && p.sink_pages == q.sink_pages &&
         p.greedy == q.greedy;
}

// Page and partition lines: decode, round trip, and (small cases only, the oracles are exact) judge the
// canonical answer.
void page_and_partition(const std::string& line) {
  try {
    conform::decode_page_response(line, 7);
  } catch (const conform::ProtocolError&) {
  }
  try {
    conform::decode_partition_response(line, 7);
  } catch (const conform::ProtocolError&) {
  }
  conform::PageCase c;
  bool page = true;
  try {
    c = conform::decode_page_request(line, "fuzz");
  } catch (const InputError&) {
    page = false;
  }
  if (page) {
    std::string again;
    try {
      again = conform::encode_page_request(7, c);
    } catch (const InputError&) {
      again.clear();
    }
    if (!again.empty()) {
      conform::PageCase d;
      try {
        d = conform::decode_page_request(again, "fuzz");
      } catch (const InputError& e) {
        report_and_trap("conform page: re-encoded request does not decode", line + "\n-> " + again + "\n" + e.what());
      }
      if (!same_page_case(c, d)) report_and_trap("conform page: request changed in a round trip", line + "\n-> " + again);
    }
    if (c.q_heads * c.tokens <= 4096 && c.params.page_size <= 4096) {
      try {
        const auto pages = conform::canonical_pages(c);
        if (!conform::judge_pages(c, {pages, std::nullopt}).passed())
          report_and_trap("conform page: the oracle's canonical pages do not conform", line);
      } catch (const std::invalid_argument&) {
      }
    }
  }
  conform::PartitionCase p;
  try {
    p = conform::decode_partition_request(line, "fuzz");
  } catch (const InputError&) {
    return;
  }
  const std::string again = conform::encode_partition_request(7, p);
  conform::PartitionCase q;
  try {
    q = conform::decode_partition_request(again, "fuzz");
  } catch (const InputError& e) {
    report_and_trap("conform partition: re-encoded request does not decode", line + "\n-> " + again + "\n" + e.what());
  }
  if (q.p != p.p || q.budget_bits != p.budget_bits || q.groups != p.groups)
    report_and_trap("conform partition: request changed in a round trip", line + "\n-> " + again);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string line(reinterpret_cast<const char*>(data), size);
  page_and_partition(line);
  try {
    Selection s = conform::decode_response(line, 7);
    (void)s;
  } catch (const conform::ProtocolError&) {
  }

  for (Flavour flavour : {Flavour::Kvpress, Flavour::Exact}) {
    conform::ConformCase c;
    try {
      c = conform::decode_request(line, flavour, "fuzz");
    } catch (const InputError&) {
      continue;
    }
    if (static_cast<std::size_t>(c.heads * c.tokens) != c.values.size())
      report_and_trap("conform: decoded request's values do not fill heads x tokens", line);
    std::string again;
    try {
      again = conform::encode_request(7, c);
    } catch (const InputError&) {
      continue;  // a non-finite score (e.g. a float32 overflow of 1e39) is refused on the way out: fine
    }
    conform::ConformCase d;
    try {
      d = conform::decode_request(again, flavour, "fuzz");
    } catch (const InputError& e) {
      report_and_trap("conform: re-encoded request does not decode", line + "\n-> " + again + "\n" + e.what());
    }
    if (!same_case(c, d)) report_and_trap("conform: request changed in an encode/decode round trip", line + "\n-> " + again);
  }
  return 0;
}
