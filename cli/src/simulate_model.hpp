// The model mode of `parasim simulate`: --model NAME|FILE --strategy ... --batch GLOBAL builds
// the task graph with strategies::simulate_strategy() instead of reading --taskgraph.
//
//   parasim simulate --model resnet50 --cluster dgx1-v100 --batch 256 --strategy dp=8
//   parasim simulate --model gpt3_175b --cluster dgx-a100 --nodes 16 --batch 1536 --dtype fp16
//       --strategy tp=8,mp=8,dp=2,schedule=1f1b,micro=768 --granularity stage --collectives analytic
#pragma once

#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

#include "cost_choice.hpp"
#include "fabric_args.hpp"

namespace parasim::cli {

struct SimulateModelOptions {
  std::string model;               // zoo name or parasim.model/1 file
  std::string strategy = "dp=1";   // grammar or parasim.strategy/1 file
  std::int64_t batch = 0;          // global batch
  std::string dtype;               // empty: the model's
  std::string optimizer = "adam";
  std::string profile;             // parasim.profile/1 file, or none; empty: a match in traces, else roofline
  std::string traces = "traces";   // where a default profile is looked for (cost_choice.hpp)
  bool traces_given = false;
  std::string granularity = "op";
  bool all_devices = false;        // simulate every replica and TP rank (no symmetry)
  std::string calibration;         // parasim.calibration/2 (or /1) file; empty: none
  std::string data_loading = "off";  // --data-loading (parasim/common/data_loading.hpp)
  std::string grad_accumulation = "auto";  // --grad-accumulation (parasim/common/grad_accumulation.hpp)
  KernelChoice kernels;              // --attention, --fp32-math, --conv-layout (cost_choice.hpp)
  std::int64_t seq_len = 0;  // tokens per sample (zoo sequence models, config.json); 0: the model's
};

/// The options `simulate` shares between its modes (owned by cmd_simulate.cpp).
struct SimulateCommonOptions {
  std::string taskgraph;
  std::string cluster;
  int nodes = 0;
  std::string collectives;
  std::string trace;
  bool json = false;
  FabricArgs fabric;
};

void add_simulate_model_options(CLI::App& simulate, SimulateModelOptions& o);
inline bool simulate_model_requested(const SimulateModelOptions& o) { return !o.model.empty() || o.seq_len > 0; }
/// Prints the report (or JSON) to stdout; InputError (exit 2) for bad names, files or strategies.
void run_simulate_model(const SimulateModelOptions& o, const SimulateCommonOptions& common);

}  // namespace parasim::cli
