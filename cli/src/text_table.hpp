// Aligned plain-text tables for the CLI's human-readable output.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace parasim::cli {

/// Prints `rows` as columns separated by two spaces, each as wide as its widest cell. Columns
/// flagged in `right` are right-aligned (numbers); the others are left-aligned, and the last
/// column of a row is never padded and no line ends in blanks. Rows may be shorter than `right`.
void print_table(std::ostream& out, const std::vector<std::vector<std::string>>& rows, const std::vector<bool>& right);

/// `v` with `decimals` digits after the point ("%.*f"), the cells' number format.
std::string fixed(double v, int decimals);
/// A signed percentage with one decimal ("+4.2%", "-0.3%"): the error cells of validate and calibrate.
std::string signed_percent(double v);

}  // namespace parasim::cli
