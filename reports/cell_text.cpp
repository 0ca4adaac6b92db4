// Table cells: the same text in Markdown and HTML, so the two renderings agree.
#include <cmath>
#include <cstdio>

#include "reports/render.h"

namespace kvaudit::reports {

std::string cell_text(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "-";
  if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
  if (v.is_number_integer() || v.is_number_unsigned()) return v.dump();
  if (v.is_number_float()) {
    double d = v.get<double>();
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", d);
    return buf;
  }
  return v.dump();
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string render_json(const nlohmann::json& report) { return report.dump(2) + "\n"; }

}  // namespace kvaudit::reports
