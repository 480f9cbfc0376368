/* The simulated device's own ledger of memory events (internal to sim/).
 * VRAMTRACE_SIM_LEDGER=FILE ("%p": the pid) receives one JSON object per
 * line, each written with one write(2) under the ledger's lock (O_APPEND, so
 * processes and threads can share a file). Format: README.md, "Ledger". It is
 * written from the sim's own allocation paths, never from a profiler's view.
 * Compiled into libcuda.so.1 (which owns it and exports the vtsim_ledger_*
 * entry points) and into libcudart.so.13 (used only when no driver loads). */
#ifndef SIM_LEDGER_H
#define SIM_LEDGER_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Memory kinds as the ledger names them. */
#define SIM_LK_DEVICE "device"
#define SIM_LK_MANAGED "managed"
#define SIM_LK_PINNED "host_pinned"
#define SIM_LK_REGISTERED "host_registered"
#define SIM_LK_ARRAY "array" /* CUDA arrays (cuArrayCreate, cudaMallocArray) */

/* Open an API scope on the calling thread: the outermost scope's `api` (an
 * entry point's name, static string) names every line written until it is
 * closed; a failure is written at most once per outermost scope. Returns a
 * token for vtsim_ledger_leave. */
int vtsim_ledger_enter(const char *api);
void vtsim_ledger_leave(int token);
/* A failed allocation call: writes {"op":"fail"} when err != 0 and no failure
 * was written yet in the current outermost scope. size: requested bytes;
 * device -1 for host kinds. Returns err unchanged. */
int vtsim_ledger_fail(const char *kind, int device, size_t size, int err);
/* A device's state as a fail line gives it (README.md "Ledger"): its free
 * and total bytes as cuMemGetInfo answers them then, its graph memory
 * pool's reserved bytes, and what of it neither an allocation of the
 * process nor a pool of its own holds (the context's reserve, the graph
 * launches' memset base, other processes' use). */
struct sim_ledger_device {
    size_t free, total, graph_pool, outside;
};
/* The driver's devices tell the ledger how to read a device's state:
 * state(device, out) is false for no such device. */
void sim_ledger_device_source(bool (*state)(int device, struct sim_ledger_device *out));

/* Allocation / end of an allocation's life (size: the API's size, bytes). */
void sim_ledger_alloc(const char *kind, int device, uintptr_t addr, size_t size);
void sim_ledger_free(const char *kind, int device, uintptr_t addr, size_t size);
/* A stream-ordered pool's reserve: op "pool_grow" when the pool takes a
 * segment [addr, addr + size) from the device, "pool_release" when it gives
 * one back (trim, synchronization, context teardown). Not allocations: the
 * pool's reserved bytes are the sum of its segments. */
void sim_ledger_pool(const char *op, int device, uintptr_t addr, size_t size);
/* A free call that failed and freed nothing (an unknown pointer, a double
 * free, a free refused during a stream capture ...): writes
 * {"op":"bad_free"} when err != 0, except for the two errors after which
 * the memory is gone anyway (CUDA_ERROR_DEINITIALIZED,
 * CUDA_ERROR_CONTEXT_IS_DESTROYED: the preload's vti_free_took_effect).
 * Every free entry point of the driver passes its failures here. Returns
 * err unchanged. */
int sim_ledger_bad_free(uintptr_t addr, int err);
/* VMM events; op is "vmm_create", "vmm_release" (addr ignored), "vmm_map",
 * "vmm_unmap". */
void sim_ledger_vmm(const char *op, uintptr_t handle, int device, uintptr_t addr, size_t size);

/* Scope guard for an entry point: one line at the top of its body. */
void sim_ledger_scope_end(int *token);
#define SIM_LEDGER_SCOPE(api)                                                                      \
    __attribute__((cleanup(sim_ledger_scope_end))) int sim_ledger_token_ = vtsim_ledger_enter(api)
#endif
