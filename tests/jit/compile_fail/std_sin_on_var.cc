// Must NOT compile: std::sin on a traced value fails with var.h's static_assert naming dc::math (ctest std_math_on_var).
#include <cmath>
#include <type_traits>

#include "jit/trace/var.h"

using dualcast::jit::Var;
// Var still converts to no number type a kernel might take by mistake.
static_assert(!std::is_convertible_v<Var, double>);
static_assert(!std::is_convertible_v<Var, float>);

Var Kernel(Var x) { return std::sin(x); }
