// Reading published-runs/1 files: what is expressed, what is skipped and why, what is rejected.
#include "parasim/validation/recorded_runs.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "parasim/common/error.hpp"
#include "parasim/hardware/cluster_json.hpp"
#include "parasim/hardware/cluster_presets.hpp"
#include "parasim/models/transformer.hpp"

namespace parasim::validation {
namespace {

// A two-stage, four-way tensor-parallel GPT row on 16 A100s (`id` names it).
nlohmann::json megatron_row(const std::string& id = "gpt-small") {
  nlohmann::json row = nlohmann::json::parse(R"json({
    "id": "gpt-small", "source": "test",
    "model": {"zoo_name": null, "layers": 2, "hidden": 256, "heads": 4, "seq_len": 128, "vocab": 1000, "ffn": 1024,
              "arch": "GPT"},
    "hardware": {"gpus_per_node": 8, "parasim_preset": "dgx-a100 (note)"},
    "gpus": 16,
    "config": {"dp": 2, "tp": 4, "pp": 2, "micro_batch": 4, "micro_batches_per_step": 8, "global_batch": 64,
               "interleave": 1, "schedule": "1F1B (PipeDream-flush)", "recompute": "full (--checkpoint-activations)",
               "sequence_parallel": false, "zero": 0, "precision": "fp16 (--fp16)", "ddp_impl": "local",
               "grad_accumulation": "fp32-buffer"},
    "measured": {"metric": "tflops_per_gpu", "value": 100},
    "derived_step_seconds": 0.5
  })json");
  row["id"] = id;
  return row;
}

nlohmann::json file_of(std::vector<nlohmann::json> rows) {
  return {{"schema", "published-runs/1"}, {"rows", rows}};
}

std::string error_of(const nlohmann::json& doc) {
  try {
    (void)parse_runs(doc, "runs.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(RecordedRuns, ReadsAMegatronRowIntoAStrategy) {
  const RunsFile f = parse_runs(file_of({megatron_row()}), "runs.json");
  ASSERT_EQ(f.runs.size(), 1u);
  const RecordedRun& r = f.runs[0];
  EXPECT_EQ(r.skip_reason, "");
  EXPECT_EQ(r.preset, "dgx-a100");
  EXPECT_EQ(strategies::to_string(r.strategy), "dp=2,mp=2,tp=4,schedule=1f1b,micro=8,recompute=full,overlap=off");
  EXPECT_EQ(r.global_batch, 64);
  EXPECT_EQ(r.dtype, models::DType::F16);
  EXPECT_EQ(r.transformer.layers, 2);
  EXPECT_EQ(r.transformer.ffn, 1024);
  EXPECT_DOUBLE_EQ(r.measured_step_s, 0.5);
  EXPECT_EQ(r.measured_from, "derived_step_seconds");
}

TEST(RecordedRuns, AnArchNamingLlamaHasNoBiasesAndNoDropout) {
  nlohmann::json row = megatron_row();
  row["model"]["arch"] = "Llama 3: GQA, SwiGLU, RoPE, RMSNorm, untied";
  const RecordedRun llama = parse_runs(file_of({row}), "runs.json").runs[0];
  EXPECT_FALSE(llama.transformer.linear_bias);
  EXPECT_EQ(llama.transformer.dropout, 0.0);
  EXPECT_EQ(llama.transformer.mlp, models::MlpKind::Swiglu);
  EXPECT_FALSE(llama.transformer.tied_embeddings);
  ASSERT_EQ(llama.caveats.size(), 1u);
  EXPECT_EQ(llama.caveats[0], "model.arch names Llama: no linear biases and no dropout");
  // A stated dropout wins; a GPT keeps its biases and dropout.
  row["model"]["dropout"] = 0.1;
  EXPECT_EQ(parse_runs(file_of({row}), "runs.json").runs[0].transformer.dropout, 0.1);
  const RecordedRun gpt = parse_runs(file_of({megatron_row()}), "runs.json").runs[0];
  EXPECT_TRUE(gpt.transformer.linear_bias);
  EXPECT_GT(gpt.transformer.dropout, 0.0);
}

TEST(RecordedRuns, GradientAccumulationIsStatedOrFollowsTheNamedDdp) {
  auto run_of = [](const nlohmann::json& config_patch) {
    nlohmann::json row = megatron_row();
    row["config"].erase("grad_accumulation");
    if (config_patch.is_object()) row["config"].update(config_patch);
    return parse_runs(file_of({row}), "runs.json").runs[0];
  };
  const RecordedRun stated = run_of({{"grad_accumulation", "fused"}});
  EXPECT_EQ(stated.grad_accumulation, GradAccumulation::Fused);
  EXPECT_TRUE(stated.caveats.empty());
  // Megatron-LM's local DDP: main_grad in the gradient's dtype for fp16 training (fp32 only with
  // --accumulate-allreduce-grads-in-fp32), fp32 for bf16 training (forced on).
  const RecordedRun local = run_of(nlohmann::json::object());
  EXPECT_EQ(local.grad_accumulation, GradAccumulation::Buffer);
  ASSERT_EQ(local.caveats.size(), 1u);
  EXPECT_EQ(local.caveats[0].rfind("gradient accumulation not stated: Megatron-LM's local DDP", 0), 0u);
  EXPECT_NE(local.caveats[0].find("fp16 in fp16 training"), std::string::npos);
  const RecordedRun local_bf16 = run_of({{"precision", "bf16"}});
  EXPECT_EQ(local_bf16.grad_accumulation, GradAccumulation::Fp32Buffer);
  const RecordedRun torch = run_of({{"ddp_impl", "torch"}});
  EXPECT_EQ(torch.grad_accumulation, GradAccumulation::InPlace);
  ASSERT_EQ(torch.caveats.size(), 1u);
  const RecordedRun none = run_of({{"ddp_impl", nullptr}});
  EXPECT_EQ(none.grad_accumulation, GradAccumulation::Auto);
  EXPECT_TRUE(none.caveats.empty());

  nlohmann::json bad = megatron_row();
  bad["config"]["grad_accumulation"] = "sometimes";
  EXPECT_EQ(error_of(file_of({bad})),
            "runs.json: $.rows[0].config.grad_accumulation: expected auto, in-place, fp32-buffer, buffer, fused or "
            "fused-buffer, found "
            "string \"sometimes\"");
}

TEST(RecordedRuns, SequenceParallelIsTakenAsTheRunStatesIt) {
  auto strategy_of = [](const std::string& recompute, bool sp) {
    nlohmann::json row = megatron_row();
    row["config"]["recompute"] = recompute;
    row["config"]["sequence_parallel"] = sp;
    const RunsFile f = parse_runs(file_of({row}), "runs.json");
    EXPECT_TRUE(f.runs[0].caveats.empty());
    return f.runs[0].strategy;
  };
  // Stated with full or no recomputation: sp=on, and the lowering runs sequence-parallel.
  const strategies::Strategy on = strategy_of("none", true);
  EXPECT_EQ(strategies::to_string(on), "dp=2,mp=2,tp=4,schedule=1f1b,micro=8,sp=on,overlap=off");
  EXPECT_TRUE(on.sequence_parallel());
  // The default pairing with selective recomputation needs no key; a run without it says sp=off.
  EXPECT_EQ(strategies::to_string(strategy_of("selective", true)),
            "dp=2,mp=2,tp=4,schedule=1f1b,micro=8,recompute=selective,overlap=off");
  const strategies::Strategy off = strategy_of("selective", false);
  EXPECT_EQ(off.sp, strategies::SeqParallel::Off);
  EXPECT_FALSE(off.sequence_parallel());
}

TEST(RecordedRuns, ConvertsThroughputToAStepTime) {
  nlohmann::json row = megatron_row();
  row.erase("derived_step_seconds");
  row["measured"] = {{"metric", "sequences_per_s"}, {"value", 128}};
  const RunsFile f = parse_runs(file_of({row}), "runs.json");
  EXPECT_DOUBLE_EQ(f.runs[0].measured_step_s, 0.5);  // 64 / 128
}

TEST(RecordedRuns, ReadsAGlobalBatchStatedInTokens) {
  // seq_len 128: "8K tokens" is 8,192 = 64 x 128 (binary K; decimal 8,000 does not divide by 128).
  nlohmann::json binary = megatron_row("a");
  binary["config"]["global_batch"] = "8K tokens (= 64 x 128)";
  nlohmann::json decimal = megatron_row("b");
  decimal["config"]["global_batch"] = "8,192 tokens";
  nlohmann::json uneven = megatron_row("c");
  uneven["config"]["global_batch"] = "1000 tokens";
  nlohmann::json words = megatron_row("d");
  words["config"]["global_batch"] = "about 64 sequences";
  const RunsFile f = parse_runs(file_of({binary, decimal, uneven, words}), "runs.json");
  EXPECT_EQ(f.runs[0].global_batch, 64);
  EXPECT_EQ(f.runs[0].skip_reason, "");
  ASSERT_EQ(f.runs[0].caveats.size(), 1u);
  EXPECT_EQ(f.runs[0].caveats[0],
            "global batch \"8K tokens (= 64 x 128)\" read as 8192 tokens (K = 2^10) = 64 sequences of 128");
  EXPECT_EQ(f.runs[1].global_batch, 64);
  EXPECT_EQ(f.runs[1].caveats[0], "global batch \"8,192 tokens\" read as 8192 tokens = 64 sequences of 128");
  EXPECT_EQ(f.runs[2].skip_reason, "config.global_batch is not a number of samples or of tokens");
  EXPECT_EQ(f.runs[3].skip_reason, "config.global_batch is not a number of samples or of tokens");
}

// A published batch the replicas cannot split evenly is a rounded figure: the nearest multiple
// within 5% is projected and said; a larger gap is a misread configuration and is skipped.
TEST(RecordedRuns, RoundsAPublishedBatchToTheNearestTheReplicasSplitEvenly) {
  // dp 2 x micro 4 = 8 per micro-batch round: 62 -> 64 (3.2%); 124 -> 120 or 128 (a tie: down).
  nlohmann::json near = megatron_row("a");
  near["config"].erase("micro_batches_per_step");
  near["config"]["global_batch"] = 62;
  nlohmann::json tie = megatron_row("b");
  tie["config"].erase("micro_batches_per_step");
  tie["config"]["global_batch"] = 124;
  nlohmann::json far = megatron_row("c");
  far["config"].erase("micro_batches_per_step");
  far["config"]["global_batch"] = 13;  // 16 or 8: 23% or 38% away
  // Without a micro-batch size and no pipeline: the batch splits over dp alone (2M tokens over 124
  // replicas in OPT's case); 2 x 2 x 4 = 16 GPUs as dp=4, tp=4: 127 -> 128.
  nlohmann::json dp_only = megatron_row("d");
  dp_only["config"] = {
      {"dp", 4}, {"tp", 4}, {"pp", 1}, {"global_batch", 127}, {"recompute", "full"}, {"precision", "fp16"}};
  const RunsFile f = parse_runs(file_of({near, tie, far, dp_only}), "runs.json");
  EXPECT_EQ(f.runs[0].skip_reason, "");
  EXPECT_EQ(f.runs[0].global_batch, 64);
  EXPECT_EQ(f.runs[0].strategy.micro, 8);
  ASSERT_FALSE(f.runs[0].caveats.empty());
  EXPECT_EQ(f.runs[0].caveats[0],
            "global batch 62 is not a multiple of dp x micro_batch = 8: projected at 64, the "
            "nearest (a published batch is often rounded)");
  EXPECT_EQ(f.runs[1].global_batch, 120);
  EXPECT_EQ(f.runs[1].strategy.micro, 15);
  EXPECT_EQ(f.runs[2].skip_reason, "global_batch is not a multiple of dp x micro_batch (nor within 5% of one)");
  EXPECT_EQ(f.runs[3].skip_reason, "");
  EXPECT_EQ(f.runs[3].global_batch, 128);
  EXPECT_EQ(f.runs[3].caveats[0],
            "global batch 127 is not a multiple of dp = 4: projected at 128, the nearest (a "
            "published batch is often rounded)");
}

// The words other tables use: a zoo model by its published name, recomputation as yes/no,
// Megatron-LM's distributed optimizer for ZeRO-1.
TEST(RecordedRuns, ReadsPublishedNamesAndYesNoWords) {
  std::vector<nlohmann::json> rows;
  const std::vector<std::pair<std::string, std::string>> names{
      {"ResNet-50", "resnet50"},     {"resnet_50", "resnet50"},
      {"ResNet50 v1.5", "resnet50"}, {"bert-large-uncased", "bert_large"},
      {"GPT-3 175B", "gpt3_175b"},   {"ResNet-101", ""}};
  for (std::size_t i = 0; i < names.size(); ++i) {
    nlohmann::json row = megatron_row();
    row["id"] = "name" + std::to_string(i);
    row["model"] = {{"zoo_name", names[i].first}};
    rows.push_back(row);
  }
  const std::vector<std::pair<nlohmann::json, strategies::Recompute>> recomputes{
      {"no", strategies::Recompute::None},
      {false, strategies::Recompute::None},
      {true, strategies::Recompute::Full},
      {"activation checkpointing", strategies::Recompute::Full}};
  for (std::size_t i = 0; i < recomputes.size(); ++i) {
    nlohmann::json row = megatron_row();
    row["id"] = "recompute" + std::to_string(i);
    row["config"]["recompute"] = recomputes[i].first;
    rows.push_back(row);
  }
  nlohmann::json dist = megatron_row("dist");
  dist["config"]["zero"] = "distributed optimizer";
  nlohmann::json no_zero = megatron_row("nozero");
  no_zero["config"]["zero"] = "no";
  rows.push_back(dist);
  rows.push_back(no_zero);
  const RunsFile f = parse_runs(file_of(rows), "runs.json");
  for (std::size_t i = 0; i < names.size(); ++i) {
    const RecordedRun& r = f.runs[i];
    if (names[i].second.empty()) {
      EXPECT_EQ(r.skip_reason, "model.zoo_name \"ResNet-101\" is not a zoo model (`parasim models` lists them)");
      continue;
    }
    EXPECT_EQ(r.skip_reason, "") << names[i].first;
    EXPECT_EQ(r.zoo_model, names[i].second);
    ASSERT_FALSE(r.caveats.empty());
    EXPECT_EQ(r.caveats[0], "model.zoo_name \"" + names[i].first + "\" read as " + names[i].second);
  }
  for (std::size_t i = 0; i < recomputes.size(); ++i) {
    const RecordedRun& r = f.runs[names.size() + i];
    EXPECT_EQ(r.skip_reason, "") << recomputes[i].first;
    EXPECT_EQ(r.strategy.recompute, recomputes[i].second) << recomputes[i].first;
  }
  const RecordedRun& d = f.runs[names.size() + recomputes.size()];
  EXPECT_EQ(d.strategy.zero, 1);
  EXPECT_NE(std::find(d.caveats.begin(), d.caveats.end(),
                      "config.zero \"distributed optimizer\" read as ZeRO-1: Megatron-LM's distributed optimizer "
                      "shards the optimizer state and master weights over the data-parallel ranks"),
            d.caveats.end());
  EXPECT_EQ(f.runs.back().strategy.zero, 0);
  EXPECT_EQ(f.runs.back().skip_reason, "");
}

// A measured figure by the names tables give it: each of these is a 0.5 s step of the megatron row
// (64 sequences of 128 tokens on 16 GPUs).
TEST(RecordedRuns, ReadsAMeasuredFigureByTheNamesTablesGiveIt) {
  const std::vector<std::pair<std::string, double>> figures{{"elapsed_time_per_iteration_ms", 500},
                                                            {"seconds_per_step", 0.5},
                                                            {"step_s", 0.5},
                                                            {"Iteration time (s)", 0.5},
                                                            {"images/sec", 128},
                                                            {"Throughput (samples/s)", 128},
                                                            {"sequences_per_second", 128},
                                                            {"tokens_per_sec_per_gpu", 1024},
                                                            {"tokens/s", 16384}};
  std::vector<nlohmann::json> rows;
  for (std::size_t i = 0; i < figures.size(); ++i) {
    nlohmann::json row = megatron_row();
    row["id"] = "m" + std::to_string(i);
    row.erase("derived_step_seconds");
    row["measured"] = {{"metric", figures[i].first}, {"value", figures[i].second}};
    rows.push_back(row);
  }
  for (const char* unknown : {"it/s", "tflops_per_gpu"}) {
    nlohmann::json row = megatron_row();
    row["id"] = unknown;
    row.erase("derived_step_seconds");
    row["measured"] = {{"metric", unknown}, {"value", 2.0}};
    rows.push_back(row);
  }
  const RunsFile f = parse_runs(file_of(rows), "runs.json");
  for (std::size_t i = 0; i < figures.size(); ++i) {
    EXPECT_EQ(f.runs[i].skip_reason, "") << figures[i].first;
    EXPECT_DOUBLE_EQ(f.runs[i].measured_step_s, 0.5) << figures[i].first;
  }
  EXPECT_EQ(f.runs[figures.size()].skip_reason,
            "measured.it/s has no step-time conversion (give derived_step_seconds)");
  EXPECT_EQ(f.runs[figures.size() + 1].skip_reason,
            "measured.tflops_per_gpu has no step-time conversion (give derived_step_seconds)");
}

// What a row leaves out that the rest of it says: the preset from the GPU (or the table's name
// for the board), the GPU count from the parallel degrees, a count written as a string.
TEST(RecordedRuns, ReadsARowThatLeavesOutThePresetOrTheGpuCount) {
  nlohmann::json by_gpu = megatron_row("gpu");
  by_gpu["hardware"] = {{"gpu", "A100 SXM4 80GB"}, {"gpus_per_node", 8}};
  nlohmann::json pcie = megatron_row("pcie");
  pcie["hardware"] = {{"gpu", "H100 PCIe"}};
  nlohmann::json board = megatron_row("board");
  board["hardware"]["parasim_preset"] = "HGX H100 (8 per node)";
  nlohmann::json words = megatron_row("words");
  words["hardware"]["parasim_preset"] = "DGX A100";
  nlohmann::json no_gpus = megatron_row("nogpus");
  no_gpus.erase("gpus");
  no_gpus["config"]["tp"] = "4";
  const RunsFile f = parse_runs(file_of({by_gpu, pcie, board, words, no_gpus}), "runs.json");
  EXPECT_EQ(f.runs[0].skip_reason, "");
  EXPECT_EQ(f.runs[0].preset, "dgx-a100");
  EXPECT_EQ(f.runs[0].caveats[0],
            "hardware.parasim_preset not given: dgx-a100, the preset of hardware.gpu \"A100 SXM4 80GB\"");
  EXPECT_EQ(f.runs[1].skip_reason,
            "hardware.parasim_preset not given, and hardware.gpu \"H100 PCIe\" is the GPU of "
            "no preset (`parasim clusters` lists them)");
  EXPECT_EQ(f.runs[2].preset, "dgx-h100");
  EXPECT_EQ(f.runs[2].caveats[0], "hardware.parasim_preset \"HGX H100 (8 per node)\" read as dgx-h100");
  EXPECT_EQ(f.runs[3].preset, "dgx-a100");
  EXPECT_EQ(f.runs[4].skip_reason, "");
  EXPECT_EQ(f.runs[4].gpus, 16);
  EXPECT_EQ(f.runs[4].strategy.tp, 4);
  EXPECT_NE(std::find(f.runs[4].caveats.begin(), f.runs[4].caveats.end(), "gpus not given: dp x tp x pp x cp = 16"),
            f.runs[4].caveats.end());
}

TEST(RecordedRuns, ReadsTheAttentionKernelByTheWordsTablesUse) {
  // The words, the kernels read, and the caveat that says so where the words leave room ("").
  const std::string fused = "\" read as fused (flash) attention";
  const std::string fa2 = "\" read as FlashAttention-2-generation kernels (flash2: no Hopper TMA/wgmma)";
  const std::string triton =
      "\" read as MosaicML's Triton FlashAttention (triton: FlashAttention-2's rates on the whole score matrix, as "
      "MosaicML's tables time it)";
  const std::vector<std::tuple<std::string, profiler::AttentionKernel, std::string>> words{
      {"FlashAttention-2", profiler::AttentionKernel::Flash2, fa2},
      {"flash (attn_impl triton)", profiler::AttentionKernel::Triton, triton},
      {"flash-attn 2.3.3", profiler::AttentionKernel::Flash2, fa2},
      {"FlashAttention-3", profiler::AttentionKernel::Flash, ""},
      {"PyTorch SDPA", profiler::AttentionKernel::Flash, fused},
      {"cuDNN fused attention (Transformer Engine)", profiler::AttentionKernel::Flash, ""},
      {"xFormers memory-efficient", profiler::AttentionKernel::Flash2, fa2},
      {"eager (HF)", profiler::AttentionKernel::Unfused, ""},
      {"unfused softmax", profiler::AttentionKernel::Unfused, ""}};
  std::vector<nlohmann::json> rows;
  for (std::size_t i = 0; i < words.size(); ++i) {
    nlohmann::json row = megatron_row();
    row["id"] = "a" + std::to_string(i);
    row["config"]["attention"] = std::get<0>(words[i]);
    rows.push_back(row);
  }
  const RunsFile f = parse_runs(file_of(rows), "runs.json");
  for (std::size_t i = 0; i < words.size(); ++i) {
    const auto& [text, kernel, said] = words[i];
    EXPECT_TRUE(f.runs[i].attention_stated) << text;
    EXPECT_EQ(f.runs[i].attention, kernel) << text;
    for (const std::string& tail : {fused, fa2, triton}) {
      const std::string caveat = "config.attention \"" + text + tail;
      EXPECT_EQ(std::find(f.runs[i].caveats.begin(), f.runs[i].caveats.end(), caveat) != f.runs[i].caveats.end(),
                tail == said)
          << text;
    }
  }
}

// A row naming a Llama-family model gets that family's blocks where it does not state them:
// Llama 2 7B's shape with only "Llama 2" for an arch builds its published 6,738,415,616 parameters.
TEST(RecordedRuns, AnArchNamingTheLlamaFamilyGetsItsLayout) {
  nlohmann::json row = megatron_row();
  row["model"] = {{"layers", 32}, {"hidden", 4096},  {"heads", 32},      {"vocab", 32000},
                  {"ffn", 11008}, {"seq_len", 4096}, {"arch", "Llama 2"}};
  nlohmann::json stated = row;
  stated["id"] = "stated";
  stated["model"]["arch"] = "Llama 2 with LayerNorm and tied embeddings";
  const RunsFile f = parse_runs(file_of({row, stated}), "runs.json");
  const models::TransformerConfig& t = f.runs[0].transformer;
  EXPECT_EQ(t.mlp, models::MlpKind::Swiglu);
  EXPECT_EQ(t.norm, models::NormKind::RmsNorm);
  EXPECT_EQ(t.positions, models::PositionKind::Rotary);
  EXPECT_FALSE(t.tied_embeddings);
  EXPECT_FALSE(t.linear_bias);
  EXPECT_EQ(models::build_transformer(t, {.batch = 1}).total_params(), 6'738'415'616);
  EXPECT_NE(std::find(f.runs[0].caveats.begin(), f.runs[0].caveats.end(),
                      "model.arch \"Llama 2\" names the Llama family's layout: SwiGLU, RMSNorm, rotary positions, "
                      "untied embeddings (what it does not state otherwise)"),
            f.runs[0].caveats.end());
  // What the row states wins: LayerNorm and a tied head stay.
  EXPECT_EQ(f.runs[1].transformer.norm, models::NormKind::LayerNorm);
  EXPECT_TRUE(f.runs[1].transformer.tied_embeddings);
  EXPECT_EQ(f.runs[1].transformer.mlp, models::MlpKind::Swiglu);
}

// Counts in words and virtual stages under Megatron-LM's name; a model the row's figures cannot
// build is that row's skip, not the file's error.
TEST(RecordedRuns, ReadsCountsInWordsAndVirtualStagesByOtherNames) {
  nlohmann::json words = megatron_row("words");
  words["config"].erase("micro_batches_per_step");
  words["config"]["global_batch"] = "64 sequences (8K tokens)";
  words["config"]["pp"] = "2 stages";
  words["config"]["tp"] = "4-way";
  nlohmann::json vpp = megatron_row("vpp");
  vpp["config"].erase("interleave");
  vpp["config"]["virtual_pipeline_stages"] = 2;
  nlohmann::json too_long = megatron_row("long");
  too_long["model"] = {{"zoo_name", "gpt2"}, {"seq_len", 4096}};
  const RunsFile f = parse_runs(file_of({words, vpp, too_long}), "runs.json");
  EXPECT_EQ(f.runs[0].skip_reason, "");
  EXPECT_EQ(f.runs[0].global_batch, 64);
  EXPECT_EQ(f.runs[0].strategy.mp, 2);
  EXPECT_EQ(f.runs[0].strategy.tp, 4);
  EXPECT_EQ(f.runs[0].caveats[0], "global batch \"64 sequences (8K tokens)\" read as 64 samples");
  EXPECT_EQ(f.runs[1].strategy.interleave, 2);
  EXPECT_EQ(f.runs[1].strategy.schedule, strategies::Schedule::Interleaved);
  EXPECT_EQ(f.runs[2].skip_reason, "");
  const RunOutcome out = evaluate_run(f.runs[2], {});
  EXPECT_EQ(out.note,
            "skipped: the model cannot be built as the row states it: transformer gpt2: expected seq_len at "
            "most the 1024 learned positions, found 4096");
  EXPECT_FALSE(out.scored);
}

TEST(RecordedRuns, HardwareInterNodeGivesThePresetsNodesTheirNics) {
  auto nics = [](const std::string& preset, const std::string& inter_node) {
    nlohmann::json row = megatron_row();
    row["hardware"]["parasim_preset"] = preset;
    row["hardware"]["inter_node"] = inter_node;
    return parse_runs(file_of({row}), "runs.json").runs[0];
  };
  const RecordedRun opa = nics("dgx-a100 (note)", "4 Omni-Path links per node");
  EXPECT_EQ(opa.nic_options, "ib=edr,nics=4");
  ASSERT_EQ(opa.caveats.size(), 1u);
  EXPECT_EQ(opa.caveats[0],
            "hardware.inter_node \"4 Omni-Path links per node\": the preset's nodes get 4 NICs of 100 Gb/s "
            "(dgx-a100:ib=edr,nics=4; a link of another kind at the InfiniBand rate it matches)");
  EXPECT_EQ(nics("dgx-a100", "8x 400 Gb/s IB").nic_options, "ib=ndr,nics=8");
  EXPECT_EQ(nics("dgx-a100", "2 HDR HCAs per node").nic_options, "nics=2");
  EXPECT_EQ(nics("dgx-a100", "4x 100Gb/s EDR").nic_options, "ib=edr,nics=4");  // a count and its unit together
  EXPECT_EQ(nics("dgx-h100", "4 x HDR").nic_options, "ib=hdr,nics=4");
  // What the preset has already, or says nothing countable, leaves it as it is.
  EXPECT_EQ(nics("dgx-a100", "1600 Gb/s RoCE per node").nic_options, "");
  EXPECT_EQ(nics("dgx-h100", "RoCE, 400 Gb/s per GPU, 3-layer Clos").nic_options, "");
  EXPECT_EQ(nics("dgx-h100", "8x 400 Gb/s IB").nic_options, "");
  EXPECT_EQ(nics("dgx-a100", "InfiniBand (Selene; NIC count not stated in this source)").nic_options, "");
  EXPECT_EQ(nics("dgx-a100", "3 links of 100 Gb/s").nic_options, "");    // 3 does not divide a node's 8 GPUs
  EXPECT_EQ(nics("dgx1-v100", "2 EDR links per node").nic_options, "");  // not an NVSwitch node
  EXPECT_EQ(nics("dgx-a100", "1600 Gb/s per node over 0 NICs").nic_options, "");  // nothing to divide by
  // The row runs on the preset with those NICs: a quarter of the bandwidth off each node.
  const RunOutcome slow = evaluate_run(opa, {});
  ASSERT_TRUE(slow.scored) << slow.note;
  EXPECT_GT(slow.projected_step_s, evaluate_run(nics("dgx-a100", "not stated"), {}).projected_step_s);
}

TEST(RecordedRuns, SaysWhenTheRunsNodesAreNotThePresetsSize) {
  nlohmann::json four = megatron_row();
  four["hardware"]["gpus_per_node"] = 4;  // 16 GPUs on 4-GPU nodes, projected on dgx-a100's 8-GPU nodes
  const RunOutcome out = evaluate_run(parse_runs(file_of({four}), "runs.json").runs[0], {});
  EXPECT_TRUE(out.scored);
  EXPECT_NE(std::find(out.run.caveats.begin(), out.run.caveats.end(),
                      "hardware.gpus_per_node 4: dgx-a100 nodes hold 8 GPUs, and the run's GPUs fill them in order "
                      "(its intra- and inter-node groups are not the measured run's)"),
            out.run.caveats.end());
  const RunOutcome eight = evaluate_run(parse_runs(file_of({megatron_row()}), "runs.json").runs[0], {});
  EXPECT_TRUE(std::none_of(eight.run.caveats.begin(), eight.run.caveats.end(),
                           [](const std::string& c) { return c.starts_with("hardware.gpus_per_node"); }));
}

// hardware.gpu naming another memory variant of the preset's GPU runs the preset with that GPU:
// an A100 40GB moves memory-bound kernels at 1,555 GB/s, not the 80GB card's 2,039.
TEST(RecordedRuns, HardwareGpuNamesTheVariantOfThePresetsGpu) {
  auto kind_of = [](const std::string& gpu, const std::string& preset) {
    nlohmann::json row = megatron_row();
    row["hardware"]["gpu"] = gpu;
    row["hardware"]["parasim_preset"] = preset;
    return parse_runs(file_of({row}), "runs.json").runs[0].device_kind;
  };
  EXPECT_EQ(kind_of("A100-SXM4-40GB", "dgx-a100"), "A100-SXM4-40GB");
  EXPECT_EQ(kind_of("NVIDIA A100 40 GB", "dgx-a100"), "A100-SXM4-40GB");
  EXPECT_EQ(kind_of("V100-SXM2-16GB", "dgx1-v100"), "V100-SXM2-16GB");
  EXPECT_EQ(kind_of("A100-SXM4-80GB", "dgx-a100"), "");  // the preset's own
  EXPECT_EQ(kind_of("H100 80GB HBM3, 700W", "dgx-h100"), "");
  EXPECT_EQ(kind_of("H200-SXM-141GB", "hgx-h200"), "");
  EXPECT_EQ(kind_of("A100", "dgx-a100"), "");
  // Without a variant in hardware.gpu, the system's or the preset note's words decide; a field that
  // names the preset's own kind ends the search.
  auto kind_with = [](const nlohmann::json& hardware) {
    nlohmann::json row = megatron_row();
    row["hardware"] = hardware;
    return parse_runs(file_of({row}), "runs.json").runs[0];
  };
  const RecordedRun system =
      kind_with({{"gpu", "A100"}, {"system", "NVIDIA DGX A100 (8x A100 40GB)"}, {"parasim_preset", "dgx-a100"}});
  EXPECT_EQ(system.device_kind, "A100-SXM4-40GB");
  EXPECT_NE(std::find(system.caveats.begin(), system.caveats.end(),
                      "hardware.system \"NVIDIA DGX A100 (8x A100 40GB)\": the preset's A100-SXM4-80GB devices run as "
                      "A100-SXM4-40GB (its memory and HBM bandwidth)"),
            system.caveats.end());
  EXPECT_EQ(kind_with({{"parasim_preset", "dgx1-v100 (16GB variant)"}}).device_kind, "V100-SXM2-16GB");
  EXPECT_EQ(
      kind_with({{"gpu", "A100-SXM4-80GB"}, {"system", "DGX A100 40GB"}, {"parasim_preset", "dgx-a100"}}).device_kind,
      "");
  EXPECT_EQ(kind_with({{"system", "DGX A100 320GB"}, {"parasim_preset", "dgx-a100"}}).device_kind, "");

  nlohmann::json forty = megatron_row();
  forty["hardware"]["gpu"] = "A100 40GB";
  const RecordedRun run = parse_runs(file_of({forty}), "runs.json").runs[0];
  EXPECT_NE(std::find(run.caveats.begin(), run.caveats.end(),
                      "hardware.gpu \"A100 40GB\": the preset's A100-SXM4-80GB devices run as A100-SXM4-40GB (its "
                      "memory and HBM bandwidth)"),
            run.caveats.end());
  const RunOutcome slower = evaluate_run(run, {});
  const RunOutcome eighty = evaluate_run(parse_runs(file_of({megatron_row()}), "runs.json").runs[0], {});
  EXPECT_EQ(slower.device_kind, "A100-SXM4-40GB");
  EXPECT_EQ(eighty.device_kind, "A100-SXM4-80GB");
  EXPECT_GT(slower.projected_step_s, eighty.projected_step_s);
}

// A transformer's shape under Megatron-LM's argument names or a Hugging Face config's builds the
// same model as under this schema's; missing under every name, the error names this schema's.
TEST(RecordedRuns, ReadsAShapeUnderMegatronOrHuggingFaceNames) {
  nlohmann::json megatron = megatron_row("megatron");
  megatron["model"] = {
      {"num_layers", 2},           {"hidden_size", 256},      {"num_attention_heads", 4}, {"num_query_groups", 2},
      {"padded_vocab_size", 1000}, {"ffn_hidden_size", 1024}, {"seq_length", 128},        {"arch", "GPT"}};
  nlohmann::json hf = megatron_row("hf");
  hf["model"] = {{"n_layer", 2},       {"n_embd", 256},   {"n_head", 4},    {"num_key_value_heads", 2},
                 {"vocab_size", 1000}, {"n_inner", 1024}, {"seq_len", 128}, {"arch", "GPT"}};
  nlohmann::json ours = megatron_row("ours");
  ours["model"]["kv_heads"] = 2;
  const RunsFile f = parse_runs(file_of({megatron, hf, ours}), "runs.json");
  for (const RecordedRun& r : f.runs) {
    EXPECT_EQ(r.skip_reason, "") << r.id;
    EXPECT_EQ(r.transformer.layers, 2) << r.id;
    EXPECT_EQ(r.transformer.hidden, 256) << r.id;
    EXPECT_EQ(r.transformer.heads, 4) << r.id;
    EXPECT_EQ(r.transformer.kv_heads, 2) << r.id;
    EXPECT_EQ(r.transformer.vocab, 1000) << r.id;
    EXPECT_EQ(r.transformer.ffn, 1024) << r.id;
    EXPECT_EQ(r.transformer.seq_len, 128) << r.id;
  }
  nlohmann::json none = megatron_row();
  none["model"].erase("layers");
  EXPECT_EQ(error_of(file_of({none})), "runs.json: $.rows[0].model: missing required field \"layers\"");
}

TEST(RecordedRuns, SkipsWhatItCannotExpressAndSaysWhy) {
  nlohmann::json unknown_micro = megatron_row("a");
  unknown_micro["config"]["micro_batch"] = nullptr;
  unknown_micro["config"]["global_batch"] = 60;  // 60 / (dp 2 x 8 micro-batches): no whole size
  nlohmann::json mismatch = megatron_row("b");
  mismatch["gpus"] = 32;
  nlohmann::json zero3 = megatron_row("c");
  zero3["config"]["zero"] = "custom sharding";
  nlohmann::json tokens = megatron_row("d");
  tokens.erase("derived_step_seconds");
  tokens["measured"] = {{"metric", "tokens_per_s"}, {"value", 1000}};
  tokens["config"]["seq_len"] = "variable, bucketed";  // tokens per step depend on the data
  const RunsFile f = parse_runs(file_of({unknown_micro, mismatch, zero3, tokens}), "runs.json");
  EXPECT_EQ(f.runs[0].skip_reason, "config.micro_batch is unknown");
  EXPECT_EQ(f.runs[1].skip_reason, "dp x tp x pp = 16 is not gpus = 32");
  EXPECT_EQ(f.runs[2].skip_reason, "config.zero \"custom sharding\": expected a ZeRO stage (0-3, ZeRO-N, FSDP)");
  EXPECT_EQ(f.runs[3].skip_reason,
            "measured.tokens_per_s has no step-time conversion (give derived_step_seconds)");
  const RunsReport report = evaluate_runs(f, {});
  EXPECT_EQ(report.scored, 0);
  EXPECT_EQ(report.outcomes[0].note, "skipped: config.micro_batch is unknown");
}

// Rows from tables parasim did not write: what they leave out, and the words they use for it.
TEST(RecordedRuns, ReadsTheWaysOtherTablesStateARun) {
  // No tp, pp or dp: a data-parallel vendor table; dp is what the GPUs leave (16 / (1 x 1)).
  nlohmann::json dp_only = megatron_row("dp-only");
  for (const char* key : {"dp", "tp", "pp", "micro_batches_per_step", "schedule", "interleave"})
    dp_only["config"].erase(key);
  dp_only["config"]["micro_batch"] = 4;
  // A per-GPU token rate: 16 GPUs x 64 tokens/s = 1,024 tokens/s; 64 x 128 tokens a step = 8 s.
  dp_only.erase("derived_step_seconds");
  dp_only["measured"] = {{"metric", "tokens_per_s_per_gpu"}, {"value", 64}};
  // A pipeline without a named schedule runs 1F1B; "yes" and "bfloat16" are words, not booleans.
  nlohmann::json words = megatron_row("words");
  words["config"].erase("schedule");
  words["config"]["sequence_parallel"] = "yes (--sequence-parallel)";
  words["config"]["precision"] = "bfloat16 mixed";
  words["hardware"]["parasim_preset"] = "DGX-A100 (Selene)";
  nlohmann::json vpp = megatron_row("vpp");
  vpp["config"]["schedule"] = "virtual pipeline";
  vpp["config"]["interleave"] = 2;
  // What parasim lacks is listed, not fatal to the file.
  nlohmann::json no_preset = megatron_row("b200");
  no_preset["hardware"]["parasim_preset"] = "dgx-z9000";
  nlohmann::json no_zoo = megatron_row("no-zoo");
  no_zoo["model"] = {{"zoo_name", "llama2_7b"}};
  const RunsFile f = parse_runs(file_of({dp_only, words, vpp, no_preset, no_zoo}), "runs.json");
  const RecordedRun& d = f.runs[0];
  EXPECT_EQ(d.skip_reason, "");
  EXPECT_EQ(strategies::to_string(d.strategy), "dp=16,recompute=full,overlap=off");
  EXPECT_EQ(d.strategy.micro, 1);
  EXPECT_DOUBLE_EQ(d.measured_step_s, 8.0);
  EXPECT_EQ(d.measured_from, "global_batch x seq_len / (measured.value x gpus) (tokens_per_s_per_gpu)");
  EXPECT_EQ(d.caveats.at(0), "config.dp not stated: gpus / (tp x pp x cp) = 16");
  const RecordedRun& w = f.runs[1];
  EXPECT_EQ(w.preset, "dgx-a100");
  EXPECT_EQ(w.dtype, models::DType::BF16);
  EXPECT_EQ(strategies::to_string(w.strategy), "dp=2,mp=2,tp=4,schedule=1f1b,micro=8,recompute=full,sp=on,overlap=off");
  EXPECT_EQ(w.caveats.at(0), "config.schedule not stated: 1F1B (Megatron-LM's, NeMo's and DeepSpeed's default)");
  EXPECT_EQ(f.runs[2].strategy.schedule, strategies::Schedule::Interleaved);
  // No schedule but virtual stages: interleaved, and the caveat says so.
  nlohmann::json virtual_stages = megatron_row();
  virtual_stages["config"].erase("schedule");
  virtual_stages["config"]["interleave"] = 2;
  const RecordedRun v = parse_runs(file_of({virtual_stages}), "runs.json").runs[0];
  EXPECT_EQ(v.strategy.schedule, strategies::Schedule::Interleaved);
  EXPECT_EQ(v.caveats.at(0),
            "config.schedule not stated: interleaved 1F1B (Megatron-LM's, NeMo's and DeepSpeed's default)");
  EXPECT_EQ(f.runs[3].skip_reason.rfind("hardware.parasim_preset: unknown cluster preset \"dgx-z9000\"", 0), 0u)
      << f.runs[3].skip_reason;
  EXPECT_EQ(f.runs[4].skip_reason, "model.zoo_name \"llama2_7b\" is not a zoo model (`parasim models` lists them)");
}

TEST(RecordedRuns, ReadsZeroStagesContextParallelismAndTokenRates) {
  nlohmann::json fsdp = megatron_row("fsdp");
  fsdp["config"]["zero"] = "FSDP (FULL_SHARD)";
  fsdp["gpus"] = 8;
  fsdp["config"]["pp"] = 1;  // under a pipeline FSDP is ZeRO-1 (TunesAnUnstatedPipeline...)
  nlohmann::json stage2 = megatron_row("z2");
  stage2["config"]["zero"] = "ZeRO-2";
  nlohmann::json ring = megatron_row("cp");
  ring["gpus"] = 32;
  ring["config"]["cp"] = 2;
  nlohmann::json rate = megatron_row("tok");
  rate.erase("derived_step_seconds");
  rate["measured"] = {{"metric", "tokens_per_s"}, {"value", 16384}};  // 64 x 128 tokens per step
  const RunsFile f = parse_runs(file_of({fsdp, stage2, ring, rate}), "runs.json");
  EXPECT_EQ(f.runs[0].strategy.zero, 3);
  EXPECT_EQ(f.runs[1].strategy.zero, 2);
  EXPECT_EQ(f.runs[2].strategy.cp, 2);
  EXPECT_EQ(f.runs[2].skip_reason, "");
  EXPECT_DOUBLE_EQ(f.runs[3].measured_step_s, 0.5);
  EXPECT_EQ(f.runs[3].measured_from, "global_batch x seq_len / measured.value (tokens_per_s)");
  // Expert parallelism on a dense model: the lowering refuses it, the row is listed with why.
  nlohmann::json dense_ep = megatron_row();
  dense_ep["config"]["ep"] = 2;
  const RunOutcome refused = evaluate_run(parse_runs(file_of({dense_ep}), "runs.json").runs[0], {});
  EXPECT_FALSE(refused.scored);
  EXPECT_EQ(refused.note.rfind("not simulated: ", 0), 0u);
  EXPECT_NE(refused.note.find("has no mixture-of-experts layers"), std::string::npos) << refused.note;
  // ZeRO-2 with 8 micro-batches (DeepSpeed stage 2 with gradient accumulation) is simulated.
  const RunOutcome o = evaluate_run(f.runs[1], {});
  EXPECT_TRUE(o.scored) << o.note;
}

// What a row leaves open is settled as its engineers would have, and said: the largest micro-batch
// that fits (no pipeline), the cheapest recomputation that fits.
TEST(RecordedRuns, InfersTheLargestMicroBatchAndCheapestRecomputationThatFit) {
  nlohmann::json row = megatron_row();
  row["model"] = {{"zoo_name", nullptr}, {"layers", 4},    {"hidden", 8192}, {"heads", 64},
                  {"seq_len", 2048},     {"vocab", 50000}, {"ffn", 32768},   {"arch", "GPT"}};
  row["config"] = {{"dp", 4},
                   {"tp", 4},
                   {"pp", 1},
                   {"micro_batch", nullptr},
                   {"global_batch", 256},
                   {"recompute", "unknown"},
                   {"zero", 0},
                   {"attention", "unfused"},
                   {"precision", "bf16"}};
  row["derived_step_seconds"] = 10;  // 24% MFU: a step such a run could have taken
  const RunsFile f = parse_runs(file_of({row}), "runs.json");
  ASSERT_EQ(f.runs[0].skip_reason, "");
  EXPECT_TRUE(f.runs[0].micro_unknown);
  EXPECT_TRUE(f.runs[0].recompute_unknown);
  EXPECT_EQ(f.runs[0].strategy.micro, 1);  // 64 samples per replica in one micro-batch, to start
  const RunOutcome o = evaluate_run(f.runs[0], {});
  ASSERT_TRUE(o.scored) << o.note;
  EXPECT_EQ(o.note, "");  // feasible
  EXPECT_EQ(o.run.strategy.recompute, strategies::Recompute::None);
  EXPECT_GT(o.run.strategy.micro, 1);  // 64 samples of 2,048 tokens do not fit in 80 GB at once
  ASSERT_EQ(o.run.caveats.size(), 2u);
  EXPECT_EQ(o.run.caveats[0], "recomputation not stated: none, the cheapest that fits");
  EXPECT_EQ(o.run.caveats[1].rfind("micro-batch size not stated: ", 0), 0u) << o.run.caveats[1];
}

// A row that must recompute but does not say how much: Megatron-LM's block method reruns the first
// N transformer layers of each pipeline chunk, and the fewest that fit is the cheapest. 8 layers of
// h = 8192 on tp=8 x pp=2 (4 a stage): 128 samples of 2,048 tokens a micro-batch fit with one layer
// of each stage recomputed, not with none. Unstated sequence parallelism is turned on first where
// it alone makes a run fit (48 samples a micro-batch).
TEST(RecordedRuns, InfersTheFewestRecomputedLayersAndSequenceParallelismThatFit) {
  nlohmann::json row = megatron_row("tight");
  row["model"] = {{"zoo_name", nullptr}, {"layers", 8},    {"hidden", 8192}, {"heads", 64},
                  {"seq_len", 2048},     {"vocab", 50000}, {"ffn", 32768},   {"arch", "GPT"}};
  row["config"] = {{"dp", 1},
                   {"tp", 8},
                   {"pp", 2},
                   {"micro_batch", 128},
                   {"micro_batches_per_step", 8},
                   {"global_batch", 1024},
                   {"interleave", 1},
                   {"schedule", "1F1B"},
                   {"recompute", "unknown"},
                   {"sequence_parallel", true},
                   {"zero", 0},
                   {"precision", "bf16"},
                   {"attention", "flash"}};
  row["derived_step_seconds"] = 40;
  const RunOutcome partial = evaluate_run(parse_runs(file_of({row}), "runs.json").runs[0], {});
  ASSERT_TRUE(partial.scored) << partial.note;
  EXPECT_EQ(partial.note, "");  // it fits
  EXPECT_EQ(strategies::to_string(partial.run.strategy),
            "mp=2,tp=8,schedule=1f1b,micro=8,recompute=full,recompute_layers=1,sp=on");
  EXPECT_NE(std::find(partial.run.caveats.begin(), partial.run.caveats.end(),
                      "recomputation not stated: full on the first 1 transformer layer of each pipeline chunk "
                      "(recompute_layers; Megatron-LM's --recompute-method block), the rest kept, the cheapest "
                      "that fits"),
            partial.run.caveats.end());
  row["config"]["recompute"] = "full";
  const RunOutcome full = evaluate_run(parse_runs(file_of({row}), "runs.json").runs[0], {});
  ASSERT_TRUE(full.scored) << full.note;
  EXPECT_EQ(full.run.strategy.recompute_layers, 0);
  EXPECT_LT(partial.projected_step_s, full.projected_step_s);

  row["config"]["recompute"] = "unknown";
  row["config"]["micro_batch"] = 48;
  row["config"]["global_batch"] = 384;
  row["config"].erase("sequence_parallel");
  row["derived_step_seconds"] = 14;
  const RunOutcome sharded = evaluate_run(parse_runs(file_of({row}), "runs.json").runs[0], {});
  ASSERT_TRUE(sharded.scored) << sharded.note;
  EXPECT_EQ(sharded.note, "");
  EXPECT_EQ(strategies::to_string(sharded.run.strategy), "mp=2,tp=8,schedule=1f1b,micro=8,sp=on");
  EXPECT_NE(std::find(sharded.run.caveats.begin(), sharded.run.caveats.end(),
                      "sequence parallelism not stated: on, without which the run does not fit parasim's memory "
                      "model (it shards the norms' and residuals' activations over the TP ranks at no extra "
                      "communication)"),
            sharded.run.caveats.end());
}

// With a pipeline an unstated micro-batch size or number of virtual stages is what its engineers
// tuned: the fastest that fits of the sizes 1, 2, 4, 8 and of the divisors of a stage's layers.
TEST(RecordedRuns, TunesAnUnstatedPipelineMicroBatchAndVirtualStagesToTheFastest) {
  nlohmann::json row = megatron_row();
  row["model"]["layers"] = 8;  // 4 a stage: 2 or 4 virtual stages
  row["config"]["micro_batch"] = nullptr;
  row["config"]["micro_batches_per_step"] = nullptr;
  row["config"].erase("schedule");
  row["config"]["interleave"] = "custom interleaved schedule (not specified)";
  const RunsFile f = parse_runs(file_of({row}), "runs.json");
  ASSERT_EQ(f.runs[0].skip_reason, "");
  EXPECT_TRUE(f.runs[0].micro_unknown);
  EXPECT_TRUE(f.runs[0].interleave_unknown);
  EXPECT_EQ(f.runs[0].strategy.schedule, strategies::Schedule::Interleaved);
  for (const std::string& c : f.runs[0].caveats) EXPECT_EQ(c.find("config.schedule not stated"), std::string::npos);
  const RunOutcome o = evaluate_run(f.runs[0], {});
  ASSERT_TRUE(o.scored) << o.note;

  // Every candidate stated outright: the inferred run is the fastest of them.
  double fastest = 1e30, slowest = 0;
  int best_micro = 0, best_interleave = 0;
  std::map<std::pair<int, int>, double> stated_steps;  // (micro-batches, virtual stages) -> step
  for (int size : {1, 2, 4, 8})
    for (int v : {2, 4}) {
      nlohmann::json stated = megatron_row();
      stated["model"]["layers"] = 8;
      stated["config"]["micro_batch"] = size;
      stated["config"]["micro_batches_per_step"] = 32 / size;
      stated["config"]["schedule"] = "interleaved";
      stated["config"]["interleave"] = v;
      const RunOutcome so = evaluate_run(parse_runs(file_of({stated}), "runs.json").runs[0], {});
      ASSERT_TRUE(so.scored) << so.note;
      if (so.projected_step_s < fastest) fastest = so.projected_step_s, best_micro = 32 / size, best_interleave = v;
      slowest = std::max(slowest, so.projected_step_s);
      stated_steps[{32 / size, v}] = so.projected_step_s;
    }
  EXPECT_EQ(o.projected_step_s, fastest);
  EXPECT_EQ(o.run.strategy.micro, best_micro);
  EXPECT_EQ(o.run.strategy.interleave, best_interleave);
  const std::string size = std::to_string(32 / best_micro);
  EXPECT_NE(std::find(o.run.caveats.begin(), o.run.caveats.end(),
                      "micro-batch size not stated: " + size + " (" + std::to_string(best_micro) +
                          " micro-batches per step), the fastest that fits of 1, 2, 4 and 8 samples per micro-batch"),
            o.run.caveats.end());
  EXPECT_NE(std::find(o.run.caveats.begin(), o.run.caveats.end(),
                      "virtual stages not stated: interleave=" + std::to_string(best_interleave) +
                          ", the fastest that fits of 2 and 4"),
            o.run.caveats.end());
  // Each open choice is reported with its step, fastest first, as the stated rows project them.
  ASSERT_EQ(o.open_counts.size(), stated_steps.size());
  for (std::size_t i = 0; i < o.open_counts.size(); ++i) {
    const OpenCount& c = o.open_counts[i];
    EXPECT_EQ(c.projected_step_s, (stated_steps.at({c.micro, c.interleave})));
    if (i > 0) {
      EXPECT_LE(o.open_counts[i - 1].projected_step_s, c.projected_step_s);
    }
  }
  EXPECT_EQ(o.open_counts.front().projected_step_s, fastest);
  EXPECT_EQ(o.open_counts.back().projected_step_s, slowest);
  char tail[96];
  std::snprintf(tail, sizeof tail, ": the slowest is %+.1f%% on the chosen, an error of %+.1f%%",
                100.0 * (slowest - fastest) / fastest, 100.0 * (slowest - 0.5) / 0.5);
  EXPECT_NE(std::find_if(o.run.caveats.begin(), o.run.caveats.end(),
                         [&](const std::string& c) {
                           return c.starts_with("the counts the row leaves open, each projected: ") &&
                                  c.ends_with(tail);
                         }),
            o.run.caveats.end());
  // A row that states its counts has none open.
  EXPECT_TRUE(evaluate_run(parse_runs(file_of({megatron_row()}), "runs.json").runs[0], {}).open_counts.empty());

  // FSDP under a pipeline is ZeRO-1's traffic and memory (without one, ZeRO-3: ReadsZeroStages...).
  nlohmann::json fsdp = megatron_row();
  fsdp["config"]["zero"] = "FSDP (FULL_SHARD)";
  const RunsFile ff = parse_runs(file_of({fsdp}), "runs.json");
  EXPECT_EQ(ff.runs[0].strategy.zero, 1);
  EXPECT_NE(std::find(ff.runs[0].caveats.begin(), ff.runs[0].caveats.end(),
                      "config.zero \"FSDP (FULL_SHARD)\" with a pipeline read as ZeRO-1: PyTorch's pipeline schedules "
                      "keep an FSDP stage's parameters gathered and its gradients unreduced until the step's last "
                      "backward"),
            ff.runs[0].caveats.end());

  // A micro-batch count and a global batch give the size without any inference.
  nlohmann::json counted = megatron_row();
  counted["config"]["micro_batch"] = nullptr;
  const RunsFile fc = parse_runs(file_of({counted}), "runs.json");
  EXPECT_FALSE(fc.runs[0].micro_unknown);
  EXPECT_EQ(fc.runs[0].strategy.micro, 8);
}

TEST(RecordedRuns, PricesBinnedVariableLengthSamplesAtTheirPaddedLength) {
  // Mean 50 of at most 128 tokens, bins of 16: padded to the bin's top, 50 + 8 = 58 tokens.
  nlohmann::json binned = megatron_row();
  binned["config"]["padding"] = {{"bin_size", 16}, {"mean_tokens", 50}};
  nlohmann::json capped = megatron_row("capped");
  capped["config"]["padding"] = {{"bin_size", 64}, {"mean_tokens", 120}};  // 152 > 128: the full length
  const RunsFile f = parse_runs(file_of({binned, capped}), "runs.json");
  EXPECT_EQ(f.runs[0].seq_len, 128);
  EXPECT_EQ(f.runs[0].padded_seq_len, 58);
  ASSERT_EQ(f.runs[0].caveats.size(), 1u);
  EXPECT_EQ(f.runs[0].caveats[0],
            "samples of varying length (mean 50 of at most 128 tokens) binned by 16 tokens and padded per "
            "micro-batch: priced at 58 tokens per sample (mean + half a bin; attention's quadratic term priced at "
            "the mean)");
  EXPECT_EQ(f.runs[1].padded_seq_len, 128);
  // The projection is the one of the same model (128 learned positions) trained on 58 tokens.
  RecordedRun at58 = f.runs[0];
  at58.padded_seq_len = 0;
  at58.seq_len = 58;
  const double binned_s = evaluate_run(f.runs[0], {}).projected_step_s;
  EXPECT_DOUBLE_EQ(binned_s, evaluate_run(at58, {}).projected_step_s);
  RecordedRun full = f.runs[0];
  full.padded_seq_len = 0;
  EXPECT_LT(binned_s, evaluate_run(full, {}).projected_step_s);
  // A token rate of padded data has no step conversion: the tokens per step depend on the data.
  nlohmann::json tokens = binned;
  tokens.erase("derived_step_seconds");
  tokens["measured"] = {{"metric", "tokens_per_s"}, {"value", 1000}};
  EXPECT_EQ(parse_runs(file_of({tokens}), "runs.json").runs[0].skip_reason,
            "measured.tokens_per_s has no step-time conversion (give derived_step_seconds)");
  nlohmann::json bad = megatron_row();
  bad["config"]["padding"] = {{"bin_size", 16}, {"mean_tokens", 500}};
  EXPECT_EQ(error_of(file_of({bad})),
            "runs.json: $.rows[0].config.padding.mean_tokens: expected a number in [1, 128], found number 500");
  bad["config"]["padding"] = 64;
  EXPECT_EQ(error_of(file_of({bad})),
            "runs.json: $.rows[0].config.padding: expected an object {\"bin_size\": tokens, \"mean_tokens\": tokens}, "
            "found number 64");
}

/// One tiny_cnn run on one GPU of `preset`, AMP, batch 32, with `id`.
nlohmann::json tiny_cnn_row(const std::string& id, const std::string& preset) {
  nlohmann::json row = nlohmann::json::parse(R"json({
    "id": "", "source": "test", "model": {"zoo_name": "tiny_cnn"},
    "hardware": {"gpus_per_node": 8, "parasim_preset": ""}, "gpus": 1,
    "config": {"dp": 1, "tp": 1, "pp": 1, "micro_batch": 32, "global_batch": 32, "precision": "amp"},
    "measured": {"metric": "images_per_s", "value": 1000}})json");
  row["id"] = id;
  row["hardware"]["parasim_preset"] = preset;
  return row;
}

TEST(RecordedRuns, ReadsTheConvolutionMemoryFormat) {
  auto cnn_row = [](const std::string& id, const nlohmann::json& format) {
    nlohmann::json row = tiny_cnn_row(id, "dgx-a100");
    if (!format.is_null()) row["config"]["memory_format"] = format;
    return row;
  };
  const RunsFile f =
      parse_runs(file_of({cnn_row("default", nullptr), cnn_row("nhwc", "nhwc"), cnn_row("cl", "torch.channels_last")}),
                 "runs.json");
  EXPECT_EQ(f.runs[0].conv_layout, profiler::ConvLayout::Nchw);
  EXPECT_EQ(f.runs[1].conv_layout, profiler::ConvLayout::Nhwc);
  EXPECT_EQ(f.runs[2].conv_layout, profiler::ConvLayout::Nhwc);
  // NCHW pays the transposes around every tensor-core convolution; NHWC does not.
  EXPECT_GT(evaluate_run(f.runs[0], {}).projected_step_s, evaluate_run(f.runs[1], {}).projected_step_s);
  EXPECT_EQ(error_of(file_of({cnn_row("bad", "nwhc")})),
            "runs.json: $.rows[0].config.memory_format: expected nchw or nhwc (channels_last), found string \"nwhc\"");
}

// config.optimizer: the algorithm ("SGD momentum 0.875" is momentum SGD, not plain SGD) and, where
// the row says "foreach", torch.optim's pass-per-step implementation (otherwise fused).
TEST(RecordedRuns, ReadsTheOptimizerAndHowItsKernelsRun) {
  auto row = [](const std::string& id, const std::string& optimizer) {
    nlohmann::json r = tiny_cnn_row(id, "hgx-h200");
    if (!optimizer.empty()) r["config"]["optimizer"] = optimizer;
    return r;
  };
  const RunsFile f = parse_runs(file_of({row("none", ""), row("momentum", "SGD momentum 0.875"), row("sgd", "SGD"),
                                         row("foreach", "AdamW (torch.optim, foreach)"),
                                         row("foreach-sgd", "momentum SGD (torch.optim, foreach)")}),
                                "runs.json");
  EXPECT_EQ(f.runs[0].optimizer, profiler::Optimizer::Adam);
  EXPECT_EQ(f.runs[1].optimizer, profiler::Optimizer::Momentum);
  EXPECT_EQ(f.runs[2].optimizer, profiler::Optimizer::Sgd);
  EXPECT_EQ(f.runs[3].optimizer, profiler::Optimizer::Adam);
  EXPECT_EQ(f.runs[4].optimizer, profiler::Optimizer::Momentum);
  for (int i : {0, 1, 2}) EXPECT_EQ(f.runs[i].optimizer_kernels, profiler::OptimizerKernels::Fused) << i;
  EXPECT_EQ(f.runs[3].optimizer_kernels, profiler::OptimizerKernels::Foreach);
  EXPECT_EQ(f.runs[4].optimizer_kernels, profiler::OptimizerKernels::Foreach);
  // A pass per step is slower than one fused kernel: the same run, projected both ways.
  const RunOutcome fused = evaluate_run(f.runs[0], {}), foreach = evaluate_run(f.runs[3], {});
  EXPECT_GT(foreach.projected_step_s, fused.projected_step_s);
  const nlohmann::json j = runs_report_to_json(evaluate_runs(f, {}));
  EXPECT_EQ(j["rows"][3]["optimizer"], "adam");
  EXPECT_EQ(j["rows"][3]["optimizer_kernels"], "foreach");
  EXPECT_EQ(j["rows"][1]["optimizer"], "momentum");
}

// config.precision: eager torch.autocast when it says so or names PyTorch's, Composer's or Hugging
// Face's amp / amp_bf16 / amp_fp16; Megatron-LM's "fp16 mixed" and plain "bf16" are native.
TEST(RecordedRuns, ReadsAutocastFromThePrecision) {
  std::vector<nlohmann::json> rows;
  for (const char* p : {"amp_bf16 (FSDP mixed_precision DEFAULT)", "amp (torch.autocast fp16, GradScaler)", "amp",
                        "bf16", "fp16 mixed", "bf16 (torch.autocast)", "fp32"}) {
    nlohmann::json r = tiny_cnn_row("r" + std::to_string(rows.size()), "hgx-h200");
    r["config"]["precision"] = p;
    rows.push_back(r);
  }
  const RunsFile f = parse_runs(file_of(rows), "runs.json");
  const std::vector<profiler::MixedPrecision> expected{
      profiler::MixedPrecision::Autocast, profiler::MixedPrecision::Autocast, profiler::MixedPrecision::Autocast,
      profiler::MixedPrecision::Native,   profiler::MixedPrecision::Native,   profiler::MixedPrecision::Autocast,
      profiler::MixedPrecision::Native};
  for (std::size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(f.runs[i].mixed_precision, expected[i]) << i;
  // The casts cost: the same run projected slower under autocast.
  EXPECT_GT(evaluate_run(f.runs[5], {}).projected_step_s, evaluate_run(f.runs[3], {}).projected_step_s);
  EXPECT_EQ(runs_report_to_json(evaluate_runs(f, {}))["rows"][0]["mixed_precision"], "autocast");
}

TEST(RecordedRuns, SeveralFilesJoinInOrderWithUniqueIds) {
  const std::filesystem::path dir = std::filesystem::path(testing::TempDir()) / "parasim_runs_files";
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& name, const std::vector<std::string>& ids) {
    std::vector<nlohmann::json> rows;
    for (const std::string& id : ids) {
      nlohmann::json row = megatron_row();
      row["id"] = id;
      rows.push_back(row);
    }
    const std::string path = (dir / name).string();
    std::ofstream(path) << file_of(rows).dump();
    return path;
  };
  const std::string a = write("a.json", {"r1", "r2"}), b = write("b.json", {"r3"}), c = write("c.json", {"r2"});
  const RunsFile both = load_runs_files(a + "," + b);
  EXPECT_EQ(both.path, a + "," + b);
  ASSERT_EQ(both.runs.size(), 3u);
  EXPECT_EQ(both.runs[0].id, "r1");
  EXPECT_EQ(both.runs[2].id, "r3");
  EXPECT_EQ(load_runs_files(a).runs.size(), 2u);
  auto error = [](const std::string& paths) {
    try {
      (void)load_runs_files(paths);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error(a + "," + c), c + ": row id \"r2\" is also a row of an earlier file of \"" + a + "," + c +
                                    "\"; ids must be unique across the files");
  EXPECT_EQ(error(a + ","), "runs files \"" + a + ",\": expected file names separated by commas");
}

TEST(RecordedRuns, ParasimPresetMayNameAClusterFileBesideTheRunsFile) {
  // The preset's own two nodes saved as a file: the row projects as on the preset. A relative path
  // is the runs file's neighbour, wherever the command runs.
  const std::filesystem::path dir = std::filesystem::path(testing::TempDir()) / "runs_cluster_file";
  std::filesystem::create_directories(dir);
  hardware::save_cluster_file(hardware::make_cluster_preset("dgx-a100", 2), dir / "two_dgx.json");
  nlohmann::json row = megatron_row();
  row["hardware"]["parasim_preset"] = "two_dgx.json (our cluster)";
  const RunsFile f = parse_runs(file_of({row, megatron_row("on-preset")}), (dir / "runs.json").string());
  ASSERT_EQ(f.runs.size(), 2u);
  EXPECT_TRUE(f.runs[0].cluster_file);
  EXPECT_EQ(f.runs[0].preset, (dir / "two_dgx.json").string());
  EXPECT_EQ(f.runs[0].skip_reason, "");
  EXPECT_DOUBLE_EQ(evaluate_run(f.runs[0], {}).projected_step_s, evaluate_run(f.runs[1], {}).projected_step_s);
  // A file with fewer GPUs than the row is bad input, named.
  hardware::save_cluster_file(hardware::make_cluster_preset("dgx-a100", 1), dir / "one_dgx.json");
  row["hardware"]["parasim_preset"] = "one_dgx.json";
  try {
    (void)parse_runs(file_of({row}), (dir / "runs.json").string());
    ADD_FAILURE() << "a cluster smaller than the row was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), (dir / "runs.json").string() +
                                         ": $.rows[0].hardware.parasim_preset: expected a cluster of at least the "
                                         "row's 16 GPUs (" +
                                         (dir / "one_dgx.json").string() + " has 8), found string \"one_dgx.json\"");
  }
}

TEST(RecordedRuns, RejectsMalformedFilesNamingTheField) {
  nlohmann::json bad_gpus = megatron_row();
  bad_gpus["gpus"] = -4;
  EXPECT_EQ(error_of(file_of({bad_gpus})),
            "runs.json: $.rows[0].gpus: expected an integer in [1, 4194304], found number -4");
  nlohmann::json no_hidden = megatron_row();
  no_hidden["model"].erase("hidden");
  EXPECT_EQ(error_of(file_of({no_hidden})), "runs.json: $.rows[0].model: missing required field \"hidden\"");
  // A cluster file that does not load is bad input; a preset parasim lacks is a row it cannot
  // express (SkipsWhatItCannotExpressAndSaysWhy).
  nlohmann::json bad_cluster_file = megatron_row();
  bad_cluster_file["hardware"]["parasim_preset"] = "clusters/nosuch.json";
  EXPECT_NE(error_of(file_of({bad_cluster_file}))
                .find("runs.json: $.rows[0].hardware.parasim_preset: expected a cluster preset"),
            std::string::npos);
  EXPECT_NE(error_of(file_of({megatron_row(), megatron_row()}))
                .find("$.rows[1].id: expected an id not used by an earlier row"),
            std::string::npos);
  EXPECT_NE(error_of({{"schema", "published-runs/2"}, {"rows", nlohmann::json::array()}}).find("schema"),
            std::string::npos);
}

/// megatron_row() with a mixture of experts (4 experts, top-2, width 512) over ep=2.
nlohmann::json moe_row(const std::string& id) {
  nlohmann::json moe = megatron_row(id);
  moe["model"]["experts"] = 4;
  moe["model"]["top_k"] = 2;
  moe["model"]["moe_ffn"] = 512;
  moe["config"]["ep"] = 2;
  return moe;
}

TEST(RecordedRuns, ReadsTheAllToAllOverlapOfAPipelinedMoeRow) {
  nlohmann::json moe = moe_row("moe-pipelined");
  moe["config"]["moe_a2a_overlap"] = true;
  nlohmann::json flat = moe;  // no pipeline: nothing to merge, said in a caveat
  flat["id"] = "moe-flat";
  flat["config"]["dp"] = 4;
  flat["config"]["pp"] = 1;
  flat["config"]["schedule"] = "no pipeline";
  flat["config"]["global_batch"] = 128;
  const RunsFile f = parse_runs(file_of({moe, flat}), "runs.json");
  ASSERT_EQ(f.runs.size(), 2u);
  EXPECT_TRUE(f.runs[0].strategy.ep_overlap);
  EXPECT_FALSE(f.runs[1].strategy.ep_overlap);
  const std::string unhidden =
      "config.moe_a2a_overlap: without a 1F1B pipeline the all-to-alls are projected unhidden (parasim merges a "
      "steady-state forward with a backward of another micro-batch)";
  EXPECT_EQ(std::count(f.runs[1].caveats.begin(), f.runs[1].caveats.end(), unhidden), 1) << f.runs[1].skip_reason;
  nlohmann::json bad = moe;
  bad["config"]["moe_a2a_overlap"] = "sometimes";
  EXPECT_EQ(error_of(file_of({bad})),
            "runs.json: $.rows[0].config.moe_a2a_overlap: expected true or false (or on/off), found string "
            "\"sometimes\"");
}

TEST(RecordedRuns, ReadsMegatronCoresMoeKernelFusionFlags) {
  nlohmann::json moe = moe_row("moe-fused");
  moe["config"]["moe_router_fusion"] = true;
  moe["config"]["moe_permute_fusion"] = "on";
  nlohmann::json permute_only = moe;
  permute_only["id"] = "moe-permute-fused";
  permute_only["config"]["moe_router_fusion"] = false;
  nlohmann::json eager = moe;  // not stated: Megatron-Core's defaults
  eager["id"] = "moe-eager";
  eager["config"].erase("moe_router_fusion");
  eager["config"].erase("moe_permute_fusion");
  const RunsFile f = parse_runs(file_of({moe, permute_only, eager}), "runs.json");
  ASSERT_EQ(f.runs.size(), 3u);
  EXPECT_EQ(profiler::to_string(f.runs[0].moe_kernels), "fused");
  EXPECT_EQ(profiler::to_string(f.runs[1].moe_kernels), "fused-permute");
  EXPECT_EQ(profiler::to_string(f.runs[2].moe_kernels), "eager");
  // Said of the built model, so a zoo mixture of experts (whose row gives no expert count) is too.
  const std::string unstated =
      "MoE kernels not stated: Megatron-Core's eager router and permutation, its defaults (config.moe_router_fusion "
      "and config.moe_permute_fusion for Transformer Engine's fused kernels)";
  auto said = [&](const RecordedRun& r) {
    const RunOutcome o = evaluate_run(r, {});
    EXPECT_TRUE(o.experts) << r.id;
    return std::count(o.run.caveats.begin(), o.run.caveats.end(), unstated);
  };
  EXPECT_EQ(said(f.runs[2]), 1);
  EXPECT_EQ(said(f.runs[1]), 0);
  nlohmann::json zoo = megatron_row("zoo-moe");
  zoo["model"] = {{"zoo_name", "mixtral_8x7b"}, {"seq_len", 128}};
  const RunsFile z = parse_runs(file_of({zoo}), "runs.json");
  ASSERT_EQ(z.runs.size(), 1u);
  EXPECT_EQ(said(z.runs[0]), 1);
  EXPECT_FALSE(evaluate_run(parse_runs(file_of({megatron_row()}), "runs.json").runs[0], {}).experts);
  nlohmann::json bad = moe;
  bad["config"]["moe_permute_fusion"] = "partly";
  EXPECT_EQ(error_of(file_of({bad})),
            "runs.json: $.rows[0].config.moe_permute_fusion: expected true or false (or on/off), found string "
            "\"partly\"");
}

nlohmann::json bert_row() {
  return nlohmann::json::parse(R"json({
    "id": "bert-small", "source": "test",
    "model": {"zoo_name": "bert_large", "seq_len": 128},
    "hardware": {"gpus_per_node": 8, "parasim_preset": "dgx-a100"},
    "gpus": 1,
    "config": {"dp": 1, "tp": 1, "pp": 1, "micro_batch": 4, "micro_batches_per_step": 1, "global_batch": 4,
               "seq_len": 128, "recompute": "none", "zero": 0, "precision": "fp16 mixed", "optimizer": "LAMB"},
    "measured": {"metric": "sequences_per_s", "value": 100}
  })json");
}

TEST(RecordedRuns, MlmPositionsGatherTheMaskedTokensOfAZooBert) {
  nlohmann::json masked = bert_row();
  masked["id"] = "bert-masked";
  masked["model"]["mlm_positions"] = 20;  // phase 1: max_predictions_per_seq 20 of 128
  const RunsFile f = parse_runs(file_of({bert_row(), masked}), "runs.json");
  ASSERT_EQ(f.runs.size(), 2u);
  EXPECT_EQ(f.runs[0].mlm_positions, 0);
  EXPECT_EQ(f.runs[1].mlm_positions, 20);
  const RunsReport report = evaluate_runs(f, {});
  ASSERT_TRUE(report.outcomes[0].scored) << report.outcomes[0].note;
  ASSERT_TRUE(report.outcomes[1].scored) << report.outcomes[1].note;
  // The head's transform and 30522-wide decoder run on 20 of 128 rows: a shorter step.
  EXPECT_LT(report.outcomes[1].projected_step_s, report.outcomes[0].projected_step_s);
}

TEST(RecordedRuns, InfersWhatNvidiasBertScriptDidFromItsContainerOn) {
  // NVIDIA's BERT run_pretraining.py (its allreduce_post_accumulation flag) from the pytorch:21.11
  // release on: phase 2 binned by 64 tokens (mean 256 + 32 = 288 priced), the head on 15% of the
  // 256 mean tokens (38, under max_predictions_per_seq 80), fp16 gradients added in place.
  nlohmann::json phase2 = bert_row();
  phase2["id"] = "phase2";
  phase2["source"] = "NVIDIA DeepLearningExamples BERT README (pytorch:21.11 container)";
  phase2["model"]["seq_len"] = 512;
  phase2["config"]["seq_len"] = 512;
  phase2["config"]["allreduce"] = "once after accumulation (allreduce_post_accumulation, fp16)";
  nlohmann::json phase1 = phase2;  // 128 tokens: nearly every sample full, no padding inferred
  phase1["id"] = "phase1";
  phase1["model"]["seq_len"] = 128;
  phase1["config"]["seq_len"] = 128;
  nlohmann::json older = phase2;  // before LDDL and the masked-position head
  older["id"] = "older";
  older["source"] = "NVIDIA DeepLearningExamples BERT README (pytorch:20.06 container)";
  nlohmann::json words = phase2;  // the container in other words
  words["id"] = "words";
  words["source"] = "NVIDIA DeepLearningExamples BERT README, PyTorch 22.09-py3 NGC container";
  nlohmann::json stated = phase2;  // stated facts win
  stated["id"] = "stated";
  stated["config"]["padding"] = {{"bin_size", 32}, {"mean_tokens", 300}};
  stated["model"]["mlm_positions"] = 60;
  stated["config"]["grad_accumulation"] = "fp32-buffer";
  nlohmann::json other = phase2;  // no allreduce_post_accumulation: another script
  other["id"] = "other";
  other["config"].erase("allreduce");
  const RunsFile f = parse_runs(file_of({phase2, phase1, older, stated, other, words}), "runs.json");
  ASSERT_EQ(f.runs.size(), 6u);
  EXPECT_EQ(f.runs[5].padded_seq_len, 288);
  EXPECT_EQ(f.runs[0].padded_seq_len, 288);
  EXPECT_EQ(f.runs[0].mlm_positions, 38);
  EXPECT_EQ(f.runs[0].grad_accumulation, GradAccumulation::InPlace);
  ASSERT_EQ(f.runs[0].caveats.size(), 4u);
  EXPECT_EQ(f.runs[0].caveats[1],
            "padding not stated: NVIDIA's BERT (pytorch:21.11 on) bins phase-2 samples by 64 tokens with LDDL and "
            "pads each micro-batch to its longest; Wikipedia samples of up to 512 tokens average at most 256 (Krell "
            "et al. 2021): priced at 288 tokens per sample (config.padding {bin_size: 64, mean_tokens: 256})");
  EXPECT_EQ(f.runs[0].caveats[2],
            "mlm_positions not stated: NVIDIA's BERT (pytorch:21.11 on) runs the masked-LM head on the masked "
            "positions only, 15% of a sample's 256 tokens (at most max_predictions_per_seq 80): 38 per sample");
  EXPECT_EQ(f.runs[1].padded_seq_len, 0);
  EXPECT_EQ(f.runs[1].mlm_positions, 19);  // 15% of 128, under max_predictions_per_seq 20
  EXPECT_EQ(f.runs[2].padded_seq_len, 0);
  EXPECT_EQ(f.runs[2].mlm_positions, 0);
  EXPECT_EQ(f.runs[2].grad_accumulation, GradAccumulation::Auto);
  EXPECT_EQ(f.runs[2].caveats.back(),
            "config.allreduce names NVIDIA's BERT run_pretraining.py, but no NGC container from pytorch:21.11 on "
            "(its sequence binning and masked-position head): every sample priced at its full length, the "
            "masked-LM head on every position");
  EXPECT_EQ(f.runs[3].padded_seq_len, 316);  // 300 + 16
  EXPECT_EQ(f.runs[3].mlm_positions, 60);
  EXPECT_EQ(f.runs[3].grad_accumulation, GradAccumulation::Fp32Buffer);
  EXPECT_EQ(f.runs[4].padded_seq_len, 0);
  EXPECT_EQ(f.runs[4].mlm_positions, 0);
  // The inferred facts price the row as if it had stated them.
  nlohmann::json as_stated = phase2;
  as_stated["config"]["padding"] = {{"bin_size", 64}, {"mean_tokens", 256}};
  as_stated["model"]["mlm_positions"] = 38;
  as_stated["config"]["grad_accumulation"] = "in-place";
  EXPECT_DOUBLE_EQ(evaluate_run(f.runs[0], {}).projected_step_s,
                   evaluate_run(parse_runs(file_of({as_stated}), "runs.json").runs[0], {}).projected_step_s);
}

TEST(RecordedRuns, MlmPositionsRejectedNamingTheField) {
  nlohmann::json zero = bert_row();
  zero["model"]["mlm_positions"] = 0;
  EXPECT_EQ(error_of(file_of({zero})),
            "runs.json: $.rows[0].model.mlm_positions: expected an integer in [1, 16777216], found number 0");
  nlohmann::json longer = bert_row();
  longer["model"]["mlm_positions"] = 129;
  EXPECT_EQ(error_of(file_of({longer})),
            "runs.json: $.rows[0].model.mlm_positions: expected at most the sequence length 128, found number 129");
  // Binned data priced at 16 + 8 = 24 tokens per sample: the head cannot run on more of them.
  nlohmann::json padded = bert_row();
  padded["config"]["padding"] = {{"bin_size", 16}, {"mean_tokens", 16}};
  padded["model"]["mlm_positions"] = 30;
  EXPECT_EQ(error_of(file_of({padded})),
            "runs.json: $.rows[0].model.mlm_positions: expected at most the 24 tokens a sample is priced at "
            "(config.padding), found number 30");
  nlohmann::json gpt2 = bert_row();
  gpt2["model"]["zoo_name"] = "gpt2";
  gpt2["model"]["mlm_positions"] = 20;
  EXPECT_EQ(error_of(file_of({gpt2})),
            "runs.json: $.rows[0].model.mlm_positions: expected mlm_positions only on a zoo model with a masked-LM "
            "head (bert_large; gpt2 has none), found number 20");
  nlohmann::json hyper = megatron_row();
  hyper["model"]["mlm_positions"] = 20;
  EXPECT_EQ(error_of(file_of({hyper})),
            "runs.json: $.rows[0].model.mlm_positions: expected mlm_positions only on a zoo model with a masked-LM "
            "head (bert_large; a hyperparameter row builds a GPT-layout transformer without one), found number 20");
}

TEST(RecordedRuns, ProjectsAnExpressibleRunAndScoresIt) {
  const RunsFile f = parse_runs(file_of({megatron_row()}), "runs.json");
  const RunsReport report = evaluate_runs(f, {});
  ASSERT_EQ(report.scored, 1);
  const RunOutcome& o = report.outcomes[0];
  EXPECT_TRUE(o.scored) << o.note;
  EXPECT_GT(o.projected_step_s, 0);
  EXPECT_DOUBLE_EQ(o.error_pct, 100.0 * (o.projected_step_s - 0.5) / 0.5);
  EXPECT_DOUBLE_EQ(report.median_abs_error_pct, std::fabs(o.error_pct));
  EXPECT_EQ(report.worst_id, "gpt-small");
  // A calibration's per-step overhead lands on the step one for one.
  Calibration c;
  c.step_overhead_ms = 250;
  const RunOutcome slower = evaluate_run(f.runs[0], {.calibration = c, .progress = {}});
  EXPECT_NEAR(slower.projected_step_s - o.projected_step_s, 0.25, 1e-9);
}

TEST(RecordedRuns, PutsTheProjectedPeakMemoryNextToAMeasuredOne) {
  nlohmann::json row = megatron_row();
  row["measured"]["peak_allocated_gib"] = 2.5;
  nlohmann::json unmeasured = megatron_row("gpt-small-unmeasured");
  const RunsFile f = parse_runs(file_of({row, unmeasured}), "runs.json");
  EXPECT_DOUBLE_EQ(f.runs[0].measured_peak_gib, 2.5);
  EXPECT_DOUBLE_EQ(f.runs[1].measured_peak_gib, 0);
  const RunsReport report = evaluate_runs(f, {});
  const RunOutcome& o = report.outcomes[0];
  ASSERT_TRUE(o.scored) << o.note;
  EXPECT_GT(o.projected_peak_gib, 0);
  EXPECT_DOUBLE_EQ(report.outcomes[1].projected_peak_gib, o.projected_peak_gib);  // the same run, unmeasured
  EXPECT_DOUBLE_EQ(o.memory_error_pct, 100.0 * (o.projected_peak_gib - 2.5) / 2.5);
  EXPECT_DOUBLE_EQ(report.outcomes[1].memory_error_pct, 0);
  EXPECT_EQ(report.memory_scored, 1);  // only the row with a measured peak
  EXPECT_DOUBLE_EQ(report.max_abs_memory_error_pct, std::fabs(o.memory_error_pct));
  EXPECT_EQ(report.worst_memory_id, "gpt-small");
  const nlohmann::json j = runs_report_to_json(report);
  EXPECT_EQ(j["memory_scored"], 1);
  EXPECT_DOUBLE_EQ(j["rows"][0]["measured_peak_gib"].get<double>(), 2.5);
  EXPECT_FALSE(j["rows"][1].contains("measured_peak_gib"));
  row["measured"]["peak_allocated_gib"] = -1;
  EXPECT_EQ(error_of(file_of({row})),
            "runs.json: $.rows[0].measured.peak_allocated_gib: expected a number in [1e-06, 1e+09], found number -1");
}

TEST(RecordedRuns, ReadsAFusedLossFromTheConfig) {
  nlohmann::json row = megatron_row();
  row["model"]["vocab"] = 200'000;  // the loss's 25.6M logits per micro-batch and rank set the peak
  row["config"]["loss"] = "fused (LLM Foundry's fused_crossentropy)";
  nlohmann::json unfused = row;
  unfused["id"] = "gpt-small-unfused";
  unfused["config"]["loss"] = "unfused, torch.nn.CrossEntropyLoss";
  const RunsFile f = parse_runs(file_of({row, unfused,
                                         [] {
                                           nlohmann::json plain = megatron_row("gpt-small-plain");
                                           return plain;
                                         }()}),
                                "runs.json");
  EXPECT_TRUE(f.runs[0].fused_loss);
  EXPECT_FALSE(f.runs[1].fused_loss);
  EXPECT_FALSE(f.runs[2].fused_loss);
  const RunsReport report = evaluate_runs(f, {});
  // Memory only: the same step, and the peak (the last stage's, where the loss is) smaller.
  EXPECT_DOUBLE_EQ(report.outcomes[0].projected_step_s, report.outcomes[1].projected_step_s);
  EXPECT_LT(report.outcomes[0].projected_peak_gib, report.outcomes[1].projected_peak_gib);
  EXPECT_EQ(runs_report_to_json(report)["rows"][0]["loss"], "fused");
}

TEST(RecordedRuns, ModelFlopsUtilisationCountsMegatronsFlopsBothWays) {
  // GPT, L = 2, h = 256, s = 128, V = 1000, global batch B = 64: the matrix products of forward and
  // backward are 72 B s L h^2 (1 + s / 6h) + 6 B s h V FLOPs (Narayanan et al. 2021 without the
  // recomputation term), over 16 A100s' 312 TFLOP/s fp16 peak for the measured 0.5 s step.
  const RunOutcome o = evaluate_run(parse_runs(file_of({megatron_row()}), "runs.json").runs[0], {});
  ASSERT_TRUE(o.scored) << o.note;
  const double b = 64, s = 128, l = 2, h = 256, v = 1000;
  const double flops = 72 * b * s * l * h * h * (1 + s / (6 * h)) + 6 * b * s * h * v;
  EXPECT_NEAR(o.model_flops_per_step, flops, 1e-9 * flops);
  EXPECT_NEAR(o.measured_mfu_pct, 100 * flops / (16 * 312e12 * 0.5), 1e-9);
  EXPECT_NEAR(o.projected_mfu_pct, 100 * flops / (16 * 312e12 * o.projected_step_s), 1e-9);
  const nlohmann::json j = runs_report_to_json(evaluate_runs(parse_runs(file_of({megatron_row()}), "r.json"), {}));
  EXPECT_DOUBLE_EQ(j["rows"][0]["measured_mfu_pct"].get<double>(), o.measured_mfu_pct);
  // A step faster than the device's matrix products could do the stated work is said to be so.
  nlohmann::json fast = megatron_row();
  fast["derived_step_seconds"] = flops / (16 * 312e12 * 0.80);  // 80% MFU: above the A100's 73.7%
  const RunOutcome f = evaluate_run(parse_runs(file_of({fast}), "runs.json").runs[0], {});
  EXPECT_NEAR(f.measured_mfu_pct, 80.0, 1e-9);
  const auto said = std::find_if(f.run.caveats.begin(), f.run.caveats.end(), [](const std::string& c) {
    return c.find("means 80.0% MFU for the work as stated") != std::string::npos &&
           c.find("more than the 73.7% of peak") != std::string::npos;
  });
  EXPECT_NE(said, f.run.caveats.end());
  EXPECT_EQ(std::count_if(o.run.caveats.begin(), o.run.caveats.end(),
                          [](const std::string& c) { return c.find("MFU") != std::string::npos; }),
            0);
}

TEST(RecordedRuns, MeasuredMfuOfMegatronsSelectiveRecomputationRunsIsWhatMegatronLmPublishes) {
  // Megatron-LM's README (2022, "model and hardware FLOPs utilization ... up to 1T parameters", data
  // parallel size one): MFU 41.5%, 51.4%, 56.0%, 56.3% for 22B, 175B, 530B and 1T with sequence
  // parallelism and selective recomputation - the rows of published_runs_extra.json.
  const RunsFile f = load_runs_file(std::string(PARASIM_SOURCE_DIR) + "/validation/data/published_runs_extra.json");
  const std::map<std::string, double> published{{"megatron-2022-22b-seqsel", 41.5},
                                                {"megatron-2022-175b-seqsel", 51.4},
                                                {"megatron-2022-530b-seqsel", 56.0},
                                                {"megatron-2022-1t-seqsel", 56.3}};
  int checked = 0;
  for (const RecordedRun& r : f.runs) {
    const auto it = published.find(r.id);
    if (it == published.end()) continue;
    const RunOutcome o = evaluate_run(r, {});
    ASSERT_TRUE(o.scored) << r.id << ": " << o.note;
    EXPECT_NEAR(o.measured_mfu_pct, it->second, 0.25) << r.id;
    ++checked;
  }
  EXPECT_EQ(checked, 4);
}

TEST(RecordedRuns, InfersFusedAttentionOnlyWhenUnfusedCannotHaveFit) {
  // 16k tokens per sequence: the unfused score matrices (b x heads x s^2 fp16 per layer) need far
  // more than 80 GiB; the run was measured, so it fit, which only FlashAttention allows.
  nlohmann::json row = megatron_row();
  row["model"]["seq_len"] = 16384;
  row["config"]["seq_len"] = 16384;
  row["model"]["layers"] = 24;
  row["model"]["heads"] = 16;
  row["config"]["recompute"] = "none";
  const RunsReport long_seq = evaluate_runs(parse_runs(file_of({row}), "runs.json"), {});
  ASSERT_TRUE(long_seq.outcomes[0].scored) << long_seq.outcomes[0].note;
  EXPECT_EQ(long_seq.outcomes[0].run.attention, profiler::AttentionKernel::Flash);
  ASSERT_EQ(long_seq.outcomes[0].run.caveats.size(), 1u);
  EXPECT_NE(long_seq.outcomes[0].run.caveats[0].find("the measured run fit, so it is projected with fused (flash)"),
            std::string::npos);
  // A row that names its kernel is taken at its word (and reported as not fitting).
  row["config"]["attention"] = "unfused";
  const RunsReport stated = evaluate_runs(parse_runs(file_of({row}), "runs.json"), {});
  EXPECT_EQ(stated.outcomes[0].run.attention, profiler::AttentionKernel::Unfused);
  EXPECT_NE(stated.outcomes[0].note.find("projected as if it fit"), std::string::npos);
  // When not even the fused kernel fits, the run still fit: it is projected with the kernel that
  // needs least memory, said both in the note and in a caveat.
  row["config"].erase("attention");
  row["config"]["micro_batch"] = 64;
  row["config"]["global_batch"] = 2 * 64 * 8;
  row["derived_step_seconds"] = 100;  // a plausible MFU: no caveat about the work
  const RunOutcome tight = evaluate_runs(parse_runs(file_of({row}), "runs.json"), {}).outcomes[0];
  ASSERT_TRUE(tight.scored) << tight.note;
  EXPECT_EQ(tight.run.attention, profiler::AttentionKernel::Flash);
  EXPECT_NE(tight.note.find("projected as if it fit"), std::string::npos);
  ASSERT_EQ(tight.run.caveats.size(), 1u);
  EXPECT_EQ(tight.run.caveats[0],
            "nothing fits parasim's memory model; the measured run fit, so it is projected with "
            "dp=2,mp=2,tp=4,schedule=1f1b,micro=8,overlap=off and fused (flash) attention");
  // Sequence parallelism left unstated is taken on as well: it shards the norms' and residual
  // adds' activations over the 4 TP ranks, so the same run needs less memory.
  row["config"].erase("sequence_parallel");
  const RunOutcome sharded = evaluate_runs(parse_runs(file_of({row}), "runs.json"), {}).outcomes[0];
  ASSERT_TRUE(sharded.scored) << sharded.note;
  EXPECT_TRUE(sharded.run.strategy.sequence_parallel());
  EXPECT_LT(sharded.projected_peak_gib, tight.projected_peak_gib);
  EXPECT_NE(std::find(sharded.run.caveats.begin(), sharded.run.caveats.end(),
                      "nothing fits parasim's memory model; the measured run fit, so it is projected with "
                      "dp=2,mp=2,tp=4,schedule=1f1b,micro=8,sp=on,overlap=off and fused (flash) attention, sequence "
                      "parallelism (not stated)"),
            sharded.run.caveats.end());
  // A run that fits unfused stays unfused.
  const RunsReport small = evaluate_runs(parse_runs(file_of({megatron_row()}), "runs.json"), {});
  EXPECT_EQ(small.outcomes[0].run.attention, profiler::AttentionKernel::Unfused);
  EXPECT_TRUE(small.outcomes[0].run.caveats.empty());
}

TEST(RecordedRuns, AttentionNotStatedIsFusedOnHopper) {
  nlohmann::json row = megatron_row();
  row["hardware"]["parasim_preset"] = "dgx-h100";
  const RunOutcome hopper = evaluate_runs(parse_runs(file_of({row}), "runs.json"), {}).outcomes[0];
  ASSERT_TRUE(hopper.scored) << hopper.note;
  EXPECT_EQ(hopper.run.attention, profiler::AttentionKernel::Flash);
  ASSERT_EQ(hopper.run.caveats.size(), 1u);
  EXPECT_EQ(hopper.run.caveats[0],
            "attention not stated: fused (flash), as frameworks run it on Hopper GPUs (Transformer Engine's cuDNN "
            "attention, PyTorch's scaled_dot_product_attention)");
  // The same run with its kernel named unfused is slower: the score matrix goes through memory.
  row["config"]["attention"] = "unfused";
  const RunOutcome unfused = evaluate_runs(parse_runs(file_of({row}), "runs.json"), {}).outcomes[0];
  EXPECT_EQ(unfused.run.attention, profiler::AttentionKernel::Unfused);
  EXPECT_TRUE(unfused.run.caveats.empty());
  EXPECT_GT(unfused.projected_step_s, hopper.projected_step_s);
  // A model without attention says nothing about it.
  const RunOutcome cnn =
      evaluate_runs(parse_runs(file_of({tiny_cnn_row("cnn", "dgx-h100")}), "runs.json"), {}).outcomes[0];
  for (const std::string& caveat : cnn.run.caveats) EXPECT_EQ(caveat.find("attention"), std::string::npos) << caveat;
}

TEST(RecordedRuns, SaysWhenTheRowsShapeBuildsOtherThanTheStatedParameterCount) {
  // GPT layout, h = 256, ffn = 1024, 2 layers, 1000 tokens, 128 positions, tied head, biases:
  // 2 x (4h^2 + 2 h ffn + 9h + ffn) + 1000h + 128h + 2h (final norm) = 1,868,800.
  nlohmann::json row = megatron_row();
  row["model"]["params"] = 1868800;
  const RunsFile exact = parse_runs(file_of({row}), "runs.json");
  EXPECT_EQ(exact.runs[0].stated_params, 1868800);
  const RunOutcome same = evaluate_run(exact.runs[0], {});
  EXPECT_TRUE(std::none_of(same.run.caveats.begin(), same.run.caveats.end(),
                           [](const std::string& c) { return c.starts_with("model.params"); }));
  row["model"]["params"] = 1900000;
  const RunOutcome off = evaluate_run(parse_runs(file_of({row}), "runs.json").runs[0], {});
  EXPECT_NE(std::find(off.run.caveats.begin(), off.run.caveats.end(),
                      "model.params: the source states 1900000 parameters, parasim builds 1868800 from the row's "
                      "shape (-1.6%)"),
            off.run.caveats.end());
  row["model"]["params"] = "1.9M";
  EXPECT_NE(error_of(file_of({row})).find("runs.json: $.rows[0].model.params: expected"), std::string::npos);
}

TEST(RecordedRuns, TheFsdpFileStatesShapesThatBuildTheSourcesParameterCounts) {
  // The sources give each run's parameter count (MosaicML's NumParams, the Llama papers'); every row's
  // shape must build exactly that. The sequence sweep's learned position table grows with its length.
  const RunsFile main = load_runs_file(std::string(PARASIM_SOURCE_DIR) + "/validation/data/published_fsdp_runs.json");
  const RunsFile sweep =
      load_runs_file(std::string(PARASIM_SOURCE_DIR) + "/validation/data/published_fsdp_seq_sweep.json");
  ASSERT_EQ(main.runs.size(), 46u);
  ASSERT_EQ(sweep.runs.size(), 8u);
  for (const RecordedRun& r : sweep.runs) {
    EXPECT_EQ(r.attention, profiler::AttentionKernel::Triton) << r.id;  // "flash (attn_impl triton)"
    EXPECT_TRUE(r.transformer.causal) << r.id;
  }
  std::vector<RecordedRun> runs = main.runs;
  runs.insert(runs.end(), sweep.runs.begin(), sweep.runs.end());
  for (const RecordedRun& r : runs) {
    EXPECT_EQ(r.skip_reason, "") << r.id;
    ASSERT_GT(r.stated_params, 0) << r.id;
    const models::Model m =
        models::build_transformer(r.transformer, {.batch = 1, .dtype = r.dtype, .seq_len = r.seq_len});
    EXPECT_EQ(m.total_params(), r.stated_params) << r.id;
    EXPECT_EQ(r.strategy.dp, r.gpus) << r.id;
    EXPECT_TRUE(r.strategy.zero == 2 || r.strategy.zero == 3) << r.id;
  }
}

TEST(RecordedRuns, MedianOfAnEvenCountAveragesTheMiddlePair) {
  RunsReport r;
  for (double e : {-4.0, 1.0, 3.0, -10.0}) {
    RunOutcome o;
    o.scored = true;
    o.error_pct = e;
    o.run.id = std::to_string(e);
    r.outcomes.push_back(o);
  }
  summarise(r);
  EXPECT_EQ(r.scored, 4);
  EXPECT_DOUBLE_EQ(r.median_abs_error_pct, 3.5);
  EXPECT_DOUBLE_EQ(r.max_abs_error_pct, 10.0);
}

}  // namespace
}  // namespace parasim::validation
