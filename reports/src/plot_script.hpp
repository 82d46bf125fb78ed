// Shared pieces of the generated gnuplot scripts: quoting, the colour-blind-safe palette,
// the preamble that makes a script runnable by hand, and the footer that renders PNG + SVG.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace parasim::reports::detail {

/// A gnuplot double-quoted string literal: backslashes, quotes and newlines escaped.
std::string gp_quote(std::string_view text);
/// A number as gnuplot reads it back exactly (shortest round trip, always with a '.' or 'e'
/// so gnuplot does integer-free arithmetic with it).
std::string gp_number(double v);
/// `array name[n] = ["a", "b"]` / `[1.5, 2]`.
std::string gp_string_array(std::string_view name, const std::vector<std::string>& items);
std::string gp_raw_array(std::string_view name, const std::vector<std::string>& items);

/// Okabe & Ito colour-blind-safe palette (Wong, Nature Methods 8:441, 2011), by role.
namespace colour {
inline constexpr std::string_view kBlue = "blue";  // variable names defined by the preamble
inline constexpr std::string_view kOrange = "orange";
inline constexpr std::string_view kSky = "sky_blue";
inline constexpr std::string_view kGreen = "bluish_green";
inline constexpr std::string_view kYellow = "yellow";
inline constexpr std::string_view kVermillion = "vermillion";
inline constexpr std::string_view kPurple = "reddish_purple";
inline constexpr std::string_view kGrey = "grey";
inline constexpr std::string_view kLightGrey = "light_grey";
inline constexpr std::string_view kBlack = "black";
}  // namespace colour

struct ScriptHeader {
  std::string stem;                     // time_to_train
  std::string title;                    // first comment line
  std::vector<std::string> data_files;  // read by the script
  std::vector<std::string> columns;     // "scaling.csv: series_index, gpus, ..." lines
};

/// Comment header, output-name variables, CSV settings, palette, base style.
std::string script_preamble(const ScriptHeader& h);
/// Sets the PNG terminal, runs `plot_command`, then replots it to SVG.
std::string script_render(int width, int height, const std::string& plot_command);

/// A time/size axis unit chosen so the largest value reads as 1..1000-ish.
struct AxisUnit {
  double divisor = 1;   // value / divisor is what is drawn
  std::string name;     // "ms", "hours", "GiB"
};
AxisUnit time_unit_for_seconds(double max_seconds);  // s, minutes, hours, days
AxisUnit time_unit_for_ms(double max_ms);            // us, ms, s
AxisUnit time_unit_for_ns(double max_ns);            // us, ms, s
AxisUnit byte_unit_for(double max_bytes);            // MiB or GiB

/// Tics at 1-2-5 x 10^k inside [lo, hi] ("(0.1, 0.2, 0.5, 1)"): a log axis with more than
/// one labelled decade tic. Decades only when that would be more than 12 tics.
std::string log_tics(double lo, double hi);

/// Breaks a strategy label after commas and at spaces into lines of about `width` characters,
/// so bar labels stay horizontal: "dp=4,mp=2,schedule=1f1b,micro=4" -> "dp=4,mp=2,\nschedule=1f1b,\nmicro=4".
std::string wrap_label(std::string_view label, std::size_t width = 16);
/// Number of lines in a wrapped label.
int line_count(std::string_view text);

/// A bar label to be turned by 45 degrees: wrapped after commas into lines of about 28
/// characters, so that long strategies ("dp=256,mp=4,schedule=interleaved,micro=4,...") stay
/// inside the picture.
std::string rotated_label(std::string_view label);
/// `set bmargin` / `set lmargin` for the given turned 9 pt labels (as rotated_label() makes
/// them): room below for the longest line and, on the left, for labels reaching left of the
/// first bars. gnuplot's own estimate comes out short for turned text.
std::string rotated_label_margins(const std::vector<std::string>& labels);

/// A value with 3 significant digits for titles and labels: "1.23", "45.6", "789", "1234".
std::string short_number(double v);

}  // namespace parasim::reports::detail
