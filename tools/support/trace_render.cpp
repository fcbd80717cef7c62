// Pipeline trace decoding, summary and SVG: see tools/support/trace_render.h.
#include "tools/support/trace_render.h"

#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>

#include "src/protocol/trace.h"
#include "tools/support/json.h"

namespace flashptx::trace_render {

namespace tr = ::flashptx::trace;

RawTrace decode(const uint64_t* words, double clock_khz, const std::string& shape) {
  RawTrace t;
  t.clock_khz = clock_khz;
  t.shape = shape;
  for (int c = 0; c < tr::kMaxCtas; ++c)
    for (int l = 0; l < tr::kLanes; ++l) {
      const uint64_t* base = words + static_cast<size_t>(c * tr::kLanes + l) * tr::kWordsPerLane;
      if (base[0] == 0) continue;
      Lane lane;
      lane.cta = c;
      lane.lane = l;
      lane.count = base[0];
      lane.globaltimer_ns = base[1];
      const uint64_t n = std::min<uint64_t>(base[0], tr::kMaxRecords);
      for (uint64_t i = 0; i < n; ++i) {
        Record r;
        r.clock = base[2 + 2 * i];
        r.event = static_cast<uint32_t>(base[3 + 2 * i] >> 32);
        r.arg = static_cast<uint32_t>(base[3 + 2 * i]);
        lane.records.push_back(r);
      }
      t.lanes.push_back(std::move(lane));
    }
  return t;
}

// JSON: clocks as a decimal-string base plus deltas, so no value exceeds 2^53.
std::string to_json(const RawTrace& t) {
  json::Writer w;
  w.begin_object();
  w.kv("format", "flashptx-trace-v1").kv("clock_khz", t.clock_khz).kv("shape", t.shape);
  w.key("lanes").begin_array();
  for (const auto& l : t.lanes) {
    const uint64_t c0 = l.records.empty() ? 0 : l.records.front().clock;
    w.begin_object();
    w.kv("cta", l.cta).kv("lane", l.lane).kv("globaltimer_ns", std::to_string(l.globaltimer_ns));
    w.kv("count", static_cast<uint64_t>(l.count)).kv("clock0", std::to_string(c0));
    w.key("records").begin_array();  // [clock - clock0, event, arg]
    for (const auto& r : l.records) {
      w.begin_array().value(static_cast<uint64_t>(r.clock - c0)).value(static_cast<uint64_t>(r.event));
      w.value(static_cast<uint64_t>(r.arg)).end_array();
    }
    w.end_array();
    w.end_object();
  }
  w.end_array();
  w.end_object();
  return w.str() + "\n";
}

bool from_json(const std::string& text, RawTrace* t, std::string* err) {
  json::Value v;
  if (!json::parse(text, &v, err)) return false;
  if (v.str_or("format", "") != "flashptx-trace-v1") { *err = "not a flashptx-trace-v1 document"; return false; }
  *t = RawTrace();
  t->clock_khz = v.num_or("clock_khz", 0);
  t->shape = v.str_or("shape", "");
  const json::Value* lanes = v.get("lanes");
  if (!lanes || lanes->kind != json::Value::kArray) { *err = "no lanes"; return false; }
  for (const auto& lv : lanes->arr) {
    Lane l;
    l.cta = static_cast<int>(lv.num_or("cta", 0));
    l.lane = static_cast<int>(lv.num_or("lane", 0));
    l.globaltimer_ns = std::stoull(lv.str_or("globaltimer_ns", "0"));
    l.count = static_cast<uint64_t>(lv.num_or("count", 0));
    const uint64_t c0 = std::stoull(lv.str_or("clock0", "0"));
    const json::Value* recs = lv.get("records");
    if (!recs || recs->kind != json::Value::kArray) { *err = "lane without records"; return false; }
    for (const auto& r : recs->arr) {
      if (r.kind != json::Value::kArray || r.arr.size() != 3) { *err = "bad record"; return false; }
      l.records.push_back({c0 + static_cast<uint64_t>(r.arr[0].num), static_cast<uint32_t>(r.arr[1].num),
                           static_cast<uint32_t>(r.arr[2].num)});
    }
    t->lanes.push_back(std::move(l));
  }
  return true;
}

namespace {
std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}
}  // namespace

bool read_trace_file(const std::string& path, std::string* text, std::string* err) {
  std::ifstream f(path, std::ios::binary);
  if (!f) { *err = "cannot read " + path; return false; }
  std::ostringstream ss;
  ss << f.rdbuf();
  *text = ss.str();
  const bool gzip = text->size() >= 2 && static_cast<unsigned char>((*text)[0]) == 0x1f &&
                    static_cast<unsigned char>((*text)[1]) == 0x8b;
  if (!gzip) return true;
  text->clear();
  if (std::system("command -v gzip >/dev/null 2>&1") != 0) {
    *err = path + " is gzip-compressed and reading it needs the gzip program, which is not on PATH "
                  "(or decompress it first: gzip -dk " + path + ")";
    return false;
  }
  FILE* p = popen(("gzip -dc -- " + shell_quote(path) + " 2>/dev/null").c_str(), "r");
  if (!p) { *err = "cannot start gzip for " + path; return false; }
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) text->append(buf, n);
  const int st = pclose(p);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    *err = "gzip could not decompress " + path + " (exit status " +
           std::to_string(WIFEXITED(st) ? WEXITSTATUS(st) : -1) + "): a damaged or truncated file";
    text->clear();
    return false;
  }
  return true;
}

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::kTmaK: return "TMA K (issue -> full seen)";
    case Kind::kTmaV: return "TMA V (issue -> full seen)";
    case Kind::kQK: return "QK^T wgmma (issue -> retired)";
    case Kind::kSoftmax: return "softmax";
    case Kind::kPV: return "PV wgmma (issue -> retired)";
    case Kind::kToken: return "pingpong token wait";
    case Kind::kEpilogue: return "epilogue";
    case Kind::kSimCopy: return "async copy (issue -> landed)";
    case Kind::kSimWgmma: return "wgmma group (committed -> retired)";
    case Kind::kSimWait: return "mbarrier wait (suspended -> resumed)";
  }
  return "?";
}

namespace {

const char* kind_color(Kind k) {
  switch (k) {
    case Kind::kTmaK: return "#8fb8de";
    case Kind::kTmaV: return "#b7d7a8";
    case Kind::kQK: return "#3b6fb6";
    case Kind::kSoftmax: return "#e69138";
    case Kind::kPV: return "#6aa84f";
    case Kind::kToken: return "#cc4125";
    case Kind::kEpilogue: return "#8e7cc3";
    case Kind::kSimCopy: return "#8fb8de";
    case Kind::kSimWgmma: return "#3b6fb6";
    case Kind::kSimWait: return "#cc4125";
  }
  return "#999";
}

bool is_instant(uint32_t e) {
  return e == tr::kTmaIssueQ || e == tr::kEmptyWaitK || e == tr::kEmptyWaitV || e == tr::kFullK ||
         e == tr::kFullV || e == tr::kReleaseK || e == tr::kReleaseV || e == tr::kTokenPass;
}

const char* event_name(uint32_t e) {
  switch (e) {
    case tr::kTmaIssueQ: return "TMA Q issue";
    case tr::kEmptyWaitK: return "empty K passed";
    case tr::kEmptyWaitV: return "empty V passed";
    case tr::kFullK: return "full K passed";
    case tr::kFullV: return "full V passed";
    case tr::kReleaseK: return "release K";
    case tr::kReleaseV: return "release V";
    case tr::kTokenPass: return "token pass";
  }
  return "event";
}

}  // namespace

Timeline build_timeline(const RawTrace& t) {
  Timeline tl;
  const double cyc_per_us = t.clock_khz > 0 ? t.clock_khz / 1000.0 : 1000.0;  // 1 GHz if unknown
  // Per CTA: the lane whose first stamp is earliest sets the clock base and the globaltimer offset.
  std::map<int, std::pair<uint64_t, uint64_t>> base;  // cta -> (clock, globaltimer)
  uint64_t gt_min = UINT64_MAX;
  for (const auto& l : t.lanes) {
    if (l.records.empty()) continue;
    auto it = base.find(l.cta);
    if (it == base.end() || l.records.front().clock < it->second.first)
      base[l.cta] = {l.records.front().clock, l.globaltimer_ns};
  }
  for (const auto& b : base) gt_min = std::min(gt_min, b.second.second);
  auto us = [&](const Lane& l, uint64_t clock) {
    const auto& b = base[l.cta];
    return (static_cast<double>(clock) - static_cast<double>(b.first)) / cyc_per_us +
           static_cast<double>(b.second - gt_min) / 1000.0;
  };

  // Full passes of consumers per (cta, K/V, stage), in time order, for the producer's TMA spans.
  std::map<std::tuple<int, int, uint32_t>, std::vector<double>> full_seen;
  tl.t_begin = INFINITY;
  tl.t_end = -INFINITY;
  for (const auto& l : t.lanes) {
    if (l.records.empty()) continue;
    tl.active.push_back({l.cta, l.lane, us(l, l.records.front().clock), us(l, l.records.back().clock)});
    tl.t_begin = std::min(tl.t_begin, tl.active.back().t0);
    tl.t_end = std::max(tl.t_end, tl.active.back().t1);
    for (const auto& r : l.records)
      if (r.event == tr::kFullK || r.event == tr::kFullV)
        full_seen[{l.cta, r.event == tr::kFullK ? 0 : 1, r.arg}].push_back(us(l, r.clock));
  }
  for (auto& f : full_seen) std::sort(f.second.begin(), f.second.end());
  if (tl.active.empty()) tl.t_begin = tl.t_end = 0;

  for (const auto& l : t.lanes) {
    std::map<std::pair<uint32_t, uint32_t>, std::deque<double>> open;  // (begin event, arg) -> times
    double prev = NAN;
    for (const auto& r : l.records) {
      const double x = us(l, r.clock);
      if (is_instant(r.event)) tl.instants.push_back({l.cta, l.lane, r.event, r.arg, x, std::isnan(prev) ? 0.0 : x - prev});
      prev = x;
      switch (r.event) {
        case tr::kTmaIssueK:
        case tr::kTmaIssueV: {
          const int kv = r.event == tr::kTmaIssueK ? 0 : 1;
          const uint32_t stage = r.arg & 0xffu;
          const auto& seen = full_seen[{l.cta, kv, stage}];
          const auto it = std::lower_bound(seen.begin(), seen.end(), x);
          Span s{l.cta, l.lane, kv == 0 ? Kind::kTmaK : Kind::kTmaV, r.arg, x, it == seen.end() ? x : *it};
          s.open = it == seen.end();
          tl.spans.push_back(s);
          break;
        }
        case tr::kQKIssue: case tr::kSoftmaxBegin: case tr::kPVIssue: case tr::kTokenWait: case tr::kEpilogueBegin:
          open[{r.event, r.event == tr::kEpilogueBegin ? 0u : r.arg}].push_back(x);
          break;
        case tr::kQKDone: case tr::kSoftmaxEnd: case tr::kPVDone: case tr::kTokenGot: case tr::kEpilogueEnd: {
          const uint32_t begin = r.event - 1;  // each end id is its begin id + 1 in trace.h
          auto& q = open[{begin, r.event == tr::kEpilogueEnd ? 0u : r.arg}];
          if (q.empty()) { ++tl.unmatched_ends; break; }
          const Kind k = begin == tr::kQKIssue ? Kind::kQK : begin == tr::kSoftmaxBegin ? Kind::kSoftmax
                       : begin == tr::kPVIssue ? Kind::kPV : begin == tr::kTokenWait ? Kind::kToken : Kind::kEpilogue;
          tl.spans.push_back({l.cta, l.lane, k, r.arg, q.front(), x, false});
          q.pop_front();
          break;
        }
        default: break;
      }
    }
    const double lane_end = l.records.empty() ? 0 : us(l, l.records.back().clock);
    for (const auto& o : open)
      for (double x : o.second) {
        const uint32_t b = o.first.first;
        const Kind k = b == tr::kQKIssue ? Kind::kQK : b == tr::kSoftmaxBegin ? Kind::kSoftmax
                     : b == tr::kPVIssue ? Kind::kPV : b == tr::kTokenWait ? Kind::kToken : Kind::kEpilogue;
        tl.spans.push_back({l.cta, l.lane, k, o.first.second, x, lane_end, true});
      }
  }
  return tl;
}

double union_length(std::vector<std::pair<double, double>> iv) {
  std::sort(iv.begin(), iv.end());
  double total = 0, cur0 = 0, cur1 = 0;
  bool have = false;
  for (const auto& p : iv) {
    if (p.second <= p.first) continue;
    if (!have || p.first > cur1) {
      if (have) total += cur1 - cur0;
      cur0 = p.first;
      cur1 = p.second;
      have = true;
    } else {
      cur1 = std::max(cur1, p.second);
    }
  }
  if (have) total += cur1 - cur0;
  return total;
}

double covered_length(double a, double b, std::vector<std::pair<double, double>> iv) {
  for (auto& p : iv) {
    p.first = std::max(p.first, a);
    p.second = std::min(p.second, b);
  }
  return union_length(iv);
}

std::vector<ConsumerSummary> summarize(const Timeline& tl) {
  std::vector<ConsumerSummary> out;
  for (const auto& a : tl.active) {
    if (a.lane == 0) continue;  // the producer
    ConsumerSummary s;
    s.cta = a.cta;
    s.lane = a.lane;
    s.active_us = a.t1 - a.t0;
    std::vector<std::pair<double, double>> gemm, other_gemm;
    for (const auto& sp : tl.spans) {
      if (sp.cta != a.cta) continue;
      const bool is_gemm = sp.kind == Kind::kQK || sp.kind == Kind::kPV;
      if (sp.lane == a.lane) {
        if (is_gemm) gemm.push_back({sp.t0, sp.t1});
        if (sp.kind == Kind::kSoftmax) s.softmax_us += sp.t1 - sp.t0;
        if (sp.kind == Kind::kToken) s.wait_token_us += sp.t1 - sp.t0;
      } else if (sp.lane != 0 && is_gemm) {
        other_gemm.push_back({sp.t0, sp.t1});
      }
    }
    for (const auto& sp : tl.spans)
      if (sp.cta == a.cta && sp.lane == a.lane && sp.kind == Kind::kSoftmax)
        s.softmax_overlapped_us += covered_length(sp.t0, sp.t1, other_gemm);
    s.wgmma_us = union_length(gemm);
    s.wgmma_fraction = s.active_us > 0 ? s.wgmma_us / s.active_us : 0;
    s.softmax_overlapped_fraction = s.softmax_us > 0 ? s.softmax_overlapped_us / s.softmax_us : 0;
    // full waits: from the lane's previous stamp to the pass (see the header: an upper bound)
    for (const auto& in : tl.instants) {
      if (in.cta != a.cta || in.lane != a.lane) continue;
      if (in.event == tr::kFullK) s.wait_full_k_us += in.since_prev;
      if (in.event == tr::kFullV) s.wait_full_v_us += in.since_prev;
    }
    out.push_back(s);
  }
  return out;
}

std::string summary_text(const std::vector<ConsumerSummary>& v) {
  std::string o;
  char buf[512];
  std::snprintf(buf, sizeof buf, "%-4s %-9s %10s %8s %10s %10s %12s %12s %12s\n", "CTA", "consumer", "active us",
                "wgmma %", "softmax us", "sm ovl %", "wait K us", "wait V us", "token us");
  o += buf;
  for (const auto& s : v) {
    std::snprintf(buf, sizeof buf, "%-4d %-9d %10.2f %8.1f %10.2f %10.1f %12.2f %12.2f %12.2f\n", s.cta, s.lane - 1,
                  s.active_us, 100 * s.wgmma_fraction, s.softmax_us, 100 * s.softmax_overlapped_fraction,
                  s.wait_full_k_us, s.wait_full_v_us, s.wait_token_us);
    o += buf;
  }
  o += "wgmma %: time with a QK or PV wgmma batch in flight (issue -> retiring wait) / the consumer's\n"
       "active time. sm ovl %: softmax time during which another consumer of the CTA had a GEMM in\n"
       "flight. wait K/V: previous stamp -> full-barrier pass (an upper bound). token: bar.sync wait.\n";
  return o;
}

namespace {
double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
}  // namespace

std::vector<OwnOverlap> own_overlap(const Timeline& tl) {
  std::vector<OwnOverlap> out;
  for (const auto& a : tl.active) {
    if (a.lane == 0) continue;  // the producer
    OwnOverlap r;
    r.cta = a.cta;
    r.lane = a.lane;
    std::vector<double> waits, lone;
    for (const auto& pv : tl.spans) {
      if (pv.cta != a.cta || pv.lane != a.lane || pv.kind != Kind::kPV || pv.open) continue;
      double last_softmax_end = NAN;
      for (const auto& sm : tl.spans)
        if (sm.cta == a.cta && sm.lane == a.lane && sm.kind == Kind::kSoftmax && !sm.open && sm.t0 >= pv.t0 &&
            sm.t1 <= pv.t1)
          last_softmax_end = std::isnan(last_softmax_end) ? sm.t1 : std::max(last_softmax_end, sm.t1);
      if (std::isnan(last_softmax_end)) lone.push_back(pv.t1 - pv.t0);
      else waits.push_back(pv.t1 - last_softmax_end);
    }
    r.steady = static_cast<int>(waits.size());
    r.lone = static_cast<int>(lone.size());
    r.wait_after_softmax_us = median(waits);
    r.lone_pv_us = median(lone);
    r.hidden_fraction = r.lone_pv_us > 0 ? std::max(0.0, 1.0 - r.wait_after_softmax_us / r.lone_pv_us) : 0;
    r.overlapped = r.steady > 0 && r.lone > 0 && r.hidden_fraction >= kMinHiddenFraction;
    out.push_back(r);
  }
  return out;
}

std::string own_overlap_text(const std::vector<OwnOverlap>& v) {
  std::string o;
  char buf[512];
  std::snprintf(buf, sizeof buf, "%-4s %-9s %7s %6s %12s %10s %9s  %s\n", "CTA", "consumer", "steady", "lone", "wait-after us",
                "lone PV us", "hidden %", "PV(j-1) under softmax(j)");
  o += buf;
  for (const auto& r : v) {
    std::snprintf(buf, sizeof buf, "%-4d %-9d %7d %6d %12.3f %10.3f %9.1f  %s\n", r.cta, r.lane - 1, r.steady, r.lone,
                  r.wait_after_softmax_us, r.lone_pv_us, 100 * r.hidden_fraction,
                  r.overlapped ? "yes" : "no: pv_not_overlapped_at_run_time");
    o += buf;
  }
  o += "steady/lone: PV spans with / without a softmax of the same consumer inside. wait-after: median time\n"
       "from softmax(j)'s end to PV(j-1)'s retiring wait; lone PV: median issue -> retire of a PV with\n"
       "nothing to hide behind (the drain). hidden %: 1 - wait-after / lone PV; overlap counted from 10%.\n";
  return o;
}

std::string truncation_note(const RawTrace& t) {
  int lanes = 0;
  uint64_t most = 0;
  size_t kept = 0;
  for (const Lane& l : t.lanes)
    if (l.count > l.records.size()) {
      ++lanes;
      most = std::max<uint64_t>(most, l.count);
      kept = std::max(kept, l.records.size());
    }
  if (lanes == 0) return "";
  return std::to_string(lanes) + " of " + std::to_string(t.lanes.size()) + " lanes stamped more records than the buffer keeps (up to " +
         std::to_string(most) + ", kept " + std::to_string(kept) + "): their timelines end at the last kept record";
}

SvgBand svg_band(Kind k, bool producer) {
  if (k == Kind::kSimCopy) return {0.0, 1.0 / 3};
  if (k == Kind::kSimWgmma) return {1.0 / 3, 2.0 / 3};
  if (k == Kind::kSimWait) return {2.0 / 3, 1.0};
  if (producer) return k == Kind::kTmaV ? SvgBand{0.5, 1.0} : SvgBand{0.0, 0.5};
  switch (k) {
    case Kind::kQK: return {0.0, 0.25};
    case Kind::kSoftmax: return {0.25, 0.5};
    case Kind::kPV: return {0.5, 0.75};
    default: return {0.75, 1.0};  // token wait, epilogue
  }
}

std::string render_svg(const Timeline& tl, const std::string& title, const std::string& note) {
  // Rows: (cta, lane) in order. A consumer row has one band per kind of span (svg_band), so that a
  // softmax under its consumer's PV (the two-stage overlap) shows instead of hiding behind it.
  std::vector<std::pair<int, int>> rows;
  for (const auto& a : tl.active) rows.push_back({a.cta, a.lane});
  std::sort(rows.begin(), rows.end());
  const double left = 150, right = 30, top = note.empty() ? 50 : 66, width = 1400;
  const double producer_h = 26, consumer_h = 44, pad = 3;
  const double plot_w = width - left - right;
  std::vector<double> row_y, row_h;
  double y_end = top;
  for (const auto& r : rows) {
    row_y.push_back(y_end);
    row_h.push_back(r.second == 0 && !tl.sim ? producer_h : consumer_h);
    y_end += row_h.back();
  }
  const double span = std::max(1e-9, tl.t_end - tl.t_begin);
  auto X = [&](double t) { return left + (t - tl.t_begin) / span * plot_w; };
  auto row_of = [&](int cta, int lane) {
    for (size_t i = 0; i < rows.size(); ++i)
      if (rows[i].first == cta && rows[i].second == lane) return static_cast<int>(i);
    return -1;
  };
  auto esc = [](const std::string& s) {
    std::string r;
    for (char c : s) r += c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;" : c == '"' ? "&quot;" : std::string(1, c);
    return r;
  };
  std::string body;
  char buf[512];
  std::snprintf(buf, sizeof buf, "<text x=\"%.0f\" y=\"20\" font-size=\"14\">%s</text>\n", left, esc(title).c_str());
  body += buf;
  if (!note.empty()) {
    std::snprintf(buf, sizeof buf, "<text x=\"%.0f\" y=\"38\" fill=\"#a61c00\">%s</text>\n", left, esc(note).c_str());
    body += buf;
  }
  // lanes
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::string name = tl.sim ? "warp " + std::to_string(rows[i].second)
                             : rows[i].second == 0 ? "producer" : "consumer " + std::to_string(rows[i].second - 1);
    std::snprintf(buf, sizeof buf,
                  "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>\n"
                  "<text class=\"lane\" x=\"8\" y=\"%.1f\">CTA %d %s</text>\n",
                  left, row_y[i], plot_w, row_h[i], i % 2 ? "#f4f4f4" : "#ffffff", row_y[i] + row_h[i] * 0.5 + 4,
                  rows[i].first, name.c_str());
    body += buf;
  }
  // spans, each in its kind's band of the row
  for (const auto& s : tl.spans) {
    const int r = row_of(s.cta, s.lane);
    if (r < 0) continue;
    const SvgBand b = svg_band(s.kind, s.lane == 0 && !tl.sim);
    const double inner = row_h[r] - 2 * pad;
    const double y = row_y[r] + pad + inner * b.top, h = inner * (b.bottom - b.top) - 0.5;
    std::snprintf(buf, sizeof buf,
                  "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\" fill-opacity=\"%s\" stroke=\"%s\" stroke-width=\"0.3\">"
                  "<title>%s arg %u: %.3f-%.3f %s%s</title></rect>\n",
                  X(s.t0), y, std::max(0.5, X(s.t1) - X(s.t0)), h, kind_color(s.kind),
                  (s.kind == Kind::kTmaK || s.kind == Kind::kTmaV || s.kind == Kind::kSimCopy) ? "0.6" : "0.9", kind_color(s.kind),
                  esc(tl.sim ? s.label : kind_name(s.kind)).c_str(), s.arg, s.t0, s.t1, tl.sim ? "steps" : "us",
                  s.open ? " (never closed)" : "");
    body += buf;
  }
  for (const auto& in : tl.instants) {
    const int r = row_of(in.cta, in.lane);
    if (r < 0) continue;
    const double y = row_y[r], h = row_h[r];
    const bool release = !tl.sim && (in.event == tr::kReleaseK || in.event == tr::kReleaseV || in.event == tr::kTokenPass);
    std::snprintf(buf, sizeof buf,
                  "<line x1=\"%.2f\" x2=\"%.2f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"1\"><title>%s arg %u at %.3f %s</title></line>\n",
                  X(in.t), X(in.t), release ? y + h - pad : y, release ? y + h : y + pad,
                  release ? "#000000" : "#666666", tl.sim ? esc(in.label).c_str() : event_name(in.event), in.arg, in.t,
                  tl.sim ? "steps" : "us");
    body += buf;
  }
  // axis
  const double ay = y_end + 4;
  std::snprintf(buf, sizeof buf, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n", left,
                left + plot_w, ay, ay);
  body += buf;
  const double raw_step = span / 10;
  const double mag = std::pow(10.0, std::floor(std::log10(raw_step)));
  const double step = raw_step / mag < 2 ? 2 * mag : raw_step / mag < 5 ? 5 * mag : 10 * mag;
  for (double t = std::ceil(tl.t_begin / step) * step; t <= tl.t_end + 1e-9; t += step) {
    std::snprintf(buf, sizeof buf,
                  "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/><text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n",
                  X(t), X(t), ay, ay + 5, X(t), ay + 17, t);
    body += buf;
  }
  std::snprintf(buf, sizeof buf, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", left + plot_w, ay + 32,
                tl.sim ? "logical clock (simulator scheduler steps)" : "time (us)");
  body += buf;
  // legend: entries flow left to right, each as wide as its text (svg_text_width), wrapping at the
  // plot's right edge
  double ly = ay + 45, lx = left;
  const std::vector<Kind> kinds =
      tl.sim ? std::vector<Kind>{Kind::kSimCopy, Kind::kSimWgmma, Kind::kSimWait}
             : std::vector<Kind>{Kind::kTmaK, Kind::kTmaV, Kind::kQK, Kind::kSoftmax, Kind::kPV, Kind::kToken, Kind::kEpilogue};
  body += "<g class=\"legend\">\n";
  for (Kind k : kinds) {
    const double w = 16 + svg_text_width(kind_name(k)) + 24;
    if (lx + w > left + plot_w) { lx = left; ly += 20; }
    std::snprintf(buf, sizeof buf, "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/><text x=\"%.1f\" y=\"%.1f\">%s</text>\n",
                  lx, ly, kind_color(k), lx + 16, ly + 10, esc(kind_name(k)).c_str());
    body += buf;
    lx += w;
  }
  const std::vector<const char*> lines =
      tl.sim ? std::vector<const char*>{
                   "rows: the warps of each CTA; top to bottom: copies the warp issued, its wgmma groups, its mbarrier waits.",
                   "ticks: an mbarrier phase completed or a named barrier released. Hover a bar or tick for the PTX line."}
             : std::vector<const char*>{
                   "producer rows: TMA K above, TMA V below. consumer rows, top to bottom: QK^T, softmax, PV, token wait / epilogue.",
                   "ticks: top grey = barrier passed / TMA Q issued; bottom black = release K/V or token pass. Hover a bar for its argument and times."};
  for (const char* l : lines) {
    ly += 20;
    std::snprintf(buf, sizeof buf, "<text x=\"%.1f\" y=\"%.1f\">%s</text>\n", left, ly + 10, l);
    body += buf;
  }
  body += "</g>\n</svg>\n";
  const double height = ly + 24;
  std::snprintf(buf, sizeof buf,
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" font-size=\"11\">\n"
                "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
                width, height);
  return buf + body;
}

double svg_text_width(const std::string& s) { return 6.5 * static_cast<double>(s.size()); }

bool sim_timeline(const std::string& log, Timeline* tl, std::string* err) {
  *tl = Timeline{};
  tl->sim = true;
  struct Open { int warp; double t; std::string label; };
  std::map<std::pair<int, long>, Open> copies;                  // (cta, copy id)
  std::map<std::tuple<int, int, long>, Open> groups;            // (cta, warp, group)
  std::map<std::pair<int, int>, Open> waits;                    // (cta, warp)
  std::map<std::pair<int, int>, std::pair<double, double>> act;  // (cta, warp): first, last event
  // "copy 12: ..." -> 12; -1 when `what` does not start with `tag`.
  auto id_of = [](const std::string& what, const char* tag) -> long {
    const size_t n = std::strlen(tag);
    if (what.compare(0, n, tag) != 0) return -1;
    return std::strtol(what.c_str() + n, nullptr, 10);
  };
  // Labels go into the SVG's titles: bounded, so that a long PTX line cannot overflow a record.
  auto label = [](const std::string& s) { return s.size() > 200 ? s.substr(0, 200) + "..." : s; };
  double t_min = 0, t_max = 0;
  bool any = false;
  size_t pos = 0;
  int line_no = 0;
  while (pos < log.size()) {
    size_t nl = log.find('\n', pos);
    if (nl == std::string::npos) nl = log.size();
    const std::string line = log.substr(pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    if (line.empty() || line[0] == '#' || line.compare(0, 7, "launch ") == 0) continue;
    unsigned long long clock = 0;
    int cta = 0, warp = 0, used = 0;
    char ev[32] = {0};
    if (std::sscanf(line.c_str(), "%llu %d %d %31s %n", &clock, &cta, &warp, ev, &used) < 4) {
      *err = "line " + std::to_string(line_no) + " is not \"clock cta warp event what\": " + line.substr(0, 80);
      return false;
    }
    const std::string e = ev, what = line.substr(static_cast<size_t>(used));
    const double t = static_cast<double>(clock);
    if (!any) t_min = t_max = t;
    t_min = std::min(t_min, t);
    t_max = std::max(t_max, t);
    any = true;
    auto& a = act.try_emplace({cta, warp}, t, t).first->second;
    a.first = std::min(a.first, t);
    a.second = std::max(a.second, t);
    if (e == "tma-issue") {
      copies[{cta, id_of(what, "copy ")}] = Open{warp, t, label(what)};
    } else if (e == "tma-land") {
      auto it = copies.find({cta, id_of(what, "copy ")});
      if (it != copies.end()) {
        tl->spans.push_back(Span{cta, it->second.warp, Kind::kSimCopy, 0, it->second.t, t, false, it->second.label});
        copies.erase(it);
      }
    } else if (e == "wgmma-commit") {
      groups[{cta, warp, id_of(what, "group ")}] = Open{warp, t, label(what)};
    } else if (e == "wgmma-retire") {
      auto it = groups.find({cta, warp, id_of(what, "group ")});
      if (it != groups.end()) {
        tl->spans.push_back(Span{cta, warp, Kind::kSimWgmma, 0, it->second.t, t, false, it->second.label + " -> " + label(what)});
        groups.erase(it);
      }
    } else if (e == "wait-begin") {
      waits.try_emplace({cta, warp}, Open{warp, t, label(what)});
    } else if (e == "wait-end") {
      auto it = waits.find({cta, warp});
      if (it != waits.end()) {
        tl->spans.push_back(Span{cta, warp, Kind::kSimWait, 0, it->second.t, t, false, it->second.label});
        waits.erase(it);
      }
    } else if (e == "phase" || e == "barrier") {
      tl->instants.push_back(Instant{cta, warp, 0, 0, t, 0, label(e + " " + what)});
    }
  }
  if (!any) {
    *err = "the log holds no event";
    return false;
  }
  for (const auto& [k, o] : copies) tl->spans.push_back(Span{k.first, o.warp, Kind::kSimCopy, 0, o.t, t_max, true, o.label});
  for (const auto& [k, o] : groups) tl->spans.push_back(Span{std::get<0>(k), o.warp, Kind::kSimWgmma, 0, o.t, t_max, true, o.label});
  for (const auto& [k, o] : waits) tl->spans.push_back(Span{k.first, o.warp, Kind::kSimWait, 0, o.t, t_max, true, o.label});
  for (const auto& [k, a] : act) tl->active.push_back(Timeline::Active{k.first, k.second, a.first, a.second});
  tl->t_begin = t_min;
  tl->t_end = t_max > t_min ? t_max : t_min + 1;
  return true;
}

}  // namespace flashptx::trace_render
