// The runner's choice of the gpu_sm90 cases it runs on the PTX simulator (tests/sim_selection.h,
// tests/main.cpp kSimulatorRuns): each case is judged by its suite and its name together. The
// runner used to exclude a case by name alone (doctest's test-case-exclude filter), which also
// dropped a same-named case of another suite; these cases are the ones that broke it.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/sim_selection.h"

namespace {

doctest::TestCaseData test_case(const char* suite, const char* name) {
  doctest::TestCaseData tc{};
  tc.m_file = "x.cpp";
  tc.m_line = 1;
  tc.m_name = name;
  tc.m_test_suite = suite;
  tc.m_description = nullptr;
  tc.m_skip = false;
  return tc;
}

std::vector<std::string> names(const std::vector<const doctest::TestCaseData*>& v) {
  std::vector<std::string> out;
  for (const doctest::TestCaseData* tc : v) out.push_back(std::string(tc->m_test_suite) + " / " + tc->m_name);
  return out;
}

}  // namespace

TEST_SUITE("host test runner") {

TEST_CASE("the simulator's skips: each case by its suite and name, a same-named case elsewhere untouched") {
  using flashptx_test::SimulatorRun;
  const std::vector<doctest::TestCaseData> tests = {
      test_case("gpu_sm90 fa3 forward", "strided layouts"),  // runs
      test_case("gpu_sm90 fa3 backward", "strided layouts"),  // the same name, not listed: skipped
      test_case("gpu_sm90 fa3 backward", "small shapes"),     // runs
      test_case("gpu_sm90 other", "anything"),                // a suite none of whose cases run
      test_case("host api", "strided layouts"),               // not a gpu_sm90 suite: never the simulator's
  };
  const SimulatorRun runs[] = {{"gpu_sm90 fa3 forward", "strided*"}, {"gpu_sm90 fa3 backward", "small shapes"}};
  const std::vector<std::string> got = names(flashptx_test::simulator_skips(tests, runs));
  CHECK(got == std::vector<std::string>{"gpu_sm90 fa3 backward / strided layouts", "gpu_sm90 other / anything"});
  CHECK(flashptx_test::runs_on_simulator(tests[0], runs));
  CHECK_FALSE(flashptx_test::runs_on_simulator(tests[1], runs));
  // The other way round: listing the backward's case keeps the forward's skipped.
  const SimulatorRun other[] = {{"gpu_sm90 fa3 backward", "strided layouts"}};
  const std::vector<std::string> got2 = names(flashptx_test::simulator_skips(tests, other));
  CHECK(std::find(got2.begin(), got2.end(), "gpu_sm90 fa3 forward / strided layouts") != got2.end());
  CHECK(std::find(got2.begin(), got2.end(), "gpu_sm90 fa3 backward / strided layouts") == got2.end());
  // A mark is the case's own: marking one leaves its namesake in the other suite unmarked.
  std::vector<doctest::TestCaseData> marked = tests;
  flashptx_test::mark_skipped(marked[1]);
  CHECK(marked[1].m_skip);
  CHECK_FALSE(marked[0].m_skip);
}

}  // TEST_SUITE
