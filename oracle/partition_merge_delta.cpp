// Merge-delta and merge-sequence bookkeeping in 332-bit precision (see partition_merge_delta.h).
#include "oracle/partition_merge_delta.h"

#include <cmath>
#include <stdexcept>

#include <boost/multiprecision/mpfr.hpp>

namespace kvaudit::oracle {

namespace {
using Real = boost::multiprecision::mpfr_float_100;

Real h_real(const Real& x) { return x > 0 ? Real(-x * boost::multiprecision::log2(x)) : Real(0); }
double h_double(double x) { return x > 0 ? -x * std::log2(x) : 0.0; }

void check(double x) {
  if (!std::isfinite(x) || x < 0) throw std::invalid_argument("masses must be finite and >= 0");
}
}  // namespace

double merge_delta(double a, double b) {
  check(a);
  check(b);
  const Real ra = a, rb = b;
  return Real(h_real(ra) + h_real(rb) - h_real(ra + rb)).convert_to<double>();
}

MergeBookkeeping merge_bookkeeping(const std::vector<double>& p, const std::vector<MergeStep>& steps) {
  for (double x : p) check(x);
  struct Block {
    Index end;    // exclusive end position
    Real mass;    // exact: sums of doubles in 333 bits (inputs >= 2^-250)
    double mass_d;
  };
  std::vector<Block> blocks;
  for (std::size_t i = 0; i < p.size(); ++i) blocks.push_back({static_cast<Index>(i + 1), Real(p[i]), p[i]});
  auto entropy = [&] {
    Real H = 0;
    for (const Block& b : blocks) H += h_real(b.mass);
    return H;
  };
  auto entropy_d = [&] {
    double H = 0;
    for (const Block& b : blocks) H += h_double(b.mass_d);
    return H;
  };
  MergeBookkeeping out;
  for (const MergeStep& st : steps) {
    if (st.left < 0 || st.left + 1 >= static_cast<Index>(blocks.size()))
      throw std::invalid_argument("merge step outside the current block list");
    Block& a = blocks[st.left];
    const Block& b = blocks[st.left + 1];
    const Real before = entropy();
    const double before_d = entropy_d();
    const Real delta = h_real(a.mass) + h_real(b.mass) - h_real(a.mass + b.mass);
    const double delta_d = h_double(a.mass_d) + h_double(b.mass_d) - h_double(a.mass_d + b.mass_d);
    if (delta < 0) out.all_deltas_nonnegative = false;
    a.mass += b.mass;
    a.mass_d += b.mass_d;
    a.end = b.end;
    blocks.erase(blocks.begin() + st.left + 1);
    const Real after = entropy();
    const double after_d = entropy_d();
    MergeRecord r;
    r.entropy_before = before.convert_to<double>();
    r.delta = delta.convert_to<double>();
    r.entropy_after = after.convert_to<double>();
    r.residual_extended = Real(abs(before - delta - after)).convert_to<double>();
    r.residual_double = std::fabs(before_d - delta_d - after_d);
    out.max_residual_double = std::max(out.max_residual_double, r.residual_double);
    out.max_residual_extended = std::max(out.max_residual_extended, r.residual_extended);
    out.steps.push_back(r);
  }
  for (std::size_t k = 0; k + 1 < blocks.size(); ++k) out.final_cuts.push_back(blocks[k].end);
  return out;
}

}  // namespace kvaudit::oracle
