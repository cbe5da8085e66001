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

std::string time_panels_svg(const std::string& title, const std::string& x_label, size_t columns,
                            const std::vector<TimePanel>& panels) {
  const double pw = 300, ph = 170, L = 60, R = 20, T = 60, B = 50, gap_x = L + R, gap_y = T - 20 + B;
  const size_t cols = std::max<size_t>(1, columns);
  const size_t rows = (panels.size() + cols - 1) / cols;
  const double W = static_cast<double>(cols) * (pw + gap_x) + 150, H = static_cast<double>(rows) * (ph + gap_y) + 40;
  std::string o = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(W) + "\" height=\"" + num(H) +
                  "\" font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  o += "<text x=\"" + num(W / 2) + "\" y=\"22\" text-anchor=\"middle\" font-size=\"14\">" + escape(title) + "</text>\n";
  std::vector<std::string> labels;
  for (size_t k = 0; k < panels.size(); ++k) {
    const TimePanel& p = panels[k];
    const double ox = static_cast<double>(k % cols) * (pw + gap_x) + L, oy = static_cast<double>(k / cols) * (ph + gap_y) + T;
    double xmax = 0, ymax = 0;
    for (const auto& l : p.lines) {
      for (const auto& [x, y] : l.points) {
        xmax = std::max(xmax, x);
        ymax = std::max(ymax, y);
      }
    }
    if (xmax <= 0) xmax = 1;
    ymax = ymax <= 0 ? 1 : std::ceil(ymax / 10) * 10;
    auto X = [&](double x) { return ox + x / xmax * pw; };
    auto Y = [&](double y) { return oy + (1 - y / ymax) * ph; };
    o += "<text x=\"" + num(ox + pw / 2) + "\" y=\"" + num(oy - 8) + "\" text-anchor=\"middle\">" + escape(p.title) + "</text>\n";
    o += "<rect x=\"" + num(ox) + "\" y=\"" + num(oy) + "\" width=\"" + num(pw) + "\" height=\"" + num(ph) +
         "\" fill=\"none\" stroke=\"#333\"/>\n";
    for (int t = 0; t <= 4; ++t) {
      const double y = ymax * t / 4;
      o += "<line x1=\"" + num(ox) + "\" y1=\"" + num(Y(y)) + "\" x2=\"" + num(ox + pw) + "\" y2=\"" + num(Y(y)) +
           "\" stroke=\"#eee\"/>\n<text x=\"" + num(ox - 5) + "\" y=\"" + num(Y(y) + 4) + "\" text-anchor=\"end\">" + num(y) +
           "</text>\n";
      const double x = xmax * t / 4;
      o += "<text x=\"" + num(X(x)) + "\" y=\"" + num(oy + ph + 14) + "\" text-anchor=\"middle\">" + num(x) + "</text>\n";
    }
    o += "<text x=\"" + num(ox + pw / 2) + "\" y=\"" + num(oy + ph + 30) + "\" text-anchor=\"middle\">" + escape(x_label) +
         "</text>\n<text transform=\"translate(" + num(ox - 42) + "," + num(oy + ph / 2) +
         ") rotate(-90)\" text-anchor=\"middle\">" + escape(p.y_label) + "</text>\n";
    for (const auto& l : p.lines) {
      auto at = std::find(labels.begin(), labels.end(), l.label);
      if (at == labels.end()) at = labels.insert(labels.end(), l.label);
      const size_t i = static_cast<size_t>(at - labels.begin());
      const bool ours = l.label == "fracpack";
      const std::string color = ours ? "#000000" : kColors[i % (sizeof kColors / sizeof kColors[0])];
      std::string path;
      for (const auto& [x, y] : l.points) path += (path.empty() ? "M" : " L") + num(X(x)) + "," + num(Y(y));
      o += "<path d=\"" + path + "\" fill=\"none\" stroke=\"" + color + "\" stroke-width=\"" + (ours ? "2.2" : "1.3") + "\"/>\n";
    }
  }
  for (size_t i = 0; i < labels.size(); ++i) {
    const bool ours = labels[i] == "fracpack";
    const std::string color = ours ? "#000000" : kColors[i % (sizeof kColors / sizeof kColors[0])];
    const double lx = static_cast<double>(cols) * (pw + gap_x) + 10, ly = T + 14 + static_cast<double>(i) * 18;
    o += "<line x1=\"" + num(lx) + "\" y1=\"" + num(ly) + "\" x2=\"" + num(lx + 24) + "\" y2=\"" + num(ly) + "\" stroke=\"" +
         color + "\" stroke-width=\"" + (ours ? "2.2" : "1.3") + "\"/>\n<text x=\"" + num(lx + 30) + "\" y=\"" + num(ly + 4) +
         "\">" + escape(labels[i]) + "</text>\n";
  }
  o += "</svg>\n";
  return o;
}

}  // namespace fracpack::cli
