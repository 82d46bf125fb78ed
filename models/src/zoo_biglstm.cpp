// BIG LSTM from Jozefowicz et al. 2016, "Exploring the Limits of Language Modeling"
// (arXiv:1602.02410), the "2-layer LSTM-8192-1024" model on the One Billion Word benchmark:
// word embeddings of 1024, two LSTM layers of 8192 cells each projected to 1024, dropout 0.25,
// and a sampled softmax over the 793,471-word vocabulary with 8192 negative samples per step;
// unrolled for 20 steps. About 1.8 B parameters (exact count in tests/models/zoo_test.cpp).
#include "zoo_layers.hpp"

namespace parasim::models::zoo {

Model biglstm(const ModelOptions& o) {
  constexpr std::int64_t kVocab = 793471;
  constexpr std::int64_t kEmbedding = 1024;
  constexpr std::int64_t kCells = 8192;
  constexpr std::int64_t kProjection = 1024;
  constexpr std::int64_t kSamples = 8192;
  constexpr double kDropout = 0.25;
  const std::int64_t t = seq_len_or(o, 20);
  ModelBuilder b("biglstm", o.batch, o.dtype);
  b.set_dataset("lm1b");
  OpId x = b.input("tokens", {o.batch, t});
  x = b.embedding("embedding", x, kVocab, kEmbedding);
  x = b.dropout("embedding.dropout", x, kDropout);
  for (int i = 0; i < 2; ++i) {
    const std::string n = "lstm." + std::to_string(i);
    auto scope = b.block(n);
    x = b.lstm(n, x, kCells, kProjection);
    x = b.dropout(n + ".dropout", x, kDropout);
  }
  b.sampled_softmax("softmax", x, kVocab, kSamples);
  return b.finish();
}

}  // namespace parasim::models::zoo
