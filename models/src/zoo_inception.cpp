// Inception-v3 (Szegedy et al. 2016), exactly torchvision.models.inception_v3: BasicConv2d =
// conv without bias + BatchNorm(eps 0.001) + ReLU; 299x299 input; 1000 classes.
// With the auxiliary classifier (torchvision's training default): 27,161,264 parameters;
// without: 23,834,568. 5.71 GMACs per image for the main tower.
//
// The auxiliary head branches off after Mixed_6e and ends in its own cross-entropy "aux_loss"
// (torchvision weights it 0.4 in the total loss; the weight does not change costs).
#include "zoo_layers.hpp"

namespace parasim::models::zoo {

namespace {

using Branches = std::vector<OpId>;

OpId avg_pool_branch(ModelBuilder& b, const std::string& m, OpId x, std::int64_t out) {
  auto scope = b.block("branch_pool");
  OpId y = b.avg_pool2d(m + ".branch_pool.pool", x, 3, 1, 1);
  return basic_conv(b, m + ".branch_pool", y, out, 1);
}

OpId inception_a(ModelBuilder& b, const std::string& m, OpId x, std::int64_t pool_features) {
  auto scope = b.block(m);
  Branches br;
  {
    auto s = b.block("branch1x1");
    br.push_back(basic_conv(b, m + ".branch1x1", x, 64, 1));
  }
  {
    auto s = b.block("branch5x5");
    OpId y = basic_conv(b, m + ".branch5x5_1", x, 48, 1);
    br.push_back(basic_conv(b, m + ".branch5x5_2", y, 64, 5, 1, 2));
  }
  {
    auto s = b.block("branch3x3dbl");
    OpId y = basic_conv(b, m + ".branch3x3dbl_1", x, 64, 1);
    y = basic_conv(b, m + ".branch3x3dbl_2", y, 96, 3, 1, 1);
    br.push_back(basic_conv(b, m + ".branch3x3dbl_3", y, 96, 3, 1, 1));
  }
  br.push_back(avg_pool_branch(b, m, x, pool_features));
  return b.concat(m + ".cat", br, 1);
}

OpId inception_b(ModelBuilder& b, const std::string& m, OpId x) {
  auto scope = b.block(m);
  Branches br;
  {
    auto s = b.block("branch3x3");
    br.push_back(basic_conv(b, m + ".branch3x3", x, 384, 3, 2));
  }
  {
    auto s = b.block("branch3x3dbl");
    OpId y = basic_conv(b, m + ".branch3x3dbl_1", x, 64, 1);
    y = basic_conv(b, m + ".branch3x3dbl_2", y, 96, 3, 1, 1);
    br.push_back(basic_conv(b, m + ".branch3x3dbl_3", y, 96, 3, 2));
  }
  {
    auto s = b.block("branch_pool");
    br.push_back(b.max_pool2d(m + ".branch_pool.pool", x, 3, 2));
  }
  return b.concat(m + ".cat", br, 1);
}

OpId inception_c(ModelBuilder& b, const std::string& m, OpId x, std::int64_t c7) {
  auto scope = b.block(m);
  Branches br;
  {
    auto s = b.block("branch1x1");
    br.push_back(basic_conv(b, m + ".branch1x1", x, 192, 1));
  }
  {
    auto s = b.block("branch7x7");
    OpId y = basic_conv(b, m + ".branch7x7_1", x, c7, 1);
    y = basic_conv(b, m + ".branch7x7_2", y, c7, {1, 7}, 1, {0, 3});
    br.push_back(basic_conv(b, m + ".branch7x7_3", y, 192, {7, 1}, 1, {3, 0}));
  }
  {
    auto s = b.block("branch7x7dbl");
    OpId y = basic_conv(b, m + ".branch7x7dbl_1", x, c7, 1);
    y = basic_conv(b, m + ".branch7x7dbl_2", y, c7, {7, 1}, 1, {3, 0});
    y = basic_conv(b, m + ".branch7x7dbl_3", y, c7, {1, 7}, 1, {0, 3});
    y = basic_conv(b, m + ".branch7x7dbl_4", y, c7, {7, 1}, 1, {3, 0});
    br.push_back(basic_conv(b, m + ".branch7x7dbl_5", y, 192, {1, 7}, 1, {0, 3}));
  }
  br.push_back(avg_pool_branch(b, m, x, 192));
  return b.concat(m + ".cat", br, 1);
}

OpId inception_d(ModelBuilder& b, const std::string& m, OpId x) {
  auto scope = b.block(m);
  Branches br;
  {
    auto s = b.block("branch3x3");
    OpId y = basic_conv(b, m + ".branch3x3_1", x, 192, 1);
    br.push_back(basic_conv(b, m + ".branch3x3_2", y, 320, 3, 2));
  }
  {
    auto s = b.block("branch7x7x3");
    OpId y = basic_conv(b, m + ".branch7x7x3_1", x, 192, 1);
    y = basic_conv(b, m + ".branch7x7x3_2", y, 192, {1, 7}, 1, {0, 3});
    y = basic_conv(b, m + ".branch7x7x3_3", y, 192, {7, 1}, 1, {3, 0});
    br.push_back(basic_conv(b, m + ".branch7x7x3_4", y, 192, 3, 2));
  }
  {
    auto s = b.block("branch_pool");
    br.push_back(b.max_pool2d(m + ".branch_pool.pool", x, 3, 2));
  }
  return b.concat(m + ".cat", br, 1);
}

OpId inception_e(ModelBuilder& b, const std::string& m, OpId x) {
  auto scope = b.block(m);
  Branches br;
  {
    auto s = b.block("branch1x1");
    br.push_back(basic_conv(b, m + ".branch1x1", x, 320, 1));
  }
  {
    auto s = b.block("branch3x3");
    OpId y = basic_conv(b, m + ".branch3x3_1", x, 384, 1);
    OpId a = basic_conv(b, m + ".branch3x3_2a", y, 384, {1, 3}, 1, {0, 1});
    OpId c = basic_conv(b, m + ".branch3x3_2b", y, 384, {3, 1}, 1, {1, 0});
    br.push_back(b.concat(m + ".branch3x3.cat", {a, c}, 1));
  }
  {
    auto s = b.block("branch3x3dbl");
    OpId y = basic_conv(b, m + ".branch3x3dbl_1", x, 448, 1);
    y = basic_conv(b, m + ".branch3x3dbl_2", y, 384, 3, 1, 1);
    OpId a = basic_conv(b, m + ".branch3x3dbl_3a", y, 384, {1, 3}, 1, {0, 1});
    OpId c = basic_conv(b, m + ".branch3x3dbl_3b", y, 384, {3, 1}, 1, {1, 0});
    br.push_back(b.concat(m + ".branch3x3dbl.cat", {a, c}, 1));
  }
  br.push_back(avg_pool_branch(b, m, x, 192));
  return b.concat(m + ".cat", br, 1);
}

/// InceptionAux: avg_pool 5/3 -> 1x1 conv 128 -> 5x5 conv 768 -> adaptive pool -> fc.
void aux_classifier(ModelBuilder& b, OpId x) {
  auto scope = b.block("AuxLogits");
  OpId y = b.avg_pool2d("AuxLogits.pool", x, 5, 3);
  y = basic_conv(b, "AuxLogits.conv0", y, 128, 1);
  y = basic_conv(b, "AuxLogits.conv1", y, 768, 5);
  y = b.adaptive_avg_pool2d("AuxLogits.avgpool", y, 1);
  y = b.flatten("AuxLogits.flatten", y);
  y = b.linear("AuxLogits.fc", y, 768, 1000);
  b.cross_entropy("aux_loss", y);
}

}  // namespace

Model inception_v3(const ModelOptions& o, bool aux_default) {
  const bool aux = o.aux_logits.value_or(aux_default);
  ModelBuilder b(aux ? "inception_v3" : "inception_v3_noaux", o.batch, o.dtype);
  b.set_dataset("imagenet-1k");
  OpId x = image_input(b, o, 299);
  {
    auto scope = b.block("stem");
    x = basic_conv(b, "Conv2d_1a_3x3", x, 32, 3, 2);
    x = basic_conv(b, "Conv2d_2a_3x3", x, 32, 3);
    x = basic_conv(b, "Conv2d_2b_3x3", x, 64, 3, 1, 1);
    x = b.max_pool2d("maxpool1", x, 3, 2);
    x = basic_conv(b, "Conv2d_3b_1x1", x, 80, 1);
    x = basic_conv(b, "Conv2d_4a_3x3", x, 192, 3);
    x = b.max_pool2d("maxpool2", x, 3, 2);
  }
  x = inception_a(b, "Mixed_5b", x, 32);
  x = inception_a(b, "Mixed_5c", x, 64);
  x = inception_a(b, "Mixed_5d", x, 64);
  x = inception_b(b, "Mixed_6a", x);
  x = inception_c(b, "Mixed_6b", x, 128);
  x = inception_c(b, "Mixed_6c", x, 160);
  x = inception_c(b, "Mixed_6d", x, 160);
  x = inception_c(b, "Mixed_6e", x, 192);
  if (aux) aux_classifier(b, x);
  x = inception_d(b, "Mixed_7a", x);
  x = inception_e(b, "Mixed_7b", x);
  x = inception_e(b, "Mixed_7c", x);
  x = b.adaptive_avg_pool2d("avgpool", x, 1);
  x = b.dropout("dropout", x, 0.5);
  x = b.flatten("flatten", x);
  x = b.linear("fc", x, 2048, 1000);
  b.cross_entropy("loss", x);
  return b.finish();
}

}  // namespace parasim::models::zoo
