# ptxsim (tools/sim/): the PTX simulator, a tool never linked into libflashptx.
#   build/sim/libptxsim.a     tools/sim/*.cpp and tools/sim/isa/*.cpp
#   build/ptx/<path>.ptx      the PTX of each sm_90a library and test kernel unit, kept from the
#                             release-flavour compile whose SASS the goldens record (same bytes)
SIM_CPP      := $(wildcard tools/sim/*.cpp tools/sim/isa/*.cpp)
# the tcgen05 emulator: the simulator's Tensor Memory and tcgen05.mma (tools/sim/exec_sm100.inc)
SIM_CPP      += tools/models/tcgen05_emulator.cpp
SIM_OBJ      := $(SIM_CPP:%.cpp=$(BUILD)/sim/%.o)
SIM_LIB      := $(BUILD)/sim/libptxsim.a
SIM_CXXFLAGS := -std=c++20 -O2 -ffp-contract=off -I$(ROOT) -Wall -Wextra -MMD -MP
SIM_PTX      := $(LIB_CU90:%.cu=$(BUILD)/ptx/%.ptx) $(TK_CU:%.cu=$(BUILD)/ptx/%.ptx)
# sm_100a: the test kernels' PTX (tests/kernels_sm100/) and the FA4 forward's (src/sm100/fa4_fwd.cu:
# its 1-CTA kernels; the library plans them on the simulated device with FLASHPTX_SIM_CC=100),
# executed by the simulator's tcgen05 engine (tools/sim/exec_sm100.inc); never run on a Blackwell GPU.
SIM_PTX100   := $(TK100_CU:%.cu=$(BUILD)/ptx/%.ptx) $(BUILD)/ptx/src/sm100/fa4_fwd.ptx \
                $(BUILD)/ptx/src/sm100/fa4_bwd.ptx $(BUILD)/ptx/src/sm100/fa4_bwd_pair.ptx
SIM_PTX      += $(SIM_PTX100)

$(BUILD)/sim/%.o: %.cpp
	$(call step,c++  $< (simulator))
	@mkdir -p $(dir $@)
	$(Q)$(CXX) $(SIM_CXXFLAGS) -c $< -o $@
$(SIM_LIB): $(SIM_OBJ)
	$(call step,ar   $@)
	@mkdir -p $(dir $@)
	@rm -f $@
	$(Q)ar rcs $@ $^
# build/ptx/<path>.ptx: made by the release-flavour compile of <path>.cu (the Makefile's rel and
# rel100 rules keep the PTX of that compile), not by a compile of its own.

.PHONY: sim sim-ptx
sim: $(SIM_LIB)
sim-ptx: $(SIM_PTX)
all: $(SIM_LIB) $(SIM_PTX)
