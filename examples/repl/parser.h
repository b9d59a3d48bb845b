// The REPL parser: statement text to a syntax tree (ast.h), with the column of every mistake.
//
// Grammar (lowest precedence first; `if` and `let` extend as far right as possible):
//   line    := stmt {';' stmt} [';']                   (';' also keeps a result from printing)
//   stmt    := 'def' NAME '(' [NAME {',' NAME}] ')' '=' expr
//            | NAME {',' NAME} '=' expr | expr
//   expr    := 'if' expr 'then' expr 'else' expr
//            | 'let' NAME {',' NAME} '=' expr 'in' expr | or
//   or      := and {'or' and}          and := not {'and' not}
//   not     := 'not' not | cmp         cmp := sum [('=='|'!='|'<'|'<='|'>'|'>=') sum]
//   sum     := term {('+'|'-') term}   term := unary {('*'|'/') unary}
//   unary   := '-' unary | power       power := postfix ['^' unary]
//   postfix := atom {'[' NUMBER ']'}   (picks output k, from 1, of a several-output value)
//   atom    := NUMBER | NAME | NAME '(' args ')' | NAME '.(' args ')'
//            | '(' expr ')' | '(' expr ',' expr {',' expr} ')' | '[' [expr {',' expr}] ']'
// Comparisons do not chain (`a < b < c` is an error that says so).
//
// Example:
//   Stmt s = ParseStatement("y = cell.(z, zb, c, f, i, g)");
//   // s.kind == Stmt::kAssign, s.targets == {"y"}, s.body->kind == Expr::kCall, dot
#pragma once

#include <string_view>
#include <vector>

#include "examples/repl/ast.h"

namespace dualcast::repl {

// Parses one statement. Throws SourceError(kParse) with the offending token's span.
Stmt ParseStatement(std::string_view text);

// Parses statements separated by ';' (`a = 1; b = 2`), all before any runs.
std::vector<Stmt> ParseStatements(std::string_view text);

// Parses one expression (all of `text`), e.g. the arguments of a command.
std::unique_ptr<Expr> ParseExpression(std::string_view text);

}  // namespace dualcast::repl
