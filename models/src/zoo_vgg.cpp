// VGG-16 (Simonyan & Zisserman 2015), two variants:
//  - vgg16: exactly torchvision.models.vgg16 (configuration D, no BatchNorm, adaptive 7x7
//    average pool, classifier 25088-4096-4096-1000 with dropout): 138,357,544 parameters,
//    15.47 GMACs per 224x224 image.
//  - vgg16_cifar: kuangliu/pytorch-cifar VGG('VGG16') for 32x32 CIFAR-10: the same 13 conv3x3
//    layers (with bias) each followed by BatchNorm + ReLU, five 2x2 max-pools, a 1x1 average pool
//    (an identity kept for fidelity) and one Linear(512, 10): 14,728,266 parameters.
#include <vector>

#include "zoo_layers.hpp"

namespace parasim::models::zoo {

namespace {

constexpr std::int64_t kPool = 0;  // 'M' in the torchvision/kuangliu configuration lists
const std::vector<std::int64_t> kConfigD{64, 64, kPool, 128, 128, kPool, 256, 256, 256, kPool,
                                         512, 512, 512, kPool, 512, 512, 512, kPool};

}  // namespace

Model vgg16(const ModelOptions& o) {
  ModelBuilder b("vgg16", o.batch, o.dtype);
  b.set_dataset("imagenet-1k");
  OpId x = image_input(b, o, 224);
  {
    // Op names follow torchvision's nn.Sequential indices (features.0 conv, features.1 relu, ...).
    auto scope = b.block("features");
    int index = 0;
    for (std::int64_t c : kConfigD) {
      const std::string at = "features." + std::to_string(index);
      if (c == kPool) {
        x = b.max_pool2d(at, x, 2, 2);
        index += 1;
      } else {
        x = b.conv2d(at, x, c, 3, 1, 1);
        x = b.relu("features." + std::to_string(index + 1), x);
        index += 2;
      }
    }
  }
  x = b.adaptive_avg_pool2d("avgpool", x, 7);
  x = b.flatten("flatten", x);
  {
    auto scope = b.block("classifier");
    x = b.linear("classifier.0", x, 512 * 7 * 7, 4096);
    x = b.relu("classifier.1", x);
    x = b.dropout("classifier.2", x, 0.5);
    x = b.linear("classifier.3", x, 4096, 4096);
    x = b.relu("classifier.4", x);
    x = b.dropout("classifier.5", x, 0.5);
    x = b.linear("classifier.6", x, 4096, 1000);
  }
  b.cross_entropy("loss", x);
  return b.finish();
}

Model vgg16_cifar(const ModelOptions& o) {
  ModelBuilder b("vgg16_cifar", o.batch, o.dtype);
  b.set_dataset("cifar-10");
  OpId x = image_input(b, o, 32);
  {
    auto scope = b.block("features");
    int index = 0;
    for (std::int64_t c : kConfigD) {
      const std::string at = "features." + std::to_string(index);
      if (c == kPool) {
        x = b.max_pool2d(at, x, 2, 2);
        index += 1;
      } else {
        x = b.conv2d(at, x, c, 3, 1, 1);
        x = b.batch_norm("features." + std::to_string(index + 1), x);
        x = b.relu("features." + std::to_string(index + 2), x);
        index += 3;
      }
    }
    x = b.avg_pool2d("features." + std::to_string(index), x, 1, 1);
  }
  x = b.flatten("flatten", x);
  x = b.linear("classifier", x, 512, 10);
  b.cross_entropy("loss", x);
  return b.finish();
}

}  // namespace parasim::models::zoo
