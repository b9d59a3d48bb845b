// Emits a kernel: its entry point unpacking KernelArgs, the loop nest around the printed Function, and its alias scopes.
#include "jit/cpu/llvm_kernel.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "jit/codegen/codegen.h"
#include "jit/cpu/inline_exp.h"
#include "jit/cpu/interleave.h"
#include "jit/cpu/llvm_printer.h"
#include "jit/cpu/sink_uniform.h"
#include "jit/cpu/splat_loads.h"
#include "jit/cpu/vector_math.h"
#include "jit/error.h"
#include "jit/ir/verify.h"
#include "jit/passes/hoist_common.h"
#include "llvm/Analysis/ValueTracking.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/MDBuilder.h"
#include "llvm/IR/Module.h"

namespace dualcast::jit::cpu {
namespace {

// A stride that is not a parameter: compiled in as 0 (broadcast) or 1 (contiguous inner dim).
constexpr int kZeroStride = -1;
constexpr int kUnitStride = -2;

// Where each parameter of the body function comes from in KernelArgs.
enum class Field { kInputPtr, kOutputPtr, kBegin, kEnd, kSize, kInStride, kOutStride };
struct Param {
  Field field;
  int operand = 0;
  int dim = 0;
};

class KernelEmitter {
 public:
  KernelEmitter(const KernelSpec& spec, const std::string& symbol, llvm::LLVMContext& ctx)
      : spec_(spec),
        f_(*spec.function),
        symbol_(symbol),
        ctx_(ctx),
        module_(std::make_unique<llvm::Module>(symbol, ctx)),
        rank_(spec.rank),
        i64_(llvm::Type::getInt64Ty(ctx)),
        ptr_(llvm::PointerType::getUnqual(ctx)),
        elem_(LlvmType(ctx, spec.dtype)),
        lanes_(KernelStepLanes(spec)),
        acc_lanes_(spec.hints.vector_width != 0 ? lanes_ : HostLanes(spec.dtype)) {
    PlanParams();
  }

  std::unique_ptr<llvm::Module> Build() {
    EmitKernel();
    AddAliasScopes();
    return std::move(module_);
  }

 private:
  bool Broadcast(size_t input, int dim) const {
    return !spec_.input_broadcast.empty() && ((spec_.input_broadcast[input] >> dim) & 1u);
  }
  // Layout operand k (the inputs, then the written outputs) reads the innermost dim with stride 1.
  bool UnitInner(size_t operand, int dim) const {
    return dim == rank_ - 1 && !spec_.StridedInner(operand);
  }
  // A reduced output adds into a double scratch buffer, contiguous over its kept dims.
  bool Reduced(size_t m) const { return spec_.reduces(m) != 0; }
  bool ReducedAlong(size_t m, int dim) const { return (spec_.reduces(m) >> dim) & 1u; }

  int AddParam(Field field, int operand = 0, int dim = 0) {
    params_.push_back(Param{field, operand, dim});
    return static_cast<int>(params_.size()) - 1;
  }

  void PlanParams() {
    const size_t n_in = f_.num_inputs(), n_out = f_.num_outputs();
    for (size_t i = 0; i < n_in; ++i) in_ptr_.push_back(AddParam(Field::kInputPtr, i));
    for (size_t m = 0; m < n_out; ++m) {
      out_ptr_.push_back(spec_.writes(m) ? AddParam(Field::kOutputPtr, m) : -1);
    }
    begin_ = AddParam(Field::kBegin);
    end_ = AddParam(Field::kEnd);
    size_.assign(rank_, -1);
    for (int d = 1; d < rank_; ++d) size_[d] = AddParam(Field::kSize, 0, d);
    in_stride_.assign(n_in, std::vector<int>(rank_, kZeroStride));
    for (size_t i = 0; i < n_in; ++i) {
      for (int d = 0; d < rank_; ++d) {
        if (Broadcast(i, d)) continue;
        in_stride_[i][d] = UnitInner(i, d) ? kUnitStride : AddParam(Field::kInStride, i, d);
      }
    }
    out_stride_.assign(n_out, std::vector<int>(rank_, kZeroStride));
    size_t operand = n_in;  // the output's place among the layout's operands
    for (size_t m = 0; m < n_out; ++m) {
      if (out_ptr_[m] < 0) continue;
      const size_t this_operand = operand++;
      for (int d = 0; d < rank_; ++d) {
        if (Reduced(m)) {
          out_stride_[m][d] = ReducedAlong(m, d)   ? kZeroStride
                              : d == rank_ - 1 ? kUnitStride
                                               : AddParam(Field::kOutStride, m, d);
          continue;
        }
        out_stride_[m][d] = UnitInner(this_operand, d) ? kUnitStride : AddParam(Field::kOutStride, m, d);
      }
    }
  }

  // extern "C" void symbol(const KernelArgs* args): its entry block loads
  // what the spec does not compile in (params_, in that order), then the
  // loop nest. One function, not an entry calling a noalias body that the
  // optimiser inlines: the inliner's copy of the body was 17% of the
  // optimiser's time on the HM-LSTM jvp kernel, and AddAliasScopes gives the
  // same alias facts.
  void EmitKernel() {
    auto* type = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx_), {ptr_}, false);
    kernel_ = llvm::Function::Create(type, llvm::Function::ExternalLinkage, symbol_, *module_);
    kernel_->addFnAttr(llvm::Attribute::NoUnwind);
    AddVectorWidthAttrs(kernel_);
    kernel_->addParamAttr(0, llvm::Attribute::NoCapture);
    kernel_->addParamAttr(0, llvm::Attribute::ReadOnly);
    kernel_->getArg(0)->setName("args");
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx_, "entry", kernel_));
    // Field order of KernelArgs (kernel_abi.h).
    auto* args_type = llvm::StructType::get(ctx_, {ptr_, ptr_, ptr_, ptr_, ptr_, i64_, i64_});
    auto field = [&](unsigned k, llvm::Type* t, const char* name) {
      return b.CreateLoad(t, b.CreateStructGEP(args_type, kernel_->getArg(0), k), name);
    };
    llvm::Value* sizes = field(0, ptr_, "sizes");
    llvm::Value* inputs = field(1, ptr_, "inputs");
    llvm::Value* in_strides = field(2, ptr_, "in_strides");
    llvm::Value* outputs = field(3, ptr_, "outputs");
    llvm::Value* out_strides = field(4, ptr_, "out_strides");
    auto at = [&](llvm::Type* t, llvm::Value* base, int index, const std::string& name = "") {
      return b.CreateLoad(t, b.CreateConstInBoundsGEP1_64(t, base, index), name);
    };
    for (const Param& p : params_) {
      switch (p.field) {
        case Field::kInputPtr:
          param_values_.push_back(at(ptr_, inputs, p.operand, absl::StrCat("in", p.operand)));
          break;
        case Field::kOutputPtr:
          param_values_.push_back(at(ptr_, outputs, p.operand, absl::StrCat("out", p.operand)));
          break;
        case Field::kBegin: param_values_.push_back(field(5, i64_, "begin")); break;
        case Field::kEnd: param_values_.push_back(field(6, i64_, "end")); break;
        case Field::kSize: param_values_.push_back(at(i64_, sizes, p.dim)); break;
        case Field::kInStride:
          param_values_.push_back(at(i64_, in_strides, p.operand * rank_ + p.dim));
          break;
        case Field::kOutStride:
          param_values_.push_back(at(i64_, out_strides, p.operand * rank_ + p.dim));
          break;
      }
    }
    std::vector<llvm::Value*> in_off(f_.num_inputs(), nullptr);
    std::vector<llvm::Value*> out_off(f_.num_outputs(), nullptr);
    if (rank_ == 0) {
      // The single element exists in chunk [begin, end) when begin <= 0 < end.
      llvm::Value* zero = b.getInt64(0);
      llvm::Value* in_chunk = b.CreateAnd(b.CreateICmpSLE(Arg(begin_), zero),
                                          b.CreateICmpSGT(Arg(end_), zero));
      auto* element = llvm::BasicBlock::Create(ctx_, "element", kernel_);
      auto* done = llvm::BasicBlock::Create(ctx_, "done", kernel_);
      b.CreateCondBr(in_chunk, element, done);
      b.SetInsertPoint(element);
      // Lane 0 alone, computed by the same vector code as any array element.
      std::vector<llvm::Constant*> lane0(lanes_, b.getFalse());
      lane0[0] = b.getTrue();
      const Row bases = RowBases(b, Row{in_off, out_off});
      EmitElement(b, bases.in, bases.out, /*i=*/nullptr, /*d=*/-1, llvm::ConstantVector::get(lane0),
                  /*full=*/nullptr);
      b.CreateBr(done);
      b.SetInsertPoint(done);
    } else {
      EmitLoop(b, 0, in_off, out_off);
    }
    b.CreateRetVoid();
    SinkIntoUniformBranches(*kernel_, uniform_branches_, SinkContext{input_copies_, InputPointers()});
    InlineExpCalls(*module_);  // after the sinking, which moves each exp as one call
    if (HostVectorBits() < 512) ReadSplatsFromMemory(*module_);
  }

  // The contract of the header (outputs overlap nothing else; inputs are
  // only read) as scoped-alias metadata, one scope per input and written
  // output: every access through such a pointer (also through a select of
  // it and a stack copy of an input's tail) is in its pointer's scope and
  // `noalias` with all the others, so LICM may hoist the loads of inputs
  // broadcast along the inner loop past the stores and no alias checks are
  // needed. What the inliner derived from noalias parameters, without copying
  // the function.
  void AddAliasScopes() {
    std::vector<llvm::Value*> pointers = InputPointers();
    for (int k : out_ptr_) {
      if (k >= 0) pointers.push_back(Arg(k));
    }
    llvm::MDBuilder md(ctx_);
    llvm::MDNode* domain = md.createAnonymousAliasScopeDomain(symbol_);
    std::vector<llvm::Metadata*> scopes;
    for (llvm::Value* p : pointers) {
      scopes.push_back(md.createAnonymousAliasScope(domain, p->getName()));
    }
    for (llvm::BasicBlock& block : *kernel_) {
      for (llvm::Instruction& inst : block) {
        llvm::Value* pointer = AccessedPointer(inst);
        if (pointer == nullptr) continue;
        llvm::SmallVector<const llvm::Value*, 4> objects;
        llvm::getUnderlyingObjects(pointer, objects);
        // As the inliner does: `noalias` with every pointer the access is
        // not based on; in the scopes of the pointers it is based on only
        // when it is based on nothing else (a read through a select of an
        // input and its stack copy may read the copy, which the stores that
        // fill it are `noalias` with every scope to say).
        std::vector<bool> based_on(pointers.size(), false);
        bool known = !objects.empty(), only_pointers = true;
        for (const llvm::Value* object : objects) {
          auto it = std::find(pointers.begin(), pointers.end(), object);
          if (it != pointers.end()) {
            based_on[static_cast<size_t>(it - pointers.begin())] = true;
          } else if (llvm::isa<llvm::AllocaInst>(object)) {
            only_pointers = false;  // the kernel's own stack
          } else {
            known = false;  // KernelArgs itself: no claim
            break;
          }
        }
        if (!known) continue;
        std::vector<llvm::Metadata*> own, others;
        for (size_t k = 0; k < pointers.size(); ++k) (based_on[k] ? own : others).push_back(scopes[k]);
        if (only_pointers && !own.empty()) {
          inst.setMetadata(llvm::LLVMContext::MD_alias_scope, llvm::MDNode::get(ctx_, own));
        }
        if (!others.empty()) inst.setMetadata(llvm::LLVMContext::MD_noalias, llvm::MDNode::get(ctx_, others));
      }
    }
  }

  // The pointer (or vector of pointers) a memory access goes through, or null.
  static llvm::Value* AccessedPointer(llvm::Instruction& inst) {
    if (auto* load = llvm::dyn_cast<llvm::LoadInst>(&inst)) return load->getPointerOperand();
    if (auto* store = llvm::dyn_cast<llvm::StoreInst>(&inst)) return store->getPointerOperand();
    auto* call = llvm::dyn_cast<llvm::IntrinsicInst>(&inst);
    if (call == nullptr) return nullptr;
    switch (call->getIntrinsicID()) {
      case llvm::Intrinsic::masked_load:
      case llvm::Intrinsic::masked_gather: return call->getArgOperand(0);
      case llvm::Intrinsic::masked_store:
      case llvm::Intrinsic::masked_scatter: return call->getArgOperand(1);
      default: return nullptr;
    }
  }

  // A row's last step alone is partial: the full side is laid out as the fall-through.
  llvm::MDNode* FullIsLikely() const { return llvm::MDBuilder(ctx_).createBranchWeights(1000, 1); }

  llvm::Value* Arg(int param) const { return param_values_[static_cast<size_t>(param)]; }

  // Reduced output m's combining op on double scalars or vectors (see
  // ReduceCombine: max and min let a NaN through, in any position).
  llvm::Value* Combine(llvm::IRBuilder<>& b, size_t m, llvm::Value* acc, llvm::Value* v) const {
    switch (spec_.reduce_op(m)) {
      case ReduceOp::kSum: return b.CreateFAdd(acc, v);
      case ReduceOp::kProd: return b.CreateFMul(acc, v);
      case ReduceOp::kMax:
        return b.CreateSelect(b.CreateOr(b.CreateFCmpOGT(v, acc), b.CreateFCmpUNO(v, v)), v, acc);
      case ReduceOp::kMin:
        return b.CreateSelect(b.CreateOr(b.CreateFCmpOLT(v, acc), b.CreateFCmpUNO(v, v)), v, acc);
    }
    return b.CreateFAdd(acc, v);
  }
  // The step's values (lanes_ wide) into a row accumulator of acc_lanes_: one
  // host vector after another when the step is interleaved, so each lane
  // takes the same elements in the same order as at one vector per step.
  llvm::Value* Accumulate(llvm::IRBuilder<>& b, size_t m, llvm::Value* acc, llvm::Value* values) const {
    if (acc_lanes_ == lanes_) return Combine(b, m, acc, values);
    for (int first = 0; first < lanes_; first += acc_lanes_) {
      acc = Combine(b, m, acc, SliceLanes(b, values, first, acc_lanes_));
    }
    return acc;
  }
  llvm::Constant* Identity(size_t m, llvm::Type* type) const {
    return llvm::ConstantFP::get(type, ReduceIdentity(spec_.reduce_op(m)));
  }

  // offset + i * stride for one operand, with the compiled-in 0 and 1 folded away.
  llvm::Value* Advance(llvm::IRBuilder<>& b, llvm::Value* offset, llvm::Value* i, int stride) {
    if (stride == kZeroStride) return offset;
    llvm::Value* step =
        stride == kUnitStride ? i : b.CreateMul(i, Arg(stride), "", false, /*HasNSW=*/true);
    return offset == nullptr ? step : b.CreateAdd(offset, step, "", false, /*HasNSW=*/true);
  }

  // The address of element i of a row starting at `row_base` (i null: the
  // row's first, as for rank 0).
  llvm::Value* ElementAddress(llvm::IRBuilder<>& b, llvm::Type* type, llvm::Value* row_base,
                              llvm::Value* i, int stride) {
    llvm::Value* step = i == nullptr ? nullptr : Advance(b, nullptr, i, stride);
    return step == nullptr ? row_base : b.CreateInBoundsGEP(type, row_base, step);
  }

  // One element, the same in every lane: how a broadcast input is read.
  llvm::Value* LoadSplat(llvm::IRBuilder<>& b, llvm::Value* address, const std::string& name) {
    return b.CreateVectorSplat(lanes_, b.CreateLoad(elem_, address), name);
  }

  // The input pointers, in input order (the SinkContext's and the first
  // alias scopes').
  std::vector<llvm::Value*> InputPointers() const {
    std::vector<llvm::Value*> pointers;
    for (int k : in_ptr_) pointers.push_back(Arg(k));
    return pointers;
  }

  // Explicit vector width: the wider the vector type, the more LLVM's x86
  // backend must be told it may use (512-bit ops are otherwise split in two
  // on CPUs tuned to prefer 256).
  void AddVectorWidthAttrs(llvm::Function* fn) const {
    const std::string bits = std::to_string(HostVectorBits());
    fn->addFnAttr("min-legal-vector-width", bits);
    fn->addFnAttr("prefer-vector-width", bits);
  }

  // The loops over dims 0..R-2 step by 1; the innermost steps by W lanes.
  // Per input and output: its element offset at the start of one row of the
  // inner dim, or (after RowBases) its address there.
  struct Row {
    std::vector<llvm::Value*> in, out;
  };

  // Outputs summed along the dim outside the inner one but kept along the
  // inner one: their scratch row is read and written once per kRowBlock
  // rows instead of once per row (the double scratch traffic, not the
  // arithmetic, bounds such column sums). Only when no output is summed along
  // the inner dim, whose per-row accumulators the block would multiply.
  static constexpr int kRowBlock = 4;
  std::vector<bool> BlockedOutputs() const {
    std::vector<bool> blocked(f_.num_outputs(), false);
    if (rank_ < 2) return blocked;
    bool any = false;
    for (size_t m = 0; m < blocked.size(); ++m) {
      if (out_ptr_[m] < 0) continue;
      if (ReducedAlong(m, rank_ - 1)) return std::vector<bool>(blocked.size(), false);
      blocked[m] = ReducedAlong(m, rank_ - 2);
      any |= blocked[m];
    }
    return any ? blocked : std::vector<bool>(blocked.size(), false);
  }

  // Dim rank-2 in blocks of kRowBlock rows from `lo` (so the grouping
  // depends only on the chunk's begin, which the sizes fix), the rows left
  // over one at a time. In a block, a blocked output's row values are added
  // in row order, then into the scratch once.
  void EmitBlockedRows(llvm::IRBuilder<>& b, int d, const std::vector<llvm::Value*>& in_off,
                       const std::vector<llvm::Value*>& out_off, const std::vector<bool>& blocked) {
    llvm::Value* lo = d == 0 ? Arg(begin_) : b.getInt64(0);
    llvm::Value* hi = d == 0 ? Arg(end_) : Arg(size_[d]);
    llvm::BasicBlock* preheader = b.GetInsertBlock();
    auto* header = llvm::BasicBlock::Create(ctx_, absl::StrCat("dim", d, ".blocks"), kernel_);
    auto* body = llvm::BasicBlock::Create(ctx_, absl::StrCat("dim", d, ".block"), kernel_);
    auto* rest = llvm::BasicBlock::Create(ctx_, absl::StrCat("dim", d, ".rest"), kernel_);
    b.CreateBr(header);
    b.SetInsertPoint(header);
    llvm::PHINode* i = b.CreatePHI(i64_, 2, absl::StrCat("i", d, ".block"));
    i->addIncoming(lo, preheader);
    llvm::Value* block_end = b.CreateAdd(i, b.getInt64(kRowBlock), "", false, /*HasNSW=*/true);
    b.CreateCondBr(b.CreateICmpSLE(block_end, hi), body, rest);
    b.SetInsertPoint(body);
    std::vector<Row> rows(kRowBlock);
    for (int r = 0; r < kRowBlock; ++r) {
      llvm::Value* row = r == 0 ? i : b.CreateAdd(i, b.getInt64(r), "", false, /*HasNSW=*/true);
      for (size_t k = 0; k < in_off.size(); ++k) rows[r].in.push_back(Advance(b, in_off[k], row, in_stride_[k][d]));
      for (size_t m = 0; m < out_off.size(); ++m) {
        rows[r].out.push_back(Advance(b, out_off[m], row, out_stride_[m][d]));
      }
    }
    EmitInnerLoop(b, rows, blocked);
    i->addIncoming(block_end, b.GetInsertBlock());
    b.CreateBr(header);
    b.SetInsertPoint(rest);
    EmitLoop(b, d, in_off, out_off, /*lo=*/i);
  }

  // Each operand's address at the start of a row (its pointer advanced by
  // the row's offset; null for an output that is not written), computed
  // once per row, so that the inner loop adds only i * stride. Without this
  // the row's offset is added to i in every iteration, and with loop
  // strength reduction off those sums (one per operand) were reloaded from
  // the stack each iteration: 6-9% of the rows kernels, which only
  // InstCombine's GEP folding used to win back.
  Row RowBases(llvm::IRBuilder<>& b, const Row& offsets) {
    auto base = [&](int param, llvm::Value* offset, llvm::Type* type) -> llvm::Value* {
      if (param < 0) return nullptr;
      return offset == nullptr ? Arg(param) : b.CreateInBoundsGEP(type, Arg(param), offset);
    };
    Row bases;
    for (size_t k = 0; k < offsets.in.size(); ++k) bases.in.push_back(base(in_ptr_[k], offsets.in[k], elem_));
    for (size_t m = 0; m < offsets.out.size(); ++m) {
      bases.out.push_back(base(out_ptr_[m], offsets.out[m], Reduced(m) ? b.getDoubleTy() : elem_));
    }
    return bases;
  }

  // The inner dim for one row, or for a block of rows (see EmitBlockedRows).
  void EmitInnerLoop(llvm::IRBuilder<>& b, const std::vector<Row>& row_offsets,
                     const std::vector<bool>& blocked) {
    const int d = rank_ - 1;
    llvm::Value* lo = d == 0 ? Arg(begin_) : b.getInt64(0);
    llvm::Value* hi = d == 0 ? Arg(end_) : Arg(size_[d]);
    std::vector<Row> rows;
    for (const Row& offsets : row_offsets) rows.push_back(RowBases(b, offsets));
    // Inputs broadcast along the inner dim (a row's flag) are loaded and
    // splat here, once per row. Loaded in the body, InstCombine sinks such a
    // load into the one side of a uniform branch that reads it (HM-LSTM's
    // zb, read only when z != 1), where LICM can no longer hoist it: it was
    // then reloaded on every iteration, and keeping its row index in a
    // register there made the register allocator rotate six pointers through
    // the stack around it. A launched kernel has no empty rows, so the load is
    // always in bounds.
    std::vector<std::vector<llvm::Value*>> row_uniform(rows.size());
    for (size_t r = 0; r < rows.size(); ++r) {
      row_uniform[r].assign(rows[r].in.size(), nullptr);
      for (size_t k = 0; k < rows[r].in.size(); ++k) {
        if (in_stride_[k][d] != kZeroStride) continue;
        row_uniform[r][k] = LoadSplat(b, rows[r].in[k], absl::StrCat("x", k));
      }
    }
    llvm::BasicBlock* preheader = b.GetInsertBlock();
    auto* header = llvm::BasicBlock::Create(ctx_, absl::StrCat("dim", d), kernel_);
    auto* body = llvm::BasicBlock::Create(ctx_, absl::StrCat("dim", d, ".body"), kernel_);
    auto* exit = llvm::BasicBlock::Create(ctx_, absl::StrCat("dim", d, ".exit"), kernel_);
    b.CreateBr(header);
    b.SetInsertPoint(header);
    llvm::PHINode* i = b.CreatePHI(i64_, 2, absl::StrCat("i", d));
    i->addIncoming(lo, preheader);
    // Outputs reduced along the inner dim: a V-lane double accumulator per
    // row (V = acc_lanes_), lane k summing elements k, k + V, ... in order.
    std::vector<llvm::PHINode*> acc(f_.num_outputs(), nullptr);
    llvm::Type* acc_type = LlvmType(ctx_, Type::kF64, acc_lanes_);
    for (size_t m = 0; m < acc.size(); ++m) {
      if (out_ptr_[m] < 0 || !ReducedAlong(m, d)) continue;
      acc[m] = b.CreatePHI(acc_type, 2, absl::StrCat("acc", m));
      acc[m]->addIncoming(Identity(m, acc_type), preheader);
    }
    b.CreateCondBr(b.CreateICmpSLT(i, hi), body, exit);
    b.SetInsertPoint(body);
    // Lanes i .. i+W-1; those at or past `hi` are masked off (the tail).
    // Lane k is active when k < hi - i: the count left, clamped to W, in i32
    // lanes is one broadcast and one compare per iteration (64-bit lane
    // indices took five vector instructions, a twentieth of HM-LSTM's body).
    llvm::Value* left = b.CreateSub(hi, i, "left", false, /*HasNSW=*/true);
    left = b.CreateTrunc(b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, left, b.getInt64(lanes_)),
                         b.getInt32Ty());
    llvm::Value* active = b.CreateICmpSGT(b.CreateVectorSplat(lanes_, left), LaneSteps(b, 32), "active");
    llvm::Value* full = b.CreateICmpSLE(
        b.CreateAdd(i, b.getInt64(lanes_), "", false, /*HasNSW=*/true), hi, "full");
    std::vector<llvm::Value*> sums;
    for (size_t r = 0; r < rows.size(); ++r) {
      const Row& row = rows[r];
      std::vector<llvm::Value*> values =
          EmitElement(b, row.in, row.out, i, d, active, full, blocked, row_uniform[r]);
      if (sums.empty()) {
        sums = values;
        continue;
      }
      for (size_t m = 0; m < sums.size(); ++m) {
        if (blocked[m]) sums[m] = Combine(b, m, sums[m], values[m]);
      }
    }
    for (size_t m = 0; m < sums.size(); ++m) {
      if (blocked[m]) EmitScratchAdd(b, m, sums[m], rows[0].out[m], i, d, active, full);
    }
    llvm::Value* next = b.CreateAdd(i, b.getInt64(lanes_), "", false, /*HasNSW=*/true);
    for (size_t m = 0; m < acc.size(); ++m) {
      if (acc[m] != nullptr) acc[m]->addIncoming(Accumulate(b, m, acc[m], sums[m]), b.GetInsertBlock());
    }
    i->addIncoming(next, b.GetInsertBlock());
    b.CreateBr(header);
    b.SetInsertPoint(exit);
    // The row's sum, its lanes added in a fixed pairwise tree (log2 W steps,
    // not W dependent adds: narrow rows stay cheap), added once into the
    // output's scratch element.
    for (size_t m = 0; m < acc.size(); ++m) {
      if (acc[m] == nullptr) continue;
      llvm::Type* f64 = b.getDoubleTy();
      llvm::Value* sum = acc[m];
      for (int width = acc_lanes_; width > 1; width /= 2) {
        std::vector<int> lo(width / 2), hi(width / 2);
        for (int k = 0; k < width / 2; ++k) {
          lo[k] = k;
          hi[k] = k + width / 2;
        }
        sum = Combine(b, m, b.CreateShuffleVector(sum, lo), b.CreateShuffleVector(sum, hi));
      }
      sum = b.CreateExtractElement(sum, uint64_t{0});
      llvm::Value* addr = rows[0].out[m];
      b.CreateStore(Combine(b, m, b.CreateLoad(f64, addr), sum), addr);
    }
  }

  void EmitLoop(llvm::IRBuilder<>& b, int d, const std::vector<llvm::Value*>& in_off,
                const std::vector<llvm::Value*>& out_off, llvm::Value* lo_from = nullptr) {
    const bool inner = d + 1 == rank_;
    if (inner) {
      EmitInnerLoop(b, {Row{in_off, out_off}}, std::vector<bool>(f_.num_outputs(), false));
      return;
    }
    if (d + 2 == rank_ && lo_from == nullptr) {
      const std::vector<bool> blocked = BlockedOutputs();
      for (bool x : blocked) {
        if (!x) continue;
        EmitBlockedRows(b, d, in_off, out_off, blocked);
        return;
      }
    }
    llvm::Value* lo = lo_from != nullptr ? lo_from : d == 0 ? Arg(begin_) : b.getInt64(0);
    llvm::Value* hi = d == 0 ? Arg(end_) : Arg(size_[d]);
    llvm::BasicBlock* preheader = b.GetInsertBlock();
    auto* header = llvm::BasicBlock::Create(ctx_, absl::StrCat("dim", d), kernel_);
    auto* body = llvm::BasicBlock::Create(ctx_, absl::StrCat("dim", d, ".body"), kernel_);
    auto* exit = llvm::BasicBlock::Create(ctx_, absl::StrCat("dim", d, ".exit"), kernel_);
    b.CreateBr(header);
    b.SetInsertPoint(header);
    llvm::PHINode* i = b.CreatePHI(i64_, 2, absl::StrCat("i", d));
    i->addIncoming(lo, preheader);
    b.CreateCondBr(b.CreateICmpSLT(i, hi), body, exit);
    b.SetInsertPoint(body);
    std::vector<llvm::Value*> next_in(in_off.size()), next_out(out_off.size());
    for (size_t k = 0; k < in_off.size(); ++k) next_in[k] = Advance(b, in_off[k], i, in_stride_[k][d]);
    for (size_t m = 0; m < out_off.size(); ++m) {
      next_out[m] = Advance(b, out_off[m], i, out_stride_[m][d]);
    }
    EmitLoop(b, d + 1, next_in, next_out);
    llvm::Value* next = b.CreateAdd(i, b.getInt64(1), "", false, /*HasNSW=*/true);
    i->addIncoming(next, b.GetInsertBlock());
    b.CreateBr(header);
    b.SetInsertPoint(exit);
  }

  // Plain and masked variants of the contiguous operands (`full`: all W lanes
  // active; null: rank 0, masked only), joined by phis of what they return.
  template <class Plain, class Masked>
  std::vector<llvm::Value*> Split(llvm::IRBuilder<>& b, llvm::Value* full, const char* what,
                                  Plain&& plain, Masked&& masked) {
    if (full == nullptr) return masked();
    auto* plain_block = llvm::BasicBlock::Create(ctx_, absl::StrCat(what, ".full"), kernel_);
    auto* masked_block = llvm::BasicBlock::Create(ctx_, absl::StrCat(what, ".tail"), kernel_);
    auto* join = llvm::BasicBlock::Create(ctx_, absl::StrCat(what, ".done"), kernel_);
    b.CreateCondBr(full, plain_block, masked_block, FullIsLikely());
    b.SetInsertPoint(plain_block);
    std::vector<llvm::Value*> a = plain();
    b.CreateBr(join);
    b.SetInsertPoint(masked_block);
    std::vector<llvm::Value*> m = masked();
    b.CreateBr(join);
    b.SetInsertPoint(join);
    std::vector<llvm::Value*> joined;
    for (size_t k = 0; k < a.size(); ++k) {
      llvm::PHINode* phi = b.CreatePHI(a[k]->getType(), 2);
      phi->addIncoming(a[k], plain_block);
      phi->addIncoming(m[k], masked_block);
      joined.push_back(phi);
    }
    return joined;
  }

  // scratch[lanes] += value for reduced output m, kept (unit stride) along
  // the inner dim `d`; the tail's masked load and store skip inactive lanes.
  void EmitScratchAdd(llvm::IRBuilder<>& b, size_t m, llvm::Value* value, llvm::Value* row_base,
                      llvm::Value* i, int d, llvm::Value* active, llvm::Value* full) {
    llvm::Type* f64 = b.getDoubleTy();
    llvm::Type* vec = LlvmType(ctx_, Type::kF64, lanes_);
    const llvm::Align align(8);
    llvm::Value* address = ElementAddress(b, f64, row_base, i, out_stride_[m][d]);
    Split(
        b, full, "scratch",
        [&] {
          b.CreateAlignedStore(Combine(b, m, b.CreateAlignedLoad(vec, address, align), value),
                               address, align);
          return std::vector<llvm::Value*>{};
        },
        [&] {
          llvm::Value* old =
              b.CreateMaskedLoad(vec, address, align, active, llvm::Constant::getNullValue(vec));
          b.CreateMaskedStore(Combine(b, m, old, value), address, align, active);
          return std::vector<llvm::Value*>{};
        });
  }

  // <0, 1, ..., W-1> as i64 (lane offsets) or i32 (lane masks).
  llvm::Value* LaneSteps(llvm::IRBuilder<>& b, unsigned bits = 64) const {
    std::vector<llvm::Constant*> steps;
    for (int k = 0; k < lanes_; ++k) steps.push_back(b.getIntN(bits, static_cast<uint64_t>(k)));
    return llvm::ConstantVector::get(steps);
  }

  // W elements starting at inner index `i` of dim `d` (d < 0: rank 0, lane 0
  // only): every input loaded for the active lanes, the Function printed
  // once, every written output stored for the active lanes. A broadcast
  // input is one scalar load, splat (`preloaded` by the caller, once per row,
  // when it is broadcast along the inner dim); a contiguous one a vector load; a
  // strided one a masked gather. Inactive lanes read nothing and write
  // nothing; their values are computed from zeros and discarded.
  //
  // Contiguous loads are masked loads (one instruction each, so they can sink
  // into uniform branches). `full` (null for rank 0) is true when all W lanes
  // are active: then the contiguous stores are plain vector ones, and only the
  // last iteration of a row takes the masked ones. The branch is duplicated
  // around the stores, never around the Function.
  //
  // Outputs: a reduced output reduced along `d` is not stored; its value
  // (widened to double, inactive lanes 0) is returned at its index for the
  // loop's accumulator (null elsewhere). One reduced along other dims adds
  // into its double scratch; an accumulating one adds into its destination.
  // Outputs marked `deferred` are returned too (widened to double, inactive
  // lanes unspecified) and not stored: the caller adds them (EmitScratchAdd).
  std::vector<llvm::Value*> EmitElement(llvm::IRBuilder<>& b, const std::vector<llvm::Value*>& in_base,
                                        const std::vector<llvm::Value*>& out_base, llvm::Value* i,
                                        int d, llvm::Value* active, llvm::Value* full,
                                        const std::vector<bool>& deferred = {},
                                        const std::vector<llvm::Value*>& preloaded = {}) {
    const llvm::Align align(spec_.dtype == Type::kF32 ? 4 : 8);
    llvm::Type* vec = LlvmType(ctx_, spec_.dtype, lanes_);
    llvm::Constant* zeros = llvm::Constant::getNullValue(vec);
    // The address of lane 0, and for a strided operand the vector of lane addresses.
    auto lane0 = [&](llvm::Value* row_base, int stride) {
      return ElementAddress(b, elem_, row_base, d >= 0 ? i : nullptr, stride);
    };
    auto lane_addresses = [&](llvm::Value* base, int stride) -> llvm::Value* {
      llvm::Value* offsets =
          b.CreateMul(LaneSteps(b), b.CreateVectorSplat(lanes_, Arg(stride)), "", false, true);
      return b.CreateInBoundsGEP(elem_, base, offsets);
    };
    auto stride_of = [&](const std::vector<std::vector<int>>& strides, size_t k) {
      return d >= 0 ? strides[k][d] : kZeroStride;
    };
    auto split = [&](const char* what, auto&& plain, auto&& masked) {
      return Split(b, full, what, plain, masked);
    };

    // Loads, all before the Function. A contiguous input is one plain vector
    // load, full rows or tail alike: in the tail the load reads a stack copy
    // of the row's last elements (a masked load, inactive lanes 0), chosen by
    // a pointer select. Plain loads because masked ones cost several times as
    // much on some CPUs (AMD Zen 1: HM-LSTM's rows 1.63x -> 1.27x of the hand
    // loop); ONE load instruction per input, not a full/tail pair joined by a
    // phi, because that is what SinkIntoUniformBranches can move into the
    // sides of a uniform branch that read it (a COPY row of the HM-LSTM then
    // reads 2 of its 5 arrays). The copy is that pass's `input_copies`.
    const size_t n_in = f_.num_inputs();
    std::vector<llvm::Value*> loaded(n_in, nullptr);
    std::vector<llvm::Value*> bases(n_in, nullptr);
    std::vector<size_t> contiguous;
    for (size_t k = 0; k < n_in; ++k) {
      bases[k] = lane0(in_base[k], stride_of(in_stride_, k));
      if (stride_of(in_stride_, k) == kUnitStride && full != nullptr) contiguous.push_back(k);
    }
    std::vector<llvm::Value*> copies(n_in, nullptr);
    if (!contiguous.empty()) {
      llvm::IRBuilder<> entry(&kernel_->getEntryBlock(), kernel_->getEntryBlock().begin());
      auto* copy_block = llvm::BasicBlock::Create(ctx_, "tail.copy", kernel_);
      auto* loads_block = llvm::BasicBlock::Create(ctx_, "loads", kernel_);
      b.CreateCondBr(full, loads_block, copy_block, FullIsLikely());
      b.SetInsertPoint(copy_block);
      for (size_t k : contiguous) {
        llvm::AllocaInst* slot = entry.CreateAlloca(vec, nullptr, absl::StrCat("x", k, ".tail"));
        slot->setAlignment(llvm::Align(64));
        input_copies_.push_back(slot);
        b.CreateStore(b.CreateMaskedLoad(vec, bases[k], align, active, zeros), slot);
        copies[k] = slot;
      }
      b.CreateBr(loads_block);
      b.SetInsertPoint(loads_block);
    }
    for (size_t k = 0; k < n_in; ++k) {
      const int stride = stride_of(in_stride_, k);
      const std::string name = absl::StrCat("x", k);
      if (k < preloaded.size() && preloaded[k] != nullptr) {
        loaded[k] = preloaded[k];  // broadcast along the inner dim: loaded once per row
      } else if (stride == kZeroStride) {
        loaded[k] = LoadSplat(b, bases[k], name);
      } else if (copies[k] != nullptr) {
        loaded[k] = b.CreateAlignedLoad(vec, b.CreateSelect(full, bases[k], copies[k]), align, name);
      } else if (stride == kUnitStride) {  // rank 0: one lane
        loaded[k] = b.CreateMaskedLoad(vec, bases[k], align, active, zeros, name);
      } else {
        loaded[k] =
            b.CreateMaskedGather(vec, lane_addresses(bases[k], stride), align, active, zeros, name);
      }
    }

    LlvmPrinter* printer_ptr = nullptr;
    LlvmPrinter printer(b, *module_, lanes_, [&](uint32_t index, Type type) {
      return Convert(*printer_ptr, loaded[index], spec_.dtype, type);
    });
    printer_ptr = &printer;
    for (size_t k = 0; k < n_in; ++k) {
      if (stride_of(in_stride_, k) == kZeroStride) printer.MarkUniform(loaded[k]);
    }
    std::vector<llvm::Value*> outputs = CodegenWalk<LlvmPrinter>(f_, printer).Run();
    // Sunk once the body is complete: the stores below use values too.
    uniform_branches_.insert(uniform_branches_.end(), printer.uniform_branches().begin(),
                             printer.uniform_branches().end());

    // Stores, all after it.
    struct ContiguousStore {
      llvm::Value* value;
      llvm::Value* address;
      bool add;  // add into what is there
    };
    std::vector<ContiguousStore> contiguous_stores;
    std::vector<llvm::Value*> row_values(outputs.size(), nullptr);
    std::vector<std::pair<size_t, llvm::Value*>> scratch_adds;  // output, widened value
    std::vector<std::pair<size_t, llvm::Value*>> reduced_along;  // the same, for the loop's accumulator
    llvm::Type* f64_vec = LlvmType(ctx_, Type::kF64, lanes_);
    for (size_t m = 0; m < outputs.size(); ++m) {
      if (out_ptr_[m] < 0) continue;
      llvm::Value* v = Convert(printer, outputs[m], f_.output_type(m), spec_.dtype);
      const int stride = stride_of(out_stride_, m);
      if (Reduced(m)) {
        llvm::Value* wide = Convert(printer, v, spec_.dtype, Type::kF64);
        if (m < deferred.size() && deferred[m]) {
          row_values[m] = wide;
          continue;
        }
        if (ReducedAlong(m, d)) {
          reduced_along.emplace_back(m, wide);
          continue;
        }
        scratch_adds.emplace_back(m, wide);
        continue;
      }
      const bool add = spec_.accumulates(m);
      llvm::Value* base = lane0(out_base[m], stride);
      if (stride == kZeroStride) {  // rank 0
        llvm::Value* x = b.CreateExtractElement(v, uint64_t{0});
        if (add) x = b.CreateFAdd(b.CreateLoad(elem_, base), x);
        b.CreateStore(x, base);
      } else if (stride == kUnitStride) {
        contiguous_stores.push_back({v, base, add});
      } else {
        llvm::Value* addresses = lane_addresses(base, stride);
        if (add) v = b.CreateFAdd(b.CreateMaskedGather(vec, addresses, align, active, zeros), v);
        b.CreateMaskedScatter(v, addresses, align, active);
      }
    }
    // One full/tail diamond for the contiguous stores and the values reduced
    // along the row. Inactive lanes must add the identity (theirs may be
    // NaN); only the tail selects it: with AVX2 the select widens the i32
    // lane mask to f64 lanes, five vector instructions per step and output.
    if (!contiguous_stores.empty() || !reduced_along.empty()) {
      std::vector<llvm::Value*> kept = split(
          "store",
          [&] {
            for (const ContiguousStore& s : contiguous_stores) {
              llvm::Value* x = s.value;
              if (s.add) x = b.CreateFAdd(b.CreateAlignedLoad(vec, s.address, align), x);
              b.CreateAlignedStore(x, s.address, align);
            }
            std::vector<llvm::Value*> v;
            for (auto& [m, wide] : reduced_along) v.push_back(wide);
            return v;
          },
          [&] {
            for (const ContiguousStore& s : contiguous_stores) {
              llvm::Value* x = s.value;
              if (s.add) {
                x = b.CreateFAdd(b.CreateMaskedLoad(vec, s.address, align, active, zeros), x);
              }
              b.CreateMaskedStore(x, s.address, align, active);
            }
            std::vector<llvm::Value*> v;
            for (auto& [m, wide] : reduced_along) {
              v.push_back(b.CreateSelect(active, wide, Identity(m, f64_vec)));
            }
            return v;
          });
      for (size_t r = 0; r < reduced_along.size(); ++r) row_values[reduced_along[r].first] = kept[r];
    }
    for (auto& [m, wide] : scratch_adds) EmitScratchAdd(b, m, wide, out_base[m], i, d, active, full);
    return row_values;
  }

  static llvm::Value* Convert(LlvmPrinter& printer, llvm::Value* v, Type from, Type to) {
    if (from == to) return v;
    const Type from_types[] = {from};
    llvm::Value* const args[] = {v};
    return printer.Emit(Op::kCast, to, from_types, args);
  }

  const KernelSpec& spec_;
  const Function& f_;
  std::string symbol_;
  llvm::LLVMContext& ctx_;
  std::unique_ptr<llvm::Module> module_;
  int rank_;
  llvm::Type* i64_;
  llvm::PointerType* ptr_;
  llvm::Type* elem_;
  int lanes_;  // W >= 2: elements per step (KernelStepLanes: host vectors x the interleave factor)
  // Lanes of a row sum's accumulator: the hinted width, else the host's
  // (whatever the interleave factor, so a sum's rounding does not change with it).
  int acc_lanes_;
  llvm::Function* kernel_ = nullptr;         // the exported entry point, loops and all
  std::vector<llvm::Value*> param_values_;  // per params_ entry, loaded in the entry block
  std::vector<llvm::BranchInst*> uniform_branches_;  // the printer's, for SinkIntoUniformBranches
  std::vector<llvm::AllocaInst*> input_copies_;      // tail copies of inputs, for the same

  std::vector<Param> params_;
  std::vector<int> in_ptr_, out_ptr_, size_;
  std::vector<std::vector<int>> in_stride_, out_stride_;
  int begin_ = 0, end_ = 0;
};


}  // namespace

absl::StatusOr<std::unique_ptr<llvm::Module>> BuildKernelModule(const KernelSpec& spec,
                                                                const std::string& symbol,
                                                                llvm::LLVMContext& ctx) {
  if (absl::Status s = spec.Validate("cpu"); !s.ok()) return s;
  // Vector code runs both sides of a mixed if: work both sides compute is
  // done once above it (and sunk back where the branch is uniform).
  const bool has_ifs = std::any_of(spec.function->insts.begin(), spec.function->insts.end(),
                                   [](const Inst& inst) { return inst.op == Op::kIf; });
  if (!has_ifs) return KernelEmitter(spec, symbol, ctx).Build();
  KernelSpec vector_spec = spec;
  vector_spec.function = std::make_shared<Function>(HoistCommonWork(*spec.function));
  return KernelEmitter(vector_spec, symbol, ctx).Build();
}

}  // namespace dualcast::jit::cpu
