// The kernel table: every kernel the library can launch, one row each, in one table.
//
// Rows come from the files that instantiate the kernels (src/sm90/fa3_fwd.cu, ...): each lists its
// specializations once and returns them as a span; kernel_table() is their concatenation. The
// launch plans (src/plan.h) choose a row by its fields, never by spelling a symbol, so a kernel
// that does not exist is a plan error a host test sees, not a null pointer at launch.
#pragma once
#include <cstdint>
#include <span>
#include <string_view>

#include "include/flashptx.h"

namespace flashptx {

enum class Family : uint8_t {
  kFa3Fwd,        // FA3 forward (src/sm90/fa3_fwd.cu)
  kFa3FwdTraced,  // the instrumented FA3 forward behind `flashptx trace` (src/sm90/fa3_fwd_trace.cu)
  kFa3FwdVarlen,  // FA3 forward over packed variable-length sequences (src/sm90/fa3_fwd.cu)
  kFa3Bwd,        // FA3 backward, main kernel (src/sm90/fa3_bwd.cu)
  kFa3BwdPre,     // FA3 backward preprocess: delta, LSE2, dQ accumulator zeroed (any head dim)
  kFa3BwdPostDq,  // FA3 backward postprocess: dQ from its fp32 accumulator
  kFa3BwdPostDkv, // FA3 backward postprocess under GQA: dK and dV from their fp32 accumulators
  kFa4Fwd,        // FA4 forward, sm_100a (src/sm100/fa4_fwd.cu); compiled and audited, never run here
  kFa4Bwd,        // FA4 backward, sm_100a, main kernel (src/sm100/fa4_bwd.cu); compiled and audited, never run
  kFa4BwdPre,     // its preprocess (the FA3 body compiled for sm_100a)
  kFa4BwdPostDq,  // its dQ postprocess (the FA4 accumulator order)
  kFa4BwdPostDkv, // its GQA dK/dV postprocess (the FA3 body compiled for sm_100a)
  kFa3FwdFp8,     // FA3 FP8 forward (src/sm90/fa3_fwd_fp8.cu): described here, launched by its own
                  // rule (launch_fwd_fp8), not by a launch plan
  kFa3FwdKvcache,         // FA3 forward over a KV cache (src/sm90/fa3_fwd_kvcache.cu), launched by
  kFa3FwdKvcacheCombine,  // src/kvcache.cpp; and its split-KV combine
  kFa3FwdKvcacheAppend,   // and its append of new keys/values with rotary
  kFa3BwdSink,    // FA3 backward: the attention sinks' gradient from the preprocess's scratch
                  // (src/sm90/fa3_bwd_sink.cu; any dtype and head dim)
  kFa3BwdVarlen,         // FA3 backward over packed variable-length sequences (src/sm90/fa3_bwd_varlen.cu)
  kFa3BwdVarlenPre,      // and its preprocess,
  kFa3BwdVarlenPostDq,   // its dQ postprocess,
  kFa3BwdVarlenPostDkv,  // its GQA dK/dV postprocess
};
const char* family_name(Family f);

// One protocol switch of a kernel's configuration, by its config field's name (`flashptx kernels`
// prints them). value: 0/1 for a flag, the count for a count; text: the enumerator's name where the
// field is an enum (value is then its index), else nullptr.
struct KernelSwitch {
  const char* name;
  int value;
  const char* text = nullptr;
};

struct KernelEntry {
  const char* name;  // the extern "C" symbol, also its golden's name (sass_golden/<arch>/<name>.sass)
  Family family;
  flashptx_dtype dtype;
  int head_dim;           // 0: any (the backward's pre/postprocess)
  int block_m, block_n;   // query rows and keys per tile / stage
  int stages;             // depth of the K/V (or Q/dO) rings
  int consumer_wgs;       // MMA warpgroups
  bool pingpong;
  bool persistent;        // loops over work tiles: a grid smaller than the tile count is legal
  int threads;            // per CTA
  int smem_bytes;         // dynamic shared memory per CTA
  const void* fn;         // the __global__ function
  int cluster_ctas = 1;   // CTAs per cluster (2: the cta_group::2 pair; the kernel declares it)
  bool paired = false;    // FA3 forward: persistent CTAs walk the paired causal schedule (causal only)
  bool dynamic = false;   // FA3 forward: also the dynamic schedule, given a tile counter (FwdConfig::dynamic_walk)
  int head_dim_v = 0;     // FA3 forward: V's and O's head dim (FwdConfig::head_dim_v); 0: head_dim
  // The config's other protocol switches (register split, O staging, tile feed, ...), in field
  // order; empty for kernels whose config has none beyond the fields above.
  std::span<const KernelSwitch> switches = {};
};

std::span<const KernelEntry> kernel_table();
const KernelEntry* kernel_by_name(std::string_view name);

// Per-family rows (defined beside the instantiations).
std::span<const KernelEntry> fa3_fwd_kernels();
std::span<const KernelEntry> fa3_fwd_traced_kernels();
std::span<const KernelEntry> fa3_fwd_traced_paired_kernels();
std::span<const KernelEntry> fa3_fwd_traced_d64_kernels();
std::span<const KernelEntry> fa3_fwd_varlen_kernels();
std::span<const KernelEntry> fa3_fwd_local_kernels();         // the sliding window and the softcap
std::span<const KernelEntry> fa3_fwd_varlen_local_kernels();  // (src/sm90/fa3_fwd_local.cu)
std::span<const KernelEntry> fa3_fwd_sink_kernels();          // the attention sinks (src/sm90/fa3_fwd_sink.cu)
std::span<const KernelEntry> fa3_fwd_hdim_kernels();          // head dims 96, 192 and (192, 128) (src/sm90/fa3_fwd_hdim.cu)
std::span<const KernelEntry> fa3_fwd_hdim_local_kernels();    // their window, softcap and sinks (src/sm90/fa3_fwd_hdim_local.cu)
std::span<const KernelEntry> fa3_fwd_varlen_hdim_local_kernels();  // their varlen twins (the same file)
std::span<const KernelEntry> fa3_fwd_fp8_kernels();
std::span<const KernelEntry> fa3_fwd_kvcache_kernels();  // the KV-cache forward and its combine
std::span<const KernelEntry> fa3_bwd_kernels();
std::span<const KernelEntry> fa3_bwd_sink_kernels();  // the sinks' gradient (src/sm90/fa3_bwd_sink.cu)
std::span<const KernelEntry> fa3_bwd_varlen_kernels();  // packed sequences (src/sm90/fa3_bwd_varlen.cu)
std::span<const KernelEntry> fa3_bwd_local_kernels();         // the sliding window and the softcap
std::span<const KernelEntry> fa3_bwd_varlen_local_kernels();  // (src/sm90/fa3_bwd_local.cu)
std::span<const KernelEntry> fa4_fwd_kernels();
std::span<const KernelEntry> fa4_bwd_kernels();
std::span<const KernelEntry> fa4_bwd_pair_kernels();  // the 2-CTA form (src/sm100/fa4_bwd_pair.cu)

}  // namespace flashptx
