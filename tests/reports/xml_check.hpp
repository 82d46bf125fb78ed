// A minimal XML well-formedness check for what gnuplot and the report write: tags balance,
// attributes are quoted, entities are known or numeric, comments/CDATA/PIs/doctype are skipped.
// Returns "" when well-formed, else what is wrong and where.
#pragma once

#include <cctype>
#include <string>
#include <string_view>
#include <vector>

namespace parasim::reports::fixtures {

inline std::string xml_problem(std::string_view s) {
  std::vector<std::string> open;
  std::size_t i = 0;
  auto where = [&](std::size_t at) { return " at byte " + std::to_string(at); };
  while (i < s.size()) {
    if (s[i] == '&') {
      const std::size_t semi = s.find(';', i);
      if (semi == std::string_view::npos || semi - i > 10) return "bare '&'" + where(i);
      const std::string_view ent = s.substr(i + 1, semi - i - 1);
      if (!(ent == "amp" || ent == "lt" || ent == "gt" || ent == "quot" || ent == "apos" || ent.starts_with("#")))
        return "unknown entity &" + std::string(ent) + ";" + where(i);
      i = semi + 1;
      continue;
    }
    if (s[i] != '<') {
      ++i;
      continue;
    }
    if (s.substr(i, 4) == "<!--") {
      const std::size_t end = s.find("-->", i);
      if (end == std::string_view::npos) return "unterminated comment" + where(i);
      i = end + 3;
      continue;
    }
    if (s.substr(i, 9) == "<![CDATA[") {
      const std::size_t end = s.find("]]>", i);
      if (end == std::string_view::npos) return "unterminated CDATA" + where(i);
      i = end + 3;
      continue;
    }
    if (s.substr(i, 2) == "<?" || s.substr(i, 2) == "<!") {
      const std::size_t end = s.find('>', i);
      if (end == std::string_view::npos) return "unterminated declaration" + where(i);
      i = end + 1;
      continue;
    }
    const bool closing = i + 1 < s.size() && s[i + 1] == '/';
    std::size_t j = i + (closing ? 2 : 1);
    const std::size_t name_start = j;
    while (j < s.size() &&
           (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == ':' || s[j] == '-' || s[j] == '_'))
      ++j;
    const std::string name(s.substr(name_start, j - name_start));
    if (name.empty()) return "'<' not starting a tag" + where(i);
    // Attributes: name="value" or name='value'.
    bool self_closing = false;
    for (;;) {
      while (j < s.size() && std::isspace(static_cast<unsigned char>(s[j]))) ++j;
      if (j >= s.size()) return "unterminated tag <" + name + where(i);
      if (s[j] == '>') {
        ++j;
        break;
      }
      if (s[j] == '/' && j + 1 < s.size() && s[j + 1] == '>') {
        self_closing = true;
        j += 2;
        break;
      }
      if (closing) return "attributes in closing tag </" + name + where(i);
      const std::size_t attr = j;
      while (j < s.size() && s[j] != '=' && !std::isspace(static_cast<unsigned char>(s[j])) && s[j] != '>') ++j;
      const std::size_t name_end = j;
      while (j < s.size() && std::isspace(static_cast<unsigned char>(s[j]))) ++j;  // XML allows "a = 'v'"
      if (name_end == attr || j >= s.size() || s[j] != '=') return "attribute without value in <" + name + where(attr);
      ++j;
      while (j < s.size() && std::isspace(static_cast<unsigned char>(s[j]))) ++j;
      if (j >= s.size() || (s[j] != '"' && s[j] != '\'')) return "unquoted attribute in <" + name + where(attr);
      const char q = s[j];
      const std::size_t end = s.find(q, j + 1);
      if (end == std::string_view::npos) return "unterminated attribute in <" + name + where(attr);
      if (s.substr(j + 1, end - j - 1).find('<') != std::string_view::npos) return "'<' in attribute" + where(attr);
      j = end + 1;
    }
    if (closing) {
      if (open.empty() || open.back() != name)
        return "</" + name + "> does not close <" + (open.empty() ? std::string("nothing") : open.back()) + ">" +
               where(i);
      open.pop_back();
    } else if (!self_closing) {
      open.push_back(name);
      if (name == "style" || name == "script") {  // raw text up to the closing tag
        const std::size_t end = s.find("</" + name, j);
        if (end == std::string_view::npos) return "unterminated <" + name + ">" + where(i);
        j = end;
      }
    }
    i = j;
  }
  if (!open.empty()) return "<" + open.back() + "> never closed";
  return "";
}

}  // namespace parasim::reports::fixtures
