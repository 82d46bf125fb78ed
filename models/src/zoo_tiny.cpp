// Two small models for tests and for the CPU executor: they build and run in milliseconds.
//  - tiny_cnn:  3x32x32 -> conv3x3 16 -> relu -> maxpool 2 -> conv3x3 32 -> relu -> maxpool 2
//               -> linear 10 -> cross-entropy. 25,578 parameters.
//  - tiny_lstm: 16 token ids -> embedding 1000x64 -> LSTM 128 -> LSTM 128 -> linear 1000
//               -> cross-entropy. 424,424 parameters.
#include "zoo_layers.hpp"

namespace parasim::models::zoo {

Model tiny_cnn(const ModelOptions& o) {
  ModelBuilder b("tiny_cnn", o.batch, o.dtype);
  OpId x = image_input(b, o, 32);
  x = b.conv2d("conv1", x, 16, 3, 1, 1);
  x = b.relu("relu1", x);
  x = b.max_pool2d("pool1", x, 2, 2);
  x = b.conv2d("conv2", x, 32, 3, 1, 1);
  x = b.relu("relu2", x);
  x = b.max_pool2d("pool2", x, 2, 2);
  x = b.flatten("flatten", x);
  x = b.linear("fc", x, b.shape(x)[1], 10);
  b.cross_entropy("loss", x);
  return b.finish();
}

Model tiny_lstm(const ModelOptions& o) {
  ModelBuilder b("tiny_lstm", o.batch, o.dtype);
  OpId x = b.input("tokens", {o.batch, seq_len_or(o, 16)});
  x = b.embedding("embedding", x, 1000, 64);
  x = b.lstm("lstm.0", x, 128);
  x = b.lstm("lstm.1", x, 128);
  x = b.linear("decoder", x, 128, 1000);
  b.cross_entropy("loss", x);
  return b.finish();
}

}  // namespace parasim::models::zoo
