// Reverse rules of reshape, transpose, copy and assign, recorded by the Array methods (see layout_grad.h).
#include "runtime/layout_grad.h"

#include "dualcast/detail/broadcast_grad.hpp"
#include "dualcast/detail/grad_node.hpp"
#include "runtime/grad_kernels.h"
#include "runtime/untaped_paths.h"

namespace dualcast::detail {
namespace {

struct ReshapeNode final : GradNode {
  std::vector<int64_t> in_shape;
  std::vector<std::shared_ptr<ArrayImpl>> Backward(
      const std::vector<std::shared_ptr<ArrayImpl>>& outs) override {
    if (outs.empty() || outs[0] == nullptr) return {nullptr};
    std::shared_ptr<ArrayImpl> g = Contiguous(outs[0]);
    return {ViewOf(*g, in_shape, ContiguousStrides(in_shape))};
  }
};

struct TransposeNode final : GradNode {
  std::vector<int> perm;  // out dim d is input dim perm[d]
  std::vector<std::shared_ptr<ArrayImpl>> Backward(
      const std::vector<std::shared_ptr<ArrayImpl>>& outs) override {
    if (outs.empty() || outs[0] == nullptr) return {nullptr};
    const ArrayImpl& g = *outs[0];
    std::vector<int64_t> shape(perm.size()), strides(perm.size());
    for (size_t d = 0; d < perm.size(); ++d) {
      shape[static_cast<size_t>(perm[d])] = g.shape[d];
      strides[static_cast<size_t>(perm[d])] = g.strides[d];
    }
    return {ViewOf(g, std::move(shape), std::move(strides))};
  }
};

struct CopyNode final : GradNode {
  std::vector<std::shared_ptr<ArrayImpl>> Backward(
      const std::vector<std::shared_ptr<ArrayImpl>>& outs) override {
    if (outs.empty() || outs[0] == nullptr) return {nullptr};
    return {outs[0]};
  }
};

struct AssignNode final : GradNode {
  std::vector<int64_t> source_shape;
  std::vector<std::shared_ptr<ArrayImpl>> Backward(
      const std::vector<std::shared_ptr<ArrayImpl>>& outs) override {
    if (outs.empty() || outs[0] == nullptr) return {nullptr};
    return {SumTo(*outs[0], source_shape)};
  }
};

void Finish(std::shared_ptr<GradNode> node, const char* name, const std::shared_ptr<ArrayImpl>& in,
            const std::shared_ptr<ArrayImpl>& out) {
  NoteOrigin(name, {in}, {out});
  if (!TapeActive()) return;
  node->name = name;
  node->inputs = {in};
  Record(std::move(node), {out});
}

}  // namespace

void RecordReshape(const std::shared_ptr<ArrayImpl>& in, const std::shared_ptr<ArrayImpl>& out) {
  auto node = std::make_shared<ReshapeNode>();
  node->in_shape = in->shape;
  Finish(std::move(node), "reshape", in, out);
}

void RecordTranspose(const std::shared_ptr<ArrayImpl>& in, const std::shared_ptr<ArrayImpl>& out,
                     const std::vector<int>& perm) {
  auto node = std::make_shared<TransposeNode>();
  node->perm = perm;
  Finish(std::move(node), "transpose", in, out);
}

void RecordAssign(const std::shared_ptr<ArrayImpl>& in, const std::shared_ptr<ArrayImpl>& out) {
  auto node = std::make_shared<AssignNode>();
  node->source_shape = in->shape;
  Finish(std::move(node), kAssignOp, in, out);
}

void RecordCopy(const std::shared_ptr<ArrayImpl>& in, const std::shared_ptr<ArrayImpl>& out) {
  Finish(std::make_shared<CopyNode>(), "copy", in, out);
}

}  // namespace dualcast::detail
