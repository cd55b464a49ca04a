/* the runtime-API shim: libcudart.so.13 (shim.c) */
#define PTXSIM_LIBCUDART 1
#include "shim.c"
