// `parasim profile`: measure per-op costs of a model on the host CPU (oneDNN) or a GPU (CUDA
// builds), show a saved profile, import a torch.profiler trace, and probe GPU links.
//
//   parasim profile --model resnet18 --batch 8 [--backend cpu|cuda] [-o traces/...json]
//   parasim profile show traces/cpu-amd-epyc/resnet18-b8-fp32.json [--json]
//   parasim profile import trace.json [--model resnet50 --batch 32] [-o FILE]
//   parasim profile links [--devices 0,1] [-o links.json] [--cluster box.json]   (CUDA builds)
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands.hpp"
#include "enum_args.hpp"
#include "parasim/common/error.hpp"
#include "parasim/common/json_io.hpp"
#include "parasim/common/progress.hpp"
#include "parasim/common/units.hpp"
#include "parasim/models/model_json.hpp"
#include "parasim/models/zoo.hpp"
#include "parasim/profiler/cpu_profiler.hpp"
#include "parasim/profiler/kineto_import.hpp"
#include "parasim/profiler/profile.hpp"
#include "parasim/profiler/profile_table.hpp"
#if PARASIM_HAVE_CUDA
#include "parasim/hardware/cluster.hpp"
#include "parasim/hardware/cluster_json.hpp"
#include "parasim/profiler/gpu_profiler.hpp"
#include "parasim/profiler/link_probe.hpp"
#endif

namespace parasim::cli {

namespace {

using namespace parasim::profiler;

struct ProfileArgs {
  std::string model;
  std::int64_t batch = 1;
  std::string dtype = "fp32";
  std::int64_t image_size = 0;
  std::int64_t seq_len = 0;
  std::string backend = "cpu";
  int device = 0;
  int threads = 1;
  int reps = 10;
  int warmup = 2;
  std::string optimizer = "sgd";
  bool warm_cache = false;
  std::string output;
};

struct ShowArgs {
  std::string file;
  bool json = false;
};

struct ImportArgs {
  std::string trace;
  std::string model;
  std::int64_t batch = 0;
  std::string dtype = "fp32";
  std::string output;
};

struct LinksArgs {
  std::vector<int> devices;
  std::int64_t min_bytes = 1 * KiB;
  std::int64_t max_bytes = 1 * GiB;
  int factor = 2;
  int warmup = 5;
  int iterations = 20;
  bool no_collectives = false;
  std::string output;
  std::string cluster;
};

models::DType dtype_option(const std::string& s) {
  const auto d = models::parse_dtype(s);
  if (!d) throw InputError("--dtype: expected fp32, fp16 or bf16, found \"" + s + "\"");
  if (*d == models::DType::FP8)
    throw InputError("--dtype fp8: FP8 matmuls are modelled (simulate, plan), not measured; profile in bf16");
  return *d;
}

bool looks_like_file(const std::string& target) {
  std::error_code ec;
  return target.find('/') != std::string::npos || target.ends_with(".json") || target.ends_with(".onnx") ||
         std::filesystem::exists(target, ec);
}

models::Model load_model(const ProfileArgs& a) {
  if (a.model.empty())
    throw InputError("parasim profile: --model NAME|FILE is required (or: profile show|import|links)");
  if (a.batch < 1) throw InputError("--batch: expected an integer >= 1, found " + std::to_string(a.batch));
  const models::DType dtype = dtype_option(a.dtype);
  if (!models::is_zoo_model(a.model) && looks_like_file(a.model)) {
    if (a.image_size > 0) throw InputError("--image-size applies to zoo models only; " + a.model + " fixes its shapes");
    models::LoadOptions load;
    load.batch = a.batch;
    load.dtype = dtype;
    if (a.seq_len > 0) load.seq_len = a.seq_len;  // config.json only: the loader rejects it for model files
    return models::load_model_file(a.model, load);
  }
  models::ModelOptions options;
  options.batch = a.batch;
  options.dtype = dtype;
  options.image_size = a.image_size;
  options.seq_len = a.seq_len;
  return models::build_zoo_model(a.model, options);
}

/// "H200-SXM-141GB" -> "h200-sxm-141gb": a directory name.
std::string path_component(std::string s) {
  for (char& c : s) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') c = '-';
  }
  return s.empty() ? "unknown" : s;
}

std::filesystem::path default_output(const Profile& p) {
  return std::filesystem::path("traces") / path_component(p.device.kind) /
         (path_component(p.model.empty() ? "model" : p.model) + "-b" + std::to_string(p.batch) + "-" +
          models::to_string(p.dtype) + ".json");
}

std::string command_line(const ProfileArgs& a) {
  std::string c = "parasim profile --model " + a.model + " --batch " + std::to_string(a.batch) + " --dtype " + a.dtype +
                  " --backend " + a.backend + " --reps " + std::to_string(a.reps) + " --warmup " +
                  std::to_string(a.warmup) + " --optimizer " + a.optimizer;
  if (a.backend == "cuda") c += " --device " + std::to_string(a.device);
  else c += " --threads " + std::to_string(a.threads) + (a.warm_cache ? " --warm-cache" : "");
  if (a.image_size > 0) c += " --image-size " + std::to_string(a.image_size);
  if (a.seq_len > 0) c += " --seq-len " + std::to_string(a.seq_len);
  return c;
}

/// A progress bar created on the first report, when the total is known.
class LazyProgress {
 public:
  explicit LazyProgress(std::string label) : label_(std::move(label)) {}
  std::function<void(std::size_t, std::size_t)> callback() {
    return [this](std::size_t done, std::size_t total) {
      if (!bar_) bar_ = std::make_unique<ProgressBar>(label_, total);
      bar_->advance();
      if (done == total) bar_->finish();
    };
  }

 private:
  std::string label_;
  std::unique_ptr<ProgressBar> bar_;
};

void print_summary(const Profile& p, const std::filesystem::path& path) {
  const ProfileTotals t = profile_totals(p);
  std::cout << "wrote " << path.string() << ": " << p.model << " b" << p.batch << " " << models::to_string(p.dtype)
            << " on " << p.device.name << ", " << t.entries << " distinct ops (" << t.ops << " ops), one iteration "
            << format_time(t.total()) << " (fwd " << format_time(t.per_phase[0]) << ", bwd "
            << format_time(t.per_phase[1] + t.per_phase[2]) << ", update " << format_time(t.per_phase[3]) << ")\n";
  if (t.unmeasured > 0)
    std::cerr
        << "parasim: warning: " << t.unmeasured
        << " op signature(s) could not be measured; their notes say why and their costs will come from the roofline\n";
}

void run_profile(const ProfileArgs& a) {
  if (a.reps < 1) throw InputError("--reps: expected an integer >= 1, found " + std::to_string(a.reps));
  if (a.warmup < 0) throw InputError("--warmup: expected an integer >= 0, found " + std::to_string(a.warmup));
  if (a.threads < 1) throw InputError("--threads: expected an integer >= 1, found " + std::to_string(a.threads));
  if (a.backend != "cpu" && a.backend != "cuda")
    throw InputError("--backend: expected cpu or cuda, found \"" + a.backend + "\"");
  const Optimizer optimizer = optimizer_arg(a.optimizer);
  const models::Model model = load_model(a);
  LazyProgress progress("profile " + model.name());
  Profile p;
  if (a.backend == "cpu") {
    CpuProfileOptions o;
    o.threads = a.threads;
    o.warmup = a.warmup;
    o.repetitions = a.reps;
    o.optimizer = optimizer;
    o.flush_cache = !a.warm_cache;
    o.command = command_line(a);
    o.on_progress = progress.callback();
    p = profile_model_on_cpu(model, o);
  } else {
#if PARASIM_HAVE_CUDA
    GpuProfileOptions o;
    o.device = a.device;
    o.plan.warmup = a.warmup;
    o.plan.repetitions = a.reps;
    o.optimizer = optimizer;
    o.on_progress = progress.callback();
    std::vector<std::string> warnings;
    p = profile_model_on_gpu(model, o, &warnings);
    p.command = command_line(a);
    for (const auto& w : warnings) std::cerr << "parasim: warning: " << w << "\n";
#else
    throw RuntimeError(
        "parasim was built without CUDA; --backend cuda needs a CUDA build and a GPU (use --backend cpu)");
#endif
  }
  const std::filesystem::path out = a.output.empty() ? default_output(p) : std::filesystem::path(a.output);
  save_profile(p, out);
  print_summary(p, out);
}

void run_show(const ShowArgs& a) {
  const Profile p = load_profile(a.file);
  if (a.json) std::cout << dump_json(profile_table_json(p));
  else std::cout << render_profile_table(p);
}

void run_import(const ImportArgs& a) {
  KinetoImportOptions o;
  o.model = a.model;
  o.batch = a.batch;
  o.dtype = dtype_option(a.dtype);
  o.command = "parasim profile import " + a.trace + (a.model.empty() ? "" : " --model " + a.model) +
              (a.batch > 0 ? " --batch " + std::to_string(a.batch) : "") + " --dtype " + a.dtype;
  if (a.batch < 0) throw InputError("--batch: expected an integer >= 0, found " + std::to_string(a.batch));
  Profile p = import_kineto_trace(a.trace, o);
  std::filesystem::path out = a.output;
  if (out.empty()) {
    out = std::filesystem::path("traces") / path_component(p.device.kind) /
          (path_component(a.model.empty() ? std::filesystem::path(a.trace).stem().string() : a.model) + "-kineto.json");
  }
  save_profile(p, out);
  std::cout << render_profile_table(p) << "\nwrote " << out.string() << "\n";
}

void run_links(const LinksArgs& a) {
#if PARASIM_HAVE_CUDA
  LinkProbeOptions o;
  o.devices = a.devices;
  o.min_bytes = a.min_bytes;
  o.max_bytes = a.max_bytes;
  o.size_factor = a.factor;
  o.warmup = a.warmup;
  o.iterations = a.iterations;
  o.collectives = !a.no_collectives;
  std::unique_ptr<ProgressBar> bar;
  o.on_progress = [&bar](const std::string& label, std::size_t done, std::size_t total) {
    if (!bar) bar = std::make_unique<ProgressBar>("links", total);
    (void)label;
    bar->advance();
    if (done == total) bar->finish();
  };
  const LinkProbeResult r = probe_links(o);
  print_link_tables(std::cout, r);
  if (!a.output.empty()) {
    save_profile(link_probe_profile(r), a.output);
    std::cout << "wrote " << a.output << "\n";
  }
  if (!a.cluster.empty()) {
    hardware::save_cluster_file(
        hardware::Cluster(cluster_spec_from_probe(r, std::filesystem::path(a.cluster).stem().string())), a.cluster);
    std::cout << "wrote " << a.cluster << "\n";
  }
#else
  (void)a;
  throw RuntimeError("parasim was built without CUDA; link probing needs a GPU");
#endif
}

}  // namespace

void register_profile(CLI::App& app) {
  auto args = std::make_shared<ProfileArgs>();
  CLI::App* cmd = app.add_subcommand(
      "profile",
      "Measure per-op forward/backward/update times of a model on this host (oneDNN) or a GPU, and write a "
      "parasim.profile/1 file; `show`, `import` and `links` below");
  cmd->add_option("--model", args->model, "Zoo model name, parasim.model/1 file, config.json or .onnx graph");
  cmd->add_option("--batch", args->batch, "Mini-batch size per device")->capture_default_str();
  cmd->add_option("--dtype", args->dtype, "fp32, fp16 or bf16")->capture_default_str();
  cmd->add_option("--image-size", args->image_size, "Image models: input height = width (default: the model's)");
  cmd->add_option("--seq-len", args->seq_len, "Sequence models: tokens per sample (default: the model's)");
  cmd->add_option("--backend", args->backend, "cpu (oneDNN on this host) or cuda")->capture_default_str();
  cmd->add_option("--device", args->device, "CUDA device index (--backend cuda)")->capture_default_str();
  cmd->add_option("--threads", args->threads, "oneDNN threads (--backend cpu); the CPU executor uses 1 per device")
      ->capture_default_str();
  cmd->add_option("--reps", args->reps, "Timed repetitions of every phase")->capture_default_str();
  cmd->add_option("--warmup", args->warmup, "Untimed runs before timing")->capture_default_str();
  cmd->add_option("--optimizer", args->optimizer, "sgd, momentum or adam (the update phase)")->capture_default_str();
  cmd->add_flag("--warm-cache", args->warm_cache,
                "CPU: keep caches warm between repetitions (default: evict them before every timed run)");
  cmd->add_option("-o,--output", args->output, "Profile file (default traces/<device>/<model>-b<batch>-<dtype>.json)");
  cmd->require_subcommand(0, 1);

  auto show = std::make_shared<ShowArgs>();
  CLI::App* show_cmd =
      cmd->add_subcommand("show", "Print a profile as a table: per op and phase min/median/max, spread, launches");
  show_cmd->add_option("file", show->file, "parasim.profile/1 file")->required();
  show_cmd->add_flag("--json", show->json, "JSON rows and totals instead of the table");
  show_cmd->callback([show] { run_show(*show); });

  auto imp = std::make_shared<ImportArgs>();
  CLI::App* import_cmd =
      cmd->add_subcommand("import", "Import a torch.profiler (Kineto) Chrome trace: GPU time per CPU op -> a profile");
  import_cmd->add_option("trace", imp->trace, "Chrome trace JSON written by torch.profiler")->required();
  import_cmd->add_option("--model", imp->model, "Model name to record in the profile");
  import_cmd->add_option("--batch", imp->batch, "Batch size to record in the profile");
  import_cmd->add_option("--dtype", imp->dtype, "dtype to record: fp32, fp16 or bf16")->capture_default_str();
  import_cmd->add_option("-o,--output", imp->output, "Profile file (default traces/<device>/<model>-kineto.json)");
  import_cmd->callback([imp] { run_import(*imp); });

  auto links = std::make_shared<LinksArgs>();
  CLI::App* links_cmd = cmd->add_subcommand(
      "links",
      "Probe host<->GPU, GPU<->GPU copies and NCCL collectives nccl-tests style, with alpha-beta fits (CUDA builds)");
  links_cmd->add_option("--devices", links->devices, "CUDA device indices (default: all)")->delimiter(',');
  links_cmd->add_option("--min-bytes", links->min_bytes, "Smallest message")->capture_default_str();
  links_cmd->add_option("--max-bytes", links->max_bytes, "Largest message")->capture_default_str();
  links_cmd->add_option("--factor", links->factor, "Size step: 2 or 4")->capture_default_str();
  links_cmd->add_option("--warmup", links->warmup, "Untimed runs per size")->capture_default_str();
  links_cmd->add_option("--iterations", links->iterations, "Timed runs per size")->capture_default_str();
  links_cmd->add_flag("--no-collectives", links->no_collectives, "Skip the NCCL collectives");
  links_cmd->add_option("-o,--output", links->output, "Write the curves as a parasim.profile/1 file");
  links_cmd->add_option("--cluster", links->cluster, "Write a parasim.cluster/1 file built from the measured links");
  links_cmd->callback([links] { run_links(*links); });

  cmd->callback([args, cmd] {
    if (cmd->get_subcommands().empty()) run_profile(*args);
  });
}

}  // namespace parasim::cli
