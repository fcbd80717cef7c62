// PLACEHOLDER (lead engineer replaces it with validation + dispatch).
#include "flashptx.h"
extern "C" const char* flashptx_last_error(void) { return ""; }
