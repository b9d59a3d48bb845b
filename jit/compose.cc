// Inlining and fusion composition (see compose.h).
#include "jit/compose.h"

#include "absl/strings/str_cat.h"
#include "jit/error.h"
#include "jit/rewrite.h"

namespace dualcast::jit {

namespace {

[[noreturn]] void WiringBug(const std::string& what) {
  throw Error(ErrorKind::kInternal, absl::StrCat("jit::Compose: ", what,
                                                 " (the fusion graph is malformed; "
                                                 "this is a dualcast bug, please report)"));
}

// Walks one callee block into the builder's current block. `map` holds the
// caller's value for every callee value defined so far.
std::vector<ValueId> InlineBlock(Builder& b, const Function& callee, BlockId block,
                                 std::vector<ValueId>& map) {
  const std::vector<ValueId>& body = callee.blocks[block].body;
  for (size_t i = 0; i < body.size(); ++i) {
    const ValueId v = body[i];
    const Inst& inst = callee.inst(v);
    if (inst.op == Op::kInput || inst.op == Op::kResult) continue;  // bound / mapped by the If
    if (inst.op == Op::kIf) {
      b.BeginIf(map[inst.args[0]]);
      b.BeginElse(InlineBlock(b, callee, inst.then_block, map));
      std::vector<ValueId> results = b.EndIf(InlineBlock(b, callee, inst.else_block, map));
      for (size_t j = i + 1; j < body.size() && callee.inst(body[j]).op == Op::kResult &&
                             callee.inst(body[j]).args[0] == v;
           ++j) {
        map[body[j]] = results[callee.inst(body[j]).index];
      }
      continue;
    }
    ValueId args[3];
    for (int k = 0; k < inst.num_args; ++k) args[k] = map[inst.args[k]];
    map[v] = CloneInst(inst, std::span<const ValueId>(args, inst.num_args), b);
  }
  std::vector<ValueId> yields;
  for (ValueId y : callee.blocks[block].yields) yields.push_back(map[y]);
  return yields;
}

}  // namespace

std::vector<ValueId> Inline(Builder& b, const Function& callee, std::span<const ValueId> args) {
  if (args.size() != callee.num_inputs()) {
    WiringBug(absl::StrCat("inlining '", callee.name, "' with ", args.size(),
                           " arguments; it takes ", callee.num_inputs()));
  }
  const Function& caller = b.function();
  std::vector<ValueId> map(callee.insts.size(), kNoValue);
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
    map[callee.inputs[i]] = args[i];
  }
  if (callee.blocks.empty()) return {};
  return InlineBlock(b, callee, 0, map);
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
