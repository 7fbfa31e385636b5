/* sr_jdom's arena growth, error reports and strings (sr_jdom_priv.h; the parser is sr_jdom.c). */
#include <stdlib.h>
#include <string.h>

#include "sr_jdom_priv.h"
#include "sr_text.h"

/* ---- the arena ---- */

/* Moves to a chunk with `size` free bytes: the next one kept from earlier parses, or a new one. */
int sr_jdom_i_arena_grow(jdom_parser *p, size_t size)
{
    sr_jdom *j = p->j;
    chunk *c = j->cur ? j->cur->next : j->head;
    if (j->cur)
        j->behind += j->cur->size;
    while (c && c->size < size) {
        j->behind += c->size;
        c = c->next;
    }
    if (!c) {
        size_t room = j->max - j->capacity;
        size_t want = j->capacity > CHUNK_MIN ? j->capacity : CHUNK_MIN;
        want = want < size ? size : want;
        want = want > room ? room : want;
        if (want < size)
            return p->rc = sr_err_set(p->err, SR_E_LIMIT,
                                      "json: the parsed tree needs more than the arena's "
                                      "maximum of %zu bytes",
                                      j->max);
        c = want <= SIZE_MAX - sizeof(chunk) ? malloc(sizeof(chunk) + want) : NULL;
        if (!c)
            return p->rc = sr_err_set(p->err, SR_E_NOMEM,
                                      "json: cannot allocate an arena chunk of %zu bytes", want);
        c->next = NULL;
        c->size = want;
        if (j->tail)
            j->tail->next = c;
        else
            j->head = c;
        j->tail = c;
        j->capacity += want;
        j->nchunks++;
    }
    j->cur = c;
    j->pos = (uintptr_t)CHUNK_DATA(c);
    j->lim = j->pos + c->size;
    return 0;
}

/* ---- lexical pieces ---- */

int sr_jdom_i_fail_at(jdom_parser *p, int code, const unsigned char *at, const char *what)
{
    size_t off = (size_t)(at - p->t);
    return p->rc = sr_err_set_at(p->err, code, (int64_t)off, "json: %s at byte %zu", what, off);
}

/* SR_E_JSON_UTF8 under the reference rules, else a syntax error (cJSON's refusals). */
static int bad_unicode(jdom_parser *p, const unsigned char *at, const char *what)
{
    return sr_jdom_i_fail_at(
        p, (p->j->flags & SR_JDOM_REFERENCE) ? SR_E_JSON_UTF8 : SR_E_JSON_SYNTAX, at, what);
}

static unsigned hex4(const unsigned char *s)
{
    return (unsigned)(sr_hex_digit(s[0]) << 12 | sr_hex_digit(s[1]) << 8 | sr_hex_digit(s[2]) << 4 |
                      sr_hex_digit(s[3]));
}

/*
 * Finds the closing quote of a string that has escapes, checking every escape and byte on the
 * way. The NUL after the text stops every loop, so no read passes it.
 */
static int string_end(jdom_parser *p, const unsigned char *s, const unsigned char **q)
{
    for (s++;;) {
        unsigned char c = *s;
        if (c == '"') {
            *q = s;
            return 0;
        }
        if (c == '\\') {
            unsigned char e = s[1];
            if (e == 'u') {
                for (int i = 2; i < 6; i++)
                    if (sr_hex_digit(s[i]) < 0)
                        return sr_jdom_i_syntax(p, s + i, "a \\u escape needs four hex digits");
                s += 6;
            } else if (e != '\0' && strchr("\"\\/bfnrt", e)) {
                s += 2;
            } else {
                return sr_jdom_i_syntax(p, s + 1, "invalid escape in a string");
            }
        } else if (c < 0x20) {
            return sr_jdom_i_syntax(p, s,
                                    s == p->end ? "the text ends inside a string"
                                                : "a raw control character in a string");
        } else {
            s++;
        }
    }
}

/*
 * Writes the UTF-8 of the \u escape at *ps (two for a surrogate pair). Like cJSON, a lone low
 * surrogate or a high one not followed by a \u escape of a low one is an error; \u0000 gives a
 * NUL byte. string_end has checked the hex digits of every escape already.
 */
static int put_utf16(jdom_parser *p, const unsigned char **ps, unsigned char **po)
{
    const unsigned char *s = *ps;
    unsigned long cp = hex4(s + 2);
    if (cp >= 0xDC00 && cp <= 0xDFFF)
        return bad_unicode(p, s, "a \\u escape of a lone low surrogate");
    *ps = s + 6;
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        if (s[6] != '\\' || s[7] != 'u')
            return bad_unicode(p, s, "a high surrogate \\u escape without a low one after it");
        unsigned lo = hex4(s + 8);
        if (lo < 0xDC00 || lo > 0xDFFF)
            return bad_unicode(p, s + 6, "a high surrogate \\u escape followed by no low one");
        cp = 0x10000 + (((cp & 0x3FF) << 10) | (lo & 0x3FF));
        *ps = s + 12;
    }
    unsigned char *o = *po;
    p->nul |= cp == 0;
    if (cp < 0x80) {
        *o++ = (unsigned char)cp;
    } else if (cp < 0x800) {
        *o++ = (unsigned char)(0xC0 | cp >> 6);
        *o++ = (unsigned char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        *o++ = (unsigned char)(0xE0 | cp >> 12);
        *o++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        *o++ = (unsigned char)(0x80 | (cp & 0x3F));
    } else {
        *o++ = (unsigned char)(0xF0 | cp >> 18);
        *o++ = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
        *o++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        *o++ = (unsigned char)(0x80 | (cp & 0x3F));
    }
    *po = o;
    return 0;
}

/* Unescapes s[0 .. q) into o, which has room for q - s + 1 bytes (no escape grows); *end is
 * where the NUL after the unescaped bytes went. */
static int unescape(jdom_parser *p, const unsigned char *s, const unsigned char *q,
                    unsigned char *o, unsigned char **end)
{
    static const char from[] = "bfnrt", to[] = "\b\f\n\r\t";
    while (s < q) {
        if (*s != '\\') {
            *o++ = *s++;
            continue;
        }
        if (s[1] == 'u') {
            int rc = put_utf16(p, &s, &o);
            if (rc)
                return rc;
            continue;
        }
        const char *k = strchr(from, s[1]);
        *o++ = k ? (unsigned char)to[k - from] : s[1];
        s += 2;
    }
    *o = '\0';
    *end = o;
    return 0;
}

int sr_jdom_i_parse_string_general(jdom_parser *p, const unsigned char **ps, char **out,
                                   size_t *outlen)
{
    const unsigned char *s = *ps + 1, *q = s;
    unsigned hi = 0;
    /* Keys and short values end within a few bytes: byte by byte first. Longer runs go eight
     * bytes at a time while none is '"', '\\' or a control byte (bytes >= 0x80 only count for
     * the UTF-8 check), then byte by byte again. The NUL after the text stops every loop. */
    for (int k = 0; k < 16 && *q >= 0x20 && *q != '"' && *q != '\\'; k++)
        hi |= *q++;
    if (q - s == 16) {
        uint64_t hw = 0;
        while ((size_t)(p->end - q) >= 8) {
            uint64_t w;
            memcpy(&w, q, 8);
            if (sr_jdom_i_stops(w))
                break;
            hw |= w;
            q += 8;
        }
        hi |= (hw & 0x8080808080808080ull) ? 0x80u : 0u;
    }
    while (*q >= 0x20 && *q != '"' && *q != '\\')
        hi |= *q++;
    int plain = *q == '"';
    p->esc = !plain;
    if (!plain && string_end(p, *ps, &q))
        return p->rc;
    size_t len = (size_t)(q - s);
    if ((p->j->flags & SR_JDOM_REFERENCE) && (!plain || (hi & 0x80))) {
        size_t bad = sr_utf8_check(s, len);
        if (bad < len)
            return sr_jdom_i_fail_at(p, SR_E_JSON_UTF8, s + bad,
                                     "a string that is not valid UTF-8");
    }
    unsigned char *dst = take(p, len + 1, 1), *end = NULL;
    if (!dst)
        return p->rc;
    if (plain) {
        memcpy(dst, s, len);
        dst[len] = '\0';
        end = dst + len;
    } else if (unescape(p, s, q, dst, &end)) {
        return p->rc;
    }
    *out = (char *)dst;
    *outlen = (size_t)(end - dst);
    *ps = q + 1;
    return 0;
}
