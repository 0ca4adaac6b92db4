// The conform protocol's failure modes: each must end in exit 2 naming what went wrong, never a pass.
#include <chrono>

#include <gtest/gtest.h>

#include "audit/conform/impl_process.h"
#include "audit/conform/protocol.h"
#include "tests/unit/conform_run_support.h"

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
