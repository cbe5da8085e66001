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

}  // namespace fracpack::cli
