// Reductions of operands in any memory layout (transposed, sliced with a step, stride-0 broadcast views):
// every reduction kind over every axis set against a host reference, their gradients, and 1/2/8 threads bitwise.
//
// Execute loops over a reduction's dims in the memory order of its operands
// (jit::LoopOrder), not in their logical row-major order, so these layouts
// take other loop nests (dims swapped, merged differently, a reduced dim
// outermost) than the contiguous arrays of the other reduction tests. The
// reference walks the logical elements on the host from to_vector(), which
// reads through the strides without any generated kernel.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dualcast/array.hpp"
#include "dualcast/array_ops.hpp"
#include "dualcast/operators.hpp"
#include "dualcast/reductions.hpp"
#include "dualcast/tape.hpp"
#include "jit/codegen/broadcast_layout.h"
#include "jit/cpu/thread_pool.h"

namespace dualcast {
namespace {

enum class Kind { kSum, kMean, kMax, kMin, kProd, kLogsumexp, kVar, kNorm, kArgmax, kArgmin };
constexpr Kind kAxisKinds[] = {Kind::kSum,       Kind::kMean, Kind::kMax,  Kind::kMin,
                               Kind::kProd,      Kind::kLogsumexp, Kind::kVar, Kind::kNorm};

const char* KindName(Kind k) {
  static const char* const kNames[] = {"sum", "mean", "max", "min", "prod", "logsumexp", "var", "norm",
                                       "argmax", "argmin"};
  return kNames[static_cast<int>(k)];
}

template <class T>
Array<T> Apply(Kind k, const Array<T>& x, const std::vector<int>& axes) {
  switch (k) {
    case Kind::kSum: return sum(x, axes);
    case Kind::kMean: return mean(x, axes);
    case Kind::kMax: return max(x, axes);
    case Kind::kMin: return min(x, axes);
    case Kind::kProd: return prod(x, axes);
    case Kind::kLogsumexp: return logsumexp(x, axes);
    case Kind::kVar: return var(x, axes);
    case Kind::kNorm: return norm(x, axes);
    case Kind::kArgmax: return axes.empty() ? argmax(x) : argmax(x, axes[0]);
    case Kind::kArgmin: return axes.empty() ? argmin(x) : argmin(x, axes[0]);
  }
  return x;
}

// One reduced slice's value from its elements (row-major over the reduced dims).
double HostReduce(Kind k, const std::vector<double>& e) {
  const double n = static_cast<double>(e.size());
  double acc = 0;
  switch (k) {
    case Kind::kSum:
    case Kind::kMean:
      for (double v : e) acc += v;
      return k == Kind::kMean ? acc / n : acc;
    case Kind::kMax:
    case Kind::kMin: {
      acc = e[0];
      for (double v : e) acc = k == Kind::kMax ? std::max(acc, v) : std::min(acc, v);
      return acc;
    }
    case Kind::kProd:
      acc = 1;
      for (double v : e) acc *= v;
      return acc;
    case Kind::kLogsumexp: {
      const double m = HostReduce(Kind::kMax, e);
      for (double v : e) acc += std::exp(v - m);
      return m + std::log(acc);
    }
    case Kind::kVar: {
      const double mu = HostReduce(Kind::kMean, e);
      for (double v : e) acc += (v - mu) * (v - mu);
      return acc / n;
    }
    case Kind::kNorm:
      for (double v : e) acc += v * v;
      return std::sqrt(acc);
    case Kind::kArgmax:
    case Kind::kArgmin: {
      size_t best = 0;
      for (size_t i = 1; i < e.size(); ++i) {
        if (k == Kind::kArgmax ? e[i] > e[best] : e[i] < e[best]) best = i;
      }
      return static_cast<double>(best);
    }
  }
  return 0;
}

// The reduction of `values` (logical row-major elements of `shape`) over
// `reduced`, one value per kept element in row-major order.
std::vector<double> HostReduction(Kind k, const std::vector<double>& values, const Shape& shape,
                                  const std::vector<bool>& reduced) {
  const size_t rank = shape.size();
  Shape kept_shape(rank, 1);
  int64_t kept = 1;
  for (size_t d = 0; d < rank; ++d) {
    if (!reduced[d]) kept_shape[d] = shape[d];
    kept *= kept_shape[d];
  }
  std::vector<std::vector<double>> slices(static_cast<size_t>(kept));
  Shape idx(rank, 0);
  for (size_t flat = 0; flat < values.size(); ++flat) {
    int64_t out = 0;
    for (size_t d = 0; d < rank; ++d) out = out * kept_shape[d] + (reduced[d] ? 0 : idx[d]);
    slices[static_cast<size_t>(out)].push_back(values[flat]);  // in row-major order of the reduced dims
    for (size_t d = rank; d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  std::vector<double> result;
  for (const auto& s : slices) result.push_back(HostReduce(k, s));
  return result;
}

template <class T>
std::vector<double> Values(const Array<T>& a) {
  std::vector<T> v = a.to_vector();
  return std::vector<double>(v.begin(), v.end());
}

// An operand in some layout, with the buffer a view of user memory reads.
template <class T>
struct Operand {
  std::string name;
  Array<T> x;
  std::shared_ptr<std::vector<T>> buffer;  // kept alive for views of user memory
};

// Values in (0.9, 1.1), all distinct: products neither overflow nor
// underflow, and every extreme is unique (argmax has one answer).
template <class T>
Array<T> Base(const Shape& shape, int seed) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<T> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    v[static_cast<size_t>(i)] =
        static_cast<T>(1 + 0.1 * std::sin(0.37 * static_cast<double>(i) + seed) + 1e-4 * static_cast<double>(i % 7));
  }
  return Array<T>::from(v, shape);
}

template <class T>
Operand<T> UserView(const std::string& name, const Shape& buffer_shape, const Shape& shape, const Shape& strides,
                    int seed) {
  auto buffer = std::make_shared<std::vector<T>>(Base<T>(buffer_shape, seed).to_vector());
  return {name, Array<T>::view(buffer->data(), shape, strides), buffer};
}

// Rank-2 and rank-3 operands: contiguous (the control), every transpose,
// sliced with steps (also transposed), and stride-0 broadcast views.
template <class T>
std::vector<Operand<T>> Operands() {
  std::vector<Operand<T>> ops;
  const Array<T> b2 = Base<T>({7, 9}, 1);
  ops.push_back({"(7,9) contiguous", b2, nullptr});
  ops.push_back({"(7,9).T", b2.transpose(), nullptr});
  const Array<T> b3 = Base<T>({4, 5, 6}, 2);
  for (const std::vector<int>& perm :
       std::vector<std::vector<int>>{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}}) {
    ops.push_back({absl::StrCat("(4,5,6) transposed ", perm[0], perm[1], perm[2]), b3.transpose(perm), nullptr});
  }
  const Array<T> big = Base<T>({9, 5, 13}, 3);
  const Array<T> stepped = slice(big, {{1, 9, 2}, {}, {0, 13, 3}});  // (4, 5, 5)
  ops.push_back({"(9,5,13)[1::2, :, ::3]", stepped, nullptr});
  ops.push_back({"(9,5,13)[1::2, :, ::3] transposed 210", stepped.transpose({2, 1, 0}), nullptr});
  ops.push_back({"(8,11)[::2, 1::3].T", slice(Base<T>({8, 11}, 4), {{0, 8, 2}, {1, 11, 3}}).transpose(), nullptr});
  // Stride 0: a (5, 6) buffer repeated 4 times; a (4, 6) buffer repeated along
  // the middle dim; a (6, 4) buffer read transposed and repeated along the middle.
  ops.push_back(UserView<T>("(5,6) broadcast to (4,5,6)", {5, 6}, {4, 5, 6}, {0, 6, 1}, 5));
  ops.push_back(UserView<T>("(4,6) broadcast to (4,5,6)", {4, 6}, {4, 5, 6}, {6, 0, 1}, 6));
  ops.push_back(UserView<T>("(6,4).T broadcast to (4,5,6)", {6, 4}, {4, 5, 6}, {1, 0, 4}, 7));
  ops.push_back(UserView<T>("(7,) broadcast to (9,7)", {7}, {9, 7}, {0, 1}, 8));
  return ops;
}

// Every subset of the axes of a rank-r array.
std::vector<std::vector<int>> AxisSets(int rank) {
  std::vector<std::vector<int>> sets;
  for (uint32_t mask = 0; mask < (1u << rank); ++mask) {
    std::vector<int> axes;
    for (int d = 0; d < rank; ++d) {
      if (mask >> d & 1u) axes.push_back(d);
    }
    sets.push_back(axes);
  }
  return sets;
}

std::vector<bool> Reduced(int rank, const std::vector<int>& axes) {
  std::vector<bool> r(static_cast<size_t>(rank), false);
  for (int a : axes) r[static_cast<size_t>(a)] = true;
  return r;
}

template <class T>
void CheckClose(const std::vector<double>& got, const std::vector<double>& want, double tol, const std::string& what) {
  REQUIRE_MESSAGE(got.size() == want.size(), what);
  for (size_t e = 0; e < got.size(); ++e) {
    const double expected = static_cast<double>(static_cast<T>(want[e]));
    if (!(std::fabs(got[e] - expected) <= tol * (1 + std::fabs(expected)))) {
      FAIL_CHECK(what << " element " << e << ": got " << got[e] << ", want " << expected);
    }
  }
}

template <class T>
void CheckEveryKindAndAxisSet(bool pending) {
  const double tol = std::is_same_v<T, float> ? 2e-6 : 1e-13;
  for (const Operand<T>& op : Operands<T>()) {
    const Shape shape = op.x.shape();
    const int rank = op.x.rank();
    const std::vector<double> values = Values(op.x);
    // The operand pending (x * 1 joins the reduction's kernel) or computed.
    auto operand = [&] { return pending ? op.x * T(1) : op.x; };
    for (Kind k : kAxisKinds) {
      for (const std::vector<int>& axes : AxisSets(rank)) {
        const std::string what = absl::StrCat(KindName(k), " over axes [", absl::StrJoin(axes, ","), "] of ",
                                              op.name, pending ? " (pending)" : "");
        CheckClose<T>(Values(Apply(k, operand(), axes)), HostReduction(k, values, shape, Reduced(rank, axes)), tol,
                      what);
      }
    }
    for (Kind k : {Kind::kArgmax, Kind::kArgmin}) {
      for (int axis = -1; axis < rank; ++axis) {
        const std::vector<int> axes = axis < 0 ? std::vector<int>{} : std::vector<int>{axis};
        const std::vector<bool> reduced = axis < 0 ? std::vector<bool>(static_cast<size_t>(rank), true)
                                                   : Reduced(rank, axes);
        const std::string what =
            absl::StrCat(KindName(k), " axis ", axis, " of ", op.name, pending ? " (pending)" : "");
        CheckClose<T>(Values(Apply(k, operand(), axes)), HostReduction(k, values, shape, reduced), 0, what);
      }
    }
  }
}

TEST_CASE("reduce layout: every kind over every axis set of transposed, stepped and stride-0 operands (f64)") {
  CheckEveryKindAndAxisSet<double>(/*pending=*/false);
}

TEST_CASE("reduce layout: the same of pending operands, reduced inside their producer's kernel (f64)") {
  CheckEveryKindAndAxisSet<double>(/*pending=*/true);
}

TEST_CASE("reduce layout: every kind over every axis set of transposed, stepped and stride-0 operands (f32)") {
  CheckEveryKindAndAxisSet<float>(/*pending=*/false);
}

// d loss / d base for loss = sum(w * reduce(view(base))), against the
// reduction's adjoint computed on the host, mapped back to the base's
// elements through an index array viewed the same way.
TEST_CASE("reduce layout: gradients through transposed and stepped views of a leaf") {
  const Shape base_shape = {6, 5, 8};
  const Array<double> base = Base<double>(base_shape, 11);
  int64_t n = 1;
  for (int64_t s : base_shape) n *= s;
  std::vector<double> positions(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) positions[static_cast<size_t>(i)] = static_cast<double>(i);
  const Array<double> index = Array<double>::from(positions, base_shape);
  struct View {
    std::string name;
    std::function<Array<double>(const Array<double>&)> make;
  };
  const std::vector<View> views = {
      {"transposed 210", [](const Array<double>& a) { return a.transpose({2, 1, 0}); }},
      {"transposed 120", [](const Array<double>& a) { return a.transpose({1, 2, 0}); }},
      {"[::2, :, 1::3] transposed 201",
       [](const Array<double>& a) { return slice(a, {{0, 6, 2}, {}, {1, 8, 3}}).transpose({2, 0, 1}); }},
  };
  for (const View& view : views) {
    const Array<double> x = view.make(base);
    const Shape shape = x.shape();
    const std::vector<double> values = Values(x);
    const std::vector<double> where = Values(view.make(index));  // base element of each x element
    for (Kind k : kAxisKinds) {
      for (const std::vector<int>& axes : AxisSets(x.rank())) {
        if (axes.empty()) continue;
        const std::vector<bool> reduced = Reduced(x.rank(), axes);
        // Weights w_o = 1 + 0.1 o on the results, and the host adjoint of each element.
        const std::vector<double> results = HostReduction(k, values, shape, reduced);
        std::vector<double> w(results.size());
        for (size_t o = 0; o < w.size(); ++o) w[o] = 1 + 0.1 * static_cast<double>(o);
        const std::vector<double> counts = HostReduction(Kind::kSum, std::vector<double>(values.size(), 1.0),
                                                         shape, reduced);
        const std::vector<double> means = HostReduction(Kind::kMean, values, shape, reduced);
        std::vector<double> want(static_cast<size_t>(n), 0.0);
        Shape idx(shape.size(), 0);
        for (size_t e = 0; e < values.size(); ++e) {
          int64_t o = 0;
          for (size_t d = 0; d < shape.size(); ++d) o = o * (reduced[d] ? 1 : shape[d]) + (reduced[d] ? 0 : idx[d]);
          const size_t oi = static_cast<size_t>(o);
          const double v = values[e], r = results[oi], cnt = counts[oi];
          double adjoint = 0;
          switch (k) {
            case Kind::kSum: adjoint = 1; break;
            case Kind::kMean: adjoint = 1 / cnt; break;
            case Kind::kMax:
            case Kind::kMin: adjoint = v == r ? 1 : 0; break;  // values are distinct
            case Kind::kProd: adjoint = r / v; break;
            case Kind::kLogsumexp: adjoint = std::exp(v - r); break;
            case Kind::kVar: adjoint = 2 * (v - means[oi]) / cnt; break;
            case Kind::kNorm: adjoint = v / r; break;
            default: break;
          }
          want[static_cast<size_t>(where[e])] += w[oi] * adjoint;
          for (size_t d = shape.size(); d-- > 0;) {
            if (++idx[d] < shape[d]) break;
            idx[d] = 0;
          }
        }
        Tape tape;
        const Array<double> r = Apply(k, view.make(base), axes);
        const Array<double> weights = Array<double>::from(w, r.shape());
        const std::vector<Array<double>> grads = tape.gradient(sum(r * weights), {base});
        CheckClose<double>(Values(grads[0]), want, 1e-12,
                           absl::StrCat("d/d base of ", KindName(k), " over [", absl::StrJoin(axes, ","),
                                        "] of ", view.name));
      }
    }
  }
}

TEST_CASE("reduce layout: reductions of transposed and stepped operands are bitwise the same under 1, 2 and 8 threads") {
  // Large enough for several chunks (>= 32K elements each), with a reduced dim outermost after reordering.
  const Array<double> base = Base<double>({300, 2001}, 21);
  const Array<float> base32 = Base<float>({2001, 300}, 22);
  const std::vector<std::pair<std::string, std::function<std::vector<std::vector<char>>()>>> cases = {
      {"f64 transposed", [&] {
         const Array<double> x = base.transpose();
         std::vector<std::vector<char>> out;
         auto mix = [&](const Array<double>& a) {
           std::vector<double> v = a.to_vector();
           out.emplace_back(reinterpret_cast<const char*>(v.data()),
                            reinterpret_cast<const char*>(v.data() + v.size()));
         };
         for (int axis : {0, 1}) {
           mix(sum(x, {axis}));
           mix(max(x, {axis}));
           mix(logsumexp(x, {axis}));
           mix(var(x, {axis}));
           mix(argmax(x, axis));
           mix(sum(x * 2.0, {axis}));  // pending: fused into the product's kernel
         }
         mix(sum(x));
         mix(min(x));
         mix(norm(x));
         return out;
       }},
      {"f32 stepped and transposed", [&] {
         const Array<float> x = slice(base32, {{1, 2001, 2}, {0, 300, 3}}).transpose();  // (100, 1000)
         std::vector<std::vector<char>> out;
         auto mix = [&](const Array<float>& a) {
           std::vector<float> v = a.to_vector();
           out.emplace_back(reinterpret_cast<const char*>(v.data()),
                            reinterpret_cast<const char*>(v.data() + v.size()));
         };
         for (int axis : {0, 1}) {
           mix(sum(x, {axis}));
           mix(min(x, {axis}));
           mix(logsumexp(x, {axis}));
           mix(argmin(x, axis));
         }
         mix(sum(x));
         mix(mean(x * 3.0f));
         return out;
       }},
  };
  for (const auto& [name, run] : cases) {
    std::vector<std::vector<char>> first;
    for (int threads : {1, 2, 8}) {
      jit::ThreadPool pool(threads);
      jit::ScopedThreadPool scope(pool);
      const std::vector<std::vector<char>> now = run();
      if (first.empty()) {
        first = now;
        continue;
      }
      REQUIRE(now.size() == first.size());
      for (size_t k = 0; k < now.size(); ++k) {
        CHECK_MESSAGE(now[k] == first[k], name << " result " << k << " differs under " << threads << " threads");
      }
    }
  }
}

// The loop order is the inputs' alone: a pending operand the user still
// holds (written at full size by the same kernel) once voted for the logical
// order, so holding it changed the sum's last bits.
TEST_CASE("reduce layout: a sum's bits do not depend on whether its pending operand is held") {
  const int64_t n = 17, m = 8;
  std::vector<double> buf(static_cast<size_t>(n * m));
  for (size_t i = 0; i < buf.size(); ++i) {
    buf[i] = std::sin(1.0 + static_cast<double>(i) * 0.731) * std::exp(3.0 * std::cos(static_cast<double>(i) * 1.3));
  }
  const auto x = Array<double>::view(buf.data(), {n, m}, {1, n});  // transposed
  double dropped = 0, held = 0;
  {
    auto s = sum(x * 2.0 + 1.0);  // the operand, a temporary, is gone before s is computed
    dropped = s.item();
  }
  {
    auto e = x * 2.0 + 1.0;
    held = sum(e).item();
    CHECK(e.to_vector().size() == buf.size());
  }
  CHECK(std::memcmp(&dropped, &held, sizeof(double)) == 0);
  long double ref = 0;
  for (double v : buf) ref += static_cast<long double>(v) * 2 + 1;
  CHECK(dropped == doctest::Approx(static_cast<double>(ref)).epsilon(1e-13));
}

}  // namespace
}  // namespace dualcast
