// GNMT-8: Google's Neural Machine Translation system (Wu et al. 2016, arXiv:1609.08144) as
// implemented by the MLPerf Training reference / NVIDIA DeepLearningExamples "GNMT v2"
// (seq2seq/models/gnmt.py) with num_layers = 8:
//   encoder: shared embedding (32,320 BPE tokens x 1024), layer 0 bidirectional LSTM(1024)
//            (directions concatenated to 2048), layer 1 LSTM(2048 -> 1024), layers 2..7
//            LSTM(1024) with residual connections;
//   decoder: LSTM(1024) + normalized Bahdanau attention over the encoder outputs, then 7
//            LSTM(2048 -> 1024) layers fed [x, context], residual from the second on;
//            classifier Linear(1024, 32320).
// The vocabulary is MLPerf's shared 32k BPE, padded to a multiple of 8 (32,320). Source and
// target length default to 50 tokens. Dropout 0.2. LSTMs count PyTorch's two bias vectors.
#include "zoo_layers.hpp"

namespace parasim::models::zoo {

Model gnmt(const ModelOptions& o) {
  constexpr std::int64_t kVocab = 32320;
  constexpr std::int64_t kHidden = 1024;
  constexpr int kLayers = 8;
  constexpr double kDropout = 0.2;
  const std::int64_t t = seq_len_or(o, 50);
  ModelBuilder b("gnmt", o.batch, o.dtype);
  b.set_dataset("wmt16-en-de");
  const OpId src = b.input("src_tokens", {o.batch, t});
  const OpId tgt = b.input("tgt_tokens", {o.batch, t});

  OpId enc = 0;
  {
    auto scope = b.block("encoder");
    OpId x = b.embedding("encoder.embedder", src, kVocab, kHidden);
    x = b.dropout("encoder.dropout.0", x, kDropout);
    const OpId fwd = b.lstm("encoder.rnn_layers.0.forward", x, kHidden);
    const OpId bwd = b.lstm("encoder.rnn_layers.0.reverse", x, kHidden, 0, true, /*reverse=*/true);
    x = b.concat("encoder.rnn_layers.0.cat", {fwd, bwd}, 2);
    x = b.dropout("encoder.dropout.1", x, kDropout);
    x = b.lstm("encoder.rnn_layers.1", x, kHidden);
    for (int i = 2; i < kLayers; ++i) {
      const std::string n = std::to_string(i);
      const OpId residual = x;
      x = b.dropout("encoder.dropout." + n, x, kDropout);
      x = b.lstm("encoder.rnn_layers." + n, x, kHidden);
      x = b.add("encoder.residual." + n, {x, residual});
    }
    enc = x;
  }
  {
    auto scope = b.block("decoder");
    OpId y = b.embedding_shared("decoder.embedder", tgt, "encoder.embedder");
    y = b.dropout("decoder.att_rnn.dropout", y, kDropout);
    y = b.lstm("decoder.att_rnn.rnn", y, kHidden);
    OpId context = 0;
    {
      auto attn = b.block("attention");
      const OpId q = b.linear("decoder.att_rnn.attn.linear_q", y, kHidden, kHidden, false);
      const OpId k = b.linear("decoder.att_rnn.attn.linear_k", enc, kHidden, kHidden, false);
      context = b.attention("decoder.att_rnn.attn", q, k, enc, 1, /*additive=*/true);
    }
    OpId x = b.dropout("decoder.dropout.0", y, kDropout);
    x = b.concat("decoder.cat.0", {x, context}, 2);
    x = b.lstm("decoder.rnn_layers.0", x, kHidden);
    for (int i = 1; i < kLayers - 1; ++i) {
      const std::string n = std::to_string(i);
      const OpId residual = x;
      x = b.dropout("decoder.dropout." + n, x, kDropout);
      x = b.concat("decoder.cat." + n, {x, context}, 2);
      x = b.lstm("decoder.rnn_layers." + n, x, kHidden);
      x = b.add("decoder.residual." + n, {x, residual});
    }
    x = b.linear("decoder.classifier", x, kHidden, kVocab);
    b.cross_entropy("loss", x);
  }
  return b.finish();
}

}  // namespace parasim::models::zoo
