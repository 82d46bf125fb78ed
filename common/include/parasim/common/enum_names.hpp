// Enum <-> name through one table per enum, indexed by the enum's value: the to_string and
// parse_x pairs of common/ and simulator/ share these two loops.
//
// Example:
//   constexpr std::array<std::string_view, 2> kNames{"ring", "tree"};
//   std::string_view s = enum_name(Algo::Tree, kNames);              // "tree"
//   std::optional<Algo> a = parse_enum_name<Algo>("ring", kNames);   // Algo::Ring
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

namespace parasim {

/// names[e]; "?" for a value outside the table.
template <typename E, std::size_t N>
std::string_view enum_name(E e, const std::array<std::string_view, N>& names) {
  const auto i = static_cast<std::size_t>(e);
  return i < N ? names[i] : std::string_view("?");
}

/// The enum whose name is `s`; nullopt for anything else.
template <typename E, std::size_t N>
std::optional<E> parse_enum_name(std::string_view s, const std::array<std::string_view, N>& names) {
  for (std::size_t i = 0; i < N; ++i)
    if (names[i] == s) return static_cast<E>(i);
  return std::nullopt;
}

}  // namespace parasim
