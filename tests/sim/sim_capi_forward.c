/* A C program written against include/flashptx.h alone, linked with build/libflashptx_sim.so
   instead of libflashptx: the forward runs in the PTX simulator on host memory it registers
   (tests/sim/test_sim_exec_capi.cpp builds and runs it, and checks what it writes against fp64).

   usage: sim_capi_forward OUT_FILE SEED registered|unregistered
   Writes, for batch 1, seqlen_q 70, seqlen_k 150, heads_q 2, heads_kv 1, head_dim 64, bf16, causal:
   the status (int32), then Q, K, V, O (uint16 each, contiguous) and LSE (float). With
   "unregistered", O is ordinary host memory the simulated device does not know: the call must be
   refused with a status. The exit status is 0 when the program ran to the end. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flashptx.h"
#include "tools/sim/cudart/flashptx_sim.h"

enum { B = 1, SQ = 70, SK = 150, HQ = 2, HKV = 1, D = 64 };

static uint32_t g_state;
static float uniform(void) { /* [-1, 1) */
  g_state = g_state * 1664525u + 1013904223u;
  return (float)(g_state >> 8) / 8388608.0f - 1.0f;
}
static uint16_t to_bf16(float x) { /* round to nearest even (finite inputs) */
  uint32_t u;
  memcpy(&u, &x, 4);
  u += 0x7FFFu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}
static void* alloc16(size_t bytes) { return aligned_alloc(256, (bytes + 255) / 256 * 256); }

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s OUT_FILE SEED registered|unregistered\n", argv[0]);
    return 2;
  }
  const int registered = strcmp(argv[3], "registered") == 0;
  g_state = (uint32_t)strtoul(argv[2], NULL, 0);
  const size_t nq = (size_t)B * SQ * HQ * D, nk = (size_t)B * SK * HKV * D, nl = (size_t)B * HQ * SQ;
  uint16_t* q = alloc16(nq * 2);
  uint16_t* k = alloc16(nk * 2);
  uint16_t* v = alloc16(nk * 2);
  uint16_t* o = alloc16(nq * 2);
  float* lse = alloc16(nl * 4);
  for (size_t i = 0; i < nq; ++i) q[i] = to_bf16(uniform());
  for (size_t i = 0; i < nk; ++i) k[i] = to_bf16(uniform());
  for (size_t i = 0; i < nk; ++i) v[i] = to_bf16(uniform());
  memset(o, 0xFF, nq * 2); /* poison: NaN */
  memset(lse, 0xFF, nl * 4);
  if (flashptx_sim_register(q, nq * 2) || flashptx_sim_register(k, nk * 2) || flashptx_sim_register(v, nk * 2) ||
      flashptx_sim_register(lse, nl * 4) || (registered && flashptx_sim_register(o, nq * 2))) {
    fprintf(stderr, "flashptx_sim_register failed\n");
    return 1;
  }
  flashptx_fwd_params p;
  flashptx_fwd_params_contiguous(&p, q, k, v, o, lse, B, SQ, SK, HQ, HKV, D, FLASHPTX_BF16, 1);
  const int32_t status = flashptx_fwd(&p, NULL);
  printf("flashptx_fwd: %s%s%s\n", flashptx_status_name(status), status ? ": " : "", status ? flashptx_last_error() : "");
  FILE* f = fopen(argv[1], "wb");
  if (f == NULL) return 1;
  fwrite(&status, 4, 1, f);
  fwrite(q, 2, nq, f);
  fwrite(k, 2, nk, f);
  fwrite(v, 2, nk, f);
  fwrite(o, 2, nq, f);
  fwrite(lse, 4, nl, f);
  fclose(f);
  flashptx_sim_unregister(q);
  flashptx_sim_unregister(k);
  flashptx_sim_unregister(v);
  flashptx_sim_unregister(lse);
  if (registered) flashptx_sim_unregister(o);
  free(q); free(k); free(v); free(o); free(lse);
  return 0;
}
