/* ptxsim's stand-ins for libcuda.so.1 (the driver API) and libcudart.so.13 (the runtime API):
   a program built with nvcc -cudart shared loads these instead of NVIDIA's libraries
   (`ptxsim exec` sets LD_LIBRARY_PATH) and its CUDA calls run on ptxsim.

   Every entry point the real library exports (cuda_api.h / cudart_api.h) is defined here and
   does one thing: pass its name and its argument registers to `ptxsim.cuda.shim.dispatch` in an
   embedded CPython (started on the first call, in the program's own process), which knows each
   function's C signature, models it with ptxsim.cuda and returns the result. A function ptxsim
   does not model returns a named "not modelled" error (801, cudaErrorNotSupported /
   CUDA_ERROR_NOT_SUPPORTED) instead of being missing.

   Arguments: each entry point is declared with 16 64-bit integer parameters. The CUDA APIs take
   integers, pointers and small structs (dim3) by value, which the x86-64 System V and AArch64
   procedure-call standards pass in integer registers and 8-byte stack slots in order, so
   argument k of the real signature is found in slot k (a dim3 takes two: x | y << 32, z);
   ptxsim.cuda.shim masks each to its C type. Slots past the real arguments hold whatever the
   caller's frame holds and are ignored. One build per library: -DPTXSIM_LIBCUDART selects the
   runtime's names, -DPTXSIM_LIBCUTE_DSL_RUNTIME those of CuTe DSL's runtime library
   (libcute_dsl_runtime.so: the CUDA runtime calls of the DSL's compiled host code, answered by
   ptxsim.cuda.dsl), otherwise the driver's.

   Nothing here needs CUDA: the CPython headers and libpython (linked, with its directory as the
   run path) are the only build dependency. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef unsigned long long U;

#if defined(PTXSIM_LIBCUTE_DSL_RUNTIME)
/* the stand-in for CuTe DSL's libcute_dsl_runtime.so, which host code compiled with
   --enable-tvm-ffi links (ptxsim.cuda.dsl points CUTE_DSL_LIBS at it) */
#define LIBRARY "cute_dsl_runtime"
#define MODULE "ptxsim.cuda.dsl"
#define DISPATCH "native_dispatch"
#define START "native_start"
#elif defined(PTXSIM_LIBCUDART)
#define LIBRARY "cudart"
#else
#define LIBRARY "cuda"
#endif
#ifndef MODULE
#define MODULE "ptxsim.cuda.shim"
#define DISPATCH "dispatch"
#define START "start"
#endif

#define NOT_READY 999ULL                     /* cudaErrorUnknown / CUDA_ERROR_UNKNOWN */

static PyObject *dispatch_fn;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int ready;

static void start(void) {
    int owned = 0;
    if (!Py_IsInitialized()) {
        /* the Python ptxsim was installed into: PTXSIM_PYTHON (set by `ptxsim exec`) names its
           executable, so that sys.prefix and site-packages are that environment's */
        PyConfig config;
        PyConfig_InitPythonConfig(&config);
        config.install_signal_handlers = 0;
        config.parse_argv = 0;
        config.buffered_stdio = 0;
        const char *exe = getenv("PTXSIM_PYTHON");
        PyStatus st = exe ? PyConfig_SetBytesString(&config, &config.executable, exe)
                          : PyStatus_Ok();
        if (!PyStatus_Exception(st))
            st = Py_InitializeFromConfig(&config);
        PyConfig_Clear(&config);
        if (PyStatus_Exception(st)) {
            fprintf(stderr, "ptxsim: cannot start Python for the CUDA shim (%s)\n",
                    st.err_msg ? st.err_msg : "unknown reason");
            ready = -1;
            return;
        }
        owned = 1;
    }
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *mod = PyImport_ImportModule(MODULE);
    PyObject *fn = mod ? PyObject_GetAttrString(mod, DISPATCH) : NULL;
    PyObject *init = mod ? PyObject_CallMethod(mod, START, "si", LIBRARY, owned) : NULL;
    if (fn && init) {
        dispatch_fn = fn;
        ready = 1;
    } else {
        fprintf(stderr, "ptxsim: the CUDA shim cannot load " MODULE ":\n");
        PyErr_Print();
        Py_XDECREF(fn);
        ready = -1;
    }
    Py_XDECREF(init);
    Py_XDECREF(mod);
    PyGILState_Release(g);
    if (owned)
        PyEval_SaveThread();             /* the interpreter's thread state is never restored */
}

static int finalizing(void) {
#if PY_VERSION_HEX >= 0x030D0000
    return Py_IsFinalizing();
#else
    return _Py_IsFinalizing();
#endif
}

static U call(const char *name, const U *a) {
    pthread_once(&once, start);
    if (ready < 0)
        return NOT_READY;
    if (!Py_IsInitialized() || finalizing())
        return 0;            /* a destructor at exit (a module unloading its kernels): no model left */
    PyGILState_STATE g = PyGILState_Ensure();
    U result = NOT_READY;
    PyObject *args = PyTuple_New(17);
    if (args) {
        PyTuple_SET_ITEM(args, 0, PyUnicode_FromString(name));
        for (int i = 0; i < 16; i++)
            PyTuple_SET_ITEM(args, i + 1, PyLong_FromUnsignedLongLong(a[i]));
        PyObject *r = PyObject_Call(dispatch_fn, args, NULL);
        if (r) {
            result = PyLong_AsUnsignedLongLongMask(r);
            Py_DECREF(r);
        }
        Py_DECREF(args);
    }
    if (PyErr_Occurred()) {
        fprintf(stderr, "ptxsim: internal error in %s (a ptxsim bug; please report it):\n", name);
        PyErr_Print();
        result = NOT_READY;
    }
    PyGILState_Release(g);
    return result;
}

#define X(name)                                                                              \
    __attribute__((visibility("default"))) U name(U a0, U a1, U a2, U a3, U a4, U a5, U a6,  \
                                                  U a7, U a8, U a9, U a10, U a11, U a12,     \
                                                  U a13, U a14, U a15) {                     \
        U a[16] = {a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15};    \
        return call(#name, a);                                                               \
    }

#if defined(PTXSIM_LIBCUTE_DSL_RUNTIME)
#include "cute_dsl_runtime_api.h"
#elif defined(PTXSIM_LIBCUDART)
#include "cudart_api.h"
#else
#include "cuda_api.h"
#endif
