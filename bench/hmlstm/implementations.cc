// The benchmark's implementations: the hand-written loop and dualcast's three ways (fused, recompute, where).
#include "bench/hmlstm/implementations.h"

#include "bench/hmlstm/handwritten.h"

namespace dualcast::bench {

namespace {

class Handwritten : public Implementation {
 public:
  explicit Handwritten(Variant v) : variant_(v) {}
  std::string name() const override { return "handwritten"; }
  void Prepare(const Problem& p) override {
    p_ = &p;
    out_ = Results{};
  }
  void Run() override {
    if (variant_ == Variant::kPaper) HandwrittenPaper(*p_, out_);
    else HandwrittenFull(*p_, out_);
  }
  Results Collect() override { return out_; }

 private:
  Variant variant_;
  const Problem* p_ = nullptr;
  Results out_;
};

}  // namespace

std::vector<std::unique_ptr<Implementation>> MakeImplementations(Variant variant) {
  std::vector<std::unique_ptr<Implementation>> impls;
  impls.push_back(std::make_unique<Handwritten>(variant));
  return impls;
}

}  // namespace dualcast::bench
