// The benchmark's results table and its renderings: stdout table, JSON, CSV, and an SVG bar chart.
#pragma once

#include <string>
#include <vector>

namespace dualcast::bench {

struct Row {
  std::string impl, variant, layout, device;
  long n = 0;
  double median_ms = 0, min_ms = 0;
  double gbps = 0;              // byte floor / median time
  double vs_handwritten = 0;    // median / handwritten median (same variant, layout, n); 0 = n/a
  double over_reverse = 0;      // reverse-where median / median; 0 = n/a
  double max_error = 0;         // vs the float64 reference
  std::string status = "ok";    // ok, FAILED, not installed, skipped: <why>
};

// Fills vs_handwritten and over_reverse from the rows themselves.
void FillRatios(std::vector<Row>& rows);

std::string FormatTable(const std::vector<Row>& rows);
std::string FormatJson(const std::vector<Row>& rows, const std::string& version);
std::string FormatCsv(const std::vector<Row>& rows);
// Grouped bars in the style of the paper's Fig. 1: one panel per (variant,
// layout), groups by n, one bar per implementation, log-scale time axis.
std::string FormatSvg(const std::vector<Row>& rows, const std::string& title);

}  // namespace dualcast::bench
