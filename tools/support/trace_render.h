// Decoding, summarising and rendering a pipeline trace (`flashptx trace`). Host-only; the
// buffer layout and event ids are src/protocol/trace.h's.
//
// Time base: within a CTA every lane runs on one SM, so clock64 stamps are compared directly and
// converted to microseconds with the SM clock given (the device's reported peak clock unless told
// otherwise; if the SM ran at another clock the axis is scaled by the ratio, the fractions are not).
// CTAs on different SMs are placed by %globaltimer at each lane's first stamp (coarser: typically
// 32 ns to 1 us resolution), so comparisons across CTAs are approximate.
//
// Spans:
//   consumer lanes: QK issue->done, softmax begin->end, PV issue->done, token wait->got,
//                   epilogue begin->end (paired by kind and argument, first in first out)
//   producer lane:  TMA K/V issue -> the first consumer "full" pass of the same stage after it, in
//                   the same CTA. That is when a consumer saw the bytes, an upper bound on when
//                   they landed (the consumer may have arrived at the wait late).
// Instants: full K/V passes, K/V releases, token passes, producer empty-wait passes, Q issue.
// Waits on full K / full V: the trace stamps only the pass, so the wait is bounded by the time from
// the lane's previous stamp to the pass (an upper bound: unstamped work in between counts as wait).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace flashptx::trace_render {

struct Record { uint64_t clock = 0; uint32_t event = 0, arg = 0; };

struct Lane {
  int cta = 0, lane = 0;     // lane 0 the producer, 1.. consumers
  uint64_t globaltimer_ns = 0;
  uint64_t count = 0;        // records the kernel tried to write (may exceed records.size())
  std::vector<Record> records;
};

struct RawTrace {
  double clock_khz = 0;      // SM clock used to convert cycles
  std::string shape;         // free text: what was launched
  std::vector<Lane> lanes;   // only lanes with at least one record
};

// From the device buffer layout of src/protocol/trace.h (kWordsTotal words).
RawTrace decode(const uint64_t* words, double clock_khz, const std::string& shape);

// Raw traces as JSON, so they can be committed and re-rendered without a GPU.
std::string to_json(const RawTrace& t);
bool from_json(const std::string& text, RawTrace* t, std::string* err);

// The text of a saved trace file, plain or gzip-compressed (recognised by its magic bytes, 1f 8b,
// whatever its name; decompressed by the `gzip` program, so no library is needed to build). False
// with *err saying why: the file cannot be read, gzip is not on PATH, or gzip fails on it.
bool read_trace_file(const std::string& path, std::string* text, std::string* err);

// The last three are the PTX simulator's (sim_timeline): what it knows without a kernel's stamps.
enum class Kind { kTmaK, kTmaV, kQK, kSoftmax, kPV, kToken, kEpilogue, kSimCopy, kSimWgmma, kSimWait };
const char* kind_name(Kind k);

struct Span { int cta, lane; Kind kind; uint32_t arg; double t0, t1; bool open = false; std::string label = ""; };  // us
// since_prev: time from the lane's previous stamp (any event) to this one; 0 for a lane's first.
struct Instant { int cta, lane; uint32_t event, arg; double t; double since_prev = 0; std::string label = ""; };

struct Timeline {
  std::vector<Span> spans;
  std::vector<Instant> instants;
  double t_begin = 0, t_end = 0;          // us, over every lane
  int unmatched_ends = 0;
  struct Active { int cta, lane; double t0, t1; };
  std::vector<Active> active;             // per lane: first and last stamp
  // A timeline of the PTX simulator's event log (sim_timeline): times are scheduler steps, a lane is
  // a warp of the CTA, instants carry their own label.
  bool sim = false;
};

Timeline build_timeline(const RawTrace& t);

struct ConsumerSummary {
  int cta = 0, lane = 0;
  double active_us = 0;
  double wgmma_us = 0, wgmma_fraction = 0;         // union of QK and PV spans / active time
  double softmax_us = 0, softmax_overlapped_us = 0; // softmax time covered by the other consumers' GEMMs
  double softmax_overlapped_fraction = 0;
  double wait_full_k_us = 0, wait_full_v_us = 0, wait_token_us = 0;
};

std::vector<ConsumerSummary> summarize(const Timeline& tl);
std::string summary_text(const std::vector<ConsumerSummary>& s);

// The two-stage overlap at run time, per consumer (docs/PROTOCOLS.md, "The two-stage overlap").
// The listing fixes the order (PV(j-1) issued, softmax(j), then the wait that retires PV(j-1)); only
// the clock says whether PV(j-1) ran during softmax(j). A steady PV span is one that contains a softmax
// span of the same consumer; `wait_after_softmax` = its end minus that softmax's end (the wait_group 0
// stall, plus a stamp). A lone PV span (the drain: no softmax inside) = a PV with nothing to hide
// behind. Medians over the consumer's spans. hidden_fraction = 1 - wait / lone: the part of a PV that
// ran under softmax(j). overlapped: at least kMinHiddenFraction of it; below that, the difference is
// within what a stamp (one global store) and the median over different spans move a number.
constexpr double kMinHiddenFraction = 0.10;
struct OwnOverlap {
  int cta = 0, lane = 0;
  int steady = 0, lone = 0;  // spans of each kind
  double wait_after_softmax_us = 0, lone_pv_us = 0, hidden_fraction = 0;
  bool overlapped = false;
};
std::vector<OwnOverlap> own_overlap(const Timeline& tl);
std::string own_overlap_text(const std::vector<OwnOverlap>& v);

// The Gantt chart: a row per (CTA, lane), spans as bars, instants as ticks, a us axis and a legend;
// `note` (if any) is a line under the title (truncation_note).
std::string render_svg(const Timeline& tl, const std::string& title, const std::string& note = "");
// The part of a row's height (0 top, 1 bottom) where spans of kind k are drawn: in a consumer row
// each kind has its own band (QK^T, softmax, PV, then token wait and epilogue), so no kind hides
// another; in the producer row TMA K is the upper half, TMA V the lower.
struct SvgBand { double top, bottom; };
SvgBand svg_band(Kind k, bool producer);
// The width the legend reserves for a text at the SVG's 11 px sans-serif (an upper bound per char).
double svg_text_width(const std::string& s);
// One line for the lanes whose kernel stamped more records than the buffer keeps; empty if none.
std::string truncation_note(const RawTrace& t);

// The PTX simulator's event log (`flashptx sim --trace`, tools/sim/cudart/flashptx_sim.h
// flashptx_sim_trace) as a timeline for render_svg, on its logical clock: per (CTA, warp) the copies
// it issued (issue -> landed), its wgmma groups (committed -> retired) and its mbarrier waits
// (suspended -> resumed) as spans; mbarrier phases completed and named barriers as instants. A copy,
// group or wait never closed is a span to the log's end, marked open. False with *err naming the
// line the log cannot be read at.
bool sim_timeline(const std::string& log, Timeline* tl, std::string* err);

// Length of the union of intervals (helper, exposed for the tests).
double union_length(std::vector<std::pair<double, double>> iv);
// Length of the part of [a, b] covered by the union of `iv`.
double covered_length(double a, double b, std::vector<std::pair<double, double>> iv);

}  // namespace flashptx::trace_render
