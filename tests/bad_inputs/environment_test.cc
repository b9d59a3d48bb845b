// Bad-input catalogue, environment: invalid cache directories, NVRTC failure, no CUDA device, out of memory.
#include <doctest/doctest.h>

#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bad_inputs/bad_inputs.h"
#include "jit/codegen/broadcast_layout.h"
#include "jit/codegen/disk_cache.h"
#include "jit/codegen/kernel_spec.h"
#include "jit/cpu/cpu_backend.h"
#include "jit/cpu/launch.h"
#include "jit/ir/ir.h"

#if defined(DUALCAST_HAVE_NVRTC)
#include <nvrtc.h>
#endif

// The out-of-memory case asks for 128 TiB on purpose: under AddressSanitizer
// that must come back as a null pointer (an Error), not an ASan abort.
extern "C" const char* __asan_default_options() { return "allocator_may_return_null=1"; }

namespace dualcast::bad_inputs {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  std::string path;
  TempDir() {
    std::string templ = (fs::temp_directory_path() / "dualcast_bad_inputs.XXXXXX").string();
    REQUIRE(::mkdtemp(templ.data()) != nullptr);
    path = templ;
  }
  ~TempDir() {
    std::error_code ec;
    fs::permissions(path, fs::perms::owner_all, ec);
    fs::remove_all(path, ec);
  }
};

// A kernel y = x * scale + 1 over a rank-1 layout; `scale` makes it unique in
// the process, so CompileCpuKernel cannot return an already linked one.
jit::KernelSpec UniqueSpec(double scale) {
  auto f = std::make_shared<jit::Function>("bad_cache_kernel");
  jit::Builder b(*f);
  jit::ValueId x = b.Input(jit::Type::kF64);
  b.Return({b.Add(b.Mul(x, b.Const(jit::Type::kF64, scale)), b.Const(jit::Type::kF64, 1))});
  std::vector<std::vector<int64_t>> shapes = {{4}};
  jit::BroadcastLayout layout = jit::MergeBroadcast(shapes, {}, "bad_cache_kernel").value();
  return jit::KernelSpec::For(f, jit::Type::kF64, jit::Target::kCpu, layout);
}

// Compiles through `store` and checks the kernel computes x * scale + 1.
void CompileAndRun(double scale, jit::ObjectStore* store) {
  jit::KernelSpec spec = UniqueSpec(scale);
  absl::StatusOr<jit::CompiledCpuKernel> k = jit::CompileCpuKernel(spec, store);
  REQUIRE_MESSAGE(k.ok(), k.status().ToString());
  const double in[4] = {1, 2, 3, 4};
  double out[4] = {0, 0, 0, 0};
  const int64_t sizes[1] = {4}, strides[1] = {1};
  const void* ins[1] = {in};
  void* outs[1] = {out};
  jit::KernelArgs args{sizes, ins, strides, outs, strides, 0, 4};
  jit::LaunchCpu(k->entry, args, 1, {1, 1, 8});
  for (int i = 0; i < 4; ++i) CHECK(out[i] == in[i] * scale + 1);
}

TEST_CASE("invalid cache directory, read-only: the cache disables itself, kernels still compile") {
  // Tests run as root in CI, where permission bits do not stop writes: use a
  // directory no one can write then (/proc), a chmod 0555 one otherwise.
  TempDir tmp;
  std::string dir = tmp.path + "/ro";
  if (::geteuid() == 0) {
    dir = "/proc";
  } else {
    fs::create_directory(dir);
    fs::permissions(dir, fs::perms::owner_read | fs::perms::owner_exec);
  }
  jit::DiskCache cache(dir);  // warns once on stderr, never throws
  CHECK_FALSE(cache.enabled());
  cache.Save("key", "bytes");
  CHECK_FALSE(cache.Load("key").has_value());
  CompileAndRun(1.25, &cache);
}

TEST_CASE("invalid cache directory, missing and uncreatable: disabled, kernels still compile") {
  TempDir tmp;
  const std::string file = tmp.path + "/a_file";
  std::ofstream(file) << "not a directory";
  jit::DiskCache under_file(file + "/cache");  // parent is a regular file
  CHECK_FALSE(under_file.enabled());
  jit::DiskCache under_proc("/proc/dualcast/cache");  // cannot be created, even by root
  CHECK_FALSE(under_proc.enabled());
  CompileAndRun(1.5, &under_file);
  CompileAndRun(1.75, &under_proc);
}

TEST_CASE("invalid cache directory, corrupted object with a valid frame: never linked blindly") {
  // disk_cache_test covers torn/garbled frames; this is the nasty case: the
  // frame (magic, version, key, size, checksum) is perfect but the payload is
  // not an object file. Linking it must fail cleanly and compiling must win.
  TempDir tmp;
  jit::DiskCache cache(tmp.path);
  REQUIRE(cache.enabled());
  jit::KernelSpec spec = UniqueSpec(2.25);
  const std::string key = jit::CpuObjectKey(spec);
  std::string payload = "\x7f" "ELF this is not an object file";
  payload.resize(4096, '\xcc');
  cache.Save(key, payload);
  REQUIRE(cache.Load(key) == payload);
  absl::StatusOr<jit::CompiledCpuKernel> k = jit::CompileCpuKernel(spec, &cache);
  if (k.ok()) {
    CHECK_FALSE(k->from_object_store);
    CompileAndRun(2.25, &cache);
  } else {
    // Acceptable too, as long as it is a clear error and not a crash.
    const absl::Status& s = k.status();
    MESSAGE("corrupted object reported as: ", s.ToString());
    CHECK_FALSE(s.ok());
  }
}

// A read error on a cached object (here a directory at its name, as EIO on
// NFS would be) used to escape as std::ios_base::failure at every compile.
TEST_CASE("invalid cache directory, an unreadable object: the kernel is compiled instead") {
  TempDir tmp;
  jit::DiskCache cache(tmp.path);
  REQUIRE(cache.enabled());
  const std::string path = cache.PathFor(jit::CpuObjectKey(UniqueSpec(2.5)));
  fs::create_directory(path);
  CompileAndRun(2.5, &cache);  // warns once on stderr naming `path`
  CHECK(cache.counters().corrupt >= 1);
}

TEST_CASE("NVRTC compile failure (injected): the compiler log is reported") {
#if defined(DUALCAST_HAVE_NVRTC)
  // PENDING the CUDA backend: until jit/cuda exists, NVRTC is driven directly
  // with deliberately broken source. Once the backend lands, inject the same
  // source through its compile path and assert Error(kCompile) carrying this log.
  const char* source =
      "extern \"C\" __global__ void broken(double* y) { y[0] = undefined_symbol_42 * 2; }\n";
  nvrtcProgram program;
  REQUIRE(nvrtcCreateProgram(&program, source, "broken.cu", 0, nullptr, nullptr) == NVRTC_SUCCESS);
  const char* options[] = {"--gpu-architecture=compute_90"};
  nvrtcResult result = nvrtcCompileProgram(program, 1, options);
  CHECK(result == NVRTC_ERROR_COMPILATION);
  size_t log_size = 0;
  REQUIRE(nvrtcGetProgramLogSize(program, &log_size) == NVRTC_SUCCESS);
  std::string log(log_size, '\0');
  REQUIRE(nvrtcGetProgramLog(program, log.data()) == NVRTC_SUCCESS);
  CHECK(Contains(log, "undefined_symbol_42"));
  CHECK(Contains(log, "broken.cu"));
  CHECK(nvrtcDestroyProgram(&program) == NVRTC_SUCCESS);
#else
  MESSAGE("skipped: built without NVRTC (no CUDA toolkit)");
#endif
}

TEST_CASE("no CUDA device: Device::cuda() explains why, Array::to(cuda) throws kDevice") {
  Device cuda = Device::cuda();
  if (cuda.available()) {
    MESSAGE("skipped: a CUDA device is available here");
    return;
  }
  CHECK(Contains(cuda.unavailable_reason(), "no CUDA device"));
  auto a = Array<double>::uniform({3}, 1);
  std::optional<Error> e = Catch([&] { a.to(cuda); });
  REQUIRE(e);
  CHECK(e->kind() == ErrorKind::kDevice);
  CHECK(Contains(e->what(), "no CUDA device"));
  e = Catch([&] { Array<float>::zeros({2}, cuda); });
  REQUIRE(e);
  CHECK(e->kind() == ErrorKind::kDevice);
  CHECK(a.to_vector().size() == 3);  // the CPU array is fine
}

// Found by the bad-input hunt: CUDA creation was made on the host and moved
// with Array::to, so the error named Array::to, a call the user never made.
TEST_CASE("creating an array on a missing CUDA device: kDevice naming the call") {
  if (Device::cuda().available()) {
    MESSAGE("skipped: a CUDA device is available here");
    return;
  }
  const Device cuda = Device::cuda();
  const std::vector<std::pair<std::string, std::function<void()>>> calls = {
      {"Array::zeros", [&] { Array<double>::zeros({3}, cuda); }},
      {"Array::ones", [&] { Array<float>::ones({3}, cuda); }},
      {"Array::full", [&] { Array<double>::full({3}, 2.0, cuda); }},
      {"Array::from", [&] { Array<double>::from({1, 2}, {2}, cuda); }},
      {"Array::scalar", [&] { Array<double>::scalar(1, cuda); }},
      {"Array::uniform", [&] { Array<double>::uniform({3}, 1, 0, 1, cuda); }},
      {"Array::normal", [&] { Array<double>::normal({3}, 1, 0, 1, cuda); }},
      {"Array::arange", [&] { Array<float>::arange(3, cuda); }},
  };
  for (const auto& [name, call] : calls) {
    CAPTURE(name);
    std::optional<Error> e = Catch(call);
    REQUIRE(e);
    CHECK(e->kind() == ErrorKind::kDevice);
    CHECK(Contains(e->what(), name + ": cannot create an array on cuda:0"));
    CHECK(Contains(e->what(), "no CUDA device"));
    CHECK_FALSE(Contains(e->what(), "Array::to"));
  }
}

// Found by the bad-input hunt: cuda(-1) was reported as "no CUDA device", and
// set_default_device(cuda(99)) was accepted, so every later creation failed.
TEST_CASE("an invalid CUDA device index, and an unusable default device, are refused") {
  // cuda(-1) is not a device: says so (not "no CUDA device"), here or on a GPU machine.
  const Device bad = Device::cuda(-1);
  CHECK_FALSE(bad.available());
  CHECK(Contains(bad.unavailable_reason(), "invalid CUDA device index -1"));
  std::optional<Error> e = Catch([&] { Array<double>::zeros({2}, bad); });
  REQUIRE(e);
  CHECK(e->kind() == ErrorKind::kDevice);
  CHECK(Contains(e->what(), "invalid CUDA device index -1"));
  // set_default_device checks now, not at every later creation; the default stays.
  e = Catch([&] { set_default_device(bad); });
  REQUIRE(e);
  CHECK(e->kind() == ErrorKind::kInvalidArgument);
  CHECK(Contains(e->what(), "set_default_device(cuda:-1)"));
  CHECK(default_device().is_cpu());
  e = Catch([&] { set_default_device(Device::cuda(99)); });  // no machine here has 100 GPUs
  REQUIRE(e);
  CHECK(e->kind() == ErrorKind::kDevice);
  CHECK(Contains(e->what(), "set_default_device(cuda:99)"));
  CHECK(default_device().is_cpu());
  CHECK(Array<double>::zeros({2}).device().is_cpu());
  set_default_device(Device::cpu());  // always fine
  CHECK(default_device().is_cpu());
}

// Found by the bad-input hunt: copy() was from(to_vector()), and str() printed
// from to_vector(), so a large array (or stride-0 view) made a whole host
// vector first: std::bad_alloc / std::length_error escaped instead of Error,
// and str() of a 2^27-element view used 1 GB to print 45 characters.
TEST_CASE("copy, to_vector, str and a copying reshape of a huge view: kMemory or a short print, never std::bad_alloc") {
  static double one = 1.5;
  // 2^44 doubles = 128 TiB: more than the address space, whatever the overcommit policy.
  auto huge = Array<double>::view(&one, {int64_t{1} << 44}, {0});
  std::optional<Error> e = Catch([&] { huge.copy(); });
  REQUIRE(e);
  CHECK(e->kind() == ErrorKind::kMemory);
  CHECK(Contains(e->what(), "140737488355328 bytes"));  // 2^47
  e = Catch([&] { huge.to_vector(); });
  REQUIRE(e);
  CHECK(e->kind() == ErrorKind::kMemory);
  CHECK(Contains(e->what(), "Array::to_vector"));
  CHECK(Contains(e->what(), "17592186044416 elements"));
  auto square = Array<double>::view(&one, {int64_t{1} << 22, int64_t{1} << 22}, {0, 0});
  e = Catch([&] { square.transpose().reshape({int64_t{1} << 44}); });  // not contiguous: copies
  REQUIRE(e);
  CHECK(e->kind() == ErrorKind::kMemory);
  // The failure names the call the user made, not only the copy inside it.
  CHECK(Contains(e->what(), "reshape: an array of shape [4194304, 4194304] with strides [0, 0] is not "
                            "contiguous, so reshape into [17592186044416] copies it"));
  CHECK(Contains(e->what(), "140737488355328 bytes"));
  // 2^61 elements: more than a std::vector can hold (std::length_error before).
  auto beyond = Array<double>::view(&one, {int64_t{1} << 61}, {0});
  e = Catch([&] { beyond.to_vector(); });
  REQUIRE(e);
  CHECK(e->kind() == ErrorKind::kMemory);
  CHECK(Contains(e->what(), "2305843009213693952 elements"));
  // Printing reads only what it prints.
  CHECK(huge.str() == "array([1.5, 1.5, 1.5, ..., 1.5, 1.5, 1.5], dtype=float64)");
  CHECK(Contains(square.str(), "[1.5, 1.5, 1.5, ..., 1.5, 1.5, 1.5],\n       ...,\n"));
  // The process carries on.
  CHECK(sum(Array<double>::ones({100})).item() == 100.0);
}

TEST_CASE("out of memory on allocation: kMemory with the size, and the process carries on") {
  // 2^44 doubles = 128 TiB: more than any machine (and the address space) has.
  std::optional<Error> e = Catch([] { Array<double>::zeros({int64_t{1} << 22, int64_t{1} << 22}); });
  REQUIRE(e);
  CHECK(e->kind() == ErrorKind::kMemory);
  CHECK(Contains(e->what(), "out of memory"));
  auto fine = Array<double>::ones({1000});
  CHECK(sum(fine).item() == 1000.0);
}

TEST_CASE("out of memory for a broadcast's result: the error names the kernel and the shape") {
  // The inputs are small; their broadcast, 2^22 x 2^22 doubles (128 TiB), is not.
  const Kernel mul = kernel("oom_product", [](auto x, auto y) { return x * y; });
  auto x = Array<double>::ones({int64_t{1} << 22, 1});
  auto y = Array<double>::ones({1, int64_t{1} << 22});
  std::optional<Error> e = Catch([&] { broadcast(mul, x, y).eval(); });
  REQUIRE(e);
  CHECK(e->kind() == ErrorKind::kMemory);
  CHECK(Contains(e->what(), "oom_product"));
  CHECK(Contains(e->what(), "[4194304, 4194304]"));
  CHECK(Contains(e->what(), "out of memory"));
  auto small = broadcast(mul, Array<double>::ones({2, 1}), Array<double>::ones({1, 3}));
  CHECK(sum(small).item() == 6.0);  // the process carries on
}

// Found by this catalogue: the element count used to be an unchecked int64
// product, so {2^40, 2^40} wrapped to a 0-byte "array" of 2^80 elements.
TEST_CASE("a shape whose element count overflows int64: a clear error, not a wild allocation") {
  // Run it in a child process so that a crash is reported as a failure
  // instead of ending the test run.
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    try {
      Array<double>::zeros({int64_t{1} << 40, int64_t{1} << 40});
    } catch (const Error& err) {
      ::_exit(err.kind() == ErrorKind::kMemory || err.kind() == ErrorKind::kShape ? 0 : 2);
    } catch (...) {
      ::_exit(3);
    }
    ::_exit(4);  // no error at all
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  INFO("child: ", std::string(WIFSIGNALED(status) ? "killed by a signal (crash)"
                 : WEXITSTATUS(status) == 4 ? "no error: the array was created" : "other error"));
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

}  // namespace
}  // namespace dualcast::bad_inputs
