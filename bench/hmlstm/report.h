// The benchmark's results table and its renderings: stdout table, JSON (with metadata), CSV, SVG plot.
#pragma once

#include <string>
#include <vector>

#include "bench/hmlstm/metadata.h"

namespace dualcast::bench {

struct Row {
  std::string impl, variant, layout, device;
  long n = 0;
  std::vector<double> times_ms;  // every timed call, all rounds (not rendered)
  double median_ms = 0, min_ms = 0, max_ms = 0;
  // The first (cold) call, before warm-up: compile/trace + one run.
  double first_call_ms = 0;
  // dualcast rows: JIT compile time inside the first call (jit::GetStats;
  // kernels already compiled for an earlier row cost 0); peers: first call
  // minus median (trace + compile); handwritten: 0.
  double compile_ms = 0;
  double gbps = 0;                // byte floor / median time
  double slower_than_hand = 0;    // median / handwritten median (same case); 0 = n/a
  double faster_than_where = 0;   // reverse-where median / median (same case); 0 = n/a
  double max_error = 0;           // vs the float64 reference
  std::string status = "ok";      // ok, FAILED: ..., not installed: ..., error: ...
};

// Median, min, max of times_ms.
void FillStats(Row& row);
// Fills slower_than_hand and faster_than_where from the rows themselves.
void FillRatios(std::vector<Row>& rows);

std::string FormatTable(const std::vector<Row>& rows, const Metadata& meta);
std::string FormatJson(const std::vector<Row>& rows, const Metadata& meta);
std::string FormatCsv(const std::vector<Row>& rows, const Metadata& meta);
// Grouped bars in the style of the paper's Fig. 1: one panel per (variant,
// layout), groups by n, one bar (series) per implementation including the
// peers, log-scale time axis, the machine in the caption.
std::string FormatSvg(const std::vector<Row>& rows, const Metadata& meta);

}  // namespace dualcast::bench
