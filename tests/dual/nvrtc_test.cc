// <dualcast/dual.hpp> as CUDA device code: NVRTC compiles kernels that use every function of the
// library on float, double, Dual and nested Dual, to PTX (no GPU needed).
#include <doctest/doctest.h>

#ifdef DUALCAST_HAVE_NVRTC

#include <nvrtc.h>

#include <string>
#include <vector>

namespace {

// Kernels as a user would write them. Lambdas in device code would need nvcc's
// --extended-lambda, which NVRTC does not offer; device function objects work everywhere.
constexpr const char* kKernelSource = R"cuda(
#include <dualcast/dual.hpp>

namespace {

struct TagA;
struct TagB;

template <class V>
__device__ V every_function(V x, V y) {
  using namespace dualcast::math;
  V r = exp(x) + expm1(x) + log(y) + log1p(y) + log2(y) + log10(y) + sqrt(y) + cbrt(x) + pow(y, 2) +
        pow(2, x) + pow(y, x) + sin(x) + cos(x) + tan(x) + asin(x / 4) + acos(x / 4) + atan(x) +
        atan2(x, y) + sinh(x) + cosh(x) + tanh(x) + asinh(x) + acosh(y + 1) + atanh(x / 4) + erf(x) +
        erfc(x) + abs(x) + fabs(x) + min(x, y) + max(x, 1) + fmin(x, y) + fmax(1, y) + hypot(x, y) +
        copysign(x, y) + floor(x) + ceil(x) + round(x) + trunc(x) + fma(x, y, 1) + sigmoid(x) +
        softplus(x) + relu(x) + select(x > y, x, y) + exp2(x) + fmod(x, y) + remainder(x, y) +
        fdim(x, y) + nextafter(x, y) + tgamma(y) + lgamma(y) + rint(x) + nearbyint(x) +
        logb(y) + sign(x) + square(x) + rsqrt(y) + clamp(x, -1, y) + logaddexp(x, y) + erfinv(x / 8) +
        powi(x, 3) + lerp(x, y, V(0.25)) + ldexp(x, 2) + scalbn(y, -1) + V(ilogb(y)) +
        V(isnan(x) + isinf(x) + isfinite(x) + isnormal(x) + signbit(x));
  if (x > 0)
    r *= 2;
  else
    r -= x;
  return r / (1 + y);
}

// The real-only <cmath> functions and staples (scalar float/double).
template <class T>
__device__ T every_real_function(T x, T y) {
  using namespace dualcast::math;
  int e = 0;
  T ip = 0;
  T r = exp2(x) + fmod(x, y) + remainder(x, y) + fdim(x, y) + nextafter(x, y) + tgamma(y) + lgamma(y) +
        rint(x) + nearbyint(x) + logb(y) + T(ilogb(y)) + ldexp(x, 3) + scalbn(x, -2) + frexp(x, &e) +
        modf(x, &ip) + ip + T(e) + sign(x) + square(x) + rsqrt(y) + clamp(x, -1, 1) + logaddexp(x, y) +
        erfinv(x / 8) + digamma(y) + powi(x, 3) + lerp(x, y, T(0.25)) + T(isnan(x)) + T(isinf(x)) +
        T(isfinite(x)) + T(isnormal(x)) + T(signbit(x)) + remquo(x, y, &e) + T(lround(x)) + T(llround(x)) +
        T(lrint(x)) + T(llrint(x));
  return r;
}

// ForwardDiff's perturbation-confusion case: the inner call is seeded with a plain double and
// captures the outer Dual, so two tags meet (ordered at compile time) inside the kernel.
template <class X>
struct AddX {
  X x;
  template <class Y>
  __device__ auto operator()(Y y) const { return x + y; }
};
struct Confusion {
  template <class X>
  __device__ auto operator()(X x) const { return x * dualcast::derivative(AddX<X>{x}, 1.0); }
};

struct SigmoidTanh {
  template <class T>
  __device__ T operator()(T t) const {
    using namespace dualcast::math;
    return sigmoid(t) * tanh(t);
  }
};

}  // namespace

extern "C" __global__ void dual_sigmoid_tanh(const float* x, float* y, float* dy, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  using D = dualcast::Dual<float, 1>;
  const D r = SigmoidTanh{}(D::variable(x[i], 0));
  y[i] = r.value();
  dy[i] = r.partial(0);
}

extern "C" __global__ void dual_every_function(const double* x, double* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  using F2 = dualcast::Dual<float, 2>;
  using Inner = dualcast::Dual<double, 1, TagA>;
  using Outer = dualcast::Dual<Inner, 1, TagB>;
  const float xf = static_cast<float>(x[i]);
  const F2 a = every_function(F2::variable(xf, 0), F2::variable(1.5f, 1));
  const Outer b = every_function(Outer(Inner::variable(x[i], 0), Inner(1.0)), Outer(2.0));
  out[i] = a.partial(0) + a.partial(1) + every_function(xf, 1.5f) + every_function(x[i], 2.0) +
           b.partial(0).partial(0) + dualcast::derivative(SigmoidTanh{}, x[i]) +
           every_real_function(x[i], 2.0) + every_real_function(xf, 1.5f) +
           dualcast::derivative(Confusion{}, x[i]);
}
)cuda";

struct Compiled {
  nvrtcResult result;
  std::string log, ptx;
};

Compiled compile(const char* source, const std::vector<std::string>& options) {
  Compiled c{};
  nvrtcProgram prog;
  REQUIRE(nvrtcCreateProgram(&prog, source, "dual_kernels.cu", 0, nullptr, nullptr) == NVRTC_SUCCESS);
  std::vector<const char*> opts;
  for (const auto& o : options) opts.push_back(o.c_str());
  c.result = nvrtcCompileProgram(prog, static_cast<int>(opts.size()), opts.data());
  size_t n = 0;
  nvrtcGetProgramLogSize(prog, &n);
  c.log.assign(n, '\0');
  nvrtcGetProgramLog(prog, c.log.data());
  if (c.result == NVRTC_SUCCESS) {
    nvrtcGetPTXSize(prog, &n);
    c.ptx.assign(n, '\0');
    nvrtcGetPTX(prog, c.ptx.data());
  }
  nvrtcDestroyProgram(&prog);
  return c;
}

TEST_CASE("nvrtc: the dual library compiles as device code") {
  const Compiled c = compile(kKernelSource, {"--gpu-architecture=compute_90", "-std=c++20",
                                             std::string("-I") + DUALCAST_DUAL_INCLUDE_DIR,
                                             std::string("-I") + DUALCAST_TEST_CCCL_INCLUDE_DIR});
  INFO("NVRTC log:\n" << c.log);
  REQUIRE(c.result == NVRTC_SUCCESS);
  CHECK(c.ptx.find(".entry dual_sigmoid_tanh") != std::string::npos);
  CHECK(c.ptx.find(".entry dual_every_function") != std::string::npos);
}

}  // namespace

#endif  // DUALCAST_HAVE_NVRTC
