#include "parasim/strategies/strategy.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>
#include <vector>

#include "parasim/common/error.hpp"
#include "parasim/common/json_io.hpp"

namespace parasim::strategies {

namespace {

constexpr int kMaxDegree = 1 << 20;  // a million-way split is already absurd; stops overflow games
constexpr int kMaxMicro = 1 << 16;

template <class E>
struct Named {
  const char* name;
  E value;
};

constexpr Named<Schedule> kSchedules[] = {{"none", Schedule::None},           {"gpipe", Schedule::GPipe},
                                          {"1f1b", Schedule::OneFOneB},       {"interleaved", Schedule::Interleaved},
                                          {"pipedream", Schedule::PipeDream}, {"spectrain", Schedule::SpecTrain}};
constexpr Named<Recompute> kRecomputes[] = {
    {"none", Recompute::None}, {"selective", Recompute::Selective}, {"full", Recompute::Full}};
constexpr Named<SeqParallel> kSeqParallel[] = {
    {"auto", SeqParallel::Auto}, {"on", SeqParallel::On}, {"off", SeqParallel::Off}};
constexpr Named<BatchSplit> kSplits[] = {{"even", BatchSplit::Even}, {"speed", BatchSplit::Speed}};

template <class E, std::size_t N>
std::string name_of(const Named<E> (&table)[N], E v) {
  for (const auto& n : table)
    if (n.value == v) return n.name;
  return "?";
}

template <class E, std::size_t N>
E parse_named(const Named<E> (&table)[N], const std::string& key, const std::string& value, const std::string& origin) {
  for (const auto& n : table)
    if (value == n.name) return n.value;
  std::string options;
  for (const auto& n : table) options += std::string(options.empty() ? "" : ", ") + n.name;
  throw InputError(origin + ": " + key + "=" + value + ": expected one of " + options);
}

int parse_int(const std::string& key, const std::string& value, int min, int max, const std::string& origin) {
  int v = 0;
  const auto* end = value.data() + value.size();
  auto [ptr, ec] = std::from_chars(value.data(), end, v);
  if (ec != std::errc() || ptr != end || v < min || v > max)
    throw InputError(origin + ": " + key + "=" + value + ": expected an integer in [" + std::to_string(min) + ", " +
                     std::to_string(max) + "]");
  return v;
}

double parse_positive_double(const std::string& key, const std::string& value, const std::string& origin) {
  double v = 0;
  std::istringstream in(value);
  in >> v;
  if (!in || !in.eof() || !std::isfinite(v) || v <= 0 || v > 1e6)
    throw InputError(origin + ": " + key + "=" + value + ": expected a positive number of megabytes (at most 1e6)");
  return v;
}

double parse_imbalance(const std::string& key, const std::string& value, const std::string& origin) {
  double v = 0;
  std::istringstream in(value);
  in >> v;
  if (!in || !in.eof() || !std::isfinite(v) || v < 1 || v > 100)
    throw InputError(origin + ": " + key + "=" + value +
                     ": expected the busiest expert-parallel rank's tokens over the mean, a number in [1, 100]");
  return v;
}

bool parse_on_off(const std::string& key, const std::string& value, const std::string& origin) {
  if (value == "on" || value == "true" || value == "1") return true;
  if (value == "off" || value == "false" || value == "0") return false;
  throw InputError(origin + ": " + key + "=" + value + ": expected on or off");
}

void validate(const Strategy& s, const std::string& origin) {
  if (s.recompute_layers > 0 && s.recompute != Recompute::Full)
    throw InputError(origin + ": recompute_layers=" + std::to_string(s.recompute_layers) +
                     " needs recompute=full (it recomputes the first N transformer layers of each pipeline chunk in "
                     "full)");
  if (s.interleave > 1 && s.schedule != Schedule::Interleaved)
    throw InputError(origin + ": interleave=" + std::to_string(s.interleave) + " needs schedule=interleaved");
  if (s.schedule == Schedule::Interleaved && s.mp < 2)
    throw InputError(origin + ": schedule=interleaved needs mp >= 2 pipeline stages");
  if (s.placement == Placement::Branches && s.mp < 2)
    throw InputError(origin + ": placement=branches needs mp >= 2 devices to place branches on");
  if (s.devices() > kMaxDegree)
    throw InputError(origin + ": dp*mp*tp*cp = " + std::to_string(s.devices()) + " devices; at most " +
                     std::to_string(kMaxDegree) + " are supported");
  if (s.ep > 1 && s.dp % s.ep != 0 && !s.expert_groups_fold_tp())
    throw InputError(origin + ": ep=" + std::to_string(s.ep) + " must divide dp=" + std::to_string(s.dp) +
                     " (expert parallelism splits the data-parallel replicas into groups of ep)" +
                     (s.tp > 1 ? ", or be tp=" + std::to_string(s.tp) +
                                     " times a divisor of dp (MoE parallel folding: groups of TP ranks x replicas)"
                               : std::string()));
  if (s.expert_groups_fold_tp()) {
    const std::string folding = ": ep=" + std::to_string(s.ep) + " over dp=" + std::to_string(s.dp) +
                                " x tp=" + std::to_string(s.tp) + " (MoE parallel folding)";
    if (!s.sequence_parallel())
      throw InputError(origin + folding +
                       " needs sequence parallelism (sp=on): each TP rank routes its own share of the tokens");
    if (s.etp > 1)
      throw InputError(origin + folding + " keeps whole experts on every rank; etp=" + std::to_string(s.etp) +
                       " would split them over the TP ranks the expert groups already span (etp=1)");
    if (s.cp > 1) throw InputError(origin + folding + " with cp > 1 is not modelled");
  }
  if (s.cp > 1 && s.placement != Placement::Layers)
    throw InputError(origin + ": cp=" + std::to_string(s.cp) + " needs placement=layers");
  if (s.etp > 1 && s.etp != s.tp)
    throw InputError(origin + ": etp=" + std::to_string(s.etp) +
                     ": expected 1 (whole experts on every TP rank) or tp=" + std::to_string(s.tp) +
                     " (every expert split over the tensor-parallel ranks)");
  if (s.etp > 1 && !s.sequence_parallel())
    throw InputError(origin + ": etp=" + std::to_string(s.etp) +
                     " needs sequence parallelism (sp=on): Megatron-Core refuses MoE layers with tensor "
                     "parallelism in training without it");
  if (s.imbalance != 1.0 && s.ep == 1)
    throw InputError(origin + ": imbalance needs ep > 1 (it is the load of the busiest expert-parallel rank)");
  if (s.ep_overlap && s.ep == 1)
    throw InputError(origin + ": ep_overlap=on needs ep > 1 (it hides the expert-parallel all-to-alls)");
  if (s.ep_overlap && s.schedule != Schedule::OneFOneB && s.schedule != Schedule::Interleaved)
    throw InputError(origin +
                     ": ep_overlap=on needs schedule=1f1b or interleaved (it merges a steady-state forward with a "
                     "backward of another micro-batch)");
  if (!s.tp_overlap && s.tp == 1)
    throw InputError(origin + ": tp_overlap=off needs tp > 1 (it orders the tensor-parallel all-reduces)");
  if (s.sp == SeqParallel::On && s.tp == 1)
    throw InputError(origin +
                     ": sp=on needs tp > 1 (sequence parallelism splits the tensor-parallel blocks' norms, "
                     "dropouts and residual adds across the TP ranks)");
  if (s.zero == 3 && s.asynchronous())
    throw InputError(origin + ": zero=3 needs a synchronous schedule (" + to_string(s.schedule) +
                     " updates weights after every micro-batch; ZeRO-3 with it is not modelled)");
  if (s.zero == 3 && s.ep > 1)
    throw InputError(origin +
                     ": zero=3 with ep > 1 is not modelled (the experts' parameters would be gathered over "
                     "dp / ep replicas)");
  const std::vector<std::string> order = {"tp-mp-dp", "mp-tp-dp", "tp-dp-mp", "dp-tp-mp", "mp-dp-tp", "dp-mp-tp"};
  if (std::find(order.begin(), order.end(), s.mapping) == order.end())
    throw InputError(origin + ": mapping=" + s.mapping +
                     ": expected an order of tp, mp and dp from innermost to outermost, e.g. tp-mp-dp");
}

void apply(Strategy& s, const std::string& key, const std::string& value, const std::string& origin) {
  if (key == "dp") s.dp = parse_int(key, value, 1, kMaxDegree, origin);
  else if (key == "mp" || key == "pp") s.mp = parse_int(key, value, 1, kMaxDegree, origin);
  else if (key == "tp") s.tp = parse_int(key, value, 1, kMaxDegree, origin);
  else if (key == "cp") s.cp = parse_int(key, value, 1, kMaxDegree, origin);
  else if (key == "ep") s.ep = parse_int(key, value, 1, kMaxDegree, origin);
  else if (key == "etp") s.etp = parse_int(key, value, 1, kMaxDegree, origin);
  else if (key == "imbalance") s.imbalance = parse_imbalance(key, value, origin);
  else if (key == "schedule") s.schedule = parse_named(kSchedules, key, value, origin);
  else if (key == "micro") s.micro = parse_int(key, value, 1, kMaxMicro, origin);
  else if (key == "interleave") s.interleave = parse_int(key, value, 1, 1024, origin);
  else if (key == "placement") {
    if (value == "layers") s.placement = Placement::Layers;
    else if (value == "branches") s.placement = Placement::Branches;
    else if (value.find(',') != std::string::npos) {
      // The grammar separates its pairs with commas, so such a name could not be written back.
      throw InputError(origin + ": placement=" + value +
                       ": a placement file name cannot hold a comma (the strategy grammar separates key=value "
                       "pairs with commas); rename the file");
    } else if (!value.empty()) {
      s.placement = Placement::File;
      s.placement_file = value;
    } else {
      throw InputError(origin + ": placement=: expected layers, branches or a path to an op->device JSON map");
    }
  } else if (key == "recompute") s.recompute = parse_named(kRecomputes, key, value, origin);
  else if (key == "recompute_layers") s.recompute_layers = parse_int(key, value, 1, 1024, origin);
  else if (key == "sp") s.sp = parse_named(kSeqParallel, key, value, origin);
  else if (key == "zero") s.zero = parse_int(key, value, 0, 3, origin);
  else if (key == "bucket_mb") s.bucket_mb = parse_positive_double(key, value, origin);
  else if (key == "split") s.split = parse_named(kSplits, key, value, origin);
  else if (key == "overlap") s.overlap = parse_on_off(key, value, origin);
  else if (key == "tp_overlap") s.tp_overlap = parse_on_off(key, value, origin);
  else if (key == "ep_overlap") s.ep_overlap = parse_on_off(key, value, origin);
  else if (key == "mapping") s.mapping = value;
  else
    throw InputError(
        origin + ": unknown key \"" + key +
        "\"; expected dp, mp, tp, cp, ep, etp, imbalance, schedule, micro, interleave, placement, recompute, "
        "recompute_layers, sp, zero, bucket_mb, split, overlap, tp_overlap, ep_overlap or mapping");
}

}  // namespace

std::string to_string(Schedule s) { return name_of(kSchedules, s); }
std::string to_string(Recompute r) { return name_of(kRecomputes, r); }
std::string to_string(BatchSplit b) { return name_of(kSplits, b); }
std::string to_string(SeqParallel p) { return name_of(kSeqParallel, p); }
std::string to_string(Placement p) {
  switch (p) {
    case Placement::Layers: return "layers";
    case Placement::Branches: return "branches";
    case Placement::File: return "file";
  }
  return "?";
}

Strategy parse_strategy(const std::string& text, const std::string& origin) {
  Strategy s;
  std::vector<std::string> seen;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    std::string item = text.substr(pos, comma - pos);
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    pos = comma + 1;
    if (item.empty()) {
      if (comma == text.size()) break;
      continue;
    }
    const auto eq = item.find('=');
    if (eq == std::string::npos)
      throw InputError(origin + ": \"" + item + "\": expected key=value (e.g. dp=4,mp=2,schedule=1f1b)");
    const std::string key = item.substr(0, eq);
    const std::string value = item.substr(eq + 1);
    if (std::find(seen.begin(), seen.end(), key) != seen.end())
      throw InputError(origin + ": key \"" + key + "\" given twice");
    seen.push_back(key);
    apply(s, key, value, origin);
  }
  validate(s, origin);
  return s;
}

std::string to_string(const Strategy& s) {
  const Strategy d;
  std::vector<std::string> parts;
  auto add = [&](const std::string& k, const std::string& v) { parts.push_back(k + "=" + v); };
  if (s.dp != d.dp || (s.mp == 1 && s.tp == 1 && s.cp == 1)) add("dp", std::to_string(s.dp));
  if (s.mp != d.mp) add("mp", std::to_string(s.mp));
  if (s.tp != d.tp) add("tp", std::to_string(s.tp));
  if (s.cp != d.cp) add("cp", std::to_string(s.cp));
  if (s.ep != d.ep) add("ep", std::to_string(s.ep));
  if (s.etp != d.etp) add("etp", std::to_string(s.etp));
  if (s.imbalance != d.imbalance) {
    std::ostringstream v;
    v << s.imbalance;
    add("imbalance", v.str());
  }
  if (s.schedule != d.schedule) add("schedule", to_string(s.schedule));
  if (s.micro != d.micro) add("micro", std::to_string(s.micro));
  if (s.interleave != d.interleave) add("interleave", std::to_string(s.interleave));
  if (s.placement != d.placement)
    add("placement", s.placement == Placement::File ? s.placement_file : to_string(s.placement));
  if (s.recompute != d.recompute) add("recompute", to_string(s.recompute));
  if (s.recompute_layers != d.recompute_layers) add("recompute_layers", std::to_string(s.recompute_layers));
  if (s.sp != d.sp) add("sp", to_string(s.sp));
  if (s.zero != d.zero) add("zero", std::to_string(s.zero));
  if (s.bucket_mb != d.bucket_mb) {
    std::ostringstream v;
    v << s.bucket_mb;
    add("bucket_mb", v.str());
  }
  if (s.split != d.split) add("split", to_string(s.split));
  if (s.overlap != d.overlap) add("overlap", s.overlap ? "on" : "off");
  if (s.tp_overlap != d.tp_overlap) add("tp_overlap", s.tp_overlap ? "on" : "off");
  if (s.ep_overlap != d.ep_overlap) add("ep_overlap", s.ep_overlap ? "on" : "off");
  if (s.mapping != d.mapping) add("mapping", s.mapping);
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : ",") + p;
  return out;
}

nlohmann::json strategy_to_json(const Strategy& s) {
  nlohmann::json j;
  j["schema"] = "parasim.strategy/1";
  j["dp"] = s.dp;
  j["mp"] = s.mp;
  j["tp"] = s.tp;
  if (s.cp != 1) j["cp"] = s.cp;  // only when used: the JSON of strategies without it keeps its bytes
  j["ep"] = s.ep;
  if (s.etp != 0) j["etp"] = s.etp;  // only when set: other files keep their bytes
  j["imbalance"] = s.imbalance;
  j["schedule"] = to_string(s.schedule);
  j["micro"] = s.micro;
  j["interleave"] = s.interleave;
  j["placement"] = s.placement == Placement::File ? s.placement_file : to_string(s.placement);
  j["recompute"] = to_string(s.recompute);
  if (s.recompute_layers != 0) j["recompute_layers"] = s.recompute_layers;  // only when set
  // Written only when set, so files and plans that never name it keep their bytes.
  if (s.sp != SeqParallel::Auto) j["sp"] = to_string(s.sp);
  j["zero"] = s.zero;
  j["bucket_mb"] = s.bucket_mb;
  j["split"] = to_string(s.split);
  j["overlap"] = s.overlap;
  if (!s.tp_overlap) j["tp_overlap"] = false;  // only when off: other files keep their bytes
  if (s.ep_overlap) j["ep_overlap"] = true;    // only when on
  j["mapping"] = s.mapping;
  return j;
}

Strategy strategy_from_json(const nlohmann::json& j, const std::string& file) {
  JsonField root{j, file, "$"};
  root.expect_schema("parasim.strategy/1");
  Strategy s;
  auto str_field = [&](const char* key) -> std::optional<std::string> {
    auto f = root.find(key);
    if (!f) return std::nullopt;
    return f->as_string();
  };
  // Every field is routed through the same parser as the grammar so both forms accept the same values;
  // the error names the JSON path.
  auto origin_of = [&](const char* key) { return file + ": $." + std::string(key); };
  for (const char* key : {"dp", "mp", "tp", "cp", "ep", "etp", "micro", "interleave", "recompute_layers", "zero"}) {
    if (auto f = root.find(key)) apply(s, key, std::to_string(f->as_int(INT32_MIN, INT32_MAX)), origin_of(key));
  }
  if (auto f = root.find("bucket_mb")) {
    std::ostringstream v;
    v << f->as_double();
    apply(s, "bucket_mb", v.str(), origin_of("bucket_mb"));
  }
  if (auto f = root.find("imbalance")) {
    std::ostringstream v;
    v << f->as_double();
    apply(s, "imbalance", v.str(), origin_of("imbalance"));
  }
  if (auto f = root.find("overlap")) s.overlap = f->as_bool();
  if (auto f = root.find("tp_overlap")) s.tp_overlap = f->as_bool();
  if (auto f = root.find("ep_overlap")) s.ep_overlap = f->as_bool();
  for (const char* key : {"schedule", "placement", "recompute", "sp", "split", "mapping"}) {
    if (auto v = str_field(key)) apply(s, key, *v, origin_of(key));
  }
  for (const auto& [key, value] : j.items()) {
    static const std::vector<std::string> known = {
        "schema",    "dp",       "mp",        "tp",         "cp",        "ep",         "etp",
        "imbalance", "schedule", "micro",     "interleave", "placement", "recompute",  "recompute_layers",
        "sp",        "zero",     "bucket_mb", "split",      "overlap",   "tp_overlap", "ep_overlap",
        "mapping"};
    if (std::find(known.begin(), known.end(), key) == known.end())
      throw InputError(file + ": $." + key + ": unknown strategy field");
  }
  validate(s, file);
  return s;
}

Strategy load_strategy(const std::string& text_or_file) {
  // A grammar string always has key=value pairs; a file path has none ("placement=map.json" is grammar).
  const bool is_file = text_or_file.find('=') == std::string::npos && text_or_file.size() > 5 &&
                       text_or_file.substr(text_or_file.size() - 5) == ".json";
  if (is_file) return strategy_from_json(read_json_file(text_or_file), text_or_file);
  return parse_strategy(text_or_file);
}

}  // namespace parasim::strategies
