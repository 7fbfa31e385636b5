/*
 * A text placed so that its terminating NUL is the last readable byte before a page that cannot
 * be read: a read of even one byte past the NUL faults in every build, not only under a
 * sanitizer (the parser's word-at-a-time paths may read up to the NUL and no further).
 */
#ifndef SR_TEST_GUARD_PAGE_H
#define SR_TEST_GUARD_PAGE_H

#include <check.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define GUARD_ROOM ((size_t)64 << 10)

/*
 * Copies t[0, n) and a NUL so that the NUL is the last byte before the guard page, and returns
 * the copy (valid until the next call in this process; n < GUARD_ROOM). The mapping is made on
 * the first call and kept: each test runs in its own process.
 */
static inline char *guard_copy(const char *t, size_t n)
{
    static unsigned char *readable;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (!readable) {
        unsigned char *m = mmap(NULL, GUARD_ROOM + page, PROT_READ | PROT_WRITE,
                                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        ck_assert_msg(m != MAP_FAILED, "guard_copy: cannot map %zu bytes", GUARD_ROOM + page);
        ck_assert_int_eq(mprotect(m + GUARD_ROOM, page, PROT_NONE), 0);
        readable = m;
    }
    ck_assert_msg(n < GUARD_ROOM, "guard_copy: a %zu-byte text does not fit", n);
    char *c = (char *)readable + GUARD_ROOM - (n + 1);
    memcpy(c, t, n);
    c[n] = '\0';
    return c;
}

#endif /* SR_TEST_GUARD_PAGE_H */
