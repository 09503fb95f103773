/* ap_decrypt_batch with AP_MULTIBUFFER_ON gives what AP_MULTIBUFFER_OFF gives, result for result (code,
 * message, field, transactionId, payment JSON, replay keys): on the bundled archive (every code) and on
 * mint-tokens tokens with broken signatures inside groups of eight, on one lane and two. Skipped (exit 0,
 * saying why) where crypto_mb cannot run: no library (APPLEPAY_CRYPTO_MB), no AVX-512 IFMA.
 * Usage: multibuffer_test PACKAGE_ROOT MINTED_DIR   (MINTED_DIR: made by mint-tokens) */
#define _GNU_SOURCE
#include "applepay.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int failures = 0;
#define CHECK(cond, ...) do { if (!(cond)) { failures++; fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

static unsigned char *read_file(const char *path, size_t *length) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *data = malloc((size_t)size + 1);
    *length = fread(data, 1, (size_t)size, f);
    data[*length] = 0;
    fclose(f);
    return data;
}

static char *join(const char *a, const char *b) {
    char *out = malloc(strlen(a) + strlen(b) + 2);
    sprintf(out, "%s/%s", a, b);
    return out;
}

typedef struct { unsigned char **tokens; size_t *lengths; size_t count; } lines;

/* Up to `limit` non-empty lines of a JSONL file. */
static lines read_lines(const char *path, size_t limit) {
    lines l = {calloc(limit, sizeof(unsigned char *)), calloc(limit, sizeof(size_t)), 0};
    size_t n;
    unsigned char *all = read_file(path, &n);
    CHECK(all != NULL, "read %s", path);
    if (!all) return l;
    for (unsigned char *line = all, *end; line < all + n && l.count < limit; line = end + 1) {
        end = memchr(line, '\n', (size_t)(all + n - line));
        if (!end) end = all + n;
        if (end == line) continue;
        l.lengths[l.count] = (size_t)(end - line);
        l.tokens[l.count] = malloc(l.lengths[l.count]);
        memcpy(l.tokens[l.count], line, l.lengths[l.count]);
        l.count++;
    }
    free(all);
    return l;
}

static void free_lines(lines *l) {
    for (size_t i = 0; i < l->count; i++) free(l->tokens[i]);
    free(l->tokens);
    free(l->lengths);
}

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static size_t base64_decode(const char *in, size_t length, unsigned char *out) {
    size_t n = 0;
    unsigned value = 0;
    int bits = 0;
    for (size_t i = 0; i < length && in[i] != '='; i++) {
        const char *p = strchr(alphabet, in[i]);
        if (!p || !*p) continue;
        value = (value << 6) | (unsigned)(p - alphabet);
        bits += 6;
        if (bits >= 8) { bits -= 8; out[n++] = (unsigned char)(value >> bits); }
    }
    return n;
}

static size_t base64_encode(const unsigned char *in, size_t length, char *out) {
    size_t n = 0;
    for (size_t i = 0; i < length; i += 3) {
        unsigned v = (unsigned)in[i] << 16 | (i + 1 < length ? (unsigned)in[i + 1] << 8 : 0) | (i + 2 < length ? in[i + 2] : 0);
        out[n++] = alphabet[v >> 18 & 63];
        out[n++] = alphabet[v >> 12 & 63];
        out[n++] = i + 1 < length ? alphabet[v >> 6 & 63] : '=';
        out[n++] = i + 2 < length ? alphabet[v & 63] : '=';
    }
    return n;
}

/* Flips bit 0 of the CMS byte `from_end` bytes before its end. 7: the last byte of s in the factory's
 * shape (the signature, then three end-of-contents pairs), so the signature stays strict DER with s in
 * range and crypto_mb's lane is the one that refuses it. */
static void break_signature(lines *l, size_t i, size_t from_end) {
    char *line = (char *)l->tokens[i];
    char *start = memmem(line, l->lengths[i], "\"signature\":\"", 13);
    CHECK(start != NULL, "line %zu has no signature", i);
    if (!start) return;
    start += 13;
    char *end = memchr(start, '"', l->lengths[i] - (size_t)(start - line));
    unsigned char *cms = malloc((size_t)(end - start));
    size_t n = base64_decode(start, (size_t)(end - start), cms);
    cms[n - from_end] ^= 0x01;
    char *encoded = malloc(n / 3 * 4 + 8);
    size_t m = base64_encode(cms, n, encoded);
    CHECK(m == (size_t)(end - start), "re-encoded signature of line %zu has another length", i);
    memcpy(start, encoded, m);
    free(cms);
    free(encoded);
}

/* A decryptor for the merchant `cert`/`key` files (PEM) of `dir` under the test root `root_pem`, or NULL
 * when `mode` cannot be set (AP_MULTIBUFFER_ON without crypto_mb): *why then says why. */
static ap_decryptor *decryptor(const char *dir, const char *files[][2], int merchants, const char *root_pem, uint32_t mode,
                               char *why) {
    ap_config *config = NULL;
    ap_error error;
    CHECK(ap_config_new(&config) == AP_OK, "ap_config_new");
    for (int i = 0; i < merchants; i++) {
        char *cp = join(dir, files[i][0]), *kp = join(dir, files[i][1]);
        size_t cl, kl;
        unsigned char *cert = read_file(cp, &cl), *key = read_file(kp, &kl);
        CHECK(cert && key, "read %s", cp);
        CHECK(ap_config_add_merchant_certificate(config, cert, cl, key, kl, NULL, NULL, &error) == AP_OK, "merchant %s: %s", cp, error.message);
        free(cert); free(key); free(cp); free(kp);
    }
    char *rp = join(dir, root_pem);
    size_t rl;
    unsigned char *root = read_file(rp, &rl);
    CHECK(root && ap_config_set_insecure_test_root_pem(config, root, rl, &error) == AP_OK, "test root %s", rp);
    free(root); free(rp);
    ap_decryptor *d = NULL;
    if (ap_config_set_multibuffer(config, mode, &error) != AP_OK) {
        snprintf(why, 256, "%s", error.message);
    } else {
        CHECK(ap_decryptor_new(config, &d, &error) == AP_OK && d, "ap_decryptor_new: %s", error.message);
    }
    ap_config_free(config);
    return d;
}

static int same_text(const char *a, const char *b) { return (!a && !b) || (a && b && strcmp(a, b) == 0); }

/* Both decryptors over the same tokens; every result compared. Returns the number of AP_OK results. */
static size_t compare(ap_decryptor *on, ap_decryptor *off, const lines *l, int64_t reference, unsigned lanes, const char *what) {
    ap_result **a = calloc(l->count, sizeof *a), **b = calloc(l->count, sizeof *b);
    const uint8_t *const *tokens = (const uint8_t *const *)l->tokens;
    CHECK(ap_decrypt_batch(on, tokens, l->lengths, l->count, reference, lanes, a) == AP_OK, "%s: batch on", what);
    CHECK(ap_decrypt_batch(off, tokens, l->lengths, l->count, reference, lanes, b) == AP_OK, "%s: batch off", what);
    size_t ok = 0;
    for (size_t i = 0; i < l->count; i++) {
        ap_code code = ap_result_code(a[i]);
        ok += code == AP_OK;
        CHECK(code == ap_result_code(b[i]), "%s, %u lane(s), item %zu: on %s, off %s", what, lanes, i, ap_code_name(code),
              ap_code_name(ap_result_code(b[i])));
        CHECK(same_text(ap_result_message(a[i]), ap_result_message(b[i])), "%s item %zu: messages differ", what, i);
        CHECK(same_text(ap_result_field(a[i]), ap_result_field(b[i])), "%s item %zu: fields differ", what, i);
        CHECK(same_text(ap_result_transaction_id(a[i]), ap_result_transaction_id(b[i])), "%s item %zu: transaction ids differ", what, i);
        size_t la = 0, lb = 0;
        const uint8_t *ja = ap_result_payment_json(a[i], &la), *jb = ap_result_payment_json(b[i], &lb);
        CHECK((!ja && !jb) || (ja && jb && la == lb && memcmp(ja, jb, la) == 0), "%s item %zu: payment JSON differs", what, i);
        uint8_t ta[16] = {0}, ca[16] = {0}, tb[16] = {0}, cb[16] = {0};
        ap_code ka = ap_result_replay_keys(a[i], ta, ca), kb = ap_result_replay_keys(b[i], tb, cb);
        CHECK(ka == kb && memcmp(ta, tb, 16) == 0 && memcmp(ca, cb, 16) == 0, "%s item %zu: replay keys differ", what, i);
    }
    ap_results_free(a, l->count);
    ap_results_free(b, l->count);
    free(a);
    free(b);
    return ok;
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: %s PACKAGE_ROOT MINTED_DIR\n", argv[0]); return 2; }
    char why[256] = "";
    char *vectors = join(argv[1], "Vectors");
    const char *bundled[2][2] = {{"merchants/ec.cert.pem", "merchants/ec.key.pem"}, {"merchants/rsa.cert.pem", "merchants/rsa.key.pem"}};
    ap_decryptor *on = decryptor(vectors, bundled, 2, "trust/test-root.pem", AP_MULTIBUFFER_ON, why);
    if (!on) {
        printf("C multi-buffer test: skipped, AP_MULTIBUFFER_ON cannot run here: %s\n", why);
        free(vectors);
        return failures ? 1 : 0;
    }
    ap_decryptor *off = decryptor(vectors, bundled, 2, "trust/test-root.pem", AP_MULTIBUFFER_OFF, why);

    /* The bundled archive (every code, replays, RSA_v1 among EC_v1) at the manifest's reference time. */
    char *archive_path = join(vectors, "archive.jsonl");
    lines archive = read_lines(archive_path, 64);
    size_t ml;
    char *manifest_path = join(vectors, "manifest.json");
    char *manifest = (char *)read_file(manifest_path, &ml);
    const char *now_text = manifest ? strstr(manifest, "\"now\":\"") : NULL;
    CHECK(now_text != NULL, "manifest has now");
    struct tm tm = {0};
    if (now_text) strptime(now_text + 7, "%Y-%m-%dT%H:%M:%SZ", &tm);
    int64_t now = (int64_t)timegm(&tm);
    for (unsigned lanes = 1; lanes <= 2; lanes++) compare(on, off, &archive, now, lanes, "Vectors/archive.jsonl");
    ap_decryptor_free(on);
    ap_decryptor_free(off);

    /* mint-tokens tokens: 4,000, with a broken signature at a different lane of every eleventh group of
     * eight (the last byte of s, or 40 bytes from the end of the CMS). */
    const char *minted[1][2] = {{"merchant.cert.pem", "merchant.key.pem"}};
    on = decryptor(argv[2], minted, 1, "insecure-test-root.pem", AP_MULTIBUFFER_ON, why);
    off = decryptor(argv[2], minted, 1, "insecure-test-root.pem", AP_MULTIBUFFER_OFF, why);
    char *tokens_path = join(argv[2], "tokens.jsonl");
    lines tokens = read_lines(tokens_path, 4000);
    CHECK(tokens.count == 4000, "%s has %zu tokens", tokens_path, tokens.count);
    size_t broken = 0;
    for (size_t group = 0; group * 8 + 8 <= tokens.count; group += 11) {
        break_signature(&tokens, group * 8 + group % 8, group % 2 ? 40 : 7);
        broken++;
    }
    for (unsigned lanes = 1; lanes <= 2; lanes++) {
        size_t ok = compare(on, off, &tokens, AP_REFERENCE_SIGNING_TIME, lanes, "mint-tokens");
        CHECK(ok == tokens.count - broken, "%zu of %zu decrypted, %zu signatures broken", ok, tokens.count, broken);
    }
    ap_decryptor_free(on);
    ap_decryptor_free(off);

    free_lines(&archive);
    free_lines(&tokens);
    free(archive_path); free(manifest_path); free(manifest); free(tokens_path); free(vectors);
    printf("C multi-buffer test (AP_MULTIBUFFER_ON against OFF): %s, %d failure(s)\n", failures ? "FAILED" : "passed", failures);
    return failures ? 1 : 0;
}
