/* The C ABI exercised from C: bundled Vectors/, the real Apple vectors, every code, misuse, threads,
 * and (outside AddressSanitizer) that ap_result_free wipes the payment JSON before freeing it.
 * Usage: abi_test PACKAGE_ROOT APPLE_VECTORS_DIR MINTED_DIR   (MINTED_DIR: made by mint-tokens) */
#define _GNU_SOURCE
#include "applepay.h"

#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int failures = 0;
#define CHECK(cond, ...) do { if (!(cond)) { failures++; fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

/* ---- wipe check: the library frees the payment JSON through free(); look at it just before. ---- */
#if defined(__SANITIZE_ADDRESS__)
#define WIPE_CHECK 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WIPE_CHECK 0
#endif
#endif
#ifndef WIPE_CHECK
#define WIPE_CHECK 1
#endif

#if WIPE_CHECK
static void (*real_free)(void *);
static const unsigned char *watched;
static size_t watched_length;
static int watched_freed, watched_zero;

void free(void *p) {
    if (p && p == (void *)watched) {
        int zero = 1;
        for (size_t i = 0; i < watched_length; i++) zero &= watched[i] == 0;
        watched_freed = 1;
        watched_zero = zero;
        watched = NULL;
    }
    if (real_free) real_free(p);  /* before dlsym has answered, leaking is the safe choice */
}
#endif

/* ---- small helpers ---- */
static unsigned char *read_file(const char *path, size_t *length) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *bytes = malloc((size_t)n + 1);
    if (fread(bytes, 1, (size_t)n, f) != (size_t)n) { fclose(f); free(bytes); return NULL; }
    fclose(f);
    bytes[n] = 0;
    *length = (size_t)n;
    return bytes;
}

static char *join(const char *a, const char *b) {
    char *out = malloc(strlen(a) + strlen(b) + 2);
    sprintf(out, "%s/%s", a, b);
    return out;
}

/* The string value of "key" in a small JSON document (no escapes in the values we read), or NULL. */
static char *json_string(const char *doc, const char *key) {
    char pattern[128];
    snprintf(pattern, sizeof pattern, "\"%s\"", key);
    const char *p = strstr(doc, pattern);
    if (!p) return NULL;
    p += strlen(pattern);
    while (*p == ' ' || *p == ':' || *p == '\n' || *p == '\t') p++;
    if (*p != '"') return NULL;
    const char *end = strchr(p + 1, '"');
    return strndup(p + 1, (size_t)(end - p - 1));
}

static int64_t unix_time(const char *iso) {
    struct tm tm = {0};
    if (!strptime(iso, "%Y-%m-%dT%H:%M:%SZ", &tm)) return AP_REFERENCE_NOW;
    return (int64_t)timegm(&tm);
}

static ap_code code_of(const char *name) {
    for (ap_code c = 0; c <= 103; c++)
        if (strcmp(ap_code_name(c), name) == 0) return c;
    return -1;
}

static int seen[105];

static ap_decryptor *bundled_decryptor(const char *root) {
    ap_config *config = NULL;
    ap_error error;
    CHECK(ap_config_new(&config) == AP_OK, "ap_config_new");
    const char *pairs[2][2] = {{"Vectors/merchants/ec.cert.pem", "Vectors/merchants/ec.key.pem"},
                               {"Vectors/merchants/rsa.cert.pem", "Vectors/merchants/rsa.key.pem"}};
    for (int i = 0; i < 2; i++) {
        size_t cl, kl;
        char *cp = join(root, pairs[i][0]), *kp = join(root, pairs[i][1]);
        unsigned char *cert = read_file(cp, &cl), *key = read_file(kp, &kl);
        CHECK(cert && key, "read %s", cp);
        ap_code c = ap_config_add_merchant_certificate(config, cert, cl, key, kl, NULL, NULL, &error);
        CHECK(c == AP_OK && error.code == AP_OK, "add merchant %s: %d %s", cp, c, error.message);
        free(cert); free(key); free(cp); free(kp);
    }
    size_t rl;
    char *rp = join(root, "Vectors/trust/test-root.pem");
    unsigned char *rootPEM = read_file(rp, &rl);
    CHECK(ap_config_set_insecure_test_root_pem(config, rootPEM, rl, &error) == AP_OK, "test root: %s", error.message);
    free(rootPEM); free(rp);
    ap_decryptor *decryptor = NULL;
    CHECK(ap_decryptor_new(config, &decryptor, &error) == AP_OK && decryptor, "ap_decryptor_new: %s", error.message);
    CHECK(ap_config_free(config) == AP_OK, "ap_config_free");
    return decryptor;
}

/* ---- archive lines ---- */
typedef struct { unsigned char **tokens; size_t *lengths; size_t count; ap_code *expect; } archive;

static archive read_archive(const char *root, const char *manifest) {
    archive a = {0};
    size_t n;
    char *path = join(root, "Vectors/archive.jsonl");
    unsigned char *all = read_file(path, &n);
    CHECK(all != NULL, "read %s", path);
    free(path);
    a.tokens = calloc(64, sizeof *a.tokens);
    a.lengths = calloc(64, sizeof *a.lengths);
    a.expect = calloc(64, sizeof *a.expect);
    for (unsigned char *line = all, *end; line < all + n && a.count < 64; line = end + 1) {
        end = memchr(line, '\n', (size_t)(all + n - line));
        if (!end) end = all + n;
        if (end == line) continue;
        a.lengths[a.count] = (size_t)(end - line);
        a.tokens[a.count] = malloc(a.lengths[a.count]);
        memcpy(a.tokens[a.count], line, a.lengths[a.count]);
        a.count++;
    }
    free(all);
    const char *p = strstr(manifest, "\"expect\":[");
    CHECK(p != NULL, "manifest has archive.expect");
    size_t i = 0;
    for (p = p ? p + 10 : ""; *p && *p != ']'; ) {
        const char *q = strchr(p, '"'), *r = q ? strchr(q + 1, '"') : NULL;
        if (!r) break;
        char *name = strndup(q + 1, (size_t)(r - q - 1));
        if (i < a.count) a.expect[i] = code_of(name);
        i++;
        free(name);
        p = r + 1;
        while (*p == ',') p++;
    }
    CHECK(i == a.count && a.count >= 18, "archive has %zu lines, manifest %zu", a.count, i);
    return a;
}

/* ap_decrypt_batch_arrow: the archive as an Arrow binary column (int32 offsets, then int64), an empty item in
 * the middle. Each row's line is ap_result_line's for ap_decrypt_batch's result of the same token (index
 * first_index + i, the source given), its code the batch's; unjudged, a replay keeps its own verdict and
 * its keys; ap_replay_line writes the replay's line as ap_result_line does; misuse is refused. */
static void test_batch_arrow(ap_decryptor *d, const archive *a, int64_t now) {
    size_t n = a->count + 1, hole = 3, total = 0;
    int32_t *off32 = calloc(n + 1, sizeof *off32);
    int64_t *off64 = calloc(n + 1, sizeof *off64);
    for (size_t i = 0; i < a->count; i++) total += a->lengths[i];
    uint8_t *data = malloc(total);
    const uint8_t **tokens = calloc(n, sizeof *tokens);
    size_t *lengths = calloc(n, sizeof *lengths), at = 0;
    for (size_t row = 0, i = 0; row < n; row++) {
        off32[row] = (int32_t)at;
        off64[row] = (int64_t)at;
        if (row == hole) continue; /* an empty item: AP_INVALID_ARGUMENT, no line */
        memcpy(data + at, a->tokens[i], a->lengths[i]);
        tokens[row] = a->tokens[i];
        lengths[row] = a->lengths[i];
        at += a->lengths[i++];
    }
    off32[n] = (int32_t)at;
    off64[n] = (int64_t)at;
    ap_result **results = calloc(n, sizeof *results);
    CHECK(ap_decrypt_batch(d, tokens, lengths, n, now, 2, results) == AP_OK, "reference batch");
    const char *source = "archive.jsonl";
    for (int width = 4; width <= 8; width += 4) {
        for (uint32_t flags = 0; flags <= AP_BATCH_UNJUDGED; flags += AP_BATCH_UNJUDGED) {
            ap_batch_result *b = NULL;
            const void *offsets = width == 4 ? (const void *)off32 : (const void *)off64;
            ap_code c = ap_decrypt_batch_arrow(d, offsets, (uint32_t)width, data, n, 1000, source, strlen(source), now, 2,
                                               flags, &b);
            CHECK(c == AP_OK && b != NULL, "arrow batch (width %d, flags %u): %s", width, flags, ap_code_name(c));
            if (!b) continue;
            ap_batch_columns cols;
            CHECK(ap_batch_result_columns(b, &cols) == AP_OK && cols.count == n, "columns");
            int replays = 0;
            for (size_t row = 0; row < n; row++) {
                size_t len = (size_t)(cols.line_offsets[row + 1] - cols.line_offsets[row]);
                const uint8_t *line = cols.lines + cols.line_offsets[row];
                ap_code want = ap_result_code(results[row]);
                if (row == hole) {
                    CHECK(cols.codes[row] == AP_INVALID_ARGUMENT && len == 0 && !cols.has_replay_keys[row], "hole row");
                    continue;
                }
                uint8_t tx[16], content[16];
                int keyed = ap_result_replay_keys(results[row], tx, content) == AP_OK;
                CHECK(cols.has_replay_keys[row] == keyed, "row %zu: has keys %d, want %d", row, cols.has_replay_keys[row], keyed);
                if (keyed)
                    CHECK(memcmp(cols.replay_keys + 32 * row, tx, 16) == 0 && memcmp(cols.replay_keys + 32 * row + 16, content, 16) == 0,
                          "row %zu: keys", row);
                int64_t replay_of = -1;
                if (want == AP_REPLAYED_TRANSACTION && (flags & AP_BATCH_UNJUDGED)) {
                    want = AP_OK; /* unjudged: the token's own verdict, payment and all */
                    replays++;
                }
                CHECK(cols.codes[row] == want, "row %zu (flags %u): %s, want %s", row, flags, ap_code_name(cols.codes[row]),
                      ap_code_name(want));
                uint8_t expected[8192];
                size_t expected_length = 0;
                /* ap_result_line of the judged result writes its replay verdict; unjudged, the line of its own outcome. */
                ap_code lc = ap_result_line(results[row], 1000 + row, source, strlen(source), 0, replay_of, expected,
                                            sizeof expected, &expected_length);
                if (want == AP_OK && ap_result_code(results[row]) == AP_REPLAYED_TRANSACTION) {
                    /* The judged result has no payment to write: compare the head and the payment member only. */
                    CHECK(len > 0 && memmem(line, len, "\"payment\":{", 11) != NULL, "row %zu: unjudged line has the payment", row);
                    continue;
                }
                CHECK(lc == AP_OK && expected_length == len && memcmp(expected, line, len) == 0, "row %zu (width %d, flags %u): line differs",
                      row, width, flags);
                const char *tid = ap_result_transaction_id(results[row]);
                size_t tid_len = (size_t)(cols.transaction_id_offsets[row + 1] - cols.transaction_id_offsets[row]);
                CHECK(cols.has_transaction_id[row] == (tid != NULL) && (!tid || (tid_len == strlen(tid) &&
                      memcmp(cols.transaction_ids + cols.transaction_id_offsets[row], tid, tid_len) == 0)), "row %zu: transactionId", row);
            }
            if (flags & AP_BATCH_UNJUDGED) CHECK(replays >= 1, "the archive has replays: %d", replays);
            CHECK(ap_batch_result_free(b) == AP_OK, "free arrow result");
            CHECK(ap_batch_result_free(b) == AP_INVALID_HANDLE && ap_batch_result_columns(b, &cols) == AP_INVALID_HANDLE,
                  "freed arrow result is invalid");
        }
    }
    /* A replay's line by ap_replay_line is ap_result_line's with replay_of. */
    for (size_t row = 0; row < n; row++) {
        if (ap_result_code(results[row]) != AP_REPLAYED_TRANSACTION) continue;
        uint8_t want[4096], got[4096];
        size_t wl = 0, gl = 0;
        const char *message = ap_result_message(results[row]);
        uint64_t claimer = strtoull(strrchr(message, ' ') + 1, NULL, 10);
        CHECK(ap_result_line(results[row], 1000 + row, "a.jsonl:7", 9, 0, -1, want, sizeof want, &wl) == AP_OK, "replay line");
        CHECK(ap_replay_line(1000 + row, "a.jsonl", 7, 7, ap_result_transaction_id(results[row]), claimer, 0, got, sizeof got, &gl) == AP_OK,
              "ap_replay_line");
        char needle[64];
        snprintf(needle, sizeof needle, "claimed by item %llu\"", (unsigned long long)claimer);
        CHECK(gl > 0 && memmem(got, gl, needle, strlen(needle)), "ap_replay_line names the claimer");
        CHECK(gl == wl && memcmp(got, want, gl) == 0, "ap_replay_line is ap_result_line's replay line");
        CHECK(ap_replay_line(5, NULL, 0, -1, NULL, 5, 0, got, sizeof got, &gl) == AP_INVALID_ARGUMENT, "claimer not before the item");
        CHECK(ap_replay_line(5, NULL, 0, -1, NULL, 1, 0, NULL, 0, &gl) == AP_BUFFER_TOO_SMALL && gl > 0, "size query");
    }
    /* Misuse: a NULL result pointer, a bad width, decreasing offsets, unknown flags, a foreign handle. */
    ap_batch_result *b = (ap_batch_result *)1;
    CHECK(ap_decrypt_batch_arrow(d, off32, 4, data, n, 0, NULL, 0, now, 1, 0, NULL) == AP_INVALID_ARGUMENT, "NULL result");
    CHECK(ap_decrypt_batch_arrow(d, off32, 2, data, n, 0, NULL, 0, now, 1, 0, &b) == AP_INVALID_ARGUMENT && b == NULL, "width 2");
    int32_t bad[3] = {0, 10, 5};
    CHECK(ap_decrypt_batch_arrow(d, bad, 4, data, 2, 0, NULL, 0, now, 1, 0, &b) == AP_INVALID_ARGUMENT, "decreasing offsets");
    CHECK(ap_decrypt_batch_arrow(d, off32, 4, data, n, 0, NULL, 0, now, 1, 64, &b) == AP_INVALID_ARGUMENT, "unknown flag");
    CHECK(ap_decrypt_batch_arrow(d, off32, 4, data, 0, 0, NULL, 0, now, 1, 0, &b) == AP_INVALID_ARGUMENT, "count 0");
    CHECK(ap_decrypt_batch_arrow((ap_decryptor *)results[0], off32, 4, data, n, 0, NULL, 0, now, 1, 0, &b) == AP_INVALID_HANDLE,
          "a result is not a decryptor");
    CHECK(ap_batch_result_columns((ap_batch_result *)results[0], NULL) == AP_INVALID_HANDLE, "a result is not a batch result");
    CHECK(ap_results_free(results, n) == AP_OK, "free reference batch");
    free(results); free(off32); free(off64); free(data); free(tokens); free(lengths);
}

/* Payment-request binding on a mint-tokens token (USD 10.00, 3DSecure, paymentMethod absent): the
 * matching request passes, a 900.00 request is AP_PAYMENT_REQUEST_MISMATCH naming total.amount, a
 * schema-breaking request is AP_INVALID_PAYMENT_REQUEST naming its member with no result, misuse is
 * an error code; and in ap_decrypt_batch an envelope line that mismatches claims nothing. */
static void test_payment_request_binding(ap_decryptor *d, const unsigned char *token, size_t length) {
    static const char good[] = "{\"countryCode\":\"US\",\"currencyCode\":\"USD\",\"supportedNetworks\":[\"visa\"],"
        "\"merchantCapabilities\":[\"supports3DS\"],\"total\":{\"label\":\"Shop\",\"amount\":\"10.00\"}}";
    static const char wrong[] = "{\"countryCode\":\"US\",\"currencyCode\":\"USD\",\"supportedNetworks\":[\"visa\"],"
        "\"merchantCapabilities\":[\"supports3DS\"],\"total\":{\"label\":\"Shop\",\"amount\":\"900.00\"}}";
    static const char invalid[] = "{\"countryCode\":\"US\",\"currencyCode\":\"USD\",\"supportedNetworks\":[\"visa\"],"
        "\"merchantCapabilities\":[\"supports3DS\"],\"total\":{\"label\":\"Shop\",\"amount\":\"1e3\"}}";
    ap_result *r = NULL;
    ap_error error;
    ap_code c = ap_decrypt_expecting(d, token, length, (const uint8_t *)good, strlen(good), AP_REFERENCE_SIGNING_TIME, &r, &error);
    CHECK(c == AP_OK && r && ap_result_code(r) == AP_OK && ap_result_payment_json(r, NULL), "bound token: %s", ap_code_name(c));
    CHECK(ap_result_free(r) == AP_OK, "free bound result");
    r = NULL;
    c = ap_decrypt_expecting(d, token, length, (const uint8_t *)wrong, strlen(wrong), AP_REFERENCE_SIGNING_TIME, &r, NULL);
    CHECK(c == AP_PAYMENT_REQUEST_MISMATCH && r && ap_result_code(r) == AP_PAYMENT_REQUEST_MISMATCH, "900.00 request: %s", ap_code_name(c));
    CHECK(r && ap_result_field(r) && strcmp(ap_result_field(r), "total.amount") == 0, "mismatch names total.amount");
    CHECK(r && ap_result_payment_json(r, NULL) == NULL, "no payment JSON for a mismatch");
    CHECK(strcmp(ap_code_name(AP_PAYMENT_REQUEST_MISMATCH), "paymentRequestMismatch") == 0, "name of 10");
    if (c == AP_PAYMENT_REQUEST_MISMATCH) seen[c] = 1;
    ap_result_free(r);
    r = NULL;
    c = ap_decrypt_expecting(d, token, length, (const uint8_t *)invalid, strlen(invalid), AP_REFERENCE_SIGNING_TIME, &r, &error);
    CHECK(c == AP_INVALID_PAYMENT_REQUEST && r == NULL && error.code == AP_INVALID_PAYMENT_REQUEST, "invalid request: %s", ap_code_name(c));
    CHECK(strncmp(error.message, "total.amount: ", 14) == 0, "invalid request names the member: %s", error.message);
    CHECK(strcmp(ap_code_name(AP_INVALID_PAYMENT_REQUEST), "invalidPaymentRequest") == 0, "name of 104");
    if (c == AP_INVALID_PAYMENT_REQUEST) seen[c] = 1;
    CHECK(ap_decrypt_expecting(d, token, length, NULL, 10, AP_REFERENCE_SIGNING_TIME, &r, NULL) == AP_INVALID_ARGUMENT && r == NULL, "NULL request");
    CHECK(ap_decrypt_expecting(d, token, length, (const uint8_t *)good, 0, AP_REFERENCE_SIGNING_TIME, &r, NULL) == AP_INVALID_ARGUMENT, "empty request");
    CHECK(ap_decrypt_expecting(NULL, token, length, (const uint8_t *)good, strlen(good), AP_REFERENCE_SIGNING_TIME, &r, NULL) == AP_INVALID_HANDLE, "NULL decryptor");

    /* Batch: [envelope(token, 900.00), token]: the mismatch does not claim, so the plain token is OK. */
    size_t envelope_length = length + strlen(wrong) + 40;
    char *envelope = malloc(envelope_length);
    int n = snprintf(envelope, envelope_length, "{\"paymentToken\":%.*s,\"paymentRequest\":%s}", (int)length, (const char *)token, wrong);
    const uint8_t *tokens[2] = {(const uint8_t *)envelope, token};
    size_t lengths[2] = {(size_t)n, length};
    ap_result *results[2] = {NULL, NULL};
    CHECK(ap_decrypt_batch(d, tokens, lengths, 2, AP_REFERENCE_SIGNING_TIME, 1, results) == AP_OK, "envelope batch");
    CHECK(ap_result_code(results[0]) == AP_PAYMENT_REQUEST_MISMATCH, "envelope line: %s", ap_code_name(ap_result_code(results[0])));
    CHECK(ap_result_code(results[1]) == AP_OK, "the mismatched envelope claimed the token: %s", ap_code_name(ap_result_code(results[1])));
    CHECK(ap_results_free(results, 2) == AP_OK, "free batch");
    free(envelope);
}

/* Decrypts one token and checks its code; the payment JSON (when ok) must name a PAN and be wiped on free. */
static void expect_decrypt(ap_decryptor *d, const unsigned char *token, size_t length, int64_t reference,
                           ap_code expect, const char *what) {
    ap_result *r = NULL;
    ap_code c = ap_decrypt(d, token, length, reference, &r);
    CHECK(c == expect, "%s: got %s (%s at %s), want %s", what, ap_code_name(c), r ? ap_result_message(r) : "-",
          r && ap_result_field(r) ? ap_result_field(r) : "-", ap_code_name(expect));
    CHECK(r != NULL && ap_result_code(r) == c, "%s: result code", what);
    if (c >= 0 && c <= 9) seen[c] = 1;
    size_t json_length = 0;
    const unsigned char *json = ap_result_payment_json(r, &json_length);
    if (c == AP_OK) {
        CHECK(json && json_length > 0 && json[json_length] == 0, "%s: payment JSON", what);
        CHECK(json && strstr((const char *)json, "\"applicationPrimaryAccountNumber\":\""), "%s: PAN in JSON", what);
        CHECK(ap_result_transaction_id(r) && strlen(ap_result_transaction_id(r)) > 0, "%s: transactionId", what);
        CHECK(strcmp(ap_result_message(r), "") == 0 && ap_result_field(r) == NULL, "%s: no error context", what);
#if WIPE_CHECK
        watched = json; watched_length = json_length; watched_freed = 0; watched_zero = 0;
#endif
    } else {
        CHECK(json == NULL && json_length == 0, "%s: no JSON for an error", what);
        CHECK(strlen(ap_result_message(r)) > 0, "%s: error message", what);
    }
    CHECK(ap_result_free(r) == AP_OK, "%s: free", what);
#if WIPE_CHECK
    if (c == AP_OK) CHECK(watched_freed && watched_zero, "%s: payment JSON wiped before free (freed=%d zero=%d)", what, watched_freed, watched_zero);
#endif
    CHECK(ap_result_code(r) == AP_INVALID_HANDLE && ap_result_free(r) == AP_INVALID_HANDLE, "%s: freed result is invalid", what);
    CHECK(ap_result_payment_json(r, &json_length) == NULL && json_length == 0 && ap_result_message(r) == NULL, "%s: freed result reads nothing", what);
}

/* ---- threads: several threads on one decryptor ---- */
typedef struct { ap_decryptor *d; archive *a; int64_t now; int wrong; } thread_job;

static void *thread_run(void *arg) {
    thread_job *job = arg;
    for (int round = 0; round < 5; round++)
        for (size_t i = 0; i < job->a->count; i++) {
            ap_result *r = NULL;
            ap_code want = job->a->expect[i] == AP_REPLAYED_TRANSACTION ? AP_OK : job->a->expect[i];
            if (ap_decrypt(job->d, job->a->tokens[i], job->a->lengths[i], job->now, &r) != want) job->wrong++;
            if (ap_result_free(r) != AP_OK) job->wrong++;
        }
    return NULL;
}

static void test_apple_vectors(const char *dir) {
    DIR *d = opendir(dir);
    CHECK(d != NULL, "the Apple vectors are missing at %s", dir);
    if (!d) return;
    int count = 0, ok = 0;
    for (struct dirent *e; (e = readdir(d)); ) {
        if (e->d_name[0] == '.') continue;
        char *vector = join(dir, e->d_name), *metaPath = join(vector, "meta.json");
        size_t n;
        char *meta = (char *)read_file(metaPath, &n);
        if (!meta) { free(vector); free(metaPath); continue; }
        count++;
        char *signingTime = json_string(meta, "signingTime"), *expect = json_string(meta, "expect");
        char *keyFile = json_string(meta, "keyFile"), *certFile = json_string(meta, "certFile");
        char *identifier = json_string(meta, "merchantIdentifier");
        char *kp = join(vector, keyFile), *tp = join(vector, "token.json");
        size_t kl, tl, cl = 0;
        unsigned char *key = read_file(kp, &kl), *token = read_file(tp, &tl), *cert = NULL;
        ap_config *config = NULL;
        ap_error error;
        ap_config_new(&config);
        ap_code c;
        if (certFile) {
            char *cp = join(vector, certFile);
            cert = read_file(cp, &cl);
            c = ap_config_add_merchant_certificate(config, cert, cl, key, kl, NULL, NULL, &error);
            free(cp);
        } else {
            c = ap_config_add_merchant_identifier(config, identifier, key, kl, NULL, &error);
        }
        CHECK(c == AP_OK, "%s: merchant: %s", e->d_name, error.message);
        ap_decryptor *decryptor = NULL;
        CHECK(ap_decryptor_new(config, &decryptor, &error) == AP_OK, "%s: decryptor: %s", e->d_name, error.message);
        ap_config_free(config);
        int64_t at = unix_time(signingTime);
        ap_result *r = NULL;
        c = ap_decrypt(decryptor, token, tl, at, &r);
        CHECK(strcmp(ap_code_name(c), expect) == 0, "%s: got %s (%s), want %s", e->d_name, ap_code_name(c), ap_result_message(r), expect);
        if (c == AP_OK) {
            ok++;
            char *ep = join(vector, "expected.json");
            char *expected = (char *)read_file(ep, &n);
            char *pan = expected ? json_string(expected, "applicationPrimaryAccountNumber") : NULL;
            char want[128];
            snprintf(want, sizeof want, "\"applicationPrimaryAccountNumber\":\"%s\"", pan ? pan : "?");
            CHECK(pan && strstr((const char *)ap_result_payment_json(r, NULL), want), "%s: PAN as expected.json", e->d_name);
            free(pan); free(expected); free(ep);
        }
        if (c >= 0 && c <= 9) seen[c] = 1;
        ap_result_free(r);
        ap_decryptor_free(decryptor);
        free(signingTime); free(expect); free(keyFile); free(certFile); free(identifier);
        free(kp); free(tp); free(key); free(token); free(cert); free(meta); free(metaPath); free(vector);
    }
    closedir(d);
    CHECK(count >= 9 && ok >= 6, "Apple vectors: %d found, %d ok", count, ok);
    printf("apple vectors: %d checked, %d decrypted\n", count, ok);
}

static void test_misuse(ap_decryptor *d, const archive *a) {
    ap_result *r = (ap_result *)0x1;
    const unsigned char *t = a->tokens[0];
    CHECK(ap_decrypt(NULL, t, a->lengths[0], AP_REFERENCE_NOW, &r) == AP_INVALID_HANDLE && r == NULL, "null decryptor");
    CHECK(ap_decrypt(d, t, 0, AP_REFERENCE_NOW, &r) == AP_INVALID_ARGUMENT && r == NULL, "zero length");
    CHECK(ap_decrypt(d, NULL, 10, AP_REFERENCE_NOW, &r) == AP_INVALID_ARGUMENT, "null token");
    CHECK(ap_decrypt(d, t, SIZE_MAX, AP_REFERENCE_NOW, &r) == AP_INVALID_ARGUMENT, "huge length");
    CHECK(ap_decrypt(d, t, AP_MAX_TOKEN_LENGTH + 1, AP_REFERENCE_NOW, &r) == AP_INVALID_ARGUMENT, "length over the limit");
    CHECK(ap_decrypt(d, t, a->lengths[0], AP_REFERENCE_NOW, NULL) == AP_INVALID_ARGUMENT, "null result pointer");
    CHECK(ap_decrypt((ap_decryptor *)&r, t, a->lengths[0], AP_REFERENCE_NOW, &r) == AP_INVALID_HANDLE, "foreign handle");
    CHECK(ap_result_free(NULL) == AP_INVALID_HANDLE && ap_result_code(NULL) == AP_INVALID_HANDLE, "null result");
    CHECK(ap_result_message(NULL) == NULL && ap_result_transaction_id(NULL) == NULL, "null result strings");
    CHECK(ap_decryptor_free(NULL) == AP_INVALID_HANDLE && ap_config_free(NULL) == AP_INVALID_HANDLE, "null frees");
    CHECK(ap_config_new(NULL) == AP_INVALID_ARGUMENT, "config out-pointer");
    seen[AP_INVALID_ARGUMENT] = seen[AP_INVALID_HANDLE] = 1;

    ap_error error;
    ap_config *config = NULL;
    ap_decryptor *none = (ap_decryptor *)0x1;
    ap_config_new(&config);
    CHECK(ap_decryptor_new(config, &none, &error) == AP_INVALID_CONFIGURATION && none == NULL && error.code == AP_INVALID_CONFIGURATION
          && strlen(error.message) > 0, "no merchant: %s", error.message);
    const unsigned char junk[] = "-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n";
    CHECK(ap_config_add_merchant_identifier(config, "merchant.x", junk, sizeof junk - 1, NULL, &error) == AP_INVALID_CONFIGURATION,
          "junk key: %s", error.message);
    CHECK(ap_config_add_merchant_identifier(config, NULL, junk, sizeof junk - 1, NULL, &error) == AP_INVALID_ARGUMENT, "null identifier");
    CHECK(ap_config_add_merchant_certificate(config, junk, 0, junk, 5, NULL, NULL, &error) == AP_INVALID_ARGUMENT, "zero certificate length");
    CHECK(ap_config_add_merchant_pkcs12(config, junk, sizeof junk, "pw", NULL, &error) == AP_INVALID_CONFIGURATION, "junk PKCS#12");
    CHECK(ap_config_set_signing_time_window(config, -1, &error) == AP_INVALID_CONFIGURATION, "negative window");
    CHECK(ap_config_set_multibuffer(config, 7, &error) == AP_INVALID_ARGUMENT, "multibuffer mode 7");
    CHECK(ap_config_set_multibuffer(config, AP_MULTIBUFFER_OFF, &error) == AP_OK, "multibuffer off: %s", error.message);
    CHECK(ap_config_set_reference_unit(config, 2, &error) == AP_INVALID_ARGUMENT, "reference unit 2");
    CHECK(ap_config_set_reference_unit(NULL, AP_REFERENCE_MILLISECONDS, &error) == AP_INVALID_HANDLE, "reference unit, NULL config");
    CHECK(ap_config_set_insecure_test_root_pem(config, junk, sizeof junk, NULL) == AP_INVALID_CONFIGURATION, "junk root, no error struct");
    CHECK(ap_config_free(config) == AP_OK && ap_config_free(config) == AP_INVALID_HANDLE, "config double free");
    CHECK(ap_config_add_merchant_identifier(config, "m", junk, 5, NULL, &error) == AP_INVALID_HANDLE && error.code == AP_INVALID_HANDLE, "freed config");
    seen[AP_INVALID_CONFIGURATION] = 1;

    ap_result *results[4];
    const uint8_t *tokens[3] = {a->tokens[0], NULL, a->tokens[0]};
    size_t lengths[3] = {a->lengths[0], 10, 0};
    CHECK(ap_decrypt_batch(NULL, tokens, lengths, 3, AP_REFERENCE_NOW, 1, results) == AP_INVALID_HANDLE && results[0] == NULL, "batch null decryptor");
    CHECK(ap_decrypt_batch(d, tokens, lengths, 0, AP_REFERENCE_NOW, 1, results) == AP_INVALID_ARGUMENT, "batch zero count");
    CHECK(ap_decrypt_batch(d, tokens, lengths, SIZE_MAX, AP_REFERENCE_NOW, 1, results) == AP_INVALID_ARGUMENT, "batch huge count");
    CHECK(ap_decrypt_batch(d, NULL, lengths, 3, AP_REFERENCE_NOW, 1, results) == AP_INVALID_ARGUMENT, "batch null tokens");
    CHECK(ap_decrypt_batch(d, tokens, lengths, 3, AP_REFERENCE_NOW, 1, NULL) == AP_INVALID_ARGUMENT, "batch null results");
    CHECK(ap_decrypt_batch(d, tokens, lengths, 3, AP_REFERENCE_NOW, 100000, results) == AP_INVALID_ARGUMENT, "batch lanes");
    CHECK(ap_decrypt_batch(d, tokens, lengths, 3, AP_REFERENCE_SIGNING_TIME, 2, results) == AP_OK, "batch with bad items");
    CHECK(ap_result_code(results[0]) == a->expect[0] && ap_result_code(results[1]) == AP_INVALID_ARGUMENT
          && ap_result_code(results[2]) == AP_INVALID_ARGUMENT, "bad items flagged: %d %d %d",
          ap_result_code(results[0]), ap_result_code(results[1]), ap_result_code(results[2]));
    results[3] = results[0];
    CHECK(ap_results_free(results, 3) == AP_OK && results[0] == NULL, "results free");
    CHECK(ap_results_free(results + 3, 1) == AP_INVALID_HANDLE, "results double free");
    CHECK(strcmp(ap_code_name(AP_REPLAYED_TRANSACTION), "replayedTransaction") == 0 && strcmp(ap_code_name(12345), "unknown") == 0, "names");
}

/* Google Pay (APPLEPAY_GOOGLE_MINTED, a `mint-tokens google` directory): a configuration with Google Pay
 * keys alone decrypts a factory token and gives the two Google Pay codes their numbers. */
static void test_google_pay(void) {
    const char *dir = getenv("APPLEPAY_GOOGLE_MINTED");
    CHECK(dir != NULL, "set APPLEPAY_GOOGLE_MINTED (run-tests.sh does)");
    if (!dir) return;
    const int64_t now = 1772366400; /* the factory's clock: 2026-03-01T12:00:00Z */
    size_t kl, pl, tl, el, il;
    char *kp = join(dir, "root_keys.json"), *pp = join(dir, "merchant_key.pem"), *tp = join(dir, "tokens.jsonl");
    char *ep = join(dir, "expired-message.json"), *ip = join(dir, "expired-intermediate.json");
    unsigned char *keys = read_file(kp, &kl), *pem = read_file(pp, &pl), *tokens = read_file(tp, &tl);
    unsigned char *expired = read_file(ep, &el), *intermediate = read_file(ip, &il);
    CHECK(keys && pem && tokens && expired && intermediate, "read %s", dir);
    if (!(keys && pem && tokens && expired && intermediate)) return;
    ap_config *config = NULL;
    ap_decryptor *d = NULL;
    ap_error error;
    CHECK(ap_config_new(&config) == AP_OK, "ap_config_new");
    CHECK(ap_config_set_google_root_keys(config, keys, kl, &error) == AP_OK, "root keys: %s", error.message);
    CHECK(ap_decryptor_new(config, &d, &error) == AP_INVALID_CONFIGURATION && d == NULL, "root keys without a recipient id");
    CHECK(ap_config_add_google_recipient_id(config, "merchant:12345678901234567890", &error) == AP_OK, "recipient: %s", error.message);
    CHECK(ap_config_add_google_recipient_id(config, NULL, &error) == AP_INVALID_ARGUMENT, "NULL recipient id");
    CHECK(ap_config_add_google_merchant_key(config, pem, pl, NULL, &error) == AP_OK, "merchant key: %s", error.message);
    CHECK(ap_config_add_google_merchant_key(config, (const uint8_t *)"nope", 4, NULL, &error) == AP_INVALID_CONFIGURATION, "a bad key");
    CHECK(ap_config_set_google_root_keys(NULL, keys, kl, &error) == AP_INVALID_HANDLE, "NULL config");
    CHECK(ap_decryptor_new(config, &d, &error) == AP_OK && d, "Google Pay keys alone: %s", error.message);
    ap_config_free(config);
    size_t first = (size_t)((unsigned char *)memchr(tokens, '\n', tl) - tokens);
    ap_result *r = NULL;
    CHECK(ap_decrypt(d, tokens, first, now, &r) == AP_OK, "factory token: %s", r ? ap_result_message(r) : "");
    size_t length = 0;
    const uint8_t *json = ap_result_payment_json(r, &length);
    CHECK(json && strstr((const char *)json, "\"pan\":\"4111000000000000\""), "payment JSON");
    CHECK(ap_result_transaction_id(r) && strcmp(ap_result_transaction_id(r), "google-cabi-0") == 0, "messageId");
    ap_result_free(r);
    CHECK(ap_decrypt(d, expired, el, now, &r) == AP_MESSAGE_EXPIRED && ap_result_code(r) == 12, "expired message");
    CHECK(strcmp(ap_result_field(r), "messageExpiration") == 0, "expired message field");
    ap_result_free(r);
    CHECK(ap_decrypt(d, intermediate, il, now, &r) == AP_INTERMEDIATE_KEY_EXPIRED, "expired intermediate key");
    ap_result_free(r);
    static const char request[] = "{\"countryCode\":\"US\",\"currencyCode\":\"USD\",\"supportedNetworks\":[\"visa\"],"
        "\"merchantCapabilities\":[\"supports3DS\"],\"total\":{\"label\":\"Shop\",\"amount\":\"10.00\"}}";
    /* ABI 6: a payment request binds Apple Pay (and Samsung Pay) tokens; a Google Pay token carries nothing to
     * check against it, so it is refused as a mismatch naming the request, never decrypted unbound. */
    CHECK(ap_decrypt_expecting(d, tokens, first, (const uint8_t *)request, strlen(request), now, &r, NULL) ==
              AP_PAYMENT_REQUEST_MISMATCH && strcmp(ap_result_field(r), "paymentRequest") == 0,
          "ap_decrypt_expecting refuses a Google Pay token");
    ap_result_free(r);
    CHECK(strcmp(ap_code_name(11), "intermediateKeyExpired") == 0 && strcmp(ap_code_name(12), "messageExpired") == 0, "names");
    ap_decryptor_free(d);

    /* ABI 5: with AP_REFERENCE_MILLISECONDS the factory's message, expiring an hour after its clock, is good
     * one millisecond before and expired at the millisecond. */
    const int64_t expiry = (now + 3600) * 1000;
    CHECK(ap_config_new(&config) == AP_OK, "ap_config_new");
    ap_config_set_google_root_keys(config, keys, kl, &error);
    ap_config_add_google_recipient_id(config, "merchant:12345678901234567890", &error);
    ap_config_add_google_merchant_key(config, pem, pl, NULL, &error);
    CHECK(ap_config_set_reference_unit(config, AP_REFERENCE_MILLISECONDS, &error) == AP_OK, "milliseconds: %s", error.message);
    CHECK(ap_decryptor_new(config, &d, &error) == AP_OK && d, "decryptor in milliseconds: %s", error.message);
    ap_config_free(config);
    CHECK(ap_decrypt(d, tokens, first, expiry - 1, &r) == AP_OK, "1 ms before the expiry: %s", r ? ap_result_message(r) : "");
    ap_result_free(r);
    CHECK(ap_decrypt(d, tokens, first, expiry, &r) == AP_MESSAGE_EXPIRED, "at the expiry: %s", r ? ap_result_message(r) : "");
    ap_result_free(r);
    ap_decryptor_free(d);
    free(keys); free(pem); free(tokens); free(expired); free(intermediate);
    free(kp); free(pp); free(tp); free(ep); free(ip);
}

/* ABI 6: keys as the CLI's specs, and ap_result_json (the CLI's decrypt output) with its buffer rules. */
static void test_specs_and_json(const char *root) {
    char *cp = join(root, "Vectors/merchants/ec.cert.pem"), *kp = join(root, "Vectors/merchants/ec.key.pem");
    char *rp = join(root, "Vectors/trust/test-root.pem"), *tp = join(root, "Vectors/tokens/ec-3dsecure.json");
    char spec[8192];
    snprintf(spec, sizeof spec, "cert=%s,key=%s", cp, kp);
    size_t rl, tl;
    unsigned char *rootPEM = read_file(rp, &rl), *token = read_file(tp, &tl);
    ap_config *config = NULL;
    ap_decryptor *d = NULL;
    ap_error error;
    CHECK(ap_config_new(&config) == AP_OK, "config");
    CHECK(ap_config_add_merchant_spec(config, spec, &error) == AP_OK, "merchant spec: %s", error.message);
    CHECK(ap_config_add_merchant_spec(config, "cert=/nonexistent.pem,key=/nonexistent.pem", &error)
          == AP_INVALID_CONFIGURATION && strstr(error.message, "merchant 'cert=/nonexistent.pem") != NULL,
          "a missing file: %s", error.message);
    CHECK(ap_config_add_merchant_spec(config, "cert=a.pem,pin-value=1234", &error) == AP_INVALID_CONFIGURATION
          && strstr(error.message, "1234") == NULL, "an unknown field is refused unechoed: %s", error.message);
    CHECK(ap_config_add_merchant_spec(config, NULL, &error) == AP_INVALID_ARGUMENT, "NULL spec");
    CHECK(ap_config_add_merchant_spec(config, "", &error) == AP_INVALID_ARGUMENT, "empty spec");
    CHECK(ap_config_add_google_merchant_key_spec(config, kp, &error) == AP_OK, "Google key spec: %s", error.message);
    CHECK(ap_config_add_google_merchant_key_spec(config, "/nonexistent-google.pem", &error) == AP_INVALID_CONFIGURATION,
          "a missing Google key");
    CHECK(ap_config_add_google_merchant_key_spec(config, NULL, &error) == AP_INVALID_ARGUMENT, "NULL Google spec");
    ap_config *freed = NULL;
    ap_config_new(&freed);
    ap_config_free(freed);
    CHECK(ap_config_add_merchant_spec(freed, spec, &error) == AP_INVALID_HANDLE, "a freed config");
    CHECK(ap_config_add_google_merchant_key_spec(freed, kp, &error) == AP_INVALID_HANDLE, "a freed config (Google)");
    ap_config *plain = NULL;
    ap_config_new(&plain);
    ap_config_add_merchant_spec(plain, spec, NULL);
    ap_config_set_insecure_test_root_pem(plain, rootPEM, rl, NULL);
    CHECK(ap_decryptor_new(plain, &d, &error) == AP_OK, "decryptor from a spec: %s", error.message);
    ap_config_free(plain);
    ap_config_free(config);
    ap_result *r = NULL;
    CHECK(ap_decrypt(d, token, tl, AP_REFERENCE_SIGNING_TIME, &r) == AP_OK, "decrypt");
    size_t needed = 0, written = 0, payment_length = 0;
    CHECK(ap_result_json(r, 0, NULL, 0, &needed) == AP_BUFFER_TOO_SMALL && needed > 0, "size query");
    char *json = malloc(needed + 1), *masked = malloc(needed + 1);
    CHECK(ap_result_json(r, 0, (uint8_t *)json, needed - 1, &written) == AP_BUFFER_TOO_SMALL && written == needed,
          "one byte short");
    CHECK(ap_result_json(r, 0, (uint8_t *)json, needed, &written) == AP_OK && written == needed, "json");
    const uint8_t *payment = ap_result_payment_json(r, &payment_length);
    CHECK(payment_length == written && memcmp(payment, json, written) == 0, "an ok result's JSON is its payment");
    CHECK(ap_result_json(r, AP_LINE_MASK_PAN, (uint8_t *)masked, needed, &written) == AP_OK, "masked json");
    json[needed] = 0;
    masked[written] = 0;
    const char *pan = strstr(json, "\"applicationPrimaryAccountNumber\":\"");
    CHECK(pan != NULL && strstr(masked, "********") != NULL && strncmp(masked, json, (size_t)(pan - json)) == 0,
          "masked: %s", masked);
    CHECK(ap_result_json(r, 4, (uint8_t *)json, needed, &written) == AP_INVALID_ARGUMENT, "unknown flag");
    CHECK(ap_result_json(r, 0, (uint8_t *)json, needed, NULL) == AP_INVALID_ARGUMENT, "NULL length");
    ap_result_free(r);
    CHECK(ap_result_json(r, 0, (uint8_t *)json, needed, &written) == AP_INVALID_HANDLE, "a freed result");
    CHECK(ap_decrypt(d, (const uint8_t *)"{}", 2, AP_REFERENCE_SIGNING_TIME, &r) == AP_MALFORMED_TOKEN, "{}");
    char error_json[1024];
    CHECK(ap_result_json(r, 0, (uint8_t *)error_json, sizeof error_json, &written) == AP_OK, "error json");
    const char *head = "{\"error\":\"malformedToken\",\"message\":";
    CHECK(written < sizeof error_json && strncmp(error_json, head, strlen(head)) == 0,
          "error object: %.*s", (int)written, error_json);
    ap_result_free(r);
    ap_decryptor_free(d);
    free(json); free(masked); free(cp); free(kp); free(rp); free(tp); free(rootPEM); free(token);
}

int main(int argc, char **argv) {
#if WIPE_CHECK
    real_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
#endif
    if (argc < 4) { fprintf(stderr, "usage: %s PACKAGE_ROOT APPLE_VECTORS MINTED_DIR\n", argv[0]); return 2; }
    const char *root = argv[1];
    CHECK(ap_version() == AP_ABI_VERSION, "ABI version %u, header %d", ap_version(), AP_ABI_VERSION);
    test_google_pay();
    test_specs_and_json(root);

    size_t n;
    char *mp = join(root, "Vectors/manifest.json");
    char *manifest = (char *)read_file(mp, &n);
    CHECK(manifest != NULL, "read %s", mp);
    if (!manifest) return 1;
    char *nowText = json_string(manifest, "now");
    int64_t now = unix_time(nowText);
    ap_decryptor *d = bundled_decryptor(root);

    /* Vectors/tokens: every single token, with the code the manifest gives. */
    const char *p = strstr(manifest, "\"tokens\":{");
    int singles = 0;
    for (p = p ? p + 10 : ""; *p && *p != '}'; singles++) {
        char *name = strndup(strchr(p, '"') + 1, (size_t)(strchr(strchr(p, '"') + 1, '"') - strchr(p, '"') - 1));
        p = strchr(strchr(p, '"') + 1, '"') + 2;
        char *expect = strndup(p + 1, (size_t)(strchr(p + 1, '"') - p - 1));
        p = strchr(p + 1, '"') + 1;
        while (*p == ',') p++;
        char *tp = join(root, "Vectors");
        char *full = join(tp, name);
        size_t tl;
        unsigned char *token = read_file(full, &tl);
        expect_decrypt(d, token, tl, now, code_of(expect), name);
        free(token); free(full); free(tp); free(name); free(expect);
    }
    CHECK(singles >= 6, "manifest lists %d single tokens", singles);

    /* archive.jsonl: each line alone (a replay is only a replay within a batch), then as one batch. */
    archive a = read_archive(root, manifest);
    for (size_t i = 0; i < a.count; i++) {
        char what[64];
        snprintf(what, sizeof what, "archive line %zu", i + 1);
        expect_decrypt(d, a.tokens[i], a.lengths[i], now, a.expect[i] == AP_REPLAYED_TRANSACTION ? AP_OK : a.expect[i], what);
    }
    for (unsigned lanes = 1; lanes <= 3; lanes += 2) {
        ap_result **results = calloc(a.count, sizeof *results);
        CHECK(ap_decrypt_batch(d, (const uint8_t *const *)a.tokens, a.lengths, a.count, now, lanes, results) == AP_OK, "batch");
        for (size_t i = 0; i < a.count; i++) {
            CHECK(ap_result_code(results[i]) == a.expect[i], "batch (%u lanes) item %zu: %s, want %s", lanes, i,
                  ap_code_name(ap_result_code(results[i])), ap_code_name(a.expect[i]));
            if (a.expect[i] == AP_REPLAYED_TRANSACTION) {
                seen[AP_REPLAYED_TRANSACTION] = 1;
                CHECK(ap_result_field(results[i]) && strcmp(ap_result_field(results[i]), "header.transactionId") == 0, "replay field");
            }
            /* Replay keys: every verified and decrypted item has them, a judged replay too; others leave the buffers alone. */
            uint8_t tx[16], content[16];
            memset(tx, 0xA5, sizeof tx);
            memset(content, 0xA5, sizeof content);
            ap_code keys = ap_result_replay_keys(results[i], tx, content);
            if (a.expect[i] == AP_OK || a.expect[i] == AP_REPLAYED_TRANSACTION) {
                CHECK(keys == AP_OK, "item %zu: replay keys %s", i, ap_code_name(keys));
            } else {
                int untouched = 1;
                for (int k = 0; k < 16; k++) untouched &= tx[k] == 0xA5 && content[k] == 0xA5;
                CHECK(keys == AP_NO_REPLAY_KEYS && untouched, "item %zu (%s): replay keys %s", i, ap_code_name(a.expect[i]), ap_code_name(keys));
            }
            CHECK(ap_result_replay_keys(results[i], NULL, content) == AP_INVALID_ARGUMENT, "replay keys into NULL");
        }
        CHECK(ap_results_free(results, a.count) == AP_OK, "batch free");
        free(results);
    }
    test_batch_arrow(d, &a, now);

    /* One decryptor, four threads at once. */
    pthread_t threads[4];
    thread_job jobs[4];
    for (int i = 0; i < 4; i++) { jobs[i] = (thread_job){d, &a, now, 0}; pthread_create(&threads[i], NULL, thread_run, &jobs[i]); }
    for (int i = 0; i < 4; i++) { pthread_join(threads[i], NULL); CHECK(jobs[i].wrong == 0, "thread %d: %d wrong", i, jobs[i].wrong); }

    /* The other two merchant forms: identifier + key, and PKCS#12. */
    {
        char *kp = join(root, "Vectors/merchants/ec.key.pem"), *rp = join(root, "Vectors/trust/test-root.pem");
        char *tp = join(root, "Vectors/tokens/ec-3dsecure.json");
        size_t kl, rl, tl;
        unsigned char *key = read_file(kp, &kl), *rootPEM = read_file(rp, &rl), *token = read_file(tp, &tl);
        ap_config *config = NULL;
        ap_error error;
        ap_config_new(&config);
        ap_config_set_insecure_test_root_pem(config, rootPEM, rl, NULL);
        CHECK(ap_config_add_merchant_identifier(config, "merchant.com.example.vectors", key, kl, NULL, &error) == AP_OK, "identifier: %s", error.message);
        {
            /* mint-tokens' merchant as PKCS#12, with its own test root and first token. */
            char *pp = join(argv[3], "merchant.p12"), *mr = join(argv[3], "insecure-test-root.pem"), *mt = join(argv[3], "tokens.jsonl");
            size_t pl, ml, mtl;
            unsigned char *p12 = read_file(pp, &pl), *mroot = read_file(mr, &ml), *minted = read_file(mt, &mtl);
            CHECK(p12 && mroot && minted, "read %s", argv[3]);
            ap_config *other = NULL;
            ap_config_new(&other);
            ap_config_set_insecure_test_root_pem(other, mroot, ml, NULL);
            CHECK(ap_config_add_merchant_pkcs12(other, p12, pl, "wrong password", NULL, &error) == AP_INVALID_CONFIGURATION, "PKCS#12 wrong password");
            CHECK(ap_config_add_merchant_pkcs12(other, p12, pl, "insecure-test-password", NULL, &error) == AP_OK, "PKCS#12: %s", error.message);
            ap_decryptor *pd = NULL;
            CHECK(ap_decryptor_new(other, &pd, &error) == AP_OK, "PKCS#12 decryptor: %s", error.message);
            unsigned char *newline = minted ? memchr(minted, '\n', mtl) : NULL;
            if (newline) expect_decrypt(pd, minted, (size_t)(newline - minted), AP_REFERENCE_SIGNING_TIME, AP_OK, "PKCS#12 merchant");
            if (newline) test_payment_request_binding(pd, minted, (size_t)(newline - minted));
            ap_decryptor_free(pd);
            ap_config_free(other);
            free(p12); free(mroot); free(minted); free(pp); free(mr); free(mt);
        }
        ap_decryptor *id = NULL;
        CHECK(ap_decryptor_new(config, &id, &error) == AP_OK, "identifier decryptor: %s", error.message);
        expect_decrypt(id, token, tl, now, AP_OK, "identifier merchant");
        expect_decrypt(id, token, tl, now + 3600, AP_SIGNING_TIME_OUT_OF_RANGE, "an hour late");
        expect_decrypt(id, token, tl, AP_REFERENCE_SIGNING_TIME, AP_OK, "at signing time");
        CHECK(ap_decryptor_free(id) == AP_OK, "free");
        ap_config_free(config);
        free(key); free(rootPEM); free(token); free(kp); free(rp); free(tp);
    }

    test_apple_vectors(argv[2]);
    test_misuse(d, &a);

    /* A freed decryptor is an error code, not a crash. */
    CHECK(ap_decryptor_free(d) == AP_OK, "decryptor free");
    ap_result *r = NULL;
    CHECK(ap_decrypt(d, a.tokens[0], a.lengths[0], now, &r) == AP_INVALID_HANDLE && r == NULL, "freed decryptor");
    CHECK(ap_decryptor_free(d) == AP_INVALID_HANDLE, "decryptor double free");

    for (ap_code c = 0; c <= 10; c++) CHECK(seen[c], "code %s never seen", ap_code_name(c));
    CHECK(seen[AP_INVALID_PAYMENT_REQUEST], "code invalidPaymentRequest never seen");
    for (ap_code c = 100; c <= 102; c++) CHECK(seen[c], "code %s never seen", ap_code_name(c));
    for (size_t i = 0; i < a.count; i++) free(a.tokens[i]);
    free(a.tokens); free(a.lengths); free(a.expect); free(manifest); free(mp); free(nowText);

    printf("C ABI test (%s): %s, %d failure(s)\n", WIPE_CHECK ? "wipe check on" : "AddressSanitizer",
           failures ? "FAILED" : "passed", failures);
    return failures ? 1 : 0;
}
