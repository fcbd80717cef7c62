// PLACEHOLDER until the audit lands: the audit is reported unavailable.
#include <string>
#include "tests/test_env.h"
namespace flashptx_test {
bool audit_available(const char*, std::string* why) { *why = "audit not built yet"; return false; }
}
