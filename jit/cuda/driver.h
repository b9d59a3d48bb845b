// The CUDA driver, loaded at run time: availability, devices, contexts, streams, memory and copies.
//
// One binary runs on machines with and without a GPU: the driver is
// dlopen'ed on first use (never linked), and when it is missing, has no
// device, or fails cuInit, DriverStatus() says why ("no CUDA device:
// libcuda.so.1 could not be loaded (...)") and everything else keeps working
// on the CPU. Every CUresult is checked and becomes an absl::Status naming
// the call (kDevice; kMemory for out-of-memory).
//
// Contexts: each device's primary context (cuDevicePrimaryCtxRetain, shared
// with the CUDA runtime and cuBLAS in the same process), retained once and
// made current on the calling thread by every function here.
// Streams: one non-blocking stream per device carries every launch and copy
// of dualcast, so work is ordered without device-wide synchronisation; copies
// to the host wait on that stream.
// Memory: a caching allocator. Freed blocks are kept per device by rounded
// size and handed out again, so repeated steps of a training loop or a
// benchmark never call cuMemAlloc/cuMemFree (which synchronise the device).
// An allocation that fails with out-of-memory returns the cached blocks to
// the driver and tries once more.
//
// Device addresses are plain uint64_t (CUdeviceptr) and streams opaque
// pointers, so this header needs no <cuda.h>.
//
// Example:
//   if (!DriverStatus().ok()) { puts(std::string(DriverStatus().message()).c_str()); return; }
//   absl::StatusOr<uint64_t> buf = DeviceAlloc(0, n * sizeof(float));
//   CopyToDevice(0, *buf, host.data(), n * sizeof(float));
//   CopyToHost(0, host.data(), *buf, n * sizeof(float));   // waits for the device
//   DeviceFree(0, *buf, n * sizeof(float));                 // back to the cache
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace dualcast::jit::cuda {

// OK when the driver is loaded, initialised and sees at least one device;
// otherwise kDevice with a message starting "no CUDA device: " that says why.
// Probed once per process; thread-safe.
const absl::Status& DriverStatus();
// Number of devices (0 when DriverStatus() is not OK).
int DeviceCount();
// "CUDA driver 13.0" or the reason there is none.
std::string DriverDescription();

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int major = 0, minor = 0;  // compute capability
  int multiprocessors = 0;
  size_t total_bytes = 0;
};
absl::StatusOr<DeviceInfo> GetDeviceInfo(int ordinal);

// Makes `ordinal`'s primary context current on this thread (retaining it once).
absl::Status MakeCurrent(int ordinal);
// dualcast's stream on `ordinal` (a CUstream), created on first use.
absl::StatusOr<void*> DeviceStream(int ordinal);
// Waits for everything dualcast queued on `ordinal`.
absl::Status Synchronize(int ordinal);

// Memory through the caching allocator. `bytes` == 0 gives address 0.
absl::StatusOr<uint64_t> DeviceAlloc(int ordinal, size_t bytes);
// Returns a block to the cache (`bytes` as allocated). Never fails.
void DeviceFree(int ordinal, uint64_t address, size_t bytes);
// Gives every cached free block back to the driver.
void ReleaseCachedDeviceMemory();
// Bytes held by the cache (free blocks), all devices.
size_t CachedDeviceBytes();
// Calls to cuMemAlloc so far (the benchmark checks that steady state makes none).
int64_t DeviceAllocCalls();

// Copies, ordered on the device's stream. CopyToHost returns when the bytes
// are on the host; the others return once queued.
absl::Status CopyToDevice(int ordinal, uint64_t dst, const void* src, size_t bytes);
absl::Status CopyToHost(int ordinal, void* dst, uint64_t src, size_t bytes);
absl::Status CopyOnDevice(int ordinal, uint64_t dst, uint64_t src, size_t bytes);
absl::Status FillZero(int ordinal, uint64_t dst, size_t bytes);

}  // namespace dualcast::jit::cuda
