// broadcast(): eager validation of a call, then a pending LazyNode (or, under Unfused, the result).
#include "dualcast/broadcast.hpp"

#include <algorithm>
#include <cstring>
#include <tuple>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "dualcast/detail/execute.hpp"
#include "dualcast/detail/lazy.hpp"
#include "jit/codegen/broadcast_layout.h"
#include "jit/error.h"
#include "runtime/array_pool.h"
#include "runtime/grad_kernels.h"
#include "runtime/backend.h"
#include "runtime/lazy_ready.h"
#include "runtime/pending_readers.h"

namespace dualcast {
namespace {
thread_local int unfused_depth = 0;
}  // namespace

Unfused::Unfused() { ++unfused_depth; }
Unfused::~Unfused() { --unfused_depth; }
bool Unfused::active() { return unfused_depth > 0; }

namespace detail {

namespace {

// Device copies of numbers, by (device, element type, bit pattern). A number
// on a GPU is written on the host and copied over, and that copy waits for the
// device; a training step passes the same few numbers (the seed 1, a mean's 1/N,
// a fill's 0) every step, so each is copied once and then shared. Shared arrays
// are only ever kernel inputs (nothing writes into an operand), so sharing is
// safe. Bounded: past kMaxNumbers distinct values the table starts afresh.
class DeviceNumbers {
 public:
  // `make_host` writes the number into a new rank-0 host array (called on a miss only).
  template <class MakeHost>
  std::shared_ptr<ArrayImpl> Get(double value, DType dtype, Device device, const MakeHost& make_host) {
    uint64_t bits = 0;
    std::memcpy(&bits, &value, sizeof bits);
    const Key key{device.index(), dtype, bits};
    {
      absl::MutexLock lock(&mu_);
      if (auto it = numbers_.find(key); it != numbers_.end()) return it->second;
    }
    std::shared_ptr<ArrayImpl> copy = BackendFor(device).Transfer(*make_host(), device);
    absl::MutexLock lock(&mu_);
    if (numbers_.size() >= kMaxNumbers) numbers_.clear();
    return numbers_.try_emplace(key, std::move(copy)).first->second;
  }

 private:
  static constexpr size_t kMaxNumbers = 4096;
  using Key = std::tuple<int, DType, uint64_t>;
  absl::Mutex mu_;
  absl::flat_hash_map<Key, std::shared_ptr<ArrayImpl>> numbers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

// A rank-0 array holding a number operand. Written on the host and copied in
// bulk to a GPU (a host pointer write into device memory would crash), once
// per distinct number and device.
std::shared_ptr<ArrayImpl> NumberArray(double value, DType dtype, Device device) {
  auto make_host = [&] {
    std::shared_ptr<ArrayImpl> a = NewArray(dtype, {}, Device::cpu());
    if (dtype == DType::kF32) {
      *static_cast<float*>(a->data()) = static_cast<float>(value);
    } else {
      *static_cast<double*>(a->data()) = value;
    }
    return a;
  };
  if (device.is_cpu()) return make_host();
  static auto* numbers = new DeviceNumbers;  // leaked: device memory must outlive static destructors
  return numbers->Get(value, dtype, device, make_host);
}

namespace {

// The first array argument, after checking handles, element types and devices.
size_t CheckOperands(const std::string& name, const std::vector<Operand>& operands, DType dtype) {
  size_t first = operands.size();
  for (size_t i = 0; i < operands.size(); ++i) {
    const Operand& op = operands[i];
    if (op.kind == Operand::kEmptyHandle) {
      throw Error(ErrorKind::kInvalidArgument,
                  absl::StrCat(name, ": argument ", i + 1,
                               " is an empty Array handle (default-constructed); pass an array"));
    }
    if (op.kind != Operand::kArray) continue;
    if (first == operands.size()) first = i;
    const ArrayImpl& a = *op.array;
    if (a.dtype != dtype) {
      throw Error(ErrorKind::kType,
                  absl::StrCat(name, ": argument ", i + 1, " is ", DTypeName(a.dtype),
                               " but argument ", first + 1, " is ", DTypeName(dtype),
                               "; all array arguments of a broadcast must have one element type"));
    }
    const Device& d0 = operands[first].array->device;
    if (a.device != d0) {
      throw Error(ErrorKind::kDevice,
                  absl::StrCat(name, ": argument ", i + 1, " is on ", a.device.name(),
                               " but argument ", first + 1, " is on ", d0.name(),
                               "; move the arrays to one device with .to(device) first"));
    }
  }
  if (first == operands.size()) {
    throw Error(ErrorKind::kArity, name + ": a broadcast needs at least one array argument");
  }
  return first;
}

}  // namespace

std::vector<std::shared_ptr<ArrayImpl>> Broadcast(const Kernel& k, std::vector<Operand> operands,
                                                  DType dtype, bool single_output) {
  const std::string& name = k.name();
  const size_t first = CheckOperands(name, operands, dtype);
  const Device device = operands[first].array->device;

  std::shared_ptr<const jit::Function> fn = k.function(static_cast<int>(operands.size()), dtype);
  const size_t num_outputs = fn->num_outputs();
  if (single_output && num_outputs != 1) {
    throw Error(ErrorKind::kArity,
                absl::StrCat(name, ": the kernel returns ", num_outputs,
                             " outputs; use broadcast_n to get one array per output"));
  }

  // The common case, every array argument of one shape (numbers are rank 0),
  // needs no shape lists: this runs on every call.
  const std::vector<int64_t>* common = &operands[first].array->shape;
  bool same = std::none_of(common->begin(), common->end(), [](int64_t s) { return s < 0; });
  for (const Operand& op : operands) same = same && (op.kind != Operand::kArray || op.array->shape == *common);
  std::vector<int64_t> shape;
  if (same && common->size() <= static_cast<size_t>(jit::kMaxRank)) {
    shape = *common;
  } else {
    std::vector<std::vector<int64_t>> shapes, strides;
    for (const Operand& op : operands) {
      shapes.push_back(op.kind == Operand::kArray ? op.array->shape : std::vector<int64_t>{});
      strides.push_back(op.kind == Operand::kArray ? op.array->strides : std::vector<int64_t>{});
    }
    shape = BroadcastShape(name, shapes);
    // Also catches layouts above the kernels' rank limit now rather than at the
    // read (merging never raises the rank, so only a rank above it can fail).
    if (shape.size() > static_cast<size_t>(jit::kMaxRank)) {
      absl::StatusOr<jit::BroadcastLayout> layout = jit::MergeBroadcast(shapes, strides, name);
      if (!layout.ok()) ThrowStatus(layout.status());
    }
  }

  auto node = std::allocate_shared<LazyNode>(BlockAllocator<LazyNode>{});
  node->name = name;
  node->shape = std::move(shape);
  node->dtype = dtype;
  node->device = device;
  node->inputs.reserve(operands.size());
  node->constant.reserve(operands.size());
  for (Operand& op : operands) {  // ours (by value): the arrays move into the node
    const bool number = op.kind == Operand::kNumber;
    const double value = dtype == DType::kF32 ? static_cast<double>(op.number_f32) : op.number;
    node->inputs.push_back(number ? NumberArray(value, dtype, device) : std::move(op.array));
    node->constant.push_back(number);
  }

  // Read through the flags' protocol: another thread may be computing an input now.
  absl::InlinedVector<PendingState, 4> states;  // no allocation for the usual few inputs
  for (const auto& in : node->inputs) states.push_back(ReadPendingState(*in));
  auto compute = [&](size_t i) {
    Materialize(*node->inputs[i]);
    states[i] = ReadPendingState(*node->inputs[i]);  // computed: one load
  };
  // A pending reduction cuts the group: it is computed (fused into its own
  // producer) before this broadcast reads it.
  for (size_t i = 0; i < states.size(); ++i) {
    if (states[i].node != nullptr && states[i].node->reduce != nullptr) compute(i);
  }
  // Evaluate pending arguments first when fusion is off, or when the group
  // this node would join has grown past the cap.
  absl::flat_hash_set<const LazyNode*> seen;
  const long own = std::max<long>(1, static_cast<long>(fn->insts.size() - fn->num_inputs()));
  long estimate = own, nodes = 1;
  for (const PendingState& state : states) {
    if (state.node != nullptr && seen.insert(state.node.get()).second) {
      estimate += state.node->group_estimate;
      nodes += state.node->group_nodes;
    }
  }
  if (Unfused::active() || estimate > kMaxFusedInsts || nodes > kMaxFusedNodes) {
    for (size_t i = 0; i < states.size(); ++i) compute(i);
    estimate = own;
    nodes = 1;
  }
  node->group_estimate = static_cast<int>(estimate);
  node->group_nodes = static_cast<int>(nodes);
  node->function = std::move(fn);

  std::vector<std::shared_ptr<ArrayImpl>> outputs;
  outputs.reserve(num_outputs);
  node->outputs.reserve(num_outputs);
  for (size_t m = 0; m < num_outputs; ++m) {
    auto out = PooledArrayImpl();
    out->dtype = dtype;
    out->device = device;
    SetContiguousShape(*out, node->shape);
    out->pending = node;
    out->pending_output = static_cast<int>(m);
    node->outputs.push_back(out);
    outputs.push_back(std::move(out));
  }
  if (Unfused::active()) {
    Materialize(*outputs[0]);  // computed now: no write can reach it pending
  } else {
    NotePendingNode(node, states);
  }
  return outputs;
}

}  // namespace detail
}  // namespace dualcast
