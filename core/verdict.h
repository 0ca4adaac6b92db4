// Verdicts, not bools: what a check concluded, with the rule it hit. Only Conforms is a pass.
#pragma once

#include <string>

namespace kvaudit {

enum class VerdictKind { Conforms, Violates, Inconclusive, NotRun, Unsupported };

struct Verdict {
  VerdictKind kind = VerdictKind::NotRun;
  std::string rule;     // stable rule id, e.g. "budget", "order", "rescue"; empty when Conforms
  std::string message;  // one line a human reads

  bool passed() const { return kind == VerdictKind::Conforms; }
  static Verdict conforms() { return {VerdictKind::Conforms, "", ""}; }
  static Verdict violates(std::string rule, std::string message) {
    return {VerdictKind::Violates, std::move(rule), std::move(message)};
  }
  static Verdict inconclusive(std::string why) { return {VerdictKind::Inconclusive, "", std::move(why)}; }
  static Verdict not_run(std::string why) { return {VerdictKind::NotRun, "", std::move(why)}; }
  static Verdict unsupported(std::string why) { return {VerdictKind::Unsupported, "", std::move(why)}; }
};

inline const char* to_string(VerdictKind k) {
  switch (k) {
    case VerdictKind::Conforms: return "conforms";
    case VerdictKind::Violates: return "violates";
    case VerdictKind::Inconclusive: return "inconclusive";
    case VerdictKind::NotRun: return "not-run";
    case VerdictKind::Unsupported: return "unsupported";
  }
  return "?";
}

}  // namespace kvaudit
