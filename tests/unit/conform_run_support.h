// Runs `kvaudit conform` as a subprocess for the conform tests: exit status, stdout JSON and stderr text.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

namespace conform_test {

struct CliRun {
  int exit_code = -1;
  std::string out, err;
  nlohmann::json report;  // stdout parsed, or null
};

inline std::string kvaudit_bin() {
  const char* bin = std::getenv("KVAUDIT_BIN");
  return bin ? bin : "build/kvaudit";
}

// Single quotes for /bin/sh.
inline std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

inline CliRun run_cli(const std::string& args) {
  static int counter = 0;
  std::string err_path = "/tmp/kvaudit_conform_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
  std::string cmd = quote(kvaudit_bin()) + " conform " + args + " 2>" + err_path;
  CliRun r;
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (!pipe) return r;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) r.out.append(buf, n);
  int status = ::pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream err(err_path);
  std::stringstream ss;
  ss << err.rdbuf();
  r.err = ss.str();
  std::remove(err_path.c_str());
  try {
    r.report = nlohmann::json::parse(r.out);
  } catch (const nlohmann::json::exception&) {
    r.report = nullptr;
  }
  return r;
}

}  // namespace conform_test
