/* the driver-API shim: libcuda.so.1 (shim.c) */
#include "shim.c"
