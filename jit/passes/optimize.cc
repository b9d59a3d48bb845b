// The simplify + DCE fixpoint (see optimize.h).
#include "jit/passes/optimize.h"

#include "jit/passes/dce.h"
#include "jit/passes/simplify.h"

namespace dualcast::jit {

namespace {
constexpr int kMaxRounds = 8;
}  // namespace

Function Optimize(const Function& f) {
  Function current = EliminateDeadCode(Simplify(f));
  for (int round = 1; round < kMaxRounds; ++round) {
    Function next = EliminateDeadCode(Simplify(current));
    const bool changed = next.insts.size() != current.insts.size();
    current = std::move(next);
    if (!changed) break;
  }
  return current;
}

}  // namespace dualcast::jit
