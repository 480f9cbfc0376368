/* real.c: finding the real CUDA functions behind the hooks, and the dlsym /
 * cuGetProcAddress redirection that makes entry points fetched without the
 * PLT land in the hooks. Prior art: HAMi-core src/libvgpu.c (dlsym override,
 * real dlsym via dlvsym) and src/cuda/hook.c (cuGetProcAddress table). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "vti_internal.h"

/* The hooks are defined in hooks_*.c with their CUDA prototypes; here only
 * their addresses matter. */
#define DECLARE(n) extern void n(void);
VTI_HOOKS(DECLARE)
#undef DECLARE
#define NAME(n) #n,
static const char *const fn_names[] = {VTI_HOOKS(NAME)};
#undef NAME
#define ADDR(n) (void *)n,
static void *const fn_hooks[] = {VTI_HOOKS(ADDR)};
#undef ADDR
_Static_assert(sizeof fn_names / sizeof fn_names[0] == F_COUNT_, "one name per enum vti_fn");
_Static_assert(sizeof fn_hooks / sizeof fn_hooks[0] == F_COUNT_, "one hook per enum vti_fn");

static _Atomic(void *) fn_real[F_COUNT_];

typedef void *(*dlsym_fn)(void *, const char *);
_Atomic(dlsym_fn) vti_real_dlsym_p; /* read by the dlsym stub */

void *vti_real_dlsym(void *handle, const char *name)
{
    dlsym_fn f = atomic_load_explicit(&vti_real_dlsym_p, memory_order_acquire);
    if (!f) {
        f = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
        if (!f)
            f = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
        if (!f)
            return NULL;
        atomic_store_explicit(&vti_real_dlsym_p, f, memory_order_release);
    }
    return f(handle, name);
}

static int fn_lookup(const char *name)
{
    if (!name || name[0] != 'c' || name[1] != 'u')
        return -1;
    for (int i = 0; i < F_COUNT_; i++)
        if (strcmp(name, fn_names[i]) == 0)
            return i;
    return -1;
}

static bool is_hook(void *p)
{
    for (int i = 0; i < F_COUNT_; i++)
        if (fn_hooks[i] == p)
            return true;
    return false;
}

static void remember_real(int f, void *p)
{
    void *expected = NULL;
    if (p && !is_hook(p))
        atomic_compare_exchange_strong(&fn_real[f], &expected, p);
}

static void *driver_handle(void)
{
    static _Atomic(void *) handle;
    void *h = atomic_load(&handle);
    if (!h) {
        /* RTLD_NOLOAD: never load the driver ourselves; the reference we
         * keep makes cached pointers stay valid. */
        h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
        if (h)
            atomic_store(&handle, h);
    }
    return h;
}

static void *runtime_handle(void)
{
    static _Atomic(void *) handle;
    void *h = atomic_load(&handle);
    if (!h) {
        h = dlopen("libcudart.so.13", RTLD_LAZY | RTLD_NOLOAD);
        if (h)
            atomic_store(&handle, h);
    }
    return h;
}

void *vti_real(enum vti_fn f)
{
    void *p = atomic_load_explicit(&fn_real[f], memory_order_acquire);
    if (p)
        return p;
    p = vti_real_dlsym(RTLD_NEXT, fn_names[f]);
    if (!p) {
        void *h = f < F_RUNTIME_END_ ? runtime_handle() : driver_handle();
        p = h ? vti_real_dlsym(h, fn_names[f]) : NULL;
    }
    if (!p || is_hook(p))
        return NULL;
    remember_real(f, p);
    return atomic_load(&fn_real[f]);
}

typedef int (*getproc_v2_fn)(const char *, void **, int, uint64_t, int *);

void *vti_real_driver(const char *base, const char *exported)
{
    getproc_v2_fn gp = (getproc_v2_fn)atomic_load(&fn_real[F_cuGetProcAddress_v2]);
    void *p = NULL;
    void *h;
    if (gp) {
        int status = 0;
        if (gp(base, &p, 13000, 0, &status) != 0)
            p = NULL;
    }
    if (!p && (h = driver_handle()))
        p = vti_real_dlsym(h, exported);
    if (!p)
        p = vti_real_dlsym(RTLD_NEXT, exported);
    return is_hook(p) ? NULL : p;
}

void *vti_real_runtime(const char *name)
{
    void *p = vti_real_dlsym(RTLD_NEXT, name);
    void *h;
    if (!p && (h = runtime_handle()))
        p = vti_real_dlsym(h, name);
    return is_hook(p) ? NULL : p;
}

static void *redirect(const char *name, void *p)
{
    int f;
    if (!p || (f = fn_lookup(name)) < 0)
        return p;
    if (is_hook(p)) /* the lookup found us: only if a real one exists */
        return vti_real((enum vti_fn)f) ? p : NULL;
    remember_real(f, p);
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

/* Resolve glibc's dlsym for the stub; returns it (NULL if none). */
void *vti_dlsym_init(void);
void *vti_dlsym_init(void)
{
    vti_real_dlsym(NULL, "");
    return (void *)atomic_load(&vti_real_dlsym_p);
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
 * base names whose _v2 ABI starts at CUDA 3.2 (cuda.h's #defines) and whose
 * per-thread-stream variant is picked by flags. -1 when not hooked. */
static int proc_lookup(const char *symbol, int version, uint64_t flags)
{
    static const char *const v2_names[] = {"cuMemAlloc", "cuMemFree", "cuMemAllocPitch",
                                           "cuMemAllocHost", "cuMemGetInfo"};
    if (strcmp(symbol, "cuMemHostRegister") == 0) /* _v2 since CUDA 6.5 (cuda.h) */
        return version >= 6050 ? F_cuMemHostRegister_v2 : F_cuMemHostRegister;
    static const char *const ptsz_names[] = {"cuMemAllocAsync", "cuMemFreeAsync",
                                             "cuMemAllocFromPoolAsync"};
    char buf[64];
    for (size_t i = 0; i < sizeof v2_names / sizeof v2_names[0]; i++)
        if (strcmp(symbol, v2_names[i]) == 0) {
            if (version < 3020)
                return -1;
            snprintf(buf, sizeof buf, "%s_v2", symbol);
            return fn_lookup(buf);
        }
    if (strcmp(symbol, "cuGetProcAddress") == 0)
        return version >= 12000 ? F_cuGetProcAddress_v2 : F_cuGetProcAddress;
    for (size_t i = 0; i < sizeof ptsz_names / sizeof ptsz_names[0]; i++)
        if (strcmp(symbol, ptsz_names[i]) == 0 && (flags & 2u /* PER_THREAD_DEFAULT_STREAM */)) {
            snprintf(buf, sizeof buf, "%s_ptsz", symbol);
            return fn_lookup(buf);
        }
    return fn_lookup(symbol);
}

/* Called by the cuGetProcAddress hooks after the real call succeeded. */
void vti_redirect_proc(const char *symbol, int version, uint64_t flags, void **pfn);
void vti_redirect_proc(const char *symbol, int version, uint64_t flags, void **pfn)
{
    int f;
    if (!symbol || !pfn || !*pfn || (f = proc_lookup(symbol, version, flags)) < 0)
        return;
    if (is_hook(*pfn))
        return;
    remember_real(f, *pfn);
    *pfn = fn_hooks[f];
}

static char self_path[4096];

static void self_init(void)
{
    Dl_info info;
    if (dladdr((void *)self_init, &info) && info.dli_fname)
        snprintf(self_path, sizeof self_path, "%s", info.dli_fname);
}

const char *vti_self_path(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, self_init);
    return self_path[0] ? self_path : NULL;
}
