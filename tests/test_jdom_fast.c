/*
 * unit.jdom_fast: sr_jdom's fast paths against its general ones: an object whose first member
 * repeats the last key ({"logprob":-0.25} in arrays of them, lib/sr_jdom.c one_member, and the
 * runs of such objects it makes in one go), on random texts made of such objects, with every kind
 * of value, whitespace where the fast path declines, keys it cannot take (escaped, too long), and
 * random damage; short strings and keys read by the word at every length and with every byte the
 * word path must hand back. Each text is parsed with the default and the reference rules, once as
 * is and once with the fast paths off (SR_JDOM_I_GENERAL): the code, offset and message of an
 * error, and on success the whole tree (types with sr_jdom's own bits, values, keys, links) and
 * the arena used must be identical.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sr_jdom.h"
#include "sr_jdom_priv.h"
#include "guard_page.h"
#include "sr_test.h"

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static int same_str(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* Every field a reader sees, sr_jdom's type bits included, and the links of every level. */
static int same_tree(const cJSON *a, const cJSON *b)
{
    if (a->type != b->type || a->valueint != b->valueint ||
        memcmp(&a->valuedouble, &b->valuedouble, sizeof(double)) != 0 ||
        !same_str(a->string, b->string) || !same_str(a->valuestring, b->valuestring))
        return 0;
    if ((a->child == NULL) != (b->child == NULL))
        return 0;
    if (a->child && (a->child->prev == NULL || b->child->prev == NULL))
        return 0;
    const cJSON *x = a->child, *y = b->child;
    for (; x && y; x = x->next, y = y->next) {
        if ((x->next == NULL) != (y->next == NULL) || (x != a->child && x->prev->next != x) ||
            (y != b->child && y->prev->next != y) || !same_tree(x, y))
            return 0;
    }
    if (x || y)
        return 0;
    /* The first child's prev is the last child, in both. */
    return !a->child || (a->child->prev->next == NULL && b->child->prev->next == NULL);
}

/* Keys: the common one, short ones, one of exactly 14 bytes (the longest the fast path takes),
 * one of 15, escaped ones (never taken), an empty one, UTF-8 and a byte that is not UTF-8. */
static const char *const k_keys[] = {
    "logprob",       "logprob", "logprob",           "lp",    "abcdefghijklmn", "abcdefghijklmno",
    "log\\u0070rob", "",        "\xc3\xa9t\xc3\xa9", "k\xff", "a\\u0000b",      "top_logprobs"};

static const char *const k_values[] = {"-0.28131287130868435",
                                       "-1.2345678901234567e-05",
                                       "0",
                                       "-0",
                                       "7",
                                       "123456789012345678901",
                                       "1e400",
                                       "-1e400",
                                       "1E-400",
                                       "0.5",
                                       "\"x\"",
                                       "\"a\\u0000b\"",
                                       "\"\\ud800\"",
                                       "\"\xff\"",
                                       "true",
                                       "false",
                                       "null",
                                       "{}",
                                       "[]",
                                       "{\"logprob\":1}",
                                       "[1,{\"logprob\":2}]",
                                       "-",
                                       "01",
                                       "1.",
                                       "tru",
                                       "\"open",
                                       "-.5",
                                       "1e",
                                       "+1"};

static void put(char *t, size_t *k, size_t cap, const char *s)
{
    size_t n = strlen(s);
    if (*k + n < cap) {
        memcpy(t + *k, s, n);
        *k += n;
    }
}

/* Whitespace at a place where the general path skips it, one time in `one_in`. */
static void maybe_ws(char *t, size_t *k, size_t cap, uint64_t *s, unsigned one_in)
{
    static const char *const ws[] = {" ", "\n", "\t", "\r", "  "};
    if (rnd(s) % one_in == 0)
        put(t, k, cap, ws[rnd(s) % 5]);
}

static size_t gen_text(char *t, size_t cap, uint64_t *s)
{
    size_t k = 0;
    const size_t nk = sizeof k_keys / sizeof k_keys[0], nv = sizeof k_values / sizeof k_values[0];
    /* The root's key is sometimes the objects' own: their key record then starts past it. */
    put(t, &k, cap, rnd(s) % 4 ? rnd(s) % 2 ? "{\"content\":[" : "{\"logprob\":[" : "[");
    int objs = 1 + (int)(rnd(s) % 12);
    for (int o = 0; o < objs; o++) {
        if (o)
            put(t, &k, cap, ",");
        maybe_ws(t, &k, cap, s, 16);
        put(t, &k, cap, "{");
        maybe_ws(t, &k, cap, s, 16);
        int members = rnd(s) % 5 ? 1 : 1 + (int)(rnd(s) % 3);
        for (int m = 0; m < members; m++) {
            if (m)
                put(t, &k, cap, ",");
            put(t, &k, cap, "\"");
            put(t, &k, cap, k_keys[rnd(s) % 3 ? 0 : rnd(s) % nk]);
            put(t, &k, cap, "\"");
            maybe_ws(t, &k, cap, s, 24);
            put(t, &k, cap, ":");
            maybe_ws(t, &k, cap, s, 16);
            put(t, &k, cap, k_values[rnd(s) % 2 ? 0 : rnd(s) % nv]);
            maybe_ws(t, &k, cap, s, 16);
        }
        put(t, &k, cap, "}");
    }
    put(t, &k, cap, "]");
    if (t[0] == '{')
        put(t, &k, cap, "}");
    /* Damage one text in four: a byte replaced, dropped or inserted, or the text cut. */
    static const char alphabet[] = "{}[]:,\"\\0123456789.eE+-tfnl logpr\x01\xff";
    for (int d = rnd(s) % 4 ? 0 : 1 + (int)(rnd(s) % 2); d > 0 && k > 1; d--) {
        size_t at = (size_t)(rnd(s) % k);
        char c = alphabet[rnd(s) % (sizeof alphabet - 1)];
        switch (rnd(s) % 4) {
        case 0:
            t[at] = c;
            break;
        case 1:
            memmove(t + at, t + at + 1, k - at - 1);
            k--;
            break;
        case 2:
            if (k + 1 < cap) {
                memmove(t + at + 1, t + at, k - at);
                t[at] = c;
                k++;
            }
            break;
        default:
            k = at;
        }
    }
    t[k] = '\0';
    return k;
}

/* Parses t with and without the fast path under `flags` and asserts identical outcomes. */
static void compare(sr_jdom *fast, sr_jdom *gen, const char *t, size_t n, unsigned flags)
{
    sr_jdom_set_flags(fast, flags);
    sr_jdom_set_flags(gen, flags | SR_JDOM_I_GENERAL);
    sr_err ef = SR_ERR_INIT, eg = SR_ERR_INIT;
    cJSON *rf = NULL, *rg = NULL;
    int cf = sr_jdom_parse(fast, t, n, &rf, &ef);
    int cg = sr_jdom_parse(gen, t, n, &rg, &eg);
    ck_assert_msg(
        cf == cg && ef.code == eg.code && ef.offset == eg.offset && strcmp(ef.msg, eg.msg) == 0,
        "flags %u, %s: fast %s@%lld '%s', general %s@%lld '%s'", flags, t, sr_code_name(cf),
        (long long)ef.offset, ef.msg, sr_code_name(cg), (long long)eg.offset, eg.msg);
    if (cf == 0) {
        ck_assert_msg(same_tree(rf, rg), "flags %u: trees differ for %s", flags, t);
        ck_assert_msg(sr_jdom_arena_used(fast) == sr_jdom_arena_used(gen),
                      "flags %u: arena %zu vs %zu for %s", flags, sr_jdom_arena_used(fast),
                      sr_jdom_arena_used(gen), t);
    }
}

START_TEST(fast_path_equals_general_path)
{
    sr_jdom *fast = NULL, *gen = NULL;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_jdom_new(&fast, 0, &e), e);
    ck_assert_sr_ok(sr_jdom_new(&gen, 0, &e), e);
    uint64_t s = 0x6a09e667f3bcc909u;
    static char t[8192];
    int ok = 0;
    for (int it = 0; it < 40000; it++) {
        size_t n = gen_text(t, sizeof t, &s);
        compare(fast, gen, t, n, 0);
        compare(fast, gen, t, n, SR_JDOM_REFERENCE);
        cJSON *root = NULL;
        ok += sr_jdom_parse(gen, t, n, &root, &e) == 0;
    }
    /* Both outcomes are well represented. */
    ck_assert_int_gt(ok, 4000);
    ck_assert_int_lt(ok, 36000);
    sr_jdom_free(fast);
    sr_jdom_free(gen);
}
END_TEST

/* The fast path's own edges: the key pattern's 16-byte read at the end of the text, a key of
 * 14 and 15 bytes, an object left open after its first member, and the arena limit reached at
 * the fast path's node. */
START_TEST(fast_path_edges)
{
    static const char *const texts[] = {
        "[{\"a\":1},{\"a\":2}]",
        "[{\"a\":1},{\"a\":2",
        "[{\"a\":1},{\"a\":",
        "[{\"a\":1},{\"a\"",
        "[{\"a\":1},{\"a\":2,\"b\":3},{\"a\":4 }]",
        "[{\"a\":1},{\"a\":2,\"a\":3}]",
        "[{\"abcdefghijklmn\":1},{\"abcdefghijklmn\":2},{\"abcdefghijklmn\":-3e5}]",
        "[{\"abcdefghijklmno\":1},{\"abcdefghijklmno\":2}]",
        "[{\"a\":1},{\"a\":{\"a\":2}},{\"a\":[3]},{\"a\": 4},{\"a\":\"x\"},{\"a\":null}]",
        "{\"a\":{\"a\":{\"a\":1}}}",
        "{\"a\":{\"a\":1,\"b\":2}}",
        "{\"a\":[{\"a\":1,\"b\":2}]}",
        /* Runs of such objects (one_member makes the next while they go on) and each way a run
         * ends: whitespace, another member, another key, a container value, an error. */
        "[{\"a\":1},{\"a\":2},{\"a\":3},{\"a\":4}]",
        "[{\"a\":1},{\"a\":2}, {\"a\":3},{\"a\":4}]",
        "[{\"a\":1},{\"a\":2},{ \"a\":3},{\"a\":4}]",
        "[{\"a\":1},{\"a\":2},{\"a\":3,\"b\":4},{\"a\":5},{\"a\":6}]",
        "[{\"a\":1},{\"a\":2},{\"a\":3,\"a\":4},{\"a\":5}]",
        "[{\"a\":1},{\"a\":2},{\"b\":3},{\"a\":4},{\"a\":5}]",
        "[{\"a\":1},{\"a\":2},{\"a\":{\"a\":3}},{\"a\":4},{\"a\":5}]",
        "[{\"a\":1},{\"a\":\"x\"},{\"a\":null},{\"a\":-},{\"a\":5}]",
        "[{\"a\":1},{\"a\":2},{\"a\":3},]",
        "[[{\"a\":1},{\"a\":2}],[{\"a\":3},{\"a\":4}]]",
        "{\"a\":{\"a\":1},\"b\":{\"a\":2},\"c\":{\"a\":3}}",
        "{\"a\":{\"a\":1},{\"a\":2}}",
        "{\"logprob\":[{\"logprob\":-0.5},{\"logprob\":-0.25},{\"logprob\":-1.0e-7}]}",
    };
    sr_jdom *fast = NULL, *gen = NULL;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_jdom_new(&fast, 0, &e), e);
    ck_assert_sr_ok(sr_jdom_new(&gen, 0, &e), e);
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        for (size_t n = 0; n <= strlen(texts[i]); n++) {
            char *t = guard_copy(texts[i], n); /* a read past the NUL faults */
            compare(fast, gen, t, n, 0);
            compare(fast, gen, t, n, SR_JDOM_REFERENCE);
        }
    }
    sr_jdom_free(fast);
    sr_jdom_free(gen);
    /* 1,500 objects need ~190 KiB of nodes: arenas capped below that stop at the same node. */
    size_t cap = 1500 * 10 + 16, k = 1;
    char *big = malloc(cap);
    big[0] = '[';
    for (int o = 0; o < 1500; o++)
        k += (size_t)sprintf(big + k, "%s{\"a\":%d}", o ? "," : "", o % 10);
    big[k++] = ']';
    big[k] = '\0';
    for (size_t max = (size_t)32 << 10; max <= (size_t)256 << 10; max += (size_t)16 << 10) {
        ck_assert_sr_ok(sr_jdom_new(&fast, max, &e), e);
        ck_assert_sr_ok(sr_jdom_new(&gen, max, &e), e);
        compare(fast, gen, big, k, 0);
        compare(fast, gen, big, k, SR_JDOM_REFERENCE);
        sr_jdom_free(fast);
        sr_jdom_free(gen);
    }
    free(big);
}
END_TEST

/* Replaces each 'K' of tpl by key and each 'S' by str. */
static size_t fill(char *t, size_t cap, const char *tpl, const char *key, const char *str)
{
    size_t k = 0;
    for (const char *c = tpl; *c; c++)
        put(t, &k, cap, *c == 'K' ? key : *c == 'S' ? str : (char[]){*c, '\0'});
    t[k] = '\0';
    return k;
}

/* compare() on a copy of t[0, n) whose NUL is the last byte before an unreadable page. */
static void compare_cut(sr_jdom *fast, sr_jdom *gen, const char *t, size_t n)
{
    char *c = guard_copy(t, n);
    compare(fast, gen, c, n, 0);
    compare(fast, gen, c, n, SR_JDOM_REFERENCE);
}

/*
 * Strings and keys read by the word (sr_jdom_i_short_ascii; the last key's pattern in parse_key)
 * against the byte loops: every length 0..18 (the word path takes fewer than 16 bytes, a key of
 * up to 14 has a pattern), with a byte the word path must hand back at every position (a quote
 * inside a key of the pattern's length, an escape, a control byte, DEL, UTF-8 and bytes that
 * are not), as values, new keys, repeated keys, keys that extend or shorten the last one, a key
 * spaced from its colon, texts that end 0..16 bytes after the string, and cut at every byte.
 */
START_TEST(short_strings_and_keys)
{
    static const char *const specials[] = {"\\n",  "\\u0041",  "\\u0000", "\\\"", "\x01", "\x1f",
                                           "\x7f", "\xc3\xa9", "\x80",    "\xff", " "};
    static const char *const tpls[] = {"{\"K\":\"S\"}",
                                       "{\"K\":1,\"K\":2}",
                                       "[{\"K\":1},{\"K\":\"S\"},{\"K\":3}]",
                                       "{\"x\":{\"K\":1},\"K\" :2,\"Kx\":3,\"K\":\"S\"}",
                                       "{\"Kx\":1,\"K\":2}",
                                       "{\"K\":[\"S\",\"S\"]}"};
    sr_jdom *fast = NULL, *gen = NULL;
    sr_err e = SR_ERR_INIT;
    ck_assert_sr_ok(sr_jdom_new(&fast, 0, &e), e);
    ck_assert_sr_ok(sr_jdom_new(&gen, 0, &e), e);
    char str[64], t[512];
    for (size_t len = 0; len <= 18; len++) {
        for (size_t sp = 0; sp <= sizeof specials / sizeof specials[0]; sp++) {
            for (size_t at = 0; at < (sp ? len : 1) || (len == 0 && at == 0); at++) {
                size_t k = 0;
                for (size_t i = 0; i < len; i++) {
                    if (sp && i == at)
                        put(str, &k, sizeof str, specials[sp - 1]);
                    else
                        str[k++] = (char)('a' + (i * 7) % 26);
                }
                str[k] = '\0';
                for (size_t ti = 0; ti < sizeof tpls / sizeof tpls[0]; ti++) {
                    size_t n = fill(t, sizeof t, tpls[ti], str, str);
                    compare_cut(fast, gen, t, n);
                    /* The same text with 1..16 bytes after it, so the word reads reach or pass
                     * its end at every string. */
                    for (size_t pad = 1; pad <= 16; pad++) {
                        memset(t + n, ' ', pad);
                        compare_cut(fast, gen, t, n + pad);
                    }
                    if (!sp)
                        for (size_t cut = 0; cut < n; cut++)
                            compare_cut(fast, gen, t, cut);
                }
            }
        }
    }
    sr_jdom_free(fast);
    sr_jdom_free(gen);
    /* Arenas that end at every byte around the strings: the word path stores 16 bytes, so
     * where fewer are free it hands the string to the general path (the same take, the same
     * limit error). */
    const char *text =
        "[\"abc\",{\"lp\":\"defghijklmn\"},{\"lp\":\"o\"},{\"lp\":1},\"pqrstuvwxyz0123\"]";
    for (size_t max = 64; max <= 640; max++) {
        ck_assert_sr_ok(sr_jdom_new(&fast, max, &e), e);
        ck_assert_sr_ok(sr_jdom_new(&gen, max, &e), e);
        compare_cut(fast, gen, text, strlen(text));
        sr_jdom_free(fast);
        sr_jdom_free(gen);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("jdom_fast");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, fast_path_equals_general_path);
    tcase_add_test(tc, fast_path_edges);
    tcase_add_test(tc, short_strings_and_keys);
    suite_add_tcase(s, tc);
    return sr_test_run(s);
}
