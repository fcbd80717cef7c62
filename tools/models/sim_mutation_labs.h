// The PTX simulator's mutation labs (issue 31, "Mutations, as tests"): protocol mutations of the
// real fa3_fwd d64 kernel's PTX, each with the finding the simulator must report. The ledger prints
// them as failure-lab rows by article section; tests/sim/test_sim_mutations.cpp applies each edit,
// launches the library's plan on the simulator and requires the finding and these report words (the
// rows are the claims; the test is what checks them, on every simulator run of ./run_tests).
#pragma once
#include <span>
#include <string_view>

namespace flashptx::models {

struct SimMutationLab {
  const char* section;  // the article section whose failure matrix the row belongs to
  const char* name;     // the test case is "mutation: <name>"
  const char* edit;     // what is edited in the entry's PTX
  const char* finding;  // the Finding kind the report starts with; "none" for a mutation that is no error
  const char* words[4]; // further words the report must hold (nullptr-terminated)
  bool caught;          // false: the simulator does not catch it yet (a gap; its case is skipped)
};

std::span<const SimMutationLab> sim_mutation_labs();
// The lab named `name`, or nullptr.
const SimMutationLab* sim_mutation_lab(std::string_view name);

}  // namespace flashptx::models
