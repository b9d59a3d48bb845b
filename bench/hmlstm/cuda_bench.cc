// The GPU run of dualcast-hmlstm (see cuda_bench.h): device arrays, 128 event-timed calls per size, checked results.
#include "bench/hmlstm/cuda_bench.h"

#include <dlfcn.h>

#include <chrono>
#include <iostream>

#include <dualcast/dualcast.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "bench/hmlstm/implementations.h"
#include "bench/hmlstm/metadata.h"
#include "bench/hmlstm/report.h"

#ifdef DUALCAST_HAVE_NVRTC
#include "jit/cuda/driver.h"
#endif

namespace dualcast::bench {

namespace {

constexpr int kIterations = 128;
constexpr double kTolerance = 1e-5;

// CUDA events from the driver (dlopen'ed like the runtime does, so this
// binary still starts without one). Times the stream dualcast launches on.
class EventTimer {
 public:
  EventTimer() {
#ifdef DUALCAST_HAVE_NVRTC
    lib_ = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib_ == nullptr) return;
    create_ = reinterpret_cast<Create>(dlsym(lib_, "cuEventCreate"));
    record_ = reinterpret_cast<Record>(dlsym(lib_, "cuEventRecord"));
    sync_ = reinterpret_cast<Sync>(dlsym(lib_, "cuEventSynchronize"));
    elapsed_ = reinterpret_cast<Elapsed>(dlsym(lib_, "cuEventElapsedTime"));
    destroy_ = reinterpret_cast<Destroy>(dlsym(lib_, "cuEventDestroy_v2"));
    absl::StatusOr<void*> stream = jit::cuda::DeviceStream(0);
    if (!create_ || !record_ || !sync_ || !elapsed_ || !destroy_ || !stream.ok()) return;
    stream_ = *stream;
    ok_ = create_(&start_, 0) == 0 && create_(&stop_, 0) == 0;
#endif
  }
  ~EventTimer() {
    if (ok_) {
      destroy_(start_);
      destroy_(stop_);
    }
  }
  bool ok() const { return ok_; }
  void Start() { record_(start_, stream_); }
  // Milliseconds since Start(), waiting for the stream.
  double Stop() {
    record_(stop_, stream_);
    sync_(stop_);
    float ms = 0;
    elapsed_(&ms, start_, stop_);
    return ms;
  }

 private:
  using Create = int (*)(void**, unsigned);
  using Record = int (*)(void*, void*);
  using Sync = int (*)(void*);
  using Elapsed = int (*)(float*, void*, void*);
  using Destroy = int (*)(void*);
  void* lib_ = nullptr;
  void* stream_ = nullptr;
  void *start_ = nullptr, *stop_ = nullptr;
  Create create_ = nullptr;
  Record record_ = nullptr;
  Sync sync_ = nullptr;
  Elapsed elapsed_ = nullptr;
  Destroy destroy_ = nullptr;
  bool ok_ = false;
};

}  // namespace

int RunCuda(const Options& o) {
  const Device gpu = Device::cuda();
  if (!gpu.available()) {
    std::string why = gpu.unavailable_reason();
    if (!absl::StartsWith(why, "no CUDA device")) why = "no CUDA device: " + why;
    std::cerr << why << "\n";
    return 1;
  }
  Metadata meta = CollectMetadata(o.command_line);
  meta.device = gpu.name();
  meta.reps = kIterations;
  meta.warmup = o.warmup;
  meta.rounds = 1;
  meta.notes = "GPU path: paper variant only, through dc::partials on CUDA arrays; this code path was "
               "written without a GPU to test on.";
  EventTimer events;
  std::cout << "HM-LSTM paper variant on " << gpu.name() << ", " << kIterations << " iterations per row ("
            << (events.ok() ? "CUDA events" : "host clock around a synchronising copy") << ")\n";
  std::vector<Row> rows;
  bool failed = false;
  for (Layout layout : o.layouts) {
    for (long n : o.sizes) {
      Problem p = MakeProblem(n, layout);
      Reference ref = ComputeReference(p, Variant::kPaper);
      const Shape nn = {p.n, p.n};
      std::vector<Array<float>> in = {
          Array<float>::from(p.z, p.flag_shape(), gpu), Array<float>::from(p.zb, p.flag_shape(), gpu),
          Array<float>::from(p.c_prev, nn, gpu),        Array<float>::from(p.f, nn, gpu),
          Array<float>::from(p.i, nn, gpu),             Array<float>::from(p.g, nn, gpu)};
      PartialsOptions<float> options;
      options.wrt = {2, 3, 4, 5};
      options.values = false;
      for (int k = 0; k < 4; ++k) options.partial_out.push_back(Array<float>::zeros(nn, gpu));
      Row row;
      row.impl = "dualcast-fused";
      row.variant = "paper";
      row.layout = LayoutName(layout);
      row.n = n;
      row.device = gpu.name();
      auto t0 = std::chrono::steady_clock::now();
      partials(HmlstmCell(), in, options);
      (void)options.partial_out[0].to(Device::cpu());  // waits for the device
      row.first_call_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      Results got;
      got.d_cprev = options.partial_out[0].to(Device::cpu()).to_vector();
      got.d_f = options.partial_out[1].to(Device::cpu()).to_vector();
      got.d_i = options.partial_out[2].to(Device::cpu()).to_vector();
      got.d_g = options.partial_out[3].to(Device::cpu()).to_vector();
      row.max_error = MaxError(got, ref, Variant::kPaper);
      if (!(row.max_error <= kTolerance)) {
        row.status = "FAILED";
        failed = true;
        rows.push_back(row);
        continue;
      }
      for (int w = 0; w < o.warmup; ++w) partials(HmlstmCell(), in, options);
      // One interval over all iterations (launches queue back to back), as
      // per-call events would time the launch gaps too.
      double total_ms;
      if (events.ok()) {
        events.Start();
        for (int k = 0; k < kIterations; ++k) partials(HmlstmCell(), in, options);
        total_ms = events.Stop();
      } else {
        auto t = std::chrono::steady_clock::now();
        for (int k = 0; k < kIterations; ++k) partials(HmlstmCell(), in, options);
        (void)options.partial_out[0].to(Device::cpu());
        total_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
      }
      row.times_ms.assign(1, total_ms / kIterations);
      FillStats(row);
      row.gbps = FloorBytes(n, Variant::kPaper) / (row.median_ms * 1e-3) / 1e9;
      rows.push_back(row);
    }
  }
  std::cout << FormatTable(rows, meta);
  return failed ? 1 : 0;
}

}  // namespace dualcast::bench
