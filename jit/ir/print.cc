// The IR printer (see print.h for the format).
#include "jit/ir/print.h"

#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace dualcast::jit {

std::string FormatConst(Type type, double value) {
  if (type == Type::kBool) return value != 0 ? "true" : "false";
  if (std::isnan(value)) return std::signbit(value) ? "-nan" : "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return type == Type::kF32 ? absl::StrFormat("%.9g", value) : absl::StrFormat("%.17g", value);
}

namespace {

class Printer {
 public:
  explicit Printer(const Function& f) : f_(f), number_(f.insts.size(), -1) {}

  std::string Run() {
    std::vector<std::string> params, results;
    for (ValueId in : f_.inputs) {
      params.push_back(absl::StrCat(Name(in), ": ", TypeName(f_.type(in))));
    }
    for (ValueId out : f_.outputs()) results.push_back(TypeName(f_.type(out)));
    absl::StrAppend(&out_, "func ", f_.name.empty() ? "kernel" : f_.name, "(",
                    absl::StrJoin(params, ", "), ") -> (", absl::StrJoin(results, ", "), ") {\n");
    if (!f_.blocks.empty()) Block(0, 1, "return");
    out_ += "}\n";
    return out_;
  }

 private:
  std::string Name(ValueId v) {
    if (v >= number_.size()) return absl::StrCat("%?", v);
    if (number_[v] < 0) number_[v] = next_++;
    return absl::StrCat("%", number_[v]);
  }

  std::string Names(std::span<const ValueId> vs) {
    std::vector<std::string> names;
    for (ValueId v : vs) names.push_back(Name(v));
    return absl::StrJoin(names, ", ");
  }

  void Block(BlockId b, int depth, const char* terminator) {
    const std::string indent(2 * depth, ' ');
    const auto& body = f_.blocks[b].body;
    for (size_t i = 0; i < body.size(); ++i) {
      ValueId v = body[i];
      const Inst& inst = f_.inst(v);
      if (inst.op == Op::kInput) continue;  // in the signature
      if (inst.op == Op::kResult) continue;  // printed with their If
      if (inst.op == Op::kIf) {
        std::vector<ValueId> results;
        for (size_t j = i + 1; j < body.size() && f_.inst(body[j]).op == Op::kResult &&
                               f_.inst(body[j]).args[0] == v;
             ++j) {
          results.push_back(body[j]);
        }
        std::string lhs = results.empty() ? "" : Names(results) + " = ";
        absl::StrAppend(&out_, indent, lhs, "if ", Name(inst.args[0]), " {\n");
        Block(inst.then_block, depth + 1, "yield");
        absl::StrAppend(&out_, indent, "} else {\n");
        Block(inst.else_block, depth + 1, "yield");
        absl::StrAppend(&out_, indent, "}\n");
        continue;
      }
      std::string lhs = Name(v);
      if (inst.op == Op::kConst) {
        absl::StrAppend(&out_, indent, lhs, " = const ", FormatConst(inst.type, inst.imm), " : ",
                        TypeName(inst.type), "\n");
        continue;
      }
      absl::StrAppend(&out_, indent, lhs, " = ", Spelling(inst.op), " ", Names(inst.operands()),
                      " : ", TypeName(inst.type), "\n");
    }
    absl::StrAppend(&out_, indent, terminator, " ", Names(f_.blocks[b].yields), "\n");
  }

  const Function& f_;
  std::vector<int> number_;
  int next_ = 0;
  std::string out_;
};

}  // namespace

std::string Print(const Function& f) {
  return Printer(f).Run();
}

}  // namespace dualcast::jit
