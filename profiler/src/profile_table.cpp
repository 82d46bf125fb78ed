#include "parasim/profiler/profile_table.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace parasim::profiler {

namespace {

std::string op_label(const ProfileEntry& e) {
  std::string s = e.names.empty() ? e.signature : e.names.front();
  if (e.names.size() > 1) s += " (+" + std::to_string(e.names.size() - 1) + ")";
  return s;
}

std::string clip(const std::string& s, std::size_t width) {
  return s.size() <= width ? s : s.substr(0, width - 3) + "...";
}

std::string percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * fraction);
  return buf;
}

struct Row {
  std::vector<std::string> cells;
};

std::string layout(const std::vector<std::string>& header, const std::vector<Row>& rows,
                   const std::vector<bool>& right) {
  std::vector<std::size_t> width(header.size());
  for (std::size_t c = 0; c < header.size(); ++c) width[c] = header[c].size();
  for (const Row& r : rows)
    for (std::size_t c = 0; c < r.cells.size(); ++c) width[c] = std::max(width[c], r.cells[c].size());
  std::ostringstream out;
  auto line = [&](const std::vector<std::string>& cells) {
    std::string l;
    for (std::size_t c = 0; c < cells.size(); ++c) {
      const std::string pad(width[c] - cells[c].size(), ' ');
      l += right[c] ? pad + cells[c] : cells[c] + (c + 1 < cells.size() ? pad : "");
      if (c + 1 < cells.size()) l += "  ";
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    out << l << "\n";
  };
  line(header);
  std::size_t total_width = 0;
  for (std::size_t w : width) total_width += w + 2;
  out << std::string(total_width - 2, '-') << "\n";
  for (const Row& r : rows) line(r.cells);
  return out.str();
}

}  // namespace

namespace {

/// a + b * count, saturating at INT64_MAX: `profile show` must survive any file the loader accepts.
TimeNs add_scaled(TimeNs a, TimeNs b, std::int64_t count) {
  TimeNs product = 0, sum = 0;
  if (__builtin_mul_overflow(b, count, &product) || __builtin_add_overflow(a, product, &sum)) return INT64_MAX;
  return sum;
}

}  // namespace

ProfileTotals profile_totals(const Profile& p) {
  ProfileTotals t;
  for (const auto& e : p.ops) {
    ++t.entries;
    const auto count = static_cast<std::int64_t>(std::max<std::size_t>(e.names.size(), 1));
    t.ops += count;
    bool any = false;
    for (Phase ph : kPhases) {
      if (!e.has(ph)) continue;
      any = true;
      auto& total = t.per_phase[phase_index(ph)];
      total = add_scaled(total, e.phase(ph).median_ns, count);
    }
    if (!any) ++t.unmeasured;
  }
  return t;
}

TimeNs ProfileTotals::total() const {
  TimeNs sum = 0;
  for (TimeNs t : per_phase) sum = add_scaled(sum, t, 1);
  return sum;
}

std::string render_profile_table(const Profile& p) {
  std::ostringstream out;
  out << "profile: " << (p.model.empty() ? std::string("(no model)") : p.model);
  if (p.batch > 0) out << " b" << p.batch;
  out << " " << models::to_string(p.dtype) << " on " << p.device.name << " (" << p.device.kind << ")\n";
  out << "backend " << p.backend << " (" << to_string(p.source) << "), " << p.repetitions << " repetitions after "
      << p.warmup << " warm-up, optimizer " << to_string(p.optimizer) << ", created " << p.created << "\n\n";

  std::vector<Row> rows;
  for (const auto& e : p.ops) {
    bool first = true;
    bool any = false;
    for (Phase ph : kPhases) {
      if (!e.has(ph)) continue;
      any = true;
      const PhaseStats& s = e.phase(ph);
      rows.push_back({{first ? clip(op_label(e), 40) : "", first ? clip(e.kind, 16) : "", phase_key(ph),
                       format_time(s.min_ns), format_time(s.median_ns), format_time(s.max_ns), percent(s.spread()),
                       std::to_string(s.launches), first ? clip(e.note, 70) : ""}});
      first = false;
    }
    if (!any) rows.push_back({{clip(op_label(e), 40), clip(e.kind, 16), "-", "", "", "", "", "", clip(e.note, 70)}});
  }
  out << layout({"op", "kind", "phase", "min", "median", "max", "spread", "launches", "note"}, rows,
                {false, false, false, true, true, true, true, true, false});

  const ProfileTotals t = profile_totals(p);
  out << "\none iteration (median x ops sharing a signature, " << t.ops << " ops in " << t.entries << " signatures):";
  for (Phase ph : kPhases) out << "  " << phase_key(ph) << " " << format_time(t.per_phase[phase_index(ph)]);
  out << "  total " << format_time(t.total()) << "\n";
  if (t.unmeasured > 0)
    out << t.unmeasured << " signature(s) not measured (see their notes); their costs come from the roofline\n";
  if (!p.links.empty()) out << p.links.size() << " link curve(s)\n";
  return out.str();
}

nlohmann::json profile_table_json(const Profile& p) {
  nlohmann::json j = nlohmann::json::object();
  j["model"] = p.model;
  j["batch"] = p.batch;
  j["dtype"] = models::to_string(p.dtype);
  j["device"] = p.device.name;
  j["device_kind"] = p.device.kind;
  j["backend"] = p.backend;
  j["source"] = to_string(p.source);
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& e : p.ops)
    for (Phase ph : kPhases) {
      if (!e.has(ph)) continue;
      const PhaseStats& s = e.phase(ph);
      rows.push_back({{"op", e.names.empty() ? e.signature : e.names.front()},
                      {"ops", e.names.size()},
                      {"kind", e.kind},
                      {"signature", e.signature},
                      {"phase", phase_key(ph)},
                      {"min_ns", s.min_ns},
                      {"median_ns", s.median_ns},
                      {"max_ns", s.max_ns},
                      {"spread", s.spread()},
                      {"launches", s.launches},
                      {"note", e.note}});
    }
  j["rows"] = rows;
  const ProfileTotals t = profile_totals(p);
  nlohmann::json totals = nlohmann::json::object();
  for (Phase ph : kPhases) totals[phase_key(ph)] = t.per_phase[phase_index(ph)];
  totals["total"] = t.total();
  totals["ops"] = t.ops;
  totals["signatures"] = t.entries;
  totals["unmeasured"] = t.unmeasured;
  j["totals"] = totals;
  return j;
}

}  // namespace parasim::profiler
