/* bench.c: the C side of Benchmarks/jvm/run.sh. The C ABI from C on the tokens of a `mint-tokens` folder:
 * ap_decrypt one token at a time (with the payment JSON read, as a caller would), ap_decrypt_batch over all of
 * them, and ap_decrypt of a token rejected at once ("{}": the per-call floor). Prints one line a measurement:
 * "c MODE TOKENS WALL_SECONDS CPU_SECONDS". Usage: bench MINTED_DIR ROUNDS LANES */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "applepay.h"

static double clock_of(clockid_t id) {
    struct timespec t;
    clock_gettime(id, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}
static double now(void) { return clock_of(CLOCK_MONOTONIC); }
/* CPU time: the calling thread's for the single-token loops, the process's (every lane) for the batch. */
static double thread_cpu(void) { return clock_of(CLOCK_THREAD_CPUTIME_ID); }
static double process_cpu(void) { return clock_of(CLOCK_PROCESS_CPUTIME_ID); }

int main(int argc, char **argv) {
    if (argc != 4) return fprintf(stderr, "usage: bench MINTED_DIR ROUNDS LANES\n"), 2;
    int rounds = atoi(argv[2]);
    unsigned lanes = (unsigned)atoi(argv[3]);
    char path[4096];
    snprintf(path, sizeof path, "%s/tokens.jsonl", argv[1]);
    FILE *f = fopen(path, "rb");
    if (!f) return perror(path), 1;
    size_t capacity = 1024, count = 0;
    uint8_t **tokens = malloc(capacity * sizeof *tokens);
    size_t *lengths = malloc(capacity * sizeof *lengths);
    char *line = NULL;
    size_t line_capacity = 0;
    ssize_t n;
    while ((n = getline(&line, &line_capacity, f)) > 0) {
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) n--;
        if (n == 0) continue;
        if (count == capacity) {
            capacity *= 2;
            tokens = realloc(tokens, capacity * sizeof *tokens);
            lengths = realloc(lengths, capacity * sizeof *lengths);
        }
        tokens[count] = malloc((size_t)n);
        memcpy(tokens[count], line, (size_t)n);
        lengths[count++] = (size_t)n;
    }
    fclose(f);
    ap_config *config;
    ap_decryptor *decryptor;
    ap_error error;
    char spec[8192];
    snprintf(spec, sizeof spec, "cert=%s/merchant.cert.pem,key=%s/merchant.key.pem", argv[1], argv[1]);
    snprintf(path, sizeof path, "%s/insecure-test-root.pem", argv[1]);
    FILE *r = fopen(path, "rb");
    static uint8_t pem[65536];
    size_t pem_length = r ? fread(pem, 1, sizeof pem, r) : 0;
    if (r) fclose(r);
    if (ap_config_new(&config) || ap_config_add_merchant_spec(config, spec, &error) ||
        ap_config_set_insecure_test_root_pem(config, pem, pem_length, &error) ||
        ap_decryptor_new(config, &decryptor, &error)) {
        return fprintf(stderr, "set-up: %s\n", error.message), 1;
    }
    ap_config_free(config);
    ap_result **results = malloc(count * sizeof *results);
    const uint8_t floor_token[] = "{}";
    for (int round = -1; round < rounds; round++) {  /* round -1 warms up */
        double start = now(), cpu = thread_cpu();
        for (size_t i = 0; i < count; i++) {
            ap_result *result;
            ap_code code = ap_decrypt(decryptor, tokens[i], lengths[i], AP_REFERENCE_SIGNING_TIME, &result);
            size_t json_length;
            if (code != AP_OK || !ap_result_payment_json(result, &json_length)) {
                return fprintf(stderr, "token %zu: %s\n", i, ap_code_name(code)), 1;
            }
            ap_result_free(result);
        }
        double single = now() - start, single_cpu = thread_cpu() - cpu;
        start = now(), cpu = process_cpu();
        if (ap_decrypt_batch(decryptor, (const uint8_t *const *)tokens, lengths, count, AP_REFERENCE_SIGNING_TIME,
                             lanes, results) != AP_OK) {
            return fprintf(stderr, "batch failed\n"), 1;
        }
        for (size_t i = 0; i < count; i++) {
            if (ap_result_code(results[i]) != AP_OK) return fprintf(stderr, "batch token %zu failed\n", i), 1;
        }
        ap_results_free(results, count);
        double batch = now() - start, batch_cpu = process_cpu() - cpu;
        size_t floor_calls = 20 * count;
        start = now(), cpu = thread_cpu();
        for (size_t i = 0; i < floor_calls; i++) {
            ap_result *result;
            ap_decrypt(decryptor, floor_token, 2, AP_REFERENCE_SIGNING_TIME, &result);
            ap_result_free(result);
        }
        double floor = now() - start, floor_cpu = thread_cpu() - cpu;
        if (round >= 0) {
            printf("c single %zu %.6f %.6f\nc batch %zu %.6f %.6f\nc floor %zu %.6f %.6f\n", count, single, single_cpu,
                   count, batch, batch_cpu, floor_calls, floor, floor_cpu);
        }
    }
    ap_decryptor_free(decryptor);
    return 0;
}
