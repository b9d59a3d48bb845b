// libFuzzer target for the REPL language: lexer, parser, completeness check and lowering to jit IR.
//
// Any input must end in either a parsed statement or a SourceError with a
// span inside the text; a `def` that parses and lowers must give IR that
// passes jit::Verify, for f64 and f32. Anything else (a crash, a sanitizer
// report, another exception type, e.g. a Builder bug) is a finding.
// Built and run by run_parser_fuzz.sh (clang++-14 -fsanitize=fuzzer,address).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "examples/repl/lexer.h"
#include "examples/repl/lower.h"
#include "examples/repl/parser.h"
#include "jit/ir/print.h"
#include "jit/ir/verify.h"

namespace {

using namespace dualcast::repl;

const FunctionTable& Known() {
  static const FunctionTable* table = [] {
    auto* t = new FunctionTable;
    for (const char* def : {"def sq(x) = x * x", "def sc(x) = (sin(x), cos(x))",
                            "def cell(z, zb, c, f, i, g) = if z == 1 then sigmoid(i)*tanh(g) else "
                            "if zb == 0 then c else sigmoid(f)*c + sigmoid(i)*tanh(g)"}) {
      Stmt s = ParseStatement(def);
      (*t)[s.name] = MakeFunctionDef(s, *t, def);
    }
    return t;
  }();
  return *table;
}

void CheckSpan(const SourceError& e, std::string_view text) {
  if (e.span().begin > text.size() || e.span().end > text.size() || e.span().begin > e.span().end) {
    std::abort();  // a caret outside the statement
  }
  (void)FormatError("fuzz", 1, text, e);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)NeedsMoreInput(text);
  (void)JoinForHistory(text);
  try {
    Stmt s = ParseStatement(text);
    if (s.kind == Stmt::kDef) {
      auto def = MakeFunctionDef(s, Known(), std::string(text));
      for (dualcast::jit::Type t : {dualcast::jit::Type::kF64, dualcast::jit::Type::kF32}) {
        dualcast::jit::Function f = LowerFunction(*def, t);
        if (!dualcast::jit::Verify(f).ok()) std::abort();
        (void)dualcast::jit::Print(f);
      }
    }
  } catch (const SourceError& e) {
    CheckSpan(e, text);
  }
  return 0;
}
