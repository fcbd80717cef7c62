// ptxsim ISA semantics: ldmatrix / stmatrix (warp-level matrix load and store).
//
// Written from the PTX ISA sections "Warp-level matrix load instruction: ldmatrix", "... store
// instruction: stmatrix" and "... transpose instruction: movmatrix" (under 9.7.14, Warp Level
// Matrix Multiply-Accumulate Instructions): shape .m8n8, .num = .x1/.x2/.x4, type .b16, .trans.
//
// Each 8x8 matrix has eight rows of eight 16-bit elements (16 bytes per row, 16-byte aligned).
// Row addresses: for matrix i (0..num-1), row r comes from the address operand of thread 8*i + r
// (.x1 uses threads 0-7, .x2 threads 0-15, .x4 all 32). ISA reading: the other threads' addresses
// are not read at all (not even checked for alignment).
// Destination: register i of each thread holds two elements of matrix i:
//   without .trans: row lane/4, columns 2*(lane%4) (low half) and 2*(lane%4)+1 (high half);
//   with .trans:    the transpose: elements (2*(lane%4), lane/4) (low) and (2*(lane%4)+1, lane/4).
// stmatrix is the inverse mapping: the same (thread, register, half) -> (matrix, row, col), with
// the row addresses again from threads 8*i + r.
#pragma once
#include <cstdint>
#include <functional>

namespace ptxsim::isa {

struct MatElem { uint32_t matrix, row, col; };

// The thread whose address operand gives row `row` of matrix `matrix`.
inline uint32_t ldmatrix_row_lane(uint32_t matrix, uint32_t row) { return matrix * 8 + row; }
// Whether lane's address is used for a .num of 1, 2 or 4 matrices.
inline bool ldmatrix_lane_used(uint32_t lane, uint32_t num) { return lane < 8 * num; }

// The element (of matrix `reg`, stored at the row addresses) that half `half` (0 low, 1 high)
// of register `reg` in thread `lane` holds.
inline MatElem ldmatrix_element(uint32_t lane, uint32_t reg, uint32_t half, bool trans) {
  const uint32_t g = lane / 4, c = 2 * (lane % 4) + half;
  return trans ? MatElem{reg, c, g} : MatElem{reg, g, c};
}

using MatRead = std::function<void(uint32_t addr, void* dst, uint32_t n)>;
using MatWrite = std::function<void(uint32_t addr, const void* src, uint32_t n)>;

// ldmatrix.sync.aligned.m8n8.{x1,x2,x4}{.trans}.shared.b16: addrs[lane] are the 32 threads'
// address operands; out[lane * num + i] receives register i of lane.
inline void ldmatrix_m8n8(uint32_t num, bool trans, const uint32_t addrs[32], const MatRead& read,
                          uint32_t* out) {
  uint16_t m[4][8][8];
  for (uint32_t i = 0; i < num; ++i)
    for (uint32_t r = 0; r < 8; ++r) read(addrs[ldmatrix_row_lane(i, r)], m[i][r], 16);
  for (uint32_t lane = 0; lane < 32; ++lane)
    for (uint32_t i = 0; i < num; ++i) {
      const MatElem lo = ldmatrix_element(lane, i, 0, trans), hi = ldmatrix_element(lane, i, 1, trans);
      out[lane * num + i] = uint32_t(m[i][lo.row][lo.col]) | (uint32_t(m[i][hi.row][hi.col]) << 16);
    }
}

// stmatrix.sync.aligned.m8n8.{x1,x2,x4}{.trans}.shared.b16: src[lane * num + i] is register i of
// lane; each matrix row is written to the address of thread 8*i + r.
inline void stmatrix_m8n8(uint32_t num, bool trans, const uint32_t addrs[32], const uint32_t* src,
                          const MatWrite& write) {
  uint16_t m[4][8][8] = {};
  for (uint32_t lane = 0; lane < 32; ++lane)
    for (uint32_t i = 0; i < num; ++i) {
      const MatElem lo = ldmatrix_element(lane, i, 0, trans), hi = ldmatrix_element(lane, i, 1, trans);
      m[i][lo.row][lo.col] = uint16_t(src[lane * num + i]);
      m[i][hi.row][hi.col] = uint16_t(src[lane * num + i] >> 16);
    }
  for (uint32_t i = 0; i < num; ++i)
    for (uint32_t r = 0; r < 8; ++r) write(addrs[ldmatrix_row_lane(i, r)], m[i][r], 16);
}

// movmatrix.sync.aligned.m8n8.trans.b16 d, a: the 8x8 matrix held in the ldmatrix fragment
// layout (lane l: row l/4, columns 2(l%4), 2(l%4)+1) is transposed; d holds M^T in the same layout.
inline void movmatrix_m8n8_trans(const uint32_t a[32], uint32_t d[32]) {
  uint16_t m[8][8];
  for (uint32_t l = 0; l < 32; ++l) {
    m[l / 4][2 * (l % 4)] = uint16_t(a[l]);
    m[l / 4][2 * (l % 4) + 1] = uint16_t(a[l] >> 16);
  }
  for (uint32_t l = 0; l < 32; ++l)
    d[l] = uint32_t(m[2 * (l % 4)][l / 4]) | (uint32_t(m[2 * (l % 4) + 1][l / 4]) << 16);
}

}  // namespace ptxsim::isa
