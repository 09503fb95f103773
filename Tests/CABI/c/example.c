// Decrypts one bundled test token through libapplepay.so (the README and the C ABI article quote it).
#include <stdio.h>
#include <stdlib.h>
#include "applepay.h"

static unsigned char *slurp(const char *path, size_t *length) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *length = (size_t)ftell(f);
    rewind(f);
    unsigned char *bytes = malloc(*length);
    *length = fread(bytes, 1, *length, f);
    fclose(f);
    return bytes;
}

int main(void) {
    size_t cert_length, key_length, root_length, token_length;
    unsigned char *cert = slurp("Vectors/merchants/ec.cert.pem", &cert_length);
    unsigned char *key = slurp("Vectors/merchants/ec.key.pem", &key_length);
    unsigned char *root = slurp("Vectors/trust/test-root.pem", &root_length);
    unsigned char *token = slurp("Vectors/tokens/ec-3dsecure.json", &token_length);
    ap_config *config;
    ap_decryptor *decryptor;
    ap_error error;
    if (ap_config_new(&config) != AP_OK
        || ap_config_add_merchant_certificate(config, cert, cert_length, key, key_length, NULL, NULL, &error) != AP_OK
        || ap_config_set_insecure_test_root_pem(config, root, root_length, &error) != AP_OK  /* tests only */
        || ap_decryptor_new(config, &decryptor, &error) != AP_OK) {
        fprintf(stderr, "configuration: %s\n", error.message);
        return 2;
    }
    ap_config_free(config);

    ap_result *result;
    ap_code code = ap_decrypt(decryptor, token, token_length, 1772366460 /* 2026-03-01T12:01:00Z */, &result);
    printf("%s %s\n", ap_code_name(code), ap_result_transaction_id(result));
    if (code == AP_OK) printf("%s\n", (const char *)ap_result_payment_json(result, NULL));
    ap_result_free(result);  /* wipes the payment JSON */

    /* A wrong call is an error code, never a crash: */
    printf("%s\n", ap_code_name(ap_decrypt(NULL, token, token_length, AP_REFERENCE_NOW, &result)));
    ap_decryptor_free(decryptor);
    free(cert); free(key); free(root); free(token);
    return code == AP_OK ? 0 : 1;
}
