// Building blocks shared by the zoo's model files (internal).
#pragma once

#include <string>

#include "parasim/models/builder.hpp"
#include "parasim/models/zoo.hpp"

namespace parasim::models::zoo {

/// torchvision's BasicConv2d: conv (no bias) -> BatchNorm (eps 0.001) -> ReLU, as ops
/// `<name>.conv`, `<name>.bn`, `<name>.relu`.
inline OpId basic_conv(ModelBuilder& b, const std::string& name, OpId x, std::int64_t out, Hw kernel, Hw stride = 1,
                       Hw padding = 0) {
  x = b.conv2d(name + ".conv", x, out, kernel, stride, padding, 1, 1, /*bias=*/false);
  x = b.batch_norm(name + ".bn", x);
  return b.relu(name + ".relu", x);
}

/// The NCHW image batch `images` of the requested (or default) size.
inline OpId image_input(ModelBuilder& b, const ModelOptions& o, std::int64_t default_size) {
  const std::int64_t size = o.image_size > 0 ? o.image_size : default_size;
  return b.input("images", {o.batch, 3, size, size});
}

inline std::int64_t seq_len_or(const ModelOptions& o, std::int64_t default_len) {
  return o.seq_len > 0 ? o.seq_len : default_len;
}

// One builder per model file.
Model resnet50(const ModelOptions& o);
Model resnext101_32x4d(const ModelOptions& o);
Model vgg16(const ModelOptions& o);
Model vgg16_cifar(const ModelOptions& o);
Model inception_v3(const ModelOptions& o, bool aux_default);
Model googlenet(const ModelOptions& o);
Model googlenet_cifar(const ModelOptions& o);
Model gnmt(const ModelOptions& o);
Model biglstm(const ModelOptions& o);
Model tiny_cnn(const ModelOptions& o);
Model tiny_lstm(const ModelOptions& o);

}  // namespace parasim::models::zoo
