// nanobind bindings of `kvaudit._kvaudit`: the CLI's front end, in-process. Each function makes the same C++
// calls as the matching `kvaudit` subcommand (cli/*_command.cpp) on an in-memory array instead of an NPY
// file, and the JSON-producing ones return the CLI's JSON text byte for byte (python/tests compare them).
// Nothing here selects, checks or solves: the selectors are core/, the decisions oracle/ and audit/.
//
// Arrays arrive as nanobind ndarrays (buffer protocol or DLPack: numpy, torch, anything exporting either),
// any strides, any CPU dtype; they are read exactly as read_npy would have read them from a file
// (float values held as double, exactly as stored), then validated by the CLI's own helpers, so a bad input
// raises ValueError with the CLI's message, the file path replaced by the argument's name.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include <nlohmann/json.hpp>

#include "audit/budget_match.h"
#include "audit/conform/protocol.h"
#include "audit/page_claims.h"
#include "audit/paging_findings.h"
#include "cli/float32_input.h"
#include "cli/page_select_output.h"
#include "cli/paging_input.h"
#include "cli/partition_output.h"
#include "cli/select_args.h"
#include "core/compression_ratio.h"
#include "core/error.h"
#include "core/io/half.h"
#include "core/io/npy.h"
#include "core/paging/page_selector.h"
#include "core/select/chunk_select.h"
#include "core/types.h"
#include "core/verdict.h"
#include "oracle/chunk_selection.h"
#include "oracle/page_entrokv.h"
#include "oracle/union_overhead.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace kvaudit::python {
namespace {

using Array = nb::ndarray<nb::ro>;
using nlohmann::json;

PyObject* g_rounding_warning = nullptr;  // kvaudit.Float32RoundingWarning

// ---- Arrays in ---------------------------------------------------------------------------------------------

// The NPY descr a numpy array of this dtype would carry (what the CLI's messages quote); bf16 has none.
std::string descr_of(const nb::dlpack::dtype& t) {
  using C = nb::dlpack::dtype_code;
  const int bytes = t.bits / 8;
  const std::string order = bytes == 1 ? "|" : "<";
  switch (static_cast<C>(t.code)) {
    case C::Float: return order + "f" + std::to_string(bytes);
    case C::Int: return order + "i" + std::to_string(bytes);
    case C::UInt: return order + "u" + std::to_string(bytes);
    case C::Complex: return order + "c" + std::to_string(bytes);
    case C::Bool: return "|b1";
    case C::Bfloat: return t.bits == 16 ? "bfloat16" : "bfloat" + std::to_string(t.bits);
  }
  return "dtype code " + std::to_string(t.code);
}

// Calls emit(element) for every element of `a` in C order, whatever its strides.
template <class T, class F>
void for_each_element(const Array& a, F&& emit) {
  const T* base = static_cast<const T*>(a.data());
  const std::size_t nd = a.ndim();
  const std::size_t n = a.size();
  if (n == 0) return;
  bool contiguous = true;
  std::int64_t expect = 1;
  for (std::size_t d = nd; d-- > 0;) {
    if (a.shape(d) != 1 && a.stride(d) != expect) contiguous = false;
    expect *= static_cast<std::int64_t>(a.shape(d));
  }
  if (contiguous) {
    for (std::size_t i = 0; i < n; ++i) emit(base[i]);
    return;
  }
  std::vector<std::int64_t> idx(nd, 0);
  std::int64_t off = 0;
  for (std::size_t k = 0; k < n; ++k) {
    emit(base[off]);
    for (std::size_t d = nd; d-- > 0;) {
      if (++idx[d] < static_cast<std::int64_t>(a.shape(d))) {
        off += a.stride(d);
        break;
      }
      off -= a.stride(d) * (idx[d] - 1);
      idx[d] = 0;
    }
  }
}

// What read_npy returns for a file holding `a`: floats exactly as stored, i4/i8 as int64; other dtypes are
// rejected with read_npy's message. bfloat16 is accepted too (DLPack carries it; NPY cannot).
using Imported = io::NpyArray;

// `direct`: when given, float16 / bfloat16 / float32 values (which float32 holds exactly) go there instead of
// `values`, saving a double copy on the per-call path of check() and select().
Imported import_array(const Array& a, const std::string& source, std::vector<float>* direct = nullptr) {
  if (a.device_type() != nb::device::cpu::value)
    throw InputError(source, "device", "expected an array in CPU memory (call .cpu() first)");
  Imported out;
  out.dtype = descr_of(a.dtype());
  for (std::size_t d = 0; d < a.ndim(); ++d) out.shape.push_back(static_cast<Index>(a.shape(d)));
  const auto t = a.dtype();
  using C = nb::dlpack::dtype_code;
  const auto code = static_cast<C>(t.code);
  if (t.lanes != 1) throw InputError(source, "descr", "unsupported dtype '" + out.dtype + "' (want <f2, <f4, <f8, <i4 or <i8)");
  const bool to_direct = direct && (code == C::Bfloat || (code == C::Float && t.bits <= 32));
  if (to_direct) {
    direct->clear();
    direct->reserve(a.size());
    if (code == C::Float && t.bits == 32) {
      for_each_element<float>(a, [&](float v) { direct->push_back(v); });
      return out;
    }
    if (t.bits == 16) {
      const bool bf = code == C::Bfloat;
      for_each_element<std::uint16_t>(a, [&](std::uint16_t h) { direct->push_back(bf ? io::bf16_to_float(h) : io::f16_to_float(h)); });
      return out;
    }
  }
  out.values.reserve(code == C::Float || code == C::Bfloat ? a.size() : 0);
  if (code == C::Float && t.bits == 16) {
    for_each_element<std::uint16_t>(a, [&](std::uint16_t h) { out.values.push_back(io::f16_to_float(h)); });
  } else if (code == C::Bfloat && t.bits == 16) {
    for_each_element<std::uint16_t>(a, [&](std::uint16_t h) { out.values.push_back(io::bf16_to_float(h)); });
  } else if (code == C::Float && t.bits == 32) {
    for_each_element<float>(a, [&](float v) { out.values.push_back(v); });
  } else if (code == C::Float && t.bits == 64) {
    for_each_element<double>(a, [&](double v) { out.values.push_back(v); });
  } else if (code == C::Int && t.bits == 32) {
    for_each_element<std::int32_t>(a, [&](std::int32_t v) { out.integers.push_back(v); });
  } else if (code == C::Int && t.bits == 64) {
    for_each_element<std::int64_t>(a, [&](std::int64_t v) { out.integers.push_back(v); });
  } else {
    throw InputError(source, "descr", "unsupported dtype '" + out.dtype + "' (want <f2, <f4, <f8, <i4 or <i8)");
  }
  return out;
}

using Precision = cli::Float32Input;

// Narrowing is reported by the CLI in its JSON ("precision"); here it is also a warning, so a caller that only
// looks at the positions still hears of it.
void warn_if_rounded(const Precision& p, const std::string& source) {
  if (p.rounded == 0) return;
  const std::string msg = source + ": values: " + std::to_string(p.rounded) + " " + p.stored_dtype +
                          " value(s) rounded to float32 (this computation is defined in float32)";
  if (PyErr_WarnEx(g_rounding_warning, msg.c_str(), 2) < 0) throw nb::python_error();
}

void add_precision(json& j, const Precision& p) {
  j["precision"] = p.describe();
}

// cli::read_score_file after read_npy.
cli::ScoreFile score_file(const Array& a, const std::string& path) {
  std::vector<float> direct;
  Imported arr = import_array(a, path, &direct);
  if (arr.dtype != "bfloat16" && (arr.dtype.size() < 2 || arr.dtype[1] != 'f'))
    throw InputError(path, "dtype", "expected float16, float32 or float64 scores, got '" + arr.dtype + "'");
  cli::ScoreFile f = cli::score_file_shape(arr.shape, path);
  if (arr.values.empty() && !direct.empty()) {  // float16 / bfloat16 / float32: nothing to narrow
    io::require_finite(std::span<const float>(direct), path, "values");
    f.values = std::move(direct);
    f.precision = {arr.dtype, 0};
    return f;
  }
  f.values = cli::narrow_for_float32(arr, path, f.precision);
  return f;
}

// cli::load_attention after read_npy (NPY branch), then its validation of each row as a distribution.
ScoreTensor attention_tensor(const Array& a, const std::string& source, Precision& precision) {
  Imported arr = import_array(a, source);
  if (arr.shape.size() != 2 || arr.values.empty()) throw InputError(source, "shape", "expected a floating (q_heads, T) array");
  ScoreTensor out{1, arr.shape[0], arr.shape[1], cli::narrow_for_float32(arr, source, precision)};
  cli::require_distribution_rows(out, source);
  return out;
}

// ---- Positions in (the CLI's read_selection, from Python objects instead of JSON) ----------------------------

// An entry as the CLI's message quotes it (nlohmann's dump of the JSON value): numpy scalars as their Python
// value, floats by float's own repr ("1.5", not numpy 2's "np.float64(1.5)").
std::string entry_text(nb::handle v) {
  nb::object o = nb::borrow(v);
  if (!PyLong_Check(o.ptr()) && !PyFloat_Check(o.ptr()) && nb::hasattr(o, "item") && !PySequence_Check(o.ptr())) {
    nb::object item = o.attr("item")();
    if (!nb::hasattr(item, "item")) o = item;
  }
  if (o.is_none()) return "null";
  if (PyBool_Check(o.ptr())) return o.ptr() == Py_True ? "true" : "false";
  if (PyUnicode_Check(o.ptr())) return json(nb::cast<std::string>(o)).dump();
  if (PyFloat_Check(o.ptr())) {
    nb::object r = nb::steal(PyFloat_Type.tp_repr(o.ptr()));
    if (!r.is_valid()) throw nb::python_error();
    return nb::cast<std::string>(r);
  }
  return nb::cast<std::string>(nb::repr(o));
}

Index read_position(nb::handle v, const std::string& source, const std::string& field) {
  // Python ints and numpy integer scalars; bool is not a position (JSON's true is not an integer either).
  if (PyBool_Check(v.ptr()) || !PyIndex_Check(v.ptr()) || PyFloat_Check(v.ptr()))
    throw InputError(source, field, "every entry must be an integer, got " + entry_text(v));
  int overflow = 0;
  nb::object as_int = nb::steal(PyNumber_Index(v.ptr()));
  if (!as_int.is_valid()) throw nb::python_error();
  const long long x = PyLong_AsLongLongAndOverflow(as_int.ptr(), &overflow);
  if (overflow != 0) throw InputError(source, field, "integer out of range: " + entry_text(v));
  return static_cast<Index>(x);
}

bool is_sequence(nb::handle v) {
  if (PyUnicode_Check(v.ptr()) || PyBytes_Check(v.ptr())) return false;
  if (PySequence_Check(v.ptr())) return true;
  return nb::isinstance<Array>(v) && nb::cast<Array>(v).ndim() >= 1;  // not a numpy scalar (a 0-d buffer)
}

Positions read_positions(nb::handle v, const std::string& source, const std::string& field) {
  Positions out;
  if (nb::isinstance<Array>(v)) {
    Array a = nb::cast<Array>(v);
    const auto t = a.dtype();
    using C = nb::dlpack::dtype_code;
    if (a.ndim() == 1 && (t.code == static_cast<std::uint8_t>(C::Int) || t.code == static_cast<std::uint8_t>(C::UInt)) &&
        t.lanes == 1 && a.device_type() == nb::device::cpu::value) {
      out.reserve(a.size());
      switch (t.bits) {
        case 8: t.code == static_cast<std::uint8_t>(C::Int) ? for_each_element<std::int8_t>(a, [&](auto x) { out.push_back(x); })
                                                            : for_each_element<std::uint8_t>(a, [&](auto x) { out.push_back(x); }); return out;
        case 16: t.code == static_cast<std::uint8_t>(C::Int) ? for_each_element<std::int16_t>(a, [&](auto x) { out.push_back(x); })
                                                             : for_each_element<std::uint16_t>(a, [&](auto x) { out.push_back(x); }); return out;
        case 32: t.code == static_cast<std::uint8_t>(C::Int) ? for_each_element<std::int32_t>(a, [&](auto x) { out.push_back(x); })
                                                             : for_each_element<std::uint32_t>(a, [&](auto x) { out.push_back(x); }); return out;
        case 64:
          if (t.code == static_cast<std::uint8_t>(C::Int)) {
            for_each_element<std::int64_t>(a, [&](std::int64_t x) { out.push_back(x); });
          } else {
            for_each_element<std::uint64_t>(a, [&](std::uint64_t x) {
              if (x > static_cast<std::uint64_t>(INT64_MAX)) throw InputError(source, field, "integer out of range: " + std::to_string(x));
              out.push_back(static_cast<Index>(x));
            });
          }
          return out;
        default: break;
      }
    }
    if (a.ndim() != 1) throw InputError(source, field, "must be an array of integers");
    // A 1-D array of another dtype: judge its entries one by one (floats are rejected by value, as in JSON).
  }
  if (!is_sequence(v)) throw InputError(source, field, "must be an array of integers");
  nb::object seq = nb::borrow(v);
  const Py_ssize_t n = PySequence_Size(seq.ptr());
  if (n < 0) throw nb::python_error();
  out.reserve(static_cast<std::size_t>(n));
  for (Py_ssize_t i = 0; i < n; ++i) {
    nb::object e = nb::steal(PySequence_GetItem(seq.ptr(), i));
    if (!e.is_valid()) throw nb::python_error();
    out.push_back(read_position(e, source, field));
  }
  return out;
}

// A flat sequence is one selection ("kept"); a sequence of sequences (or a 2-D array) is one per head
// ("kept_per_head"), as the CLI reads {"kept_per_head": [[...], ...]}.
std::vector<Positions> read_groups(nb::handle v, const std::string& source, const std::string& flat_field,
                                   const std::string& nested_field, bool* nested_out) {
  std::vector<Positions> out;
  bool nested = false;
  if (nb::isinstance<Array>(v)) {
    nested = nb::cast<Array>(v).ndim() == 2;
  } else if (is_sequence(v) && PySequence_Size(v.ptr()) > 0) {
    nb::object first = nb::steal(PySequence_GetItem(v.ptr(), 0));
    if (!first.is_valid()) throw nb::python_error();
    nested = is_sequence(first);
  }
  if (nested_out) *nested_out = nested;
  if (!nested) {
    out.push_back(read_positions(v, source, flat_field));
    return out;
  }
  nb::object seq = nb::borrow(v);
  if (nb::isinstance<Array>(v)) seq = nb::module_::import_("numpy").attr("asarray")(v);
  const Py_ssize_t n = PySequence_Size(seq.ptr());
  if (n <= 0) throw InputError(source, nested_field, "must be a non-empty array of arrays");
  for (Py_ssize_t i = 0; i < n; ++i) {
    nb::object e = nb::steal(PySequence_GetItem(seq.ptr(), i));
    if (!e.is_valid()) throw nb::python_error();
    out.push_back(read_positions(e, source, nested_field));
  }
  return out;
}

// ---- Arrays out --------------------------------------------------------------------------------------------

nb::object positions_array(std::vector<std::int64_t> v) {
  auto* owned = new std::vector<std::int64_t>(std::move(v));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<std::int64_t>*>(p); });
  std::size_t shape[1] = {owned->size()};
  return nb::cast(nb::ndarray<nb::numpy, std::int64_t, nb::ndim<1>>(owned->data(), 1, shape, owner), nb::rv_policy::reference);
}

// One selection -> 1-D int64; one per head (all the same length) -> (heads, k) int64, else a list of 1-D arrays.
nb::object selection_array(const Selection& s) {
  if (!s.per_head()) return positions_array(s.kept[0]);
  bool equal = true;
  for (const Positions& h : s.kept) equal = equal && h.size() == s.kept[0].size();
  if (!equal) {
    nb::list l;
    for (const Positions& h : s.kept) l.append(positions_array(h));
    return l;
  }
  auto* owned = new std::vector<std::int64_t>();
  for (const Positions& h : s.kept) owned->insert(owned->end(), h.begin(), h.end());
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<std::int64_t>*>(p); });
  std::size_t shape[2] = {s.kept.size(), s.kept[0].size()};
  return nb::cast(nb::ndarray<nb::numpy, std::int64_t, nb::ndim<2>>(owned->data(), 2, shape, owner), nb::rv_policy::reference);
}

nb::object json_object(const json& j) { return nb::module_::import_("json").attr("loads")(j.dump()); }

// ---- Selector parameters ---------------------------------------------------------------------------------

SelectorParams selector_params(const std::string& method, const std::string& ratio, std::optional<long long> chunk_length,
                               long long rescue_size, std::optional<double> entropy_threshold, const std::string& flavour,
                               const std::string& median) {
  // CLI11 rejects these before any callback runs (a usage error); here they get the InputError form.
  conform::parse_method(method, "method");
  if (flavour != "kvpress" && flavour != "exact")
    throw InputError("flavour", "flavour", "expected kvpress or exact, got '" + flavour + "'");
  if (median != "lower" && median != "mean") throw InputError("median", "median", "expected lower or mean, got '" + median + "'");
  cli::SelectArgs a;
  a.method = method;
  a.ratio = ratio;
  a.chunk_length = chunk_length;
  a.rescue_size = rescue_size;
  a.entropy_threshold = entropy_threshold;
  a.flavour = flavour;
  a.median = median;
  return cli::to_params(a);
}

// ---- Verdicts ----------------------------------------------------------------------------------------------

// A chunk-selection check: the inputs are kept (float32, as judged) so the canonical answer, the replay line and
// the CLI's JSON can be produced on demand; a check itself pays only for the copy it already made.
struct ChunkCase {
  cli::ScoreFile file;
  SelectorParams params;
  Selection claimed;
  std::optional<Selection> canonical;  // oracle::select, when check() already computed it
};

struct PageCase {
  ScoreTensor attn;
  paging::PageParams params;
  Precision precision;
  double rel_tolerance = 0.0;
  Index budget = 0;
};

struct PyVerdict {
  Verdict verdict;
  std::shared_ptr<const ChunkCase> chunk;
  std::shared_ptr<const PageCase> page;

  std::string status() const { return to_string(verdict.kind); }
  bool passed() const { return verdict.passed(); }

  nb::object admissible_answer() const {
    if (chunk) return selection_array(chunk->canonical ? *chunk->canonical : oracle::select(chunk->file.view(), chunk->params));
    if (page) {
      nb::list l;
      for (const auto& g : audit::canonical_page_selection(page->attn, page->params)) l.append(positions_array(g));
      return l;
    }
    return nb::none();
  }

  nb::object replay() const {
    if (!chunk) return nb::none();
    conform::ConformCase c;
    c.heads = chunk->file.heads;
    c.tokens = chunk->file.tokens;
    c.values = chunk->file.values;
    c.params = chunk->params;
    c.origin = "scores";
    return nb::cast(conform::encode_request(0, c));
  }

  // The CLI's `kvaudit check` JSON for a chunk check; a JSON object of the same spirit for a page check.
  nb::object details() const {
    if (chunk) {
      json out = cli::describe_params(chunk->params, chunk->file);
      out["admissible"] = verdict.passed();
      out["verdict"] = to_string(verdict.kind);
      out["rule"] = verdict.rule;
      out["message"] = verdict.message;
      const Index declared = cli::declared_token_budget(chunk->params, chunk->file.tokens);
      if (declared >= 0) out["budget"] = declared;
      return json_object(out);
    }
    if (page) {
      json out = {{"tokens", page->attn.tokens}, {"q_heads", page->attn.heads}, {"group_size", page->params.group_size},
                  {"page_size", page->params.page_size}, {"compression_ratio", page->params.ratio.text},
                  {"budget", page->budget}, {"rel_tolerance", page->rel_tolerance},
                  {"precision", page->precision.describe()}, {"admissible", verdict.passed()},
                  {"verdict", to_string(verdict.kind)}, {"rule", verdict.rule}, {"message", verdict.message}};
      return json_object(out);
    }
    return json_object({{"verdict", to_string(verdict.kind)}, {"rule", verdict.rule}, {"message", verdict.message}});
  }
};

// ---- The functions -------------------------------------------------------------------------------------------

nb::object select_fn(const std::string& method, const Array& scores, const std::string& ratio, std::optional<long long> chunk_length,
                     long long rescue_size, std::optional<double> entropy_threshold, const std::string& flavour,
                     const std::string& median, bool full) {
  const SelectorParams p = selector_params(method, ratio, chunk_length, rescue_size, entropy_threshold, flavour, median);
  const cli::ScoreFile f = score_file(scores, "scores");
  warn_if_rounded(f.precision, "scores");
  thread_local select::Workspace ws;
  const Selection sel = select::select_layer(f.view(), p, ws);
  if (!full) return selection_array(sel);
  return json_object(cli::describe_selection(p, f, sel));
}

PyVerdict check_fn(const std::string& method, const Array& scores, nb::handle kept, const std::string& ratio,
                   std::optional<long long> chunk_length, long long rescue_size, std::optional<double> entropy_threshold,
                   const std::string& flavour, const std::string& median, std::optional<bool> canonical_first) {
  const SelectorParams p = selector_params(method, ratio, chunk_length, rescue_size, entropy_threshold, flavour, median);
  auto c = std::make_shared<ChunkCase>();
  c->file = score_file(scores, "scores");
  warn_if_rounded(c->file.precision, "scores");
  c->params = p;
  c->claimed.kept = read_groups(kept, "kept", "kept", "kept_per_head", nullptr);
  PyVerdict v;
  // The oracle's canonical selection (ties toward the lower index) is a spec output by definition, so a claim
  // equal to it conforms without the admissibility procedure, whose 50-digit statistics cost milliseconds per
  // call. Every other claim gets check_admissible, as in the CLI. Default: on for the kvpress flavour, whose
  // canonical selection is computed in float32 (microseconds); off for the exact flavour, whose canonical
  // selection costs as much as the check. python/tests assert check_admissible(canonical) conforms.
  const bool fast = canonical_first.value_or(p.flavour == Flavour::Kvpress);
  {
    nb::gil_scoped_release unlocked;  // C++ data only from here: other Python threads may run
    if (fast) {
      c->canonical = oracle::select(c->file.view(), c->params);
      if (c->canonical->kept == c->claimed.kept) v.verdict = Verdict::conforms();
    }
    if (!fast || !(c->canonical->kept == c->claimed.kept)) v.verdict = oracle::check_admissible(c->file.view(), c->params, c->claimed);
  }
  v.chunk = std::move(c);
  return v;
}

// budget_command.cpp.
std::string budget_fn(long long tokens, const std::string& ratio, long long chunk_length) {
  if (tokens < 1 || tokens > (1LL << 40)) throw InputError("--tokens", "tokens", "must be in [1, 2^40]");
  if (chunk_length < 1) throw InputError("--chunk-length", "chunk_length", "must be >= 1");
  CompressionRatio rho = parse_compression_ratio(ratio);
  auto ck = audit::chunkkv_token_counts(tokens, rho.value, chunk_length);
  Index eg = oracle::kvpress_token_budget(tokens, rho.value);
  json chunkkv = {{"kept_chunks", ck.kept_chunks}, {"kept_tokens_without_partial_chunk", ck.without_partial},
                  {"per_head_fallback", ck.per_head_fallback}};
  if (ck.with_partial >= 0) chunkkv["kept_tokens_with_partial_chunk"] = ck.with_partial;
  bool matched = ck.without_partial == eg || ck.with_partial == eg;
  return json{{"tokens", tokens},
              {"compression_ratio", rho.text},
              {"chunk_length", chunk_length},
              {"exact_budget", oracle::exact_token_budget(tokens, rho.text)},
              {"kvpress_float_budget", eg},
              {"eg_chunkkv_kept_tokens", eg},
              {"chunkkv", chunkkv},
              {"budget_matched", matched}}
      .dump();
}

// partition_command.cpp's run(); the probabilities reach the solvers as stored (float64 unrounded).
std::string partition_fn(const Array& probs, double budget, std::optional<long long> groups, const std::string& solver,
                         double time_limit) {
  if (solver != "exact" && solver != "enumerate" && solver != "greedy")
    throw InputError("--solver", "solver", "expected exact, enumerate or greedy, got '" + solver + "'");
  const Imported arr = import_array(probs, "probs");
  cli::check_partition_input(arr.shape, arr.values, "probs", budget, groups);
  const std::optional<Index> m = groups ? std::optional<Index>(*groups) : std::nullopt;
  json out;
  if (solver == "greedy") {
    out = cli::describe_greedy_partition(arr.values, budget, m);
  } else {
    oracle::PartitionAnswer a;
    {
      nb::gil_scoped_release unlocked;
      a = cli::solve_partition(arr.values, budget, m, solver,
                               cli::partition_limits(cli::kDefaultPartitionNodeLimit, time_limit));
    }
    out = cli::describe_partition_answer(a);
  }
  cli::describe_partition_input(out, arr.values.size(), arr.dtype, budget, m.has_value());
  return out.dump();
}

struct PageKnobs {
  long long group_size = 0, page_size = 16, sinks = 4;
  std::string ratio, pooling = "entropy", page_score = "sum", source = "sink-isolated", sink_pages = "reserved",
                     greedy = "skip-misfits";
};

// page_select_command.cpp's parameter parsing, in its order.
paging::PageParams page_params(const PageKnobs& a) {
  auto pick = [](const std::string& v, const std::string& flag, const std::string& x, const std::string& y) {
    if (v != x && v != y) throw InputError(flag, flag.substr(2), "expected " + x + " or " + y + ", got '" + v + "'");
    return v == x;
  };
  paging::PageParams p;
  if (a.group_size < 1) throw InputError("--group-size", "group_size", "must be >= 1");
  if (a.page_size < 1) throw InputError("--page-size", "page_size", "must be >= 1");
  if (a.sinks < 0) throw InputError("--sinks", "sinks", "must be >= 0");
  p.group_size = a.group_size;
  p.page_size = a.page_size;
  p.n_sink = a.sinks;
  p.ratio = parse_compression_ratio(a.ratio);
  p.pooling = pick(a.pooling, "--pooling", "entropy", "mean") ? paging::Pooling::Entropy : paging::Pooling::Mean;
  p.page_score = pick(a.page_score, "--page-score", "sum", "max") ? paging::PageScore::Sum : paging::PageScore::Max;
  p.source = pick(a.source, "--source", "sink-isolated", "raw") ? paging::PoolSource::SinkIsolated : paging::PoolSource::Raw;
  p.sink_pages = pick(a.sink_pages, "--sink-pages", "reserved", "scored") ? paging::SinkPages::Reserved : paging::SinkPages::Scored;
  p.greedy = pick(a.greedy, "--greedy", "skip-misfits", "stop-at-first-misfit") ? paging::GreedyRule::SkipMisfits
                                                                                : paging::GreedyRule::StopAtFirstMisfit;
  return p;
}

void require_divisible(const ScoreTensor& attn, Index group_size) {
  if (attn.heads % group_size != 0)
    throw InputError("--group-size", "group_size", "q_heads " + std::to_string(attn.heads) + " is not divisible by " + std::to_string(group_size));
}

// page_select_command.cpp: full -> its JSON text; else the kept pages per KV group.
nb::object page_select_fn(const Array& attention, const PageKnobs& k, bool full) {
  const paging::PageParams p = page_params(k);
  Precision precision;
  const ScoreTensor attn = attention_tensor(attention, "attention", precision);
  warn_if_rounded(precision, "attention");
  require_divisible(attn, p.group_size);
  const paging::PageSelection s = paging::select_pages(attn, p);
  if (!full) {
    nb::list l;
    for (Index g = 0; g < s.groups; ++g) l.append(positions_array(s.kept_pages(0, g)));
    return l;
  }
  const audit::SelectorComparison c = audit::compare_selector_with_oracle(attn, p);
  return nb::cast(cli::describe_page_selection(s, p, k.pooling, k.page_score, c, precision).dump());
}

PyVerdict check_pages_fn(const Array& attention, nb::handle kept_pages, const PageKnobs& k, nb::handle rel_tolerance) {
  auto c = std::make_shared<PageCase>();
  c->params = page_params(k);
  c->attn = attention_tensor(attention, "attention", c->precision);
  warn_if_rounded(c->precision, "attention");
  require_divisible(c->attn, c->params.group_size);
  bool nested = false;
  std::vector<Positions> claimed = read_groups(kept_pages, "kept_pages", "kept_pages", "kept_pages", &nested);
  const Index T = c->attn.tokens, G = c->params.group_size, P = c->params.page_size;
  if (rel_tolerance.is_none() || (PyUnicode_Check(rel_tolerance.ptr()) && nb::cast<std::string>(rel_tolerance) == "float64")) {
    c->rel_tolerance = paging::page_score_rel_tolerance(T, G, P);
  } else if (PyUnicode_Check(rel_tolerance.ptr())) {
    const std::string r = nb::cast<std::string>(rel_tolerance);
    if (r == "float32") c->rel_tolerance = audit::page_score_rel_tolerance_float32(T, G, P);
    else if (r == "exact") c->rel_tolerance = 0.0;
    else throw InputError("rel_tolerance", "rel_tolerance", "expected float64, float32, exact or a number in [0, 1), got '" + r + "'");
  } else {
    const double r = nb::cast<double>(rel_tolerance);
    if (!(r >= 0 && r < 1)) throw InputError("rel_tolerance", "rel_tolerance", "must be a number in [0, 1), got " + std::to_string(r));
    c->rel_tolerance = r;
  }
  c->budget = oracle::paging::page_token_budget(T, c->params.ratio.text);
  PyVerdict v;
  v.verdict = audit::check_claimed_pages(c->attn, c->params, claimed, c->rel_tolerance);
  v.page = std::move(c);
  return v;
}

// union_overhead_command.cpp.
json describe_union(const oracle::paging::UnionOverhead& u, const Verdict& v) {
  namespace op = oracle::paging;
  json j = {{"k", u.k}, {"union", u.union_size}, {"ratio", u.ratio.str()}, {"ratio_value", u.ratio.convert_to<double>()},
            {"sum_sizes", u.s1}, {"sum_pairwise", u.s2}, {"sum_triple", u.s3},
            {"bonferroni_lower", u.bonferroni_lower}, {"bonferroni_upper", u.bonferroni_upper},
            {"verdict", to_string(v.kind)}, {"rule", v.rule}};
  if (u.g == 2) j["two_head_identity"] = (op::Ratio(2) - op::Ratio(u.min_pairwise_intersection, u.k)).str();
  return j;
}

std::string union_overhead_fn(const Array& attention, long long group_size, const std::string& ratio, long long page_size,
                              const std::string& page_score) {
  namespace op = oracle::paging;
  if (group_size < 1) throw InputError("--group-size", "group_size", "must be >= 1");
  if (page_size < 1) throw InputError("--page-size", "page_size", "must be >= 1");
  if (page_score != "sum" && page_score != "max") throw InputError("--page-score", "page_score", "expected sum or max");
  const CompressionRatio rho = parse_compression_ratio(ratio);
  Precision precision;
  const ScoreTensor attn = attention_tensor(attention, "attention", precision);
  warn_if_rounded(precision, "attention");
  require_divisible(attn, group_size);
  const Index k = op::page_token_budget(attn.tokens, rho.text);
  const auto kind = page_score == "sum" ? op::PageScore::Sum : op::PageScore::Max;
  json groups = json::array();
  op::Ratio max_tok = 0, max_page = 0;
  for (Index g = 0; g < attn.heads / group_size; ++g) {
    std::vector<std::span<const float>> rows;
    for (Index h = g * group_size; h < (g + 1) * group_size; ++h) rows.push_back(attn.row(0, h));
    const op::UnionOverhead tu = op::token_union_overhead(rows, k);
    const op::UnionOverhead pu = op::page_union_overhead(rows, k, page_size, kind);
    const Verdict vt = op::check_union_identities(tu), vp = op::check_union_identities(pu);
    max_tok = std::max(max_tok, tu.ratio);
    max_page = std::max(max_page, pu.ratio);
    groups.push_back({{"group", g}, {"token", describe_union(tu, vt)}, {"page", describe_union(pu, vp)}});
  }
  json out = {{"tokens", attn.tokens},
              {"group_size", group_size},
              {"compression_ratio", rho.text},
              {"k", k},
              {"page_size", page_size},
              {"page_k", op::page_level_k(k, page_size)},
              {"groups", groups},
              {"max_token_ratio", max_tok.str()},
              {"max_page_ratio", max_page.str()},
              {"pooled_ratio", "1"}};
  add_precision(out, precision);
  return out.dump();
}

// A DLPack capsule viewing uint16 bfloat16 bit patterns as bfloat16 (kvaudit.testing.bfloat16: numpy has no
// bfloat16 and torch is not a dependency). The capsule keeps `bits` alive.
nb::object bfloat16_capsule(nb::handle bits_obj) {
  const auto bits = nb::cast<nb::ndarray<nb::ro, std::uint16_t, nb::c_contig, nb::device::cpu>>(bits_obj);
  std::vector<std::size_t> shape(bits.ndim());
  for (std::size_t d = 0; d < bits.ndim(); ++d) shape[d] = bits.shape(d);
  nb::dlpack::dtype bf16{static_cast<std::uint8_t>(nb::dlpack::dtype_code::Bfloat), 16, 1};
  nb::ndarray<> view(const_cast<std::uint16_t*>(bits.data()), shape.size(), shape.data(), bits_obj, nullptr, bf16,
                     nb::device::cpu::value);
  return nb::cast(view, nb::rv_policy::reference);
}

}  // namespace
}  // namespace kvaudit::python

NB_MODULE(_kvaudit, m) {
  using namespace kvaudit::python;
  m.doc() = "kvaudit's C++ oracles, selectors and checkers (use the `kvaudit` package, not this module).";

  g_rounding_warning = PyErr_NewExceptionWithDoc(
      "kvaudit.Float32RoundingWarning",
      "Input values were rounded to float32 because the computation is defined in float32 (the CLI reports the "
      "same count as precision.inputs_rounded_to_float32).",
      PyExc_UserWarning, nullptr);
  m.attr("Float32RoundingWarning") = nb::handle(g_rounding_warning);

  // Bad input: the CLI prints "kvaudit: " + what() and exits 2; here it is ValueError(what()).
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const kvaudit::InputError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });

  nb::class_<PyVerdict>(m, "Verdict", "What a check concluded. bool(v) is True only when v.status == 'conforms'.")
      .def_prop_ro("status", &PyVerdict::status, "'conforms', 'violates', 'inconclusive', 'not-run' or 'unsupported'")
      .def_prop_ro("rule", [](const PyVerdict& v) { return v.verdict.rule; }, "the rule id broken ('' unless violates)")
      .def_prop_ro("message", [](const PyVerdict& v) { return v.verdict.message; })
      .def_prop_ro("admissible_answer", &PyVerdict::admissible_answer,
                   "the oracle's canonical selection (ties toward the lower index) on the same input")
      .def_prop_ro("replay", &PyVerdict::replay,
                   "the request line `kvaudit conform --replay` accepts (chunk checks; None for page checks)")
      .def_prop_ro("details", &PyVerdict::details, "the CLI's JSON object for the same check (`kvaudit check`)")
      .def("__bool__", &PyVerdict::passed)
      .def("__repr__", [](const PyVerdict& v) {
        std::string s = "Verdict(status='" + v.status() + "'";
        if (!v.verdict.rule.empty()) s += ", rule='" + v.verdict.rule + "'";
        if (!v.verdict.message.empty()) s += ", message=" + nb::cast<std::string>(nb::repr(nb::str(v.verdict.message.c_str())));
        return s + ")";
      });

  m.def("select", &select_fn, "method"_a, "scores"_a, "compression_ratio"_a, "chunk_length"_a.none(), "rescue_size"_a,
        "entropy_threshold"_a.none(), "flavour"_a, "median"_a, "full"_a);
  m.def("check", &check_fn, "method"_a, "scores"_a, "kept"_a, "compression_ratio"_a, "chunk_length"_a.none(), "rescue_size"_a,
        "entropy_threshold"_a.none(), "flavour"_a, "median"_a, "canonical_first"_a.none());
  m.def("budget_json", &budget_fn, "tokens"_a, "compression_ratio"_a, "chunk_length"_a);
  m.def("partition_json", &partition_fn, "probs"_a, "entropy_budget"_a, "groups"_a.none(), "solver"_a, "time_limit"_a);
  m.def(
      "page_select",
      [](const Array& attention, long long group_size, long long page_size, const std::string& ratio, long long sinks,
         const std::string& pooling, const std::string& page_score, const std::string& source, const std::string& sink_pages,
         const std::string& greedy, bool full) {
        return page_select_fn(attention, {group_size, page_size, sinks, ratio, pooling, page_score, source, sink_pages, greedy}, full);
      },
      "attention"_a, "group_size"_a, "page_size"_a, "compression_ratio"_a, "sinks"_a, "pooling"_a, "page_score"_a, "source"_a,
      "sink_pages"_a, "greedy"_a, "full"_a);
  m.def(
      "check_pages",
      [](const Array& attention, nb::handle kept_pages, long long group_size, long long page_size, const std::string& ratio,
         long long sinks, const std::string& pooling, const std::string& page_score, const std::string& source,
         const std::string& sink_pages, const std::string& greedy, nb::handle rel_tolerance) {
        return check_pages_fn(attention, kept_pages, {group_size, page_size, sinks, ratio, pooling, page_score, source, sink_pages, greedy},
                              rel_tolerance);
      },
      "attention"_a, "kept_pages"_a, "group_size"_a, "page_size"_a, "compression_ratio"_a, "sinks"_a, "pooling"_a,
      "page_score"_a, "source"_a, "sink_pages"_a, "greedy"_a, "rel_tolerance"_a.none());
  m.def("union_overhead_json", &union_overhead_fn, "attention"_a, "group_size"_a, "compression_ratio"_a, "page_size"_a, "page_score"_a);
  m.def("bfloat16_capsule", &bfloat16_capsule, "bits"_a);
}
