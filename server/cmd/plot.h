// SVG line plots for replay reports (allocation vs arrived workload, like the
// FGD paper's Fig. 9a): one line per policy, the median over seeds, with the
// inter-quartile band when there are several seeds.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "scheduling/replay/experiment.h"

namespace fracpack::cli {

struct PlotSeries {
  std::string label;
  std::vector<std::array<double, replay::kColumns>> runs;  // one curve per seed
};

std::string allocation_plot_svg(const std::string& title, const std::vector<PlotSeries>& series);

// Line charts over time, a grid of panels (one row per load of the dynamic
// replay: allocation, fragmentation, waiting demand), one line per policy.
struct TimePanel {
  std::string title;
  std::string y_label;
  struct Line {
    std::string label;
    std::vector<std::pair<double, double>> points;  // (x, y)
  };
  std::vector<Line> lines;
};
std::string time_panels_svg(const std::string& title, const std::string& x_label, size_t columns,
                            const std::vector<TimePanel>& panels);

}  // namespace fracpack::cli
