// parasim.profile/1: writing, and reading with validation that names the file and JSON path.
#include "parasim/profiler/profile.hpp"

#include <algorithm>
#include <ctime>
#include <unordered_map>

#include "parasim/common/error.hpp"
#include "parasim/common/json_io.hpp"

namespace parasim::profiler {

using nlohmann::json;

double PhaseStats::spread() const {
  return median_ns > 0 ? static_cast<double>(max_ns - min_ns) / static_cast<double>(median_ns) : 0.0;
}

PhaseStats summarize(std::vector<TimeNs> samples, std::int64_t launches) {
  PhaseStats s;
  s.launches = launches;
  s.reps = static_cast<std::int64_t>(samples.size());
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  const std::size_t n = samples.size();
  s.min_ns = samples.front();
  s.max_ns = samples.back();
  const TimeNs lo = samples[(n - 1) / 2], hi = samples[n / 2];
  s.median_ns = lo + (hi - lo + 1) / 2;  // mean of the middle two, rounded half up, without overflow
  return s;
}

const ProfileEntry* Profile::find(const std::string& signature) const {
  for (const auto& e : ops)
    if (e.signature == signature) return &e;
  return nullptr;
}

std::string utc_now_iso8601() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// ------------------------------------------------------------------------------ writing

namespace {

void put_if(json& j, const char* key, const std::string& v) {
  if (!v.empty()) j[key] = v;
}
void put_if(json& j, const char* key, int v) {
  if (v != 0) j[key] = v;
}

json device_to_json(const DeviceInfo& d) {
  json j = json::object();
  j["name"] = d.name;
  j["kind"] = d.kind;
  put_if(j, "compute_capability", d.compute_capability);
  put_if(j, "driver", d.driver);
  put_if(j, "cuda", d.cuda);
  put_if(j, "cudnn", d.cudnn);
  put_if(j, "cublas", d.cublas);
  put_if(j, "onednn", d.onednn);
  put_if(j, "sm_clock_mhz", d.sm_clock_mhz);
  put_if(j, "mem_clock_mhz", d.mem_clock_mhz);
  put_if(j, "host", d.host);
  put_if(j, "threads", d.threads);
  return j;
}

json entry_to_json(const ProfileEntry& e) {
  json j = json::object();
  j["names"] = e.names;
  j["kind"] = e.kind;
  j["signature"] = e.signature;
  if (!e.batch_key.empty()) j["batch_key"] = e.batch_key;
  if (e.batch > 0) j["batch"] = e.batch;
  json phases = json::object();
  for (Phase p : kPhases) {
    if (!e.has(p)) continue;
    const PhaseStats& s = e.phase(p);
    phases[phase_key(p)] = {{"min_ns", s.min_ns},
                            {"median_ns", s.median_ns},
                            {"max_ns", s.max_ns},
                            {"launches", s.launches},
                            {"reps", s.reps}};
  }
  j["phases"] = phases;
  if (!e.note.empty()) j["note"] = e.note;
  return j;
}

json link_to_json(const LinkCurve& l) {
  json j = json::object();
  j["kind"] = l.kind;
  j["src"] = l.src;
  j["dst"] = l.dst;
  put_if(j, "collective", l.collective);
  put_if(j, "ranks", l.ranks);
  json pts = json::array();
  for (const auto& p : l.points)
    pts.push_back({{"bytes", p.bytes}, {"time_ns", p.time_ns}, {"algbw", p.algbw}, {"busbw", p.busbw}});
  j["points"] = pts;
  json fit = json::array();
  for (const auto& s : l.fit.segments)
    fit.push_back(
        {{"min_bytes", s.min_bytes}, {"max_bytes", s.max_bytes}, {"alpha_ns", s.alpha_ns}, {"beta_gbps", s.beta_gbps}});
  j["fit"] = fit;
  return j;
}

}  // namespace

json to_json(const Profile& p) {
  json j = json::object();
  j["schema"] = kProfileSchema;
  j["created"] = p.created;
  j["command"] = p.command;
  j["backend"] = p.backend;
  j["source"] = to_string(p.source);
  j["device"] = device_to_json(p.device);
  j["model"] = p.model;
  j["batch"] = p.batch;
  j["dtype"] = models::to_string(p.dtype);
  j["optimizer"] = to_string(p.optimizer);
  j["repetitions"] = p.repetitions;
  j["warmup"] = p.warmup;
  json ops = json::array();
  for (const auto& e : p.ops) ops.push_back(entry_to_json(e));
  j["ops"] = ops;
  if (!p.links.empty()) {
    json links = json::array();
    for (const auto& l : p.links) links.push_back(link_to_json(l));
    j["links"] = links;
  }
  return j;
}

// ------------------------------------------------------------------------------ reading

namespace {

std::string optional_string(const JsonField& f, const std::string& key) {
  auto v = f.find(key);
  return v ? v->as_string() : std::string();
}

int optional_int(const JsonField& f, const std::string& key, std::int64_t max) {
  auto v = f.find(key);
  return v ? static_cast<int>(v->as_int(0, max)) : 0;
}

DeviceInfo device_from_json(const JsonField& f) {
  if (!f.is_object()) f.fail("an object");
  DeviceInfo d;
  d.name = f.at("name").as_string();
  d.kind = f.at("kind").as_string();
  if (d.kind.empty()) f.at("kind").fail("a non-empty device kind");
  d.compute_capability = optional_string(f, "compute_capability");
  d.driver = optional_string(f, "driver");
  d.cuda = optional_string(f, "cuda");
  d.cudnn = optional_string(f, "cudnn");
  d.cublas = optional_string(f, "cublas");
  d.onednn = optional_string(f, "onednn");
  d.sm_clock_mhz = optional_int(f, "sm_clock_mhz", 100'000);
  d.mem_clock_mhz = optional_int(f, "mem_clock_mhz", 100'000);
  d.host = optional_string(f, "host");
  d.threads = optional_int(f, "threads", 1 << 20);
  return d;
}

PhaseStats phase_from_json(const JsonField& f) {
  if (!f.is_object()) f.fail("an object with min_ns, median_ns, max_ns, launches, reps");
  PhaseStats s;
  s.min_ns = f.at("min_ns").as_int(0);
  s.median_ns = f.at("median_ns").as_int(0);
  s.max_ns = f.at("max_ns").as_int(0);
  s.launches = f.at("launches").as_int(0);
  s.reps = f.at("reps").as_int(1);
  if (s.min_ns > s.median_ns || s.median_ns > s.max_ns)
    throw InputError(f.file() + ": " + f.path() + ": expected min_ns <= median_ns <= max_ns, found " +
                     std::to_string(s.min_ns) + ", " + std::to_string(s.median_ns) + ", " + std::to_string(s.max_ns));
  return s;
}

ProfileEntry entry_from_json(const JsonField& f) {
  if (!f.is_object()) f.fail("an object");
  ProfileEntry e;
  const JsonField names = f.at("names");
  for (const auto& n : names.items_of_array()) e.names.push_back(n.as_string());
  if (e.names.empty()) names.fail("a non-empty array of op names");
  e.kind = f.at("kind").as_string();
  e.signature = f.at("signature").as_string();
  if (e.signature.empty()) f.at("signature").fail("a non-empty signature");
  e.batch_key = optional_string(f, "batch_key");
  if (auto b = f.find("batch")) e.batch = b->as_int(0);
  const JsonField phases = f.at("phases");
  if (!phases.is_object()) phases.fail("an object keyed by fwd, bwd_data, bwd_weight, update");
  for (const auto& [key, value] : phases.raw().items()) {
    const JsonField pf(value, phases.file(), phases.path() + "." + key);
    const auto phase = parse_phase_key(key);
    if (!phase)
      throw InputError(pf.file() + ": " + pf.path() + ": unknown phase \"" + key +
                       "\"; expected fwd, bwd_data, bwd_weight or update");
    e.set(*phase, phase_from_json(pf));
  }
  e.note = optional_string(f, "note");
  return e;
}

LinkCurve link_from_json(const JsonField& f) {
  if (!f.is_object()) f.fail("an object");
  LinkCurve l;
  l.kind = f.at("kind").as_string();
  l.src = static_cast<int>(f.at("src").as_int(0, 1 << 20));
  l.dst = static_cast<int>(f.at("dst").as_int(0, 1 << 20));
  l.collective = optional_string(f, "collective");
  l.ranks = optional_int(f, "ranks", 1 << 20);
  for (const auto& pf : f.at("points").items_of_array()) {
    if (!pf.is_object()) pf.fail("an object with bytes, time_ns, algbw, busbw");
    LinkPoint p;
    p.bytes = pf.at("bytes").as_int(0);
    p.time_ns = pf.at("time_ns").as_int(0);
    p.algbw = pf.at("algbw").as_double(0);
    p.busbw = pf.at("busbw").as_double(0);
    l.points.push_back(p);
  }
  Bytes next_min = 0;
  for (const auto& sf : f.at("fit").items_of_array()) {
    if (!sf.is_object()) sf.fail("an object with min_bytes, max_bytes, alpha_ns, beta_gbps");
    AlphaBetaSegment s;
    s.min_bytes = sf.at("min_bytes").as_int(0);
    s.max_bytes = sf.at("max_bytes").as_int(s.min_bytes);
    s.alpha_ns = sf.at("alpha_ns").as_double(0);
    s.beta_gbps = sf.at("beta_gbps").as_double(0);
    if (!(s.beta_gbps > 0)) sf.at("beta_gbps").fail("a positive bandwidth in GB/s");
    if (!l.fit.segments.empty() && l.fit.segments.back().max_bytes == INT64_MAX)
      sf.fail("no further segment (the one before already ends at the largest size)");
    if (s.min_bytes != next_min)
      sf.at("min_bytes").fail("segments sorted and contiguous, this one starting at " + std::to_string(next_min));
    next_min = s.max_bytes == INT64_MAX ? INT64_MAX : s.max_bytes + 1;  // the last possible segment ends there
    l.fit.segments.push_back(s);
  }
  return l;
}

}  // namespace

Profile profile_from_json(const json& j, const std::string& origin) {
  const JsonField root(j, origin, "$");
  root.expect_schema(kProfileSchema);
  Profile p;
  p.created = root.at("created").as_string();
  p.command = root.at("command").as_string();
  p.backend = root.at("backend").as_string();
  const JsonField source = root.at("source");
  const auto src = parse_cost_source(source.as_string());
  if (!src) source.fail("one of measured-gpu, measured-cpu, imported, measured-scaled, roofline");
  p.source = *src;
  p.device = device_from_json(root.at("device"));
  p.model = root.at("model").as_string();
  p.batch = root.at("batch").as_int(0);
  const JsonField dtype = root.at("dtype");
  const auto dt = models::parse_dtype(dtype.as_string());
  // fp8 is a modelled precision (FP8 matmuls in bf16 models): nothing measures it.
  if (!dt || *dt == models::DType::FP8) dtype.fail("fp32, fp16 or bf16");
  p.dtype = *dt;
  const JsonField opt = root.at("optimizer");
  const std::string opt_name = opt.as_string();
  const std::optional<Optimizer> optimizer = parse_optimizer(opt_name);
  if (!optimizer) opt.fail("sgd, momentum or adam");
  p.optimizer = *optimizer;
  p.repetitions = root.at("repetitions").as_int(0);
  p.warmup = root.at("warmup").as_int(0);
  std::unordered_map<std::string, std::string> seen;  // signature -> path of first entry
  for (const auto& ef : root.at("ops").items_of_array()) {
    ProfileEntry e = entry_from_json(ef);
    auto [it, fresh] = seen.emplace(e.signature, ef.path());
    if (!fresh)
      throw InputError(origin + ": " + ef.path() + ".signature: duplicate signature \"" + e.signature +
                       "\" (first at " + it->second + ")");
    p.ops.push_back(std::move(e));
  }
  if (auto links = root.find("links"))
    for (const auto& lf : links->items_of_array()) p.links.push_back(link_from_json(lf));
  return p;
}

Profile load_profile(const std::filesystem::path& path) {
  return profile_from_json(read_json_file(path), path.string());
}

void save_profile(const Profile& p, const std::filesystem::path& path) {
  write_file_atomic(path, dump_json(to_json(p)));
}

}  // namespace parasim::profiler
