#include <string>

#include "parasim/reports/report_pages.hpp"

namespace parasim::reports {

namespace {

/// Rewrites `<marker><quote>#?NAME<quote>`-style references: after each occurrence of `marker`
/// (e.g. "id=", "href=", "url(") the name that follows gets `prefix` in front of it.
std::string prefix_after(std::string_view text, std::string_view marker, std::string_view prefix, bool hash) {
  std::string out;
  out.reserve(text.size() + 64);
  std::size_t pos = 0;
  while (true) {
    const std::size_t hit = text.find(marker, pos);
    if (hit == std::string_view::npos) break;
    std::size_t name = hit + marker.size();
    // id='x' / id="x" / url(#x): skip one quote, then the '#' of a reference.
    if (name < text.size() && (text[name] == '"' || text[name] == '\'')) ++name;
    const bool has_hash = name < text.size() && text[name] == '#';
    if (hash != has_hash) {  // "href=" without '#' points outside the document: leave it
      out.append(text.substr(pos, name - pos));
      pos = name;
      continue;
    }
    if (has_hash) ++name;
    out.append(text.substr(pos, name - pos));
    out.append(prefix);
    pos = name;
  }
  out.append(text.substr(pos));
  return out;
}

}  // namespace

std::string inline_svg(std::string_view svg, std::string_view id_prefix, std::string_view title) {
  const std::size_t root = svg.find("<svg");
  if (root == std::string_view::npos) return {};
  std::string s(svg.substr(root));
  // A space before "id=" so that attributes merely ending in "id" are not touched.
  s = prefix_after(s, " id=", id_prefix, false);
  s = prefix_after(s, "\tid=", id_prefix, false);
  s = prefix_after(s, "href=", id_prefix, true);
  s = prefix_after(s, "url(", id_prefix, true);
  const std::size_t t0 = s.find("<title>");
  const std::size_t t1 = s.find("</title>");
  if (t0 != std::string::npos && t1 != std::string::npos && t1 > t0)
    s.replace(t0, t1 - t0, "<title>" + html_escape(title));
  s.insert(4, " class=\"plot\" role=\"img\" aria-label=\"" + html_escape(title) + "\"");
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace parasim::reports
