// Counts heap allocations from outside a process: LD_PRELOAD=alloc-count.so COMMAND... writes the number
// of allocation calls (malloc, calloc, realloc, posix_memalign, aligned_alloc, memalign, valloc) the
// process made to the file named by ALLOC_COUNT_FILE when it exits. glibc's __libc_* entry points do
// the work, so counting never allocates and never recurses. Used by Benchmarks/allocation-guard.sh.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static atomic_ulong allocations;

static inline void counted(void) { atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed); }

void *malloc(size_t size) { counted(); return __libc_malloc(size); }
void *calloc(size_t n, size_t size) { counted(); return __libc_calloc(n, size); }
void *realloc(void *p, size_t size) { counted(); return __libc_realloc(p, size); }
void *memalign(size_t alignment, size_t size) { counted(); return __libc_memalign(alignment, size); }
void *aligned_alloc(size_t alignment, size_t size) { counted(); return __libc_memalign(alignment, size); }
void *valloc(size_t size) { counted(); return __libc_memalign((size_t)sysconf(_SC_PAGESIZE), size); }
int posix_memalign(void **out, size_t alignment, size_t size) {
    if (alignment < sizeof(void *) || (alignment & (alignment - 1)) != 0) return EINVAL;
    counted();
    void *p = __libc_memalign(alignment, size);
    if (p == NULL && size != 0) return ENOMEM;
    *out = p;
    return 0;
}

__attribute__((destructor)) static void report(void) {
    const char *path = getenv("ALLOC_COUNT_FILE");
    if (path == NULL) return;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return;
    char text[32];
    int n = snprintf(text, sizeof text, "%lu\n", atomic_load(&allocations));
    if (n > 0) (void)!write(fd, text, (size_t)n);
    close(fd);
}
