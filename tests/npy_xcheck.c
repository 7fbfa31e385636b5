/*
 * npy_xcheck: reads lines of hex-encoded `.npy` headers (as np.save wrote them) on stdin and for
 * each prints "<dtype> <ndim> <dims...> <hex of sr_npy_write_header for the same array>", or
 * "error <name>" when sr_npy_parse_header refuses it. tests/npy_numpy.py drives it with NumPy.
 */
#include <stdio.h>
#include <string.h>

#include "sr_npy.h"

static int hexval(int c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int main(void)
{
    static char line[4096];
    while (fgets(line, sizeof line, stdin)) {
        uint8_t buf[2048];
        size_t n = 0;
        for (const char *p = line; hexval(p[0]) >= 0 && hexval(p[1]) >= 0 && n < sizeof buf; p += 2)
            buf[n++] = (uint8_t)(hexval(p[0]) << 4 | hexval(p[1]));
        sr_npy_header h;
        sr_err err = SR_ERR_INIT;
        if (sr_npy_parse_header(&h, buf, n, 0, -1, &err) != 0) {
            printf("error %s\n", sr_code_name(err.code));
            continue;
        }
        char out[SR_NPY_HEADER_MAX];
        size_t w = 0;
        if (sr_npy_write_header(&w, out, sizeof out, h.dtype, h.shape, h.ndim, &err) != 0) {
            printf("error %s\n", sr_code_name(err.code));
            continue;
        }
        printf("%s %d", sr_dtype_name(h.dtype), h.ndim);
        for (int i = 0; i < h.ndim; i++)
            printf(" %lld", (long long)h.shape[i]);
        putchar(' ');
        for (size_t i = 0; i < w; i++)
            printf("%02x", (unsigned char)out[i]);
        putchar('\n');
    }
    return 0;
}
