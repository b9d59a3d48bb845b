// KernelSpec: its key (stable across processes: it also names on-disk objects), description and validation.
#include "jit/codegen/kernel_spec.h"

#include <cmath>

#include <cctype>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "jit/codegen/broadcast_layout.h"
#include "jit/error.h"
#include "jit/ir/hash.h"
#include "jit/ir/verify.h"

namespace dualcast::jit {

const char* TargetName(Target target) {
  switch (target) {
    case Target::kCpu: return "cpu";
    case Target::kCuda: return "cuda";
  }
  return "unknown";
}

KernelSpec KernelSpec::For(std::shared_ptr<const Function> function, Type dtype, Target target,
                           const BroadcastLayout& layout, uint64_t function_hash) {
  KernelSpec spec;
  spec.function_hash = function_hash != 0 ? function_hash : StructuralHash(*function);
  spec.write.assign(function->num_outputs(), true);
  spec.function = std::move(function);
  spec.dtype = dtype;
  spec.target = target;
  spec.rank = layout.rank();
  spec.input_broadcast = layout.in_broadcast;
  spec.inner_contiguous = layout.inner_contiguous;
  if (!layout.inner_contiguous) spec.strided_inner = layout.strided_inner;
  spec.hints = spec.function->hints;
  return spec;
}

const char* ReduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return "sum";
    case ReduceOp::kProd: return "prod";
    case ReduceOp::kMax: return "max";
    case ReduceOp::kMin: return "min";
  }
  return "?";
}

double ReduceIdentity(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return 0.0;
    case ReduceOp::kProd: return 1.0;
    case ReduceOp::kMax: return -HUGE_VAL;
    case ReduceOp::kMin: return HUGE_VAL;
  }
  return 0.0;
}

double ReduceCombine(ReduceOp op, double a, double b) {
  switch (op) {
    case ReduceOp::kSum: return a + b;
    case ReduceOp::kProd: return a * b;
    // b wins when it is NaN or strictly beyond a; a NaN a stays.
    case ReduceOp::kMax: return (b > a || b != b) ? b : a;
    case ReduceOp::kMin: return (b < a || b != b) ? b : a;
  }
  return a + b;
}

bool KernelSpec::HasReductions() const {
  for (uint32_t bits : output_reduce) {
    if (bits != 0) return true;
  }
  for (bool a : accumulate) {
    if (a) return true;
  }
  return false;
}

uint64_t KernelSpec::Key() const {
  // Seedless (hash.h), so keys stay valid across runs: absl::Hash would not.
  StableMixer m;
  m.Mix(function_hash != 0 || function == nullptr ? function_hash : StructuralHash(*function));
  m.Mix(static_cast<uint64_t>(dtype));
  m.Mix(static_cast<uint64_t>(target));
  m.Mix(static_cast<uint64_t>(rank));
  m.Mix(input_broadcast.size());
  for (uint32_t bits : input_broadcast) m.Mix(bits);
  m.Mix(write.size());
  // Pack the write mask 64 outputs at a time.
  uint64_t word = 0;
  for (size_t i = 0; i < write.size(); ++i) {
    if (write[i]) word |= uint64_t{1} << (i % 64);
    if (i % 64 == 63) {
      m.Mix(word);
      word = 0;
    }
  }
  m.Mix(word);
  m.Mix(inner_contiguous ? 1 : 0);
  // Mixed only when strided, so contiguous specs keep their keys (and on-disk objects).
  if (!inner_contiguous) {
    m.Mix(0x7374726964650001ULL);  // "stride" + the per-operand strided codegen version
    m.Mix(strided_inner.size());
    for (bool s : strided_inner) m.Mix(s ? 1 : 0);
  }
  m.Mix(hints.fast_math ? 1 : 0);
  m.Mix(static_cast<uint64_t>(hints.vector_width));
  // Mixed only when present, so specs without reductions keep their keys (and on-disk objects).
  if (HasReductions()) {
    m.Mix(0x7265647563650004ULL);  // "reduce" + the reduced-output codegen version (bump on change)
    m.Mix(output_reduce.size());
    for (uint32_t bits : output_reduce) m.Mix(bits);
    m.Mix(accumulate.size());
    for (bool a : accumulate) m.Mix(a ? 1 : 0);
    // Mixed only when some output is not a sum, so sum kernels keep their keys.
    bool any_op = false;
    for (ReduceOp op : output_reduce_op) any_op |= op != ReduceOp::kSum;
    if (any_op) {
      m.Mix(0x7265647563656f70ULL);  // "reduceop"
      for (ReduceOp op : output_reduce_op) m.Mix(static_cast<uint64_t>(op));
    }
  }
  return m.Finish();
}

std::string KernelSpec::Describe() const {
  // Broadcast bits outer dim first, as a reader reads shapes.
  std::string bcast;
  for (size_t i = 0; i < input_broadcast.size(); ++i) {
    if (i > 0) bcast += ',';
    for (int d = 0; d < rank; ++d) bcast += (input_broadcast[i] >> d & 1) ? '1' : '0';
  }
  std::string written;
  for (bool w : write) written += w ? '1' : '0';
  std::string name = function ? function->name : std::string("?");
  std::string reductions;
  if (HasReductions()) {
    reductions = " reduce [";
    for (size_t m = 0; m < output_reduce.size(); ++m) {
      if (m > 0) reductions += ',';
      for (int d = 0; d < rank; ++d) reductions += (output_reduce[m] >> d & 1) ? '1' : '0';
    }
    reductions += "] acc ";
    for (bool a : accumulate) reductions += a ? '1' : '0';
    for (size_t m = 0; m < output_reduce_op.size(); ++m) {
      if (output_reduce_op[m] != ReduceOp::kSum) {
        reductions += absl::StrFormat(" out%d %s", m, ReduceOpName(output_reduce_op[m]));
      }
    }
  }
  std::string hinted = hints.fast_math ? " fast-math" : "";
  if (hints.vector_width != 0) hinted += absl::StrFormat(" width %d", hints.vector_width);
  return absl::StrFormat("%s %s %s rank %d bcast [%s] write %s%s%s%s fn %016x", name,
                         TargetName(target), TypeName(dtype), rank, bcast, written,
                         inner_contiguous ? "" : " strided", hinted, reductions, function_hash);
}

std::string KernelSpec::Symbol(uint64_t format_tag) const {
  std::string name;
  for (char c : function == nullptr ? std::string() : function->name) {
    if (name.size() >= 40) break;
    name.push_back(std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
  }
  StableMixer m;
  m.Mix(format_tag);
  m.Mix(Key());
  return absl::StrFormat("dc_%s_%s_%016x", name.empty() ? "kernel" : name, TypeName(dtype),
                         m.Finish());
}

absl::Status KernelSpec::Validate(const char* backend) const {
  const KernelSpec& spec = *this;
  auto Invalid = [&](const std::string& what) {
    std::string name = function ? function->name : "<null>";
    return MakeStatus(ErrorKind::kInternal,
                      absl::StrCat(backend, " kernel '", name, "': invalid KernelSpec: ", what,
                                   " (a bug in the caller that built the spec)"));
  };
  if (spec.function == nullptr) return Invalid("no function");
  const Function& f = *spec.function;
  if (absl::Status s = Verify(f); !s.ok()) {
    return Invalid(absl::StrCat("function fails verification: ", s.message()));
  }
  if (!IsFloat(spec.dtype)) return Invalid("dtype must be f32 or f64");
  if (spec.rank < 0 || spec.rank > kMaxRank) {
    return Invalid(absl::StrFormat("rank %d outside 0..%d", spec.rank, kMaxRank));
  }
  if (!spec.input_broadcast.empty() && spec.input_broadcast.size() != f.num_inputs()) {
    return Invalid(absl::StrFormat("%d broadcast masks for %d inputs",
                                           spec.input_broadcast.size(), f.num_inputs()));
  }
  for (size_t i = 0; i < spec.input_broadcast.size(); ++i) {
    if (spec.rank < 32 && (spec.input_broadcast[i] >> spec.rank) != 0) {
      return Invalid(absl::StrFormat("input %d broadcast mask %#x has bits at or "
                                             "above rank %d", i, spec.input_broadcast[i],
                                             spec.rank));
    }
  }
  if (!spec.write.empty() && spec.write.size() != f.num_outputs()) {
    return Invalid(absl::StrFormat("write mask of %d for %d outputs", spec.write.size(),
                                           f.num_outputs()));
  }
  if (!spec.output_reduce.empty() && spec.output_reduce.size() != f.num_outputs()) {
    return Invalid(absl::StrFormat("%d reduce masks for %d outputs", spec.output_reduce.size(),
                                   f.num_outputs()));
  }
  if (!spec.output_reduce_op.empty() && spec.output_reduce_op.size() != f.num_outputs()) {
    return Invalid(absl::StrFormat("%d reduce ops for %d outputs", spec.output_reduce_op.size(),
                                   f.num_outputs()));
  }
  if (!spec.accumulate.empty() && spec.accumulate.size() != f.num_outputs()) {
    return Invalid(absl::StrFormat("%d accumulate flags for %d outputs", spec.accumulate.size(),
                                   f.num_outputs()));
  }
  for (size_t m = 0; m < f.num_outputs(); ++m) {
    if (spec.rank < 32 && (spec.reduces(m) >> spec.rank) != 0) {
      return Invalid(absl::StrFormat("output %d reduce mask %#x has bits at or above rank %d", m,
                                     spec.reduces(m), spec.rank));
    }
    if ((spec.reduces(m) != 0 || spec.accumulates(m)) && !spec.writes(m)) {
      return Invalid(absl::StrFormat("output %d is reduced or accumulated but not written", m));
    }
    if (spec.reduce_op(m) != ReduceOp::kSum && (spec.reduces(m) == 0 || spec.accumulates(m))) {
      return Invalid(absl::StrFormat("output %d is a %s reduction, which must reduce some dim and "
                                     "cannot accumulate (only sums add into their destination)",
                                     m, ReduceOpName(spec.reduce_op(m))));
    }
  }
  for (size_t i = 0; i < f.num_inputs(); ++i) {
    if (!IsFloat(f.input_type(i))) {
      return Invalid(absl::StrFormat("input %d is %s; kernels take floats", i,
                                             TypeName(f.input_type(i))));
    }
  }
  return absl::OkStatus();
}


}  // namespace dualcast::jit
