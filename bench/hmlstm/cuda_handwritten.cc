// HandwrittenCuda: the hand-written CUDA C of the paper variant and its launches (see cuda_handwritten.h).
#include "bench/hmlstm/cuda_handwritten.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

#ifdef DUALCAST_HAVE_NVRTC
#include "jit/cuda/driver.h"
#include "jit/cuda/raw_kernel.h"
#endif

namespace dualcast::bench {

#ifdef DUALCAST_HAVE_NVRTC
namespace {

constexpr int kBlock = 256;

// Every parameter is 8 bytes (RawCudaKernel). flags_step: 0 rows layout (one
// flag per row), 1 columns layout (one flag per column).
constexpr const char* kSource = R"(
__device__ __forceinline__ float Sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

__device__ __forceinline__ void Cell(float z, float zb, float c_prev, float f, float i, float g,
                                     float& d_cprev, float& d_f, float& d_i, float& d_g) {
  if (z == 1.0f) {  // FLUSH: c = s(i) t(g)
    const float si = Sigmoid(i), tg = tanhf(g);
    d_cprev = 0.0f;
    d_f = 0.0f;
    d_i = si * (1.0f - si) * tg;
    d_g = si * (1.0f - tg * tg);
  } else if (zb == 0.0f) {  // COPY: c = c_prev
    d_cprev = 1.0f;
    d_f = 0.0f;
    d_i = 0.0f;
    d_g = 0.0f;
  } else {  // UPDATE: c = s(f) c_prev + s(i) t(g)
    const float sf = Sigmoid(f), si = Sigmoid(i), tg = tanhf(g);
    d_cprev = sf;
    d_f = sf * (1.0f - sf) * c_prev;
    d_i = si * (1.0f - si) * tg;
    d_g = si * (1.0f - tg * tg);
  }
}

extern "C" __global__ void hmlstm_partials_hand(const float* __restrict__ z, const float* __restrict__ zb, const float* __restrict__ c_prev, const float* __restrict__ f, const float* __restrict__ i, const float* __restrict__ g, float* __restrict__ d_cprev, float* __restrict__ d_f, float* __restrict__ d_i, float* __restrict__ d_g, const long long n, const long long columns) {
  const unsigned groups_per_row = (unsigned)n / 4, groups = (unsigned)(n * n / 4);
  for (unsigned q = blockIdx.x * blockDim.x + threadIdx.x; q < groups; q += gridDim.x * blockDim.x) {
    const unsigned row = q / groups_per_row, k = (q - row * groups_per_row) * 4;
    const float4 cp = ((const float4*)c_prev)[q], ff = ((const float4*)f)[q],
                 ii = ((const float4*)i)[q], gg = ((const float4*)g)[q];
    float4 a, b, c, d;
    if (columns) {
      const float4 zz = ((const float4*)z)[k / 4], zzb = ((const float4*)zb)[k / 4];
      Cell(zz.x, zzb.x, cp.x, ff.x, ii.x, gg.x, a.x, b.x, c.x, d.x);
      Cell(zz.y, zzb.y, cp.y, ff.y, ii.y, gg.y, a.y, b.y, c.y, d.y);
      Cell(zz.z, zzb.z, cp.z, ff.z, ii.z, gg.z, a.z, b.z, c.z, d.z);
      Cell(zz.w, zzb.w, cp.w, ff.w, ii.w, gg.w, a.w, b.w, c.w, d.w);
    } else {
      const float zr = z[row], zbr = zb[row];
      Cell(zr, zbr, cp.x, ff.x, ii.x, gg.x, a.x, b.x, c.x, d.x);
      Cell(zr, zbr, cp.y, ff.y, ii.y, gg.y, a.y, b.y, c.y, d.y);
      Cell(zr, zbr, cp.z, ff.z, ii.z, gg.z, a.z, b.z, c.z, d.z);
      Cell(zr, zbr, cp.w, ff.w, ii.w, gg.w, a.w, b.w, c.w, d.w);
    }
    ((float4*)d_cprev)[q] = a;
    ((float4*)d_f)[q] = b;
    ((float4*)d_i)[q] = c;
    ((float4*)d_g)[q] = d;
  }
}
)";

const jit::cuda::RawCudaKernel* Kernel(absl::Status* status) {
  static absl::StatusOr<std::unique_ptr<jit::cuda::RawCudaKernel>>* kernel =
      new absl::StatusOr<std::unique_ptr<jit::cuda::RawCudaKernel>>(
          jit::cuda::RawCudaKernel::Compile(0, kSource, "hmlstm_partials_hand"));
  if (!kernel->ok()) {
    *status = kernel->status();
    return nullptr;
  }
  return kernel->value().get();
}

}  // namespace

absl::StatusOr<std::unique_ptr<HandwrittenCuda>> HandwrittenCuda::Create(const Problem& p) {
  if (p.n % 4 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("not run: the hand-written CUDA kernel takes n divisible by 4 (n = ", p.n, ")"));
  }
  absl::Status status;
  if (Kernel(&status) == nullptr) return status;
  std::unique_ptr<HandwrittenCuda> h(new HandwrittenCuda);
  h->n_ = p.n;
  h->columns_ = p.layout == Layout::kColumns;
  const size_t flag_bytes = static_cast<size_t>(p.n) * 4, matrix_bytes = flag_bytes * p.n;
  // Into *slot (freed by the destructor once set): `bytes`, holding `from` when given.
  const auto allocate = [](uint64_t* slot, size_t bytes, const std::vector<float>* from) {
    absl::StatusOr<uint64_t> a = jit::cuda::DeviceAlloc(0, bytes);
    if (!a.ok()) return a.status();
    *slot = *a;
    return from == nullptr ? absl::OkStatus() : jit::cuda::CopyToDevice(0, *a, from->data(), bytes);
  };
  for (auto [slot, from] : {std::pair{&h->z_, &p.z}, std::pair{&h->zb_, &p.zb}}) {
    if (absl::Status s = allocate(slot, flag_bytes, from); !s.ok()) return s;
  }
  const std::vector<float>* inputs[] = {&p.c_prev, &p.f, &p.i, &p.g};
  for (int k = 0; k < 4; ++k) {
    if (absl::Status s = allocate(&h->in_[k], matrix_bytes, inputs[k]); !s.ok()) return s;
    if (absl::Status s = allocate(&h->out_[k], matrix_bytes, nullptr); !s.ok()) return s;
  }
  return h;
}

HandwrittenCuda::~HandwrittenCuda() {
  const size_t flag_bytes = static_cast<size_t>(n_) * 4, matrix_bytes = flag_bytes * n_;
  for (uint64_t a : {z_, zb_}) {
    if (a != 0) jit::cuda::DeviceFree(0, a, flag_bytes);
  }
  for (int k = 0; k < 4; ++k) {
    if (in_[k] != 0) jit::cuda::DeviceFree(0, in_[k], matrix_bytes);
    if (out_[k] != 0) jit::cuda::DeviceFree(0, out_[k], matrix_bytes);
  }
}

absl::Status HandwrittenCuda::Launch() {
  absl::Status status;
  const jit::cuda::RawCudaKernel* kernel = Kernel(&status);
  if (kernel == nullptr) return status;
  // One thread per group of 4: the whole grid at once (a grid-stride loop that
  // goes round was slower for this kernel on an H200).
  const int64_t groups = n_ * n_ / 4;
  return kernel->Launch((groups + kBlock - 1) / kBlock, kBlock,
                        {z_, zb_, in_[0], in_[1], in_[2], in_[3], out_[0], out_[1], out_[2],
                         out_[3], static_cast<uint64_t>(n_), columns_ ? 1u : 0u});
}

absl::Status HandwrittenCuda::Wait() { return jit::cuda::Synchronize(0); }

absl::StatusOr<Results> HandwrittenCuda::Collect() {
  Results r;
  std::vector<float>* slots[] = {&r.d_cprev, &r.d_f, &r.d_i, &r.d_g};
  for (int k = 0; k < 4; ++k) {
    slots[k]->resize(static_cast<size_t>(n_ * n_));
    if (absl::Status s = jit::cuda::CopyToHost(0, slots[k]->data(), out_[k], slots[k]->size() * 4);
        !s.ok()) {
      return s;
    }
  }
  return r;
}

#else

absl::StatusOr<std::unique_ptr<HandwrittenCuda>> HandwrittenCuda::Create(const Problem&) {
  return absl::UnavailableError("not run: this build has no NVRTC");
}
HandwrittenCuda::~HandwrittenCuda() = default;
absl::Status HandwrittenCuda::Launch() { return absl::UnavailableError("no NVRTC"); }
absl::Status HandwrittenCuda::Wait() { return absl::UnavailableError("no NVRTC"); }
absl::StatusOr<Results> HandwrittenCuda::Collect() { return absl::UnavailableError("no NVRTC"); }

#endif

}  // namespace dualcast::bench
