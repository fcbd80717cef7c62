# ptxsim (tools/sim/): the PTX simulator, a tool never linked into libflashptx.
#   build/sim/libptxsim.a     tools/sim/*.cpp and tools/sim/isa/*.cpp
#   build/ptx/<path>.ptx      the PTX of each sm_90a library and test kernel unit, from the same
#                             sources and flags as their release-flavour SASS (no ptxas: cheap)
SIM_CPP      := $(wildcard tools/sim/*.cpp tools/sim/isa/*.cpp)
SIM_OBJ      := $(SIM_CPP:%.cpp=$(BUILD)/sim/%.o)
SIM_LIB      := $(BUILD)/sim/libptxsim.a
SIM_CXXFLAGS := -std=c++20 -O2 -ffp-contract=off -I$(ROOT) -Wall -Wextra -MMD -MP
SIM_PTX      := $(LIB_CU90:%.cu=$(BUILD)/ptx/%.ptx) $(TK_CU:%.cu=$(BUILD)/ptx/%.ptx)

$(BUILD)/sim/%.o: %.cpp
	$(call step,c++  $< (simulator))
	@mkdir -p $(dir $@)
	$(Q)$(CXX) $(SIM_CXXFLAGS) -c $< -o $@
$(SIM_LIB): $(SIM_OBJ)
	$(call step,ar   $@)
	@mkdir -p $(dir $@)
	@rm -f $@
	$(Q)ar rcs $@ $^
$(BUILD)/ptx/%.ptx: %.cu
	$(call step,ptx  $<)
	@mkdir -p $(dir $@)
	$(Q)$(NVCC) $(NVFLAGS) $(ARCH90) -ptx $< -o $@

.PHONY: sim sim-ptx
sim: $(SIM_LIB)
sim-ptx: $(SIM_PTX)
all: $(SIM_LIB) $(SIM_PTX)
