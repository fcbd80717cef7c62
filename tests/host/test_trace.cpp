// `flashptx trace` host side on a synthetic buffer: span pairing, the summary fractions on a
// hand-computable timeline, JSON round trip, and the SVG's lanes. No GPU; proves the renderer and
// the arithmetic, not that a kernel stamps the right events. Then the committed H200 trace
// (tools/trace/h200-d128-s8192-b2-h16.json.gz, embedded in ./run_tests by the build) read as the
// README's `flashptx trace --from-json tools/trace/*.json.gz` reads it (gzip included), with the
// committed summary's numbers (the README's) reproduced from it.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
#include <unistd.h>
#include <vector>

#include "src/protocol/trace.h"
#include "tests/embedded.h"
#include "tools/support/trace_render.h"

namespace tr = flashptx::trace;
using namespace flashptx::trace_render;

namespace {

// Writes one lane's records; clocks given in microseconds at 1 GHz (1000 cycles per us).
void put_lane(std::vector<uint64_t>& buf, int cta, int lane, uint64_t gt,
              const std::vector<std::tuple<double, uint32_t, uint32_t>>& recs) {
  uint64_t* base = buf.data() + static_cast<size_t>(cta * tr::kLanes + lane) * tr::kWordsPerLane;
  base[0] = recs.size();
  base[1] = gt;
  for (size_t i = 0; i < recs.size(); ++i) {
    base[2 + 2 * i] = 5000000 + static_cast<uint64_t>(std::get<0>(recs[i]) * 1000);
    base[3 + 2 * i] = (static_cast<uint64_t>(std::get<1>(recs[i])) << 32) | std::get<2>(recs[i]);
  }
}

std::vector<uint64_t> synthetic() {
  std::vector<uint64_t> buf(tr::kWordsTotal, 0);
  put_lane(buf, 0, 0, 1000, {{0, tr::kTmaIssueK, 0}, {1, tr::kTmaIssueV, 0}, {3, tr::kEmptyWaitK, 0}});
  put_lane(buf, 0, 1, 1000,
           {{0, tr::kTileBegin, 0}, {2, tr::kFullK, 0}, {2, tr::kQKIssue, 0}, {4, tr::kQKDone, 0},
            {4, tr::kSoftmaxBegin, 0}, {6, tr::kSoftmaxEnd, 0}, {7, tr::kFullV, 0}, {7, tr::kPVIssue, 0},
            {9, tr::kPVDone, 0}, {9, tr::kReleaseV, 0}, {10, tr::kTileEnd, 0}});
  put_lane(buf, 0, 2, 1000,
           {{0, tr::kTileBegin, 1}, {0, tr::kTokenWait, 1}, {3, tr::kTokenGot, 1}, {5, tr::kQKIssue, 0},
            {8, tr::kQKDone, 0}, {8, tr::kTokenPass, 2}, {10, tr::kTileEnd, 1}});
  return buf;
}

const char* const kTraceGz = "tools/trace/h200-d128-s8192-b2-h16.json.gz";
const char* const kTraceSummary = "tools/trace/h200-d128-s8192-summary.txt";

// A file in a scratch folder, removed at the end of the scope.
struct ScratchFile {
  std::filesystem::path path;
  explicit ScratchFile(const std::string& name, std::string_view bytes) {
    static int n = 0;
    path = std::filesystem::temp_directory_path() /
           ("flashptx-trace-" + std::to_string(getpid()) + "-" + std::to_string(n++) + "-" + name);
    std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  ~ScratchFile() { std::error_code ec; std::filesystem::remove(path, ec); }
};

const Span* find(const Timeline& tl, int lane, Kind k) {
  for (const auto& s : tl.spans)
    if (s.lane == lane && s.kind == k) return &s;
  return nullptr;
}

}  // namespace

TEST_SUITE("host trace") {

TEST_CASE("decode and span pairing") {
  const auto buf = synthetic();
  const RawTrace raw = decode(buf.data(), 1e6, "synthetic");
  REQUIRE(raw.lanes.size() == 3);
  CHECK(raw.lanes[1].records.size() == 11);
  const Timeline tl = build_timeline(raw);
  CHECK(tl.t_begin == doctest::Approx(0));
  CHECK(tl.t_end == doctest::Approx(10));
  CHECK(tl.unmatched_ends == 0);
  const Span* qk = find(tl, 1, Kind::kQK);
  REQUIRE(qk);
  CHECK(qk->t0 == doctest::Approx(2));
  CHECK(qk->t1 == doctest::Approx(4));
  const Span* tk = find(tl, 0, Kind::kTmaK);
  REQUIRE(tk);  // issue at 0, first consumer full K pass of stage 0 at 2
  CHECK(tk->t1 == doctest::Approx(2));
  const Span* tv = find(tl, 0, Kind::kTmaV);
  REQUIRE(tv);
  CHECK(tv->t0 == doctest::Approx(1));
  CHECK(tv->t1 == doctest::Approx(7));
  const Span* tok = find(tl, 2, Kind::kToken);
  REQUIRE(tok);
  CHECK(tok->t1 - tok->t0 == doctest::Approx(3));
  CHECK(find(tl, 2, Kind::kSoftmax) == nullptr);
}

TEST_CASE("summary fractions on a hand-computable timeline") {
  const auto buf = synthetic();
  const auto s = summarize(build_timeline(decode(buf.data(), 1e6, "synthetic")));
  REQUIRE(s.size() == 2);
  // consumer 0: active 0..10; GEMMs [2,4] and [7,9]: 4 us, 40%. Softmax [4,6]; the other consumer's
  // QK [5,8] covers [5,6]: 1 of 2 us. Full K waited from 0 to 2; full V from 6 (softmax end) to 7.
  CHECK(s[0].active_us == doctest::Approx(10));
  CHECK(s[0].wgmma_us == doctest::Approx(4));
  CHECK(s[0].wgmma_fraction == doctest::Approx(0.4));
  CHECK(s[0].softmax_us == doctest::Approx(2));
  CHECK(s[0].softmax_overlapped_us == doctest::Approx(1));
  CHECK(s[0].softmax_overlapped_fraction == doctest::Approx(0.5));
  CHECK(s[0].wait_full_k_us == doctest::Approx(2));
  CHECK(s[0].wait_full_v_us == doctest::Approx(1));
  CHECK(s[0].wait_token_us == doctest::Approx(0));
  // consumer 1: QK [5,8] 30%; token wait 3 us; no softmax.
  CHECK(s[1].wgmma_fraction == doctest::Approx(0.3));
  CHECK(s[1].wait_token_us == doctest::Approx(3));
  CHECK(s[1].softmax_overlapped_fraction == 0);
  CHECK(summary_text(s).find("wgmma %") != std::string::npos);
}

TEST_CASE("interval helpers") {
  CHECK(union_length({{0, 2}, {1, 3}, {5, 6}}) == doctest::Approx(4));
  CHECK(union_length({{0, 10}, {2, 3}}) == doctest::Approx(10));
  CHECK(union_length({}) == 0);
  CHECK(covered_length(4, 6, {{5, 8}, {0, 4.5}}) == doctest::Approx(1.5));
}

TEST_CASE("CTAs are placed by globaltimer; JSON round trip; SVG has the lanes") {
  auto buf = synthetic();
  put_lane(buf, 1, 1, 3000, {{0, tr::kQKIssue, 0}, {1, tr::kQKDone, 0}});  // starts 2 us later
  const RawTrace raw = decode(buf.data(), 1e6, "synthetic <2 CTAs>");
  const Timeline tl = build_timeline(raw);
  bool found = false;
  for (const auto& sp : tl.spans)
    if (sp.cta == 1) { found = true; CHECK(sp.t0 == doctest::Approx(2)); CHECK(sp.t1 == doctest::Approx(3)); }
  CHECK(found);

  RawTrace back;
  std::string err;
  REQUIRE_MESSAGE(from_json(to_json(raw), &back, &err), err);
  REQUIRE(back.lanes.size() == raw.lanes.size());
  for (size_t i = 0; i < raw.lanes.size(); ++i) {
    CHECK(back.lanes[i].globaltimer_ns == raw.lanes[i].globaltimer_ns);
    REQUIRE(back.lanes[i].records.size() == raw.lanes[i].records.size());
    for (size_t j = 0; j < raw.lanes[i].records.size(); ++j) {
      CHECK(back.lanes[i].records[j].clock == raw.lanes[i].records[j].clock);
      CHECK(back.lanes[i].records[j].event == raw.lanes[i].records[j].event);
    }
  }
  CHECK(back.shape == raw.shape);

  const std::string svg = render_svg(tl, raw.shape);
  CHECK(svg.rfind("<svg", 0) == 0);
  CHECK(svg.find("</svg>") != std::string::npos);
  CHECK(svg.find("CTA 0 producer") != std::string::npos);
  CHECK(svg.find("CTA 0 consumer 0") != std::string::npos);
  CHECK(svg.find("CTA 0 consumer 1") != std::string::npos);
  CHECK(svg.find("CTA 1 consumer 0") != std::string::npos);
  CHECK(svg.find("&lt;2 CTAs&gt;") != std::string::npos);  // the title is escaped
  CHECK(svg.find("softmax") != std::string::npos);           // legend
  CHECK(svg.find("time (us)") != std::string::npos);
}

TEST_CASE("an overflowing lane keeps kMaxRecords records; an unclosed span is marked open") {
  std::vector<uint64_t> buf(tr::kWordsTotal, 0);
  put_lane(buf, 0, 1, 0, {{0, tr::kQKIssue, 0}, {1, tr::kSoftmaxBegin, 0}, {2, tr::kPVDone, 7}});
  buf[static_cast<size_t>(1) * tr::kWordsPerLane] = tr::kMaxRecords + 10;  // the kernel tried more
  // the records beyond the three written are zero words: event 0, ignored
  const RawTrace raw = decode(buf.data(), 1e6, "");
  REQUIRE(raw.lanes.size() == 1);
  CHECK(raw.lanes[0].records.size() == static_cast<size_t>(tr::kMaxRecords));
  CHECK(raw.lanes[0].count == static_cast<uint64_t>(tr::kMaxRecords + 10));
  const Timeline tl = build_timeline(raw);
  CHECK(tl.unmatched_ends == 1);  // PV done without an issue
  const Span* qk = find(tl, 1, Kind::kQK);
  REQUIRE(qk);
  CHECK(qk->open);
}

TEST_CASE("the SVG layout: no span kind hides another, the legend entries do not overlap, truncation is said once") {
  // Consumer rows: QK^T, softmax, PV and token/epilogue each in a band of their own (the two-stage
  // overlap puts a softmax under its consumer's PV); producer rows: TMA K above TMA V.
  const Kind consumer[] = {Kind::kQK, Kind::kSoftmax, Kind::kPV, Kind::kToken};
  for (Kind a : consumer) {
    const SvgBand ba = svg_band(a, false);
    CHECK(ba.top >= 0);
    CHECK(ba.bottom <= 1);
    CHECK(ba.top < ba.bottom);
    for (Kind b : consumer) {
      if (a == b) continue;
      const SvgBand bb = svg_band(b, false);
      CHECK_MESSAGE((ba.bottom <= bb.top || bb.bottom <= ba.top), kind_name(a) << " overlaps " << kind_name(b));
    }
  }
  CHECK(svg_band(Kind::kTmaK, true).bottom <= svg_band(Kind::kTmaV, true).top);

  // A consumer lane with a softmax inside a PV span, on a lane that overflowed the buffer.
  std::vector<uint64_t> buf(tr::kWordsTotal, 0);
  put_lane(buf, 0, 1, 0, {{0, tr::kPVIssue, 0}, {10, tr::kSoftmaxBegin, 1}, {20, tr::kSoftmaxEnd, 1}, {30, tr::kPVDone, 0}});
  buf[static_cast<size_t>(1) * tr::kWordsPerLane] = tr::kMaxRecords + 10;
  const RawTrace raw = decode(buf.data(), 1e6, "t");
  const std::string note = truncation_note(raw);
  CHECK(note == "1 of 1 lanes stamped more records than the buffer keeps (up to " + std::to_string(tr::kMaxRecords + 10) +
                    ", kept " + std::to_string(tr::kMaxRecords) + "): their timelines end at the last kept record");
  const std::string svg = render_svg(build_timeline(raw), "t", note);
  CHECK(svg.find(note) != std::string::npos);
  // The softmax and PV bars of the row: vertically disjoint.
  auto bar = [&](const std::string& title) {
    const size_t t = svg.find("<title>" + title);
    REQUIRE(t != std::string::npos);
    const size_t r = svg.rfind("<rect ", t);
    double x, y, w, h;
    REQUIRE(std::sscanf(svg.c_str() + r, "<rect x=\"%lf\" y=\"%lf\" width=\"%lf\" height=\"%lf\"", &x, &y, &w, &h) == 4);
    return std::pair<double, double>{y, y + h};
  };
  const auto sm = bar("softmax"), pv = bar("PV wgmma");
  CHECK((sm.second <= pv.first || pv.second <= sm.first));
  // Legend entries (a swatch, then its text) on one line never run into the next swatch.
  const std::string legend = svg.substr(svg.find("<g class=\"legend\">"));
  std::vector<std::tuple<double, double, std::string>> entries;  // x, y, text
  for (size_t at = legend.find("<rect x="); at != std::string::npos; at = legend.find("<rect x=", at + 1)) {
    double x, y;
    REQUIRE(std::sscanf(legend.c_str() + at, "<rect x=\"%lf\" y=\"%lf\"", &x, &y) == 2);
    const size_t t0 = legend.find('>', legend.find("<text", at)) + 1;
    entries.emplace_back(x, y, legend.substr(t0, legend.find("</text>", t0) - t0));
  }
  REQUIRE(entries.size() == 7);
  for (size_t i = 0; i + 1 < entries.size(); ++i) {
    const auto& [x, y, text] = entries[i];
    const auto& [nx, ny, ntext] = entries[i + 1];
    if (ny != y) continue;
    CHECK_MESSAGE(x + 16 + svg_text_width(text) < nx, text << " runs into " << ntext);
  }
}

TEST_CASE("the committed H200 trace re-renders from its .json.gz, with the committed summary's numbers") {
  const std::string_view gz = flashptx_test::embedded_file(kTraceGz);
  const std::string_view committed = flashptx_test::embedded_file(kTraceSummary);
  REQUIRE_MESSAGE(gz.size() > 2, kTraceGz << " is not embedded in this binary (the Makefile's EMBED_FILES)");
  REQUIRE(!committed.empty());
  const ScratchFile file("h200.json.gz", gz);
  std::string text, err;
  REQUIRE_MESSAGE(read_trace_file(file.path.string(), &text, &err), err);
  CHECK(text.rfind("{", 0) == 0);
  RawTrace raw;
  REQUIRE_MESSAGE(from_json(text, &raw, &err), err);
  CHECK(raw.shape == "b2 s8192 h16/16 d128 bf16 non-causal (clock axis at 1980 MHz)");
  // The committed summary (and the README's numbers) are CTA 0's: `--cta 1`.
  std::erase_if(raw.lanes, [](const Lane& l) { return l.cta >= 1; });
  REQUIRE(raw.lanes.size() == 3);
  const Timeline tl = build_timeline(raw);
  const std::string summary = summary_text(summarize(tl));
  int rows = 0;
  std::istringstream in{std::string(committed)};
  for (std::string line; std::getline(in, line);)
    if (line.rfind("0    ", 0) == 0) {  // "0    0             650.22     68.7 ..." : CTA 0's consumers
      ++rows;
      CHECK_MESSAGE(summary.find(line + "\n") != std::string::npos, "committed: " << line << "\nnow:\n" << summary);
    }
  CHECK(rows == 2);
  const std::string svg = render_svg(tl, raw.shape);
  CHECK(svg.rfind("<svg", 0) == 0);
  CHECK(svg.find("CTA 0 consumer 1") != std::string::npos);
}

// Counted as skipped (doctest's skip decorator, decided at start-up) where the binaries run without
// their source tree; the embedded copy is checked above in any case.
bool no_source_tree() { return !std::filesystem::exists(std::string(FLASHPTX_ROOT) + "/" + kTraceGz); }

TEST_CASE("the committed trace in the source tree is the embedded one (skipped without the source tree)" *
          doctest::skip(no_source_tree())) {
  const std::string path = std::string(FLASHPTX_ROOT) + "/" + kTraceGz;
  std::string from_tree, from_binary, err;
  REQUIRE_MESSAGE(read_trace_file(path, &from_tree, &err), err);
  const ScratchFile file("embedded.json.gz", flashptx_test::embedded_file(kTraceGz));
  REQUIRE_MESSAGE(read_trace_file(file.path.string(), &from_binary, &err), err);
  CHECK(from_tree == from_binary);
}

TEST_CASE("trace files: plain JSON as is; a damaged gzip, a missing gzip program, a missing file named") {
  std::string text, err;
  {
    const ScratchFile plain("plain.json", "{\"format\": \"flashptx-trace-v1\"}\n");
    REQUIRE_MESSAGE(read_trace_file(plain.path.string(), &text, &err), err);
    CHECK(text == "{\"format\": \"flashptx-trace-v1\"}\n");
  }
  const std::string_view gz = flashptx_test::embedded_file(kTraceGz);
  REQUIRE(gz.size() > 1000);
  {
    const ScratchFile truncated("truncated.json.gz", gz.substr(0, 1000));
    CHECK_FALSE(read_trace_file(truncated.path.string(), &text, &err));
    CHECK(err.find("gzip could not decompress " + truncated.path.string()) != std::string::npos);
    CHECK(text.empty());
  }
  {
    const ScratchFile whole("whole.json.gz", gz);
    const char* old = std::getenv("PATH");
    const std::string saved = old ? old : "";
    setenv("PATH", "/nonexistent-flashptx-test", 1);
    const bool ok = read_trace_file(whole.path.string(), &text, &err);
    setenv("PATH", saved.c_str(), 1);
    CHECK_FALSE(ok);
    CHECK(err == whole.path.string() + " is gzip-compressed and reading it needs the gzip program, which is not on "
                                       "PATH (or decompress it first: gzip -dk " + whole.path.string() + ")");
  }
  CHECK_FALSE(read_trace_file("/nonexistent/trace.json", &text, &err));
  CHECK(err == "cannot read /nonexistent/trace.json");
}

}  // TEST_SUITE
