// A doctest main for building the sim-isa conformance tests on their own (the project's runner,
// tests/main.cpp, links the test files without this one).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
