// Which gpu_sm90 cases the test runner runs on the PTX simulator (tests/main.cpp kSimulatorRuns), and
// which it skips there: a case is named by its suite AND its name. doctest's test-case-exclude filter
// matches names alone, across every suite, so excluding a case by name would also drop a case of the
// same name in another suite (or keep it, were the filter an include): the runner marks each skipped
// case itself (TestCaseData::m_skip) instead. tests/host/test_sim_selection.cpp holds this.
#pragma once
#include <doctest/doctest.h>

#include <fnmatch.h>

#include <cstring>
#include <span>
#include <vector>

namespace flashptx_test {

// A suite pattern and a case pattern (fnmatch) of the cases that run on the simulator.
struct SimulatorRun { const char* suite; const char* test_case; };

inline bool is_gpu_sm90_suite(const char* suite) { return std::strncmp(suite, "gpu_sm90", 8) == 0; }

inline bool runs_on_simulator(const doctest::TestCaseData& tc, std::span<const SimulatorRun> runs) {
  for (const SimulatorRun& r : runs)
    if (fnmatch(r.suite, tc.m_test_suite, 0) == 0 && fnmatch(r.test_case, tc.m_name, 0) == 0) return true;
  return false;
}

// The cases of `tests` (TestCaseData or a type derived from it) in the suites `owned` accepts (the
// gpu_sm90 ones by default) that `runs` does not name, each judged by its own suite and name.
template <class Tests, class Owned = bool (*)(const char*)>
std::vector<const doctest::TestCaseData*> simulator_skips(const Tests& tests, std::span<const SimulatorRun> runs,
                                                          Owned owned = is_gpu_sm90_suite) {
  std::vector<const doctest::TestCaseData*> out;
  for (const doctest::TestCaseData& tc : tests)
    if (owned(tc.m_test_suite) && !runs_on_simulator(tc, runs)) out.push_back(&tc);
  return out;
}

// Marks a case skipped for this run (doctest then reports it skipped, as a filtered-out case; the
// ordering of the registry does not involve m_skip).
inline void mark_skipped(const doctest::TestCaseData& tc) { const_cast<doctest::TestCaseData&>(tc).m_skip = true; }

}  // namespace flashptx_test
