#include "server/cmd/plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace fracpack::cli {
namespace {

constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                   "#8c564b", "#e377c2", "#7f7f7f", "#17becf"};

double quantile(std::vector<double> v, double q) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return std::isnan(x); }), v.end());
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", v);
  return b;
}

std::string escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<') o += "&lt;";
    else if (c == '>') o += "&gt;";
    else if (c == '&') o += "&amp;";
    else o += c;
  }
  return o;
}

}  // namespace

std::string allocation_plot_svg(const std::string& title, const std::vector<PlotSeries>& series) {
  const double W = 720, H = 480, L = 70, R = 170, T = 40, B = 60;
  const double pw = W - L - R, ph = H - T - B;
  // Y range: from the lowest median at x = 100..130 rounded down, to 100:
  // the policies differ once the cluster fills.
  double ymin = 100;
  for (const auto& s : series) {
    for (int x = 100; x < replay::kColumns; ++x) {
      std::vector<double> col;
      for (const auto& r : s.runs) col.push_back(r[static_cast<size_t>(x)]);
      const double m = quantile(col, 0.5);
      if (!std::isnan(m)) ymin = std::min(ymin, m);
    }
  }
  ymin = std::max(0.0, std::floor((ymin - 2) / 5) * 5);
  const double xmin = 70, xmax = 130, ymax = 100;
  auto X = [&](double x) { return L + (x - xmin) / (xmax - xmin) * pw; };
  auto Y = [&](double y) { return T + (1 - (y - ymin) / (ymax - ymin)) * ph; };

  std::string o = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(W) + "\" height=\"" + num(H) +
                  "\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  o += "<text x=\"" + num(L + pw / 2) + "\" y=\"22\" text-anchor=\"middle\" font-size=\"14\">" + escape(title) + "</text>\n";
  for (double x = xmin; x <= xmax + 1e-9; x += 10) {
    o += "<line x1=\"" + num(X(x)) + "\" y1=\"" + num(T) + "\" x2=\"" + num(X(x)) + "\" y2=\"" + num(T + ph) +
         "\" stroke=\"#eee\"/>\n<text x=\"" + num(X(x)) + "\" y=\"" + num(T + ph + 18) + "\" text-anchor=\"middle\">" +
         num(x).substr(0, num(x).size() - 2) + "</text>\n";
  }
  for (double y = ymin; y <= ymax + 1e-9; y += 5) {
    o += "<line x1=\"" + num(L) + "\" y1=\"" + num(Y(y)) + "\" x2=\"" + num(L + pw) + "\" y2=\"" + num(Y(y)) +
         "\" stroke=\"#eee\"/>\n<text x=\"" + num(L - 8) + "\" y=\"" + num(Y(y) + 4) + "\" text-anchor=\"end\">" +
         num(y).substr(0, num(y).size() - 2) + "</text>\n";
  }
  o += "<rect x=\"" + num(L) + "\" y=\"" + num(T) + "\" width=\"" + num(pw) + "\" height=\"" + num(ph) +
       "\" fill=\"none\" stroke=\"#333\"/>\n";
  o += "<text x=\"" + num(L + pw / 2) + "\" y=\"" + num(H - 18) +
       "\" text-anchor=\"middle\">arrived GPU demand (% of cluster GPU capacity)</text>\n";
  o += "<text transform=\"translate(18," + num(T + ph / 2) +
       ") rotate(-90)\" text-anchor=\"middle\">GPU allocated (% of capacity)</text>\n";
  for (size_t i = 0; i < series.size(); ++i) {
    // fracpack's own policy in bold black, the others in a palette.
    const bool ours = series[i].label == "fracpack";
    const std::string color = ours ? "#000000" : kColors[i % (sizeof kColors / sizeof kColors[0])];
    const std::string width = ours ? "3" : "1.6";
    std::string line, band_top, band_bottom;
    for (int x = static_cast<int>(xmin); x < replay::kColumns; ++x) {
      std::vector<double> col;
      for (const auto& r : series[i].runs) col.push_back(r[static_cast<size_t>(x)]);
      const double m = quantile(col, 0.5);
      if (std::isnan(m)) continue;
      if (m < ymin) continue;  // below the plotted range
      line += (line.empty() ? "M" : " L") + num(X(x)) + "," + num(Y(m));
      if (series[i].runs.size() > 1) {
        band_top += (band_top.empty() ? "" : " ") + num(X(x)) + "," + num(Y(std::max(quantile(col, 0.75), ymin)));
        band_bottom = num(X(x)) + "," + num(Y(std::max(quantile(col, 0.25), ymin))) + (band_bottom.empty() ? "" : " ") +
                      band_bottom;
      }
    }
    if (!band_top.empty()) {
      o += "<polygon points=\"" + band_top + " " + band_bottom + "\" fill=\"" + color + "\" fill-opacity=\"0.15\"/>\n";
    }
    o += "<path d=\"" + line + "\" fill=\"none\" stroke=\"" + color + "\" stroke-width=\"" + width + "\"/>\n";
    const double ly = T + 14 + static_cast<double>(i) * 20;
    o += "<line x1=\"" + num(L + pw + 12) + "\" y1=\"" + num(ly) + "\" x2=\"" + num(L + pw + 36) + "\" y2=\"" + num(ly) +
         "\" stroke=\"" + color + "\" stroke-width=\"" + width + "\"/>\n<text x=\"" + num(L + pw + 42) + "\" y=\"" + num(ly + 4) +
         "\">" + escape(series[i].label) + "</text>\n";
  }
  o += "</svg>\n";
  return o;
}

}  // namespace fracpack::cli
