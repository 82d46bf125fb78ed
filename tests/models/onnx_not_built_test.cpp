// Without libonnx-dev (PARASIM_ONNX=OFF) a .onnx file is refused with exit 2's InputError, saying why.
#include <gtest/gtest.h>

#include "parasim/models/model_json.hpp"
#include "parasim/models/onnx_import.hpp"
#include "support/input_error.hpp"

namespace parasim::models {
namespace {

TEST(OnnxImport, NotBuiltSaysSo) {
  EXPECT_FALSE(onnx_import_built());
  EXPECT_EQ(test_support::input_error([] { (void)load_model_file("resnet50.onnx"); }),
            "resnet50.onnx: ONNX support was not built into this parasim (install libonnx-dev and libprotobuf-dev, "
            "then configure with -DPARASIM_ONNX=ON)");
}

}  // namespace
}  // namespace parasim::models
