#include "parasim/hardware/cuda_device_name.hpp"

#include <algorithm>
#include <cctype>
#include <vector>

#include "parasim/hardware/device_spec.hpp"

namespace parasim::hardware {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::vector<std::string> split_words(const std::string& s) {
  std::vector<std::string> words;
  std::string word;
  for (char c : s) {
    if (c == ' ' || c == '\t' || c == '-' || c == '_' || c == '(' || c == ')' || c == ',') {
      if (!word.empty()) words.push_back(std::move(word));
      word.clear();
    } else {
      word += c;
    }
  }
  if (!word.empty()) words.push_back(std::move(word));
  return words;
}

bool is_vendor_word(const std::string& w) {
  return w == "nvidia" || w == "tesla" || w == "geforce" || w == "quadro" || w == "rtx";
}

}  // namespace

std::string device_kind_from_cuda_name(const std::string& cuda_device_name) {
  std::vector<std::string> words;
  for (auto& w : split_words(lower(cuda_device_name)))
    if (!is_vendor_word(w)) words.push_back(std::move(w));

  // 1. The name without the vendor prefix may already be a canonical kind: "V100-SXM2-16GB".
  std::string dashed;
  for (const auto& w : words) dashed += (dashed.empty() ? "" : "-") + w;
  if (auto spec = find_device_spec(dashed)) return spec->kind;
  // 2. Otherwise the longest run of leading words that is a known alias: "titan x pascal" ->
  //    "titanxpascal", "h100 80gb hbm3" -> "h100", "h200" -> "h200". A form factor the run drops
  //    ("h100 pcie" -> "h100") is another part with other specs: no match rather than the SXM's.
  auto is_form_factor = [](const std::string& w) { return w == "pcie" || w == "nvl" || w == "sxm" || w == "pci"; };
  for (std::size_t n = words.size(); n > 0; --n) {
    std::string joined;
    for (std::size_t i = 0; i < n; ++i) joined += words[i];
    if (std::any_of(words.begin() + static_cast<std::ptrdiff_t>(n), words.end(), is_form_factor)) continue;
    if (auto spec = find_device_spec(joined)) return spec->kind;
  }
  // 3. Unknown GPU: keep the name, recognizably CUDA, with no spaces.
  std::string kind = "cuda";
  for (const auto& w : split_words(cuda_device_name)) kind += "-" + w;
  return kind;
}

}  // namespace parasim::hardware
