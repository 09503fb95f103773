/* Handles are never reused: for each handle type, free one, allocate another of the same type (which,
 * in the plain build, is seen to get memory the freed one had), and check the stale handle is refused;
 * forged and foreign values are refused; and threads that free and use the same handles at once.
 * Usage: handles_test PACKAGE_ROOT. Plain build: malloc and free are wrapped to see memory reuse.
 * Under AddressSanitizer run with ASAN_OPTIONS=quarantine_size_mb=0 so freed memory is reused at once. */
#define _GNU_SOURCE
#include "applepay.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;
#define CHECK(cond, ...) do { if (!(cond)) { failures++; fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

#if defined(__SANITIZE_ADDRESS__)
#define SEE_REUSE 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SEE_REUSE 0
#endif
#endif
#ifndef SEE_REUSE
#define SEE_REUSE 1
#endif
#define REUSE_NOTE (SEE_REUSE ? "" : "; under ASan reuse is not observed: every round counts, quarantine_size_mb=0 lets it happen")

/* ---- reuse observer: blocks freed while `collecting_frees`, and whether a later malloc returned one ---- */
#if SEE_REUSE
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);
enum { MAX_FREED = 1 << 16 };
static void *freed[MAX_FREED];
static size_t freed_count;
static int collecting_frees, watching_mallocs, reused;

static void *seen_alloc(void *p) {
    if (watching_mallocs && p)
        for (size_t i = 0; i < freed_count; i++) if (freed[i] == p) { reused = 1; break; }
    return p;
}

/* Every allocator entry: Swift allocates over-aligned objects through posix_memalign / aligned_alloc. */
void *malloc(size_t size) { return seen_alloc(__libc_malloc(size)); }
void *calloc(size_t n, size_t size) { return seen_alloc(__libc_calloc(n, size)); }
void *realloc(void *p, size_t size) { return seen_alloc(__libc_realloc(p, size)); }
void *memalign(size_t alignment, size_t size) { return seen_alloc(__libc_memalign(alignment, size)); }
void *aligned_alloc(size_t alignment, size_t size) { return seen_alloc(__libc_memalign(alignment, size)); }
int posix_memalign(void **out, size_t alignment, size_t size) {
    void *p = seen_alloc(__libc_memalign(alignment, size));
    if (!p) return 12; /* ENOMEM */
    *out = p;
    return 0;
}

void free(void *p) {
    if (collecting_frees && p && freed_count < MAX_FREED) freed[freed_count++] = p;
    __libc_free(p);
}

/* Collecting is only switched on around single-threaded calls. */
static void begin_free(void) { freed_count = 0; reused = 0; collecting_frees = 1; }
static void begin_more_free(void) { collecting_frees = 1; } /* adds to the blocks collected before */
static void end_free(void) { collecting_frees = 0; }
static void begin_alloc(void) { reused = 0; watching_mallocs = 1; }
static int end_alloc(void) { watching_mallocs = 0; return reused; }
#else
static void begin_free(void) {}
static void begin_more_free(void) {}
static void end_free(void) {}
static void begin_alloc(void) {}
static int end_alloc(void) { return 1; } /* ASan without quarantine: reuse is not observable here */
#endif

static unsigned char *read_file(const char *root, const char *name, size_t *length) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", root, name);
    FILE *f = fopen(path, "rb");
    if (!f) { fprintf(stderr, "cannot read %s\n", path); exit(2); }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *bytes = malloc((size_t)n + 1);
    if (fread(bytes, 1, (size_t)n, f) != (size_t)n) exit(2);
    fclose(f);
    *length = (size_t)n;
    return bytes;
}

static size_t key_length, root_length, token_length;
static unsigned char *key, *root_pem, *token;

static ap_config *make_config(void) {
    ap_config *config = NULL;
    CHECK(ap_config_new(&config) == AP_OK, "ap_config_new");
    CHECK(ap_config_add_merchant_identifier(config, "merchant.com.example.vectors", key, key_length, NULL, NULL) == AP_OK, "merchant");
    CHECK(ap_config_set_insecure_test_root_pem(config, root_pem, root_length, NULL) == AP_OK, "test root");
    return config;
}

static ap_decryptor *make_decryptor(void) {
    ap_config *config = make_config();
    ap_decryptor *d = NULL;
    CHECK(ap_decryptor_new(config, &d, NULL) == AP_OK, "ap_decryptor_new");
    ap_config_free(config);
    return d;
}

enum { ROUNDS_WANTED = 50, ROUNDS_MAX = 400 };

/* Rounds of: make A, free A (noting its memory), make B (noting whether it got that memory), then
 * the stale A must be refused by every call and B must be untouched. */
static void stale_results(ap_decryptor *d) {
    int reuse_rounds = 0, refused = 0, rounds = 0;
    for (; rounds < ROUNDS_MAX && reuse_rounds < ROUNDS_WANTED; rounds++) {
        ap_result *a = NULL, *b = NULL;
        CHECK(ap_decrypt(d, token, token_length, AP_REFERENCE_SIGNING_TIME, &a) == AP_OK, "decrypt a");
        begin_free();
        CHECK(ap_result_free(a) == AP_OK, "free a");
        end_free();
        begin_alloc();
        CHECK(ap_decrypt(d, token, token_length, AP_REFERENCE_SIGNING_TIME, &b) == AP_OK, "decrypt b");
        int reused_now = end_alloc();
        size_t length = 99;
        int ok = ap_result_code(a) == AP_INVALID_HANDLE && ap_result_message(a) == NULL && ap_result_field(a) == NULL &&
                 ap_result_transaction_id(a) == NULL && ap_result_payment_json(a, &length) == NULL && length == 0 &&
                 ap_result_free(a) == AP_INVALID_HANDLE;
        CHECK(ap_result_code(b) == AP_OK, "round %d: the live result was disturbed by calls on the stale one", rounds);
        CHECK(ap_result_free(b) == AP_OK, "round %d: free b", rounds);
        if (reused_now) { reuse_rounds++; refused += ok; }
        CHECK(ok, "round %d: a freed ap_result answered as live (its memory %s reused)", rounds, reused_now ? "was" : "was not");
    }
    printf("ap_result: stale handle refused in %d of %d rounds in which its memory was reused (%d rounds)%s\n",
           refused, reuse_rounds, rounds, REUSE_NOTE);
    CHECK(reuse_rounds == ROUNDS_WANTED && refused == ROUNDS_WANTED, "ap_result: %d of %d", refused, reuse_rounds);
}

/* Decryptors: a new decryptor's box rarely lands on the one just freed (making the engine allocates
 * first), but over a process's life it lands on earlier ones (on the old code, from the 23rd of a run
 * like this one on, most new decryptors did). So each round makes a decryptor, noting whether it got
 * memory any earlier decryptor freed, checks that every decryptor handle freed so far is refused,
 * then frees it. */
static void stale_decryptors(void) {
    int reuse_rounds = 0, refused = 0, rounds = 0;
    ap_decryptor *stale[ROUNDS_MAX];
    ap_config *config = make_config();
    begin_free();
    end_free();
    for (; rounds < ROUNDS_MAX && reuse_rounds < ROUNDS_WANTED; rounds++) {
        begin_alloc();
        ap_decryptor *d = NULL;
        CHECK(ap_decryptor_new(config, &d, NULL) == AP_OK, "decryptor");
        int reused_now = end_alloc() && rounds > 0;
        int ok = 1;
        for (int i = 0; i < rounds; i++) {
            ap_result *r = (ap_result *)1;
            ap_result *list[1] = {0};
            const uint8_t *tokens[1] = {token};
            int refused_now = ap_decrypt(stale[i], token, token_length, AP_REFERENCE_SIGNING_TIME, &r) == AP_INVALID_HANDLE && r == NULL &&
                              ap_decrypt_batch(stale[i], tokens, &token_length, 1, AP_REFERENCE_SIGNING_TIME, 1, list) == AP_INVALID_HANDLE &&
                              list[0] == NULL && ap_decryptor_free(stale[i]) == AP_INVALID_HANDLE;
            if (r) ap_result_free(r);
            ap_results_free(list, 1);
            CHECK(refused_now, "round %d: the decryptor freed in round %d answered as live", rounds, i);
            ok &= refused_now;
        }
        /* A token that fails at once shows d is live without the first decryption's set-up cost. */
        ap_result *r = NULL;
        CHECK(ap_decrypt(d, (const uint8_t *)"{}", 2, AP_REFERENCE_SIGNING_TIME, &r) == AP_MALFORMED_TOKEN, "round %d: the live decryptor was freed", rounds);
        ap_result_free(r);
        begin_more_free();
        CHECK(ap_decryptor_free(d) == AP_OK, "round %d: free", rounds);
        end_free();
        stale[rounds] = d;
        if (reused_now) { reuse_rounds++; refused += ok; }
    }
    ap_config_free(config);
    printf("ap_decryptor: every stale handle refused in %d of %d rounds in which freed decryptor memory was reused (%d rounds)%s\n",
           refused, reuse_rounds, rounds, REUSE_NOTE);
    CHECK(reuse_rounds == ROUNDS_WANTED && refused == ROUNDS_WANTED, "ap_decryptor: %d of %d", refused, reuse_rounds);
}

static void stale_configs(void) {
    int reuse_rounds = 0, refused = 0, rounds = 0;
    for (; rounds < ROUNDS_MAX && reuse_rounds < ROUNDS_WANTED; rounds++) {
        /* An empty config: one with a merchant frees so many blocks of the box's size that the next box
           rarely lands on the freed one, and this test is about the rounds where it does. */
        ap_config *a = NULL;
        CHECK(ap_config_new(&a) == AP_OK && ap_config_set_signing_time_window(a, 30, NULL) == AP_OK, "config a");
        begin_free();
        CHECK(ap_config_free(a) == AP_OK, "free a");
        end_free();
        begin_alloc();
        ap_config *b = NULL;
        CHECK(ap_config_new(&b) == AP_OK, "new b");
        int reused_now = end_alloc();
        ap_decryptor *d = (ap_decryptor *)1;
        int ok = ap_config_set_signing_time_window(a, 60, NULL) == AP_INVALID_HANDLE &&
                 ap_config_add_merchant_identifier(a, "merchant.com.example.vectors", key, key_length, NULL, NULL) == AP_INVALID_HANDLE &&
                 ap_decryptor_new(a, &d, NULL) == AP_INVALID_HANDLE && d == NULL && ap_config_free(a) == AP_INVALID_HANDLE;
        if (d) ap_decryptor_free(d);
        /* b must still be empty (nothing added through a) and live. */
        d = (ap_decryptor *)1;
        CHECK(ap_decryptor_new(b, &d, NULL) == AP_INVALID_CONFIGURATION, "round %d: a merchant reached the new config", rounds);
        if (d) ap_decryptor_free(d);
        CHECK(ap_config_free(b) == AP_OK, "round %d: free b", rounds);
        if (reused_now) { reuse_rounds++; refused += ok; }
        CHECK(ok, "round %d: a freed ap_config answered as live (its memory %s reused)", rounds, reused_now ? "was" : "was not");
    }
    printf("ap_config: stale handle refused in %d of %d rounds in which its memory was reused (%d rounds)%s\n",
           refused, reuse_rounds, rounds, REUSE_NOTE);
    CHECK(reuse_rounds == ROUNDS_WANTED && refused == ROUNDS_WANTED, "ap_config: %d of %d", refused, reuse_rounds);
}

/* Forged values and handles of another type are refused. */
static void forged(ap_decryptor *d) {
    ap_config *config = NULL;
    ap_config_new(&config);
    ap_result *r = NULL;
    CHECK(ap_decrypt(d, token, token_length, AP_REFERENCE_SIGNING_TIME, &r) == AP_OK, "decrypt");
    CHECK(ap_result_code((ap_result *)d) == AP_INVALID_HANDLE, "a decryptor used as a result");
    CHECK(ap_result_code((ap_result *)config) == AP_INVALID_HANDLE, "a config used as a result");
    CHECK(ap_config_free((ap_config *)d) == AP_INVALID_HANDLE, "a decryptor freed as a config");
    CHECK(ap_decryptor_free((ap_decryptor *)r) == AP_INVALID_HANDLE, "a result freed as a decryptor");
    CHECK(ap_config_set_signing_time_window((ap_config *)r, 1, NULL) == AP_INVALID_HANDLE, "a result used as a config");
    uintptr_t forgeries[] = {1, 2, 3, 0xdeadbeef, UINTPTR_MAX, (uintptr_t)r + 1, (uintptr_t)r - 1, (uintptr_t)&failures};
    for (size_t i = 0; i < sizeof forgeries / sizeof *forgeries; i++) {
        if ((void *)forgeries[i] == (void *)r || (void *)forgeries[i] == (void *)d || (void *)forgeries[i] == (void *)config) continue;
        CHECK(ap_result_code((ap_result *)forgeries[i]) == AP_INVALID_HANDLE, "forged result %#zx", (size_t)forgeries[i]);
        CHECK(ap_result_free((ap_result *)forgeries[i]) == AP_INVALID_HANDLE, "forged result free %#zx", (size_t)forgeries[i]);
    }
    CHECK(ap_result_code(r) == AP_OK, "the live result survived the forgeries");
    ap_result_free(r);
    ap_config_free(config);
}

/* ---- threads that create, use and free the same handles at once ---- */
enum { THREADS = 4, SLOTS = 8, OPS = 3000, DEAD = 64 };
static ap_result *slots[SLOTS];
static ap_decryptor *shared;
static long created, freed_ok;

typedef struct { unsigned seed; int wrong; ap_result *dead[DEAD]; int dead_count; } worker;

static void *work(void *arg) {
    worker *w = arg;
    for (int op = 0; op < OPS; op++) {
        int slot = (int)(rand_r(&w->seed) % SLOTS);
        switch (rand_r(&w->seed) % 4) {
        case 0: { /* create into a slot; free what was there (someone else may have freed it already) */
            ap_result *r = NULL;
            if (ap_decrypt(shared, token, token_length, AP_REFERENCE_SIGNING_TIME, &r) != AP_OK) { w->wrong++; break; }
            __atomic_add_fetch(&created, 1, __ATOMIC_RELAXED);
            ap_result *old = __atomic_exchange_n(&slots[slot], r, __ATOMIC_ACQ_REL);
            if (old && ap_result_free(old) == AP_OK) {
                __atomic_add_fetch(&freed_ok, 1, __ATOMIC_RELAXED);
                if (w->dead_count < DEAD) w->dead[w->dead_count++] = old;
            }
            break;
        }
        case 1: { /* use whatever is in a slot: live or freed a moment ago, never anything else */
            ap_result *r = __atomic_load_n(&slots[slot], __ATOMIC_ACQUIRE);
            ap_code c = ap_result_code(r);
            size_t length;
            (void)ap_result_payment_json(r, &length);
            if (c != AP_OK && c != AP_INVALID_HANDLE) w->wrong++;
            break;
        }
        case 2: { /* free whatever is in a slot, leaving the stale handle there for the others */
            ap_result *r = __atomic_load_n(&slots[slot], __ATOMIC_ACQUIRE);
            ap_code c = ap_result_free(r);
            if (c == AP_OK) {
                __atomic_add_fetch(&freed_ok, 1, __ATOMIC_RELAXED);
                if (w->dead_count < DEAD) w->dead[w->dead_count++] = r;
            } else if (c != AP_INVALID_HANDLE) {
                w->wrong++;
            }
            break;
        }
        default: /* a handle this thread freed must stay dead whatever was allocated since */
            if (w->dead_count > 0) {
                ap_result *r = w->dead[rand_r(&w->seed) % (unsigned)w->dead_count];
                if (ap_result_code(r) != AP_INVALID_HANDLE || ap_result_free(r) != AP_INVALID_HANDLE) w->wrong++;
            }
        }
    }
    return NULL;
}

static void threads(void) {
    shared = make_decryptor();
    pthread_t t[THREADS];
    worker w[THREADS];
    for (int i = 0; i < THREADS; i++) {
        memset(&w[i], 0, sizeof w[i]);
        w[i].seed = 1234u + (unsigned)i;
        pthread_create(&t[i], NULL, work, &w[i]);
    }
    int wrong = 0;
    for (int i = 0; i < THREADS; i++) { pthread_join(t[i], NULL); wrong += w[i].wrong; }
    for (int i = 0; i < SLOTS; i++) if (slots[i] && ap_result_free(slots[i]) == AP_OK) freed_ok++;
    printf("threads: %ld results created, %ld freed exactly once, %d wrong answers\n", created, freed_ok, wrong);
    CHECK(wrong == 0, "%d calls answered wrongly under concurrent free and use", wrong);
    CHECK(freed_ok == created, "%ld results created but %ld frees succeeded", created, freed_ok);
    ap_decryptor_free(shared);
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: %s PACKAGE_ROOT\n", argv[0]); return 2; }
    key = read_file(argv[1], "Vectors/merchants/ec.key.pem", &key_length);
    root_pem = read_file(argv[1], "Vectors/trust/test-root.pem", &root_length);
    token = read_file(argv[1], "Vectors/tokens/ec-3dsecure.json", &token_length);
    ap_decryptor *d = make_decryptor();
    stale_results(d);
    stale_decryptors();
    stale_configs();
    forged(d);
    ap_decryptor_free(d);
    threads();
    free(key); free(root_pem); free(token);
    printf("C handle test (%s): %s, %d failure(s)\n", SEE_REUSE ? "memory reuse observed through malloc/free" : "AddressSanitizer",
           failures ? "FAILED" : "passed", failures);
    return failures ? 1 : 0;
}
