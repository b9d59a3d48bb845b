// Table, JSON, CSV and SVG renderings of benchmark rows and the run's metadata (see report.h).
#include "bench/hmlstm/report.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

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
bool Timed(const Row& r) { return r.status == "ok"; }
std::string Ratio(double x) { return x > 0 ? absl::StrFormat("%.2fx", x) : "-"; }
std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (static_cast<unsigned char>(ch) < 0x20) {
      absl::StrAppendFormat(&out, "\\u%04x", static_cast<int>(ch));
    } else {
      out += ch;
    }
  }
  return out + "\"";
}
std::string XmlEscape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == '<') out += "&lt;";
    else if (ch == '>') out += "&gt;";
    else if (ch == '&') out += "&amp;";
    else if (ch == '"') out += "&quot;";
    else out += ch;
  }
  return out;
}
// JSON number; 0 for "not applicable" ratios becomes null.
std::string Number(double x) { return std::isfinite(x) ? absl::StrFormat("%.6g", x) : "null"; }
std::string Optional(double x) { return x > 0 && std::isfinite(x) ? absl::StrFormat("%.6g", x) : "null"; }
double PercentOfCopy(const Row& r, const Metadata& m) {
  return Timed(r) && m.stream.copy_gbps > 0 ? 100.0 * r.gbps / m.stream.copy_gbps : 0;
}
std::string Machine(const Metadata& m) {
  return absl::StrFormat("%s, %d threads, STREAM copy %.1f / triad %.1f / read %.1f GB/s", m.cpu_model,
                         m.threads, m.stream.copy_gbps, m.stream.triad_gbps, m.stream.read_gbps);
}

}  // namespace

void FillStats(Row& row) {
  if (row.times_ms.empty()) return;
  std::vector<double> v = row.times_ms;
  std::sort(v.begin(), v.end());
  const size_t k = v.size();
  row.median_ms = k % 2 ? v[k / 2] : 0.5 * (v[k / 2 - 1] + v[k / 2]);
  row.min_ms = v.front();
  row.max_ms = v.back();
}

void FillRatios(std::vector<Row>& rows) {
  for (Row& r : rows) {
    if (!Timed(r)) continue;
    if (const Row* h = Find(rows, r, "handwritten")) r.slower_than_hand = r.median_ms / h->median_ms;
    if (const Row* w = Find(rows, r, "reverse-where")) r.faster_than_where = w->median_ms / r.median_ms;
  }
}

std::string FormatTable(const std::vector<Row>& rows, const Metadata& m) {
  std::string out = absl::StrFormat("%-19s %-5s %-7s %5s %9s %9s %9s %10s %7s %6s %12s %12s %8s  %s\n",
                                    "impl", "var", "layout", "n", "median ms", "min ms", "max ms",
                                    "compile ms", "GB/s", "%copy", "slower than", "faster than",
                                    "max err", "status");
  absl::StrAppendFormat(&out, "%-19s %-5s %-7s %5s %9s %9s %9s %10s %7s %6s %12s %12s %8s\n", "", "",
                        "", "", "", "", "", "", "", "", "hand (x)", "where (x)", "rel");
  std::string last_case;
  for (const Row& r : rows) {
    const std::string this_case = absl::StrCat(r.variant, r.layout, r.n);
    if (!last_case.empty() && this_case != last_case) out += "\n";
    last_case = this_case;
    if (r.times_ms.empty() && r.median_ms == 0) {
      absl::StrAppendFormat(&out, "%-19s %-5s %-7s %5s %9s %9s %9s %10s %7s %6s %12s %12s %8s  %s\n",
                            r.impl, r.variant, r.layout, r.n > 0 ? absl::StrCat(r.n) : "-", "-", "-",
                            "-", "-", "-", "-", "-", "-",
                            r.max_error > 0 ? absl::StrFormat("%.1e", r.max_error) : "-", r.status);
      continue;
    }
    absl::StrAppendFormat(&out,
                          "%-19s %-5s %-7s %5d %9.3f %9.3f %9.3f %10.1f %7.1f %6.0f %12s %12s %8.1e  %s\n",
                          r.impl, r.variant, r.layout, r.n, r.median_ms, r.min_ms, r.max_ms,
                          r.compile_ms, r.gbps, PercentOfCopy(r, m), Ratio(r.slower_than_hand),
                          Ratio(r.faster_than_where), r.max_error, r.status);
  }
  // The same arithmetic by hand: dualcast's time over it is code generation alone.
  std::string codegen;
  for (const Row& r : rows) {
    if (r.impl != "handwritten-dcmath" || !Timed(r)) continue;
    const Row* d = Find(rows, r, r.variant == "paper" ? "dualcast-fused" : "dualcast");
    if (d == nullptr) continue;
    absl::StrAppendFormat(&codegen, "%s%s %s %ld %.2fx", codegen.empty() ? "" : ", ", r.variant,
                          r.layout, static_cast<long>(r.n), d->median_ms / r.median_ms);
  }
  if (!codegen.empty()) {
    absl::StrAppend(&out, "\ncode generation alone (dualcast, or dualcast-fused in the paper variant, over "
                          "handwritten-dcmath, the loop with dualcast's own exp/sigmoid/tanh): ",
                    codegen, "\n");
  }
  // The hand loop's own math in dualcast (fast_sigmoid, fast_tanh): what is left is code
  // generation plus the work the loop skips (the loss value, the tape, the launch).
  std::string same_math;
  for (const Row& r : rows) {
    if (r.impl != "dualcast-fastmath" || !Timed(r)) continue;
    const Row* h = Find(rows, r, "handwritten");
    if (h == nullptr || !Timed(*h)) continue;
    absl::StrAppendFormat(&same_math, "%s%s %s %ld %.2fx", same_math.empty() ? "" : ", ", r.variant,
                          r.layout, static_cast<long>(r.n), r.median_ms / h->median_ms);
  }
  if (!same_math.empty()) {
    absl::StrAppend(&out, "with the hand loop's math (dualcast-fastmath, the cell traced with fast_math: fast_sigmoid and "
                          "fast_tanh, over handwritten): ",
                    same_math, "\n");
  }
  absl::StrAppend(&out, "\nslower than hand = median / handwritten median (1.00x = as fast; >1 slower). "
                        "faster than where = reverse-where median / median (>1 faster).\n"
                        "%copy = GB/s (byte floor / median) as a percentage of the STREAM copy figure. "
                        "compile ms: dualcast = JIT compile inside the cold first call (0 when an earlier row "
                        "compiled the kernel); peers = first call minus median (trace + compile).\n",
                  "machine: ", Machine(m), "; ", m.reps, " reps in ", m.rounds,
                  " interleaved rounds after ", m.warmup, " warm-up",
                  m.settle_ms > 0 ? absl::StrCat(", each share after ", m.settle_ms, " ms of untimed calls")
                                  : std::string(),
                  "; ", m.dtype, "; revision ",
                  m.git_revision, "\nload average (1/5/15 min): ", m.load_start, " at start, ", m.load_end,
                  " at end; on a shared machine times are noisy: compare ratios within one run\n",
                  "dualcast kernels: ", m.dualcast_kernels,
                  " (DUALCAST_CACHE_DIR=off compiles every one: needed to compare two builds or an "
                  "environment switch)\n");
  return out;
}

std::string FormatJson(const std::vector<Row>& rows, const Metadata& m) {
  std::string peers;
  for (const auto& [k, v] : m.peer_versions) {
    absl::StrAppend(&peers, peers.empty() ? "" : ", ", JsonString(k), ": ", JsonString(v));
  }
  std::string out = absl::StrCat(
      "{\n  \"metadata\": {\n",
      "    \"benchmark\": \"HM-LSTM cell update (Revels et al. 2018)\",\n",
      "    \"git_revision\": ", JsonString(m.git_revision), ",\n",
      "    \"dualcast_version\": ", JsonString(m.dualcast_version), ",\n",
      "    \"compiler\": ", JsonString(m.compiler), ",\n",
      "    \"llvm_version\": ", JsonString(m.llvm_version), ",\n",
      "    \"cpu_model\": ", JsonString(m.cpu_model), ",\n",
      "    \"threads\": ", m.threads, ",\n",
      "    \"device\": ", JsonString(m.device), ",\n",
      "    \"handwritten_isa\": ", JsonString(m.handwritten_isa), ",\n",
      "    \"stream_gbps\": {\"copy\": ", Number(m.stream.copy_gbps), ", \"triad\": ",
      Number(m.stream.triad_gbps), ", \"read\": ", Number(m.stream.read_gbps), "},\n",
      "    \"reps\": ", m.reps, ",\n", "    \"rounds\": ", m.rounds, ",\n",
      "    \"warmup\": ", m.warmup, ",\n", "    \"settle_ms\": ", Number(m.settle_ms), ",\n",
      "    \"dtype\": ", JsonString(m.dtype), ",\n",
      "    \"peer_versions\": {", peers, "},\n",
      "    \"date_utc\": ", JsonString(m.date_utc), ",\n",
      "    \"command_line\": ", JsonString(m.command_line), ",\n",
      "    \"load_average_start\": ", JsonString(m.load_start), ",\n",
      "    \"load_average_end\": ", JsonString(m.load_end), ",\n",
      "    \"dualcast_kernels\": ", JsonString(m.dualcast_kernels), ",\n",
      "    \"notes\": ", JsonString(m.notes), "\n  },\n  \"rows\": [\n");
  for (size_t k = 0; k < rows.size(); ++k) {
    const Row& r = rows[k];
    absl::StrAppend(&out, "    {\"impl\": ", JsonString(r.impl), ", \"variant\": ", JsonString(r.variant),
                    ", \"layout\": ", JsonString(r.layout), ", \"n\": ", r.n,
                    ", \"device\": ", JsonString(r.device), ", \"reps\": ", r.times_ms.size(),
                    ", \"median_ms\": ", Optional(r.median_ms), ", \"min_ms\": ", Optional(r.min_ms),
                    ", \"max_ms\": ", Optional(r.max_ms), ", \"first_call_ms\": ", Optional(r.first_call_ms),
                    ", \"compile_ms\": ", Number(r.compile_ms), ", \"gbps\": ", Optional(r.gbps),
                    ", \"percent_of_stream_copy\": ", Optional(PercentOfCopy(r, m)),
                    ", \"times_slower_than_handwritten\": ", Optional(r.slower_than_hand),
                    ", \"times_faster_than_reverse_where\": ", Optional(r.faster_than_where),
                    ", \"max_rel_error\": ", Number(r.max_error), ", \"status\": ", JsonString(r.status),
                    "}", k + 1 < rows.size() ? ",\n" : "\n");
  }
  return out + "  ]\n}\n";
}

std::string FormatCsv(const std::vector<Row>& rows, const Metadata& m) {
  auto line = [](const std::string& k, const std::string& v) { return absl::StrCat("# ", k, ": ", v, "\n"); };
  std::vector<std::string> peers;
  for (const auto& [k, v] : m.peer_versions) peers.push_back(k + "=" + v);
  std::string out = absl::StrCat(
      line("benchmark", "HM-LSTM cell update (Revels et al. 2018)"), line("git_revision", m.git_revision),
      line("dualcast_version", m.dualcast_version), line("compiler", m.compiler),
      line("llvm_version", m.llvm_version), line("cpu_model", m.cpu_model),
      line("threads", absl::StrCat(m.threads)), line("device", m.device),
      line("handwritten_isa", m.handwritten_isa),
      line("stream_gbps", absl::StrFormat("copy=%.6g triad=%.6g read=%.6g", m.stream.copy_gbps,
                                          m.stream.triad_gbps, m.stream.read_gbps)),
      line("reps", absl::StrCat(m.reps)), line("rounds", absl::StrCat(m.rounds)),
      line("warmup", absl::StrCat(m.warmup)), line("settle_ms", absl::StrCat(m.settle_ms)),
      line("dtype", m.dtype),
      line("peer_versions", absl::StrJoin(peers, " ")), line("date_utc", m.date_utc),
      line("command_line", m.command_line), line("load_average_start", m.load_start),
      line("load_average_end", m.load_end), line("dualcast_kernels", m.dualcast_kernels),
      line("notes", m.notes));
  out +=
      "impl,variant,layout,n,device,reps,median_ms,min_ms,max_ms,first_call_ms,compile_ms,gbps,"
      "percent_of_stream_copy,times_slower_than_handwritten,times_faster_than_reverse_where,"
      "max_rel_error,status\n";
  auto field = [](const std::string& s) { return absl::StrCat("\"", s, "\""); };
  auto opt = [](double x) { return x > 0 && std::isfinite(x) ? absl::StrFormat("%.6g", x) : std::string(); };
  for (const Row& r : rows) {
    absl::StrAppend(&out, r.impl, ",", r.variant, ",", r.layout, ",", r.n, ",", field(r.device), ",",
                    r.times_ms.size(), ",", opt(r.median_ms), ",", opt(r.min_ms), ",", opt(r.max_ms), ",",
                    opt(r.first_call_ms), ",", absl::StrFormat("%.6g", r.compile_ms), ",", opt(r.gbps),
                    ",", opt(PercentOfCopy(r, m)), ",", opt(r.slower_than_hand), ",",
                    opt(r.faster_than_where), ",", absl::StrFormat("%.3g", r.max_error), ",",
                    field(r.status), "\n");
  }
  return out;
}

std::string FormatSvg(const std::vector<Row>& rows, const Metadata& m) {
  // Panels: (variant, layout) in first-seen order; groups: n; series: impl.
  std::vector<std::pair<std::string, std::string>> panels;
  std::vector<std::string> impls;
  std::set<long> sizes;
  double lo = 1e300, hi = 0;
  for (const Row& r : rows) {
    if (!Timed(r)) continue;
    std::pair<std::string, std::string> key{r.variant, r.layout};
    if (std::find(panels.begin(), panels.end(), key) == panels.end()) panels.push_back(key);
    if (std::find(impls.begin(), impls.end(), r.impl) == impls.end()) impls.push_back(r.impl);
    sizes.insert(r.n);
    lo = std::min(lo, r.median_ms);
    hi = std::max(hi, r.median_ms);
  }
  // Series in a fixed order (dualcast's side, then the peers), so a colour
  // means the same implementation in every panel and every run.
  const std::vector<std::string> order = {"handwritten", "dualcast", "dualcast-fused", "dualcast-recompute",
                                          "reverse-where", "torch-eager-where", "torch-compile",
                                          "jax-jit-where", "jax-vmap-cond", "drjit-llvm-select",
                                          "handwritten-dcmath", "dualcast-fastmath"};
  auto rank = [&](const std::string& impl) {
    return std::find(order.begin(), order.end(), impl) - order.begin();
  };
  std::stable_sort(impls.begin(), impls.end(),
                   [&](const std::string& a, const std::string& b) { return rank(a) < rank(b); });
  const char* colors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                          "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#aec7e8", "#ffbb78"};
  const int panel_w = 640, panel_h = 300, margin = 70;
  const int legend_rows = ((int)impls.size() + 1) / 2;
  const int width = margin + panel_w + 30;
  const int legend_top = 60 + (int)panels.size() * (panel_h + 70);
  const int height = legend_top + 20 * legend_rows + 60;
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
      width, height, margin,
      XmlEscape(absl::StrCat("HM-LSTM cell update: median ms per call (log scale), ", m.dtype,
                             ", lower is better")));
  for (size_t pi = 0; pi < panels.size(); ++pi) {
    const int top = 60 + (int)pi * (panel_h + 70);
    const int bottom = top + panel_h;
    absl::StrAppendFormat(&svg, "<text x=\"%d\" y=\"%d\" font-size=\"13\">%s variant, z/zb per %s</text>\n",
                          margin, top - 8, panels[pi].first,
                          panels[pi].second == "rows" ? "row" : "column");
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
    const double bar_w = group_w * 0.85 / std::max<size_t>(1, impls.size());
    int g = 0;
    for (long n : sizes) {
      const double gx = margin + g * group_w + group_w * 0.075;
      absl::StrAppendFormat(&svg, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">n = %d</text>\n",
                            margin + (g + 0.5) * group_w, bottom + 16, n);
      for (size_t ii = 0; ii < impls.size(); ++ii) {
        for (const Row& r : rows) {
          if (!Timed(r) || r.n != n || r.impl != impls[ii] || r.variant != panels[pi].first ||
              r.layout != panels[pi].second) {
            continue;
          }
          const double h = (std::log10(r.median_ms) - log_lo) / span * panel_h;
          absl::StrAppendFormat(&svg,
                                "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                                "fill=\"%s\"><title>%s n=%d: %.3f ms (min %.3f, max %.3f)</title></rect>\n",
                                gx + ii * bar_w, bottom - h, bar_w * 0.92, std::max(h, 0.5),
                                colors[ii % std::size(colors)], r.impl, n, r.median_ms, r.min_ms, r.max_ms);
        }
      }
      ++g;
    }
  }
  for (size_t ii = 0; ii < impls.size(); ++ii) {
    const int x = margin + (int)(ii % 2) * (panel_w / 2);
    const int y = legend_top + (int)(ii / 2) * 20;
    absl::StrAppendFormat(&svg,
                          "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"14\" fill=\"%s\"/>"
                          "<text x=\"%d\" y=\"%d\">%s</text>\n",
                          x, y, colors[ii % std::size(colors)], x + 20, y + 12, XmlEscape(impls[ii]));
  }
  const int caption_y = legend_top + 20 * legend_rows + 20;
  absl::StrAppendFormat(&svg, "<text x=\"%d\" y=\"%d\" font-size=\"11\">%s</text>\n", margin, caption_y,
                        XmlEscape(Machine(m)));
  absl::StrAppendFormat(&svg, "<text x=\"%d\" y=\"%d\" font-size=\"11\">%s</text>\n", margin,
                        caption_y + 16,
                        XmlEscape(absl::StrCat("dualcast ", m.dualcast_version, " (", m.git_revision,
                                               "), LLVM ", m.llvm_version, "; ", m.reps, " reps, ",
                                               m.date_utc)));
  return svg + "</svg>\n";
}

}  // namespace dualcast::bench
