// Inlining and fusion composition (see compose.h).
#include "jit/passes/compose.h"

#include "absl/strings/str_cat.h"
#include "jit/error.h"
#include "jit/passes/rewrite.h"

namespace dualcast::jit {

namespace {

[[noreturn]] void WiringBug(const std::string& what) {
  throw Error(ErrorKind::kInternal, absl::StrCat("jit::Compose: ", what,
                                                 " (the fusion graph is malformed; "
                                                 "this is a dualcast bug, please report)"));
}

}  // namespace

Function DerivedFunction(const Function& primal, std::string name) {
  Function f(std::move(name));
  f.hints = primal.hints;
  return f;
}

std::vector<ValueId> Inline(Builder& b, const Function& callee, std::span<const ValueId> args) {
  if (args.size() != callee.num_inputs()) {
    WiringBug(absl::StrCat("inlining '", callee.name, "' with ", args.size(),
                           " arguments; it takes ", callee.num_inputs()));
  }
  const Function& caller = b.function();
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] >= caller.insts.size()) {
      WiringBug(absl::StrCat("inlining '", callee.name, "': argument ", i, " is unknown value %",
                             args[i]));
    }
    if (caller.type(args[i]) != callee.input_type(i)) {
      WiringBug(absl::StrCat("inlining '", callee.name, "': argument ", i, " is ",
                             TypeName(caller.type(args[i])), ", the input is ",
                             TypeName(callee.input_type(i))));
    }
  }
  return Rewriter().RunInto(b, callee, args);  // the shared rebuild walk
}

Function Compose(std::string name, std::span<const Type> leaf_types,
                 std::span<const FusionNode> nodes, std::span<const FusionSource> outputs) {
  Function fused(std::move(name));
  Builder b(fused);
  std::vector<ValueId> leaves;
  for (Type t : leaf_types) leaves.push_back(b.Input(t));
  std::vector<std::vector<ValueId>> node_outputs;  // filled in topological order

  // `consumer` is the number of the node reading `src`, or nodes.size() for the outputs.
  auto resolve = [&](const FusionSource& src, size_t consumer, const std::string& where) {
    if (src.kind == FusionSource::kLeaf) {
      if (src.index < 0 || static_cast<size_t>(src.index) >= leaves.size()) {
        WiringBug(absl::StrCat(where, " reads leaf ", src.index, " of ", leaves.size()));
      }
      return leaves[src.index];
    }
    if (src.kind != FusionSource::kNode || src.index < 0 ||
        static_cast<size_t>(src.index) >= nodes.size()) {
      WiringBug(absl::StrCat(where, " reads node ", src.index, " of ", nodes.size()));
    }
    if (static_cast<size_t>(src.index) >= consumer) {
      WiringBug(absl::StrCat(where, " reads node ", src.index,
                             ", which is not earlier: a cycle or a non-topological order"));
    }
    const std::vector<ValueId>& outs = node_outputs[src.index];
    if (src.output < 0 || static_cast<size_t>(src.output) >= outs.size()) {
      WiringBug(absl::StrCat(where, " reads output ", src.output, " of node ", src.index,
                             ", which has ", outs.size()));
    }
    return outs[src.output];
  };

  // The fused kernel's hints: fast-math only if every node allows it, a vector width only if
  // every node asks for the same one (else the backend's choice).
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (nodes[n].function == nullptr) continue;
    const BackendHints& h = nodes[n].function->hints;
    fused.hints.fast_math = n == 0 ? h.fast_math : fused.hints.fast_math && h.fast_math;
    if (n == 0 || fused.hints.vector_width != h.vector_width) {
      fused.hints.vector_width = n == 0 ? h.vector_width : 0;
    }
  }
  for (size_t n = 0; n < nodes.size(); ++n) {
    const FusionNode& node = nodes[n];
    if (node.function == nullptr) WiringBug(absl::StrCat("node ", n, " has no function"));
    const Function& callee = *node.function;
    const std::string node_name = absl::StrCat("node ", n, " ('", callee.name, "')");
    if (node.inputs.size() != callee.num_inputs()) {
      WiringBug(absl::StrCat(node_name, " is wired to ", node.inputs.size(),
                             " sources; it takes ", callee.num_inputs(), " inputs"));
    }
    std::vector<ValueId> args;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const std::string where = absl::StrCat(node_name, " input ", i);
      ValueId v = resolve(node.inputs[i], n, where);
      if (fused.type(v) != callee.input_type(i)) {
        WiringBug(absl::StrCat(where, " is ", TypeName(callee.input_type(i)), " but its source is ",
                               TypeName(fused.type(v))));
      }
      args.push_back(v);
    }
    node_outputs.push_back(Inline(b, callee, args));
  }

  std::vector<ValueId> results;
  for (size_t m = 0; m < outputs.size(); ++m) {
    results.push_back(resolve(outputs[m], nodes.size(), absl::StrCat("output ", m)));
  }
  b.Return(results);
  return fused;
}

}  // namespace dualcast::jit
