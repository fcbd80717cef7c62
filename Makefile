# flashptx build.
#
#   make              set-up (installs what is missing, and says so), then builds libflashptx.a,
#                     libflashptx.so, ./flashptx and ./run_tests (about 2.5 min on 2 cores; -j2: 1.5).
#                     One line per step, "[k/N] what" (N: the steps this run has to do); what the
#                     compilers say is printed after the step's line
#   make V=1          the same, and every command line in full
#   make setup        runs the set-up's checks again (the first make runs them once, .deps/setup.ok)
#   make audit        runs the golden-SASS audit (also part of ./run_tests)
#   make regen-golden rewrites sass_golden/ from the current build (deliberate; commit it alone)
#   make clean
#
# The layers and what each product holds:
#   libflashptx.{a,so}    the library users link: src/*.cpp (C ABI, validation, launch plans, tensor
#                         maps), src/sm90/*.cu (Hopper kernels, sm_90a), src/sm100/*.cu (Blackwell
#                         kernels, sm_100a). The .so exports the flashptx_* API only (src/libflashptx.map).
#                         include/flashptx.h is its ABI, the only header of include/. Headers only:
#                         ptx/ (one function per instruction) and src/protocol/ (the __host__ __device__
#                         protocol objects the kernels run and tools/models drives).
#   one include root      the repository root: every include names its path from there
#                         ("include/flashptx.h", "src/protocol/ring.h", "ptx/mbarrier.cuh")
#   build/libflashptx_support.a   tool support the CLI and the tests link, never the library:
#                         tools/support/*.{cpp,cu} (JSON, SVG trace renderer, bench host side, the CPU
#                         fp64 reference, the GPU reference kernel)
#   tools/models/*.cpp    CPU protocol models (flashptx ledger, oracle tests), linked as objects so
#                         that their static ledger registrations are never dropped
#   tools/sass/*.cpp      the SASS normaliser, differ, order checker and audit
#   ./flashptx            tools/flashptx/*.cpp + the above + the ladder rungs (release flavour)
#   ./run_tests           tests/main.cpp, tests/host/*.cpp, tests/gpu/*.cpp, the test-flavour library,
#                         tests/kernels/*.cu (sm_90a test kernels), tests/kernels_sm100/*.cu (sm_100a,
#                         compiled and audited, never run here)
#
# Flavours (nothing of the build is committed):
#   build/rel/...   the release flavour: the library users link; the goldens are taken from it
#   build/test/...  the same kernels with -DFLASHPTX_BOUNDED_WAIT=1, so that a protocol bug traps
#                   with the barrier's name instead of hanging the test run. The GPU suites run this
#                   flavour and compare it bit for bit with the release libflashptx.so.
# Every file is found by its folder; adding a file needs no edit here. Every object has a
# dependency file (g++ and nvcc -MMD -MP): touching a header rebuilds what includes it, only.

CUDA      ?= /usr/local/cuda
NVCC      := $(CUDA)/bin/nvcc
CXX       ?= g++
ROOT      := $(abspath .)
DEPS      := $(ROOT)/.deps
BUILD     ?= build
BIN       ?= .
BUILD_ABS := $(abspath $(BUILD))

# The disassembler. No wheel of 13.0 exists on the package index; 13.2.51 is the oldest 13.x
# published and decodes both sm_90a and sm_100a cubins. Pinned by version and hash.
CUOBJDUMP_VERSION := 13.2.51
CUOBJDUMP_SHA256  := 95c69d3ddf0c2c1f535ec44c3433a66aeee19f588d9d22f73356e20b25f12b50
# cuobjdump --dump-sass runs nvdisasm from its own folder: the matching wheel goes beside it.
NVDISASM_SHA256   := 5a7acf77c55d6d2911ed6155d4d5bc156ffadf9df7a68a89b0c1155f4b13688c
CUOBJDUMP         := $(DEPS)/cuobjdump-$(CUOBJDUMP_VERSION)/nvidia/cu13/bin/cuobjdump
SETUP             := $(DEPS)/setup.ok

ARCH90    := -gencode arch=compute_90a,code=sm_90a
ARCH100   := -gencode arch=compute_100a,code=sm_100a

COMMON    := -std=c++20 -O3 -I$(ROOT) -DFLASHPTX_ROOT='"$(ROOT)"' -DFLASHPTX_BUILD_DIR='"$(BUILD_ABS)"' \
             -DFLASHPTX_CUOBJDUMP='"$(CUOBJDUMP)"'
# -diag-suppress 177: "declared but never referenced" for constexpr layout fields some kernels skip.
NVFLAGS   := $(COMMON) --expt-relaxed-constexpr -Xcompiler -fPIC -Xptxas -warn-spills \
             -Xcompiler -Wall -diag-suppress 177 -MMD -MP
CXXFLAGS  := $(COMMON) -fPIC -Wall -Wextra -I$(CUDA)/include -MMD -MP
LDLIBS    := -L$(CUDA)/lib64 -lcudart_static -ldl -lpthread -lrt

LIB_CPP     := $(wildcard src/*.cpp)
LIB_CU90    := $(wildcard src/sm90/*.cu)
LIB_CU100   := $(wildcard src/sm100/*.cu)
SUP_CPP     := $(wildcard tools/support/*.cpp)
SUP_CU      := $(wildcard tools/support/*.cu)
MODEL_CPP   := $(wildcard tools/models/*.cpp)
TK_CU       := $(wildcard tests/kernels/*.cu)
TK100_CU    := $(wildcard tests/kernels_sm100/*.cu)
TEST_CPP    := tests/main.cpp $(wildcard tests/host/*.cpp tests/gpu/*.cpp) $(filter-out %_main.cpp,$(wildcard tests/sim/*.cpp))
SASS_CPP    := $(wildcard tools/sass/*.cpp)
CLI_CPP     := $(wildcard tools/flashptx/*.cpp)

# Library objects, per flavour. nvcc objects of sm_100a code go to their own folders.
lib_objs = $(LIB_CPP:%.cpp=$(BUILD)/$(1)/%.o) $(LIB_CU90:%.cu=$(BUILD)/$(1)/%.o) $(LIB_CU100:%.cu=$(BUILD)/$(1)100/%.o)
REL_LIB_OBJ  := $(call lib_objs,rel)
TEST_LIB_OBJ := $(call lib_objs,test)
SUP_OBJ      := $(SUP_CPP:%.cpp=$(BUILD)/host/%.o) $(SUP_CU:%.cu=$(BUILD)/rel/%.o)
MODEL_OBJ    := $(MODEL_CPP:%.cpp=$(BUILD)/host/%.o)
TK_OBJ       := $(TK_CU:%.cu=$(BUILD)/test/%.o)
TK_REL_OBJ   := $(TK_CU:%.cu=$(BUILD)/rel/%.o)
TK100_OBJ    := $(TK100_CU:%.cu=$(BUILD)/rel100/%.o)
TK100_TEST_OBJ := $(TK100_CU:%.cu=$(BUILD)/test100/%.o)
TEST_OBJ     := $(filter-out $(BUILD)/host/tests/sim/isa_test_main.o,$(TEST_CPP:%.cpp=$(BUILD)/host/%.o))  # isa_test_main.cpp: the ISA tests' own main
SASS_OBJ     := $(SASS_CPP:%.cpp=$(BUILD)/host/%.o)
CLI_OBJ      := $(CLI_CPP:%.cpp=$(BUILD)/host/%.o)
SUPPORT_LIB  := $(BUILD)/libflashptx_support.a

# The objects whose kernels the audit reads, one per line: "arch object". All release flavour:
# the goldens show the instruction stream users run, without the test build's bounded waits.
AUDIT_LIST   := $(BUILD)/audit_objects.txt
AUDIT_SM90   := $(filter $(BUILD)/rel/%,$(REL_LIB_OBJ)) $(TK_REL_OBJ) $(filter $(BUILD)/rel/%,$(SUP_OBJ))
AUDIT_SM100  := $(filter $(BUILD)/rel100/%,$(REL_LIB_OBJ)) $(TK100_OBJ)

.PHONY: all setup audit regen-golden clean
.DEFAULT_GOAL := all

# ---- progress and verbosity ---------------------------------------------------------------
# Every recipe that makes a product (a compile unit, an archive, a link, a generated file) starts
# with $(call step,WHAT), which prints "[k/N] WHAT". N is counted once per top-level make, by a
# dry run of the same goals that counts the step lines it would run; k is a counter file, bumped
# under flock so that parallel jobs (-j2) never print the same k. The dry run and any nested make
# print nothing of their own (FLASHPTX_STEPS set).
V ?= 0
ifeq ($(V),1)
  Q :=
  cmdline = $(info $(1))
else
  Q := @
  cmdline =
endif
STEP_FILE := $(BUILD_ABS)/.steps
ifeq ($(FLASHPTX_STEPS)$(findstring n,$(firstword -$(MAKEFLAGS))),)
  export FLASHPTX_STEPS := $(shell $(MAKE) --no-print-directory -n $(MAKECMDGOALS) FLASHPTX_STEPS=0 V=0 2>/dev/null | \
                             grep -c 'flashptx-build-step')
  $(shell mkdir -p $(BUILD_ABS) && : > $(STEP_FILE))
endif
step = @flock $(STEP_FILE) -c 'echo >> $(STEP_FILE); printf "[%s/%s] %s\n" $$(wc -l < $(STEP_FILE)) $(FLASHPTX_STEPS) "$(1)"' \
       \# flashptx-build-step
# $(call nvcc,FLAGS,EXPECTED): nvcc FLAGS -c $< -o $@, printing what the compiler says except the
# lines EXPECTED matches (grep -v patterns; none: everything printed), with nvcc's exit status.
nvcc = $(call cmdline,$(NVCC) $(NVFLAGS) $(1) -c $< -o $@)@mkdir -p $(dir $@); \
       out=$$($(NVCC) $(NVFLAGS) $(1) -c $< -o $@ 2>&1); rc=$$?; \
       [ -z "$$out" ] || printf '%s\n' "$$out" $(if $(2),| grep -v $(2)); exit $$rc

# $(call nvcc_ptx,FLAGS,EXPECTED,OBJ,PTX): as nvcc, for a rule of two targets: the object OBJ, and
# PTX, the simulator's input (tools/sim/sim.mk), kept from the same compile (--keep): the bytes that
# `nvcc FLAGS -ptx` writes, without a second front-end pass over the unit.
nvcc_ptx = $(call cmdline,$(NVCC) $(NVFLAGS) $(1) --keep -c $< -o $(3))@mkdir -p $(dir $(3)) $(dir $(4)); \
       k=$(BUILD)/keep/$(subst /,_,$(3)); rm -rf $$k; mkdir -p $$k; \
       out=$$($(NVCC) $(NVFLAGS) $(1) --keep --keep-dir $$k -c $< -o $(3) 2>&1); rc=$$?; \
       [ -z "$$out" ] || printf '%s\n' "$$out" $(if $(2),| grep -v $(2)); \
       [ $$rc -ne 0 ] || mv $$k/$(basename $(notdir $<)).ptx $(4) || rc=1; rm -rf $$k; exit $$rc

all: $(SETUP) $(BIN)/libflashptx.a $(BIN)/libflashptx.so $(BIN)/flashptx $(BIN)/run_tests $(AUDIT_LIST)

# ---- set-up: what the build needs and this machine may lack --------------------------------
# Run once: the stamp .deps/setup.ok records that the checks ran; every compile rule takes it as an
# order-only prerequisite, so that a make with the stamp present checks nothing. `make setup` runs
# the checks again. A disassembler that could not be fetched is said once; the audit then skips
# (it says why) until `make setup` fetches it.
define SETUP_CHECKS
mkdir -p $(DEPS); \
if [ ! -f /usr/include/doctest/doctest.h ]; then \
  echo "setup: doctest (Debian doctest-dev) is missing; installing it with apt-get"; \
  (apt-get install -y -qq doctest-dev >/dev/null 2>&1 || \
   (apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq doctest-dev >/dev/null)) || \
  { echo "setup: could not install doctest-dev; install it and run make again"; exit 1; }; \
fi; \
if [ ! -x $(CUOBJDUMP) ]; then \
  mkdir -p $(DEPS)/wheels; \
  echo "setup: fetching the CUDA disassembler (PyPI wheels nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm $(CUOBJDUMP_VERSION))"; \
  if python3 -m pip download -q --no-deps --only-binary=:all: -d $(DEPS)/wheels \
       nvidia-cuda-cuobjdump==$(CUOBJDUMP_VERSION) nvidia-cuda-nvdisasm==$(CUOBJDUMP_VERSION); then \
    for pkg in cuobjdump:$(CUOBJDUMP_SHA256) nvdisasm:$(NVDISASM_SHA256); do \
      name=$${pkg%%:*}; sum=$${pkg#*:}; \
      w=$$(ls $(DEPS)/wheels/nvidia_cuda_$${name}-$(CUOBJDUMP_VERSION)-*.whl 2>/dev/null | head -1); \
      [ -n "$$w" ] || continue; \
      echo "$$sum  $$w" | sha256sum -c --quiet - || { echo "setup: hash mismatch for $$w"; exit 1; }; \
      mkdir -p $(DEPS)/cuobjdump-$(CUOBJDUMP_VERSION) && \
      (cd $(DEPS)/cuobjdump-$(CUOBJDUMP_VERSION) && unzip -q -o $$w && chmod +x nvidia/cu13/bin/$$name) || exit 1; \
    done; \
  else \
    echo "setup: could not fetch the disassembler; the audit will be skipped (make setup tries again)"; \
  fi; \
fi; \
touch $(SETUP)
endef

$(SETUP):
	$(call step,set-up: doctest and the CUDA disassembler)
	@$(SETUP_CHECKS)
setup:
	$(call step,set-up: doctest and the CUDA disassembler)
	@$(SETUP_CHECKS)

# ---- compile rules ------------------------------------------------------------------------
# The release flavour prints what ptxas says, except one expected message: the race reproducer's
# printf-bounded variants (tests/kernels/race_repro.cu, a test kernel audited in both flavours) keep
# the test build's serialised wgmma schedule on purpose, C7510 once per such variant. No library
# kernel is in that list.
PTXAS_REL_EXPECTED := -e 'C7510.*wgmma pipeline crossing function boundary.*race24race_wait_timeout_printf'
$(BUILD)/rel/%.o $(BUILD)/ptx/%.ptx: %.cu | $(SETUP)
	$(call step,nvcc sm_90a  release $<)
	$(call nvcc_ptx,$(ARCH90),$(PTXAS_REL_EXPECTED),$(BUILD)/rel/$*.o,$(BUILD)/ptx/$*.ptx)
# The test flavour's expected ptxas messages, filtered from its output (and only they; anything
# else ptxas says is printed, and its exit status is kept). Its bounded mbarrier wait
# (FLASHPTX_BOUNDED_WAIT, ptx/mbarrier.cuh) reports a timeout through an out-of-line call
# (mbarrier_wait_timeout, so that the retry loop keeps no registers live); in a kernel that issues
# wgmma, ptxas then serialises the wgmma pipeline around that call and says so, info C7510, once per
# such kernel: the eighteen FA3 forward specializations (src/sm90/fa3_fwd.cu: twelve fixed-length,
# six varlen) and the traced kernel (src/sm90/fa3_fwd_trace.cu), nineteen lines; the same for the
# backward's bounded semaphore wait (semaphore_wait_timeout, ptx/atomic.cuh), once per backward
# specialization (src/sm90/fa3_bwd.cu), six lines; and the race reproducer's kBounded variants (tests/kernels/race_repro.cu), which keep the
# test build's schedule on purpose, two lines. The library kernels' wgmmas run serialised in this flavour only. The
# traced kernel's test flavour also spills (36 bytes stored, 72 loaded), from the bounded waits
# added to the trace stamps; the test flavour of most forward kernels and of two FP8 ones spills
# 4-512 bytes around the same out-of-line call, printed (not filtered) so that a change shows. Neither happens in the release flavour, which users link, the goldens
# record, the audit checks for spills (the release traced kernel included), bench and trace time,
# and the GPU suites run beside the test flavour, comparing outputs bit for bit.
PTXAS_TEST_EXPECTED := -e 'C7510.*wgmma pipeline crossing function boundary.*mbarrier_wait_timeout' \
                       -e 'C7510.*wgmma pipeline crossing function boundary.*semaphore_wait_timeout' \
                       -e 'C7510.*wgmma pipeline crossing function boundary.*race24race_wait_timeout_printf' \
                       -e 'Registers are spilled to local memory in function .fa3_fwd_sm90_bf16_d128_trace.'
$(BUILD)/test/%.o: %.cu | $(SETUP)
	$(call step,nvcc sm_90a  test    $<)
	$(call nvcc,-DFLASHPTX_BOUNDED_WAIT=1 $(ARCH90),$(PTXAS_TEST_EXPECTED))
# The sm_100a units' PTX comes from their release compile (the patterns name their folders, so that
# make prefers them, shorter stems, to the sm_90a rule above for build/ptx/...).
$(BUILD)/rel100/src/sm100/%.o $(BUILD)/ptx/src/sm100/%.ptx: src/sm100/%.cu | $(SETUP)
	$(call step,nvcc sm_100a release $<)
	$(call nvcc_ptx,$(ARCH100),,$(BUILD)/rel100/src/sm100/$*.o,$(BUILD)/ptx/src/sm100/$*.ptx)
$(BUILD)/rel100/tests/kernels_sm100/%.o $(BUILD)/ptx/tests/kernels_sm100/%.ptx: tests/kernels_sm100/%.cu | $(SETUP)
	$(call step,nvcc sm_100a release $<)
	$(call nvcc_ptx,$(ARCH100),,$(BUILD)/rel100/tests/kernels_sm100/$*.o,$(BUILD)/ptx/tests/kernels_sm100/$*.ptx)
$(BUILD)/test100/%.o: %.cu | $(SETUP)
	$(call step,nvcc sm_100a test    $<)
	$(call nvcc,-DFLASHPTX_BOUNDED_WAIT=1 $(ARCH100))
# Host C++ of the library: the same in both flavours (no device code), compiled once per flavour
# only so that each flavour's archive is self-contained.
$(BUILD)/rel/%.o: %.cpp | $(SETUP)
	$(call step,c++  release $<)
	@mkdir -p $(dir $@)
	$(Q)$(CXX) $(CXXFLAGS) -c $< -o $@
$(BUILD)/test/%.o: %.cpp | $(SETUP)
	$(call step,c++  test    $<)
	@mkdir -p $(dir $@)
	$(Q)$(CXX) $(CXXFLAGS) -c $< -o $@
$(BUILD)/host/%.o: %.cpp | $(SETUP)
	$(call step,c++  $<)
	@mkdir -p $(dir $@)
	$(Q)$(CXX) $(CXXFLAGS) -c $< -o $@

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

include tools/sim/sim.mk

# ---- products -----------------------------------------------------------------------------
$(BIN)/libflashptx.a: $(REL_LIB_OBJ)
	$(call step,ar   $@)
	@rm -f $@
	$(Q)ar rcs $@ $^

# The shared library exports the C ABI only; the CUDA runtime inside it (static) stays hidden.
# Its SONAME is libflashptx.so.MAJOR (the install's link names: see "version and install" below).
$(BIN)/libflashptx.so: $(REL_LIB_OBJ) src/libflashptx.map VERSION
	$(call step,link $@)
	$(Q)$(NVCC) -shared -o $@ $(REL_LIB_OBJ) -cudart static -Xlinker --version-script=src/libflashptx.map \
	  -Xlinker -Bsymbolic -Xlinker -soname=libflashptx.so.$(VERSION_MAJOR) $(filter-out -L% -lcudart_static,$(LDLIBS))
	@ln -sf $(notdir $@) $@.$(VERSION_MAJOR)  # the SONAME's name, so programs linked here load

$(BUILD)/libflashptx_test.a: $(TEST_LIB_OBJ)
	$(call step,ar   $@)
	@rm -f $@
	$(Q)ar rcs $@ $^

$(SUPPORT_LIB): $(SUP_OBJ)
	$(call step,ar   $@)
	@rm -f $@
	$(Q)ar rcs $@ $^

# The CLI also links the release flavour of the attention ladder's rungs (tests/kernels/ladder_*.cu,
# the objects the audit reads): `flashptx ladder --bench` times them. ./run_tests links their test
# flavour (TK_OBJ) instead.
LADDER_REL_OBJ := $(filter $(BUILD)/rel/tests/kernels/ladder_%.o,$(TK_REL_OBJ))
$(BIN)/flashptx: $(CLI_OBJ) $(SASS_OBJ) $(MODEL_OBJ) $(LADDER_REL_OBJ) $(SUPPORT_LIB) $(BIN)/libflashptx.a
	$(call step,link $@)
	$(Q)$(CXX) -o $@ $(CLI_OBJ) $(SASS_OBJ) $(MODEL_OBJ) $(LADDER_REL_OBJ) $(SUPPORT_LIB) $(BIN)/libflashptx.a $(LDLIBS)

# ---- files the host tests read, compiled into ./run_tests ----------------------------------
# So that ./run_tests runs the same from a copy of the binaries without the source tree: the SASS
# fixtures, the committed raw trace and its summary (the README's re-render), and README.md (its
# command table is checked against each command's --help). tests/embed.cpp writes the source;
# tests/embedded.h is the lookup.
EMBED_FILES := $(sort $(wildcard tests/host/fixtures/*)) tools/trace/h200-d128-s8192-b2-h16.json.gz \
               tools/trace/h200-d128-s8192-summary.txt README.md
EMBED_SRC   := $(BUILD)/gen/embedded_files.cpp
EMBED_OBJ   := $(BUILD)/gen/embedded_files.o
$(BUILD)/gen/embed: tests/embed.cpp | $(SETUP)
	$(call step,link $@)
	@mkdir -p $(dir $@)
	$(Q)$(CXX) -std=c++20 -O1 -o $@ $<
$(EMBED_SRC): $(BUILD)/gen/embed $(EMBED_FILES)
	$(call step,gen  $@ (the files the host tests read))
	$(Q)$(BUILD)/gen/embed $@ $(EMBED_FILES)
$(EMBED_OBJ): $(EMBED_SRC)
	$(call step,c++  $<)
	$(Q)$(CXX) $(CXXFLAGS) -O1 -c $< -o $@

# ./run_tests also links the commands (not main.cpp): the tests call their parse-and-validate steps.
# The test programs' device-to-host copies pass through tests/gpu/capture.cpp (the simulator held
# against the chip; nothing is recorded unless asked).
CAPTURE_WRAP := --wrap=cudaMemcpy --wrap=cudaMemcpyAsync
CLI_TEST_OBJ := $(filter-out $(BUILD)/host/tools/flashptx/main.o,$(CLI_OBJ))
$(BIN)/run_tests: $(TEST_OBJ) $(SASS_OBJ) $(MODEL_OBJ) $(CLI_TEST_OBJ) $(EMBED_OBJ) $(SUPPORT_LIB) $(BUILD)/libflashptx_test.a \
                  $(TK_OBJ) $(TK100_TEST_OBJ) $(SIM_LIB)
	$(call step,link $@)
	$(Q)$(NVCC) -o $@ $(TEST_OBJ) $(SASS_OBJ) $(MODEL_OBJ) $(CLI_TEST_OBJ) $(EMBED_OBJ) $(TK_OBJ) $(TK100_TEST_OBJ) \
	  $(SUPPORT_LIB) $(BUILD)/libflashptx_test.a $(SIM_LIB) -cudart static -ldl $(ARCH90) $(ARCH100) \
	  $(CAPTURE_WRAP:%=-Xlinker %)

$(AUDIT_LIST): $(AUDIT_SM90) $(AUDIT_SM100)
	$(call step,gen  $@)
	@mkdir -p $(dir $@)
	@rm -f $@.tmp
	@for o in $(AUDIT_SM90); do echo "sm_90a $$o" >> $@.tmp; done
	@for o in $(AUDIT_SM100); do echo "sm_100a $$o" >> $@.tmp; done
	@touch $@.tmp && mv $@.tmp $@

audit: all
	$(BIN)/flashptx audit

regen-golden: all
	$(BIN)/flashptx audit --regenerate

clean:
	rm -rf $(BUILD) $(BIN)/libflashptx.a $(BIN)/libflashptx.so $(BIN)/libflashptx.so.* $(BIN)/flashptx $(BIN)/run_tests

# ---- generated code: ptx/wgmma_mma.cuh ------------------------------------------------------
# The header is committed (ptx/ stays vendorable alone); tools/support/wgmma_gen.cpp is its source,
# and the host test "host ptx wgmma generated header" fails when the two differ. The generator is
# plain C++ built here only (its library part is also in libflashptx_support.a, for that test).
WGMMA_GEN := $(BUILD)/gen/gen_wgmma
.PHONY: regen-wgmma
$(WGMMA_GEN): tools/gen/gen_wgmma.cpp tools/support/wgmma_gen.cpp tools/support/wgmma_gen.h
	$(call step,link $@)
	@mkdir -p $(dir $@)
	$(Q)$(CXX) -std=c++17 -O1 -Wall -Wextra -I$(ROOT) -o $@ tools/gen/gen_wgmma.cpp tools/support/wgmma_gen.cpp
regen-wgmma: $(WGMMA_GEN)
	$(call step,gen  ptx/wgmma_mma.cuh)
	$(Q)$(WGMMA_GEN) ptx/wgmma_mma.cuh

# ---- version and install ------------------------------------------------------------------------
# The version is the VERSION file, MAJOR.MINOR.PATCH, and nowhere else: src/version.cpp gets it as
# FLASHPTX_VERSION (flashptx_version()), the .so's SONAME takes MAJOR, the install names the files
# by it, and the Python package asks the library it carries. CHANGELOG.md's top entry names it
# (the host test "host install" checks that they agree).
#   make install PREFIX=/opt/flashptx [DESTDIR=...]   copies the built products (builds them first if
#                     needed; copies, compiles nothing), tools/install/install.sh says what goes where
FLASHPTX_VERSION := $(shell cat VERSION)
VERSION_MAJOR    := $(firstword $(subst ., ,$(FLASHPTX_VERSION)))
$(BUILD)/rel/src/version.o $(BUILD)/test/src/version.o: VERSION
$(BUILD)/rel/src/version.o $(BUILD)/test/src/version.o: CXXFLAGS += -DFLASHPTX_VERSION='"$(FLASHPTX_VERSION)"'

PREFIX  ?= /usr/local
DESTDIR ?=
.PHONY: install
install: $(BIN)/libflashptx.a $(BIN)/libflashptx.so $(BIN)/flashptx
	@sh tools/install/install.sh "$(DESTDIR)$(PREFIX)" "$(PREFIX)" "$(BIN)" "$(FLASHPTX_VERSION)" "$(CUDA)"
include tools/sim/exec.mk
