// HTML escaping, inlining gnuplot SVG next to others, and the Markdown summary.
#include <gtest/gtest.h>

#include "parasim/reports/report_pages.hpp"
#include "sample_data.hpp"
#include "xml_check.hpp"

namespace {

using namespace parasim::reports;

TEST(Pages, HtmlEscapeCoversMarkupAndQuotes) {
  EXPECT_EQ(html_escape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
}

TEST(Pages, InlineSvgDropsPrologAndPrefixesIds) {
  const std::string svg =
      "<?xml version=\"1.0\" encoding=\"utf-8\"  standalone=\"no\"?>\n<svg \n viewBox=\"0 0 10 10\"\n>\n"
      "<title>Gnuplot</title>\n<g id=\"gnuplot_canvas\">\n<defs>\n\t<path id='gpPt0' d='M0,0'/>\n"
      "\t<use xlink:href='#gpPt0' id='gpPt1'/>\n</defs>\n<rect fill=\"url(#grad)\" x=\"0\" y=\"0\" width=\"1\" "
      "height=\"1\"/>\n"
      "<a href=\"https://example.org\"><text>x</text></a>\n</g>\n</svg>\n";
  const std::string out = inline_svg(svg, "memory-", "Peak <memory>");
  EXPECT_EQ(out.rfind("<svg class=\"plot\" role=\"img\" aria-label=\"Peak &lt;memory&gt;\"", 0), 0u) << out;
  EXPECT_NE(out.find("id=\"memory-gnuplot_canvas\""), std::string::npos) << out;
  EXPECT_NE(out.find("id='memory-gpPt0'"), std::string::npos) << out;
  EXPECT_NE(out.find("xlink:href='#memory-gpPt0' id='memory-gpPt1'"), std::string::npos) << out;
  EXPECT_NE(out.find("url(#memory-grad)"), std::string::npos) << out;
  EXPECT_NE(out.find("href=\"https://example.org\""), std::string::npos) << out;  // external links untouched
  EXPECT_NE(out.find("<title>Peak &lt;memory&gt;</title>"), std::string::npos) << out;
  EXPECT_EQ(fixtures::xml_problem(out), "");
}

TEST(Pages, MarkdownHasTablesAndEscapesPipes) {
  ReportData d = fixtures::sample_report();
  d.breakdown[0].strategy = "a|b";
  std::vector<ReportFigure> figs;
  for (PlotSpec& p : build_plots(d)) figs.push_back({std::move(p), "", true});
  const std::string md = render_markdown(d, figs, {"a note"});
  EXPECT_NE(md.find("| assumption | value |"), std::string::npos);
  EXPECT_NE(md.find("| a\\|b |"), std::string::npos);
  EXPECT_NE(md.find("![Time to train vs number of GPUs](time_to_train.png)"), std::string::npos);
  EXPECT_NE(md.find("> a note"), std::string::npos);
  EXPECT_NE(md.find("| 8 | 14.35 h | 13.92 h | dp=4,mp=2,schedule=1f1b,micro=4 | +3.00 % |"), std::string::npos)
      << md;  // DP vs best hybrid per GPU count
}

TEST(Pages, XmlCheckCatchesBrokenMarkup) {
  EXPECT_NE(fixtures::xml_problem("<a><b></a></b>"), "");
  EXPECT_NE(fixtures::xml_problem("<a x=1></a>"), "");
  EXPECT_NE(fixtures::xml_problem("<a>&nbsp;</a>"), "");
  EXPECT_NE(fixtures::xml_problem("<a>"), "");
  EXPECT_EQ(fixtures::xml_problem("<?xml version='1.0'?><!DOCTYPE x><a k='v'><b/>&amp;<!-- c --></a>"), "");
}

}  // namespace
