/* Regex sections that are a literal prefix.
 *
 * The short answer (access.c) compares each <FilesMatch>, <DirectoryMatch>
 * and <LocationMatch> section for a file's name and its sibling's. Most
 * such sections in real configurations are of the shape of Debian's own
 * <FilesMatch "^\.ht">: `^` and literal characters. Such a regex matches a
 * name exactly when the name starts with those characters, unless it was
 * compiled caseless or multi-line (ap_regcomp sets no other option that
 * changes what `^` and literals match). Each section of that shape is
 * found once per configuration, and the compiled regex itself is tried on
 * probes that tell those two options apart; the comparison then needs no
 * regex run per request. A section not found here (one from .htaccess,
 * which lives in a request's pool, or any other pattern) is run as before.
 */
#include "httpd.h"
#include "http_config.h"
#include "http_core.h"
#include "apr_lib.h"
#include "apr_strings.h"
#include "shim.h"
#include <string.h>

/* The longest literal kept: longer ones are run as regexes. */
#define LITERAL_MAX 64

struct literal {
    const ap_regex_t *r;
    size_t len;
    char text[LITERAL_MAX];
};

/* An open-addressing table by the compiled regex's address, built at
 * post_config in pconf before any request and only read after. */
static struct literal *table;
static size_t table_mask;

/* The literal of `^` followed by characters that match themselves (none of
 * PCRE's metacharacters, or a backslash before punctuation), or 0. */
static size_t literal_of(const char *pattern, char *out)
{
    static const char meta[] = "\\^$.[]|()?*+{}# \t\r\n\f\v";
    const unsigned char *p = (const unsigned char *)pattern;
    size_t n = 0;
    if (*p++ != '^') {
        return 0;
    }
    for (; *p; p++) {
        unsigned char c = *p;
        if (c == '\\') {
            c = *++p;
            if (!c || c >= 0x80 || !apr_ispunct(c)) {
                return 0;
            }
        }
        else if (c < 0x21 || c >= 0x7f || strchr(meta, c)) {
            return 0;
        }
        if (n + 1 >= LITERAL_MAX) {
            return 0;
        }
        out[n++] = (char)c;
    }
    out[n] = '\0';
    return n;
}

/* Whether the compiled `r` matches as "starts with `lit`": the literal
 * matches, with more after it too, but not without its last character;
 * and neither a newline before it (multi-line) nor its letters in the
 * other case (caseless) match. */
static int behaves_as_prefix(apr_pool_t *p, const ap_regex_t *r,
                             const char *lit, size_t len)
{
    char *other = apr_pstrmemdup(p, lit, len);
    int letters = 0;
    size_t i;
    for (i = 0; i < len; i++) {
        if (apr_isalpha(other[i])) {
            other[i] ^= 0x20;
            letters = 1;
        }
    }
    return ap_regexec(r, lit, 0, NULL, 0) == 0
           && ap_regexec(r, apr_pstrcat(p, lit, "x", NULL), 0, NULL, 0) == 0
           && ap_regexec(r, apr_pstrmemdup(p, lit, len - 1), 0, NULL, 0) != 0
           && ap_regexec(r, apr_pstrcat(p, "\n", lit, NULL), 0, NULL, 0) != 0
           && (!letters || ap_regexec(r, other, 0, NULL, 0) != 0);
}

static struct literal *slot(const ap_regex_t *r)
{
    size_t i = ((apr_uintptr_t)r >> 4) * 2654435761u;
    for (;; i++) {
        struct literal *l = &table[i & table_mask];
        if (!l->r || l->r == r) {
            return l;
        }
    }
}

/* Calls `fn` on each section of the array and of the sections nested in
 * them (a <Files> inside a <Directory>). */
static void each_section(const apr_array_header_t *secs,
                         void (*fn)(const core_dir_config *, void *), void *arg)
{
    int i;
    for (i = 0; secs && i < secs->nelts; i++) {
        const core_dir_config *e =
            ap_get_core_module_config(((ap_conf_vector_t **)secs->elts)[i]);
        fn(e, arg);
        if (e->sec_file != secs) {
            each_section(e->sec_file, fn, arg);
        }
    }
}

static void each_regex_section(server_rec *main_server,
                               void (*fn)(const core_dir_config *, void *),
                               void *arg)
{
    server_rec *s;
    for (s = main_server; s; s = s->next) {
        const core_server_config *sc =
            ap_get_core_module_config(s->module_config);
        const core_dir_config *d = ap_get_core_module_config(s->lookup_defaults);
        each_section(sc->sec_dir, fn, arg);
        each_section(sc->sec_url, fn, arg);
        each_section(d->sec_file, fn, arg);
    }
}

static void count_section(const core_dir_config *e, void *arg)
{
    *(size_t *)arg += e->r != NULL;
}

static void learn_section(const core_dir_config *e, void *arg)
{
    apr_pool_t *p = arg;
    struct literal *l;
    char text[LITERAL_MAX];
    size_t len;
    if (!e->r || !e->d || !(len = literal_of(e->d, text))
        || !behaves_as_prefix(p, e->r, text, len)) {
        return;
    }
    l = slot(e->r);
    l->r = e->r;
    l->len = len;
    memcpy(l->text, text, len + 1);
}

void gdn_learn_literal_sections(apr_pool_t *pconf, server_rec *main_server)
{
    size_t n = 0, size = 16;
    each_regex_section(main_server, count_section, &n);
    while (size < 2 * n) {
        size *= 2;
    }
    table = apr_pcalloc(pconf, size * sizeof(*table));
    table_mask = size - 1;
    each_regex_section(main_server, learn_section, pconf);
}

int gdn_literal_prefix_matches(const ap_regex_t *r, const char *name,
                               size_t nl)
{
    const struct literal *l;
    if (!table) {
        return -1;
    }
    l = slot(r);
    if (l->r != r) {
        return -1;
    }
    return nl >= l->len && memcmp(name, l->text, l->len) == 0;
}

size_t gdn_literal_prefix_length(const ap_regex_t *r)
{
    const struct literal *l;
    if (!table || !r) {
        return 0;
    }
    l = slot(r);
    return l->r == r ? l->len : 0;
}
