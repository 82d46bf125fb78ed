// ResNet-50 (He et al. 2016), exactly torchvision.models.resnet50 (v1.5: the stride-2 sits on
// the 3x3 conv of a bottleneck). 25,557,032 parameters; 4.09 GMACs per 224x224 image.
#include <array>

#include "zoo_layers.hpp"

namespace parasim::models::zoo {

namespace {

/// torchvision Bottleneck: 1x1 (width) -> 3x3 (width, stride) -> 1x1 (4 x width), each with BN;
/// the first block of a stage projects the shortcut with a strided 1x1 conv + BN.
OpId bottleneck(ModelBuilder& b, const std::string& name, OpId x, std::int64_t width, std::int64_t stride,
                bool project_shortcut) {
  auto scope = b.block(name);
  OpId shortcut = x;
  OpId y = b.conv2d(name + ".conv1", x, width, 1, 1, 0, 1, 1, false);
  y = b.batch_norm(name + ".bn1", y);
  y = b.relu(name + ".relu1", y);
  y = b.conv2d(name + ".conv2", y, width, 3, stride, 1, 1, 1, false);
  y = b.batch_norm(name + ".bn2", y);
  y = b.relu(name + ".relu2", y);
  y = b.conv2d(name + ".conv3", y, width * 4, 1, 1, 0, 1, 1, false);
  y = b.batch_norm(name + ".bn3", y);
  if (project_shortcut) {
    shortcut = b.conv2d(name + ".downsample.0", x, width * 4, 1, stride, 0, 1, 1, false);
    shortcut = b.batch_norm(name + ".downsample.1", shortcut);
  }
  y = b.add(name + ".add", {y, shortcut});
  return b.relu(name + ".relu3", y);
}

}  // namespace

Model resnet50(const ModelOptions& o) {
  ModelBuilder b("resnet50", o.batch, o.dtype);
  b.set_dataset("imagenet-1k");
  OpId x = image_input(b, o, 224);
  {
    auto scope = b.block("stem");
    x = b.conv2d("conv1", x, 64, 7, 2, 3, 1, 1, false);
    x = b.batch_norm("bn1", x);
    x = b.relu("relu", x);
    x = b.max_pool2d("maxpool", x, 3, 2, 1);
  }
  constexpr std::array<int, 4> kBlocks{3, 4, 6, 3};
  constexpr std::array<std::int64_t, 4> kWidths{64, 128, 256, 512};
  for (std::size_t stage = 0; stage < kBlocks.size(); ++stage) {
    for (int i = 0; i < kBlocks[stage]; ++i) {
      const std::string name = "layer" + std::to_string(stage + 1) + "." + std::to_string(i);
      const std::int64_t stride = (i == 0 && stage > 0) ? 2 : 1;
      x = bottleneck(b, name, x, kWidths[stage], stride, /*project_shortcut=*/i == 0);
    }
  }
  x = b.adaptive_avg_pool2d("avgpool", x, 1);
  x = b.flatten("flatten", x);
  x = b.linear("fc", x, 2048, 1000);
  b.cross_entropy("loss", x);
  return b.finish();
}

}  // namespace parasim::models::zoo
