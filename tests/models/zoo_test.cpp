// The model zoo: exact parameter counts, published MACs, batch scaling, datasets, losses.
#include <cmath>

#include <gtest/gtest.h>

#include "parasim/common/error.hpp"
#include "parasim/models/transformer.hpp"
#include "parasim/models/zoo.hpp"

namespace parasim::models {
namespace {

struct ExactParams {
  const char* name;
  std::int64_t params;
};

// torchvision / Hugging Face reference counts, and hand-derived counts for models without one.
const ExactParams kExactParams[] = {
    {"resnet50", 25'557'032},  // torchvision.models.resnet50
    // stem 9,408 + 128; per bottleneck in*w + w*(w/32)*9 + w*out + BN 2(2w + out), the first of a
    // stage + in*out + 2 out; widths 128..1024, out 256..2048, blocks 3-4-23-3; fc 2,049,000
    // (timm resnext101_32x4d: 44.18 M).
    {"resnext101_32x4d", 44'177'704},
    {"vgg16", 138'357'544},              // torchvision.models.vgg16
    {"inception_v3", 27'161'264},        // torchvision inception_v3(aux_logits=True)
    {"inception_v3_noaux", 23'834'568},  // torchvision inception_v3(aux_logits=False)
    {"googlenet", 6'624'904},            // torchvision googlenet(aux_logits=False)
    {"gpt2", 124'439'808},               // Hugging Face GPT2LMHeadModel (tied)
    // Hugging Face BertForMaskedLM (bert-large): embeddings 30522*1024 + 512*1024 + 2*1024 + LN 2048
    // = 31,782,912; 24 layers x (4*1024^2 + 4*1024 + 2*1024*4096 + 4096 + 1024 + 2*2048) = 302,309,376;
    // MLM head 1024^2 + 1024 + 2048 + decoder bias 30522 = 1,084,170. Total 335,174,458.
    {"bert_large", 335'174'458},
    // kuangliu VGG16: convs 14,714,688 (3*64*9+64, ..., 5 x (512*512*9+512)) + BN 2*(64*2+128*2+256*3+512*6)
    // = 8,448 + Linear(512,10) 5,130.
    {"vgg16_cifar", 14'728'266},
    {"googlenet_cifar", 6'166'250},  // kuangliu GoogLeNet (as its README/summary reports)
    // GNMT-8, V = 32,320, h = 1024, PyTorch LSTM (4h(in+h) + 8h):
    //   shared embedding V*h                                   33,095,680
    //   encoder L0 bidirectional 2 x (4h(h+h) + 8h)             16,793,600
    //   encoder L1 4h(2h+h) + 8h                                12,591,104
    //   encoder L2..7 6 x (4h(h+h) + 8h)                        50,380,800
    //   decoder attention LSTM 4h(h+h) + 8h                      8,396,800
    //   Bahdanau: linear_q + linear_k 2h^2, v h, b h, g 1         2,099,201
    //   decoder L1..7 7 x (4h(2h+h) + 8h)                       88,137,728
    //   classifier h*V + V                                      33,128,000
    {"gnmt", 244'622'913},
    // BIG LSTM, V = 793,471: embedding V*1024 = 812,514,304; 2 x LSTM(1024 -> 8192, proj 1024):
    // 4*8192*(1024+1024) + 8*8192 + 8192*1024 = 75,563,008 each; sampled softmax V*1024 + V =
    // 813,307,775. Total 1,776,948,095 (the paper's "1.8B").
    {"biglstm", 1'776'948'095},
    // Megatron layout, V = 51,200, s = 2048: V*h + s*h + l*(12h^2 + 13h) + 2h (final LayerNorm).
    {"megatron_22b", 22'074'273'792},    // l = 48,  h = 6144
    {"gpt3_175b", 174'615'846'912},      // l = 96,  h = 12288
    {"turing_530b", 529'600'819'200},    // l = 105, h = 20480 (Narayanan et al.: 529.6B)
    {"megatron_1t", 1'008'038'758'400},  // l = 128, h = 25600 (Narayanan et al.: 1008.0B)
    // Llama 3 / 3.1 (Meta's model cards) and Mixtral 8x7B (Jiang et al. 2024), as Hugging Face counts them:
    // 2 V h (untied) + l (h (q + 2 kv) hd + h^2 + 3 h ffn [x E + router h E] + 2 h) + h.
    {"llama3_8b", 8'030'261'248},
    {"llama3_70b", 70'553'706'496},
    {"llama31_405b", 405'853'388'800},
    {"mixtral_8x7b", 46'702'792'704},
    {"tiny_cnn", 25'578},    // 3*16*9+16 + 16*32*9+32 + 2048*10+10
    {"tiny_lstm", 424'424},  // 1000*64 + (4*128*192+1024) + (4*128*256+1024) + 128*1000+1000
};

TEST(Zoo, ExactParameterCounts) {
  for (const auto& [name, params] : kExactParams) {
    SCOPED_TRACE(name);
    EXPECT_EQ(build_zoo_model(name).total_params(), params);
  }
  EXPECT_EQ(std::size(kExactParams), zoo_entries().size());  // every zoo model is pinned
}

TEST(Zoo, OptionalAuxClassifiers) {
  EXPECT_EQ(build_zoo_model("inception_v3", ModelOptions{.aux_logits = false}), build_zoo_model("inception_v3_noaux"));
  // torchvision googlenet(aux_logits=True): + aux1 (512*128 + 256 + 2048*1024 + 1024 + 1024*1000 + 1000)
  // + aux2 (528*128 + 256 + 2,098,176 + 1,025,000) = 6,624,904 + 3,188,968 + 3,191,016.
  EXPECT_EQ(build_zoo_model("googlenet", ModelOptions{.aux_logits = true}).total_params(), 13'004'888);
}

TEST(Zoo, ForwardMacsMatchPublishedFigures) {
  // torchvision's model cards (GFLOPS there are multiply-accumulates, counted like fvcore).
  const std::pair<const char*, double> published[] = {
      {"resnet50", 4.09e9}, {"vgg16", 15.47e9}, {"googlenet", 1.50e9}, {"inception_v3_noaux", 5.71e9},
      {"inception_v3", 5.71e9}};
  for (const auto& [name, macs] : published) {
    SCOPED_TRACE(name);
    const double got = static_cast<double>(build_zoo_model(name).macs_per_sample());
    EXPECT_NEAR(got / macs, 1.0, 0.02);
  }
}

TEST(Zoo, Gpt2MacsFollowTheClosedForm) {
  // Per token: 12 h^2 in the linears of each layer, 2 T h in attention, h V in the LM head.
  const std::int64_t t = 1024, h = 768, l = 12, v = 50257;
  EXPECT_EQ(build_zoo_model("gpt2").macs_per_sample(), t * (l * (12 * h * h + 2 * t * h) + h * v));
  EXPECT_EQ(build_zoo_model("gpt2", ModelOptions{.seq_len = 128}).macs_per_sample(),
            128 * (l * (12 * h * h + 2 * 128 * h) + h * v));
}

TEST(Zoo, MacsScaleLinearlyWithBatch) {
  for (const ZooEntry& e : zoo_entries()) {
    SCOPED_TRACE(e.name);
    const Model one = build_zoo_model(e.name, ModelOptions{.batch = 1});
    for (std::int64_t batch : {2, 7, 32}) {
      const Model m = build_zoo_model(e.name, ModelOptions{.batch = batch});
      EXPECT_EQ(m.batch(), batch);
      EXPECT_EQ(m.total_macs_fwd(), batch * one.total_macs_fwd());
      EXPECT_EQ(m.macs_per_sample(), one.macs_per_sample());
      EXPECT_EQ(m.total_params(), one.total_params());
      EXPECT_EQ(m.num_ops(), one.num_ops());
    }
  }
}

TEST(Zoo, EveryModelEndsWithItsLossAndIsTopologicallyStored) {
  for (const ZooEntry& e : zoo_entries()) {
    SCOPED_TRACE(e.name);
    const Model m = build_zoo_model(e.name);
    const OpKind last = m.op(m.num_ops() - 1).kind;
    EXPECT_TRUE(last == OpKind::CrossEntropy || last == OpKind::SampledSoftmax);
    EXPECT_EQ(m.dataset(), e.dataset);
    EXPECT_EQ(m.name(), e.name);
    for (auto [it, end] = boost::edges(m.graph()); it != end; ++it)
      EXPECT_LT(boost::source(*it, m.graph()), boost::target(*it, m.graph()));
    // Every sink is a loss: nothing computed is thrown away.
    for (OpId v = 0; v < m.num_ops(); ++v) {
      if (boost::out_degree(v, m.graph()) > 0) continue;
      const OpKind k = m.op(v).kind;
      EXPECT_TRUE(k == OpKind::CrossEntropy || k == OpKind::SampledSoftmax) << m.op(v).name;
    }
  }
}

TEST(Zoo, Datasets) {
  EXPECT_EQ(build_zoo_model("resnet50").dataset(), "imagenet-1k");
  EXPECT_EQ(build_zoo_model("vgg16_cifar").dataset(), "cifar-10");
  EXPECT_EQ(build_zoo_model("gnmt").dataset(), "wmt16-en-de");
  EXPECT_EQ(build_zoo_model("biglstm").dataset(), "lm1b");
  EXPECT_EQ(build_zoo_model("gpt2").dataset(), "openwebtext");
  EXPECT_EQ(build_zoo_model("bert_large").dataset(), "wikipedia");
  EXPECT_EQ(build_zoo_model("tiny_cnn").dataset(), "");
}

// What --attention's fused kernels replace: the transformers' dot-product cores, not GNMT's
// additive attention, and nothing in a CNN.
TEST(Zoo, DotProductAttentionIsTheTransformers) {
  EXPECT_TRUE(has_dot_product_attention(build_zoo_model("gpt2")));
  EXPECT_TRUE(has_dot_product_attention(build_zoo_model("bert_large")));
  EXPECT_TRUE(has_dot_product_attention(build_zoo_model("llama3_8b")));
  EXPECT_FALSE(has_dot_product_attention(build_zoo_model("gnmt")));
  EXPECT_FALSE(has_dot_product_attention(build_zoo_model("resnet50")));
}

TEST(Zoo, ImageSizeAndSequenceLength) {
  const Model half = build_zoo_model("resnet50", ModelOptions{.image_size = 112});
  EXPECT_EQ(half.op(0).output_shape, (Shape{1, 3, 112, 112}));
  EXPECT_EQ(half.total_params(), 25'557'032);
  // About a quarter: odd feature maps round up (layer4 runs at 4x4, not 3.5x3.5).
  const double ratio = static_cast<double>(half.macs_per_sample()) / 4.09e9;
  EXPECT_GT(ratio, 0.25);
  EXPECT_LT(ratio, 0.27);
  const Model g = build_zoo_model("gnmt", ModelOptions{.batch = 2, .seq_len = 30});
  EXPECT_EQ(g.op(0).output_shape, (Shape{2, 30}));
  EXPECT_EQ(build_zoo_model("biglstm").op(0).output_shape, (Shape{1, 20}));
  EXPECT_EQ(build_zoo_model("inception_v3").op(0).output_shape, (Shape{1, 3, 299, 299}));
  EXPECT_EQ(build_zoo_model("googlenet_cifar").op(0).output_shape, (Shape{1, 3, 32, 32}));
}

TEST(Zoo, BertMaskedLmHeadOnGatheredPositions) {
  // NVIDIA's BERT phase 2: the MLM head on max_predictions_per_seq = 80 of 512 positions.
  const Model full = build_zoo_model("bert_large", ModelOptions{.batch = 2});
  const Model masked = build_zoo_model("bert_large", ModelOptions{.batch = 2, .mlm_positions = 80});
  EXPECT_FALSE(full.find_op("lm_head.gather"));
  EXPECT_EQ(masked.total_params(), 335'174'458);  // the same weights
  EXPECT_EQ(masked.num_ops(), full.num_ops() + 1);
  const Op& g = masked.op(*masked.find_op("lm_head.gather"));
  EXPECT_EQ(g.output_shape, (Shape{2, 80, 1024}));
  EXPECT_EQ(masked.consumers_of(*masked.find_op("lm_head.gather")),
            std::vector<OpId>{*masked.find_op("lm_head.transform.dense")});
  // 2 x (512 - 80) = 864 fewer rows through the 1024 x 1024 transform and the tied 1024 x 30522 decoder.
  EXPECT_EQ(full.total_macs_fwd() - masked.total_macs_fwd(), std::int64_t{864} * 1024 * (1024 + 30522));
  EXPECT_EQ(masked.op(*masked.find_op("lm_head")).output_shape, (Shape{2, 80, 30522}));
  // 0 and seq_len keep the head on every position: the graph is the preset's, op for op.
  EXPECT_TRUE(build_zoo_model("bert_large", ModelOptions{.batch = 2, .mlm_positions = 512}) == full);
  EXPECT_TRUE(build_zoo_model("bert_large", ModelOptions{.batch = 2, .mlm_positions = 0}) == full);
  // 20 of 128 in phase 1.
  const Model p1 = build_zoo_model("bert_large", ModelOptions{.seq_len = 128, .mlm_positions = 20});
  EXPECT_EQ(p1.op(*p1.find_op("lm_head")).output_shape, (Shape{1, 20, 30522}));
}

TEST(Zoo, MlmPositionsErrors) {
  auto error = [](const std::string& model, const ModelOptions& o) {
    try {
      (void)build_zoo_model(model, o);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error("gpt2", {.mlm_positions = 80}),
            "model gpt2 has no masked-LM head, so no mlm_positions (models with one: bert_large)");
  EXPECT_EQ(error("bert_large", {.mlm_positions = -1}),
            "model bert_large: expected mlm_positions >= 0 (0 = every position), found -1");
  EXPECT_EQ(error("bert_large", {.seq_len = 128, .mlm_positions = 129}),
            "transformer bert_large: expected mlm_positions in [0, seq_len 128], found 129");
  TransformerConfig c = transformer_preset("gpt2");
  c.mlm_positions = 10;
  try {
    (void)build_transformer(c, {});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "transformer gpt2: expected mlm_positions only with an MLM head (mlm_head)");
  }
}

TEST(Zoo, LayerStructure) {
  const Model g = build_zoo_model("gnmt");
  int lstms = 0;
  for (OpId v = 0; v < g.num_ops(); ++v) lstms += g.op(v).kind == OpKind::Lstm;
  EXPECT_EQ(lstms, 17);  // encoder: 2 directions + 7; decoder: 8
  const Model b = build_zoo_model("biglstm");
  EXPECT_EQ(b.op(*b.find_op("lstm.0")).output_shape, (Shape{1, 20, 1024}));
  const Model inc = build_zoo_model("inception_v3");
  EXPECT_EQ(inc.op(*inc.find_op("Mixed_5b.branch3x3dbl_2.conv")).block, "Mixed_5b/branch3x3dbl");
  EXPECT_EQ(inc.op(*inc.find_op("Mixed_7c.cat")).output_shape, (Shape{1, 2048, 8, 8}));
  EXPECT_EQ(inc.op(*inc.find_op("aux_loss")).kind, OpKind::CrossEntropy);
}

TEST(Zoo, ErrorsNameWhatIsWrong) {
  try {
    (void)build_zoo_model("resnet51");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(
        e.what(),
        "unknown model \"resnet51\"; known models: resnet50, resnext101_32x4d, vgg16, vgg16_cifar, inception_v3, "
        "inception_v3_noaux, googlenet, googlenet_cifar, gnmt, biglstm, gpt2, bert_large, megatron_22b, "
        "gpt3_175b, turing_530b, megatron_1t, llama3_8b, llama3_70b, llama31_405b, mixtral_8x7b, tiny_cnn, "
        "tiny_lstm");
  }
  EXPECT_THROW((void)build_zoo_model("resnet50", ModelOptions{.batch = 0}), InputError);
  EXPECT_THROW((void)build_zoo_model("gpt2", ModelOptions{.image_size = 224}), InputError);
  EXPECT_THROW((void)build_zoo_model("resnet50", ModelOptions{.seq_len = 10}), InputError);
  EXPECT_THROW((void)build_zoo_model("resnet50", ModelOptions{.aux_logits = true}), InputError);
  EXPECT_THROW((void)build_zoo_model("gpt2", ModelOptions{.seq_len = 1025}), InputError);
  try {
    (void)build_zoo_model("inception_v3", ModelOptions{.image_size = 64});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "avg_pool2d \"AuxLogits.pool\" with input [1, 768, 2, 2]: expected a padded input (2x2) at least "
                 "as large as the kernel (5x5)");
  }
}

TEST(Zoo, AbsurdBatchOverflowsLoudly) {
  // One op's MACs (10^8 sequences x 2048 tokens x 25600 x 76800) do not fit in int64: say so.
  try {
    (void)build_zoo_model("megatron_1t", ModelOptions{.batch = 100'000'000});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("sizes overflow a 64-bit integer"), std::string::npos) << e.what();
  }
  // At 10^6 sequences each op fits but the model total (2 x 10^21) does not.
  const Model m = build_zoo_model("megatron_1t", ModelOptions{.batch = 1'000'000});
  try {
    (void)m.total_macs_fwd();
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "model megatron_1t: total forward MACs overflows a 64-bit integer");
  }
}

TEST(Transformer, PresetsAndCustomConfigs) {
  EXPECT_EQ(transformer_preset("turing_530b").hidden, 20480);
  EXPECT_THROW((void)transformer_preset("gpt5"), InputError);
  TransformerConfig c = transformer_preset("gpt2");
  c.name = "gpt2_half";
  c.layers = 6;
  const Model m = build_transformer(c, ModelOptions{.batch = 2});
  EXPECT_EQ(m.total_params(), 124'439'808 - 6 * 7'087'872);  // 7,087,872 parameters per GPT-2 layer
  c.tied_embeddings = false;
  EXPECT_EQ(build_transformer(c, {}).total_params(), 124'439'808 - 6 * 7'087'872 + 50257 * 768);
  c.heads = 5;
  EXPECT_THROW((void)build_transformer(c, {}), InputError);
}

}  // namespace
}  // namespace parasim::models
