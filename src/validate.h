// Validation of the C ABI's parameters, in one place: pure host code, no CUDA call, so every bad
// input is testable on any machine. Each function returns FLASHPTX_OK or the status of the first
// problem found, with *msg naming it.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>

#include "include/flashptx.h"

namespace flashptx {

// Sizes, scale, dtypes, head dim, heads, pointers, alignment and strides of a forward problem.
// Batch or seqlen_q 0 is valid (nothing to compute) and skips the pointer and stride checks.
flashptx_status validate_fwd(const flashptx_fwd_params& p, std::string* msg);

// A varlen forward problem: sizes, scale, dtype, head dim, heads, num_seqs against
// FLASHPTX_VARLEN_MAX_SEQS, every entry of the host prefix sums (FLASHPTX_ERR_BAD_CU_SEQLENS, naming
// the entry), max_seqlen, pointers, alignment and strides. num_seqs 0 or total_q 0 is valid (nothing
// to compute) once the prefix sums that exist are consistent.
flashptx_status validate_fwd_varlen(const flashptx_fwd_varlen_params& p, std::string* msg);

// The backward's sizes, dtype, head dim and heads (what flashptx_bwd_workspace_size needs).
flashptx_status validate_bwd_shape(const flashptx_bwd_params& p, std::string* msg);
// Everything: the shape, pointers, alignment, strides and the workspace (whose size the caller
// computes from the plan: `workspace_needed`).
flashptx_status validate_bwd(const flashptx_bwd_params& p, int64_t workspace_needed, std::string* msg);
// validate_bwd less the shape: for a caller that has validated the shape already (batch > 0).
flashptx_status validate_bwd_buffers(const flashptx_bwd_params& p, int64_t workspace_needed, std::string* msg);

// A varlen backward problem's sizes, scale, num_seqs (against FLASHPTX_VARLEN_MAX_SEQS), dtype,
// head dim and heads: what flashptx_bwd_varlen_workspace_size needs (the prefix sums are not read).
// num_seqs 0, or total_q and total_k 0, is valid (nothing to compute).
flashptx_status validate_bwd_varlen_shape(const flashptx_bwd_varlen_params& p, std::string* msg);
// The rest, for a problem whose shape is valid and not empty: every entry of the host prefix sums
// (FLASHPTX_ERR_BAD_CU_SEQLENS naming it), pointers, alignment, strides and the workspace.
flashptx_status validate_bwd_varlen_buffers(const flashptx_bwd_varlen_params& p, int64_t workspace_needed,
                                            std::string* msg);
// Nothing to compute: no sequence, or no query row and no key.
inline bool bwd_varlen_empty(const flashptx_bwd_varlen_params& p) {
  return p.num_seqs == 0 || (p.total_q == 0 && p.total_k == 0);
}

// flashptx_quantize_fp8: sizes (batch and heads at most 65535), dtypes, head dim, granularity, the
// Hadamard block, then (unless there is nothing to do) pointers, alignment and strides.
flashptx_status validate_quantize_fp8(const flashptx_quantize_fp8_params& p, std::string* msg);

// flashptx_fwd_fp8: every rule of include/flashptx.h ("FP8 forward"), one status per kind of fault.
flashptx_status validate_fwd_fp8(const flashptx_fwd_fp8_params& p, std::string* msg);
// The number of descales a call writes, from its validated sizes and granularity.
int64_t quantize_fp8_descale_count(const flashptx_quantize_fp8_params& p);

// Every size is 0 or more; the first that is not is named with its value ("seqlen_q is -5: ...").
struct SizeField { const char* name; int64_t value; };
flashptx_status check_sizes(std::initializer_list<SizeField> sizes, std::string* msg);

// The strides of one [batch, seqlen, heads, d] tensor of 2-byte elements: non-negative, non-zero
// where the extent is above one, rows 16-byte aligned, below 2^39 elements; with must_not_overlap
// (outputs), distinct (b, s, h) rows never share an element.
flashptx_status check_strides(const char* name, int64_t batch, int64_t seqlen, int64_t heads, int64_t d, int64_t sb,
                              int64_t ss, int64_t sh, bool must_not_overlap, std::string* msg);

}  // namespace flashptx
