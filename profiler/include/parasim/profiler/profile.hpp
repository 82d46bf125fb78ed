// The profile format `parasim.profile/1`: measured per-op phase times (min/median/max over
// repetitions) for one model on one device, and optional link curves with alpha-beta fits.
//
//   {
//     "schema": "parasim.profile/1",
//     "created": "2025-03-01T12:00:00Z", "command": "parasim profile --model resnet50 ...",
//     "backend": "cpu-onednn", "source": "measured-cpu",
//     "device": {"name": "AMD EPYC 9654", "kind": "cpu-AMD-EPYC-9654", "host": "node7", ...},
//     "model": "resnet50", "batch": 32, "dtype": "fp32", "optimizer": "sgd",
//     "repetitions": 10, "warmup": 2,
//     "ops": [{"names": ["conv1"], "kind": "conv2d", "signature": "...",
//              "batch_key": "...", "batch": 32,
//              "phases": {"fwd": {"min_ns": 1, "median_ns": 2, "max_ns": 3, "launches": 1, "reps": 10}, ...},
//              "note": "fwd=jit:avx512_core"}],
//     "links": [{"kind": "nvlink", "src": 0, "dst": 1, "points": [{"bytes": 8, "time_ns": 9000,
//                "algbw": 0.0009, "busbw": 0.0009}], "fit": [{"min_bytes": 0, "max_bytes": 65535,
//                "alpha_ns": 8900, "beta_gbps": 12.5}]}]
//   }
//
// Example:
//   Profile p = load_profile("traces/cpu/resnet50-b32-fp32.json");   // InputError names file + JSON path
//   const ProfileEntry* e = p.find(op.signature());
//   if (e && e->has(Phase::Forward)) std::cout << e->phase(Phase::Forward).median_ns << "\n";
//   save_profile(p, "copy.json");                                     // atomic
#pragma once

#include <array>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "parasim/common/units.hpp"
#include "parasim/models/graph.hpp"
#include "parasim/profiler/alpha_beta.hpp"
#include "parasim/profiler/cost_model.hpp"

namespace parasim::profiler {

inline constexpr const char* kProfileSchema = "parasim.profile/1";

/// Where and with what software a profile was measured. Empty strings / zeros are not written.
struct DeviceInfo {
  std::string name;                // "NVIDIA H200", "AMD EPYC 9654 96-Core Processor"
  std::string kind;                // canonical kind used for cost lookups: "H200-SXM-141GB", "cpu-AMD-EPYC-9654"
  std::string compute_capability;  // "9.0"
  std::string driver;              // "550.54.15"
  std::string cuda;                // "12.4"
  std::string cudnn;               // "9.1.0"
  std::string cublas;              // "12.4.5"
  std::string onednn;              // "2.6.3"
  int sm_clock_mhz = 0;
  int mem_clock_mhz = 0;
  std::string host;                // host name
  int threads = 0;                 // CPU threads used (CPU backend)
  bool operator==(const DeviceInfo&) const = default;
};

/// One phase's timing over `reps` repetitions.
struct PhaseStats {
  TimeNs min_ns = 0;
  TimeNs median_ns = 0;
  TimeNs max_ns = 0;
  std::int64_t launches = 0;  // kernels (GPU) or primitive calls (CPU) per run of the phase
  std::int64_t reps = 0;
  /// (max - min) / median, the spread the profile table shows; 0 when median is 0.
  double spread() const;
  bool operator==(const PhaseStats&) const = default;
};

/// Summarizes samples (ns): min, median (mean of the middle two for even counts, rounded), max.
PhaseStats summarize(std::vector<TimeNs> samples, std::int64_t launches);

/// All ops of a model that share one signature (they cost the same).
struct ProfileEntry {
  std::vector<std::string> names;  // ops with this signature, in model order
  std::string kind;                // models::to_string(OpKind), or the CPU op name for imports
  std::string signature;           // models::Op::signature(), unique within a profile
  std::string batch_key;           // signature with the batch dimension abstracted (empty: none)
  std::int64_t batch = 0;          // the batch dimension the entry was measured at (0: unknown)
  std::array<std::optional<PhaseStats>, 4> phases;  // indexed by Phase
  std::string note;

  bool has(Phase p) const { return phases[phase_index(p)].has_value(); }
  const PhaseStats& phase(Phase p) const { return *phases[phase_index(p)]; }
  void set(Phase p, PhaseStats s) { phases[phase_index(p)] = s; }
  bool operator==(const ProfileEntry&) const = default;
};

/// One measured point of a link curve.
struct LinkPoint {
  Bytes bytes = 0;
  TimeNs time_ns = 0;
  double algbw = 0;  // GB/s: bytes / time
  double busbw = 0;  // GB/s: algbw * busbw_factor (nccl-tests PERFORMANCE.md)
  bool operator==(const LinkPoint&) const = default;
};

/// Time-vs-size curve of one link (or collective) with its piecewise alpha-beta fit.
struct LinkCurve {
  std::string kind;        // "nvlink", "pcie", "nvswitch", "shm", ...
  int src = 0;             // device index
  int dst = 0;
  std::string collective;  // "" for point-to-point copies, else "allreduce", "allgather", ...
  int ranks = 0;           // participants of a collective (0 for point-to-point)
  std::vector<LinkPoint> points;
  PiecewiseAlphaBeta fit;
  bool operator==(const LinkCurve&) const = default;
};

struct Profile {
  std::string created;   // ISO 8601 UTC
  std::string command;   // the command line that made it
  std::string backend;   // "cpu-onednn", "cuda", "kineto"
  CostSource source = CostSource::MeasuredCpu;  // what the entries are (measured-gpu, measured-cpu, imported)
  DeviceInfo device;
  std::string model;     // model name ("" when unknown, e.g. an import without --model)
  std::int64_t batch = 0;
  models::DType dtype = models::DType::F32;
  Optimizer optimizer = Optimizer::Sgd;
  std::int64_t repetitions = 0;
  std::int64_t warmup = 0;
  std::vector<ProfileEntry> ops;
  std::vector<LinkCurve> links;

  /// Entry with this signature, or nullptr.
  const ProfileEntry* find(const std::string& signature) const;
  bool operator==(const Profile&) const = default;
};

/// Current UTC time as "YYYY-MM-DDTHH:MM:SSZ".
std::string utc_now_iso8601();

nlohmann::json to_json(const Profile& p);
/// Validates everything (types, ranges, min <= median <= max, unique signatures, known phases);
/// errors name `origin` (the file) and the JSON path.
Profile profile_from_json(const nlohmann::json& j, const std::string& origin);

Profile load_profile(const std::filesystem::path& path);
/// Writes canonical JSON atomically (temp file + rename).
void save_profile(const Profile& p, const std::filesystem::path& path);

}  // namespace parasim::profiler
