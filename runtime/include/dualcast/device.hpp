// dualcast::Device: where an array lives and where its kernels run (the CPU, or a CUDA GPU).
//
// The CPU always exists. `Device::cuda()` names GPU 0; whether it can be used
// is a run-time question (`available()`, `unavailable_reason()`): the CUDA
// driver is loaded with dlopen, so one binary runs on machines with and
// without a GPU. Arrays are created on `default_device()` unless told
// otherwise; it starts as the CPU.
//
// Example:
//   dualcast::Device d = dualcast::Device::cuda();
//   if (!d.available()) std::puts(d.unavailable_reason().c_str());  // "no CUDA device: ..."
#pragma once

#include <string>

namespace dualcast {

class Device {
 public:
  enum class Kind { kCpu, kCuda };

  static Device cpu() { return Device(Kind::kCpu, 0); }
  static Device cuda(int index = 0) { return Device(Kind::kCuda, index); }

  Kind kind() const { return kind_; }
  int index() const { return index_; }
  bool is_cpu() const { return kind_ == Kind::kCpu; }
  bool is_cuda() const { return kind_ == Kind::kCuda; }
  // "cpu" or "cuda:0".
  std::string name() const;
  // Whether kernels and memory can be used there now.
  bool available() const;
  // Empty when available; otherwise e.g. "no CUDA device: libcuda.so.1 not found".
  std::string unavailable_reason() const;

  bool operator==(const Device&) const = default;

 private:
  Device(Kind kind, int index) : kind_(kind), index_(index) {}
  Kind kind_;
  int index_;
};

Device default_device();
void set_default_device(Device device);

}  // namespace dualcast
