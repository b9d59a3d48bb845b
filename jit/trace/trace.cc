// The tracer's per-thread state: the hash-consed DAG, the path oracle, purity checks and limits.
#include "jit/trace/trace.h"

#include <cmath>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "jit/error.h"
#include "jit/ir/scalar_ops.h"
#include "jit/ir/verify.h"
#include "jit/trace/trace_merge.h"

namespace dualcast::jit::trace_detail {

// A condition up to negation and operand order (see Tracer::State::FactOf).
struct Fact {
  Op op;
  ValueId a, b;
  bool operator==(const Fact&) const = default;
  template <typename H>
  friend H AbslHashValue(H h, const Fact& f) {
    return H::combine(std::move(h), f.op, f.a, f.b);
  }
};

namespace {
// Condition queries (decisions, known and constant answers) on one path before
// we call it a loop that never ends: far above any real kernel.
constexpr size_t kMaxQueriesPerPath = 100000;
}  // namespace

class Tracer::State {
 public:
  State(std::string kernel_name, std::span<const Type> input_types, const TraceOptions& opts)
      : name(std::move(kernel_name)), options(opts), dag(name), builder(dag) {
    bool any_f64 = input_types.empty();
    for (size_t i = 0; i < input_types.size(); ++i) {
      if (!IsFloat(input_types[i])) {
        throw Error(ErrorKind::kType,
                    absl::StrCat("kernel '", name, "': input ", i, " has type ",
                                 TypeName(input_types[i]),
                                 "; traced inputs must be f32 or f64"));
      }
      any_f64 |= input_types[i] == Type::kF64;
      inputs.push_back(builder.Input(input_types[i]));
    }
    default_type = any_f64 ? Type::kF64 : Type::kF32;
    ValidateTraceOptions(name, options);
    tree.emplace_back();
  }

  std::string name;
  TraceOptions options;
  Function dag;
  Builder builder;
  std::vector<ValueId> inputs;
  Type default_type = Type::kF64;
  std::vector<DecisionNode> tree;
  int paths = 0;
  std::vector<CondGroup> conds;                                  // dc::cond groups
  absl::flat_hash_map<std::vector<ValueId>, ValueId> cond_nodes;  // [pred, then.., else..] -> If node
  State* previous = nullptr;

  // The run in progress.
  std::vector<bool> forced;  // decisions to replay
  std::vector<bool> taken;   // decisions made so far
  int node = 0;              // where in the tree this run is
  size_t queries = 0;
  absl::flat_hash_map<Fact, bool> known;  // facts decided on this path

  // What a condition says, up to negation: y < x and x > y are one fact,
  // x != y is the negation of x == y, !c the negation of c. (x <= y is not
  // the negation of x > y: both are false for a NaN.)
  std::pair<Fact, bool> FactOf(ValueId cond) const {
    bool negated = false;
    while (dag.inst(cond).op == Op::kNot) {
      negated = !negated;
      cond = dag.inst(cond).args[0];
    }
    const Inst& inst = dag.inst(cond);
    ValueId a = inst.args[0], b = inst.args[1];
    switch (inst.op) {
      case Op::kLt: return {{Op::kLt, a, b}, negated};
      case Op::kGt: return {{Op::kLt, b, a}, negated};
      case Op::kLe: return {{Op::kLe, a, b}, negated};
      case Op::kGe: return {{Op::kLe, b, a}, negated};
      case Op::kEq: return {{Op::kEq, std::min(a, b), std::max(a, b)}, negated};
      case Op::kNe: return {{Op::kEq, std::min(a, b), std::max(a, b)}, !negated};
      default: return {{Op::kIf, cond, kNoValue}, negated};
    }
  }

  // ---- recording ----

  void Check(ValueId v) const {
    if (v == kNoValue) {
      throw Error(ErrorKind::kTrace,
                  absl::StrCat("kernel '", name, "' used an unset jit::Var or jit::Bool: assign a "
                               "default-constructed value before using it"));
    }
    if (v >= dag.insts.size()) {
      throw Error(ErrorKind::kTrace,
                  absl::StrCat("kernel '", name, "' used a jit::Var from another trace: kernels "
                               "must not keep traced values between calls"));
    }
  }

  bool IsConst(ValueId v) const { return dag.inst(v).op == Op::kConst; }
  double Imm(ValueId v) const { return dag.inst(v).imm; }

  // Brings float operands to one type: constants adopt the type of the
  // non-constant operands; otherwise f32 widens to f64 (as float + double does).
  void Unify(std::span<ValueId> args) {
    bool any_var = false, var_f64 = false, any_f64 = false;
    for (ValueId a : args) {
      bool f64 = dag.type(a) == Type::kF64;
      any_f64 |= f64;
      if (!IsConst(a)) {
        any_var = true;
        var_f64 |= f64;
      }
    }
    Type target = (any_var ? var_f64 : any_f64) ? Type::kF64 : Type::kF32;
    for (ValueId& a : args) {
      if (dag.type(a) == target) continue;
      a = IsConst(a) ? builder.Const(target, Imm(a)) : builder.Cast(target, a);
    }
  }

  ValueId Record(Op op, std::span<ValueId> args) {
    for (ValueId a : args) Check(a);
    // TraceOptions::fast_math: the activations trace as their fast forms, per op, so fusion
    // with kernels traced without it keeps each call's choice (docs/fast-activations.md).
    if (options.fast_math && op == Op::kTanh) op = Op::kFastTanh;
    if (options.fast_math && op == Op::kSigmoid) op = Op::kFastSigmoid;
    auto all_const = [&](std::span<ValueId> vs) {
      for (ValueId v : vs) {
        if (!IsConst(v)) return false;
      }
      return true;
    };
    switch (Info(op).kind) {
      case OpKind::Arith:
        Unify(args);
        if (all_const(args)) {  // exact: IEEE arithmetic in the value's own type
          double x[3] = {0, 0, 0};
          for (size_t i = 0; i < args.size(); ++i) x[i] = Imm(args[i]);
          Type t = dag.type(args[0]);
          return builder.Const(t, EvalScalarOp(op, t, x));
        }
        break;
      case OpKind::Math:
        Unify(args);
        break;
      case OpKind::Compare:
        Unify(args);
        if (all_const(args)) {
          const double x[2] = {Imm(args[0]), args.size() > 1 ? Imm(args[1]) : 0.0};
          return builder.Const(Type::kBool, EvalScalarOp(op, Type::kBool, x));
        }
        break;
      case OpKind::Logic:
        if (auto folded = FoldLogic(op, args); folded != kNoValue) return folded;
        break;
      case OpKind::Select:
        Unify(args.subspan(1));
        if (IsConst(args[0])) return Imm(args[0]) != 0 ? args[1] : args[2];
        if (args[1] == args[2]) return args[1];
        break;
      default:
        break;
    }
    return builder.Emit(op, args);
  }

  ValueId FoldLogic(Op op, std::span<ValueId> args) {
    if (op == Op::kNot) {
      if (IsConst(args[0])) return builder.Const(Type::kBool, Imm(args[0]) == 0);
      if (dag.inst(args[0]).op == Op::kNot) return dag.inst(args[0]).args[0];
      return kNoValue;
    }
    bool is_and = op == Op::kAnd;
    for (int i = 0; i < 2; ++i) {
      ValueId a = args[i], other = args[1 - i];
      if (!IsConst(a)) continue;
      bool value = Imm(a) != 0;
      // and(false, _) = false, and(true, b) = b; or(true, _) = true, or(false, b) = b.
      return value == is_and ? other : a;
    }
    if (args[0] == args[1]) return args[0];
    return kNoValue;
  }

  // ---- the path oracle ----

  [[noreturn]] void Impure(const std::string& what) const {
    throw Error(ErrorKind::kTrace,
                absl::StrCat("kernel '", name, "' is not pure/deterministic: ", what,
                             ". Kernels must have no side effects and keep no state between "
                             "calls: the tracer runs the lambda once per path and needs the "
                             "same decisions to lead to the same conditions"));
  }

  bool Decide(ValueId cond) {
    Check(cond);
    if (++queries > kMaxQueriesPerPath) {
      throw Error(ErrorKind::kTrace,
                  absl::StrCat("kernel '", name, "' asked more than ", kMaxQueriesPerPath,
                               " branch questions on one path: a loop that never ends? Loops "
                               "must have a trip count that does not depend on the data; use "
                               "select(cond, a, b) or restructure the kernel"));
    }
    const Inst& inst = dag.inst(cond);
    if (inst.type != Type::kBool) {
      throw Error(ErrorKind::kInternal, absl::StrCat("kernel '", name,
                                                      "': a branch on a non-bool value"));
    }
    if (inst.op == Op::kConst) return inst.imm != 0;
    auto [fact, negated] = FactOf(cond);
    if (auto it = known.find(fact); it != known.end()) return it->second != negated;
    size_t k = taken.size();
    if (k >= static_cast<size_t>(options.max_decisions_per_path)) {
      throw Error(ErrorKind::kTrace,
                  absl::StrCat("kernel '", name, "': a path takes more than ",
                               options.max_decisions_per_path,
                               " data-dependent branch decisions (TraceOptions::"
                               "max_decisions_per_path = ",
                               options.max_decisions_per_path,
                               "). A loop whose trip count depends on the data cannot be "
                               "traced; use select(cond, a, b) for choices that need no branch, "
                               "or restructure the kernel (e.g. a fixed trip count)"));
    }
    DecisionNode* here = &tree[node];
    if (here->leaf) Impure(absl::StrCat("decision ", k + 1, " was made where an earlier run with "
                                        "the same decisions returned"));
    if (here->cond == kNoValue) {
      here->cond = cond;
    } else if (here->cond != cond) {
      Impure(absl::StrCat("after the same ", k, " decision(s), decision ", k + 1,
                          " branched on a different condition"));
    }
    bool value = k < forced.size() ? static_cast<bool>(forced[k]) : true;
    taken.push_back(value);
    known[fact] = value != negated;
    int next = here->child[value];
    if (next < 0) {
      next = static_cast<int>(tree.size());
      tree[node].child[value] = next;
      tree.emplace_back();
    }
    node = next;
    return value;
  }

  // ---- dc::cond ----

  int Known(ValueId cond) {
    Check(cond);
    const Inst& inst = dag.inst(cond);
    if (inst.type != Type::kBool) {
      throw Error(ErrorKind::kInternal, absl::StrCat("kernel '", name,
                                                      "': dc::cond on a non-bool value"));
    }
    if (inst.op == Op::kConst) return inst.imm != 0;
    auto [fact, negated] = FactOf(cond);
    if (auto it = known.find(fact); it != known.end()) return it->second != negated;
    return -1;
  }

  void Assume(ValueId cond, bool value) {
    auto [fact, negated] = FactOf(cond);
    known[fact] = value != negated;
  }

  void Forget(ValueId cond) { known.erase(FactOf(cond).first); }

  std::vector<ValueId> Cond(ValueId pred, std::vector<ValueId> then_values,
                            std::vector<ValueId> else_values) {
    if (then_values.size() != else_values.size()) {
      throw Error(ErrorKind::kInternal, absl::StrCat("kernel '", name,
                                                      "': dc::cond sides of different sizes"));
    }
    bool same = true;
    for (size_t j = 0; j < then_values.size(); ++j) {
      Check(then_values[j]);
      Check(else_values[j]);
      if (dag.type(then_values[j]) == Type::kBool || dag.type(else_values[j]) == Type::kBool) {
        throw Error(ErrorKind::kType, absl::StrCat("kernel '", name, "': a dc::cond side returned "
                                                   "a bool; use a number (e.g. select(c, 1, 0))"));
      }
      ValueId pair[2] = {then_values[j], else_values[j]};
      Unify(pair);
      then_values[j] = pair[0];
      else_values[j] = pair[1];
      same = same && pair[0] == pair[1];
    }
    if (same) return then_values;  // both sides alike: no If, no condition
    std::vector<ValueId> key = {pred};
    key.insert(key.end(), then_values.begin(), then_values.end());
    key.insert(key.end(), else_values.begin(), else_values.end());
    auto [it, fresh] = cond_nodes.try_emplace(std::move(key), kNoValue);
    if (fresh) {
      Inst group;
      group.op = Op::kIf;
      group.type = Type::kBool;
      group.num_args = 1;
      group.args[0] = pred;
      group.index = static_cast<uint32_t>(conds.size());
      it->second = Append(group);
      CondGroup g;
      g.pred = pred;
      g.then_values = then_values;
      g.else_values = else_values;
      for (size_t j = 0; j < then_values.size(); ++j) {
        Inst result;
        result.op = Op::kResult;
        result.type = dag.type(then_values[j]);
        result.num_args = 1;
        result.args[0] = it->second;
        result.index = static_cast<uint32_t>(j);
        g.results.push_back(Append(result));
      }
      conds.push_back(std::move(g));
    }
    return conds[dag.inst(it->second).index].results;
  }

  // A node the Builder cannot make (dc::cond's If and results live in the DAG only).
  ValueId Append(const Inst& inst) {
    ValueId id = static_cast<ValueId>(dag.insts.size());
    dag.insts.push_back(inst);
    dag.blocks[0].body.push_back(id);
    return id;
  }

  void BeginRun() {
    taken.clear();
    known.clear();
    node = 0;
    queries = 0;
  }

  void EndRun(const std::vector<ValueId>& outputs) {
    for (ValueId v : outputs) {
      Check(v);
      if (dag.type(v) == Type::kBool) {
        throw Error(ErrorKind::kType, absl::StrCat("kernel '", name, "' returned a bool"));
      }
    }
    DecisionNode& here = tree[node];
    if (taken.size() < forced.size() || here.cond != kNoValue || here.leaf) {
      Impure(absl::StrCat("a run returned after ", taken.size(),
                          " decision(s) where an earlier run with the same decisions branched"));
    }
    here.leaf = true;
    here.outputs = outputs;
    if (++paths > options.max_paths) {
      absl::flat_hash_set<ValueId> conditions;  // met so far, each a plain `if` on traced data
      for (const DecisionNode& n : tree) {
        if (n.cond != kNoValue) conditions.insert(n.cond);
      }
      throw Error(ErrorKind::kTrace,
                  absl::StrCat("kernel '", name, "' has more than ", options.max_paths,
                               " paths (TraceOptions::max_paths = ", options.max_paths,
                               "): it branched on ", conditions.size(), " different conditions so far, "
                               "and the tracer re-runs the lambda once per path, so each plain "
                               "`if` on traced values doubles the paths after it. Write such "
                               "conditions with dc::cond(pred, then_fn, else_fn) (traced once, "
                               "only the taken side runs) or select(cond, a, b) (no branch), or "
                               "raise the limit with dc::kernel(name, f, TraceOptions)"));
    }
  }

  bool NextPath() {
    // Depth-first, true before false: flip the last true decision.
    size_t j = taken.size();
    while (j > 0 && !taken[j - 1]) --j;
    if (j == 0) return false;
    forced.assign(taken.begin(), taken.begin() + (j - 1));
    forced.push_back(false);
    return true;
  }

  // One type for all outputs (see trace.h), converted in the DAG so that the
  // conversions are placed like any other node.
  void UnifyOutputs() {
    bool any_var = false, var_f64 = false;
    for (const DecisionNode& n : tree) {
      for (ValueId v : n.outputs) {
        if (IsConst(v)) continue;
        any_var = true;
        var_f64 |= dag.type(v) == Type::kF64;
      }
    }
    Type target = any_var ? (var_f64 ? Type::kF64 : Type::kF32) : default_type;
    for (DecisionNode& n : tree) {
      for (ValueId& v : n.outputs) {
        if (dag.type(v) == target) continue;
        v = IsConst(v) ? builder.Const(target, Imm(v)) : builder.Cast(target, v);
      }
    }
  }

  Function Finish() {
    UnifyOutputs();
    absl::StatusOr<Function> merged = MergePaths(name, dag, tree, conds);
    if (!merged.ok()) ThrowStatus(merged.status());
    if (merged->insts.size() > static_cast<size_t>(options.max_insts)) {
      throw Error(ErrorKind::kTrace,
                  absl::StrCat("kernel '", name, "' traces to ", merged->insts.size(),
                               " IR instructions (TraceOptions::max_insts = ", options.max_insts,
                               ") from ", paths, " paths: its paths do not re-join (each "
                               "condition depends on the branches before it), so the code after "
                               "each branch is copied per path. Write the conditions with "
                               "dc::cond(pred, then_fn, else_fn) or select(cond, a, b), or "
                               "raise the limit with dc::kernel(name, f, TraceOptions)"));
    }
    if (absl::Status s = Verify(*merged); !s.ok()) ThrowStatus(s);
    merged->hints = BackendHints{options.fast_math, options.vector_width};
    return *std::move(merged);
  }
};

}  // namespace dualcast::jit::trace_detail

namespace dualcast::jit {

void ValidateTraceOptions(const std::string& name, const TraceOptions& options) {
  if (options.max_decisions_per_path < 0 || options.max_paths < 1 || options.max_insts < 1) {
    throw Error(ErrorKind::kInvalidArgument,
                absl::StrCat("kernel '", name, "': TraceOptions need max_decisions_per_path >= 0, "
                             "max_paths >= 1 and max_insts >= 1 (got ",
                             options.max_decisions_per_path, ", ", options.max_paths, " and ",
                             options.max_insts, ")"));
  }
  const int w = options.vector_width;
  if (w < 0 || w > 64 || (w & (w - 1)) != 0) {
    throw Error(ErrorKind::kInvalidArgument,
                absl::StrCat("kernel '", name, "': TraceOptions::vector_width is ", w,
                             "; use 0 (the backend's choice) or a power of two up to 64 lanes"));
  }
}

}  // namespace dualcast::jit

namespace dualcast::jit::trace_detail {

namespace {
thread_local Tracer::State* current_trace = nullptr;

Tracer::State& Current() {
  if (current_trace == nullptr) {
    throw Error(ErrorKind::kTrace,
                "a jit::Var or jit::Bool was used outside of jit::Trace: traced values exist "
                "only while a kernel is being traced, on the tracing thread");
  }
  return *current_trace;
}
}  // namespace

Tracer::Tracer(std::string name, std::span<const Type> input_types, const TraceOptions& options)
    : state_(std::make_unique<State>(std::move(name), input_types, options)) {
  state_->previous = current_trace;
  current_trace = state_.get();
}

Tracer::~Tracer() { current_trace = state_->previous; }

Var Tracer::Input(size_t i) const { return Var::FromId(state_->inputs[i]); }
void Tracer::BeginRun() { state_->BeginRun(); }
void Tracer::EndRun(const std::vector<ValueId>& outputs) { state_->EndRun(outputs); }
bool Tracer::NextPath() { return state_->NextPath(); }
Function Tracer::Finish() { return state_->Finish(); }

void ThrowArity(const std::string& name, size_t arity,
                const std::array<bool, kMaxTraceArity + 1>& accepted) {
  if (arity > kMaxTraceArity) {
    throw Error(ErrorKind::kArity,
                absl::StrCat("kernel '", name, "' was given ", arity, " arguments; traced kernels "
                             "take at most ", kMaxTraceArity, " (jit::kMaxTraceArity): pass "
                             "several values as one broadcast array, or split the kernel"));
  }
  std::vector<std::string> counts;
  for (size_t k = 0; k < accepted.size(); ++k) {
    if (accepted[k]) counts.push_back(absl::StrCat(k));
  }
  std::string takes =
      counts.empty()
          ? absl::StrCat("it cannot be called with 0 to ", kMaxTraceArity,
                         " jit::Var arguments (write it as a generic lambda, "
                         "e.g. [](auto x, auto y) { ... })")
          : absl::StrCat("it takes ", absl::StrJoin(counts, " or "),
                         counts.size() == 1 && counts[0] == "1" ? " argument" : " arguments");
  throw Error(ErrorKind::kArity, absl::StrCat("kernel '", name, "' cannot be called with ", arity,
                                              arity == 1 ? " argument; " : " arguments; ", takes));
}

// ---- the hooks of var.h ----

namespace {
ValueId NumberConstant(Builder& builder, Type type, Number value) {
  return builder.Const(type, type == Type::kF32 ? static_cast<double>(value.f32) : value.f64);
}
}  // namespace

ValueId DefaultConstant(Number value) {
  Tracer::State& s = Current();
  return NumberConstant(s.builder, s.default_type, value);
}

ValueId ConstantLike(ValueId partner, Number value) {
  Tracer::State& s = Current();
  s.Check(partner);
  return NumberConstant(s.builder, s.dag.type(partner), value);
}

ValueId BoolConstant(bool value) { return Current().builder.Const(Type::kBool, value); }

ValueId Record(Op op, ValueId a) {
  ValueId args[] = {a};
  return Current().Record(op, args);
}
ValueId Record(Op op, ValueId a, ValueId b) {
  ValueId args[] = {a, b};
  return Current().Record(op, args);
}
ValueId Record(Op op, ValueId a, ValueId b, ValueId c) {
  ValueId args[] = {a, b, c};
  return Current().Record(op, args);
}

Type TypeOf(ValueId v) {
  Tracer::State& s = Current();
  s.Check(v);
  return s.dag.type(v);
}

bool Decide(ValueId cond) { return Current().Decide(cond); }
int KnownCondition(ValueId cond) { return Current().Known(cond); }
void AssumeCondition(ValueId cond, bool value) { Current().Assume(cond, value); }
void ForgetCondition(ValueId cond) { Current().Forget(cond); }
std::vector<ValueId> RecordCond(ValueId pred, std::vector<ValueId> then_values,
                                std::vector<ValueId> else_values) {
  return Current().Cond(pred, std::move(then_values), std::move(else_values));
}

}  // namespace dualcast::jit::trace_detail
