// nanobind bindings of `kvaudit._kvaudit`: a translator around api/, the same question -> answer functions the
// CLI calls (cli/*_command.cpp), on in-memory arrays instead of NPY files. The JSON-producing ones return the
// CLI's JSON text byte for byte (python/tests compare them). Nothing here selects, checks or solves, and nothing
// here comes from cli/.
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

#include "api/chunk_answers.h"
#include "api/input_checks.h"
#include "api/page_answers.h"
#include "api/partition_answers.h"
#include "audit/conform/protocol.h"
#include "core/error.h"
#include "core/io/half.h"
#include "core/io/npy.h"
#include "core/paging/page_options.h"
#include "core/paging/page_score_bound.h"
#include "core/select/chunk_select.h"
#include "core/types.h"
#include "core/verdict.h"
#include "oracle/chunk_selection.h"

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

using Precision = api::Float32Input;

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

// The CLI's read_score_file after read_npy.
api::ScoreFile score_file(const Array& a, const std::string& path) {
  std::vector<float> direct;
  Imported arr = import_array(a, path, &direct);
  if (arr.dtype != "bfloat16" && (arr.dtype.size() < 2 || arr.dtype[1] != 'f'))
    throw InputError(path, "dtype", "expected float16, float32 or float64 scores, got '" + arr.dtype + "'");
  api::ScoreFile f = api::score_file_shape(arr.shape, path);
  if (arr.values.empty() && !direct.empty()) {  // float16 / bfloat16 / float32: nothing to narrow
    io::require_finite(std::span<const float>(direct), path, "values");
    f.values = std::move(direct);
    f.precision = {arr.dtype, 0};
    return f;
  }
  f.values = api::narrow_for_float32(arr, path, f.precision);
  return f;
}

// The CLI's load_attention after read_npy (NPY branch), then the validation of each row as a distribution.
ScoreTensor attention_tensor(const Array& a, const std::string& source, Precision& precision) {
  Imported arr = import_array(a, source);
  if (arr.shape.size() != 2 || arr.values.empty()) throw InputError(source, "shape", "expected a floating (q_heads, T) array");
  ScoreTensor out{1, arr.shape[0], arr.shape[1], api::narrow_for_float32(arr, source, precision)};
  api::require_distribution_rows(out, source);
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
  return api::selector_params({method, ratio, chunk_length, rescue_size, entropy_threshold, flavour, median});
}

// ---- Verdicts ----------------------------------------------------------------------------------------------

// A check's inputs are kept (float32, as judged), so the canonical answer and the replay line can be produced
// on demand; the answer body is the CLI's JSON for the same check.
struct ChunkCase {
  api::ScoreFile file;
  SelectorParams params;
  std::optional<Selection> canonical;  // oracle::select, when check() already computed it
};

struct PyVerdict {
  Verdict verdict;
  api::Answer answer;
  std::shared_ptr<const ChunkCase> chunk;

  std::string status() const { return to_string(verdict.kind); }
  bool passed() const { return verdict.passed(); }

  nb::object admissible_answer() const {
    if (chunk) return selection_array(chunk->canonical ? *chunk->canonical : oracle::select(chunk->file.view(), chunk->params));
    nb::list l;
    for (const auto& g : answer.body.at("admissible_answer")) l.append(positions_array(g.get<std::vector<std::int64_t>>()));
    return l;
  }

  nb::object replay() const {
    if (!chunk) return nb::cast(answer.body.at("replay").get<std::string>());
    conform::ConformCase c;
    c.heads = chunk->file.heads;
    c.tokens = chunk->file.tokens;
    c.values = chunk->file.values;
    c.params = chunk->params;
    c.origin = "scores";
    return nb::cast(conform::encode_request(0, c));
  }

  // The CLI's JSON for the same check (`kvaudit check` / `kvaudit check-pages`).
  nb::object details() const { return json_object(answer.body); }
};

// ---- The functions -------------------------------------------------------------------------------------------

nb::object select_fn(const std::string& method, const Array& scores, const std::string& ratio, std::optional<long long> chunk_length,
                     long long rescue_size, std::optional<double> entropy_threshold, const std::string& flavour,
                     const std::string& median, bool full) {
  const SelectorParams p = selector_params(method, ratio, chunk_length, rescue_size, entropy_threshold, flavour, median);
  const api::ScoreFile f = score_file(scores, "scores");
  warn_if_rounded(f.precision, "scores");
  thread_local select::Workspace ws;
  const Selection sel = select::select_layer(f.view(), p, ws);
  if (!full) return selection_array(sel);
  return json_object(api::select_answer(p, f, sel));
}

PyVerdict check_fn(const std::string& method, const Array& scores, nb::handle kept, const std::string& ratio,
                   std::optional<long long> chunk_length, long long rescue_size, std::optional<double> entropy_threshold,
                   const std::string& flavour, const std::string& median, std::optional<bool> canonical_first) {
  const SelectorParams p = selector_params(method, ratio, chunk_length, rescue_size, entropy_threshold, flavour, median);
  auto c = std::make_shared<ChunkCase>();
  c->file = score_file(scores, "scores");
  warn_if_rounded(c->file.precision, "scores");
  c->params = p;
  Selection claimed;
  claimed.kept = read_groups(kept, "kept", "kept", "kept_per_head", nullptr);
  PyVerdict v;
  {
    nb::gil_scoped_release unlocked;  // C++ data only from here: other Python threads may run
    v.answer = api::check_answer(c->params, c->file, claimed, canonical_first, &c->canonical);
  }
  v.verdict = {v.answer.verdict, v.answer.body.at("rule").get<std::string>(), v.answer.body.at("message").get<std::string>()};
  v.chunk = std::move(c);
  return v;
}

std::string budget_fn(long long tokens, const std::string& ratio, long long chunk_length) {
  return api::budget_answer(tokens, ratio, chunk_length).dump();
}

// The probabilities reach the solvers as stored (float64 unrounded).
std::string partition_fn(const Array& probs, double budget, std::optional<long long> groups, const std::string& solver,
                         double time_limit) {
  const Imported arr = import_array(probs, "probs");
  nb::gil_scoped_release unlocked;
  return api::partition_answer(arr.shape, arr.values, arr.dtype, "probs", budget, groups, solver,
                               api::partition_limits(api::kDefaultPartitionNodeLimit, time_limit))
      .dump();
}

// page_select_command.cpp: full -> its JSON text; else the kept pages per KV group.
nb::object page_select_fn(const Array& attention, const paging::PageOptions& k, bool full) {
  const PageParams p = paging::parse_page_options(k);
  Precision precision;
  const ScoreTensor attn = attention_tensor(attention, "attention", precision);
  warn_if_rounded(precision, "attention");
  api::require_whole_groups(attn, p.group_size);
  if (!full) {
    const paging::PageSelection s = paging::select_pages(attn, p);
    nb::list l;
    for (Index g = 0; g < s.groups; ++g) l.append(positions_array(s.kept_pages(0, g)));
    return l;
  }
  return nb::cast(api::page_select_answer(attn, p, precision).body.dump());
}

// check_pages_command.cpp: precision is "float32" (default), "float64", "exact" or a number.
PyVerdict check_pages_fn(const Array& attention, nb::handle kept_pages, const paging::PageOptions& k, nb::handle precision) {
  const PageParams p = paging::parse_page_options(k);
  const paging::PrecisionModel model =
      precision.is_none() ? paging::PrecisionModel{}
      : PyUnicode_Check(precision.ptr()) ? paging::parse_precision(nb::cast<std::string>(precision), "precision")
                                         : paging::parse_precision(nb::cast<std::string>(nb::str(precision)), "precision");
  Precision input;
  const ScoreTensor attn = attention_tensor(attention, "attention", input);
  warn_if_rounded(input, "attention");
  api::require_whole_groups(attn, p.group_size);
  bool nested = false;
  audit::PageClaim claim{read_groups(kept_pages, "kept_pages", "kept_pages", "kept_pages", &nested), std::nullopt};
  PyVerdict v;
  {
    nb::gil_scoped_release unlocked;
    v.answer = api::check_pages_answer(attn, p, claim, model, input);
  }
  v.verdict = {v.answer.verdict, v.answer.body.at("rule").get<std::string>(), v.answer.body.at("message").get<std::string>()};
  return v;
}

std::string union_overhead_fn(const Array& attention, long long group_size, const std::string& ratio, long long page_size,
                              const std::string& page_score) {
  if (group_size < 1) throw InputError("--group-size", "group_size", "must be >= 1, got " + std::to_string(group_size));
  Precision precision;
  const ScoreTensor attn = attention_tensor(attention, "attention", precision);
  warn_if_rounded(precision, "attention");
  return api::union_overhead_answer(attn, {group_size, page_size, ratio, page_score}, precision).body.dump();
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
                   "the request line `kvaudit conform --replay` accepts")
      .def_prop_ro("details", &PyVerdict::details, "the CLI's JSON object for the same check (`kvaudit check` / `kvaudit check-pages`)")
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
         const std::string& greedy, const std::string& preset, const std::string& temperature, const std::string& entropy_on,
         const std::string& budget_unit, const std::string& page_count_rule, bool full) {
        return page_select_fn(attention, {group_size, page_size, sinks, ratio, pooling, page_score, source, sink_pages, greedy, preset,
                                          temperature, entropy_on, budget_unit, page_count_rule},
                              full);
      },
      "attention"_a, "group_size"_a, "page_size"_a, "compression_ratio"_a, "sinks"_a, "pooling"_a, "page_score"_a, "source"_a,
      "sink_pages"_a, "greedy"_a, "preset"_a, "temperature"_a, "entropy_on"_a, "budget_unit"_a, "page_count_rule"_a, "full"_a);
  m.def(
      "check_pages",
      [](const Array& attention, nb::handle kept_pages, long long group_size, long long page_size, const std::string& ratio,
         long long sinks, const std::string& pooling, const std::string& page_score, const std::string& source,
         const std::string& sink_pages, const std::string& greedy, const std::string& preset, const std::string& temperature,
         const std::string& entropy_on, const std::string& budget_unit, const std::string& page_count_rule, nb::handle precision) {
        return check_pages_fn(attention, kept_pages,
                              {group_size, page_size, sinks, ratio, pooling, page_score, source, sink_pages, greedy, preset, temperature,
                               entropy_on, budget_unit, page_count_rule},
                              precision);
      },
      "attention"_a, "kept_pages"_a, "group_size"_a, "page_size"_a, "compression_ratio"_a, "sinks"_a, "pooling"_a,
      "page_score"_a, "source"_a, "sink_pages"_a, "greedy"_a, "preset"_a, "temperature"_a, "entropy_on"_a, "budget_unit"_a,
      "page_count_rule"_a, "precision"_a.none());
  m.def("union_overhead_json", &union_overhead_fn, "attention"_a, "group_size"_a, "compression_ratio"_a, "page_size"_a, "page_score"_a);
  m.def("bfloat16_capsule", &bfloat16_capsule, "bits"_a);
}
