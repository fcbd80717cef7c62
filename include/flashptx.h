/* flashptx: the C ABI.
 *
 * One call, one status. Bad input returns a distinct status, launches nothing, and leaves a message
 * readable through flashptx_last_error() (per host thread). Nothing here allocates device memory.
 *
 * Tensors are [batch, seqlen, heads, head_dim] with the last dimension contiguous; the other three
 * strides are given in elements, are arbitrary (64-bit), and must keep every row 16-byte aligned.
 * LSE, when asked for, is fp32 [batch, heads_q, seqlen_q], contiguous, natural log.
 *
 * What runs where (any other device, or none: FLASHPTX_ERR_UNSUPPORTED_DEVICE, with the reason):
 *   sm_90 (Hopper)      the FA3 kernels: forward, backward, variable-length forward and backward, FP8 quantize and
 *                       FP8 forward. bf16 or fp16 in and out (all tensors one dtype); head_dim 64, 128,
 *                       256 (the fixed-length forward also 96, 192, and 192 with a V head dim of 128:
 *                       flashptx_fwd_params::head_dim_v; the backward, fixed-length and varlen, also
 *                       96, 192 and (192, 128): flashptx_bwd_params::head_dim_v);
 *                       causal masks aligned to the bottom-right when seqlen_q != seqlen_k (as
 *                       FlashAttention does); heads_q a multiple of heads_kv (GQA, MQA).
 *   sm_100 (Blackwell)  the FA4 kernels: forward and backward, head_dim 64 and 128, otherwise as above.
 *                       They have never executed on a Blackwell GPU (compiled, SASS-audited and
 *                       replayed on an emulator only), so they run only after the caller opts in:
 *                       flashptx_set_option(FLASHPTX_OPT_ALLOW_UNVERIFIED_SM100, 1). Without it every
 *                       call (and kernel_info) on an sm_100 device answers FLASHPTX_ERR_UNSUPPORTED_DEVICE.
 *
 * Version: flashptx_version(). The shared library's SONAME is libflashptx.so.MAJOR; it changes when a
 * release removes or changes a call, a struct field or an enum value (adding them keeps it).
 */
#ifndef FLASHPTX_H
#define FLASHPTX_H

#include <stdint.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum flashptx_status {
  FLASHPTX_OK = 0,
  FLASHPTX_ERR_NULL_POINTER = 1,        /* q, k, v or o is null */
  FLASHPTX_ERR_MISALIGNED = 2,          /* a base pointer or row is not 16-byte aligned */
  FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM = 3,
  FLASHPTX_ERR_UNSUPPORTED_DTYPE = 4,
  FLASHPTX_ERR_DTYPE_MISMATCH = 5,      /* q, k, v, o not all of one dtype */
  FLASHPTX_ERR_BAD_STRIDES = 6,         /* negative, zero where it matters, or overlapping rows */
  FLASHPTX_ERR_BAD_HEADS = 7,           /* heads_q not a positive multiple of heads_kv */
  FLASHPTX_ERR_BAD_SHAPE = 8,           /* a negative size, or a non-finite / non-positive scale */
  FLASHPTX_ERR_UNSUPPORTED_DEVICE = 9,  /* no usable GPU, a GPU this build has no kernels for, or
                                           sm_100 without FLASHPTX_OPT_ALLOW_UNVERIFIED_SM100 */
  FLASHPTX_ERR_CUDA = 10,               /* a CUDA call failed; the message names it */
  FLASHPTX_ERR_NULL_PARAMS = 11,
  FLASHPTX_ERR_BAD_OPTION = 12,         /* flashptx_set_option: an option or value outside the enum;
                                           internal API (the CLI's --kernel/--schedule): a variant
                                           selection that does not fit the problem */
  FLASHPTX_ERR_WORKSPACE = 13,          /* backward: workspace NULL, misaligned or smaller than
                                           flashptx_bwd_workspace_size */
  FLASHPTX_ERR_BAD_CU_SEQLENS = 14,     /* varlen: cu_seqlens not starting at 0, decreasing, not ending
                                           at the total, or a max_seqlen below the longest sequence */
  FLASHPTX_ERR_TOO_MANY_SEQS = 15,      /* varlen: num_seqs above FLASHPTX_VARLEN_MAX_SEQS */
  FLASHPTX_ERR_BAD_GRANULARITY = 16,    /* quantize, FP8 forward: a scale granularity outside the enum */
  FLASHPTX_ERR_BAD_HADAMARD = 17,       /* quantize: a Hadamard block that is neither 0, head_dim nor 128 */
  FLASHPTX_ERR_NULL_DESCALE = 18,       /* FP8 forward: descale_q, descale_k or descale_v is NULL */
  FLASHPTX_ERR_BAD_V_LAYOUT = 19,       /* FP8 forward: a V layout outside flashptx_fp8_v_layout */
  FLASHPTX_ERR_BAD_WINDOW = 20,         /* a sliding window bound below -1 */
  FLASHPTX_ERR_BAD_SOFTCAP = 21,        /* a softcap that is negative, NaN or infinite */
  FLASHPTX_ERR_UNSUPPORTED = 22,        /* a variant this call does not have yet (the message names it):
                                           a window, a softcap or sinks on sm_100 */
  FLASHPTX_ERR_BAD_SINKS = 23           /* backward: sinks without dsinks or dsinks without sinks */
} flashptx_status;

typedef enum flashptx_dtype {
  FLASHPTX_BF16 = 0,
  FLASHPTX_FP16 = 1,
  FLASHPTX_FP32 = 2, /* not supported for q/k/v/o; named so that a mismatch can be reported */
  FLASHPTX_FP8_E4M3 = 3
} flashptx_dtype;

/* ---- version and options -------------------------------------------------------------------- */

/* The library's version, "MAJOR.MINOR.PATCH" (for example "0.9.0"): static storage, never NULL. */
const char* flashptx_version(void);
/* The same version as one number, MAJOR * 10000 + MINOR * 100 + PATCH (0.9.0: 900). */
int flashptx_version_number(void);

/* Process-wide options: set them before the calls they are to govern (a call reads them once, when
 * it plans). Every option starts at 0. */
typedef enum flashptx_option {
  /* 1: on an sm_100 (Blackwell) device, run the FA4 kernels although they have never executed on a
   * Blackwell GPU. 0 (the default): calls on sm_100 answer FLASHPTX_ERR_UNSUPPORTED_DEVICE. */
  FLASHPTX_OPT_ALLOW_UNVERIFIED_SM100 = 1
} flashptx_option;

/* Sets `option` to `value` (FLASHPTX_OPT_ALLOW_UNVERIFIED_SM100: 0 or 1). FLASHPTX_OK, or
 * FLASHPTX_ERR_BAD_OPTION naming the unknown option or the value out of range (nothing changes). */
flashptx_status flashptx_set_option(flashptx_option option, int64_t value);
/* Reads `option` into *value. FLASHPTX_OK, FLASHPTX_ERR_BAD_OPTION, or FLASHPTX_ERR_NULL_POINTER. */
flashptx_status flashptx_get_option(flashptx_option option, int64_t* value);

/* ---- forward ----------------------------------------------------------------------------------- */

typedef struct flashptx_fwd_params {
  const void* q;   /* [batch, seqlen_q, heads_q, head_dim] */
  const void* k;   /* [batch, seqlen_k, heads_kv, head_dim] */
  const void* v;   /* [batch, seqlen_k, heads_kv, head_dim] */
  void* o;         /* [batch, seqlen_q, heads_q, head_dim] */
  float* lse;      /* optional: [batch, heads_q, seqlen_q] fp32, or NULL */

  int64_t batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim;

  /* strides in elements: batch, row (sequence position), head */
  int64_t q_batch_stride, q_row_stride, q_head_stride;
  int64_t k_batch_stride, k_row_stride, k_head_stride;
  int64_t v_batch_stride, v_row_stride, v_head_stride;
  int64_t o_batch_stride, o_row_stride, o_head_stride;

  flashptx_dtype q_dtype, k_dtype, v_dtype, o_dtype;
  int causal;            /* nonzero: causal, bottom-right aligned */
  float softmax_scale;   /* 0 means 1/sqrt(head_dim) */
  /* Optional (NULL: a static schedule). Two words of device memory, 8-byte aligned, zero before the
   * first call that uses them; every call leaves them zero again. Where the launch plan runs a kernel
   * with the dynamic schedule (a causal d64 forward on the 128-row paired kernel), its CTAs take their
   * tiles from this counter, longest first; other launches do not touch it. Calls that may run at the
   * same time (other streams, graph launches) need counters of their own: a shared one hands each call
   * the other's tiles. A call that stops part-way (a trap) leaves it nonzero: zero it again. */
  uint32_t* tile_counter;
  /* Optional score modifiers (all zero: none). sm_90 only; the backward does not have them yet
   * (FLASHPTX_ERR_UNSUPPORTED there, and on sm_100).
   * window nonzero: FlashAttention's sliding window (window_size = (left, right) in its Python API),
   *   aligned to the bottom-right like the causal mask: query i sees key j iff
   *   i + seqlen_k - seqlen_q - window_left <= j <= i + seqlen_k - seqlen_q + window_right, a bound of
   *   -1 meaning unbounded on that side (below -1: FLASHPTX_ERR_BAD_WINDOW). causal is the window
   *   (-1, 0): with causal set, window_right is taken as 0. A row that sees no key has O = 0 and
   *   LSE = -inf.
   * softcap > 0: every score s = softmax_scale * q.k becomes softcap * tanh(s / softcap) before the
   *   mask (Gemma 2's logit softcap, as FlashAttention-3 applies it); the LSE is of these scores. 0:
   *   none; negative, NaN or infinite: FLASHPTX_ERR_BAD_SOFTCAP. */
  int window;
  float softcap;
  int64_t window_left, window_right;
  /* Optional (NULL: none): learnable attention sinks (gpt-oss), fp32 [heads_q] in device memory,
   * 4-byte aligned (else FLASHPTX_ERR_MISALIGNED). Head h's sink s_h is one more logit in every row's
   * softmax denominator that adds no value: with the row's scores x_j (after the scale, the softcap
   * and the mask), LSE = log(sum_j exp(x_j) + exp(s_h)) and O = sum_j exp(x_j - LSE) v_j. A row that
   * sees no key has O = 0 and LSE = s_h. A sink of -inf is no sink; NaN or +inf give NaN rows (the
   * values are device memory and not checked). sm_90 fixed-length forward only (sm_100:
   * FLASHPTX_ERR_UNSUPPORTED). */
  const float* sinks;
  /* The head dim of V and O when it differs from Q's and K's (DeepSeek's d_qk = 192, d_v = 128);
   * 0 (what a zero-initialised or flashptx_fwd_params_contiguous-filled struct holds) means equal to
   * head_dim, so callers that predate the field are unchanged. V is then [batch, seqlen_k, heads_kv,
   * head_dim_v] and O [batch, seqlen_q, heads_q, head_dim_v]; LSE is as before, and softmax_scale 0
   * is still 1/sqrt(head_dim). Pairs (head_dim, head_dim_v) on sm_90: (64, 64), (96, 96),
   * (128, 128), (192, 192), (192, 128), (256, 256); any other pair, or a negative value:
   * FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM, with the pairs in the message. Head dims 96 and 192 and the
   * (192, 128) pair have no sliding window, softcap or sinks yet (FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM
   * from the launch plan); the backward takes every one of these pairs (flashptx_bwd_params::head_dim_v).
   * sm_100: head_dim_v must equal head_dim. */
  int64_t head_dim_v;
} flashptx_fwd_params;

/* Fills *p for contiguous [batch, seqlen, heads, head_dim] tensors of one dtype. */
void flashptx_fwd_params_contiguous(flashptx_fwd_params* p, const void* q, const void* k,
                                    const void* v, void* o, float* lse, int64_t batch,
                                    int64_t seqlen_q, int64_t seqlen_k, int64_t heads_q,
                                    int64_t heads_kv, int64_t head_dim, flashptx_dtype dtype,
                                    int causal);

/* Validates, then launches the forward (FA3 on sm_90, FA4 on sm_100) on `stream`. Batch or seqlen 0:
 * FLASHPTX_OK, no launch. */
flashptx_status flashptx_fwd(const flashptx_fwd_params* p, cudaStream_t stream);

/* Validation alone (what flashptx_fwd checks before launching), without the device check. */
flashptx_status flashptx_fwd_check(const flashptx_fwd_params* p);

/* The message of the last failed call on this host thread ("" after a success). */
const char* flashptx_last_error(void);
const char* flashptx_status_name(flashptx_status s);

/* What a call would launch, from the same launch plan the call uses (so a manifest cannot disagree
 * with what ran): the kernel's symbol, registers per thread, static plus dynamic shared memory per
 * CTA, threads per CTA, the grid (CTAs), the work tiles it covers and the schedule ("persistent":
 * grid = min(tiles, SMs), each CTA loops over tiles, or for causal masks units of two tiles;
 * "one-per-tile"; "clc": cluster launch control, grid = tiles x cluster size, on sm_100). Needs the
 * device (the grid depends on it): FLASHPTX_OK, a validation status, or
 * FLASHPTX_ERR_UNSUPPORTED_DEVICE exactly where flashptx_fwd would answer it (so a successful
 * kernel_info of a small valid problem is the test of whether this machine runs the forward). */
typedef struct flashptx_kernel_info {
  const char* symbol;
  int registers;
  int shared_bytes;
  int threads;
  int ctas;
  int64_t tiles;
  const char* schedule;
} flashptx_kernel_info;
flashptx_status flashptx_fwd_kernel_info(const flashptx_fwd_params* p, flashptx_kernel_info* info);

/* ---- variable-length batches (forward) --------------------------------------------------------
 *
 * FlashAttention's varlen convention: the sequences of a batch packed one after another, no padding.
 * Q and O are [total_q, heads_q, head_dim], K and V [total_k, heads_kv, head_dim] (V and O:
 * head_dim_v columns where it is set; head_dim contiguous; row and head strides in elements, rows 16-byte aligned); sequence b owns query rows
 * [cu_seqlens_q[b], cu_seqlens_q[b+1]) and key rows [cu_seqlens_k[b], cu_seqlens_k[b+1]), and
 * attends only to its own keys. Causal masks are per sequence, aligned to the bottom-right when its
 * two lengths differ. A sequence may have length 0 (no query rows: nothing written for it; no keys:
 * its O rows are 0 and its LSE -inf). LSE, when asked for, is fp32 [heads_q, total_q], contiguous,
 * natural log: the value of query row r of head h is lse[h * total_q + r] (FlashAttention's varlen
 * LSE layout, not the fixed-length [batch, heads, seqlen]).
 *
 * The prefix sums are read on the HOST: cu_seqlens_q/_k point to host memory, num_seqs + 1 int32
 * each (FlashAttention callers have them: its max_seqlen comes from them). Every value is validated
 * before anything launches, and the kernel gets the per-sequence offsets through its parameter block,
 * so it reads no sequence data from device memory that the validation did not see. Valid: starts at
 * 0, never decreasing, ends at total_q (total_k); max_seqlen_q/_k at least the longest sequence
 * (an upper bound, as in FlashAttention). Otherwise FLASHPTX_ERR_BAD_CU_SEQLENS, naming the entry.
 * At most FLASHPTX_VARLEN_MAX_SEQS sequences per call (the parameter block's size; more:
 * FLASHPTX_ERR_TOO_MANY_SEQS). Because the offsets travel in the launch's parameters, a CUDA graph
 * captures this call with its lengths: new lengths need a new capture.
 *
 * Scheduling: sequences longest-first, one CTA per tile of 128 query rows of one head. num_seqs 0
 * or total_q 0 is a successful no-op. sm_90 only; bf16 or fp16 (one dtype for all tensors);
 * (head_dim, head_dim_v) as for flashptx_fwd: (64, 64), (96, 96), (128, 128), (192, 192),
 * (192, 128), (256, 256); heads_q a multiple of heads_kv (GQA, MQA). At 96, 192 and (192, 128)
 * one kernel per shape and dtype runs every call, plain or with a window and a softcap.
 */
#define FLASHPTX_VARLEN_MAX_SEQS 1024

typedef struct flashptx_fwd_varlen_params {
  const void* q;   /* [total_q, heads_q, head_dim] */
  const void* k;   /* [total_k, heads_kv, head_dim] */
  const void* v;   /* [total_k, heads_kv, head_dim_v] */
  void* o;         /* [total_q, heads_q, head_dim_v] */
  float* lse;      /* optional: [heads_q, total_q] fp32, or NULL */

  const int32_t* cu_seqlens_q;  /* HOST memory: num_seqs + 1 prefix sums of the query lengths */
  const int32_t* cu_seqlens_k;  /* HOST memory: num_seqs + 1 prefix sums of the key lengths */
  int64_t num_seqs;
  int64_t total_q, total_k;            /* packed rows; = cu_seqlens_q[num_seqs], cu_seqlens_k[num_seqs] */
  int64_t max_seqlen_q, max_seqlen_k;  /* at least the longest query / key sequence */
  int64_t heads_q, heads_kv, head_dim;

  /* strides in elements: row (packed token), head */
  int64_t q_row_stride, q_head_stride;
  int64_t k_row_stride, k_head_stride;
  int64_t v_row_stride, v_head_stride;
  int64_t o_row_stride, o_head_stride;

  flashptx_dtype dtype;  /* of q, k, v, o */
  int causal;            /* nonzero: causal per sequence, bottom-right aligned */
  float softmax_scale;   /* 0 means 1/sqrt(head_dim) */
  /* Optional, as in flashptx_fwd_params (all zero: none): the sliding window, per sequence and
   * aligned to its bottom-right, and the softcap. */
  int window;
  float softcap;
  int64_t window_left, window_right;
  /* As flashptx_fwd_params::head_dim_v: V's and O's head dim, 0 meaning equal to head_dim; the
   * pairs of the fixed-length forward (head_dim_v 128 beside head_dim 192; other pairs:
   * FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM). V's and O's strides are checked at head_dim_v columns. The
   * contiguous helper below leaves it 0 (set it, and V's and O's strides, after the call). */
  int64_t head_dim_v;
  /* Optional (NULL: every row used), HOST memory, num_seqs int32 entries each (FlashAttention-3's
   * seqused_q/_k): sequence b uses only its first seqused_q[b] query rows and seqused_k[b] keys of
   * the rows cu_seqlens gives it, which stay its packed offsets. The used lengths replace the
   * lengths everywhere else: the causal mask and the window align to their bottom-right, a row
   * attends to the used keys only, and O and LSE are written for the used rows only (the rest of
   * the sequence's rows are left untouched; seqused_q 0: nothing written, as a sequence of length
   * 0; seqused_k 0 with used rows: O = 0, LSE -inf). The rows past a used length that share a
   * block of the kernel with used ones are loaded and masked, as a ragged tail's neighbour rows
   * are: they must hold finite values (a NaN or Inf there reaches the output through the masked
   * products). Each entry in [0, its sequence's cu_seqlens length], else FLASHPTX_ERR_BAD_SHAPE
   * naming it; a device pointer here is refused (FLASHPTX_ERR_BAD_SHAPE) where the runtime can tell. */
  const int32_t* seqused_q;
  const int32_t* seqused_k;
} flashptx_fwd_varlen_params;

/* Fills *p for contiguous packed tensors of one dtype; total_q/_k and max_seqlen_q/_k are computed
 * from the host prefix sums (which must then hold num_seqs + 1 entries; NULL leaves them 0). */
void flashptx_fwd_varlen_params_contiguous(flashptx_fwd_varlen_params* p, const void* q, const void* k,
                                           const void* v, void* o, float* lse, const int32_t* cu_seqlens_q,
                                           const int32_t* cu_seqlens_k, int64_t num_seqs, int64_t heads_q,
                                           int64_t heads_kv, int64_t head_dim, flashptx_dtype dtype, int causal);

/* Validates (the prefix sums included), then launches the varlen forward on `stream`. */
flashptx_status flashptx_fwd_varlen(const flashptx_fwd_varlen_params* p, cudaStream_t stream);

/* Validation alone, without the device check (where a driver is present, the runtime is asked
 * whether cu_seqlens_q/_k point to device memory: that initialises CUDA on first use). */
flashptx_status flashptx_fwd_varlen_check(const flashptx_fwd_varlen_params* p);

/* The kernel a call would launch (as flashptx_fwd_kernel_info; tiles: query blocks x heads summed
 * over the sequences; schedule "one-per-tile"). FLASHPTX_ERR_BAD_SHAPE when nothing would launch. */
flashptx_status flashptx_fwd_varlen_kernel_info(const flashptx_fwd_varlen_params* p, flashptx_kernel_info* info);

/* ---- backward ---------------------------------------------------------------------------------
 *
 * Gradients of L = sum(O * dO) with respect to q, k and v, for the forward above: dq, dk, dv with
 * the shapes and dtype of q, k, v. Needs the forward's O and its LSE (fp32 [batch, heads_q,
 * seqlen_q], natural log, as flashptx_fwd writes it). GQA/MQA: dk and dv of a kv head sum over the
 * query heads of its group (accumulated in fp32, converted once; no atomics on 16-bit values).
 *
 * The caller provides a device workspace of flashptx_bwd_workspace_size bytes (256-byte aligned):
 * the fp32 dQ (and under GQA dK/dV) accumulators, the per-row delta and base-2 LSE, and the
 * semaphores of the deterministic mode. The library allocates nothing.
 *
 * deterministic != 0: dq, dk and dv are bitwise identical across runs and launches (the fp32
 * accumulations add in a fixed writer order, waited on through semaphores). Otherwise the add order
 * follows arrival and may vary in the last bits.
 *
 * Supported: bf16 or fp16 (all tensors one dtype), head_dim 64, 96, 128, 192 or 256 on sm_90 (96
 * and 192 run on the d128 and d256 kernels over zero columns), and the forward's (192, 128) pair
 * (head_dim_v below), 64 or 128 on sm_100 (with the opt-in), causal or not (bottom-right
 * aligned), any seqlen_q, seqlen_k >= 0, strides as for the forward (last dim contiguous, rows
 * 16-byte aligned), 64-bit offsets. Batch 0 is a successful no-op; seqlen_q 0 writes dk = dv = 0;
 * seqlen_k 0 writes dq = 0.
 */
typedef struct flashptx_bwd_params {
  const void* q;      /* [batch, seqlen_q, heads_q, head_dim] */
  const void* k;      /* [batch, seqlen_k, heads_kv, head_dim] */
  const void* v;      /* [batch, seqlen_k, heads_kv, head_dim] */
  const void* o;      /* [batch, seqlen_q, heads_q, head_dim]: the forward's output */
  const float* lse;   /* [batch, heads_q, seqlen_q], contiguous: the forward's LSE */
  const void* dout;   /* [batch, seqlen_q, heads_q, head_dim]: dL/dO */
  void* dq;           /* [batch, seqlen_q, heads_q, head_dim] */
  void* dk;           /* [batch, seqlen_k, heads_kv, head_dim] */
  void* dv;           /* [batch, seqlen_k, heads_kv, head_dim] */

  int64_t batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim;

  /* strides in elements: batch, row, head */
  int64_t q_batch_stride, q_row_stride, q_head_stride;
  int64_t k_batch_stride, k_row_stride, k_head_stride;
  int64_t v_batch_stride, v_row_stride, v_head_stride;
  int64_t o_batch_stride, o_row_stride, o_head_stride;
  int64_t do_batch_stride, do_row_stride, do_head_stride;
  int64_t dq_batch_stride, dq_row_stride, dq_head_stride;
  int64_t dk_batch_stride, dk_row_stride, dk_head_stride;
  int64_t dv_batch_stride, dv_row_stride, dv_head_stride;

  flashptx_dtype dtype;  /* of q, k, v, o, dout, dq, dk, dv */
  int causal;            /* nonzero: causal, bottom-right aligned */
  float softmax_scale;   /* 0 means 1/sqrt(head_dim); must equal the forward's */
  int deterministic;     /* nonzero: bitwise reproducible gradients */
  void* workspace;       /* device memory, 256-byte aligned */
  int64_t workspace_bytes;
  /* The forward's score modifiers (flashptx_fwd_params), with the forward's semantics: they must
   * equal the forward's (lse is of the capped, windowed scores). A bounded window (window nonzero,
   * window_left or window_right >= 0) or a softcap != 0 runs the local backward kernels (sm_90, head
   * dims 64, 128, 256; with sinks too); on sm_100 they answer FLASHPTX_ERR_UNSUPPORTED. Bounds below
   * -1: FLASHPTX_ERR_BAD_WINDOW; a bad softcap: FLASHPTX_ERR_BAD_SOFTCAP. All zero: none. */
  int window;
  float softcap;
  int64_t window_left, window_right;
  /* The forward's attention sinks (flashptx_fwd_params::sinks, fp32 [heads_q], device) and their
   * gradient dsinks (fp32 [heads_q], device, written): both or neither (one alone:
   * FLASHPTX_ERR_BAD_SINKS), each 4-byte aligned. lse must then be the forward's LSE with the sinks.
   * dq, dk and dv are computed as without sinks from that LSE (the sink adds no value, so
   * dS = P (dP - delta) keeps its form); dsinks[h] = -sum over the rows i of head h in every batch
   * of exp(s_h - LSE_i) (dO_i . O_i), reduced in a fixed order (bitwise reproducible in both modes). */
  const float* sinks;
  float* dsinks;
  /* The head dim of V, O, dO and dV when it differs from Q's and K's, as flashptx_fwd_params::head_dim_v
   * (pass the forward's): 0 (what a zero-initialised or flashptx_bwd_params_contiguous-filled struct
   * holds) means equal to head_dim. v and dv are then [batch, seqlen_k, heads_kv, head_dim_v], o and
   * dout [batch, seqlen_q, heads_q, head_dim_v], and their strides are checked at head_dim_v columns.
   * Pairs (head_dim, head_dim_v) on sm_90: (64, 64), (96, 96), (128, 128), (192, 192), (192, 128),
   * (256, 256), with or without the window, the softcap and the sinks; any other pair:
   * FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM, with the pair in the message; a negative value:
   * FLASHPTX_ERR_BAD_SHAPE. sm_100: head_dim_v must equal head_dim (FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM). */
  int64_t head_dim_v;
} flashptx_bwd_params;

/* Fills *p for contiguous tensors of one dtype (workspace left NULL: set it after sizing). */
void flashptx_bwd_params_contiguous(flashptx_bwd_params* p, const void* q, const void* k, const void* v,
                                    const void* o, const float* lse, const void* dout, void* dq, void* dk,
                                    void* dv, int64_t batch, int64_t seqlen_q, int64_t seqlen_k,
                                    int64_t heads_q, int64_t heads_kv, int64_t head_dim,
                                    flashptx_dtype dtype, int causal);

/* The workspace a call with these sizes, dtype and head dim needs (pointers, strides and the
 * workspace fields are not read). FLASHPTX_OK with *bytes, or the validation status. */
flashptx_status flashptx_bwd_workspace_size(const flashptx_bwd_params* p, int64_t* bytes);

/* Validates, then runs the backward on `stream` (preprocess, main kernel, postprocess). */
flashptx_status flashptx_bwd(const flashptx_bwd_params* p, cudaStream_t stream);

/* Validation alone (what flashptx_bwd checks before launching), without the device check. */
flashptx_status flashptx_bwd_check(const flashptx_bwd_params* p);

/* The main backward kernel a call would launch (as flashptx_fwd_kernel_info). */
flashptx_status flashptx_bwd_kernel_info(const flashptx_bwd_params* p, flashptx_kernel_info* info);

/* ---- variable-length batches (backward) -------------------------------------------------------
 *
 * The backward of flashptx_fwd_varlen, over the same packed layout: q, o, dout and dq are
 * [total_q, heads_q, head_dim], k, v, dk and dv [total_k, heads_kv, head_dim] (head_dim contiguous;
 * row and head strides in elements, rows 16-byte aligned); lse is the forward varlen's, fp32
 * [heads_q, total_q], contiguous, natural log. cu_seqlens_q/_k, num_seqs, total_q/_k and
 * max_seqlen_q/_k as for flashptx_fwd_varlen: HOST prefix sums, validated entry by entry before
 * anything launches (FLASHPTX_ERR_BAD_CU_SEQLENS naming the entry; more than FLASHPTX_VARLEN_MAX_SEQS
 * sequences: FLASHPTX_ERR_TOO_MANY_SEQS). Causal masks per sequence, bottom-right aligned. GQA/MQA:
 * dk and dv of a kv head sum over its query heads (fp32, converted once).
 *
 * A sequence without query rows gets dk = dv = 0 for its keys; one without keys gets dq = 0 for its
 * rows (as the fixed-length backward with seqlen_q or seqlen_k 0). num_seqs 0, or total_q and total_k
 * both 0, is a successful no-op.
 *
 * The workspace (device, 256-byte aligned, flashptx_bwd_varlen_workspace_size bytes) holds the fp32
 * accumulators and the per-row scratch with each sequence's rows padded to whole blocks; its size
 * depends on total_q, total_k, num_seqs, the heads, head_dim and the dtype only (not on how the
 * rows are split into sequences), so one workspace serves every batch of those totals.
 * deterministic != 0: dq, dk and dv bitwise identical across runs. sm_90 only; bf16 or fp16; head_dim
 * 64, 96, 128, 192, 256 (any other: FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM). The window and the softcap as
 * the varlen forward's (per sequence); no sinks.
 */
typedef struct flashptx_bwd_varlen_params {
  const void* q;      /* [total_q, heads_q, head_dim] */
  const void* k;      /* [total_k, heads_kv, head_dim] */
  const void* v;      /* [total_k, heads_kv, head_dim_v] (head_dim_v: head_dim when 0) */
  const void* o;      /* [total_q, heads_q, head_dim_v]: the forward's output */
  const float* lse;   /* [heads_q, total_q], contiguous: the forward varlen's LSE */
  const void* dout;   /* [total_q, heads_q, head_dim_v]: dL/dO */
  void* dq;           /* [total_q, heads_q, head_dim] */
  void* dk;           /* [total_k, heads_kv, head_dim] */
  void* dv;           /* [total_k, heads_kv, head_dim_v] */

  const int32_t* cu_seqlens_q;  /* HOST memory: num_seqs + 1 prefix sums of the query lengths */
  const int32_t* cu_seqlens_k;  /* HOST memory: num_seqs + 1 prefix sums of the key lengths */
  int64_t num_seqs;
  int64_t total_q, total_k;            /* packed rows; = cu_seqlens_q[num_seqs], cu_seqlens_k[num_seqs] */
  int64_t max_seqlen_q, max_seqlen_k;  /* at least the longest query / key sequence */
  int64_t heads_q, heads_kv, head_dim;

  /* strides in elements: row (packed token), head */
  int64_t q_row_stride, q_head_stride;
  int64_t k_row_stride, k_head_stride;
  int64_t v_row_stride, v_head_stride;
  int64_t o_row_stride, o_head_stride;
  int64_t do_row_stride, do_head_stride;
  int64_t dq_row_stride, dq_head_stride;
  int64_t dk_row_stride, dk_head_stride;
  int64_t dv_row_stride, dv_head_stride;

  flashptx_dtype dtype;  /* of q, k, v, o, dout, dq, dk, dv */
  int causal;            /* nonzero: causal per sequence, bottom-right aligned */
  float softmax_scale;   /* 0 means 1/sqrt(head_dim); must equal the forward's */
  int deterministic;     /* nonzero: bitwise reproducible gradients */
  void* workspace;       /* device memory, 256-byte aligned */
  int64_t workspace_bytes;
  /* The varlen forward's score modifiers (flashptx_fwd_varlen_params), as flashptx_bwd_params takes
   * the forward's: a bounded window or a softcap != 0 runs the local varlen backward kernels, the
   * window per sequence. All zero: none. */
  int window;
  float softcap;
  int64_t window_left, window_right;
  /* As flashptx_fwd_varlen_params::seqused_q/_k (NULL: every row used; HOST memory; pass the
   * forward's). The gradients are computed over the used rows and keys: dq is written for the used
   * query rows only, dk and dv for the used keys only; the dq rows past seqused_q and the dk/dv rows
   * past seqused_k are left untouched (their gradient is 0: a caller wanting it zeroes them first).
   * A sequence whose seqused_q is 0 gets dk = dv = 0 for its used keys. Values past the used
   * lengths (q, dout, k, v) must be finite, as for the forward. */
  const int32_t* seqused_q;
  const int32_t* seqused_k;
  /* V's, O's, dO's and dV's head dim, as flashptx_bwd_params::head_dim_v (0 means head_dim): the
   * pairs of the fixed-length backward, (192, 128) included; any other pair is
   * FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM (negative: FLASHPTX_ERR_BAD_SHAPE). The contiguous helper below
   * leaves it 0. */
  int64_t head_dim_v;
} flashptx_bwd_varlen_params;

/* Fills *p for contiguous packed tensors of one dtype (total_q/_k and max_seqlen_q/_k from the host
 * prefix sums, as flashptx_fwd_varlen_params_contiguous; workspace left NULL: set it after sizing). */
void flashptx_bwd_varlen_params_contiguous(flashptx_bwd_varlen_params* p, const void* q, const void* k,
                                           const void* v, const void* o, const float* lse, const void* dout,
                                           void* dq, void* dk, void* dv, const int32_t* cu_seqlens_q,
                                           const int32_t* cu_seqlens_k, int64_t num_seqs, int64_t heads_q,
                                           int64_t heads_kv, int64_t head_dim, flashptx_dtype dtype, int causal);

/* The workspace a call with these sizes needs (totals, num_seqs, heads, head_dim, dtype; pointers,
 * strides, cu_seqlens and the workspace fields are not read). FLASHPTX_OK with *bytes, or the
 * validation status. */
flashptx_status flashptx_bwd_varlen_workspace_size(const flashptx_bwd_varlen_params* p, int64_t* bytes);

/* Validates (the prefix sums included), then runs the varlen backward on `stream` (preprocess, main
 * kernel, postprocess). */
flashptx_status flashptx_bwd_varlen(const flashptx_bwd_varlen_params* p, cudaStream_t stream);

/* Validation alone, without the device check. */
flashptx_status flashptx_bwd_varlen_check(const flashptx_bwd_varlen_params* p);

/* The main kernel a call would launch (as flashptx_fwd_kernel_info; tiles: key blocks x heads_q
 * summed over the sequences). FLASHPTX_ERR_BAD_SHAPE when nothing would launch. */
flashptx_status flashptx_bwd_varlen_kernel_info(const flashptx_bwd_varlen_params* p, flashptx_kernel_info* info);

/* ---- FP8 quantization ---------------------------------------------------------------------------
 *
 * bf16/fp16 [batch, seqlen, heads, head_dim] -> e4m3 (FLASHPTX_FP8_E4M3) of the same shape, plus fp32
 * descales, for Q, K and V of an FP8 attention (one call per tensor). Per group of elements:
 *   y = x, or with hadamard_block = n: y = H_n x over each n-wide block of the row (H_n the orthonormal
 *       Walsh-Hadamard matrix, entries +-1/sqrt(n)): apply it to Q and K alike (Q K^T is unchanged),
 *       never to V;
 *   descale = amax(|y|) / 448 (fp32), q = round_to_e4m3(y / descale): nearest, ties to even, saturating
 *       at +-448. A group whose amax is 0 (or whose descale underflows to 0) is written as +0.
 * The arithmetic is fp32 in a fixed order (the transform's butterflies with strides 1, 2, 4, ..., then a
 * multiply by 1/sqrt(n) rounded to fp32; the quotient by an IEEE division), so that the result is
 * reproducible bit for bit (the host reference of the tests does the same steps).
 *
 * Granularity and the layout of `descale` (fp32, contiguous, 4-byte aligned):
 *   FLASHPTX_FP8_SCALE_PER_TENSOR: 1 value.
 *   FLASHPTX_FP8_SCALE_PER_HEAD:   [batch, heads] (one per (batch, head)).
 *   FLASHPTX_FP8_SCALE_PER_BLOCK:  [batch, heads, ceil(seqlen / 128)] (128 rows of one (batch, head)).
 * Per block: one launch; the CTA that owns a block computes its amax, then quantizes it.
 * Per tensor and per head: no workspace; `descale` itself is the reduction target: it is zeroed
 * (cudaMemsetAsync), a first launch stores atomicMax over the float bits of each 128-row CTA's
 * amax / 448 into the group's value (non-negative floats order as their bits do; division by 448 is
 * monotone), a second launch reads it and quantizes. The library allocates nothing.
 *
 * Strides in elements (batch, row, head), last dimension contiguous; input rows 16-byte aligned
 * (strides multiples of 8), output rows 16-byte aligned (strides multiples of 16), output rows must not
 * overlap. batch, heads at most 65535. sm_90 only.
 */
typedef enum flashptx_fp8_scale_granularity {
  FLASHPTX_FP8_SCALE_PER_TENSOR = 0,
  FLASHPTX_FP8_SCALE_PER_HEAD = 1,   /* per (batch, head) */
  FLASHPTX_FP8_SCALE_PER_BLOCK = 2   /* per 128 rows of one (batch, head) */
} flashptx_fp8_scale_granularity;

#define FLASHPTX_FP8_SCALE_BLOCK_ROWS 128

typedef struct flashptx_quantize_fp8_params {
  const void* in;  /* [batch, seqlen, heads, head_dim], in_dtype (bf16 or fp16) */
  void* out;       /* [batch, seqlen, heads, head_dim], e4m3 */
  float* descale;  /* see the granularity above */

  int64_t batch, seqlen, heads, head_dim;  /* head_dim 64, 128 or 256 */
  int64_t in_batch_stride, in_row_stride, in_head_stride;     /* elements */
  int64_t out_batch_stride, out_row_stride, out_head_stride;  /* elements (bytes) */

  flashptx_dtype in_dtype;   /* FLASHPTX_BF16 or FLASHPTX_FP16 */
  flashptx_dtype out_dtype;  /* FLASHPTX_FP8_E4M3 */
  flashptx_fp8_scale_granularity granularity;
  int hadamard_block;        /* 0: no rotation; head_dim or 128 (at most head_dim) */
} flashptx_quantize_fp8_params;

/* Fills *p for contiguous tensors (no rotation). */
void flashptx_quantize_fp8_params_contiguous(flashptx_quantize_fp8_params* p, const void* in, void* out,
                                             float* descale, int64_t batch, int64_t seqlen, int64_t heads,
                                             int64_t head_dim, flashptx_dtype in_dtype,
                                             flashptx_fp8_scale_granularity granularity);

/* The number of fp32 descales the call writes (1, batch * heads, or batch * heads * ceil(seqlen/128)).
 * FLASHPTX_OK with *count, or the validation status of the sizes and granularity. */
flashptx_status flashptx_quantize_fp8_descale_count(const flashptx_quantize_fp8_params* p, int64_t* count);

/* Validates, then launches on `stream` (two launches and a 4-byte memset per tensor granularity).
 * batch, seqlen or heads 0: FLASHPTX_OK, nothing written. */
flashptx_status flashptx_quantize_fp8(const flashptx_quantize_fp8_params* p, cudaStream_t stream);

/* Validation alone, without the device check. */
flashptx_status flashptx_quantize_fp8_check(const flashptx_quantize_fp8_params* p);

/* ---- FP8 forward (FlashAttention-3 FP8 on Hopper) ---------------------------------------------
 *
 * Not yet verified on a GPU: compiled, SASS-audited and CPU-tested only.
 *
 * Q, K, V in e4m3 (FLASHPTX_FP8_E4M3) with fp32 descales as flashptx_quantize_fp8 writes them; O in
 * bf16; LSE (optional) fp32 [batch, heads_q, seqlen_q], natural log, of the dequantized scores.
 * The attention computed is that of the dequantized tensors Q = descale_q * q8, K = descale_k * k8,
 * V = descale_v * v8 (each descale of its group), with the probabilities rounded to e4m3 inside the
 * kernel (scaled by 2^8 first, which the normalisation cancels).
 *
 * Descales: one granularity per tensor (flashptx_fp8_scale_granularity), laid out as
 * flashptx_quantize_fp8 writes them for that tensor: per tensor 1 value; per head [batch, heads]
 * (heads_q for Q, heads_kv for K and V); per block [batch, heads, ceil(seqlen / 128)] (seqlen_q for
 * Q, seqlen_k for K and V). fp32, 4-byte aligned, device memory, never NULL. A descale of 0 is taken
 * to belong to an all-zero group (the quantizer's convention); negative, NaN or infinite descales
 * are not checked (device memory) and give undefined results.
 *
 * Strides in elements. q, k: [batch, seqlen, heads, head_dim] e4m3, rows 16-byte aligned (strides
 * multiples of 16). o: bf16, strides multiples of 8, rows must not overlap. v, by v_layout:
 *   FLASHPTX_FP8_V_ROW_MAJOR        [batch, seqlen_k, heads_kv, head_dim] (v_batch/row/head_stride),
 *                                   transposed inside the kernel (v_dim_stride not read)
 *   FLASHPTX_FP8_V_KEYS_CONTIGUOUS  V^T: element (b, key, h, dim) at
 *                                   v[b * v_batch_stride + h * v_head_stride + dim * v_dim_stride + key]
 *                                   (v_row_stride not read); no transpose
 * head_dim 64, 128, 256; causal bottom-right aligned; heads_q a multiple of heads_kv. Hopper sm_90.
 */
typedef enum flashptx_fp8_v_layout {
  FLASHPTX_FP8_V_ROW_MAJOR = 0,
  FLASHPTX_FP8_V_KEYS_CONTIGUOUS = 1
} flashptx_fp8_v_layout;

typedef struct flashptx_fwd_fp8_params {
  const void* q;   /* e4m3 [batch, seqlen_q, heads_q, head_dim] */
  const void* k;   /* e4m3 [batch, seqlen_k, heads_kv, head_dim] */
  const void* v;   /* e4m3, see v_layout */
  void* o;         /* bf16 [batch, seqlen_q, heads_q, head_dim] */
  float* lse;      /* optional: [batch, heads_q, seqlen_q] fp32, or NULL */
  const float* descale_q;  /* device fp32, layout by q_granularity */
  const float* descale_k;
  const float* descale_v;

  int64_t batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim;

  /* strides in elements: batch, row (sequence position), head */
  int64_t q_batch_stride, q_row_stride, q_head_stride;
  int64_t k_batch_stride, k_row_stride, k_head_stride;
  int64_t v_batch_stride, v_row_stride, v_head_stride;
  int64_t v_dim_stride;  /* FLASHPTX_FP8_V_KEYS_CONTIGUOUS only */
  int64_t o_batch_stride, o_row_stride, o_head_stride;

  flashptx_dtype q_dtype, k_dtype, v_dtype;  /* FLASHPTX_FP8_E4M3 */
  flashptx_dtype o_dtype;                    /* FLASHPTX_BF16 */
  flashptx_fp8_scale_granularity q_granularity, k_granularity, v_granularity;
  flashptx_fp8_v_layout v_layout;
  int causal;            /* nonzero: causal, bottom-right aligned */
  float softmax_scale;   /* 0 means 1/sqrt(head_dim) */
} flashptx_fwd_fp8_params;

/* Fills *p for contiguous tensors (V row-major), one granularity for the three descales. */
void flashptx_fwd_fp8_params_contiguous(flashptx_fwd_fp8_params* p, const void* q, const void* k, const void* v,
                                        void* o, float* lse, const float* descale_q, const float* descale_k,
                                        const float* descale_v, int64_t batch, int64_t seqlen_q, int64_t seqlen_k,
                                        int64_t heads_q, int64_t heads_kv, int64_t head_dim,
                                        flashptx_fp8_scale_granularity granularity, int causal);

/* Validates, then launches the FP8 forward on `stream`. Batch or seqlen_q 0: FLASHPTX_OK, no launch. */
flashptx_status flashptx_fwd_fp8(const flashptx_fwd_fp8_params* p, cudaStream_t stream);

/* Validation alone, without the device check. */
flashptx_status flashptx_fwd_fp8_check(const flashptx_fwd_fp8_params* p);


/* ---- inference: attention over a KV cache (decode, chunked prefill) ----------------------------
 *
 * FlashAttention-3's flash_attn_with_kvcache: a few new query rows per sequence against that
 * sequence's cached keys and values. q and o are [batch, seqlen_q, heads_q, head_dim]; the cache is
 *   contiguous (page_table NULL): k_cache/v_cache [cache_batch, cache_seqlen, heads_kv, head_dim]
 *     (cache_batch = batch_cache, cache_seqlen = seqlen_cache); sequence b reads cache row
 *     cache_batch_idx[b] (device int32 [batch]), or b where cache_batch_idx is NULL;
 *   paged (page_table set): k_cache/v_cache [cache_batch, cache_seqlen, heads_kv, head_dim] with
 *     cache_batch = num_pages, cache_seqlen = page_size; key j of sequence b lies in page
 *     page_table[b * page_table_stride + j / page_size] (device int32 [batch, max_pages]) at row
 *     j % page_size. page_size: a multiple of 64, or 8, 16 or 32 (a 64-key block is then 64 /
 *     page_size TMA boxes; other sizes: FLASHPTX_ERR_UNSUPPORTED). cache_batch_idx must be NULL.
 * Sequence b attends to its first cache_seqlens[b] keys (device int32 [batch], read on the device
 * only: a captured CUDA graph replays with new lengths), or with cache_leftpad (device int32
 * [batch], optional) to keys [cache_leftpad[b], cache_seqlens[b]) (FlashAttention's left padding:
 * the keys before it are never read). Causal: bottom-right within the sequence's length, query row
 * i sees key j iff j <= i + cache_seqlens[b] - seqlen_q (a row that sees no key: O = 0, LSE = -inf). GQA/MQA: heads_q a multiple of heads_kv; the query heads of one kv head share
 * a tile (packed GQA), so each K/V block is read once per kv head. LSE (optional) fp32
 * [batch, heads_q, seqlen_q], natural log. bf16, head_dim 64, 128 or 256, sm_90 only (else
 * FLASHPTX_ERR_UNSUPPORTED / _UNSUPPORTED_HEAD_DIM / _UNSUPPORTED_DEVICE). Strides in elements, rows
 * 16-byte aligned; cache strides multiples of 8 elements (TMA: 16 bytes).
 *
 * Split-KV: num_splits 0 lets the library choose (from the shape and the SM count), 1 runs without
 * a split, n > 1 (at most 128) splits each sequence's key blocks across n CTAs, which write partial
 * O and LSE into `workspace` and a combine kernel merges them by LSE. The workspace (device memory,
 * 256-byte aligned, at least flashptx_fwd_kvcache_workspace_size bytes; may be NULL when that is 0)
 * also holds the rotated q (rotary_cos set).
 *
 * What only the device sees is clamped, never read out of bounds, and recorded in *error_word
 * (optional: device uint32, 4-byte aligned; bits OR'ed in, never cleared by the library):
 *   FLASHPTX_KVCACHE_ERR_SEQLEN     a cache_seqlens entry < 0 or above the cache's capacity
 *                                   (cache_seqlen, or max_pages * page_size): clamped to [0, capacity]
 *   FLASHPTX_KVCACHE_ERR_PAGE       a page_table entry outside [0, num_pages): its keys read as zeros
 *   FLASHPTX_KVCACHE_ERR_BATCH_IDX  a cache_batch_idx entry outside [0, cache_batch): no keys
 *   FLASHPTX_KVCACHE_ERR_ROTARY     a rotary position at or past seqlen_ro (see rotary_cos below)
 *   FLASHPTX_KVCACHE_ERR_LEFTPAD    a cache_leftpad entry < 0 or above the sequence's length (with
 *                                   the appended keys): clamped to [0, length]
 * The output of a call that set a bit is not meaningful for the sequences concerned.
 * Not yet: fp16, head dims 64 and 256.
 */
#define FLASHPTX_KVCACHE_ERR_SEQLEN 1u
#define FLASHPTX_KVCACHE_ERR_PAGE 2u
#define FLASHPTX_KVCACHE_ERR_BATCH_IDX 4u
#define FLASHPTX_KVCACHE_ERR_ROTARY 8u
#define FLASHPTX_KVCACHE_ERR_LEFTPAD 16u
#define FLASHPTX_KVCACHE_MAX_SPLITS 128

typedef struct flashptx_kvcache_params {
  const void* q;        /* [batch, seqlen_q, heads_q, head_dim] */
  void* k_cache;        /* see above; written only where k_new is set */
  void* v_cache;
  void* o;              /* [batch, seqlen_q, heads_q, head_dim] */
  float* lse;           /* optional: [batch, heads_q, seqlen_q] fp32, or NULL */
  const int32_t* cache_seqlens;    /* DEVICE memory, [batch] */
  const int32_t* cache_batch_idx;  /* DEVICE memory, [batch], or NULL (contiguous cache only) */
  const int32_t* page_table;       /* DEVICE memory, [batch, max_pages], or NULL: contiguous cache */

  int64_t batch, seqlen_q, heads_q, heads_kv, head_dim;
  int64_t cache_batch;    /* contiguous: batch_cache; paged: num_pages */
  int64_t cache_seqlen;   /* contiguous: seqlen_cache; paged: page_size */
  int64_t max_pages;      /* paged: entries per page_table row */
  int64_t page_table_stride;  /* paged: elements between page_table rows (>= max_pages) */

  /* strides in elements: batch (or page), row, head */
  int64_t q_batch_stride, q_row_stride, q_head_stride;
  int64_t k_batch_stride, k_row_stride, k_head_stride;
  int64_t v_batch_stride, v_row_stride, v_head_stride;
  int64_t o_batch_stride, o_row_stride, o_head_stride;

  flashptx_dtype dtype;  /* of q, k_cache, v_cache, o */
  int causal;
  float softmax_scale;   /* 0 means 1/sqrt(head_dim) */
  int num_splits;        /* 0: the library's choice; 1: none; up to FLASHPTX_KVCACHE_MAX_SPLITS */
  void* workspace;       /* device, 256-byte aligned (split-KV only) */
  int64_t workspace_bytes;
  uint32_t* error_word;  /* optional device word (above) */
  /* Optional append (k_new NULL: none): k_new/v_new [batch, seqlen_new, heads_kv, head_dim] are
   * written into the cache, in place, at positions cache_seqlens[b] + j (j < seqlen_new) of sequence
   * b, before it attends to its cache_seqlens[b] + seqlen_new keys. cache_seqlens is read, never
   * updated (the caller advances it). A position past the capacity, or in a bad page, is not written
   * (and recorded in error_word). */
  const void* k_new;
  const void* v_new;
  int64_t seqlen_new;
  int64_t k_new_batch_stride, k_new_row_stride, k_new_head_stride;
  int64_t v_new_batch_stride, v_new_row_stride, v_new_head_stride;
  /* Optional rotary embedding (rotary_cos NULL: none; needs k_new): fp32 [seqlen_ro, rotary_dim / 2]
   * device tables, contiguous. The first rotary_dim dims of each new key and of q are rotated: pair
   * (a, b) = (2i, 2i + 1) with rotary_interleaved (GPT-J), (i, i + rotary_dim / 2) without (GPT-NeoX),
   * x_a' = x_a cos - x_b sin, x_b' = x_b cos + x_a sin with cos = rotary_cos[pos][i]; new key j at pos
   * cache_seqlens[b] + j, query row i at cache_seqlens[b] + i when causal, cache_seqlens[b] otherwise
   * (FlashAttention's flash_attn_with_kvcache). rotary_dim: a multiple of 16, at most head_dim. A
   * position at or past seqlen_ro takes row seqlen_ro - 1 (FLASHPTX_KVCACHE_ERR_ROTARY). The rotated
   * q lives in the workspace (q itself is not written). */
  const float* rotary_cos;
  const float* rotary_sin;
  int64_t rotary_dim, seqlen_ro;
  int rotary_interleaved;
  /* Optional left padding (NULL: none): DEVICE int32 [batch]; sequence b's keys are cache positions
   * [cache_leftpad[b], cache_seqlens[b] + seqlen_new). The append still goes at cache_seqlens[b], rotary
   * positions and the causal diagonal stay cache positions (FlashAttention's cache_leftpad). */
  const int32_t* cache_leftpad;
} flashptx_kvcache_params;

/* The workspace a call needs (0 without a split). With num_splits 0 the split count is the plan's
 * on the current device (needs it; FLASHPTX_ERR_UNSUPPORTED_DEVICE otherwise). */
flashptx_status flashptx_fwd_kvcache_workspace_size(const flashptx_kvcache_params* p, int64_t* bytes);
/* The split count the call would run (num_splits itself where it is set). */
flashptx_status flashptx_fwd_kvcache_num_splits(const flashptx_kvcache_params* p, int* num_splits);
/* Validates, then launches on `stream` (the attention kernel, and with a split the combine). Batch
 * or seqlen_q 0: FLASHPTX_OK, no launch. */
flashptx_status flashptx_fwd_kvcache(const flashptx_kvcache_params* p, cudaStream_t stream);
/* Validation alone (what the host can see), without the device check. */
flashptx_status flashptx_fwd_kvcache_check(const flashptx_kvcache_params* p);

#ifdef __cplusplus
}
#endif
#endif /* FLASHPTX_H */
