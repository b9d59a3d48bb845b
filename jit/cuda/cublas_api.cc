// Loads libcublas with dlopen, keeps one handle per device on dualcast's stream, and runs row-major gemms.
#include "jit/cuda/cublas_api.h"

#include <cublas_v2.h>
#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "jit/cuda/driver.h"
#include "jit/error.h"

#ifndef DUALCAST_NVRTC_MAJOR
#error "DUALCAST_NVRTC_MAJOR (the toolkit's major version) must be defined by the build"
#endif

namespace dualcast::jit::cuda {
namespace {

#define DUALCAST_CUBLAS_FUNCTIONS(X) \
  X(cublasCreate_v2) X(cublasSetStream_v2) X(cublasSetMathMode) X(cublasSgemm_v2) X(cublasDgemm_v2)

struct Loaded {
#define DUALCAST_CUBLAS_MEMBER(name) decltype(&::name) name = nullptr;
  DUALCAST_CUBLAS_FUNCTIONS(DUALCAST_CUBLAS_MEMBER)
#undef DUALCAST_CUBLAS_MEMBER
  absl::Status status;
};

const Loaded* Load() {
  auto* loaded = new Loaded;  // leaked: handles may be used during exit
  std::vector<std::string> names;
  if (const char* env = std::getenv("DUALCAST_CUBLAS_LIBRARY"); env != nullptr && *env != '\0') {
    names = {env};
  } else {
    names = {absl::StrCat("libcublas.so.", DUALCAST_NVRTC_MAJOR), "libcublas.so"};
  }
  void* lib = nullptr;
  std::vector<std::string> tried;
  for (const std::string& name : names) {
    if ((lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) != nullptr) break;
    const char* why = dlerror();
    tried.push_back(absl::StrCat(name, " (", why != nullptr ? why : "not found", ")"));
  }
  if (lib == nullptr) {
    loaded->status = MakeStatus(
        ErrorKind::kDevice,
        absl::StrCat("cuBLAS (needed for matmul on CUDA arrays) could not be loaded; tried ",
                     absl::StrJoin(tried, "; "), ". Install the CUDA toolkit's cuBLAS ",
                     DUALCAST_NVRTC_MAJOR,
                     ".x or set DUALCAST_CUBLAS_LIBRARY; matmul on CPU arrays does not need it"));
    return loaded;
  }
  std::vector<std::string> missing;
#define DUALCAST_CUBLAS_RESOLVE(name)                                       \
  loaded->name = reinterpret_cast<decltype(&::name)>(dlsym(lib, #name)); \
  if (loaded->name == nullptr) missing.push_back(#name);
  DUALCAST_CUBLAS_FUNCTIONS(DUALCAST_CUBLAS_RESOLVE)
#undef DUALCAST_CUBLAS_RESOLVE
  if (!missing.empty()) {
    loaded->status = MakeStatus(ErrorKind::kDevice,
                                absl::StrCat("cuBLAS lacks ", absl::StrJoin(missing, ", ")));
  }
  return loaded;
}

const Loaded& Get() {
  static const Loaded* loaded = Load();
  return *loaded;
}

absl::Status CheckBlas(cublasStatus_t s, const char* call, const std::string& what) {
  if (s == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  return MakeStatus(s == CUBLAS_STATUS_ALLOC_FAILED ? ErrorKind::kMemory : ErrorKind::kDevice,
                    absl::StrFormat("%s failed with cublasStatus_t %d during %s", call,
                                    static_cast<int>(s), what));
}

// The handle of `ordinal`, created on first use with the stream and math mode set.
absl::StatusOr<cublasHandle_t> Handle(int ordinal) {
  static std::mutex mu;
  static auto* handles = new std::vector<cublasHandle_t>;
  std::lock_guard<std::mutex> lock(mu);
  if (handles->size() <= static_cast<size_t>(ordinal)) handles->resize(ordinal + 1, nullptr);
  cublasHandle_t& h = (*handles)[static_cast<size_t>(ordinal)];
  if (h != nullptr) return h;
  const std::string what = absl::StrCat("cuBLAS start-up on cuda:", ordinal);
  if (absl::Status s = MakeCurrent(ordinal); !s.ok()) return s;
  absl::StatusOr<void*> stream = DeviceStream(ordinal);
  if (!stream.ok()) return stream.status();
  const Loaded& l = Get();
  cublasHandle_t created = nullptr;
  if (absl::Status s = CheckBlas(l.cublasCreate_v2(&created), "cublasCreate", what); !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckBlas(
          l.cublasSetStream_v2(created, static_cast<cudaStream_t>(*stream)), "cublasSetStream", what);
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          CheckBlas(l.cublasSetMathMode(created, CUBLAS_DEFAULT_MATH), "cublasSetMathMode", what);
      !s.ok()) {
    return s;
  }
  h = created;
  return h;
}

}  // namespace

const absl::Status& CublasStatus() { return Get().status; }

absl::Status CublasGemm(int ordinal, bool f64, const GemmMatrix& a, const GemmMatrix& b,
                        int64_t m, int64_t n, int64_t k, uint64_t c, int64_t ldc) {
  if (!DriverStatus().ok()) return DriverStatus();
  if (!CublasStatus().ok()) return CublasStatus();
  absl::StatusOr<cublasHandle_t> handle = Handle(ordinal);
  if (!handle.ok()) return handle.status();
  if (absl::Status s = MakeCurrent(ordinal); !s.ok()) return s;
  // Row-major C = A B is column-major C^T = B^T A^T: row-major memory of a
  // matrix is the column-major memory of its transpose, so B comes first, and
  // an operand stored column-major (transposed view) needs op T.
  const cublasOperation_t op_b = b.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_a = a.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  const std::string what = absl::StrFormat("matmul (%d x %d) * (%d x %d) on cuda:%d", m, k, k, n,
                                           ordinal);
  const Loaded& l = Get();
  if (f64) {
    const double one = 1, zero = 0;
    return CheckBlas(
        l.cublasDgemm_v2(*handle, op_b, op_a, int(n), int(m), int(k), &one,
                         reinterpret_cast<const double*>(b.address), int(b.ld),
                         reinterpret_cast<const double*>(a.address), int(a.ld), &zero,
                         reinterpret_cast<double*>(c), int(ldc)),
        "cublasDgemm", what);
  }
  const float one = 1, zero = 0;
  return CheckBlas(l.cublasSgemm_v2(*handle, op_b, op_a, int(n), int(m), int(k), &one,
                                    reinterpret_cast<const float*>(b.address), int(b.ld),
                                    reinterpret_cast<const float*>(a.address), int(a.ld), &zero,
                                    reinterpret_cast<float*>(c), int(ldc)),
                   "cublasSgemm", what);
}

}  // namespace dualcast::jit::cuda
