// GoogLeNet (Szegedy et al. 2015), two variants:
//  - googlenet: exactly torchvision.models.googlenet for ImageNet 224x224 (BasicConv2d = conv
//    without bias + BatchNorm(eps 0.001) + ReLU; like torchvision, the "5x5" branch uses a 3x3
//    conv). Without the auxiliary classifiers (torchvision's inference default and the default
//    here): 6,624,904 parameters, 1.50 GMACs per image. With them (aux_logits): 13,004,888.
//  - googlenet_cifar: kuangliu/pytorch-cifar GoogLeNet for 32x32 CIFAR-10: pre_layers conv3x3
//    192 (+BN+ReLU), Inception a3..b5 (convs with bias, each followed by BN + ReLU, the 5x5
//    branch as two 3x3 convs), 8x8 average pool, Linear(1024, 10): 6,166,250 parameters.
#include <array>

#include "zoo_layers.hpp"

namespace parasim::models::zoo {

namespace {

/// Branch widths of one Inception module, in the order of the paper's Table 1.
struct InceptionWidths {
  std::int64_t n1x1, n3x3red, n3x3, n5x5red, n5x5, pool_proj;
};

OpId torchvision_inception(ModelBuilder& b, const std::string& m, OpId x, const InceptionWidths& w) {
  auto scope = b.block(m);
  std::vector<OpId> br;
  {
    auto s = b.block("branch1");
    br.push_back(basic_conv(b, m + ".branch1", x, w.n1x1, 1));
  }
  {
    auto s = b.block("branch2");
    OpId y = basic_conv(b, m + ".branch2.0", x, w.n3x3red, 1);
    br.push_back(basic_conv(b, m + ".branch2.1", y, w.n3x3, 3, 1, 1));
  }
  {
    auto s = b.block("branch3");
    OpId y = basic_conv(b, m + ".branch3.0", x, w.n5x5red, 1);
    br.push_back(basic_conv(b, m + ".branch3.1", y, w.n5x5, 3, 1, 1));
  }
  {
    auto s = b.block("branch4");
    OpId y = b.max_pool2d(m + ".branch4.0", x, 3, 1, 1, /*ceil_mode=*/true);
    br.push_back(basic_conv(b, m + ".branch4.1", y, w.pool_proj, 1));
  }
  return b.concat(m + ".cat", br, 1);
}

/// torchvision googlenet InceptionAux: 4x4 adaptive pool -> 1x1 conv 128 -> fc 1024 -> fc classes.
void torchvision_aux(ModelBuilder& b, const std::string& m, OpId x, std::int64_t classes) {
  auto scope = b.block(m);
  OpId y = b.adaptive_avg_pool2d(m + ".avgpool", x, 4);
  y = basic_conv(b, m + ".conv", y, 128, 1);
  y = b.flatten(m + ".flatten", y);
  y = b.linear(m + ".fc1", y, 2048, 1024);
  y = b.relu(m + ".relu", y);
  y = b.dropout(m + ".dropout", y, 0.7);
  y = b.linear(m + ".fc2", y, 1024, classes);
  b.cross_entropy(m + ".loss", y);
}

/// kuangliu Inception: each conv has a bias and is followed by BN + ReLU (Sequential indices).
OpId cifar_inception(ModelBuilder& b, const std::string& m, OpId x, const InceptionWidths& w) {
  auto scope = b.block(m);
  auto conv_bn_relu = [&](const std::string& seq, int at, OpId in, std::int64_t out, std::int64_t k) {
    const std::string p = m + "." + seq + ".";
    OpId y = b.conv2d(p + std::to_string(at), in, out, k, 1, k / 2);
    y = b.batch_norm(p + std::to_string(at + 1), y);
    return b.relu(p + std::to_string(at + 2), y);
  };
  std::vector<OpId> br;
  {
    auto s = b.block("b1");
    br.push_back(conv_bn_relu("b1", 0, x, w.n1x1, 1));
  }
  {
    auto s = b.block("b2");
    OpId y = conv_bn_relu("b2", 0, x, w.n3x3red, 1);
    br.push_back(conv_bn_relu("b2", 3, y, w.n3x3, 3));
  }
  {
    auto s = b.block("b3");
    OpId y = conv_bn_relu("b3", 0, x, w.n5x5red, 1);
    y = conv_bn_relu("b3", 3, y, w.n5x5, 3);
    br.push_back(conv_bn_relu("b3", 6, y, w.n5x5, 3));
  }
  {
    auto s = b.block("b4");
    OpId y = b.max_pool2d(m + ".b4.0", x, 3, 1, 1);
    y = b.conv2d(m + ".b4.1", y, w.pool_proj, 1);
    y = b.batch_norm(m + ".b4.2", y);
    br.push_back(b.relu(m + ".b4.3", y));
  }
  return b.concat(m + ".cat", br, 1);
}

// The nine Inception modules of GoogLeNet (Table 1 of the paper), shared by both variants.
constexpr InceptionWidths k3a{64, 96, 128, 16, 32, 32}, k3b{128, 128, 192, 32, 96, 64};
constexpr InceptionWidths k4a{192, 96, 208, 16, 48, 64}, k4b{160, 112, 224, 24, 64, 64};
constexpr InceptionWidths k4c{128, 128, 256, 24, 64, 64}, k4d{112, 144, 288, 32, 64, 64};
constexpr InceptionWidths k4e{256, 160, 320, 32, 128, 128}, k5a{256, 160, 320, 32, 128, 128};
constexpr InceptionWidths k5b{384, 192, 384, 48, 128, 128};

}  // namespace

Model googlenet(const ModelOptions& o) {
  const bool aux = o.aux_logits.value_or(false);
  ModelBuilder b("googlenet", o.batch, o.dtype);
  b.set_dataset("imagenet-1k");
  OpId x = image_input(b, o, 224);
  {
    auto scope = b.block("stem");
    x = basic_conv(b, "conv1", x, 64, 7, 2, 3);
    x = b.max_pool2d("maxpool1", x, 3, 2, 0, true);
    x = basic_conv(b, "conv2", x, 64, 1);
    x = basic_conv(b, "conv3", x, 192, 3, 1, 1);
    x = b.max_pool2d("maxpool2", x, 3, 2, 0, true);
  }
  x = torchvision_inception(b, "inception3a", x, k3a);
  x = torchvision_inception(b, "inception3b", x, k3b);
  x = b.max_pool2d("maxpool3", x, 3, 2, 0, true);
  x = torchvision_inception(b, "inception4a", x, k4a);
  if (aux) torchvision_aux(b, "aux1", x, 1000);
  x = torchvision_inception(b, "inception4b", x, k4b);
  x = torchvision_inception(b, "inception4c", x, k4c);
  x = torchvision_inception(b, "inception4d", x, k4d);
  if (aux) torchvision_aux(b, "aux2", x, 1000);
  x = torchvision_inception(b, "inception4e", x, k4e);
  x = b.max_pool2d("maxpool4", x, 2, 2, 0, true);
  x = torchvision_inception(b, "inception5a", x, k5a);
  x = torchvision_inception(b, "inception5b", x, k5b);
  x = b.adaptive_avg_pool2d("avgpool", x, 1);
  x = b.flatten("flatten", x);
  x = b.dropout("dropout", x, 0.2);
  x = b.linear("fc", x, 1024, 1000);
  b.cross_entropy("loss", x);
  return b.finish();
}

Model googlenet_cifar(const ModelOptions& o) {
  ModelBuilder b("googlenet_cifar", o.batch, o.dtype);
  b.set_dataset("cifar-10");
  OpId x = image_input(b, o, 32);
  {
    auto scope = b.block("pre_layers");
    x = b.conv2d("pre_layers.0", x, 192, 3, 1, 1);
    x = b.batch_norm("pre_layers.1", x);
    x = b.relu("pre_layers.2", x);
  }
  x = cifar_inception(b, "a3", x, k3a);
  x = cifar_inception(b, "b3", x, k3b);
  x = b.max_pool2d("maxpool1", x, 3, 2, 1);
  x = cifar_inception(b, "a4", x, k4a);
  x = cifar_inception(b, "b4", x, k4b);
  x = cifar_inception(b, "c4", x, k4c);
  x = cifar_inception(b, "d4", x, k4d);
  x = cifar_inception(b, "e4", x, k4e);
  x = b.max_pool2d("maxpool2", x, 3, 2, 1);
  x = cifar_inception(b, "a5", x, k5a);
  x = cifar_inception(b, "b5", x, k5b);
  x = b.avg_pool2d("avgpool", x, 8, 1);
  x = b.flatten("flatten", x);
  x = b.linear("linear", x, 1024, 10);
  b.cross_entropy("loss", x);
  return b.finish();
}

}  // namespace parasim::models::zoo
