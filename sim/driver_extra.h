/* Internal interface of the simulated driver's wider API surface: the
 * device-attribute table and the fallback for entry points the simulated
 * device cannot serve. Not installed. */
#ifndef SIM_DRIVER_EXTRA_H
#define SIM_DRIVER_EXTRA_H
#include <cuda.h>

#include "sim_internal.h"

/* The fallback of every entry point the sim does not implement (generated
 * from cudaTypedefs.h, see tools/gen_entry_points.py): prints once per name
 * "vramtrace-sim: NAME: not supported by the simulated device" on stderr and
 * returns CUDA_ERROR_NOT_SUPPORTED (cuda.h: "the attempted operation is not
 * supported on the current system or device"). Thread-safe. */
CUresult sim_unsupported(const char *name);
/* CUDA 13.0's cuCtxGetDevice_v2 and cuCtxSynchronize_v2 (cudaTypedefs.h,
 * PFN_cuCtxGetDevice_v13000, PFN_cuCtxSynchronize_v13000): the context's
 * device, its synchronisation; NULL is the current context. Handed out by
 * cuGetProcAddress for "cuCtxGetDevice" and "cuCtxSynchronize" at 13000 and
 * later, as a real driver does; not exported by these names
 * (tools/gen_entry_points.py, HIDDEN). A value that is no context: stderr
 * and SIGSEGV, as a real driver crashed (driver_ctx.c). */
CUresult sim_cuCtxGetDevice_v13000(CUdevice *device, CUcontext ctx);
CUresult sim_cuCtxSynchronize_v13000(CUcontext ctx);

/* Each driver entry point that has a per-thread-default-stream variant
 * (cuda.h: cuMemcpy_ptds, cuMemAllocAsync_ptsz, ...) and that variant,
 * generated (tools/gen_entry_points.py, driver_entry_stubs.c): what
 * cuGetProcAddress hands out instead of `plain` for
 * CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM. */
struct sim_per_thread_entry {
    void *plain, *per_thread;
};
extern const struct sim_per_thread_entry sim_per_thread[];
extern const size_t sim_per_thread_count;
/* Set while a per-thread variant without a stream argument runs
 * (cuMemcpy_ptds ...): its implicit stream is the thread's own, not the
 * legacy one (sim_capture_unsafe; driver_capture.c). */
extern _Thread_local int sim_per_thread_call;

/* The value of device attribute `a` for profile `p` on device ordinal `dev`
 * (the real card's value, table in profile_attrs.c). Returns 0 and sets *out,
 * or -1 for a value that is not a CUdevice_attribute. */
int sim_device_attr(CUdevice_attribute a, const struct sim_profile *p, int dev, int *out);
#endif
