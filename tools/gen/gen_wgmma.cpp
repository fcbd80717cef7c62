// gen_wgmma: writes ptx/wgmma_mma.cuh from tools/support/wgmma_gen.cpp (`make regen-wgmma`).
//
//   gen_wgmma OUT     writes OUT when its content differs, and says which
//   gen_wgmma -       writes to stdout
// Exit status 0 on success, 1 when OUT cannot be written, 2 on a usage error.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "tools/support/wgmma_gen.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: gen_wgmma OUT|-   (writes %s)\n", flashptx::gen::kWgmmaMmaHeader);
    return 2;
  }
  const std::string text = flashptx::gen::wgmma_mma_header();
  const std::string out = argv[1];
  if (out == "-") {
    std::cout << text;
    return std::cout ? 0 : 1;
  }
  std::ifstream in(out, std::ios::binary);
  std::ostringstream old;
  old << in.rdbuf();
  if (in && old.str() == text) {
    std::printf("gen_wgmma: %s unchanged\n", out.c_str());
    return 0;
  }
  const std::string tmp = out + ".tmp";
  {
    std::ofstream o(tmp, std::ios::binary);
    o << text;
    if (!o) {
      std::fprintf(stderr, "gen_wgmma: cannot write %s\n", tmp.c_str());
      return 1;
    }
  }
  if (std::rename(tmp.c_str(), out.c_str()) != 0) {
    std::fprintf(stderr, "gen_wgmma: cannot replace %s\n", out.c_str());
    return 1;
  }
  std::printf("gen_wgmma: wrote %s\n", out.c_str());
  return 0;
}
