#include "parasim/strategies/placement_file.hpp"

#include <unordered_map>

#include "parasim/common/error.hpp"
#include "parasim/common/json_io.hpp"

namespace parasim::strategies {

namespace {

bool may_be_omitted(const models::Op& op) {
  return op.kind == models::OpKind::Input || op.kind == models::OpKind::Reshape;
}

}  // namespace

std::vector<int> placement_from_json(const nlohmann::json& doc, const std::string& origin, const models::Model& model,
                                     int devices) {
  const JsonField root{doc, origin, "$"};
  root.expect_schema(kPlacementSchema);
  const JsonField ops = root.at("ops");
  if (!ops.is_object()) ops.fail("an object mapping op names to device numbers");
  std::unordered_map<std::string, std::size_t> by_name;
  for (std::size_t v = 0; v < model.num_ops(); ++v) by_name.emplace(model.op(static_cast<models::OpId>(v)).name, v);
  std::vector<int> slot(model.num_ops(), -1);
  for (const auto& [name, value] : ops.raw().items()) {
    const JsonField entry = ops.at(name);
    const auto it = by_name.find(name);
    if (it == by_name.end())
      throw InputError(origin + ": " + entry.path() + ": unknown op \"" + name + "\"; model " + model.name() +
                       " has no op of that name (parasim models show " + model.name() + " lists them)");
    slot[it->second] = static_cast<int>(entry.as_int(0, devices - 1));
  }
  std::string missing;
  int count = 0;
  for (std::size_t v = 0; v < model.num_ops(); ++v) {
    const models::Op& op = model.op(static_cast<models::OpId>(v));
    if (slot[v] >= 0 || may_be_omitted(op)) continue;
    if (++count <= 5) missing += (missing.empty() ? "" : ", ") + op.name;
  }
  if (count > 0)
    throw InputError(origin + ": $.ops: missing " + std::to_string(count) + " op" + (count == 1 ? "" : "s") + " (" +
                     missing + (count > 5 ? ", ..." : "") + "); every op that does work needs a device in [0, " +
                     std::to_string(devices - 1) + "]");
  return slot;
}

std::vector<int> load_placement_file(const std::filesystem::path& path, const models::Model& model, int devices) {
  return placement_from_json(read_json_file(path), path.string(), model, devices);
}

}  // namespace parasim::strategies
