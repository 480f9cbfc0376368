/* redirect.c: entry points fetched without the PLT land in the hooks: the
 * dlsym override and the cuGetProcAddress(_v2) hooks hand out the hooks for
 * hooked names (the real pointer is remembered in real.c for forwarding).
 * Prior art: HAMi-core src/libvgpu.c (dlsym override) and src/cuda/hook.c
 * (cuGetProcAddress table). Above the hooks: the only file that takes their
 * addresses. */
#include <cuda.h>
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "vti_internal.h"

#undef cuGetProcAddress
VTI_EXPORT CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                             cuuint64_t flags);

/* The hooks are defined in hooks_*.c and here with their CUDA prototypes;
 * here only their addresses matter (declared under their symbol names, so
 * as not to clash with cuda.h's prototypes). */
#define DECLARE(n) extern void vti_addr_##n(void) __asm__(#n);
VTI_HOOKS(DECLARE)
#undef DECLARE
#define ADDR(n) (void *)vti_addr_##n,
static void *const fn_hooks[] = {VTI_HOOKS(ADDR)};
#undef ADDR
_Static_assert(sizeof fn_hooks / sizeof fn_hooks[0] == F_COUNT_, "one hook per enum vti_fn");

#define NO_DRIVER CUDA_ERROR_NOT_INITIALIZED

static bool is_hook(void *p)
{
    for (int i = 0; i < F_COUNT_; i++)
        if (fn_hooks[i] == p)
            return true;
    return false;
}

static void *redirect(const char *name, void *p)
{
    int f;
    if (!p || (f = vti_fn_lookup(name)) < 0)
        return p;
    if (is_hook(p)) /* the lookup found us: only if a real one exists */
        return vti_real((enum vti_fn)f) ? p : NULL;
    vti_real_remember((enum vti_fn)f, p);
    return fn_hooks[f];
}

/* dlsym override: hooked CUDA names resolve to the hooks (the real pointer
 * is remembered for forwarding), everything else to what glibc returns.
 * Errors: NULL with dlerror() set, as glibc's.
 *
 * dlsym(RTLD_NEXT, name) depends on the caller (glibc looks at its return
 * address), so on x86-64 the exported dlsym is a stub that jumps straight
 * into glibc's for RTLD_NEXT, leaving the caller's return address in place;
 * those lookups are not redirected (the caller asked for the next
 * definition). Elsewhere RTLD_NEXT is resolved as if asked by
 * libvramtrace.so. */
void *vti_dlsym_c(void *handle, const char *name);
void *vti_dlsym_c(void *handle, const char *name)
{
    void *p = vti_real_dlsym(handle, name);
    return handle == RTLD_NEXT ? p : redirect(name, p);
}

#if defined(__x86_64__)
__asm__(".text\n"
        ".globl dlsym\n"
        ".type dlsym, @function\n"
        "dlsym:\n"
        "    cmpq $-1, %rdi\n"
        "    jne vti_dlsym_c\n"
        "    movq vti_real_dlsym_p(%rip), %rax\n"
        "    testq %rax, %rax\n"
        "    jnz 1f\n"
        "    pushq %rdi\n"
        "    pushq %rsi\n"
        "    subq $8, %rsp\n"
        "    call vti_dlsym_init\n"
        "    addq $8, %rsp\n"
        "    popq %rsi\n"
        "    popq %rdi\n"
        "    testq %rax, %rax\n"
        "    jz vti_dlsym_c\n"
        "1:  jmp *%rax\n"
        ".size dlsym, .-dlsym\n");
#else
VTI_EXPORT void *dlsym(void *handle, const char *name)
{
    return vti_dlsym_c(handle, name);
}
#endif

/* Which hook serves cuGetProcAddress(symbol, version, flags): symbols are
 * base names whose _v2 ABI starts at the CUDA version cuda.h's #defines and
 * cudaTypedefs.h's PFN_ names give (most at 3.2) and whose
 * per-thread-stream variant is picked by flags. -1 when not hooked. */
static int proc_lookup(const char *symbol, int version, uint64_t flags)
{
    static const char *const v2_names[] = {"cuMemAlloc",     "cuMemFree",    "cuMemAllocPitch",
                                           "cuMemAllocHost", "cuMemGetInfo", "cuArrayCreate",
                                           "cuArray3DCreate"};
    if (strcmp(symbol, "cuMemHostRegister") == 0) /* _v2 since CUDA 6.5 (cuda.h) */
        return version >= 6050 ? F_cuMemHostRegister_v2 : F_cuMemHostRegister;
    /* cudaTypedefs.h: PFN_cuDevicePrimaryCtxReset_v11000, PFN_cuCtxDestroy_v4000 */
    if (strcmp(symbol, "cuDevicePrimaryCtxReset") == 0)
        return version >= 11000 ? F_cuDevicePrimaryCtxReset_v2 : F_cuDevicePrimaryCtxReset;
    if (strcmp(symbol, "cuDevicePrimaryCtxRelease") == 0)
        return version >= 11000 ? F_cuDevicePrimaryCtxRelease_v2 : F_cuDevicePrimaryCtxRelease;
    if (strcmp(symbol, "cuCtxDestroy") == 0)
        return version >= 4000 ? F_cuCtxDestroy_v2 : F_cuCtxDestroy;
    /* PFN_cuCtxPushCurrent_v2000, _v4000 (and the pop's) */
    if (strcmp(symbol, "cuCtxPushCurrent") == 0)
        return version >= 4000 ? F_cuCtxPushCurrent_v2 : F_cuCtxPushCurrent;
    if (strcmp(symbol, "cuCtxPopCurrent") == 0)
        return version >= 4000 ? F_cuCtxPopCurrent_v2 : F_cuCtxPopCurrent;
    /* PFN_cuCtxCreate_v2000, _v3020, _v11040, _v12050 */
    if (strcmp(symbol, "cuCtxCreate") == 0)
        return version >= 12050   ? F_cuCtxCreate_v4
               : version >= 11040 ? F_cuCtxCreate_v3
               : version >= 3020  ? F_cuCtxCreate_v2
                                  : F_cuCtxCreate;
    /* PFN_cuGraphInstantiate_v10000, _v11000 (the same arguments) */
    if (strcmp(symbol, "cuGraphInstantiate") == 0)
        return version >= 11000 ? F_cuGraphInstantiate_v2 : F_cuGraphInstantiate;
    /* PFN_cuGraphAddNode_v12020, _v12030 (with edge data) */
    if (strcmp(symbol, "cuGraphAddNode") == 0)
        return version >= 12030 ? F_cuGraphAddNode_v2 : F_cuGraphAddNode;
    static const char *const ptsz_names[] = {"cuMemAllocAsync",
                                             "cuMemFreeAsync",
                                             "cuMemAllocFromPoolAsync",
                                             "cuStreamEndCapture",
                                             "cuStreamBeginCaptureToGraph",
                                             "cuGraphLaunch",
                                             "cuGraphInstantiateWithParams"};
    char buf[64];
    bool ptds = flags & 2u; /* CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM */
    /* cudaTypedefs.h: PFN_cuStreamBeginCapture_v10010 (with a mode) after _v10000 */
    if (strcmp(symbol, "cuStreamBeginCapture") == 0) {
        snprintf(buf, sizeof buf, "cuStreamBeginCapture%s%s", version >= 10010 ? "_v2" : "",
                 ptds ? "_ptsz" : "");
        return vti_fn_lookup(buf);
    }
    for (size_t i = 0; i < sizeof v2_names / sizeof v2_names[0]; i++)
        if (strcmp(symbol, v2_names[i]) == 0) {
            if (version < 3020)
                return -1;
            snprintf(buf, sizeof buf, "%s_v2", symbol);
            return vti_fn_lookup(buf);
        }
    if (strcmp(symbol, "cuGetProcAddress") == 0)
        return version >= 12000 ? F_cuGetProcAddress_v2 : F_cuGetProcAddress;
    for (size_t i = 0; i < sizeof ptsz_names / sizeof ptsz_names[0]; i++)
        if (strcmp(symbol, ptsz_names[i]) == 0 && ptds) {
            snprintf(buf, sizeof buf, "%s_ptsz", symbol);
            return vti_fn_lookup(buf);
        }
    return vti_fn_lookup(symbol);
}

/* After the real cuGetProcAddress succeeded: a hooked name gets its hook. */
static void redirect_proc(const char *symbol, int version, uint64_t flags, void **pfn)
{
    int f;
    if (!symbol || !pfn || !*pfn || (f = proc_lookup(symbol, version, flags)) < 0)
        return;
    if (is_hook(*pfn))
        return;
    vti_real_remember((enum vti_fn)f, *pfn);
    *pfn = fn_hooks[f];
}

/* The driver's own entry-point table: hooked names come back as the hooks
 * (the real pointer is remembered for forwarding), others untouched. */
VTI_EXPORT CUresult CUDAAPI cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                                cuuint64_t flags,
                                                CUdriverProcAddressQueryResult *symbolStatus)
{
    CUresult (*real)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *) =
        vti_real(F_cuGetProcAddress_v2);
    CUresult rc = real ? real(symbol, pfn, cudaVersion, flags, symbolStatus) : NO_DRIVER;
    if (rc == CUDA_SUCCESS)
        redirect_proc(symbol, cudaVersion, flags, pfn);
    if (rc == CUDA_SUCCESS)
        vti_watch_export_table(symbol, pfn, __builtin_return_address(0));
    return rc;
}

VTI_EXPORT CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                             cuuint64_t flags)
{
    CUresult (*real)(const char *, void **, int, cuuint64_t) = vti_real(F_cuGetProcAddress);
    CUresult rc = real ? real(symbol, pfn, cudaVersion, flags) : NO_DRIVER;
    if (rc == CUDA_SUCCESS)
        redirect_proc(symbol, cudaVersion, flags, pfn);
    if (rc == CUDA_SUCCESS)
        vti_watch_export_table(symbol, pfn, __builtin_return_address(0));
    return rc;
}

VTI_CHECK_HOOKS(VTI_PROC_HOOKS)
