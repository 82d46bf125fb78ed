// Finding a measured profile under traces/ for a cluster's device kinds (see trace_library.hpp).
#include "parasim/profiler/trace_library.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "parasim/common/error.hpp"
#include "parasim/common/json_io.hpp"
#include "parasim/profiler/profile.hpp"

namespace parasim::profiler {
namespace {

std::vector<std::filesystem::path> json_files(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.is_directory(ec)) {
      for (const auto& f : std::filesystem::directory_iterator(e.path(), ec))
        if (f.is_regular_file(ec) && f.path().extension() == ".json") out.push_back(f.path());
    } else if (e.is_regular_file(ec) && e.path().extension() == ".json") {
      out.push_back(e.path());
    }
  }
  std::sort(out.begin(), out.end());  // directory order is not deterministic
  return out;
}

}  // namespace

std::optional<TraceProfileMatch> find_trace_profile(const std::filesystem::path& traces_dir,
                                                    const std::vector<std::string>& device_kinds,
                                                    const std::string& model, models::DType dtype) {
  std::error_code ec;
  if (!std::filesystem::is_directory(traces_dir, ec)) return std::nullopt;
  std::vector<TraceProfileMatch> found;
  // A profile of `model` names it as a JSON string: files that do not hold that string (and no
  // \u escape that could spell it) are not parsed (each one took about a millisecond at start-up).
  const std::string quoted = nlohmann::json(model).dump();
  for (const auto& file : json_files(traces_dir)) {
    Profile p;
    try {
      const std::string text = read_text_file(file);
      if (text.find(quoted) == std::string::npos && text.find("\\u") == std::string::npos) continue;
      p = profile_from_json(parse_json_text(text, file.string()), file.string());
    } catch (const InputError&) {
      continue;  // not a profile (a device's meta.json) or a broken one: never a default
    }
    if (p.ops.empty() || p.model != model || p.dtype != dtype) continue;
    if (std::find(device_kinds.begin(), device_kinds.end(), p.device.kind) == device_kinds.end()) continue;
    found.push_back({file, p.device.kind, p.batch});
  }
  if (found.empty()) return std::nullopt;
  auto rank = [&](const TraceProfileMatch& m) {
    return std::find(device_kinds.begin(), device_kinds.end(), m.device_kind) - device_kinds.begin();
  };
  std::sort(found.begin(), found.end(), [&](const TraceProfileMatch& a, const TraceProfileMatch& b) {
    if (rank(a) != rank(b)) return rank(a) < rank(b);
    if (a.batch != b.batch) return a.batch > b.batch;
    return a.file < b.file;
  });
  return found.front();
}

}  // namespace parasim::profiler
