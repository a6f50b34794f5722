/* tapegrad's thread pool for big elementwise kernels: a fixed set of worker threads that split
 * one index range at a time.
 *
 * Work is split statically: a range of n indices cut at multiples of `align` into as many parts
 * as there are threads, the calling thread running the first part.  Callers use it only for work
 * whose result for index i does not depend on how the range is cut (elementwise kernels), so
 * results are the same whatever the thread count.
 *
 * Platforms: POSIX threads, or Win32 threads on Windows; elsewhere (TG_POOL_NO_THREADS, or a C
 * library without either) everything runs in the calling thread.  The workers start on the first
 * parallel call and again after a fork() in the child.  One range runs at a time: a call made
 * while the pool is busy (from another thread, or from inside a worker) runs in its own thread. */
#ifndef TAPEGRAD_THREADPOOL_H
#define TAPEGRAD_THREADPOOL_H

#include <stddef.h>

/* fn(ctx, begin, end) handles indices [begin, end). */
typedef void (*tg_range_fn)(void *ctx, ptrdiff_t begin, ptrdiff_t end);

/* Run fn over [0, n): split over the pool when n >= min_parallel and more than one thread is
 * set, each part at least min_parallel / 2 long and starting at a multiple of `align`. */
void tg_parallel_for(ptrdiff_t n, ptrdiff_t min_parallel, ptrdiff_t align, tg_range_fn fn,
                     void *ctx);

/* Threads used by tg_parallel_for, the caller included (1: no splitting).  Set before or between
 * parallel calls; values are clamped to [1, TG_POOL_MAX_THREADS]. */
#define TG_POOL_MAX_THREADS 256
int tg_get_num_threads(void);
void tg_set_num_threads(int n);

/* 1 when this build can run threads (0: TG_POOL_NO_THREADS). */
int tg_pool_has_threads(void);

#endif
