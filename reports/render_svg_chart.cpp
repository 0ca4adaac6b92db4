// Inline SVG charts (no scripts, no external references): line / bar / histogram on linear axes.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "reports/render.h"

namespace kvaudit::reports {
namespace {

std::string esc(const std::string& s) { return html_escape(s); }

constexpr double kWidth = 640, kHeight = 300, kLeft = 60, kRight = 150, kTop = 30, kBottom = 45;
const char* kColours[] = {"#1b6ca8", "#d1495b", "#2e933c", "#edae49", "#6a4c93", "#00798c", "#8d6a3f", "#444444"};

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

}  // namespace

std::string render_svg_chart(const nlohmann::json& chart) {
  double xmin = std::numeric_limits<double>::infinity(), xmax = -xmin, ymin = 0, ymax = -xmin;
  for (const auto& s : chart["series"])
    for (const auto& p : s["points"]) {
      xmin = std::min(xmin, p[0].get<double>());
      xmax = std::max(xmax, p[0].get<double>());
      ymin = std::min(ymin, p[p.size() == 4 ? 2 : 1].get<double>());
      ymax = std::max(ymax, p[p.size() == 4 ? 3 : 1].get<double>());
    }
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" role=\"img\" width=\"" << kWidth << "\" height=\"" << kHeight
      << "\" viewBox=\"0 0 " << kWidth << " " << kHeight << "\">";
  svg << "<title>" << esc(chart["title"].get<std::string>()) << "</title>";
  svg << "<text x=\"" << kWidth / 2 << "\" y=\"18\" text-anchor=\"middle\" font-size=\"14\">" << esc(chart["title"].get<std::string>()) << "</text>";
  if (!std::isfinite(xmin)) {
    svg << "<text x=\"" << kWidth / 2 << "\" y=\"" << kHeight / 2 << "\" text-anchor=\"middle\">no data</text></svg>";
    return svg.str();
  }
  if (xmax == xmin) xmax = xmin + 1;
  if (ymax <= ymin) ymax = ymin + 1;
  const double pw = kWidth - kLeft - kRight, ph = kHeight - kTop - kBottom;
  auto X = [&](double x) { return kLeft + (x - xmin) / (xmax - xmin) * pw; };
  auto Y = [&](double y) { return kTop + ph - (y - ymin) / (ymax - ymin) * ph; };
  svg << "<g stroke=\"#999\" stroke-width=\"1\"><line x1=\"" << kLeft << "\" y1=\"" << kTop + ph << "\" x2=\"" << kLeft + pw
      << "\" y2=\"" << kTop + ph << "\"/><line x1=\"" << kLeft << "\" y1=\"" << kTop << "\" x2=\"" << kLeft << "\" y2=\"" << kTop + ph << "\"/></g>";
  svg << "<g font-size=\"10\" fill=\"#333\">";
  for (int i = 0; i <= 4; ++i) {
    double xv = xmin + (xmax - xmin) * i / 4, yv = ymin + (ymax - ymin) * i / 4;
    svg << "<text x=\"" << X(xv) << "\" y=\"" << kTop + ph + 14 << "\" text-anchor=\"middle\">" << num(xv) << "</text>";
    svg << "<text x=\"" << kLeft - 4 << "\" y=\"" << Y(yv) + 3 << "\" text-anchor=\"end\">" << num(yv) << "</text>";
  }
  svg << "<text x=\"" << kLeft + pw / 2 << "\" y=\"" << kHeight - 8 << "\" text-anchor=\"middle\">" << esc(chart.value("x_label", "")) << "</text>";
  svg << "<text x=\"12\" y=\"" << kTop + ph / 2 << "\" transform=\"rotate(-90 12 " << kTop + ph / 2 << ")\" text-anchor=\"middle\">"
      << esc(chart.value("y_label", "")) << "</text></g>";

  const std::string kind = chart["kind"].get<std::string>();
  const std::size_t n_series = chart["series"].size();
  std::size_t si = 0;
  for (const auto& s : chart["series"]) {
    const char* colour = kColours[si % 8];
    const auto& pts = s["points"];
    if (kind == "line") {
      svg << "<polyline fill=\"none\" stroke=\"" << colour << "\" stroke-width=\"2\" points=\"";
      for (const auto& p : pts) svg << X(p[0].get<double>()) << "," << Y(p[1].get<double>()) << " ";
      svg << "\"/>";
      for (const auto& p : pts) {
        svg << "<circle cx=\"" << X(p[0].get<double>()) << "\" cy=\"" << Y(p[1].get<double>()) << "\" r=\"2.5\" fill=\"" << colour << "\"/>";
        if (p.size() == 4) {  // an interval bar, nudged sideways per series so that overlapping bars stay apart
          const double x = X(p[0].get<double>()) + 3.0 * (static_cast<double>(si) - static_cast<double>(n_series - 1) / 2);
          svg << "<line x1=\"" << x << "\" y1=\"" << Y(p[2].get<double>()) << "\" x2=\"" << x << "\" y2=\"" << Y(p[3].get<double>())
              << "\" stroke=\"" << colour << "\" stroke-width=\"1\" stroke-opacity=\"0.7\"/>";
        }
      }
    } else {  // bar and histogram: bars centred on x, series side by side
      double slot = pw / std::max<std::size_t>(pts.size(), 1) * 0.8;
      double bar = slot / static_cast<double>(n_series);
      for (const auto& p : pts) {
        double x = X(p[0].get<double>()) - slot / 2 + bar * static_cast<double>(si);
        double y0 = Y(0), y1 = Y(p[1].get<double>());
        svg << "<rect x=\"" << x << "\" y=\"" << std::min(y0, y1) << "\" width=\"" << std::max(bar, 1.0) << "\" height=\""
            << std::abs(y0 - y1) << "\" fill=\"" << colour << "\"><title>" << esc(s["name"].get<std::string>()) << ": "
            << num(p[0].get<double>()) << " -> " << num(p[1].get<double>()) << "</title></rect>";
      }
    }
    svg << "<rect x=\"" << kWidth - kRight + 10 << "\" y=\"" << kTop + 14 * si << "\" width=\"10\" height=\"10\" fill=\"" << colour << "\"/>";
    svg << "<text x=\"" << kWidth - kRight + 24 << "\" y=\"" << kTop + 9 + 14 * si << "\" font-size=\"10\">" << esc(s["name"].get<std::string>()) << "</text>";
    ++si;
  }
  svg << "</svg>";
  return svg.str();
}

}  // namespace kvaudit::reports
