# The simulator's executor (tools/sim/cudart/): the library's own objects on the PTX simulator.
#   build/libflashptx_sim.so  the release library objects + the fake CUDA runtime + libptxsim.a:
#                             the flashptx_* C ABI on a CPU (tools/sim/cudart/flashptx_sim.h);
#                             never the shipped library
#   build/sim_capi_forward    the C program of the C ABI test (tests/sim/sim_capi_forward.c)
#   build/run_tests_sim       ./run_tests's objects, the release library and test kernel objects,
#                             linked with the fake runtime instead of cudart_static: ./run_tests
#                             runs its gpu_sm90 suites in it on a machine without a GPU
# Both find each kernel's PTX in build/ptx/ (tools/sim/sim.mk), built with them.
# libflashptx_sim.so links libptxsim.a: its objects must be position-independent.
SIM_CXXFLAGS += -fPIC
SIMRT_CPP := $(wildcard tools/sim/cudart/*.cpp)
SIMRT_OBJ := $(SIMRT_CPP:%.cpp=$(BUILD)/simrt/%.o)
SIMRT_PTX := $(SIM_PTX) $(SUP_CU:%.cu=$(BUILD)/ptx/%.ptx)
SIMRT_LIBS := -ldl -lpthread

$(BUILD)/simrt/%.o: %.cpp | $(SETUP)
	$(call step,c++  $< (simulator runtime))
	@mkdir -p $(dir $@)
	$(Q)$(CXX) $(CXXFLAGS) -c $< -o $@

$(BUILD)/libflashptx_sim.so: $(REL_LIB_OBJ) $(SIMRT_OBJ) $(SIM_LIB) tools/sim/cudart/libflashptx_sim.map | $(SIMRT_PTX)
	$(call step,link $@)
	$(Q)$(CXX) -shared -o $@ $(REL_LIB_OBJ) $(SIMRT_OBJ) $(SIM_LIB) -Wl,--version-script=tools/sim/cudart/libflashptx_sim.map \
	  -Wl,-Bsymbolic $(SIMRT_LIBS)

# The C ABI test's program (tests/sim/test_sim_exec_capi.cpp runs it): plain C against include/flashptx.h.
$(BUILD)/sim_capi_forward: tests/sim/sim_capi_forward.c include/flashptx.h tools/sim/cudart/flashptx_sim.h $(BUILD)/libflashptx_sim.so
	$(call step,link $@)
	$(Q)$(CC) -std=c11 -O1 -Wall -Wextra -I$(ROOT) -I$(ROOT)/include -I$(CUDA)/include -o $@ $< \
	  $(BUILD_ABS)/libflashptx_sim.so -Wl,-rpath,$(BUILD_ABS)

SIM_TEST_OBJ := $(filter-out %/isa_test_main.o,$(TEST_OBJ)) $(SASS_OBJ) $(MODEL_OBJ) $(CLI_TEST_OBJ) $(EMBED_OBJ) $(TK_REL_OBJ) $(TK100_OBJ)
$(BUILD)/run_tests_sim: $(SIM_TEST_OBJ) $(SUPPORT_LIB) $(REL_LIB_OBJ) $(SIMRT_OBJ) $(SIM_LIB) | $(SIMRT_PTX) $(BUILD)/libflashptx_sim.so
	$(call step,link $@)
	$(Q)$(CXX) -o $@ $(SIM_TEST_OBJ) $(SUPPORT_LIB) $(REL_LIB_OBJ) $(SIMRT_OBJ) $(SIM_LIB) \
	  -Wl,--export-dynamic-symbol=flashptx_sim_device_v1 $(CAPTURE_WRAP:%=-Wl,%) $(SIMRT_LIBS)

.PHONY: sim-exec
sim-exec: $(BUILD)/libflashptx_sim.so $(BUILD)/run_tests_sim $(BUILD)/sim_capi_forward
all: sim-exec
