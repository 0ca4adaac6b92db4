// A filtered number for the admissibility checker (CGAL's filtered predicates): a pair of doubles [lo, hi]
// that encloses the value the naive 50-digit path (detail::Real) computes for the same formula. Every
// comparison either decides from the enclosures or throws UndecidedInDouble, and the caller re-runs the
// check in 50 digits. Why this is rigorous: proofs/15_filtered_admissibility.md.
//
// Arithmetic rounds outward (for sums an error-free transform tells the direction of round-to-nearest's
// error, so exact sums stay points; products and quotients always step one ulp out); rounding of the 50-digit format is faithful and the endpoints are doubles,
// hence representable in it, so the 50-digit result of the same operation on operands inside the
// enclosures lies inside the result's enclosure. Values with a tie key carry the exact inputs that
// determine their 50-digit value: equal keys mean bit-identical 50-digit values, which decides exact ties
// (common: tie-heavy scores) without falling back.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>

#include "core/types.h"

namespace kvaudit::oracle::detail {

// Thrown by a comparison the enclosures cannot decide; never escapes check_admissible.
struct UndecidedInDouble : std::runtime_error {
  UndecidedInDouble() : std::runtime_error("double enclosures overlap: decide in 50 digits") {}
};

// What a tie key identifies: the formula whose 50-digit value is a function of the key alone.
enum class TieFormula : unsigned char {
  None,
  ExactTokenValue,       // round50(x_j): a + b = round50(x_j) exactly (where the exact head sum fits 50 digits, its
                         //   canonical pair, ExactDoubleSum::canonical)
  TokenValueMinusError,  // round50(round50(x_j) - err(mass_j)): a, b as above, c = mass_j
  TokenValuePlusError,   // round50(round50(x_j) + err(mass_j))
  ExactChunkMean,        // round50(round50(S_i) / n_i): a + b = round50(S_i) exactly (as above), c = n_i
  ChunkMeanMinusError,   // mean - err(A_i, n_i): a, b, c as above, d, e the exact pair of A_i (sum of mass_j)
  ChunkMeanPlusError,    // mean + err(A_i, n_i)
  EntropyLow,            // a chunk's entropy interval ends: a = the id of the chunk's content (its sequence of
  EntropyHigh,           //   exact head sums and masses; with ExactOnly the sorted multiset of exact head sums),
                         //   equal only for chunks with equal content
  ExactOnlyEntropy,      // with ExactOnly both ends are the 50-digit entropy itself: one key for both, a as above
  SameComputation,       // a = a serial number: one computed value, shared only by its copies (filtered canonical
                         //   selection, whose gates compare a chunk's statistic with the median that may be it)
};

struct TieKey {
  TieFormula formula = TieFormula::None;
  double a = 0, b = 0, c = 0, d = 0, e = 0;  // the exact inputs (set in admissibility_bounds.cpp)
  bool same_value_as(const TieKey& o) const {
    return formula != TieFormula::None && formula == o.formula && a == o.a && b == o.b && c == o.c && d == o.d && e == o.e;
  }
};

inline double min_of(double a, double b) { return b < a ? b : a; }
inline double max_of(double a, double b) { return a < b ? b : a; }

class DoubleEnclosure {
 public:
  DoubleEnclosure() = default;
  DoubleEnclosure(double v) : lo_(v), hi_(v) {}  // NOLINT: exact doubles (and integers below 2^53) are points
  DoubleEnclosure(int v) : lo_(v), hi_(v) {}     // NOLINT
  DoubleEnclosure(Index v) : lo_(static_cast<double>(v)), hi_(static_cast<double>(v)) {  // NOLINT
    if (static_cast<Index>(lo_) != v) throw UndecidedInDouble();
  }
  static DoubleEnclosure between(double lo, double hi) {
    DoubleEnclosure e;
    e.lo_ = lo;
    e.hi_ = hi;
    return e;
  }

  double lo() const { return lo_; }
  double hi() const { return hi_; }
  // Null, or a key owned by whoever computed the value (SelectorBoundsOf::tie_keys), which outlives it.
  const TieKey* key() const { return key_; }
  void set_key(const TieKey* k) { key_ = k; }

  friend DoubleEnclosure operator+(const DoubleEnclosure& a, const DoubleEnclosure& b) {
    return between(sum_down(a.lo_, b.lo_), sum_up(a.hi_, b.hi_));
  }
  friend DoubleEnclosure operator-(const DoubleEnclosure& a, const DoubleEnclosure& b) {
    return between(sum_down(a.lo_, -b.hi_), sum_up(a.hi_, -b.lo_));
  }
  friend DoubleEnclosure operator-(const DoubleEnclosure& a) { return between(-a.hi_, -a.lo_); }
  friend DoubleEnclosure operator*(const DoubleEnclosure& a, const DoubleEnclosure& b) {
    if (a.lo_ >= 0 && b.lo_ >= 0) return between(product_down(a.lo_, b.lo_), product_up(a.hi_, b.hi_));
    if (a.lo_ >= 0 && b.hi_ <= 0) return between(product_down(a.hi_, b.lo_), product_up(a.lo_, b.hi_));
    double p[4][2] = {{a.lo_, b.lo_}, {a.lo_, b.hi_}, {a.hi_, b.lo_}, {a.hi_, b.hi_}};
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (auto& q : p) {
      lo = min_of(lo, product_down(q[0], q[1]));
      hi = max_of(hi, product_up(q[0], q[1]));
    }
    return between(lo, hi);
  }
  friend DoubleEnclosure operator/(const DoubleEnclosure& a, const DoubleEnclosure& b) {
    if (!(b.lo_ > 0 || b.hi_ < 0)) throw UndecidedInDouble();  // divisor may be zero: let 50 digits decide
    if (a.lo_ >= 0 && b.lo_ > 0) return between(quotient_down(a.lo_, b.hi_), quotient_up(a.hi_, b.lo_));
    double p[4][2] = {{a.lo_, b.lo_}, {a.lo_, b.hi_}, {a.hi_, b.lo_}, {a.hi_, b.hi_}};
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (auto& q : p) {
      lo = min_of(lo, quotient_down(q[0], q[1]));
      hi = max_of(hi, quotient_up(q[0], q[1]));
    }
    return between(lo, hi);
  }
  DoubleEnclosure& operator+=(const DoubleEnclosure& o) { return *this = *this + o; }
  DoubleEnclosure& operator-=(const DoubleEnclosure& o) { return *this = *this - o; }

  // Comparisons of the enclosed values: decided, or nullopt (the operators throw UndecidedInDouble instead).
  friend std::optional<bool> decide_less(const DoubleEnclosure& a, const DoubleEnclosure& b) {
    if (same_value(a.key_, b.key_)) return false;
    if (a.hi_ < b.lo_) return true;
    if (a.lo_ >= b.hi_) return false;
    return std::nullopt;
  }
  friend std::optional<bool> decide_less_equal(const DoubleEnclosure& a, const DoubleEnclosure& b) {
    if (same_value(a.key_, b.key_)) return true;
    if (a.hi_ <= b.lo_) return true;
    if (a.lo_ > b.hi_) return false;
    return std::nullopt;
  }
  friend bool operator<(const DoubleEnclosure& a, const DoubleEnclosure& b) {
    if (const auto d = decide_less(a, b)) return *d;
    throw UndecidedInDouble();
  }
  friend bool operator<=(const DoubleEnclosure& a, const DoubleEnclosure& b) {
    if (const auto d = decide_less_equal(a, b)) return *d;
    throw UndecidedInDouble();
  }
  friend bool operator>(const DoubleEnclosure& a, const DoubleEnclosure& b) { return b < a; }
  friend bool operator>=(const DoubleEnclosure& a, const DoubleEnclosure& b) { return b <= a; }
  friend bool operator==(const DoubleEnclosure& a, const DoubleEnclosure& b) { return a <= b && b <= a; }

  // Outward-rounded elementary operations (see the proof for the accuracy they assume of glibc and Boost).
  // One ulp toward -inf / +inf (std::nextafter without the library call; NaN stays NaN).
  static double down(double v) {
    const auto bits = std::bit_cast<std::uint64_t>(v);
    // Finite and nonzero (the common case): magnitude bits minus one lie below the infinity pattern minus one.
    if ((bits & 0x7fffffffffffffffULL) - 1 < 0x7fefffffffffffffULL)
      return std::bit_cast<double>(bits - 1 + 2 * (bits >> 63));  // positive: toward 0; negative: away from it
    if (v != v || v == -std::numeric_limits<double>::infinity()) return v;
    if (v == 0) return -std::numeric_limits<double>::denorm_min();
    return std::numeric_limits<double>::max();  // +inf
  }
  static double up(double v) { return -down(-v); }

 private:
  // Round-to-nearest result r with its exact error e (a + b = r + e): step toward the error's side.
  static double sum_down(double a, double b) {
    double r = a + b, bb = r - a, e = (a - (r - bb)) + (b - bb);  // TwoSum: exact even for subnormals
    const double stepped = down(r);  // computed either way: the select below is branch-free
    return e < 0 || e != e ? stepped : r;
  }
  static double sum_up(double a, double b) {
    double r = a + b, bb = r - a, e = (a - (r - bb)) + (b - bb);
    const double stepped = up(r);
    return e > 0 || e != e ? stepped : r;
  }
  // Products and quotients step one ulp outward unless the rounded result is exact, which an integer product of the
  // significands tells (fma would too, but the baseline x86-64 target emulates it in software). Exact results stay
  // points, as exact sums do: a chunk mean 51 / 17 and one 27 / 9 are then both the point 3, equal in double.
  static double product_down(double a, double b) {
    if (a == 0 || b == 0) return 0.0;
    const double p = a * b;
    return is_product(a, b, p) ? p : down(p);
  }
  static double product_up(double a, double b) {
    if (a == 0 || b == 0) return 0.0;
    const double p = a * b;
    return is_product(a, b, p) ? p : up(p);
  }
  static double quotient_down(double a, double b) {
    if (a == 0) return 0.0;
    const double q = a / b;
    return is_product(q, b, a) ? q : down(q);
  }
  static double quotient_up(double a, double b) {
    if (a == 0) return 0.0;
    const double q = a / b;
    return is_product(q, b, a) ? q : up(q);
  }
  // Whether x * y == z exactly, for nonzero finite x, y: with x = mx 2^ex, y = my 2^ey, z = mz 2^ez (53-bit integer
  // significands), mx my 2^(ex + ey) == mz 2^ez, compared in 128-bit integers. False for zeros, infinities, NaN.
  static bool is_product(double x, double y, double z) {
    constexpr double kMax = std::numeric_limits<double>::max();
    if (!(std::fabs(x) <= kMax && std::fabs(y) <= kMax && std::fabs(z) <= kMax) || x == 0 || y == 0 || z == 0) return false;
    if (std::signbit(x) != std::signbit(y) ? !std::signbit(z) : std::signbit(z)) return false;
    const Significand sx = significand(x), sy = significand(y), sz = significand(z);
    // mx my lies in [2^104, 2^106) and mz in [2^52, 2^53): equal only after dropping zero bits of mx my.
    // x y = (mx my) 2^(ex + ey - 106), z = mz 2^(ez - 53)
    const int drop = sz.exponent - 53 - (sx.exponent + sy.exponent - 106);
    if (drop <= 0 || drop >= 128) return false;
    const unsigned __int128 product = static_cast<unsigned __int128>(sx.bits) * sy.bits;
    const unsigned __int128 low_bits = (static_cast<unsigned __int128>(1) << drop) - 1;
    return (product & low_bits) == 0 && (product >> drop) == sz.bits;
  }
  // |v| = bits 2^(exponent - 53) with bits in [2^52, 2^53), for finite nonzero v: frexp's exponent and its fraction
  // times 2^53, read from the representation (frexp and ldexp were 9 % of the uninstrumented fuzz harness).
  struct Significand {
    std::uint64_t bits;
    int exponent;
  };
  static Significand significand(double v) {
    constexpr std::uint64_t kFraction = (std::uint64_t{1} << 52) - 1;
    const auto raw = std::bit_cast<std::uint64_t>(v);
    const auto biased = static_cast<int>((raw >> 52) & 0x7ff);
    if (biased != 0) return {(raw & kFraction) | (std::uint64_t{1} << 52), biased - 1022};
    const int shift = std::countl_zero(raw & kFraction) - 11;  // subnormal: |v| = fraction 2^-1074
    return {(raw & kFraction) << shift, -1021 - shift};
  }

  static bool same_value(const TieKey* a, const TieKey* b) { return a != nullptr && b != nullptr && a->same_value_as(*b); }

  double lo_ = 0, hi_ = 0;
  const TieKey* key_ = nullptr;
};

// Whether two enclosed values are known to be equal without a decision that could throw: a shared tie key, or equal
// points (false only means "not known").
inline bool known_equal(const DoubleEnclosure& a, const DoubleEnclosure& b) {
  if (a.key() != nullptr && b.key() != nullptr && a.key()->same_value_as(*b.key())) return true;
  return a.lo() == a.hi() && b.lo() == b.hi() && a.lo() == b.lo();
}

// Slack for the 50-digit path's own errors where the filtered path does not mirror its operation order
// or where Boost's functions are not correctly rounded (proofs/15_filtered_admissibility.md).
inline DoubleEnclosure widened(const DoubleEnclosure& v, double absolute) {
  return v + DoubleEnclosure::between(-absolute, absolute);
}

// ln over an enclosure: glibc's log is within 1 ulp; three ulps and 2^-120 absolute also cover Boost's
// 50-digit log, which the 50-digit path uses.
// One library call: ln(hi) <= ln(lo) + (hi - lo) / lo, each rounding stepped outward.
inline DoubleEnclosure log(const DoubleEnclosure& v) {
  if (!(v.lo() > 0)) throw UndecidedInDouble();
  const double at_lo = std::log(v.lo());
  double lo = at_lo, hi = at_lo;
  for (int i = 0; i < 3; ++i) {
    lo = DoubleEnclosure::down(lo);
    hi = DoubleEnclosure::up(hi);
  }
  if (v.hi() != v.lo()) hi = DoubleEnclosure::up(hi + DoubleEnclosure::up(DoubleEnclosure::up(v.hi() - v.lo()) / v.lo()));
  return widened(DoubleEnclosure::between(lo, hi), 0x1p-120);
}

inline DoubleEnclosure abs(const DoubleEnclosure& v) {
  if (v.lo() >= 0) return v;
  if (v.hi() <= 0) return -v;
  return DoubleEnclosure::between(0, max_of(-v.lo(), v.hi()));
}

// min / max, never throwing: where the comparison is decided, the operand the 50-digit path's std::min / std::max
// picks, tie key included; otherwise the hull, an enclosure of that min / max since both are monotone.
inline DoubleEnclosure lesser(const DoubleEnclosure& a, const DoubleEnclosure& b) {
  if (const auto b_first = decide_less(b, a)) return *b_first ? b : a;
  return DoubleEnclosure::between(min_of(a.lo(), b.lo()), min_of(a.hi(), b.hi()));
}
inline DoubleEnclosure greater(const DoubleEnclosure& a, const DoubleEnclosure& b) {
  if (const auto b_first = decide_less(a, b)) return *b_first ? b : a;
  return DoubleEnclosure::between(max_of(a.lo(), b.lo()), max_of(a.hi(), b.hi()));
}

// The exact sum of doubles as an unevaluated pair hi + lo, exact while `exact` holds; `slack` bounds
// what the pair lost otherwise (each loss is the exact TwoSum residual, accumulated rounding up).
struct ExactDoubleSum {
  double hi = 0, lo = 0, slack = 0;
  bool exact = true;
  void add(double v) {
    double r = hi + v, bb = r - hi, e = (hi - (r - bb)) + (v - bb);
    hi = r;
    double r2 = lo + e, bb2 = r2 - lo, e2 = (lo - (r2 - bb2)) + (e - bb2);
    lo = r2;
    if (e2 != 0) {
      exact = false;
      slack = DoubleEnclosure::up(slack + std::fabs(e2));
    }
  }
  DoubleEnclosure enclosure() const {
    DoubleEnclosure v = DoubleEnclosure(hi) + DoubleEnclosure(lo);
    return exact ? v : widened(v, slack);
  }
  // While `exact`: the exact sum as (its round-to-nearest double, the exact remainder), by TwoSum. Unlike (hi, lo),
  // which depend on the order of the adds, this pair is a function of the value alone: tie keys use it, so sums
  // of the same values in another order (columns or chunks with permuted content) share a key.
  struct Pair {
    double rounded, remainder;
  };
  Pair canonical() const {
    double r = hi + lo, bb = r - hi, e = (hi - (r - bb)) + (lo - bb);
    return {r, e};
  }
};

}  // namespace kvaudit::oracle::detail
