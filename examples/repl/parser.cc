// The REPL's recursive-descent parser (grammar in parser.h).
#include "examples/repl/parser.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace dualcast::repl {
namespace {

// Deep enough for any real expression, shallow enough that a pathological
// input ("((((((...") ends in an error instead of a stack overflow. A level is
// what the message says: one bracket, parenthesis, call, if, let or unary
// operator (or '^') of the source, whatever number of parser frames it takes.
constexpr int kMaxNesting = 200;
// The same for operator chains ("1+1+1+..."), which build a deep tree without nesting.
constexpr int kMaxChain = 2000;

class Parser {
 public:
  explicit Parser(std::string_view text) : tokens_(Lex(text)) {}

  Stmt Statement() {
    Stmt s = OneStatement();
    ExpectEnd();
    return s;
  }

  // `a = 1; b = 2`: each statement but the last must end in ';' (which
  // also keeps it from printing, as in MATLAB and Julia).
  std::vector<Stmt> Statements() {
    std::vector<Stmt> all;
    do {
      all.push_back(OneStatement());
    } while (all.back().quiet && Peek().kind != Tok::kEnd);
    const Tok next = Peek().kind;  // what could begin a statement: a missing ';'?
    const bool starts = next == Tok::kIdent || next == Tok::kNumber || next == Tok::kDef;
    ExpectEnd(starts ? " (separate statements with ';')" : "");
    return all;
  }

  std::unique_ptr<Expr> WholeExpression() {
    auto e = Expression();
    ExpectEnd();
    return e;
  }

 private:
  Stmt OneStatement() {
    Stmt s;
    s.span.begin = Peek().span.begin;
    if (Peek().kind == Tok::kDef) {
      Definition(s);
    } else if (IsAssignment()) {
      s.kind = Stmt::kAssign;
      do {
        const Token& t = Expect(Tok::kIdent, "a variable name");
        s.targets.push_back(t.text);
        s.target_spans.push_back(t.span);
      } while (Accept(Tok::kComma));
      Expect(Tok::kAssign, "'='");
      s.body = Expression();
    } else {
      s.kind = Stmt::kExpr;
      s.body = Expression();
    }
    if (Accept(Tok::kSemicolon)) s.quiet = true;
    s.span.end = Previous().span.end;
    return s;
  }

  // `a = ...` or `a, b = ...` (a comma-separated list of names followed by '=').
  bool IsAssignment() const {
    size_t i = pos_;
    while (true) {
      if (tokens_[i].kind != Tok::kIdent) return false;
      ++i;
      if (tokens_[i].kind == Tok::kAssign) return true;
      if (tokens_[i].kind != Tok::kComma) return false;
      ++i;
    }
  }

  void Definition(Stmt& s) {
    s.kind = Stmt::kDef;
    Next();  // def
    const Token& name = Expect(Tok::kIdent, "the function's name after 'def'");
    s.name = name.text;
    s.name_span = name.span;
    if (Peek().kind == Tok::kAssign) {
      Fail(Peek().span, "expected '(' and the parameter list after 'def " + s.name + "'");
    }
    Expect(Tok::kLParen, "'(' after the function's name");
    if (!Accept(Tok::kRParen)) {
      do {
        const Token& p = Expect(Tok::kIdent, "a parameter name");
        for (size_t k = 0; k < s.params.size(); ++k) {
          if (s.params[k] == p.text) Fail(p.span, "parameter '" + p.text + "' appears twice");
        }
        s.params.push_back(p.text);
        s.param_spans.push_back(p.span);
      } while (Accept(Tok::kComma));
      Expect(Tok::kRParen, "',' or ')' in the parameter list");
    }
    Expect(Tok::kAssign, "'=' before the function's body");
    s.body = Expression();
  }

  std::unique_ptr<Expr> Expression() {
    if (Peek().kind == Tok::kIf) return IfExpr();
    if (Peek().kind == Tok::kLet) return LetExpr();
    return Or();
  }

  std::unique_ptr<Expr> IfExpr() {
    Nest guard(*this);
    auto e = Node(Expr::kIf, Next().span);
    e->args.push_back(Expression());
    Expect(Tok::kThen, "'then' after the condition of 'if'");
    e->args.push_back(Expression());
    if (Peek().kind != Tok::kElse) {
      Fail(Peek().span, "expected 'else': an 'if' is an expression and needs both branches, found " +
                            Describe(Peek()));
    }
    Next();
    e->args.push_back(Expression());
    e->span.end = Previous().span.end;
    return e;
  }

  std::unique_ptr<Expr> LetExpr() {
    Nest guard(*this);
    auto e = Node(Expr::kLet, Next().span);
    do {
      const Token& t = Expect(Tok::kIdent, "a name after 'let'");
      e->names.push_back(t.text);
      e->name_spans.push_back(t.span);
    } while (Accept(Tok::kComma));
    Expect(Tok::kAssign, "'=' after the name in 'let'");
    e->args.push_back(Expression());
    Expect(Tok::kIn, "'in' after the value of 'let'");
    e->args.push_back(Expression());
    e->span.end = Previous().span.end;
    return e;
  }

  std::unique_ptr<Expr> Or() {
    auto lhs = And();
    while (Peek().kind == Tok::kOr) {
      const Token& op = Next();
      lhs = Binary(std::move(lhs), op, And());
    }
    return lhs;
  }

  std::unique_ptr<Expr> And() {
    auto lhs = NotExpr();
    while (Peek().kind == Tok::kAnd) {
      const Token& op = Next();
      lhs = Binary(std::move(lhs), op, NotExpr());
    }
    return lhs;
  }

  std::unique_ptr<Expr> NotExpr() {
    if (Peek().kind == Tok::kNot) {
      Nest guard(*this);
      const Token& t = Next();
      auto e = Node(Expr::kUnary, t.span);
      e->op = Tok::kNot;
      e->args.push_back(NotExpr());
      e->span.end = Previous().span.end;
      return e;
    }
    return Compare();
  }

  static bool IsComparison(Tok t) {
    return t == Tok::kEq || t == Tok::kNe || t == Tok::kLt || t == Tok::kLe || t == Tok::kGt ||
           t == Tok::kGe;
  }

  std::unique_ptr<Expr> Compare() {
    auto lhs = Sum();
    if (IsComparison(Peek().kind)) {
      const Token& op = Next();
      lhs = Binary(std::move(lhs), op, Sum());
      if (IsComparison(Peek().kind)) {
        Fail(Peek().span, "comparisons do not chain: write 'a < b and b < c'");
      }
    }
    return lhs;
  }

  std::unique_ptr<Expr> Sum() {
    auto lhs = Term();
    while (Peek().kind == Tok::kPlus || Peek().kind == Tok::kMinus) {
      const Token& op = Next();
      lhs = Binary(std::move(lhs), op, Term());
    }
    return lhs;
  }

  std::unique_ptr<Expr> Term() {
    auto lhs = Unary();
    while (Peek().kind == Tok::kStar || Peek().kind == Tok::kSlash) {
      const Token& op = Next();
      lhs = Binary(std::move(lhs), op, Unary());
    }
    return lhs;
  }

  std::unique_ptr<Expr> Unary() {
    if (Peek().kind == Tok::kMinus) {
      Nest guard(*this);
      const Token& t = Next();
      auto operand = Unary();
      if (operand->kind == Expr::kNumber) {  // "-3" is the literal -3, as in C++
        operand->number = -operand->number;
        operand->span.begin = t.span.begin;
        return operand;
      }
      auto e = Node(Expr::kUnary, t.span);
      e->op = Tok::kMinus;
      e->args.push_back(std::move(operand));
      e->span.end = Previous().span.end;
      return e;
    }
    if (Peek().kind == Tok::kPlus) Fail(Peek().span, "unary '+' is not part of the language");
    return Power();
  }

  std::unique_ptr<Expr> Power() {
    auto base = Postfix(Atom());
    if (Peek().kind == Tok::kCaret) {
      Nest guard(*this);
      const Token& op = Next();
      return Binary(std::move(base), op, Unary());  // right-associative; -x^2 == -(x^2)
    }
    return base;
  }

  std::unique_ptr<Expr> Atom() {
    const Token& t = Peek();
    switch (t.kind) {
      case Tok::kNumber: {
        Next();
        auto e = Node(Expr::kNumber, t.span);
        e->number = t.number;
        return e;
      }
      case Tok::kIdent: {
        Next();
        if (Peek().kind == Tok::kLParen || Peek().kind == Tok::kDotParen) {
          Nest guard(*this);
          const bool dot = Next().kind == Tok::kDotParen;
          auto e = Node(Expr::kCall, t.span);
          e->name = t.text;
          e->dot = dot;
          Arguments(*e, Tok::kRParen, "')'");
          return e;
        }
        auto e = Node(Expr::kName, t.span);
        e->name = t.text;
        return e;
      }
      case Tok::kLParen: {
        Nest guard(*this);
        const Token& open = Next();
        if (Peek().kind == Tok::kRParen) Fail(Peek().span, "empty parentheses: expected an expression");
        auto first = Expression();
        if (Accept(Tok::kRParen)) return first;
        auto e = Node(Expr::kTuple, open.span);
        e->op_span = first->span;
        e->args.push_back(std::move(first));
        while (Accept(Tok::kComma)) e->args.push_back(Expression());
        Expect(Tok::kRParen, "',' or ')'");
        e->span.end = Previous().span.end;
        return e;
      }
      case Tok::kLBracket: {
        Nest guard(*this);
        auto e = Node(Expr::kArray, Next().span);
        Arguments(*e, Tok::kRBracket, "']'");
        return e;
      }
      default:
        break;
    }
    Fail(t.span, "expected an expression, found " + Describe(t));
  }

  // `value[k]`: picks output k (1-based, as printed) of a several-output value. Only a whole
  // number may index: arrays are not sliced here.
  std::unique_ptr<Expr> Postfix(std::unique_ptr<Expr> base) {
    while (Peek().kind == Tok::kLBracket) {
      const Token& open = Next();
      const Token& index = Peek();
      if (index.kind != Tok::kNumber || index.number != std::floor(index.number) || index.number < 1) {
        Fail(index.span, "an index picks one output of a function with several outputs: write a whole "
                         "number from 1, as in f.(x)[1]");
      }
      Next();
      Expect(Tok::kRBracket, "']'");
      auto e = Node(Expr::kIndex, open.span);
      e->number = index.number;
      e->span = {base->span.begin, Previous().span.end};
      e->args.push_back(std::move(base));
      base = std::move(e);
    }
    return base;
  }

  // Comma-separated expressions up to `close` (already past the opener).
  void Arguments(Expr& e, Tok close, const char* close_name) {
    if (!Accept(close)) {
      do {
        e.args.push_back(Expression());
      } while (Accept(Tok::kComma));
      Expect(close, std::string("',' or ") + close_name);
    }
    e.span.end = Previous().span.end;
  }

  std::unique_ptr<Expr> Binary(std::unique_ptr<Expr> lhs, const Token& op, std::unique_ptr<Expr> rhs) {
    auto e = std::make_unique<Expr>();
    e->kind = Expr::kBinary;
    e->op = op.kind;
    e->op_span = op.span;
    e->span = {lhs->span.begin, rhs->span.end};
    e->height = std::max(lhs->height, rhs->height) + 1;
    if (e->height > kMaxChain) {
      Fail(op.span, "expression too long (more than " + std::to_string(kMaxChain) +
                        " operators in a chain); split it with 'let'");
    }
    e->args.push_back(std::move(lhs));
    e->args.push_back(std::move(rhs));
    return e;
  }

  std::unique_ptr<Expr> Node(Expr::Kind kind, Span at) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->span = at;
    e->op_span = at;
    return e;
  }

  static std::string Describe(const Token& t) {
    if (t.kind == Tok::kIdent) return "'" + t.text + "'";
    if (t.kind == Tok::kNumber) return "the number " + t.text;
    return TokName(t.kind);
  }

  void ExpectEnd(std::string hint = "") {
    if (Peek().kind == Tok::kEnd) return;
    if (Peek().kind == Tok::kAssign) hint = " (to compare, write '==')";
    if (Peek().kind == Tok::kLParen || Peek().kind == Tok::kLBracket) hint = " (a missing operator?)";
    Fail(Peek().span, "unexpected " + Describe(Peek()) + " after the end of the statement" + hint);
  }

  const Token& Expect(Tok kind, const std::string& what) {
    if (Peek().kind != kind) Fail(Peek().span, "expected " + what + ", found " + Describe(Peek()));
    return Next();
  }
  bool Accept(Tok kind) {
    if (Peek().kind != kind) return false;
    Next();
    return true;
  }
  const Token& Peek() const { return tokens_[pos_]; }
  const Token& Previous() const { return tokens_[pos_ == 0 ? 0 : pos_ - 1]; }
  const Token& Next() {
    const Token& t = tokens_[pos_];
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return t;
  }
  [[noreturn]] void Fail(Span span, const std::string& message) const {
    throw SourceError(ErrorCategory::kParse, span, message);
  }

  struct Nest {
    explicit Nest(Parser& p) : parser(p) {
      if (++parser.depth_ > kMaxNesting) {
        parser.Fail(parser.Peek().span, "expression nested too deeply (more than " +
                                            std::to_string(kMaxNesting) + " levels)");
      }
    }
    ~Nest() { --parser.depth_; }
    Parser& parser;
  };

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

Stmt ParseStatement(std::string_view text) { return Parser(text).Statement(); }

std::vector<Stmt> ParseStatements(std::string_view text) { return Parser(text).Statements(); }

std::unique_ptr<Expr> ParseExpression(std::string_view text) {
  return Parser(text).WholeExpression();
}

}  // namespace dualcast::repl
