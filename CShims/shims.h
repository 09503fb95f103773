/* CShims: the OpenSSL 3 libcrypto and libsodium surface the core needs, plus static inline
 * helpers for what Swift cannot import (function-like macros, variadic calls, OSSL_PARAM arrays). */
#ifndef CSHIMS_H
#define CSHIMS_H

#define OPENSSL_API_COMPAT 30000
#define OPENSSL_NO_DEPRECATED 1

#include <openssl/bio.h>
#include <openssl/core_names.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/param_build.h>
#include <openssl/params.h>
#include <openssl/pem.h>
#include <openssl/pkcs12.h>
#include <openssl/provider.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>
#include <sodium.h>
/* PKCS#11 for merchant keys in a token (ApplePayCrypto/PKCS11*.swift): declarations and call helpers. */
#include "pkcs11.h"

/* --- STACK_OF(X509): the sk_X509_* names are macros. --- */
static inline STACK_OF(X509) *CShims_sk_X509_new_null(void) { return sk_X509_new_null(); }
static inline int CShims_sk_X509_push(STACK_OF(X509) *sk, X509 *x) { return sk_X509_push(sk, x); }
static inline int CShims_sk_X509_num(const STACK_OF(X509) *sk) { return sk_X509_num(sk); }
static inline X509 *CShims_sk_X509_value(const STACK_OF(X509) *sk, int i) { return sk_X509_value(sk, i); }
/* Frees the stack only; the certificates stay owned by their Swift wrappers. */
static inline void CShims_sk_X509_free(STACK_OF(X509) *sk) { sk_X509_free(sk); }
/* Frees the stack and every certificate in it (stacks handed to us by PKCS12_parse). */
static inline void CShims_sk_X509_pop_free(STACK_OF(X509) *sk) { sk_X509_pop_free(sk, X509_free); }

static inline void CShims_OPENSSL_free(void *p) { OPENSSL_free(p); }

/* --- Key generation: EVP_EC_gen / EVP_RSA_gen are macros over a variadic call. --- */
static inline EVP_PKEY *CShims_EVP_EC_gen(const char *curve) { return EVP_EC_gen(curve); }
static inline EVP_PKEY *CShims_EVP_RSA_gen(unsigned int bits) { return EVP_RSA_gen(bits); }

/* --- Import an uncompressed P-256 public point (65 bytes) as an EVP_PKEY.
 * The OSSL_PARAM array lives on this stack frame for exactly the duration of the call.
 * `ctx` must come from EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL); it is (re)initialised here.
 * OpenSSL checks that the point lies on the curve while decoding it. --- */
static inline EVP_PKEY *CShims_EVP_PKEY_fromP256Point(EVP_PKEY_CTX *ctx, const unsigned char *point, size_t len) {
    EVP_PKEY *pkey = NULL;
    OSSL_PARAM params[3];
    params[0] = OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, (char *)"prime256v1", 0);
    params[1] = OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, (void *)point, len);
    params[2] = OSSL_PARAM_construct_end();
    if (EVP_PKEY_fromdata_init(ctx) <= 0) return NULL;
    if (EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params) <= 0) return NULL;
    return pkey;
}

/* --- Deprecated EC calls the fixed-key P-256 path needs (ApplePayCrypto/FixedKeyP256.swift says why,
 * with figures; the multi-buffer verification sets crypto_mb's Jacobian u1·G with the third, which
 * skips a field inversion per lane: 3.2 µs against 4.1 µs for crypto_mb's affine output, CryptoMB.swift). OPENSSL_NO_DEPRECATED hides their declarations; libcrypto 3 still exports them, with
 * these exact prototypes from <openssl/ec.h>. Declared here, once, so nothing else can reach them. --- */
int EC_GROUP_precompute_mult(EC_GROUP *group, BN_CTX *ctx);
int EC_POINT_get_Jprojective_coordinates_GFp(const EC_GROUP *group, const EC_POINT *p, BIGNUM *x, BIGNUM *y, BIGNUM *z, BN_CTX *ctx);
int EC_POINT_set_Jprojective_coordinates_GFp(const EC_GROUP *group, EC_POINT *p, const BIGNUM *x, const BIGNUM *y, const BIGNUM *z, BN_CTX *ctx);

/* OpenSSL's one-time set-up as a PKCS#11 module built on OpenSSL (SoftHSM2) does it at C_Initialize:
 * configuration, all ciphers and digests (ApplePayCrypto/OpenSSLErrors.swift says why). Not the built-in
 * engines: loading them leaks (LeakSanitizer in the fuzzers), and nothing here uses an engine. */
static inline int CShims_initOpenSSL(void) {
    return OPENSSL_init_crypto(OPENSSL_INIT_LOAD_CONFIG | OPENSSL_INIT_ADD_ALL_CIPHERS | OPENSSL_INIT_ADD_ALL_DIGESTS, NULL);
}

/* --- OAEP decoding of a block the raw RSA operation gave (a PKCS#11 token whose module implements
 * OAEP with SHA-1 only: ApplePayCrypto/RSAOAEPDecoding.swift). OpenSSL's own constant-time decoder,
 * the one its RSA-OAEP decryption uses; deprecated in 3.0 with the rest of the RSA_padding_* calls,
 * hidden by OPENSSL_NO_DEPRECATED, still exported with this prototype from <openssl/rsa.h>. --- */
int RSA_padding_check_PKCS1_OAEP_mgf1(unsigned char *to, int tlen, const unsigned char *from, int flen, int num,
                                      const unsigned char *param, int plen, const EVP_MD *md, const EVP_MD *mgf1md);

/* --- SHA-256 below the EVP layer (ApplePayCrypto/SHA256.swift says why, with figures): in OpenSSL 3.0
 * every EVP_DigestInit_ex2 frees and allocates the provider's context, one heap allocation per digest
 * (four per token). The same assembly, on a caller-owned state. Deprecated in 3.0, hidden by
 * OPENSSL_NO_DEPRECATED, still exported; the layout is <openssl/sha.h>'s SHA256_CTX (unchanged since
 * 0.9.8), declared under its own name so nothing else can reach the deprecated API. --- */
typedef struct CShims_SHA256State {
    unsigned int h[8];
    unsigned int Nl, Nh;
    unsigned int data[16];
    unsigned int num, md_len;
} CShims_SHA256State;
int SHA256_Init(CShims_SHA256State *c);
int SHA256_Update(CShims_SHA256State *c, const void *data, size_t len);
int SHA256_Final(unsigned char *md, CShims_SHA256State *c);

/* --- A P-256 private key from its scalar (32 bytes, big-endian) and public point (65 bytes): the
 * reference EVP ECDH path for tests that start from raw Wycheproof keys. --- */
static inline EVP_PKEY *CShims_EVP_PKEY_fromP256Private(const BIGNUM *priv, const unsigned char *point, size_t len) {
    EVP_PKEY *pkey = NULL;
    OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
    OSSL_PARAM *params = NULL;
    EVP_PKEY_CTX *ctx = NULL;
    if (bld == NULL) return NULL;
    if (OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0) == 1
        && OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_PRIV_KEY, priv) == 1
        && OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, point, len) == 1
        && (params = OSSL_PARAM_BLD_to_param(bld)) != NULL
        && (ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL)) != NULL
        && EVP_PKEY_fromdata_init(ctx) == 1) {
        if (EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_KEYPAIR, params) != 1) pkey = NULL;
    }
    EVP_PKEY_CTX_free(ctx);
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(bld);
    return pkey;
}

/* prctl is variadic, which Swift cannot call: PR_SET_DUMPABLE 0 (no core dump, no ptrace or
 * /proc/PID/mem by other processes of the same user). */
#include <sys/prctl.h>
static inline int CShims_forbidDumping(void) { return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); }

#endif
