/* The thread pool of threadpool.h.  Fork-join with one condition variable each way: the caller
 * publishes a range cut into parts and bumps `generation`; worker k runs part k; the last to
 * finish wakes the caller, which ran part 0 meanwhile. */
#include "threadpool.h"

#include <stdint.h>

#if !defined(TG_POOL_NO_THREADS) && defined(_WIN32)
#define TG_POOL_WIN32 1
#elif !defined(TG_POOL_NO_THREADS) && (defined(__unix__) || defined(__APPLE__))
#include <unistd.h>
#if defined(_POSIX_THREADS) && _POSIX_THREADS > 0
#define TG_POOL_PTHREADS 1
#endif
#endif

#if defined(TG_POOL_WIN32)
#include <windows.h>
#include <process.h>
typedef CRITICAL_SECTION tg_lock;
typedef CONDITION_VARIABLE tg_cond;
static tg_lock state_lock, job_lock;
static tg_cond wake_cond, done_cond;
static INIT_ONCE init_once = INIT_ONCE_STATIC_INIT;
static BOOL CALLBACK init_sync(PINIT_ONCE once, PVOID param, PVOID *ctx)
{
    (void)once; (void)param; (void)ctx;
    InitializeCriticalSection(&state_lock);
    InitializeCriticalSection(&job_lock);
    InitializeConditionVariable(&wake_cond);
    InitializeConditionVariable(&done_cond);
    return TRUE;
}
static void sync_init(void) { InitOnceExecuteOnce(&init_once, init_sync, NULL, NULL); }
static void lock(tg_lock *l) { EnterCriticalSection(l); }
static void unlock(tg_lock *l) { LeaveCriticalSection(l); }
static int trylock(tg_lock *l) { return TryEnterCriticalSection(l) != 0; }
static void wait_on(tg_cond *c, tg_lock *l) { SleepConditionVariableCS(c, l, INFINITE); }
static void wake_all(tg_cond *c) { WakeAllConditionVariable(c); }
static void wake_one(tg_cond *c) { WakeConditionVariable(c); }
#elif defined(TG_POOL_PTHREADS)
#include <pthread.h>
typedef pthread_mutex_t tg_lock;
typedef pthread_cond_t tg_cond;
static tg_lock state_lock = PTHREAD_MUTEX_INITIALIZER, job_lock = PTHREAD_MUTEX_INITIALIZER;
static tg_cond wake_cond = PTHREAD_COND_INITIALIZER, done_cond = PTHREAD_COND_INITIALIZER;
static void sync_init(void) {}
static void lock(tg_lock *l) { pthread_mutex_lock(l); }
static void unlock(tg_lock *l) { pthread_mutex_unlock(l); }
static int trylock(tg_lock *l) { return pthread_mutex_trylock(l) == 0; }
static void wait_on(tg_cond *c, tg_lock *l) { pthread_cond_wait(c, l); }
static void wake_all(tg_cond *c) { pthread_cond_broadcast(c); }
static void wake_one(tg_cond *c) { pthread_cond_signal(c); }
#endif

/* Read without a lock by tg_parallel_for's fast path: a stale value only changes how a range is
 * split, never its result. */
static volatile int num_threads = 1;

int tg_get_num_threads(void) { return num_threads; }

void tg_set_num_threads(int n)
{
    num_threads = n < 1 ? 1 : n > TG_POOL_MAX_THREADS ? TG_POOL_MAX_THREADS : n;
}

#if defined(TG_POOL_WIN32) || defined(TG_POOL_PTHREADS)

int tg_pool_has_threads(void) { return 1; }

/* The pool's state, under state_lock.  job_lock is held by the one caller whose range runs. */
static int n_workers = 0;              /* workers started (worker k in 1..n_workers) */
static unsigned long generation = 0;   /* bumped for each range */
static int pending = 0;                /* parts 1.. not yet finished */
static int n_parts = 0;
static ptrdiff_t bounds[TG_POOL_MAX_THREADS + 1];
static tg_range_fn job_fn;
static void *job_ctx;
/* The generation each worker was started in: it waits for the next one (it may first take the
 * lock after the range it was started for has been published). */
static unsigned long start_generation[TG_POOL_MAX_THREADS + 1];

static void worker_loop(int k)
{
    unsigned long seen;
    lock(&state_lock);
    seen = start_generation[k];
    for (;;) {
        while (generation == seen) wait_on(&wake_cond, &state_lock);
        seen = generation;
        if (k >= n_parts) continue;                /* more workers than parts this time */
        tg_range_fn fn = job_fn;
        void *ctx = job_ctx;
        ptrdiff_t b = bounds[k], e = bounds[k + 1];
        unlock(&state_lock);
        fn(ctx, b, e);
        lock(&state_lock);
        if (--pending == 0) wake_one(&done_cond);
    }
}

#if defined(TG_POOL_WIN32)
static unsigned __stdcall worker_main(void *arg)
{
    worker_loop((int)(intptr_t)arg);
    return 0;
}
static int start_worker(int k)
{
    uintptr_t h = _beginthreadex(NULL, 0, worker_main, (void *)(intptr_t)k, 0, NULL);
    if (h == 0) return -1;
    CloseHandle((HANDLE)h);
    return 0;
}
static void register_fork_handler(void) {}
#else
static void *worker_main(void *arg)
{
    worker_loop((int)(intptr_t)arg);
    return NULL;
}
static int start_worker(int k)
{
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&t, &attr, worker_main, (void *)(intptr_t)k);
    pthread_attr_destroy(&attr);
    return rc == 0 ? 0 : -1;
}
/* A forked child has only the thread that forked: it starts without workers and with fresh
 * locks (a lock held by a parent's thread at fork time would stay held forever). */
static void after_fork_child(void)
{
    pthread_mutex_init(&state_lock, NULL);
    pthread_mutex_init(&job_lock, NULL);
    pthread_cond_init(&wake_cond, NULL);
    pthread_cond_init(&done_cond, NULL);
    n_workers = 0;
    pending = 0;
    n_parts = 0;
}
static void register_fork_handler(void)
{
    static int registered = 0;
    if (!registered) {
        registered = 1;
        pthread_atfork(NULL, NULL, after_fork_child);
    }
}
#endif

/* Start workers up to `want` (under state_lock); returns how many there are. */
static int ensure_workers(int want)
{
    register_fork_handler();
    while (n_workers < want) {
        start_generation[n_workers + 1] = generation;
        if (start_worker(n_workers + 1) != 0) break;
        n_workers++;
    }
    return n_workers;
}

void tg_parallel_for(ptrdiff_t n, ptrdiff_t min_parallel, ptrdiff_t align, tg_range_fn fn,
                     void *ctx)
{
    int threads = num_threads;
    if (n <= 0) return;
    if (threads <= 1 || n < min_parallel) { fn(ctx, 0, n); return; }
    sync_init();
    if (!trylock(&job_lock)) { fn(ctx, 0, n); return; }   /* busy: nested or concurrent call */
    ptrdiff_t min_part = min_parallel / 2 > 1 ? min_parallel / 2 : 1;
    if ((ptrdiff_t)threads > n / min_part) threads = (int)(n / min_part);
    if (align < 1) align = 1;
    lock(&state_lock);
    int have = ensure_workers(threads - 1);
    if (have + 1 < threads) threads = have + 1;
    if (threads <= 1) {
        unlock(&state_lock);
        unlock(&job_lock);
        fn(ctx, 0, n);
        return;
    }
    /* Equal parts, each boundary rounded down to a multiple of align. */
    bounds[0] = 0;
    for (int k = 1; k < threads; k++) {
        ptrdiff_t b = (ptrdiff_t)((double)n * k / threads);
        b -= b % align;
        bounds[k] = b < bounds[k - 1] ? bounds[k - 1] : b;
    }
    bounds[threads] = n;
    n_parts = threads;
    pending = threads - 1;
    job_fn = fn;
    job_ctx = ctx;
    generation++;
    wake_all(&wake_cond);
    unlock(&state_lock);
    fn(ctx, bounds[0], bounds[1]);
    lock(&state_lock);
    while (pending > 0) wait_on(&done_cond, &state_lock);
    n_parts = 0;
    unlock(&state_lock);
    unlock(&job_lock);
}

#else  /* no thread library: everything in the calling thread */

int tg_pool_has_threads(void) { return 0; }

void tg_parallel_for(ptrdiff_t n, ptrdiff_t min_parallel, ptrdiff_t align, tg_range_fn fn,
                     void *ctx)
{
    (void)min_parallel;
    (void)align;
    if (n > 0) fn(ctx, 0, n);
}

#endif
