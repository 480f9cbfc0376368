/* guard.c: what the program sees of the preload's signal handling: its
 * signal dispositions and alternate signal stack (messages: msg.c; the ends
 * of the process that skip exit handlers: lifecycle.c). See
 * interpose/README.md, "What the program sees".
 *
 * Signals: a fatal signal gets the preload's flush handler only where the
 * program's disposition is SIG_DFL, and sigaction()/signal() keep answering
 * with the program's own view (SIG_DFL) while it is there. The first time
 * the program sets a handler or SIG_IGN, it replaces the preload's (Python's
 * SIGINT handler, a crash reporter's SIGSEGV handler work as without it). */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "vti_internal.h"

/* ---- the real libc functions ------------------------------------------------- */

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
typedef sighandler_t (*signal_fn)(int, sighandler_t);
typedef int (*sigaltstack_fn)(const stack_t *, stack_t *);

static void *libc_next(const char *name)
{
    return vti_real_dlsym(RTLD_NEXT, name);
}

static int real_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    static _Atomic(sigaction_fn) fn;
    sigaction_fn f = atomic_load(&fn);
    if (!f && (f = (sigaction_fn)libc_next("sigaction")))
        atomic_store(&fn, f);
    if (!f) {
        errno = ENOSYS;
        return -1;
    }
    return f(sig, act, old);
}

/* ---- fatal signals ------------------------------------------------------------- */

static const int fatal_signals[] = {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL, SIGTERM, SIGINT};
#define N_FATAL (sizeof fatal_signals / sizeof fatal_signals[0])
/* held[i]: the preload's handler is installed and the program believes
 * prog[i] (a SIG_DFL action with its flags and mask). */
static _Atomic bool held[N_FATAL];
static struct sigaction prog[N_FATAL];

static int fatal_index(int sig)
{
    for (size_t i = 0; i < N_FATAL; i++)
        if (fatal_signals[i] == sig)
            return (int)i;
    return -1;
}

/* Flush the trace, then die of the signal as without the preload: SIG_DFL
 * back, the signal raised again (delivered when this handler returns). */
static void on_fatal_signal(int sig, siginfo_t *info, void *ctx)
{
    int i = fatal_index(sig), saved = errno;
    struct sigaction dfl;
    (void)info;
    (void)ctx;
    vti_signal_flush(sig);
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    if (i >= 0)
        atomic_store(&held[i], false);
    real_sigaction(sig, &dfl, NULL);
    raise(sig);
    errno = saved;
}

/* Install the flush handler on signal i, the program's view being view. */
static void hold(int i, const struct sigaction *view)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fatal_signal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    prog[i] = *view;
    atomic_store(&held[i], true);
    if (real_sigaction(fatal_signals[i], &sa, NULL) != 0)
        atomic_store(&held[i], false);
}

static bool is_default(const struct sigaction *a)
{
    return a->sa_handler == SIG_DFL; /* sa_sigaction shares the storage */
}

/* The program's sigaction(): its own view of the signals the preload holds. */
VTI_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    int i = fatal_index(sig);
    if (i < 0 || !atomic_load(&held[i])) {
        int rc = real_sigaction(sig, act, old);
        if (rc == 0 && i >= 0 && act && is_default(act) && vti_on())
            hold(i, act); /* back to SIG_DFL: flush on it again */
        return rc;
    }
    struct sigaction view = prog[i];
    if (act && !is_default(act)) {
        atomic_store(&held[i], false);
        if (real_sigaction(sig, act, NULL) != 0) {
            atomic_store(&held[i], true);
            return -1;
        }
    } else if (act) {
        prog[i] = *act;
    }
    if (old)
        *old = view;
    return 0;
}

/* signal() as glibc defines it (BSD semantics: SA_RESTART, the signal
 * blocked in its handler), through the sigaction() above for held signals. */
VTI_EXPORT sighandler_t signal(int sig, sighandler_t handler)
{
    static _Atomic(signal_fn) fn;
    struct sigaction sa, old;
    if (fatal_index(sig) < 0) {
        signal_fn f = atomic_load(&fn);
        if (!f && (f = (signal_fn)libc_next("signal")))
            atomic_store(&fn, f);
        return f ? f(sig, handler) : SIG_ERR;
    }
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, sig);
    return sigaction(sig, &sa, &old) < 0 ? SIG_ERR : old.sa_handler;
}

/* ---- the alternate signal stack ------------------------------------------------- */

#define ALT_STACK_BYTES (256u << 10) /* zstd and the flush need more than MINSIGSTKSZ */
static void *alt_stack;

/* The program's sigaltstack(): the preload's stack reads as none. */
VTI_EXPORT int sigaltstack(const stack_t *ss, stack_t *old)
{
    static _Atomic(sigaltstack_fn) fn;
    sigaltstack_fn f = atomic_load(&fn);
    if (!f && (f = (sigaltstack_fn)libc_next("sigaltstack")))
        atomic_store(&fn, f);
    if (!f) {
        errno = ENOSYS;
        return -1;
    }
    int rc = f(ss, old);
    if (rc == 0 && old && alt_stack && old->ss_sp == alt_stack)
        *old = (stack_t){.ss_flags = SS_DISABLE};
    return rc;
}

/* Give the starting thread an alternate stack (when it has none) so a stack
 * overflow still runs the flush handler. */
static void alt_stack_install(void)
{
    stack_t cur;
    if (syscall(SYS_sigaltstack, NULL, &cur) != 0 || !(cur.ss_flags & SS_DISABLE))
        return;
    void *p =
        mmap(NULL, ALT_STACK_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return;
    stack_t ss = {.ss_sp = p, .ss_size = ALT_STACK_BYTES};
    if (syscall(SYS_sigaltstack, &ss, NULL) != 0) {
        munmap(p, ALT_STACK_BYTES);
        return;
    }
    alt_stack = p;
}

void vti_guard_start(void)
{
    alt_stack_install();
    for (size_t i = 0; i < N_FATAL; i++) {
        struct sigaction cur;
        if (real_sigaction(fatal_signals[i], NULL, &cur) == 0 && is_default(&cur))
            hold((int)i, &cur);
    }
}
