// ONNX import when parasim is built without libonnx-dev (PARASIM_ONNX=OFF or not found): .onnx
// files are recognised and refused with a message that says why.
#include <algorithm>
#include <cctype>

#include "parasim/common/error.hpp"
#include "parasim/models/onnx_import.hpp"

namespace parasim::models {

namespace {

[[noreturn]] void not_built(const std::string& origin) {
  throw InputError(origin +
                   ": ONNX support was not built into this parasim (install libonnx-dev and libprotobuf-dev, "
                   "then configure with -DPARASIM_ONNX=ON)");
}

}  // namespace

bool onnx_import_built() { return false; }

bool is_onnx_path(const std::filesystem::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".onnx";
}

Model onnx_model_from_bytes(std::string_view, const std::string& origin, const std::string&, const LoadOptions&) {
  not_built(origin);
}

Model load_onnx_model(const std::filesystem::path& path, const LoadOptions&) { not_built(path.string()); }

}  // namespace parasim::models
