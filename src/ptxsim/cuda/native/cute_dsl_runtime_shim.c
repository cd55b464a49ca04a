/* the stand-in for CuTe DSL's runtime library libcute_dsl_runtime.so (shim.c) */
#define PTXSIM_LIBCUTE_DSL_RUNTIME 1
#include "shim.c"
