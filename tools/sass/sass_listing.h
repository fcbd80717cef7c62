// The SASS listing model of the golden-SASS audit: parsing `cuobjdump --dump-sass` and
// `cuobjdump --dump-resource-usage` text, and normalising one kernel's instruction stream into the
// form stored in sass_golden/<arch>/<kernel>.sass.
//
// Normalised form, one line per instruction, in address order:
//   - "[@guard ]OPCODE.WITH.MODIFIERS[ op, op, ...]", indented by four spaces;
//   - register numbers erased (R12 -> R, UR4 -> UR, P0 -> P, UP0 -> UP, B1 -> B); RZ, URZ, PT, UPT,
//     SR_* and predicate polarity (@!P) kept; the scheduling hint .reuse dropped;
//   - immediates written "#", except the top-level immediates of the protocol opcodes (USETMAXREG,
//     BAR, DEPBAR, WARPGROUP, SYNCS, UTCBAR), which are kept verbatim (setmaxnreg counts, barrier
//     ids and thread counts, wait depths, tx bytes);
//   - branch targets (BRA, BSSY, CALL, JMP, ...) become labels L0, L1, ... numbered by target
//     address, and a line "L3:" is emitted before the target instruction;
//   - NOPs (padding) and the trailing `BRA` self-loop are dropped; no addresses, no encodings.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace flashptx::sass {

// One instruction as printed by the disassembler: its byte address and its text without the ';'.
struct RawInstr {
  long addr = 0;
  std::string text;
};

// One "Function : name" block of a dump.
struct SassFunction {
  std::string name;
  std::string arch;  // from the block's ".target" line when present (e.g. "sm_90a")
  std::vector<RawInstr> instrs;
};

// Every function of a `cuobjdump --dump-sass` output, in the order printed.
std::vector<SassFunction> parse_dump_sass(const std::string& text);

// The ptxas resource line of one function, raw and as key -> value.
struct Resources {
  std::string line;                   // e.g. "REG:10 STACK:0 SHARED:1032 LOCAL:0 ..."
  std::map<std::string, long> values; // "REG" -> 10, ...
  long get(const std::string& key) const;
};

// Function name -> resources, from `cuobjdump --dump-resource-usage` output.
std::map<std::string, Resources> parse_resource_usage(const std::string& text);

// The normalised listing of a function. `lines` holds label lines ("L0:") and instruction lines.
struct Listing {
  std::vector<std::string> lines;
  int instruction_count = 0;
};

// Normalises one function. Throws std::runtime_error when it holds zero instructions: an empty
// listing must never compare equal to an empty golden.
Listing normalize(const SassFunction& fn);

// Normalises one instruction text (no labels: branch targets are left as "#").
std::string normalize_instruction(const std::string& text);

// Whether a normalised line is an instruction line (not a label, not a header or blank line).
bool is_instruction_line(const std::string& line);

// Spills and local memory: LOCAL>0 or STACK>0 in the resources, or local loads/stores (LDL/STL)
// in the listing. Returns an empty string when clean, otherwise a one-line reason.
std::string spill_reason(const Resources& res, const Listing& listing);

// A file name for a kernel: the name itself when it is short and uses only [A-Za-z0-9_.-];
// otherwise a deterministic sanitisation: unsafe characters become '_', the name is cut to 160
// characters and "~" plus 16 hex digits of the FNV-1a hash of the full name are appended.
std::string golden_file_stem(const std::string& kernel_name);

}  // namespace flashptx::sass
