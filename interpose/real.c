/* real.c: finding the real CUDA functions behind the hooks (the redirection
 * of dlsym / cuGetProcAddress to the hooks is redirect.c's). Prior art:
 * HAMi-core src/libvgpu.c (real dlsym via dlvsym). Knows the hooks by name
 * only; a pointer into this library is never taken for a real function. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "vti_internal.h"

#define NAME(n) #n,
static const char *const fn_names[] = {VTI_HOOKS(NAME)};
#undef NAME
_Static_assert(sizeof fn_names / sizeof fn_names[0] == F_COUNT_, "one name per enum vti_fn");

_Atomic(void *) vti_fn_real[F_COUNT_];

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

/* fn_names by a hash of the name (open addressing; slot: enum vti_fn + 1, 0
 * empty), filled once: the loader's and the runtime's lookups (every dlsym,
 * two cuGetProcAddress per driver entry point the runtime fetches) cost one
 * hash and one compare instead of a compare with every hook's name. */
#define FN_SLOTS 256
_Static_assert(FN_SLOTS >= 2 * F_COUNT_ && (FN_SLOTS & (FN_SLOTS - 1)) == 0, "a sparse table");
static short fn_slot[FN_SLOTS];
static pthread_once_t fn_once = PTHREAD_ONCE_INIT;

static unsigned fn_hash(const char *s)
{
    unsigned h = 2166136261u; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h & (FN_SLOTS - 1);
}

static void fn_index(void)
{
    for (int i = 0; i < F_COUNT_; i++) {
        unsigned j = fn_hash(fn_names[i]);
        while (fn_slot[j])
            j = (j + 1) & (FN_SLOTS - 1);
        fn_slot[j] = (short)(i + 1);
    }
}

int vti_fn_lookup(const char *name)
{
    if (!name || name[0] != 'c' || name[1] != 'u')
        return -1;
    pthread_once(&fn_once, fn_index);
    for (unsigned j = fn_hash(name); fn_slot[j]; j = (j + 1) & (FN_SLOTS - 1))
        if (strcmp(name, fn_names[fn_slot[j] - 1]) == 0)
            return fn_slot[j] - 1;
    return -1;
}

static char self_path[4096];
static void *self_base;

static void self_init(void)
{
    Dl_info info;
    if (dladdr((void *)self_init, &info) && info.dli_fname) {
        snprintf(self_path, sizeof self_path, "%s", info.dli_fname);
        self_base = info.dli_fbase;
    }
}

static pthread_once_t self_once = PTHREAD_ONCE_INIT;

const char *vti_self_path(void)
{
    pthread_once(&self_once, self_init);
    return self_path[0] ? self_path : NULL;
}

/* Is p code of libvramtrace.so (a hook), never a real function? */
static bool is_self(void *p)
{
    Dl_info info;
    pthread_once(&self_once, self_init);
    return p && dladdr(p, &info) && info.dli_fbase == self_base;
}

void vti_real_remember(enum vti_fn f, void *p)
{
    void *expected = NULL;
    if (p)
        atomic_compare_exchange_strong(&vti_fn_real[f], &expected, p);
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

void *vti_real_find(enum vti_fn f)
{
    void *p = vti_real_dlsym(RTLD_NEXT, fn_names[f]);
    if (!p) {
        void *h = f < F_RUNTIME_END_ ? runtime_handle() : driver_handle();
        p = h ? vti_real_dlsym(h, fn_names[f]) : NULL;
    }
    if (!p || is_self(p))
        return NULL;
    vti_real_remember(f, p);
    return atomic_load(&vti_fn_real[f]);
}

typedef int (*getproc_v2_fn)(const char *, void **, int, uint64_t, int *);

bool vti_fn_per_thread(enum vti_fn f)
{
    size_t n = strlen(fn_names[f]);
    return n > 5 && strcmp(fn_names[f] + n - 5, "_ptsz") == 0;
}

const char *vti_fn_name(enum vti_fn f)
{
    return (unsigned)f < F_COUNT_ ? fn_names[f] : "";
}

void *vti_real_driver(const char *base, int version, const char *exported)
{
    getproc_v2_fn gp = (getproc_v2_fn)atomic_load(&vti_fn_real[F_cuGetProcAddress_v2]);
    void *p = NULL;
    void *h;
    if (gp) {
        int status = 0;
        if (gp(base, &p, version, 0, &status) != 0)
            p = NULL;
    }
    if (!p && (h = driver_handle()))
        p = vti_real_dlsym(h, exported);
    if (!p)
        p = vti_real_dlsym(RTLD_NEXT, exported);
    return is_self(p) ? NULL : p;
}

void *vti_real_runtime(const char *name)
{
    void *p = vti_real_dlsym(RTLD_NEXT, name);
    void *h;
    if (!p && (h = runtime_handle()))
        p = vti_real_dlsym(h, name);
    return is_self(p) ? NULL : p;
}

/* Resolve glibc's dlsym for the stub; returns it (NULL if none). */
void *vti_dlsym_init(void);
void *vti_dlsym_init(void)
{
    vti_real_dlsym(NULL, "");
    return (void *)atomic_load(&vti_real_dlsym_p);
}
