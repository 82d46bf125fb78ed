#include "parasim/reports/plots.hpp"

namespace parasim::reports {

std::vector<PlotSpec> build_plots(const ReportData& d) {
  std::vector<PlotSpec> out;
  for (auto make :
       {time_to_train_plot, speedup_plot, throughput_plot, breakdown_plot, gantt_plot, validation_plot, memory_plot})
    if (auto p = make(d)) out.push_back(std::move(*p));
  return out;
}

}  // namespace parasim::reports
