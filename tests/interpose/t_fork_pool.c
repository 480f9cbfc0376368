/* t_fork_pool: fork while another thread creates and destroys
 * stream-ordered memory pools, so that the preload's pool table lock
 * (interpose/poolstat.c, held across the real cuMemPoolDestroy) is often
 * held at the fork. Each child calls cuMemPoolDestroy, whose hook takes that
 * lock before it calls the driver (which fails in a child of a process that
 * initialised CUDA: sim/README.md "Fork"): a child that inherited the lock
 * held would wait for it for ever.
 *
 * fork_pool.sh runs it with a trace that can be written and with one that
 * cannot (the child's session then stops, and the hook still takes the
 * lock): before the table was made anew in the child (vti_pool_fork_reset),
 * the second hung 2 of 40 children on this project's VM.
 *
 * Exit status 0 when every child exited by itself within CHILD_WAIT_MS; 1
 * when one hung (it is killed) or a CUDA call of the parent failed. */
#include <cuda.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FORKS 60
#define CHILD_WAIT_MS 3000

static _Atomic bool stop;
static CUcontext ctx;

static const CUmemPoolProps props = {
    .allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
    .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0},
};

static void *churn(void *arg)
{
    (void)arg;
    if (cuCtxSetCurrent(ctx) != CUDA_SUCCESS)
        return (void *)1;
    while (!atomic_load(&stop)) {
        CUmemoryPool pool;
        if (cuMemPoolCreate(&pool, &props) != CUDA_SUCCESS ||
            cuMemPoolDestroy(pool) != CUDA_SUCCESS)
            return (void *)1;
    }
    return NULL;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

/* true when pid exited by itself within CHILD_WAIT_MS; else it is killed. */
static bool child_exits(pid_t pid)
{
    int status;
    for (long waited = 0; waited < CHILD_WAIT_MS; waited++) {
        if (waitpid(pid, &status, WNOHANG) == pid)
            return true;
        sleep_ms(1);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return false;
}

int main(void)
{
    CUdevice dev;
    CUmemoryPool stale;
    pthread_t worker;
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
        cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS ||
        cuCtxSetCurrent(ctx) != CUDA_SUCCESS || cuMemPoolCreate(&stale, &props) != CUDA_SUCCESS) {
        fprintf(stderr, "t_fork_pool: CUDA set-up failed\n");
        return 1;
    }
    if (pthread_create(&worker, NULL, churn, NULL) != 0)
        return 1;
    int hung = 0;
    for (int i = 0; i < FORKS; i++) {
        sleep_ms(1);
        pid_t pid = fork();
        if (pid == 0) {
            cuMemPoolDestroy(stale); /* fails: CUDA is not usable in this child */
            _exit(0);
        }
        if (pid < 0 || !child_exits(pid))
            hung++;
    }
    atomic_store(&stop, true);
    void *failed;
    pthread_join(worker, &failed);
    printf("t_fork_pool: %d of %d children hung\n", hung, FORKS);
    if (failed)
        fprintf(stderr, "t_fork_pool: the pool thread's CUDA calls failed\n");
    return hung || failed ? 1 : 0;
}
