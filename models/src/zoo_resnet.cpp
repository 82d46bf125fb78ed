// ResNet-50 (He et al. 2016), exactly torchvision.models.resnet50 (v1.5: the stride-2 sits on
// the 3x3 conv of a bottleneck). 25,557,032 parameters; 4.09 GMACs per 224x224 image.
// ResNeXt-101 32x4d (Xie et al. 2017) as NVIDIA's DeepLearningExamples and timm build it: the same
// bottlenecks with a 32-group 3x3 conv, widths 128-1024, blocks 3-4-23-3. 44,177,704 parameters.
#include <array>

#include "zoo_layers.hpp"

namespace parasim::models::zoo {

namespace {

/// torchvision Bottleneck: 1x1 (width) -> 3x3 (width, stride, groups) -> 1x1 (out), each with BN;
/// the first block of a stage projects the shortcut with a strided 1x1 conv + BN.
OpId bottleneck(ModelBuilder& b, const std::string& name, OpId x, std::int64_t width, std::int64_t out,
                std::int64_t groups, std::int64_t stride, bool project_shortcut) {
  auto scope = b.block(name);
  OpId shortcut = x;
  OpId y = b.conv2d(name + ".conv1", x, width, 1, 1, 0, 1, 1, false);
  y = b.batch_norm(name + ".bn1", y);
  y = b.relu(name + ".relu1", y);
  y = b.conv2d(name + ".conv2", y, width, 3, stride, 1, groups, 1, false);
  y = b.batch_norm(name + ".bn2", y);
  y = b.relu(name + ".relu2", y);
  y = b.conv2d(name + ".conv3", y, out, 1, 1, 0, 1, 1, false);
  y = b.batch_norm(name + ".bn3", y);
  if (project_shortcut) {
    shortcut = b.conv2d(name + ".downsample.0", x, out, 1, stride, 0, 1, 1, false);
    shortcut = b.batch_norm(name + ".downsample.1", shortcut);
  }
  y = b.add(name + ".add", {y, shortcut});
  return b.relu(name + ".relu3", y);
}

/// The ImageNet ResNet family: stem, four stages of bottlenecks, average pool, classifier. A
/// stage's blocks have first_width x 2^stage channels inside and 256 x 2^stage out.
Model bottleneck_resnet(const std::string& name, const ModelOptions& o, const std::array<int, 4>& blocks,
                        std::int64_t first_width, std::int64_t groups) {
  ModelBuilder b(name, o.batch, o.dtype);
  b.set_dataset("imagenet-1k");
  OpId x = image_input(b, o, 224);
  {
    auto scope = b.block("stem");
    x = b.conv2d("conv1", x, 64, 7, 2, 3, 1, 1, false);
    x = b.batch_norm("bn1", x);
    x = b.relu("relu", x);
    x = b.max_pool2d("maxpool", x, 3, 2, 1);
  }
  for (std::size_t stage = 0; stage < blocks.size(); ++stage) {
    const std::int64_t width = first_width << stage;
    const std::int64_t out = std::int64_t{256} << stage;
    for (int i = 0; i < blocks[stage]; ++i) {
      const std::string block = "layer" + std::to_string(stage + 1) + "." + std::to_string(i);
      const std::int64_t stride = (i == 0 && stage > 0) ? 2 : 1;
      x = bottleneck(b, block, x, width, out, groups, stride, /*project_shortcut=*/i == 0);
    }
  }
  x = b.adaptive_avg_pool2d("avgpool", x, 1);
  x = b.flatten("flatten", x);
  x = b.linear("fc", x, 2048, 1000);
  b.cross_entropy("loss", x);
  return b.finish();
}

}  // namespace

Model resnet50(const ModelOptions& o) { return bottleneck_resnet("resnet50", o, {3, 4, 6, 3}, 64, 1); }

Model resnext101_32x4d(const ModelOptions& o) {
  return bottleneck_resnet("resnext101_32x4d", o, {3, 4, 23, 3}, 128, 32);
}

}  // namespace parasim::models::zoo
