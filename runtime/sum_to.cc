// sum_to and the fused multiply-reduce of the reverse sweep, as generated kernels with a reduced output (Execute).
//
// x̄ = sum_to(Σ_t a_t ⊙ b_t, shape(x)) is one kernel over the full shape
// whose single output is stored reduced to x's shape (ExecuteOptions::
// output_shapes): the products never materialise, the sum runs in double
// in an order fixed by the sizes and the operands' strides (Execute loops in
// their memory order; bitwise the same for any thread count).
// The tiny IR functions are built with jit::Builder and kept in a small map
// keyed by dtype and term pattern.
#include <algorithm>
#include <map>
#include <mutex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "dualcast/detail/broadcast_grad.hpp"
#include "dualcast/detail/execute.hpp"
#include "dualcast/kernel.hpp"
#include "jit/codegen/broadcast_layout.h"
#include "jit/error.h"
#include "runtime/grad_kernels.h"

namespace dualcast::detail {
namespace {

// Most distinct term patterns kept; past it, functions are built per call
// (still correct, and the kernel cache still finds their compiled code).
constexpr size_t kMaxCachedPatterns = 64;

// Σ_t a_t * b_t (a_t alone where the pattern says it has no b), one input per operand.
std::shared_ptr<const jit::Function> SumOfProducts(DType dtype, const std::vector<bool>& has_b) {
  static std::mutex mu;
  static std::map<std::pair<DType, std::vector<bool>>, std::shared_ptr<const jit::Function>> cache;
  auto key = std::make_pair(dtype, has_b);
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  const jit::Type t = JitType(dtype);
  auto f = std::make_shared<jit::Function>(has_b.size() == 1 && !has_b[0] ? "sum_to"
                                                                         : "sum_of_products");
  jit::Builder b(*f);
  jit::ValueId total = jit::kNoValue;
  for (bool two : has_b) {
    jit::ValueId term = b.Input(t);
    if (two) term = b.Mul(term, b.Input(t));
    total = total == jit::kNoValue ? term : b.Add(total, term);
  }
  b.Return({total});
  std::shared_ptr<const jit::Function> fn = std::move(f);
  std::lock_guard<std::mutex> lock(mu);
  if (cache.size() < kMaxCachedPatterns) cache.emplace(std::move(key), fn);
  return fn;
}

}  // namespace

std::shared_ptr<ArrayImpl> ReduceProducts(DType dtype, const std::vector<ProductTerm>& terms,
                                          const std::vector<int64_t>& full,
                                          const std::vector<int64_t>& target, double divisor) {
  if (!jit::MergeForReduction(full, target).ok()) {
    throw Error(ErrorKind::kShape,
                absl::StrCat("sum_to: cannot reduce shape ", jit::FormatShape(full), " to shape ",
                             jit::FormatShape(target),
                             "; every dimension must match or be 1 in the target"));
  }
  if (terms.empty()) return Filled(dtype, target, 0.0 / divisor);
  std::vector<std::shared_ptr<ArrayImpl>> operands;
  std::vector<bool> has_b;
  for (const ProductTerm& t : terms) {
    if (t.a == nullptr) throw Error(ErrorKind::kInternal, "sum_to: a term without operand");
    for (const ArrayImpl* a : {t.a, t.b}) {
      if (a == nullptr) continue;
      CheckComputed(*a, "sum_to");  // any device: Execute runs it there
      if (a->dtype != dtype) {
        throw Error(ErrorKind::kInternal, absl::StrCat("sum_to: operand is ", DTypeName(a->dtype),
                                                       ", expected ", DTypeName(dtype)));
      }
      // A non-owning handle: the caller keeps the operands alive for the call.
      operands.push_back(std::shared_ptr<ArrayImpl>(std::shared_ptr<ArrayImpl>(),
                                                    const_cast<ArrayImpl*>(a)));
    }
    has_b.push_back(t.b != nullptr);
  }
  // Every size 1 on the CPU (a scalar loss, a 1-element tape step): the generated kernel's
  // arithmetic (one term in T, several summed in double) without planning a
  // layout or launching: the 1-element launch path is dominated by that overhead.
  auto ones = [](const std::vector<int64_t>& shape) {
    return std::all_of(shape.begin(), shape.end(), [](int64_t s) { return s == 1; });
  };
  if (divisor == 1 && ones(full) && target.size() <= full.size() && ones(target) &&
      std::all_of(terms.begin(), terms.end(), [&](const ProductTerm& t) {
        return ones(t.a->shape) && t.a->device.is_cpu() &&
               (t.b == nullptr || (ones(t.b->shape) && t.b->device.is_cpu()));
      })) {
    auto out = NewArray(dtype, target, Device::cpu());
    auto one = [&](auto zero) {
      using T = decltype(zero);
      auto at = [](const ArrayImpl* a) { return *static_cast<const T*>(a->data()); };
      T result;
      if (terms.size() == 1) {
        result = terms[0].b == nullptr ? at(terms[0].a) : at(terms[0].a) * at(terms[0].b);
      } else {
        double acc = 0;
        for (const ProductTerm& t : terms) {
          acc += t.b == nullptr ? double(at(t.a)) : double(at(t.a)) * double(at(t.b));
        }
        result = static_cast<T>(acc);
      }
      *static_cast<T*>(out->data()) = result;
    };
    if (dtype == DType::kF32) one(0.0f);
    else one(0.0);
    return out;
  }
  ExecuteOptions options;
  // An empty output shape means "not reduced": a total sum is stored as (1,), then viewed as ().
  const bool scalar = target.empty() && !full.empty();
  options.output_shapes = {scalar ? std::vector<int64_t>{1} : target};
  options.iteration_shape = full;
  if (divisor != 1) options.divisors = {divisor};
  std::shared_ptr<ArrayImpl> out = Execute(has_b.size() == 1 && !has_b[0] ? "sum_to" : "sum_of_products",
                                           SumOfProducts(dtype, has_b), operands, options)[0];
  return scalar ? ViewOf(*out, {}, {}) : out;
}

std::shared_ptr<ArrayImpl> SumTo(const ArrayImpl& full, const std::vector<int64_t>& shape) {
  CheckComputed(full, "sum_to");
  if (full.shape == shape) return ViewOf(full, full.shape, full.strides);
  return ReduceProducts(full.dtype, {ProductTerm{&full, nullptr}}, full.shape, shape);
}

}  // namespace dualcast::detail
