// Host oracle tests of the two-stage WGMMA-softmax pipeline (docs/PROTOCOLS.md, "The two-stage
// overlap").
#include <doctest/doctest.h>

#include "tools/models/twostage_model.h"

using namespace flashptx::models::twostage;

TEST_SUITE("host models twostage") {
  TEST_CASE("15/11 = 1.36x at unit times and J = 5") {
    CHECK(serial_time(5, 1, 1, 1) == 15);
    CHECK(two_stage_time(5, 1, 1, 1) == 11);
    CHECK(two_stage_formula(5, 1, 1, 1) == 11);
    CHECK(15.0 / 11 == doctest::Approx(1.36).epsilon(0.005));
    for (int J : {1, 2, 3, 9})
      for (double e : {0.5, 1.0, 2.0}) CHECK(two_stage_time(J, 1, e, 1) == doctest::Approx(two_stage_formula(J, 1, e, 1)));
  }

  TEST_CASE("liveness ledger 64 + 64 + 32 = 160 words; three-stage extra 32.5 KiB") {
    const Liveness l = liveness(128, 128, 128, 2, 2);
    CHECK(l.o_words == 64);
    CHECK(l.s_words == 64);
    CHECK(l.p_words == 32);
    CHECK(l.total_words == 160);
    CHECK(l.total_bytes == 160 * 1024);
    CHECK(three_stage_extra_bytes(128, 128, 2) == 33280);
    CHECK(three_stage_extra_bytes(128, 128, 2) / 1024.0 == 32.5);
    CHECK(three_stage_extra_bytes(128, 128, 2) / 4.0 / 256 == 32.5);
  }

  TEST_CASE("wait_group legality on traces") {
    for (int J : {1, 2, 5}) {
      const Verdict v = check_trace(pipeline_trace(J, Variant::kCanonical));
      CHECK(v.violation == Violation::kNone);
      CHECK(v.overlap == (J >= 2));
    }
    const Verdict w0 = check_trace(pipeline_trace(5, Variant::kWait0ForWait1));
    CHECK(w0.violation == Violation::kNone);  // numerically correct ...
    CHECK_FALSE(w0.overlap);                  // ... but no softmax overlaps a pending PV
    CHECK(check_trace(pipeline_trace(5, Variant::kReadSBeforeWait)).violation == Violation::kReadSInFlight);
    CHECK(check_trace(pipeline_trace(5, Variant::kWritePBeforeWait0)).violation == Violation::kPOverwriteInFlight);
    CHECK(check_trace(pipeline_trace(5, Variant::kRescaleOInFlight)).violation == Violation::kOTouchInFlight);
    CHECK(check_trace(pipeline_trace(5, Variant::kReleaseKEarly)).violation == Violation::kKReleaseInFlight);
    CHECK(check_trace(pipeline_trace(5, Variant::kReleaseVEarly)).violation == Violation::kVReleaseInFlight);
    // groups complete by age: with PV committed first, wait_group(1) leaves QK pending
    CHECK(check_trace(pipeline_trace(5, Variant::kPVCommittedFirst)).violation == Violation::kKReleaseInFlight);
    // a WGMMA that is never committed is never covered by a wait
    std::vector<Event> t = {{Ev::kIssueQK, 0}, {Ev::kWaitGroup, 0, 0}, {Ev::kReadS, 0}};
    CHECK(check_trace(t).violation == Violation::kReadSInFlight);
    CHECK(check_trace({{Ev::kIssueQK, 0}}).violation == Violation::kUncommittedAtEnd);
  }
}
