// The CUDA C spelling of every IR op: the GPU backend's printer for the shared CodegenWalk.
//
// CodegenWalk (codegen.h) does the traversal; this class only writes one line
// of CUDA C per op into a text buffer (`const float t7 = expf(t3);`) and
// opens/closes real `if (...) { } else { }` blocks, so on the GPU only the
// taken branch runs (divergent warps serialise the two sides, but neither
// side's math runs for lanes that did not take it).
//
// Semantics match LlvmPrinter and the interpreter exactly where CUDA allows:
//   compares are C's (ordered; `!=` is true on NaN); min/max/fmin/fmax,
//   softplus and relu are spelled with the same formulas and ties; tanh and
//   sigmoid are dualcast/activation_steps.hpp's steps, one temporary each;
//   cast float -> bool is x != 0, bool -> float is 0/1.
// Accuracy choices (explicit, not left to flags): math ops call CUDA's
// accurate device library (`expf`, `sinf`, `powf`, ... and the double
// versions), never the `__expf`-style intrinsics, whose error grows with
// |x| (`__expf` is 2 + 1.16|x| ulp; `expf` is 2 ulp). The CUDA math library's
// documented maximum errors are a few ulp in float (expf 2, sinf 2, powf 4,
// erfcf 4) and 1-2 ulp in double (erfc 5); GPU tests compare with a few-ulp
// tolerance for that reason. No operation is contracted or reordered: the
// kernel is compiled with --fmad=false (see nvrtc_compile.h), so a*b+c is two
// roundings as on the CPU, and fma() is written out only where the IR has kFma.
// sqrt and division are IEEE round-to-nearest (--prec-sqrt/--prec-div=true).
//
// Example:
//   CudaPrinter printer(Type::kF32, [](uint32_t i, Type t) { return "x" + std::to_string(i); });
//   std::vector<std::string> outs = CodegenWalk<CudaPrinter>(f, printer).Run();
//   std::string body = printer.text();   // one statement per line, indented
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "jit/codegen/codegen.h"
#include "jit/ir/ir.h"

namespace dualcast::jit::cuda {

// The CUDA C type of an IR type: "float", "double", "bool".
const char* CudaType(Type type);

// A literal that is exactly `value` in `type`, NaN and infinities included
// (hex floats for finite values; bit patterns for the rest).
std::string CudaLiteral(Type type, double value);

class CudaPrinter {
 public:
  using Value = std::string;
  // Spells the value of the function's input `index` (usually emits a load
  // into the text through Declare and returns its name).
  using InputLoader = std::function<Value(CudaPrinter& printer, uint32_t index, Type type)>;

  CudaPrinter(int indent, InputLoader load_input)
      : indent_(indent), load_input_(std::move(load_input)) {}

  Value Constant(Type type, double value) { return CudaLiteral(type, value); }
  Value Input(uint32_t index, Type type) { return load_input_(*this, index, type); }
  Value Emit(Op op, Type type, std::span<const Type> arg_types, std::span<const Value> args);
  void BeginIf(const Value& cond, std::span<const Type> result_types);
  void BeginElse(std::span<const Value> then_yields);
  std::vector<Value> EndIf(std::span<const Value> else_yields);

  // Writes `const <type> tN = <expr>;` and returns "tN".
  Value Declare(Type type, const std::string& expr);
  // Writes one line at the current indentation.
  void Line(const std::string& line);

  const std::string& text() const { return text_; }

 private:
  std::string Expression(Op op, Type type, std::span<const Type> arg_types,
                         std::span<const Value> args) const;
  std::string MathExpression(Op op, Type type, std::span<const Value> args) const;

  struct OpenIf {
    std::vector<Value> results;  // the variables both branches assign
  };

  int indent_;
  InputLoader load_input_;
  std::string text_;
  int next_temp_ = 0;
  std::vector<OpenIf> open_ifs_;
};

static_assert(CodegenPrinter<CudaPrinter>);

}  // namespace dualcast::jit::cuda
