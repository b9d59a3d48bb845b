// Table, JSON, CSV and SVG renderings of benchmark rows (see report.h).
#include "bench/hmlstm/report.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace dualcast::bench {

namespace {
bool SameCase(const Row& a, const Row& b) {
  return a.variant == b.variant && a.layout == b.layout && a.n == b.n;
}
const Row* Find(const std::vector<Row>& rows, const Row& like, const std::string& impl) {
  for (const Row& r : rows) {
    if (SameCase(r, like) && r.impl == impl && r.status == "ok") return &r;
  }
  return nullptr;
}
std::string Ratio(double x) { return x > 0 ? absl::StrFormat("%.2fx", x) : "-"; }
std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out + "\"";
}
std::string Number(double x) { return std::isfinite(x) ? absl::StrFormat("%.6g", x) : "null"; }
}  // namespace

void FillRatios(std::vector<Row>& rows) {
  for (Row& r : rows) {
    if (r.status != "ok") continue;
    if (const Row* h = Find(rows, r, "handwritten")) r.vs_handwritten = r.median_ms / h->median_ms;
    if (const Row* w = Find(rows, r, "reverse-where")) r.over_reverse = w->median_ms / r.median_ms;
  }
}

std::string FormatTable(const std::vector<Row>& rows) {
  std::string out = absl::StrFormat("%-20s %-6s %-8s %5s %10s %10s %8s %9s %10s %9s  %s\n", "impl",
                                    "var", "layout", "n", "median ms", "min ms", "GB/s",
                                    "vs hand", "vs where", "max err", "status");
  for (const Row& r : rows) {
    if (r.status != "ok" && r.status != "FAILED") {
      absl::StrAppendFormat(&out, "%-20s %-6s %-8s %5d %10s %10s %8s %9s %10s %9s  %s\n", r.impl,
                            r.variant, r.layout, r.n, "-", "-", "-", "-", "-", "-", r.status);
      continue;
    }
    absl::StrAppendFormat(&out, "%-20s %-6s %-8s %5d %10.3f %10.3f %8.1f %9s %10s %9.1e  %s\n",
                          r.impl, r.variant, r.layout, r.n, r.median_ms, r.min_ms, r.gbps,
                          Ratio(r.vs_handwritten), Ratio(r.over_reverse), r.max_error, r.status);
  }
  return out;
}

std::string FormatJson(const std::vector<Row>& rows, const std::string& version) {
  std::string out = "[\n";
  for (size_t k = 0; k < rows.size(); ++k) {
    const Row& r = rows[k];
    absl::StrAppend(&out, "  {\"impl\": ", JsonString(r.impl), ", \"variant\": ",
                    JsonString(r.variant), ", \"layout\": ", JsonString(r.layout),
                    ", \"n\": ", r.n, ", \"median_ms\": ", Number(r.median_ms),
                    ", \"min_ms\": ", Number(r.min_ms), ", \"gbps\": ", Number(r.gbps),
                    ", \"ratio_to_handwritten\": ", Number(r.vs_handwritten),
                    ", \"speedup_over_reverse_where\": ", Number(r.over_reverse),
                    ", \"max_rel_error\": ", Number(r.max_error), ", \"status\": ",
                    JsonString(r.status), ", \"device\": ", JsonString(r.device),
                    ", \"dualcast_version\": ", JsonString(version), "}",
                    k + 1 < rows.size() ? ",\n" : "\n");
  }
  return out + "]\n";
}

std::string FormatCsv(const std::vector<Row>& rows) {
  std::string out =
      "impl,variant,layout,n,median_ms,min_ms,gbps,ratio_to_handwritten,"
      "speedup_over_reverse_where,max_rel_error,status,device\n";
  for (const Row& r : rows) {
    absl::StrAppendFormat(&out, "%s,%s,%s,%d,%s,%s,%s,%s,%s,%s,%s,\"%s\"\n", r.impl, r.variant,
                          r.layout, r.n, Number(r.median_ms), Number(r.min_ms), Number(r.gbps),
                          Number(r.vs_handwritten), Number(r.over_reverse), Number(r.max_error),
                          r.status, r.device);
  }
  return out;
}

std::string FormatSvg(const std::vector<Row>& rows, const std::string& title) {
  // Panels: (variant, layout) in first-seen order; groups: n; bars: impl.
  std::vector<std::pair<std::string, std::string>> panels;
  std::vector<std::string> impls;
  std::set<long> sizes;
  double lo = 1e300, hi = 0;
  for (const Row& r : rows) {
    if (r.status != "ok") continue;
    std::pair<std::string, std::string> key{r.variant, r.layout};
    if (std::find(panels.begin(), panels.end(), key) == panels.end()) panels.push_back(key);
    if (std::find(impls.begin(), impls.end(), r.impl) == impls.end()) impls.push_back(r.impl);
    sizes.insert(r.n);
    lo = std::min(lo, r.median_ms);
    hi = std::max(hi, r.median_ms);
  }
  const char* colors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                          "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  const int panel_w = 520, panel_h = 300, margin = 60, legend_h = 24 * ((int)impls.size() + 1);
  const int width = margin + panel_w + 40;
  const int height = 50 + (int)panels.size() * (panel_h + 70) + legend_h;
  if (panels.empty()) {
    lo = 0.01;
    hi = 1;
  }
  const double log_lo = std::floor(std::log10(lo)), log_hi = std::ceil(std::log10(hi * 1.01));
  const double span = std::max(log_hi - log_lo, 1.0);
  std::string svg = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" "
      "fill=\"white\"/>\n<text x=\"%d\" y=\"24\" font-size=\"16\">%s</text>\n",
      width, height, margin, title);
  for (size_t pi = 0; pi < panels.size(); ++pi) {
    const int top = 50 + (int)pi * (panel_h + 70);
    const int bottom = top + panel_h;
    absl::StrAppendFormat(&svg, "<text x=\"%d\" y=\"%d\" font-size=\"13\">%s variant, z/zb %s</text>\n",
                          margin, top - 8, panels[pi].first, panels[pi].second);
    absl::StrAppendFormat(&svg, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n",
                          margin, top, margin, bottom);
    absl::StrAppendFormat(&svg, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n",
                          margin, bottom, margin + panel_w, bottom);
    for (double e = log_lo; e <= log_hi + 1e-9; e += 1) {
      const int y = bottom - (int)((e - log_lo) / span * panel_h);
      absl::StrAppendFormat(&svg,
                            "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#ddd\"/>\n"
                            "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%g ms</text>\n",
                            margin, y, margin + panel_w, y, margin - 4, y + 4, std::pow(10.0, e));
    }
    const int groups = std::max<int>(1, (int)sizes.size());
    const double group_w = (double)panel_w / groups;
    const double bar_w = group_w * 0.8 / std::max<size_t>(1, impls.size());
    int g = 0;
    for (long n : sizes) {
      const double gx = margin + g * group_w + group_w * 0.1;
      absl::StrAppendFormat(&svg, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">n = %d</text>\n",
                            margin + (g + 0.5) * group_w, bottom + 16, n);
      for (size_t ii = 0; ii < impls.size(); ++ii) {
        for (const Row& r : rows) {
          if (r.status != "ok" || r.n != n || r.impl != impls[ii] || r.variant != panels[pi].first ||
              r.layout != panels[pi].second) {
            continue;
          }
          const double h = (std::log10(r.median_ms) - log_lo) / span * panel_h;
          absl::StrAppendFormat(&svg,
                                "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                                "fill=\"%s\"><title>%s n=%d: %.3f ms</title></rect>\n",
                                gx + ii * bar_w, bottom - h, bar_w * 0.95, std::max(h, 0.5),
                                colors[ii % 10], r.impl, n, r.median_ms);
        }
      }
      ++g;
    }
  }
  const int legend_top = 50 + (int)panels.size() * (panel_h + 70);
  for (size_t ii = 0; ii < impls.size(); ++ii) {
    const int y = legend_top + (int)ii * 20;
    absl::StrAppendFormat(&svg,
                          "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"14\" fill=\"%s\"/>"
                          "<text x=\"%d\" y=\"%d\">%s</text>\n",
                          margin, y, colors[ii % 10], margin + 20, y + 12, impls[ii]);
  }
  return svg + "</svg>\n";
}

}  // namespace dualcast::bench
