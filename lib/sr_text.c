/* Quoting untrusted bytes for messages, hex digits and UTF-8 checks (sr_text.h). */
#include "sr_text.h"

#include <stdint.h>
#include <string.h>

/* The escape of byte c into e (at most 4 bytes); returns its length. */
static size_t quote_one(unsigned char c, char *e)
{
    static const char hex[] = "0123456789abcdef";
    if (c == '\\' || c == '\n' || c == '\r' || c == '\t') {
        e[0] = '\\';
        e[1] = c == '\n' ? 'n' : c == '\r' ? 'r' : c == '\t' ? 't' : '\\';
        return 2;
    }
    if (c >= 0x20 && c < 0x7f) {
        e[0] = (char)c;
        return 1;
    }
    e[0] = '\\';
    e[1] = 'x';
    e[2] = hex[c >> 4];
    e[3] = hex[c & 15];
    return 4;
}

const char *sr_quote_bytes(char *dst, size_t cap, const void *s, size_t n)
{
    const unsigned char *p = s;
    char e[4];
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += quote_one(p[i], e);
    /* All of it when it fits, else whole escapes up to cap - 4 and "...". */
    size_t room = total < cap ? total : cap >= 4 ? cap - 4 : 0;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k = quote_one(p[i], e);
        if (o + k > room)
            break;
        memcpy(dst + o, e, k);
        o += k;
    }
    if (total >= cap && cap >= 4) {
        memcpy(dst + o, "...", 3);
        o += 3;
    }
    if (cap)
        dst[o] = '\0';
    return dst;
}

const char *sr_quote_str(char *dst, size_t cap, const char *s)
{
    return sr_quote_bytes(dst, cap, s ? s : "", s ? strlen(s) : 0);
}

int sr_hex_digit(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

size_t sr_utf8_seq(const unsigned char *p, size_t n)
{
    unsigned char c = p[0];
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        lo = c == 0xE0 ? 0xA0 : 0x80;
        hi = c == 0xED ? 0x9F : 0xBF;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        lo = c == 0xF0 ? 0x90 : 0x80;
        hi = c == 0xF4 ? 0x8F : 0xBF;
    } else
        return 0;
    if (n < len || p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (p[i] < 0x80 || p[i] > 0xBF)
            return 0;
    return len;
}

size_t sr_utf8_check(const void *s, size_t n)
{
    const unsigned char *p = s;
    size_t i = 0;
    while (i < n) {
        /* ASCII runs, eight bytes at a time. */
        uint64_t w;
        while (i + 8 <= n && (memcpy(&w, p + i, 8), (w & 0x8080808080808080ull) == 0))
            i += 8;
        while (i < n && p[i] < 0x80)
            i++;
        if (i == n)
            break;
        size_t k = sr_utf8_seq(p + i, n - i);
        if (!k)
            return i;
        i += k;
    }
    return n;
}
