// placement=FILE: an explicit op -> device map.
//
//   {"schema": "parasim.placement/1", "ops": {"conv1": 0, "fc": 1, ...}}
//
// Device numbers are slots 0 .. mp-1 inside one replica (the strategy's mapping turns them into
// cluster devices). Every op that does work must be listed; input ops (the data) and reshape
// views may be omitted: an input goes with its first consumer, a reshape with its producer.
// Errors name the file, the JSON path and the problem: unknown op, device out of range, missing ops.
//
// Example:
//   std::vector<int> slot = load_placement_file("place.json", model, /*devices=*/2);
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "parasim/models/graph.hpp"

namespace parasim::strategies {

inline constexpr const char* kPlacementSchema = "parasim.placement/1";

/// Device slot of every op (-1 for omitted input/reshape ops; the lowering fills those in).
std::vector<int> placement_from_json(const nlohmann::json& doc, const std::string& origin, const models::Model& model,
                                     int devices);
std::vector<int> load_placement_file(const std::filesystem::path& path, const models::Model& model, int devices);

}  // namespace parasim::strategies
