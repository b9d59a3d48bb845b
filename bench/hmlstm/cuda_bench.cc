// The GPU run of dualcast-hmlstm (see cuda_bench.h): device arrays, 128 event-timed calls per size, checked results.
#include "bench/hmlstm/cuda_bench.h"

#include <dlfcn.h>

#include <stdlib.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>

#include <dualcast/dualcast.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/hmlstm/cuda_handwritten.h"
#include "bench/hmlstm/implementations.h"
#include "bench/hmlstm/metadata.h"
#include "bench/hmlstm/peers.h"
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

namespace {

// Milliseconds per call of `step` over kIterations calls queued back to back
// (one event interval: per-call events would time the launch gaps too), and in
// *host_ms the host's time per call to queue them: when the two are close, the
// row measures the host, not the GPU.
double TimePerCall(EventTimer& events, const std::function<void()>& step,
                   const std::function<void()>& wait, double* host_ms) {
  auto t = std::chrono::steady_clock::now();
  if (events.ok()) events.Start();
  for (int k = 0; k < kIterations; ++k) step();
  *host_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count() /
             kIterations;
  if (events.ok()) return events.Stop() / kIterations;
  wait();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count() /
         kIterations;
}

// Verifies one row against the float64 reference (its first call, timed as
// first_call_ms), then times kIterations calls; fills row.status.
void MeasureRow(Row& row, EventTimer& events, int warmup, const Reference& ref, Variant variant,
                const std::function<void()>& step, const std::function<void()>& wait,
                const std::function<Results()>& collect) {
  try {
    auto t0 = std::chrono::steady_clock::now();
    step();
    wait();
    row.first_call_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    row.max_error = MaxError(collect(), ref, variant);
    if (!(row.max_error <= kTolerance)) {
      row.status = absl::StrCat("FAILED: max rel error ", row.max_error);
      return;
    }
    for (int w = 0; w < warmup; ++w) step();
    double host_ms = 0;
    row.times_ms.assign(1, TimePerCall(events, step, wait, &host_ms));
    FillStats(row);
    std::cout << absl::StrFormat("  %s %s %s n=%d: %.1f us per call on the GPU, %.1f us to queue it on the host\n",
                                 row.impl, row.variant, row.layout, row.n, row.median_ms * 1e3,
                                 host_ms * 1e3);
    row.gbps = FloorBytes(row.n, variant) / (row.median_ms * 1e-3) / 1e9;
  } catch (const Error& e) {
    row.status = absl::StrCat("FAILED: ", e.what());
  }
}

// The device's copy bandwidth (GB/s, bytes read + written, as STREAM counts a
// copy): the best of 10 event-timed device-to-device copies of 512 MiB, the
// ceiling a memory-bound kernel is measured against. 0 when it cannot be timed.
double DeviceCopyGbps(EventTimer& events) {
#ifdef DUALCAST_HAVE_NVRTC
  constexpr size_t kBytes = size_t{512} << 20;
  if (!events.ok()) return 0;
  absl::StatusOr<uint64_t> a = jit::cuda::DeviceAlloc(0, kBytes), b = jit::cuda::DeviceAlloc(0, kBytes);
  double best_ms = 0;
  if (a.ok() && b.ok() && jit::cuda::FillZero(0, *a, kBytes).ok()) {
    for (int k = 0; k < 11; ++k) {
      events.Start();
      if (!jit::cuda::CopyOnDevice(0, *b, *a, kBytes).ok()) break;
      const double ms = events.Stop();
      if (k > 0 && (best_ms == 0 || ms < best_ms)) best_ms = ms;  // k = 0 warms up
    }
  }
  if (a.ok()) jit::cuda::DeviceFree(0, *a, kBytes);
  if (b.ok()) jit::cuda::DeviceFree(0, *b, kBytes);
  jit::cuda::ReleaseCachedDeviceMemory();  // 1 GiB the rows will not reuse
  return best_ms > 0 ? 2.0 * kBytes / (best_ms * 1e-3) / 1e9 : 0;
#else
  (void)events;
  return 0;
#endif
}

// The full variant on the device: c and the gradients of sum(cbar .* c)
// wrt all six inputs through the tape (fused cell, reductions, sweep on cuda:0).
struct FullOnGpu {
  std::vector<Array<float>> in;
  Array<float> cbar, c;
  std::vector<Array<float>> grads;
  void Run() {
    c = Array<float>();  // the last call's results go first, as on the CPU (implementations.cc)
    grads.clear();
    Tape tape;
    c = broadcast(HmlstmCell(), in[0], in[1], in[2], in[3], in[4], in[5]);
    // As the CPU run writes it: a `c * cbar` still held (a temporary inside the
    // gradient call's own expression) is stored by the one-pass kernel.
    Array<float> loss = sum(c * cbar);
    grads = tape.gradient(loss, in);
  }
  Results Collect() const {
    Results r;
    r.c = c.to(Device::cpu()).to_vector();
    std::vector<float>* slots[] = {&r.d_z, &r.d_zb, &r.d_cprev, &r.d_f, &r.d_i, &r.d_g};
    for (int j = 0; j < 6; ++j) *slots[j] = grads[static_cast<size_t>(j)].to(Device::cpu()).to_vector();
    return r;
  }
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
  meta.notes = "GPU path: paper = dc::partials, full = Tape::gradient of sum(cbar * c), on CUDA "
               "arrays; peers (with --peers) on the same GPU, timed the same way: 128 calls queued "
               "back to back, one wait, the mean per call. %copy is against this device's "
               "device-to-device copy bandwidth.";
  EventTimer events;
  std::cout << "HM-LSTM on " << gpu.name() << ", " << kIterations << " iterations per row ("
            << (events.ok() ? "CUDA events" : "host clock around a synchronising copy") << ")\n";
  // %copy on this device is against its own copy bandwidth, not the host's STREAM.
  meta.stream.copy_gbps = DeviceCopyGbps(events);
  meta.stream.triad_gbps = meta.stream.read_gbps = 0;
  std::cout << "device-to-device copy: " << meta.stream.copy_gbps
            << " GB/s (read + written; the 'STREAM copy' figure below)\n";
  std::unique_ptr<PeerProcess> peers;
  std::vector<Row> rows;
  if (o.peers) {
    std::string why;
    setenv("DUALCAST_PEER_DEVICE", "cuda", 1);  // the peers place their arrays on the GPU
    peers = PeerProcess::Start(PeersPython(o.python), meta.threads, &why);
    if (peers) {
      meta.peer_versions = peers->versions();
    } else {
      std::cout << "framework peers not run: " << why << "\n";
    }
  }
  bool failed = false;
  for (Variant variant : o.variants) {
    for (Layout layout : o.layouts) {
      for (long n : o.sizes) {
        Problem p = MakeProblem(n, layout);
        Reference ref = ComputeReference(p, variant);
        const Shape nn = {p.n, p.n};
        std::vector<Array<float>> in = {
            Array<float>::from(p.z, p.flag_shape(), gpu), Array<float>::from(p.zb, p.flag_shape(), gpu),
            Array<float>::from(p.c_prev, nn, gpu),        Array<float>::from(p.f, nn, gpu),
            Array<float>::from(p.i, nn, gpu),             Array<float>::from(p.g, nn, gpu)};
        Row row;
        // full: the plan Tape::gradient picks by itself (the CPU run's `dualcast` row);
        // paper: cached partials, as the CPU run's `dualcast-fused` row.
        row.impl = variant == Variant::kPaper ? "dualcast-fused" : "dualcast";
        row.variant = VariantName(variant);
        row.layout = LayoutName(layout);
        row.n = n;
        row.device = gpu.name();
        std::function<void()> step, wait;
        std::function<Results()> collect;
        PartialsOptions<float> options;
        FullOnGpu full;
        if (variant == Variant::kPaper) {
          options.wrt = {2, 3, 4, 5};
          options.values = false;
          for (int k = 0; k < 4; ++k) options.partial_out.push_back(Array<float>::zeros(nn, gpu));
          step = [&] { partials(HmlstmCell(), in, options); };
          wait = [&] { (void)options.partial_out[0].to(Device::cpu()); };
          collect = [&] {
            Results got;
            got.d_cprev = options.partial_out[0].to(Device::cpu()).to_vector();
            got.d_f = options.partial_out[1].to(Device::cpu()).to_vector();
            got.d_i = options.partial_out[2].to(Device::cpu()).to_vector();
            got.d_g = options.partial_out[3].to(Device::cpu()).to_vector();
            return got;
          };
        } else {
          full.in = in;
          full.cbar = Array<float>::from(p.cbar, nn, gpu);
          step = [&] { full.Run(); };
          wait = [&] { (void)full.grads[2].to(Device::cpu()); };
          collect = [&] { return full.Collect(); };
        }
        MeasureRow(row, events, o.warmup, ref, variant, step, wait, collect);
        failed |= row.status != "ok";
        rows.push_back(row);
        if (variant == Variant::kPaper) {
          // The hand-written CUDA kernel of the same partials (the `slower than hand` column).
          Row hand;
          hand.impl = "handwritten";
          hand.variant = row.variant;
          hand.layout = row.layout;
          hand.n = n;
          hand.device = row.device;
          absl::StatusOr<std::unique_ptr<HandwrittenCuda>> kernel = HandwrittenCuda::Create(p);
          if (!kernel.ok()) {
            hand.status = std::string(kernel.status().message());
            failed |= !absl::StartsWith(hand.status, "not run");
          } else {
            HandwrittenCuda& k = **kernel;
            // MeasureRow reports an Error as the row's status.
            const auto check = [](const absl::Status& s) {
              if (!s.ok()) throw Error(ErrorKind::kDevice, std::string(s.message()));
            };
            MeasureRow(hand, events, o.warmup, ref, variant, [&] { check(k.Launch()); },
                       [&] { check(k.Wait()); },
                       [&] {
                         absl::StatusOr<Results> got = k.Collect();
                         check(got.status());
                         return *got;
                       });
            failed |= hand.status != "ok";
          }
          rows.push_back(hand);
        }
        if (!peers) continue;
        for (PeerCase& pc : peers->SetUp(p, variant)) {
          Row r;
          r.variant = row.variant;
          r.layout = row.layout;
          r.n = n;
          r.impl = pc.impl;
          r.device = gpu.name() + ", python peer";
          r.status = pc.status;
          r.first_call_ms = pc.first_call_ms;
          if (pc.status == "ok") {
            r.max_error = MaxError(pc.results, ref, variant);
            std::vector<double> t;
            if (!(r.max_error <= kTolerance)) {
              r.status = absl::StrCat("FAILED: max rel error ", r.max_error);
            } else if (!peers->Warmup(pc.impl, o.warmup) ||
                       (t = peers->Time(pc.impl, kIterations)).size() != size_t{kIterations}) {
              r.status = "error: peer process stopped (log: " + peers->log_path() + ")";
            } else {
              r.times_ms = t;
              FillStats(r);
              r.gbps = FloorBytes(n, variant) / (r.median_ms * 1e-3) / 1e9;
              r.compile_ms = std::max(0.0, r.first_call_ms - r.median_ms);
            }
          }
          rows.push_back(r);
        }
      }
    }
  }
  FillRatios(rows);
  std::cout << FormatTable(rows, meta);
  if (!o.json.empty()) std::ofstream(o.json) << FormatJson(rows, meta);
  return failed ? 1 : 0;
}

}  // namespace dualcast::bench
