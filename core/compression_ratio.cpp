// Decimal text -> (numerator, 10^digits), arbitrary precision, so the exact budget needs no floating point and
// no digit limit ("0.5000000000000000000" is 1/2).
#include "core/compression_ratio.h"

#include <cmath>
#include <cstdlib>

#include <boost/multiprecision/cpp_int.hpp>

#include "core/error.h"

namespace kvaudit {
namespace {

using BigInt = boost::multiprecision::cpp_int;

// Text longer than this is refused as malformed rather than parsed (a ratio is read from a flag or a request).
constexpr std::size_t kMaxRatioChars = 4096;

struct Decimal {
  BigInt numerator = 0;
  BigInt denominator = 1;
};

Decimal parse_decimal(const std::string& text, const std::string& source) {
  if (text.size() > kMaxRatioChars)
    throw InputError(source, "compression_ratio", "longer than " + std::to_string(kMaxRatioChars) + " characters");
  Decimal d;
  bool digits = false, point = false;
  for (char c : text) {
    if (c == '.' && !point) {
      point = true;
    } else if (c >= '0' && c <= '9') {
      digits = true;
      if (point) d.denominator *= 10;
      d.numerator = d.numerator * 10 + (c - '0');
    } else {
      throw InputError(source, "compression_ratio", "not a plain decimal number: '" + text + "'");
    }
  }
  if (!digits) throw InputError(source, "compression_ratio", "not a plain decimal number: '" + text + "'");
  return d;
}

}  // namespace

CompressionRatio parse_compression_ratio(const std::string& text, const std::string& source) {
  Decimal d = parse_decimal(text, source);
  if (d.numerator >= d.denominator) throw InputError(source, "compression_ratio", "must be in [0, 1), got '" + text + "'");
  return {text, std::strtod(text.c_str(), nullptr)};
}

Index kvpress_float_budget(Index tokens, double rho) {
  double kept = static_cast<double>(tokens) * (1.0 - rho);
  Index n = static_cast<Index>(kept);  // Python int() truncates toward zero
  return n < 1 ? 1 : n;
}

Index exact_budget(Index tokens, const CompressionRatio& rho) {
  Decimal d = parse_decimal(rho.text, "compression_ratio");
  const BigInt kept = (d.denominator - d.numerator) * tokens / d.denominator;
  return kept < 1 ? 1 : static_cast<Index>(kept);
}

Index exact_floor_kept(Index n, const CompressionRatio& rho) {
  Decimal d = parse_decimal(rho.text, "compression_ratio");
  return static_cast<Index>((d.denominator - d.numerator) * n / d.denominator);
}

}  // namespace kvaudit
