// libFuzzer harness for the conform protocol's JSON line parsers (audit/conform/protocol.h): a response line
// decodes or raises ProtocolError; a request line decodes or raises InputError, and a decoded request survives
// encode -> decode unchanged (values bit for bit, parameters equal), which is what `conform --replay` relies on.
#include <cstdint>
#include <cstring>
#include <string>

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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string line(reinterpret_cast<const char*>(data), size);
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
