/* thread_pool: one worker allocates, another frees what it allocated, through
 * a queue; the freeing worker keeps the last 3 (leaked at exit). */
#include <cuda_runtime_api.h>
#include <pthread.h>

#include "corpus.h"

#define N 64
static void *queue[N];
static int produced, consumed;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t more = PTHREAD_COND_INITIALIZER;

static void *allocator(void *arg)
{
    (void)arg;
    for (int i = 0; i < N; i++) {
        void *p = NULL;
        EXPECT(cudaMalloc(&p, (size_t)(i + 1) * 4096), cudaSuccess);
        pthread_mutex_lock(&lock);
        queue[produced++] = p;
        pthread_cond_signal(&more);
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

static void *freer(void *arg)
{
    (void)arg;
    while (consumed < N - 3) {
        pthread_mutex_lock(&lock);
        while (consumed == produced)
            pthread_cond_wait(&more, &lock);
        void *p = queue[consumed++];
        pthread_mutex_unlock(&lock);
        EXPECT(cudaFree(p), cudaSuccess);
    }
    return NULL;
}

int main(void)
{
    pthread_t a, f;
    REQUIRE(pthread_create(&a, NULL, allocator, NULL) == 0);
    REQUIRE(pthread_create(&f, NULL, freer, NULL) == 0);
    REQUIRE(pthread_join(a, NULL) == 0 && pthread_join(f, NULL) == 0);
    REQUIRE(consumed == N - 3);
    return 0;
}
