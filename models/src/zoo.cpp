// The zoo registry: names, descriptions, default datasets and which options each model takes.
#include "parasim/models/zoo.hpp"

#include <functional>

#include "parasim/common/error.hpp"
#include "parasim/models/transformer.hpp"
#include "zoo_layers.hpp"

namespace parasim::models {

namespace {

struct Registered {
  ZooEntry entry;
  std::function<Model(const ModelOptions&)> build;
};

ZooEntry image(std::string name, std::string description, std::string dataset, bool aux = false) {
  return {std::move(name), std::move(description), std::move(dataset), true, false, aux};
}

ZooEntry sequence(std::string name, std::string description, std::string dataset) {
  return {std::move(name), std::move(description), std::move(dataset), false, true, false};
}

Model transformer(const std::string& preset, const ModelOptions& o) {
  TransformerConfig c = transformer_preset(preset);
  if (o.mlm_positions > 0) c.mlm_positions = o.mlm_positions;
  return build_transformer(c, o);
}

ZooEntry masked_lm(ZooEntry e) {
  e.takes_mlm_positions = true;
  return e;
}

const std::vector<Registered>& registry() {
  static const std::vector<Registered> r = [] {
    std::vector<Registered> v;
    v.push_back({image("resnet50", "ResNet-50 v1.5 (torchvision), 224x224", "imagenet-1k"), zoo::resnet50});
    v.push_back(
        {image("resnext101_32x4d", "ResNeXt-101 32x4d (NVIDIA DeepLearningExamples, timm), 224x224", "imagenet-1k"),
         zoo::resnext101_32x4d});
    v.push_back(
        {image("vgg16", "VGG-16 (torchvision), 224x224, classifier 4096-4096-1000", "imagenet-1k"), zoo::vgg16});
    v.push_back({image("vgg16_cifar", "VGG-16 with BatchNorm for CIFAR-10 (kuangliu/pytorch-cifar), 32x32", "cifar-10"),
                 zoo::vgg16_cifar});
    v.push_back({image("inception_v3", "Inception-v3 (torchvision) with aux classifier, 299x299", "imagenet-1k", true),
                 [](const ModelOptions& o) { return zoo::inception_v3(o, true); }});
    v.push_back({image("inception_v3_noaux", "Inception-v3 (torchvision) without aux classifier, 299x299",
                       "imagenet-1k", true),
                 [](const ModelOptions& o) { return zoo::inception_v3(o, false); }});
    v.push_back({image("googlenet", "GoogLeNet (torchvision), 224x224, no aux classifiers", "imagenet-1k", true),
                 zoo::googlenet});
    v.push_back({image("googlenet_cifar", "GoogLeNet for CIFAR-10 (kuangliu/pytorch-cifar), 32x32", "cifar-10"),
                 zoo::googlenet_cifar});
    v.push_back({sequence("gnmt", "GNMT-8 (Wu et al. 2016; MLPerf): 8+8 LSTM-1024, attention, 32k vocab, 50 tokens",
                          "wmt16-en-de"),
                 zoo::gnmt});
    v.push_back({sequence("biglstm", "BIG LSTM (Jozefowicz et al. 2016): 2x LSTM-8192-1024, sampled softmax, 20 tokens",
                          "lm1b"),
                 zoo::biglstm});
    v.push_back({sequence("gpt2", "GPT-2 124M: 12 layers, 768 hidden, 12 heads, 1024 tokens", "openwebtext"),
                 [](const ModelOptions& o) { return transformer("gpt2", o); }});
    v.push_back({masked_lm(sequence("bert_large", "BERT-Large (MLM): 24 layers, 1024 hidden, 16 heads, 512 tokens",
                                    "wikipedia")),
                 [](const ModelOptions& o) { return transformer("bert_large", o); }});
    v.push_back({sequence("megatron_22b", "Megatron 22B: 48 layers, 6144 hidden, 64 heads, 2048 tokens", "openwebtext"),
                 [](const ModelOptions& o) { return transformer("megatron_22b", o); }});
    v.push_back({sequence("gpt3_175b", "GPT-3 175B: 96 layers, 12288 hidden, 96 heads, 2048 tokens", "openwebtext"),
                 [](const ModelOptions& o) { return transformer("gpt3_175b", o); }});
    v.push_back(
        {sequence("turing_530b", "Megatron-Turing NLG 530B: 105 layers, 20480 hidden, 128 heads", "openwebtext"),
         [](const ModelOptions& o) { return transformer("turing_530b", o); }});
    v.push_back(
        {sequence("megatron_1t", "Megatron 1T: 128 layers, 25600 hidden, 160 heads, 2048 tokens", "openwebtext"),
         [](const ModelOptions& o) { return transformer("megatron_1t", o); }});
    v.push_back(
        {sequence("llama3_8b", "Llama 3 8B (Meta 2024): 32 layers, 4096 hidden, 32 heads, 8 KV heads, 8192 tokens",
                  "openwebtext"),
         [](const ModelOptions& o) { return transformer("llama3_8b", o); }});
    v.push_back(
        {sequence("llama3_70b", "Llama 3 70B (Meta 2024): 80 layers, 8192 hidden, 64 heads, 8 KV heads, 8192 tokens",
                  "openwebtext"),
         [](const ModelOptions& o) { return transformer("llama3_70b", o); }});
    v.push_back({sequence("llama31_405b",
                          "Llama 3.1 405B (Meta 2024): 126 layers, 16384 hidden, 128 heads, 8 KV heads, 8192 tokens",
                          "openwebtext"),
                 [](const ModelOptions& o) { return transformer("llama31_405b", o); }});
    v.push_back({sequence("mixtral_8x7b",
                          "Mixtral 8x7B (Jiang et al. 2024): 32 layers, 4096 hidden, 8 experts top-2, 32768 tokens",
                          "openwebtext"),
                 [](const ModelOptions& o) { return transformer("mixtral_8x7b", o); }});
    v.push_back({image("tiny_cnn", "test model: 2 conv + linear, 32x32", ""), zoo::tiny_cnn});
    v.push_back({sequence("tiny_lstm", "test model: embedding + 2 LSTM-128 + linear, 16 tokens", ""), zoo::tiny_lstm});
    return v;
  }();
  return r;
}

const Registered* lookup(const std::string& name) {
  for (const Registered& r : registry())
    if (r.entry.name == name) return &r;
  return nullptr;
}

std::string known_names() {
  std::string s;
  for (const Registered& r : registry()) s += (s.empty() ? "" : ", ") + r.entry.name;
  return s;
}

}  // namespace

const std::vector<ZooEntry>& zoo_entries() {
  static const std::vector<ZooEntry> entries = [] {
    std::vector<ZooEntry> v;
    for (const Registered& r : registry()) v.push_back(r.entry);
    return v;
  }();
  return entries;
}

bool is_zoo_model(const std::string& name) { return lookup(name) != nullptr; }

const ZooEntry& zoo_entry(const std::string& name) {
  const Registered* r = lookup(name);
  if (!r) throw InputError("unknown model \"" + name + "\"; known models: " + known_names());
  return r->entry;
}

Model build_zoo_model(const std::string& name, const ModelOptions& o) {
  const ZooEntry& e = zoo_entry(name);
  if (o.batch < 1) throw InputError("model " + name + ": expected batch >= 1, found " + std::to_string(o.batch));
  if (o.image_size < 0 || o.seq_len < 0)
    throw InputError("model " + name + ": expected image size and sequence length >= 0 (0 = the model's default)");
  if (o.image_size > 0 && !e.takes_image_size)
    throw InputError("model " + name + " takes no image size (it is a sequence model; set the sequence length)");
  if (o.seq_len > 0 && !e.takes_seq_len)
    throw InputError("model " + name + " takes no sequence length (it is an image model; set the image size)");
  if (o.aux_logits && !e.takes_aux_logits)
    throw InputError("model " + name + " has no auxiliary classifiers");
  if (o.mlm_positions < 0)
    throw InputError("model " + name + ": expected mlm_positions >= 0 (0 = every position), found " +
                     std::to_string(o.mlm_positions));
  if (o.mlm_positions > 0 && !e.takes_mlm_positions) {
    std::string with;
    for (const Registered& r : registry())
      if (r.entry.takes_mlm_positions) with += (with.empty() ? "" : ", ") + r.entry.name;
    throw InputError("model " + name + " has no masked-LM head, so no mlm_positions (models with one: " + with + ")");
  }
  return lookup(name)->build(o);
}

}  // namespace parasim::models
