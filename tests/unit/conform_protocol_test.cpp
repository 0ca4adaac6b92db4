// The conform protocol's failure modes: each must end in exit 2 naming what went wrong, never a pass.
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <spawn.h>
#include <sstream>
#include <sys/wait.h>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "audit/conform/impl_process.h"
#include "audit/conform/protocol.h"
#include "core/error.h"
#include "tests/unit/conform_run_support.h"

extern char** environ;

using conform_test::quote;
using conform_test::run_cli;
using namespace kvaudit::conform;

namespace {

std::string conform_args(const std::string& impl, const std::string& extra = "") {
  return "--method eg-chunkkv --cases 20 --seed 3 --impl " + quote(impl) + " " + extra;
}

void expect_protocol_error(const conform_test::CliRun& r, const std::string& kind, const std::string& detail) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("protocol error (" + kind + ")"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(detail), std::string::npos) << r.err;
  ASSERT_TRUE(r.report.is_object()) << r.out;
  EXPECT_EQ(r.report["verdict"], "protocol-error");
  EXPECT_EQ(r.report["protocol_error"]["kind"], kind);
  EXPECT_EQ(r.report["cases"]["conforming"], 0);
}

}  // namespace

TEST(ConformProtocol, ImplementationThatExitsIsReportedAsCrashWithItsStatusAndStderr) {
  auto r = run_cli(conform_args("read line; echo 'boom: index out of range' >&2; exit 3"));
  expect_protocol_error(r, "crashed", "exited with status 3");
  EXPECT_NE(r.err.find("boom: index out of range"), std::string::npos) << r.err;
}

TEST(ConformProtocol, MissingProgramIsReportedAsCrash) {
  auto r = run_cli(conform_args("/nonexistent/kvaudit-impl"));
  expect_protocol_error(r, "crashed", "status 127");
}

TEST(ConformProtocol, GarbageOutputIsBadJson) {
  auto r = run_cli(conform_args("while read l; do echo 'kept: 1 2 3'; done"));
  expect_protocol_error(r, "bad-json", "kept: 1 2 3");
}

TEST(ConformProtocol, WrongIdIsReported) {
  auto r = run_cli(conform_args("while read l; do echo '{\"id\": 4242, \"kept\": [0]}'; done"));
  expect_protocol_error(r, "wrong-id", "expected id 0, got 4242");
}

TEST(ConformProtocol, MissingKeptIsBadResponse) {
  auto r = run_cli(conform_args("while read l; do echo '{\"id\": 0}'; done"));
  expect_protocol_error(r, "bad-response", "no \"kept\" array");
}

TEST(ConformProtocol, NonIntegerPositionIsBadResponse) {
  auto r = run_cli(conform_args("while read l; do echo '{\"id\": 0, \"kept\": [0.5]}'; done"));
  expect_protocol_error(r, "bad-response", "non-integer");
}

TEST(ConformProtocol, HangIsATimeoutAndTheProcessIsKilled) {
  auto start = std::chrono::steady_clock::now();
  auto r = run_cli(conform_args("sleep 30", "--timeout-ms 300 --startup-timeout-ms 300"));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  expect_protocol_error(r, "timeout", "no response line within 300 ms");
  EXPECT_LT(seconds, 10.0) << "the timeout did not end the run";
}

TEST(ConformProtocol, BadUsageIsExit2WithNothingOnStdout) {
  auto r = run_cli("--method eg-chunkkv --cases 0 --impl cat");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_NE(r.err.find("nothing to run"), std::string::npos) << r.err;
}

// ---- interrupts: conform killed mid-run takes its implementation with it ----------------------------------

namespace {

bool file_has_text(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  return static_cast<bool>(std::getline(in, s)) && !s.empty();
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Live (not zombie) processes whose process group is `pgid`, from /proc.
std::vector<int> live_members(int pgid) {
  std::vector<int> out;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string stat = slurp(e.path() / "stat");
    auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 2));
    char state = 0;
    int ppid = 0, pgrp = 0;
    rest >> state >> ppid >> pgrp;
    if (pgrp == pgid && state != 'Z' && state != 'X') out.push_back(std::stoi(name));
  }
  return out;
}

// Runs conform on an implementation that answers nothing (its shell loops on sleep after reading the first
// request), sends `sig` once the implementation is up, and checks the interrupt contract.
void expect_interrupt_kills_the_implementation(int sig) {
  const std::string dir = "/tmp/kvaudit_interrupt_" + std::to_string(::getpid()) + "_" + std::to_string(sig);
  std::filesystem::create_directories(dir);
  const std::string pid_file = dir + "/impl.pid", report = dir + "/report.json", err = dir + "/stderr", out = dir + "/stdout";
  const std::string impl = "echo $$ > " + pid_file + "; read line; while :; do sleep 1; done";
  const std::string cmd = "exec " + quote(conform_test::kvaudit_bin()) + " conform --method eg-chunkkv --cases 50 --impl " +
                          quote(impl) + " --report " + quote(report) + " >" + quote(out) + " 2>" + quote(err);
  const char* argv[] = {"/bin/sh", "-c", cmd.c_str(), nullptr};
  pid_t kv = -1;
  ASSERT_EQ(posix_spawn(&kv, "/bin/sh", nullptr, nullptr, const_cast<char* const*>(argv), environ), 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!file_has_text(pid_file) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(file_has_text(pid_file)) << "the implementation never started";
  const int impl_pid = std::stoi(slurp(pid_file));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the request is sent; conform waits on the answer
  ASSERT_FALSE(live_members(impl_pid).empty()) << "precondition: the hung implementation is running";
  ASSERT_EQ(::kill(kv, sig), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(kv, &status, 0), kv);
  EXPECT_TRUE(WIFEXITED(status)) << "kvaudit did not exit on its own (killed by signal " << WTERMSIG(status) << ")";
  if (WIFEXITED(status)) {
    EXPECT_EQ(WEXITSTATUS(status), 128 + sig);
  }
  // Reparented to init once kvaudit is gone; SIGKILL has been sent, give the kernel a moment to deliver it.
  std::vector<int> left = live_members(impl_pid);
  for (int i = 0; i < 100 && !left.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    left = live_members(impl_pid);
  }
  EXPECT_TRUE(left.empty()) << left.size() << " process(es) of the implementation's group outlived kvaudit, e.g. pid "
                            << (left.empty() ? 0 : left[0]);
  EXPECT_FALSE(std::filesystem::exists(report)) << "a report was written by an interrupted run";
  EXPECT_EQ(slurp(out), "") << "nothing on stdout from an interrupted run";
  const std::string e = slurp(err);
  const std::string name = sig == SIGINT ? "SIGINT" : "SIGTERM";
  const std::string line = "kvaudit conform: interrupted by " + name +
                           "; the implementation's process group was killed; no report written\n";
  EXPECT_NE(e.find(line), std::string::npos) << e;
  EXPECT_EQ(e.substr(e.size() - std::min(e.size(), line.size())), line) << "the message is the last line: " << e;
  if (!left.empty()) ::kill(-impl_pid, SIGKILL);  // this test's own leftovers
  std::filesystem::remove_all(dir);
}

}  // namespace

TEST(ConformInterrupt, SigtermKillsTheImplementationAndWritesNoReport) { expect_interrupt_kills_the_implementation(SIGTERM); }
TEST(ConformInterrupt, SigintKillsTheImplementationAndWritesNoReport) { expect_interrupt_kills_the_implementation(SIGINT); }

// ---- the pieces, without the CLI ---------------------------------------------------------------------

TEST(ConformProtocolUnits, FloatsRoundTripExactlyThroughTheRequest) {
  ConformCase c;
  c.heads = 2;
  c.tokens = 4;
  c.values = {0.1f, 1e-30f, 3.4028235e38f, -0.0f, 1.0f / 3.0f, 7.0f, 1.17549435e-38f, 0.3f};
  c.params.ratio = {"0.900", 0.9};
  std::string line = encode_request(5, c);
  ConformCase back = decode_request(line, kvaudit::Flavour::Kvpress, "test");
  ASSERT_EQ(back.values.size(), c.values.size());
  for (std::size_t i = 0; i < c.values.size(); ++i) EXPECT_EQ(back.values[i], c.values[i]) << i;
  EXPECT_EQ(back.params.ratio.text, "0.900");
  auto j = nlohmann::json::parse(line);
  // A float64 reader sees the float32 value itself, not a nearby decimal.
  EXPECT_EQ(j["scores"][0][0].get<double>(), static_cast<double>(0.1f));
  EXPECT_TRUE(j["entropy_threshold"].is_null());
}

TEST(ConformProtocolUnits, RatioTextBecomesAValidJsonNumberWithTheSameValue) {
  EXPECT_EQ(json_decimal(".9"), "0.9");
  EXPECT_EQ(json_decimal("0"), "0");
  EXPECT_EQ(json_decimal("00.50"), "0.50");
  EXPECT_EQ(json_decimal("0."), "0");
}

// ---- one protocol: compression_ratio as text or number, every message shows the value, --replay rounding -----

namespace {

const std::string kLine =
    R"({"id": 0, "method": "chunkkv", "scores": [[1, 2, 3, 4], [0.5, 0.25, 1, 2]], "compression_ratio": RATIO, )"
    R"("chunk_length": 2, "rescue_size": 1, "entropy_threshold": null})";

std::string with(const std::string& from, const std::string& to, std::string line = kLine) {
  line.replace(line.find(from), from.size(), to);
  return line;
}

// The InputError message decode_request throws for `line`, or "accepted".
std::string rejection(const std::string& line, Float32Input mode = Float32Input::Round) {
  try {
    decode_request(line, kvaudit::Flavour::Exact, "line 1", mode);
  } catch (const kvaudit::InputError& e) {
    return e.what();
  }
  return "accepted";
}

}  // namespace

TEST(ConformProtocolUnits, CompressionRatioIsAcceptedAsDecimalTextOrANumberInEveryForm) {
  for (const auto& [written, text] : std::vector<std::pair<std::string, std::string>>{
           {"0.75", "0.75"}, {"\"0.75\"", "0.75"}, {"7.5e-1", "0.75"}, {"75E-2", "0.75"}, {"\".9\"", ".9"},
           {"0", "0"}, {"\"0.8500\"", "0.8500"}, {"0.1e0", "0.1"}}) {
    ConformCase c = decode_request(with("RATIO", written), kvaudit::Flavour::Exact, "t");
    EXPECT_EQ(c.params.ratio.text, text) << written;
    EXPECT_EQ(c.params.ratio.value, std::strtod(text.c_str(), nullptr)) << written;
    // Sent on as a JSON number with the same exact value, whatever form it came in.
    auto sent = nlohmann::json::parse(encode_request(1, c));
    EXPECT_TRUE(sent["compression_ratio"].is_number()) << written;
  }
}

TEST(ConformProtocolUnits, EveryRejectedFieldIsNamedWithItsOffendingValue) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {with("RATIO", "\"0.7.5\""), "line 1: compression_ratio: must be a decimal number in [0, 1) (as text or a JSON number), got \"0.7.5\""},
      {with("RATIO", "\"1.5\""), "compression_ratio: must be a decimal number in [0, 1) (as text or a JSON number), got \"1.5\""},
      {with("RATIO", "-0.5"), "compression_ratio: must be a decimal number in [0, 1) (as text or a JSON number), got -0.5"},
      {with("RATIO", "null"), "compression_ratio: must be decimal text or a number, got null"},
      {with("RATIO", "[0.5]"), "compression_ratio: must be decimal text or a number, got [0.5]"},
      {with("\"compression_ratio\": RATIO, ", ""), "compression_ratio: missing"},
      {with("\"chunk_length\": 2", "\"chunk_length\": 2.5", with("RATIO", "0.5")), "chunk_length: must be an integer, got 2.5"},
      {with("\"rescue_size\": 1", "\"rescue_size\": \"1\"", with("RATIO", "0.5")), "rescue_size: must be an integer, got \"1\""},
      {with("null}", "\"high\"}", with("RATIO", "0.5")), "entropy_threshold: must be a number or null, got \"high\""},
      {with("\"chunkkv\"", "7", with("RATIO", "0.5")), "method: expected chunkkv or eg-chunkkv, got 7"},
      {with("\"chunkkv\"", "\"snapkv\"", with("RATIO", "0.5")), "method: expected chunkkv or eg-chunkkv, got 'snapkv'"},
      {with("[0.5, 0.25, 1, 2]", "[0.5]", with("RATIO", "0.5")), "scores: row 1 is not a list of 4 numbers like row 0: [0.5]"},
      {with("[[1, 2, 3, 4], [0.5, 0.25, 1, 2]]", "[1, 2]", with("RATIO", "0.5")), "scores: must be a non-empty array of rows, each a non-empty array of numbers, got [1,2]"},
      {with("0.25", "\"x\"", with("RATIO", "0.5")), "scores: holds a non-number: \"x\""},
      {with("0.25", "1e300", with("RATIO", "0.5")), "scores: value 1e+300 is outside the float32 range"},
      // Rounds past float32's largest finite value (half an ulp above it, ties to even): refused, never infinity.
      {with("0.25", "3.4028235677973366e38", with("RATIO", "0.5")), "is outside the float32 range"},
  };
  for (const auto& [line, message] : cases) EXPECT_NE(rejection(line).find(message), std::string::npos) << line << "\n -> " << rejection(line);
}

TEST(ConformProtocolUnits, ReplayedScoresRoundToTheNearestFloat32UnlessStrict) {
  const std::string line = with("0.25", "0.1", with("[1, 2", "[1.00000001, 2", with("RATIO", "0.5")));
  ConformCase c = decode_request(line, kvaudit::Flavour::Kvpress, "--replay line 1");
  EXPECT_EQ(c.values[0], 1.0f);   // 1.00000001 is within half an ulp of 1
  EXPECT_EQ(c.values[5], 0.1f);   // the float32 nearest the double nearest 0.1
  EXPECT_NE(c.origin.find("2 scores rounded to the nearest float32, e.g. 1.00000001 -> 1"), std::string::npos) << c.origin;
  // Values that are float32 already are not mentioned.
  EXPECT_EQ(decode_request(with("RATIO", "0.5"), kvaudit::Flavour::Kvpress, "src").origin, "src");
  EXPECT_NE(rejection(line, Float32Input::Strict).find("scores: value 1.00000001 is not a float32 value (--replay-strict)"),
            std::string::npos) << rejection(line, Float32Input::Strict);
  // Ties go to even: 1 + 2^-24 lies halfway between 1 and 1 + 2^-23.
  ConformCase tie = decode_request(with("[1, 2", "[1.000000059604644775390625, 2", with("RATIO", "0.5")), kvaudit::Flavour::Kvpress, "t");
  EXPECT_EQ(tie.values[0], 1.0f);
}

TEST(ConformProtocol, ReplayAcceptsTextRatiosAndRoundedScoresEndToEnd) {
  const std::string path = "/tmp/kvaudit_replay_protocol_" + std::to_string(::getpid()) + ".jsonl";
  std::ofstream(path) << with("0.25", "0.1", with("RATIO", "\"0.75\"")) << "\n";
  const std::string impl = quote("python3 tests/mutants/selector_impl.py --flavour kvpress");
  auto r = run_cli("--method chunkkv --replay " + path + " --impl " + impl);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(r.report.is_object()) << r.err;
  EXPECT_EQ(r.report["verdict"], "conforms");
  EXPECT_EQ(r.report["cases"]["replayed"], 1);
  auto strict = run_cli("--method chunkkv --replay " + path + " --replay-strict --impl " + impl);
  EXPECT_EQ(strict.exit_code, 2);
  EXPECT_TRUE(strict.out.empty()) << strict.out;
  EXPECT_NE(strict.err.find("--replay line 1: scores: value 0.1 is not a float32 value (--replay-strict)"), std::string::npos) << strict.err;
  std::remove(path.c_str());
}

TEST(ConformProtocolUnits, ResponsesInBothFormsAndTheirErrors) {
  auto shared = decode_response("{\"id\": 3, \"kept\": [4, 1, 1]}", 3);
  ASSERT_EQ(shared.kept.size(), 1u);
  EXPECT_EQ(shared.kept[0], (kvaudit::Positions{4, 1, 1}));  // order and duplicates are the oracle's to judge
  auto per_head = decode_response("{\"id\": 3, \"kept\": [[0, 1], [2]]}", 3);
  ASSERT_EQ(per_head.kept.size(), 2u);
  EXPECT_EQ(per_head.kept[1], (kvaudit::Positions{2}));
  auto kind_of = [](const std::string& line) {
    try {
      decode_response(line, 3);
    } catch (const ProtocolError& e) {
      return std::string(to_string(e.kind()));
    }
    return std::string("accepted");
  };
  EXPECT_EQ(kind_of("{\"id\": 4, \"kept\": []}"), "wrong-id");
  EXPECT_EQ(kind_of("{\"kept\": []}"), "bad-response");
  EXPECT_EQ(kind_of("[1,2"), "bad-json");
  EXPECT_EQ(kind_of("{\"id\": 3, \"kept\": [[0], 1]}"), "bad-response");
  EXPECT_EQ(kind_of("{\"id\": 3, \"error\": \"kvpress asserted\"}"), "bad-response");
  EXPECT_EQ(kind_of("{\"id\": 3, \"kept\": []}"), "accepted");
}

TEST(ConformProtocolUnits, ProcessRestartsAfterACrashAndKeepsExtraLinesForTheNextRequest) {
  ImplProcess p("read a; echo one; echo two; read b; exit 0", 2000, 2000);
  EXPECT_EQ(p.exchange("x"), "one");
  EXPECT_EQ(p.exchange("y"), "two");  // the stale line answers the next request: the id check catches it
  EXPECT_THROW(p.exchange("z"), ProtocolError);
  EXPECT_EQ(p.exchange("x"), "one");  // restarted
  EXPECT_EQ(p.starts(), 2);
}

TEST(ConformProtocolUnits, StartupAllowanceAppliesOnlyToTheFirstRequest) {
  ImplProcess p("read a; sleep 0.5; echo ready; read b; sleep 30", 200, 5000);
  EXPECT_EQ(p.exchange("x"), "ready");  // 500 ms > 200 ms, inside the startup allowance
  auto start = std::chrono::steady_clock::now();
  try {
    p.exchange("y");
    ADD_FAILURE() << "a hang after the first answer was not a timeout";
  } catch (const ProtocolError& e) {
    EXPECT_EQ(e.kind(), ProtocolErrorKind::Timeout) << e.what();
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 3.0);
}

TEST(ConformProtocolUnits, LargeRequestsDoNotDeadlockOnFullPipes) {
  // 1 MiB request, echoed back by cat: both pipes fill while the other side is busy.
  std::string big(1 << 20, 'a');
  ImplProcess p("cat", 10000, 10000);
  EXPECT_EQ(p.exchange(big), big);
}
