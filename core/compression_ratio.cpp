// Decimal text -> (numerator, 10^digits) so the exact budget needs no floating point.
#include "core/compression_ratio.h"

#include <cmath>
#include <cstdlib>

#include "core/error.h"

namespace kvaudit {
namespace {

struct Decimal {
  __int128 numerator = 0;
  __int128 denominator = 1;
};

Decimal parse_decimal(const std::string& text, const std::string& source) {
  Decimal d;
  std::size_t i = 0;
  bool digits = false, point = false;
  int fraction_digits = 0;
  for (; i < text.size(); ++i) {
    char c = text[i];
    if (c == '.' && !point) {
      point = true;
    } else if (c >= '0' && c <= '9') {
      digits = true;
      if (point) {
        if (++fraction_digits > 18) throw InputError(source, "compression_ratio", "more than 18 decimal digits: '" + text + "'");
        d.denominator *= 10;
      }
      d.numerator = d.numerator * 10 + (c - '0');
      if (d.numerator > d.denominator * 10) throw InputError(source, "compression_ratio", "must be in [0, 1), got '" + text + "'");
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
  __int128 kept = (d.denominator - d.numerator) * static_cast<__int128>(tokens) / d.denominator;
  return kept < 1 ? 1 : static_cast<Index>(kept);
}

}  // namespace kvaudit
