// Every op's value and derivative, f32 and f64, in ulp against the mpmath reference table;
// with DUALCAST_ACCURACY_DOC=<path> set, also writes the table of maxima (docs/accuracy.md).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <dualcast/dual.hpp>

#include "data/accuracy/accuracy_bounds.h"

namespace {

using dualcast::Dual;
namespace m = dualcast::math;

using accuracy::kDerivUlp;
using accuracy::kValueUlp;

// The op under test, evaluated on Duals seeded in every argument: out = {value, d/dx, d/dy}.
template <class T>
bool evaluate(const std::string& op, const T* in, T* out) {
  using D1 = Dual<T, 1>;
  using D2 = Dual<T, 2>;
  auto unary = [&](auto f) {
    const D1 r = f(D1::variable(in[0], 0));
    out[0] = r.value();
    out[1] = r.partial(0);
    return true;
  };
  auto binary = [&](auto f) {
    const D2 r = f(D2::variable(in[0], 0), D2::variable(in[1], 1));
    out[0] = r.value();
    out[1] = r.partial(0);
    out[2] = r.partial(1);
    return true;
  };
#define DUALCAST_UNARY_OP(fn) \
  if (op == #fn) return unary([](auto x) { return m::fn(x); });
#define DUALCAST_BINARY_OP(fn) \
  if (op == #fn) return binary([](auto a, auto b) { return m::fn(a, b); });
  DUALCAST_UNARY_OP(exp)
  DUALCAST_UNARY_OP(exp2)
  DUALCAST_UNARY_OP(expm1)
  DUALCAST_UNARY_OP(log)
  DUALCAST_UNARY_OP(log1p)
  DUALCAST_UNARY_OP(log2)
  DUALCAST_UNARY_OP(log10)
  DUALCAST_UNARY_OP(sqrt)
  DUALCAST_UNARY_OP(cbrt)
  DUALCAST_UNARY_OP(rsqrt)
  DUALCAST_UNARY_OP(square)
  DUALCAST_UNARY_OP(sin)
  DUALCAST_UNARY_OP(cos)
  DUALCAST_UNARY_OP(tan)
  DUALCAST_UNARY_OP(asin)
  DUALCAST_UNARY_OP(acos)
  DUALCAST_UNARY_OP(atan)
  DUALCAST_UNARY_OP(sinh)
  DUALCAST_UNARY_OP(cosh)
  DUALCAST_UNARY_OP(tanh)
  DUALCAST_UNARY_OP(asinh)
  DUALCAST_UNARY_OP(acosh)
  DUALCAST_UNARY_OP(atanh)
  DUALCAST_UNARY_OP(erf)
  DUALCAST_UNARY_OP(erfc)
  DUALCAST_UNARY_OP(erfinv)
  DUALCAST_UNARY_OP(lgamma)
  DUALCAST_UNARY_OP(tgamma)
  DUALCAST_UNARY_OP(digamma)
  DUALCAST_UNARY_OP(sigmoid)
  DUALCAST_UNARY_OP(softplus)
  DUALCAST_BINARY_OP(pow)
  DUALCAST_BINARY_OP(atan2)
  DUALCAST_BINARY_OP(hypot)
  DUALCAST_BINARY_OP(logaddexp)
  DUALCAST_BINARY_OP(fmod)
#undef DUALCAST_UNARY_OP
#undef DUALCAST_BINARY_OP
  if (op == "div") return binary([](auto a, auto b) { return a / b; });
  return false;
}

struct Stat {
  long double max_ulp = 0;
  long double worst_at = 0;
  int checked = 0, points = 0;
};

// Checks one result against its reference; returns a description of a failure, or "".
template <class T>
std::string check_one(T got, long double ref, long double bound, Stat& st, long double x) {
  ++st.points;
  if (std::isnan(ref)) return std::isnan(got) ? "" : "expected NaN";
  if (std::isinf(ref)) return got == ref ? "" : "expected an infinity";
  if (ref == 0) return got == 0 ? "" : "expected exactly 0 (a limit)";
  if (std::fabs(ref) > std::numeric_limits<T>::max())
    return std::fabs(got) >= std::numeric_limits<T>::max() ? "" : "expected overflow";
  const long double e = accuracy::UlpError(got, ref);
  if (e < 0) return "";  // subnormal reference: outside the goal
  ++st.checked;
  if (e > st.max_ulp) {
    st.max_ulp = e;
    st.worst_at = x;
  }
  if (e > bound) {
    std::ostringstream os;
    os.precision(21);
    os << e << " ulp > " << bound;
    return os.str();
  }
  return "";
}

struct Key {
  std::string op, type;
  bool operator<(const Key& o) const { return op != o.op ? op < o.op : type < o.type; }
};
struct OpStats {
  Stat value, deriv;
};

long double parse(const std::string& s) { return std::strtold(s.c_str(), nullptr); }

template <class T>
void run_line(const std::string& op, const std::string& type, std::istringstream& in, OpStats& st) {
  std::vector<std::string> f;
  for (std::string w; in >> w;) f.push_back(w);
  const bool bin = f.size() == 5;
  REQUIRE((f.size() == 3 || bin));
  const int arity = bin ? 2 : 1;
  T x[2] = {static_cast<T>(parse(f[0])), bin ? static_cast<T>(parse(f[1])) : T(0)};
  T out[3] = {};
  REQUIRE_MESSAGE(evaluate(op, x, out), "unknown op " << op);
  const auto bound = [&](const char* kind, long double def) { return accuracy::Bound(op, type, kind, x[0], def); };
  std::ostringstream where;
  where.precision(21);
  where << op << "(" << x[0];
  if (bin) where << ", " << x[1];
  where << ") " << type;
  const std::string v = check_one(out[0], parse(f[arity]), bound("value", kValueUlp), st.value, x[0]);
  CHECK_MESSAGE(v.empty(), where.str() << " value " << out[0] << ": " << v);
  for (int k = 0; k < arity; ++k) {
    const std::string d = check_one(out[1 + k], parse(f[arity + 1 + k]), bound("deriv", kDerivUlp), st.deriv, x[0]);
    CHECK_MESSAGE(d.empty(), where.str() << " d/dx" << k << " " << out[1 + k] << ": " << d);
  }
}

std::string fmt_ulp(const Stat& s) {
  if (s.checked == 0) return "-";
  std::ostringstream os;
  os.precision(s.max_ulp < 10 ? 2 : 3);
  os << s.max_ulp;
  return os.str();
}

void write_doc(const std::string& path, const std::map<Key, OpStats>& stats) {
  std::map<std::string, std::map<std::string, OpStats>> by_op;
  for (const auto& [k, v] : stats) by_op[k.op][k.type] = v;
  std::ofstream out(path);
  out << "# Accuracy of dualcast::math on Dual (values and derivatives)\n\n"
         "Generated by `tests/dual/accuracy_test.cc` (do not edit): "
         "`DUALCAST_ACCURACY_DOC=docs/accuracy.md build/tests/dual_tests -tc='accuracy*'`.\n\n"
         "Maximum error in ulp of the type, over the points of `tests/data/accuracy/reference.txt` "
         "(mpmath, 60 digits; generator `tests/data/accuracy/generate.py`; inputs include the tails). "
         "A derivative column covers every partial (both arguments of a binary op). Points whose "
         "exact result is not a normal number of the type (subnormal, zero, beyond the range) are "
         "not in the maxima; there the test requires NaN for NaN, the exact infinity, exactly 0 for "
         "a zero limit, and an infinity or the largest finite number where the exact result "
         "overflows. Goal: values <= " << static_cast<double>(kValueUlp) << " ulp, derivatives <= "
      << static_cast<double>(kDerivUlp) << " ulp.\n\n"
         "| op | f32 value | f32 derivative | f64 value | f64 derivative | points (f32/f64) |\n"
         "| --- | ---: | ---: | ---: | ---: | ---: |\n";
  for (const auto& [op, t] : by_op) {
    const OpStats& f = t.count("f32") ? t.at("f32") : OpStats{};
    const OpStats& d = t.count("f64") ? t.at("f64") : OpStats{};
    out << "| " << op << " | " << fmt_ulp(f.value) << " | " << fmt_ulp(f.deriv) << " | " << fmt_ulp(d.value)
        << " | " << fmt_ulp(d.deriv) << " | " << f.value.points << "/" << d.value.points << " |\n";
  }
  if (!accuracy::Allowances().empty()) {
    out << "\nKnown exceptions to the goal (the bound the test enforces instead):\n\n";
    for (const auto& [k, a] : accuracy::Allowances())
      out << "- `" << k << "` <= " << static_cast<double>(a.ulp) << " ulp: " << a.why << "\n";
  }
}

TEST_CASE("accuracy: every op against the high-precision reference table") {
  std::ifstream in(DUALCAST_ACCURACY_DATA);
  REQUIRE_MESSAGE(in.good(), "cannot open " << DUALCAST_ACCURACY_DATA);
  std::map<Key, OpStats> stats;
  int lines = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    std::string op, type;
    ls >> op >> type;
    OpStats& st = stats[{op, type}];
    if (type == "f32")
      run_line<float>(op, type, ls, st);
    else
      run_line<double>(op, type, ls, st);
    ++lines;
  }
  CHECK(lines > 5000);
  if (const char* doc = std::getenv("DUALCAST_ACCURACY_DOC")) write_doc(doc, stats);
}

}  // namespace
