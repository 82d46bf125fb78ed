// Small hand-made profiles and ops shared by the profiler tests.
#pragma once

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "parasim/profiler/profile.hpp"

namespace parasim::profiler::testing_fixtures {

inline PhaseStats stats(TimeNs min, TimeNs median, TimeNs max, std::int64_t launches = 1, std::int64_t reps = 5) {
  return PhaseStats{min, median, max, launches, reps};
}

/// A profile with every optional field filled in: device software versions, two entries and a
/// link curve with a two-segment fit.
inline Profile sample_profile() {
  Profile p;
  p.created = "2025-03-01T12:00:00Z";
  p.command = "parasim profile --model tiny_cnn --batch 8";
  p.backend = "cuda";
  p.source = CostSource::MeasuredGpu;
  p.device = DeviceInfo{"NVIDIA H200", "H200-SXM-141GB", "9.0", "550.54.15", "12.4", "9.1.0", "12.4.5", "", 1980, 2619,
                        "node7", 0};
  p.model = "tiny_cnn";
  p.batch = 8;
  p.dtype = models::DType::F16;
  p.optimizer = Optimizer::Adam;
  p.repetitions = 5;
  p.warmup = 2;
  ProfileEntry conv;
  conv.names = {"conv1", "conv2"};
  conv.kind = "conv2d";
  conv.signature = "conv2d|fp16|[8, 3, 32, 32]|[8, 16, 32, 32]|k=3x3";
  conv.batch_key = "conv2d|fp16|in=[B,3,32,32]";
  conv.batch = 8;
  conv.set(Phase::Forward, stats(10'000, 11'000, 15'000));
  conv.set(Phase::BackwardWeight, stats(20'000, 21'000, 22'000, 2));
  conv.set(Phase::Update, stats(3'000, 3'000, 3'100));
  conv.note = "fwd=IMPLICIT_PRECOMP_GEMM";
  ProfileEntry relu;
  relu.names = {"relu1"};
  relu.kind = "relu";
  relu.signature = "relu|fp16|[8, 16, 32, 32]";
  relu.set(Phase::Forward, stats(2'000, 2'000, 2'000));
  relu.set(Phase::BackwardData, stats(2'500, 2'600, 2'900));
  p.ops = {conv, relu};
  LinkCurve l;
  l.kind = "nvlink";
  l.src = 0;
  l.dst = 1;
  l.points = {{8, 9'000, 0.0009, 0.0009}, {1 << 20, 20'000, 52.4, 52.4}};
  l.fit.segments = {{0, 65'535, 8'900.5, 12.5}, {65'536, 1 << 20, 12'000, 140.25}};
  p.links = {l};
  return p;
}

inline std::filesystem::path temp_file(const std::string& name) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / "parasim_profiler_tests";
  std::filesystem::create_directories(dir);
  return dir / name;
}

}  // namespace parasim::profiler::testing_fixtures
