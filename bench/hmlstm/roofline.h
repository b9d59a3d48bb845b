// A STREAM-like bandwidth probe, so the benchmark's GB/s column can be read against this machine.
#pragma once

#include <string>

namespace dualcast::bench {

struct Bandwidth {
  double copy_gbps = 0, triad_gbps = 0;  // best of several runs, bytes read + written
  double read_gbps = 0;                  // a sum over one array: bytes read (what a reduction can reach)
  int threads = 0;
};

// Runs copy (a = b), triad (a = b + s*c) and read (s += b) over arrays of `mib` MiB each.
Bandwidth MeasureBandwidth(int mib = 128);
std::string FormatBandwidth(const Bandwidth& bw);

}  // namespace dualcast::bench
