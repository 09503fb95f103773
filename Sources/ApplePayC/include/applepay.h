/* applepay.h: the C ABI of ApplePayDecryption (libapplepay.so). This header is the contract.
 *
 * Build the library:   swift build -c release --product applepay
 * Link against it:     cc -I Sources/ApplePayC/include app.c -L .build/release -lapplepay
 *                         -Wl,-rpath,$PWD/.build/release
 *
 * Conventions
 * - Every function returns an ap_code (or documents what it returns instead). No function aborts,
 *   throws or traps on bad input: a NULL pointer, a zero or oversized length, or a handle that was
 *   never returned by this library or has been freed gives AP_INVALID_ARGUMENT / AP_INVALID_HANDLE.
 * - Handles (ap_config, ap_decryptor, ap_result, ap_batch_result) are opaque values, not addresses: never dereference
 *   them. Each is created and freed only by the library and is never reused for the life of the
 *   process: every handle any call returns differs from every handle returned before, of any type. So
 *   a freed handle stays AP_INVALID_HANDLE whatever was allocated since (it can never name a newer
 *   object), as does a handle of another type (an ap_result passed as an ap_decryptor) or a value the
 *   library never returned. A call that is using an object keeps it alive: freeing it from another
 *   thread meanwhile is safe, and the call finishes on the object it started with.
 * - Input buffers are borrowed: the library reads them during the call and keeps no pointer to them.
 * - Output strings and the payment JSON belong to their ap_result and stay valid until
 *   ap_result_free; they are NUL-terminated.
 * - Thread safety: one ap_decryptor may be used by any number of threads at once (ap_decrypt and
 *   ap_decrypt_batch). An ap_config may be used from several threads (its calls are serialised).
 *   An ap_result may be read from several threads. Freeing it while another thread calls a function
 *   on it is safe (the call answers as for the live or for the freed result), but the strings and
 *   payment JSON it returned are gone once it is freed: do not read those after a concurrent free.
 */
#ifndef APPLEPAY_H
#define APPLEPAY_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped on every change to this header's functions, codes or promises. ap_version() returns the
 * value the library was built with; a program should check that it equals the AP_ABI_VERSION it was
 * compiled with (a library of another version may lack a function or answer differently).
 * 2: handles are never reused (see Conventions); ap_result_replay_keys, ap_result_line,
 *    ap_result_new_oversized_line; AP_BUFFER_TOO_SMALL, AP_NO_REPLAY_KEYS.
 * 3: ap_decrypt_batch_arrow (an Arrow binary column in, Arrow-shaped columns out: ap_batch_result,
 *    ap_batch_columns, ap_batch_result_columns, ap_batch_result_free), AP_BATCH_UNJUDGED, ap_replay_line.
 * 4: Google Pay: ap_config_set_google_root_keys, ap_config_add_google_recipient_id,
 *    ap_config_add_google_merchant_key, ap_config_add_google_merchant_pkcs11; ap_decrypt, ap_decrypt_batch
 *    and the result calls take Google Pay tokens too; AP_INTERMEDIATE_KEY_EXPIRED, AP_MESSAGE_EXPIRED; a
 *    configuration with Google Pay keys needs no merchant.
 * 5: ap_config_set_reference_unit (`reference` in milliseconds, for Google Pay's millisecond expirations).
 * 6: one front door for every wallet: ap_result_wallet, ap_batch_result_wallets, ap_replay_line's
 *    AP_LINE_WALLET; a Google Pay replay names "messageId" (it named "header.transactionId"); ap_decrypt
 *    takes the envelope {"paymentToken", "paymentRequest"} as ap_decrypt_batch does; a Google Pay token
 *    with a payment request (ap_decrypt_expecting, or an envelope) is AP_PAYMENT_REQUEST_MISMATCH;
 *    ap_config_add_merchant_spec and ap_config_add_google_merchant_key_spec (keys as the CLI's --merchant and
 *    --google-merchant-key take them), ap_result_json (a result as `applepay-decrypt decrypt` prints it);
 *    Samsung Pay: ap_config_add_samsung_key_spec, AP_WALLET_SAMSUNG_PAY; ap_decrypt, ap_decrypt_batch and the
 *    result calls take Samsung Pay tokens too (a compact JWE, bare or in its envelopes);
 *    ap_config_add_google_protocol_version: Google Pay accepts ECv1 and ECv2 unless versions are added
 *    (ECv2SigningOnly tokens were accepted before: now AP_UNSUPPORTED_VERSION, field "protocolVersion");
 *    a Google Pay token's payment JSON starts with "protocolVersion" and "recipientId". */
#define AP_ABI_VERSION 6

/* The largest token (bytes) ap_decrypt and ap_decrypt_batch accept; longer is AP_INVALID_ARGUMENT. */
#define AP_MAX_TOKEN_LENGTH ((size_t)1 << 20)
/* The largest payment request JSON (bytes) ap_decrypt_expecting accepts; longer is AP_INVALID_ARGUMENT. */
#define AP_MAX_PAYMENT_REQUEST_LENGTH ((size_t)1 << 20)
/* The most tokens one ap_decrypt_batch call accepts. */
#define AP_MAX_BATCH_COUNT ((size_t)1 << 24)
/* The most lanes (threads) one ap_decrypt_batch call may use. */
#define AP_MAX_LANES 256u
/* The signing-time window a new ap_config starts with (seconds). */
#define AP_DEFAULT_SIGNING_TIME_WINDOW 300

/* `reference` values other than a Unix time (seconds since 1970-01-01T00:00:00Z, or milliseconds after
 * ap_config_set_reference_unit(config, AP_REFERENCE_MILLISECONDS, ...)). */
#define AP_REFERENCE_NOW INT64_MIN                 /* the current time */
#define AP_REFERENCE_SIGNING_TIME (INT64_MIN + 1)  /* no freshness check; the chain is still verified
                                                      at the token's own signing time (archives) */

/* Result codes. 1-12 are the library's stable token error codes (processors map them to decline
 * reasons; ap_code_name gives the library's name for each); 100 and above are misuse of this ABI. */
typedef int32_t ap_code;
enum {
    AP_OK = 0,
    AP_MALFORMED_TOKEN = 1,              /* malformedToken */
    AP_UNSUPPORTED_VERSION = 2,          /* unsupportedVersion */
    AP_INVALID_SIGNATURE = 3,            /* invalidSignature */
    AP_UNTRUSTED_CERTIFICATE_CHAIN = 4,  /* untrustedCertificateChain */
    AP_SIGNING_TIME_OUT_OF_RANGE = 5,    /* signingTimeOutOfRange */
    AP_UNKNOWN_MERCHANT_KEY = 6,         /* unknownMerchantKey */
    AP_DECRYPTION_FAILED = 7,            /* decryptionFailed */
    AP_INVALID_PAYLOAD = 8,              /* invalidPayload */
    AP_REPLAYED_TRANSACTION = 9,         /* replayedTransaction (ap_decrypt_batch only) */
    AP_PAYMENT_REQUEST_MISMATCH = 10,    /* paymentRequestMismatch: the token is not the payment the request
                                            asked for (ap_decrypt_expecting, or an ap_decrypt_batch envelope);
                                            ap_result_field names the request member, e.g. "total.amount" */
    AP_INTERMEDIATE_KEY_EXPIRED = 11,    /* intermediateKeyExpired: Google Pay only, the intermediate signing key's
                                            keyExpiration is not after the reference time */
    AP_MESSAGE_EXPIRED = 12,             /* messageExpired: Google Pay only, the message's messageExpiration is
                                            not after the reference time */

    AP_INVALID_ARGUMENT = 100,           /* a NULL pointer, a zero or too large length or count, bad lanes */
    AP_INVALID_HANDLE = 101,             /* NULL, freed or foreign ap_config / ap_decryptor / ap_result */
    AP_INVALID_CONFIGURATION = 102,      /* a key, certificate, PKCS#12, trust root or window the library rejects */
    AP_INTERNAL_ERROR = 103,             /* should not happen; please report it */
    AP_INVALID_PAYMENT_REQUEST = 104,    /* the payment request JSON breaks the ApplePayPaymentRequest schema:
                                            ap_error's message starts with the member, e.g. "total.amount: ..." */
    AP_BUFFER_TOO_SMALL = 105,           /* ap_result_line: *length is the size needed; nothing was written */
    AP_NO_REPLAY_KEYS = 106              /* ap_result_replay_keys: the token did not verify and decrypt */
};

/* Static name of a code ("ok", "malformedToken", ..., "invalidArgument"); "unknown" otherwise.
 * Never NULL; never free it. */
const char *ap_code_name(ap_code code);

/* The AP_ABI_VERSION the library was built with. */
uint32_t ap_version(void);

/* Error details for set-up calls, written by the library into memory the caller owns.
 * Any `ap_error *error` parameter may be NULL when the caller does not want details. */
typedef struct ap_error {
    ap_code code;
    char message[256];   /* NUL-terminated, possibly truncated; never holds key material */
} ap_error;

typedef struct ap_config ap_config;
typedef struct ap_decryptor ap_decryptor;
typedef struct ap_result ap_result;
typedef struct ap_batch_result ap_batch_result;

/* --- Configuration ------------------------------------------------------------------------- */

/* Creates an empty configuration: no merchant, Apple Root CA - G3 as trust anchor, the default
 * window. *config receives a handle owned by the caller, freed with ap_config_free. */
ap_code ap_config_new(ap_config **config);

/* Frees a configuration. Decryptors made from it are independent of it and stay valid. */
ap_code ap_config_free(ap_config *config);

/* Adds a merchant from its certificate (PEM or DER) and private key (PEM: SEC1 or PKCS#8, optionally
 * encrypted with key_password; or DER). key_password and merchant_identifier may be NULL; partyV
 * comes from the certificate unless merchant_identifier is given. The key is loaded during the
 * call; the library's copies of the input bytes are wiped before it returns. */
ap_code ap_config_add_merchant_certificate(ap_config *config,
                                           const uint8_t *certificate, size_t certificate_length,
                                           const uint8_t *private_key, size_t private_key_length,
                                           const char *key_password, const char *merchant_identifier,
                                           ap_error *error);

/* Adds a merchant known by its identifier (e.g. "merchant.com.example") and private key. */
ap_code ap_config_add_merchant_identifier(ap_config *config, const char *merchant_identifier,
                                          const uint8_t *private_key, size_t private_key_length,
                                          const char *key_password, ap_error *error);

/* Adds a merchant from a PKCS#12 file and its password ("" for none). merchant_identifier may be NULL. */
ap_code ap_config_add_merchant_pkcs12(ap_config *config, const uint8_t *pkcs12, size_t pkcs12_length,
                                      const char *password, const char *merchant_identifier,
                                      ap_error *error);

/* Adds a merchant whose private key stays in a PKCS#11 token (HSM): the merchant certificate (PEM or
 * DER) and an RFC 7512 URI naming the key, e.g.
 *   "pkcs11:token=payments;object=merchant-2026;type=private"
 *   "?module-path=/usr/lib/softhsm/libsofthsm2.so&pin-source=file:/etc/applepay/pin"
 * module-path (absolute, a regular file) is required; the PIN comes from pin-source (a file) or pin-env
 * (an environment variable), never from the URI itself. The module is loaded, the token logged in to
 * and the key checked against the certificate now; failures are AP_INVALID_CONFIGURATION with the
 * reason in error. merchant_identifier may be NULL. */
ap_code ap_config_add_merchant_pkcs11(ap_config *config, const uint8_t *certificate, size_t certificate_length,
                                      const char *uri, const char *merchant_identifier, ap_error *error);

/* Adds a merchant described as the CLI's --merchant takes it (NUL-terminated, 1 to 4096 bytes):
 *   "cert=PATH,key=PATH" | "id=MERCHANT_ID,key=PATH" | "p12=PATH[,password-env=VAR]" | "cert=PATH,pkcs11=URI"
 * (key-password-env=VAR decrypts an encrypted PEM key; passwords and PINs come from the environment variables
 * and files named, never from the text). The files are read, and the keys loaded, during the call by the
 * engine's own spec reader, so a spec means here what it means to the CLI. A spec that is unknown, contradictory
 * or names unreadable files is AP_INVALID_CONFIGURATION, the message naming the spec (any PKCS#11 PIN redacted). */
ap_code ap_config_add_merchant_spec(ap_config *config, const char *spec, ap_error *error);

/* Maximum distance in seconds between a token's signing time and the reference time (>= 0). */
ap_code ap_config_set_signing_time_window(ap_config *config, int64_t seconds, ap_error *error);

/* ap_decrypt_batch's P-256 backend for EC_v1 signature checks and key agreement: Intel's crypto_mb
 * eight tokens at a time (AVX-512 IFMA; found through APPLEPAY_CRYPTO_MB, the path of
 * libcrypto_mb.so.13, or the loader's path; self-tested against OpenSSL at first use) or OpenSSL. AUTO (the default) uses crypto_mb when it
 * can; ON fails here with AP_INVALID_CONFIGURATION and a message naming crypto_mb and the reason
 * when it cannot; OFF never uses it. Results are identical either way; ap_decrypt is not affected. */
enum {
    AP_MULTIBUFFER_AUTO = 0,
    AP_MULTIBUFFER_ON = 1,
    AP_MULTIBUFFER_OFF = 2
};
ap_code ap_config_set_multibuffer(ap_config *config, uint32_t mode, ap_error *error);

/* What the `reference` argument of ap_decrypt, ap_decrypt_expecting, ap_decrypt_batch and
 * ap_decrypt_batch_arrow counts, for decryptors made from this configuration afterwards: AP_REFERENCE_SECONDS
 * (the default, whole seconds since 1970-01-01T00:00:00Z) or AP_REFERENCE_MILLISECONDS (Google Pay keys and
 * messages expire to the millisecond: an expiry at T ms is still good at T - 1). AP_REFERENCE_NOW and
 * AP_REFERENCE_SIGNING_TIME mean the same in either unit. Another unit is AP_INVALID_ARGUMENT. */
enum {
    AP_REFERENCE_SECONDS = 0,
    AP_REFERENCE_MILLISECONDS = 1
};
ap_code ap_config_set_reference_unit(ap_config *config, uint32_t unit, ap_error *error);

/* TESTS ONLY: trusts the given PEM root instead of Apple Root CA - G3. A production decryptor must
 * never call this: any token signed under that root would be accepted as Apple's. */
ap_code ap_config_set_insecure_test_root_pem(ap_config *config, const uint8_t *pem, size_t pem_length,
                                             ap_error *error);

/* Google Pay. A token of Google Pay's shape (a JSON object with protocolVersion and signedMessage) is
 * verified against Google's root signing keys for one of the recipient ids, then decrypted with the
 * merchant keys (tried in order). Google Pay needs root keys and at least one recipient id; merchant keys
 * are needed for every protocolVersion but ECv2SigningOnly. With Google Pay configured, a configuration
 * without any merchant is fine: Apple Pay tokens are then still verified (trust anchor, window) and, when
 * they verify, get AP_UNKNOWN_MERCHANT_KEY. Google Pay tokens get AP_UNKNOWN_MERCHANT_KEY when no Google
 * Pay call was made.
 *
 * Sets Google's root signing keys document (JSON {"keys": [{"keyValue", "protocolVersion",
 * "keyExpiration"}]}; Google publishes one for its test environment and one for production), replacing
 * any set before. Only keys of a token's protocolVersion that are not expired count. */
ap_code ap_config_set_google_root_keys(ap_config *config, const uint8_t *keys_json, size_t keys_json_length,
                                       ap_error *error);

/* Adds a recipient id tokens are accepted for (repeatable): "merchant:MERCHANT_ID" or "gateway:GATEWAY_ID"
 * (NUL-terminated, 1 to 1024 bytes). A token verifies when its message signature verifies for one. */
ap_code ap_config_add_google_recipient_id(ap_config *config, const char *recipient_id, ap_error *error);

/* Adds a Google Pay merchant private key (P-256; PEM: SEC1 or PKCS#8, optionally encrypted with
 * key_password; or DER). key_password may be NULL. The library's copy of the bytes is wiped after loading. */
ap_code ap_config_add_google_merchant_key(ap_config *config, const uint8_t *private_key, size_t private_key_length,
                                          const char *key_password, ap_error *error);

/* Adds a Google Pay merchant key that stays in a PKCS#11 token: its public key (PEM or DER
 * SubjectPublicKeyInfo, or a certificate) and an RFC 7512 URI as for ap_config_add_merchant_pkcs11. */
ap_code ap_config_add_google_merchant_pkcs11(ap_config *config, const uint8_t *public_key, size_t public_key_length,
                                             const char *uri, ap_error *error);

/* Adds a Google Pay merchant key described as the CLI's --google-merchant-key takes it (NUL-terminated, 1 to
 * 4096 bytes): "PATH" | "key=PATH[,key-password-env=VAR]" | "p12=PATH[,password-env=VAR]" | "pkcs11=URI,pub=PATH"
 * | "pkcs11=URI,cert=PATH", read as ap_config_add_merchant_spec reads its spec (tried in the order added). */
ap_code ap_config_add_google_merchant_key_spec(ap_config *config, const char *spec, ap_error *error);

/* Adds a Google Pay protocolVersion the decryptor accepts (repeatable): "ECv1", "ECv2" or "ECv2SigningOnly"
 * (another name is AP_INVALID_CONFIGURATION). None added: ECv1 and ECv2, what Google issues to merchants'
 * integrations (ECv2 to current ones, ECv1 to those built before it). Adding versions replaces that default:
 * "ECv2" alone refuses ECv1. ECv2SigningOnly carries the card data signed, not encrypted: only when added.
 * A token of a version not accepted is AP_UNSUPPORTED_VERSION with field "protocolVersion". */
ap_code ap_config_add_google_protocol_version(ap_config *config, const char *protocol_version, ap_error *error);

/* Adds a Samsung Pay merchant key (RSA) described as the CLI's --samsung-key takes it: any key form the engine
 * loads ("PATH" of a PEM or DER private key, "key=PATH[,key-password-env=VAR]", "p12=PATH[,password-env=VAR]",
 * "pkcs11=URI,pub=PATH" or "pkcs11=URI,cert=PATH"), read during the call; a token's kid (base64 of SHA-256 over the key's
 * SubjectPublicKeyInfo) selects the key. Samsung Pay keys alone make a decryptor (no merchant needed); the
 * token's utc must lie within the signing-time window of the reference. AP_INVALID_CONFIGURATION names the spec. */
ap_code ap_config_add_samsung_key_spec(ap_config *config, const char *spec, ap_error *error);

/* --- Decryptor ----------------------------------------------------------------------------- */

/* Makes a decryptor from a configuration with at least one merchant, or with Google Pay root keys and
 * a recipient id (a Google Pay configuration missing either is AP_INVALID_CONFIGURATION). *decryptor
 * receives a handle owned by the caller, freed with ap_decryptor_free; it is set to NULL on failure. */
ap_code ap_decryptor_new(const ap_config *config, ap_decryptor **decryptor, ap_error *error);

/* Frees a decryptor. Calls already running on it in other threads finish normally. */
ap_code ap_decryptor_free(ap_decryptor *decryptor);

/* Verifies and decrypts one token (the PKPaymentToken's paymentData JSON, a whole PKPaymentToken,
 * or its base64; or a Google Pay token, told apart by its shape; or the envelope {"paymentToken": TOKEN,
 * "paymentRequest": {...}}, checked as by ap_decrypt_expecting). A Google Pay token with no Google Pay
 * key configured is AP_UNKNOWN_MERCHANT_KEY. `reference` is a Unix time,
 * AP_REFERENCE_NOW or AP_REFERENCE_SIGNING_TIME (for Google Pay: no expiration is checked).
 * A Google Pay token's payment JSON is "protocolVersion" (the token's) and "recipientId" (the one its
 * signature verified for), then its decrypted message's members (messageId, messageExpiration,
 * paymentMethod, paymentMethodDetails, ...); its transaction id is the messageId. A message that is
 * not such a payment (e.g. Tink's ECv1 samples, plaintext "plaintext") is AP_INVALID_PAYLOAD.
 * Returns the token's code (AP_OK or 1-12), in which case *result receives a result handle owned by
 * the caller (free it with ap_result_free); or an ABI misuse code (100+), in which case *result is
 * set to NULL (when result itself is not NULL). */
ap_code ap_decrypt(ap_decryptor *decryptor, const uint8_t *token, size_t length, int64_t reference,
                   ap_result **result);

/* ap_decrypt (a payment request binds Apple Pay tokens: a Google Pay token, which carries nothing to check
 * against it, is AP_PAYMENT_REQUEST_MISMATCH with field "paymentRequest"), then checks that the token is the payment `payment_request` asked for: payment_request is
 * the ApplePayPaymentRequest JSON (UTF-8) the merchant gave the payment sheet. The checks: SHA-256 of its
 * base64-decoded applicationData equals the token's header.applicationData (present on one side only
 * is a mismatch); currencyCode (ISO 4217); total.amount in the currency's minor units equals the
 * payload's transactionAmount (unless the amount is pending); the payload's paymentDataType is among
 * merchantCapabilities (EMV: supportsEMV, 3DSecure: supports3DS); a wrapper's paymentMethod.network is
 * among supportedNetworks; with multiTokenContexts, the token's merchant is a context and carries that
 * context's amount. A token that fails one gets AP_PAYMENT_REQUEST_MISMATCH, ap_result_field naming the
 * request member. Returns like ap_decrypt, plus: AP_INVALID_PAYMENT_REQUEST when the request breaks the
 * schema (*result is NULL; error, when not NULL, receives the member and the reason). `error` may be NULL. */
ap_code ap_decrypt_expecting(ap_decryptor *decryptor, const uint8_t *token, size_t length,
                             const uint8_t *payment_request, size_t payment_request_length, int64_t reference,
                             ap_result **result, ap_error *error);

/* Decrypts `count` tokens on `lanes` threads (0: one per processor) with the batch engine and a fresh
 * replay ledger: a verified token whose transactionId or signed contents an earlier token of the
 * same call already claimed gets AP_REPLAYED_TRANSACTION (one ledger for both wallets: a Google Pay
 * token claims its messageId and the digest of its signedMessage). results[i] receives the result of
 * tokens[i] (input order), each owned by the caller (ap_result_free, or ap_results_free).
 * A NULL tokens[i], a zero or too large lengths[i] gives that item AP_INVALID_ARGUMENT.
 * tokens[i] may also be an envelope {"paymentToken": TOKEN, "paymentRequest": {...}}: that token is then
 * checked as by ap_decrypt_expecting (AP_PAYMENT_REQUEST_MISMATCH; a request that breaks the schema gives
 * AP_MALFORMED_TOKEN with field "paymentRequest.MEMBER"). A token that fails the check claims nothing.
 * Returns AP_OK when every results[i] was filled; otherwise an ABI misuse code and no result
 * was created (results[i] are set to NULL when results and count are usable). */
ap_code ap_decrypt_batch(ap_decryptor *decryptor, const uint8_t *const *tokens, const size_t *lengths,
                         size_t count, int64_t reference, uint32_t lanes, ap_result **results);

/* --- Arrow batches -------------------------------------------------------------------------- */

/* Flag of ap_decrypt_batch_arrow (with AP_LINE_MASK_PAN and AP_LINE_VERIFIED_AT_SIGNING_TIME, below): no
 * replay ledger. Every token keeps its own verdict (a verified token is AP_OK with its payment even when an
 * earlier token of the call has its keys), for a caller that judges replays itself over more tokens than one
 * call sees (a Spark job's partitions): from the replay keys, by the rule of ap_result_replay_keys, writing
 * each replay's line with ap_replay_line. */
#define AP_BATCH_UNJUDGED 4u

/* The results of one ap_decrypt_batch_arrow call, as Arrow buffers (row i is token i). Every pointer
 * belongs to the ap_batch_result and stays valid, unchanged, until ap_batch_result_free. */
typedef struct ap_batch_columns {
    size_t count;                          /* rows */
    const int64_t *line_offsets;           /* count + 1 offsets into lines (an Arrow large_string column) */
    const uint8_t *lines;                  /* row i's line: lines[line_offsets[i] .. line_offsets[i+1]), as
                                              ap_result_line writes it, newline included; empty for a row whose
                                              code is AP_INVALID_ARGUMENT. CARD DATA (wiped by the free) */
    const int32_t *codes;                  /* row i's code: AP_OK, 1-12, or AP_INVALID_ARGUMENT (an empty item,
                                              or one over AP_MAX_TOKEN_LENGTH) */
    const uint8_t *replay_keys;            /* 32 bytes a row: transaction_key then content_key (see
                                              ap_result_replay_keys); zeros where has_replay_keys[i] is 0 */
    const uint8_t *has_replay_keys;        /* 1 when the row's token verified and decrypted, else 0 */
    const int64_t *transaction_id_offsets; /* count + 1 offsets into transaction_ids (UTF-8: an Apple Pay
                                              transactionId in hex, a Google Pay messageId) */
    const uint8_t *transaction_ids;        /* row i's header.transactionId where has_transaction_id[i] is 1 */
    const uint8_t *has_transaction_id;     /* 1 when the row has a transactionId (as ap_result_transaction_id) */
} ap_batch_columns;

/* ap_decrypt_batch over an Arrow binary (offset_width 4) or large_binary (8) column of `count` tokens:
 * offsets (count + 1 entries, from 0 or more and never decreasing, else AP_INVALID_ARGUMENT) and data,
 * read in place during the call (no copy, no pointer kept). The offsets are TRUSTED: the call has no
 * length of `data`, so it checks their order but cannot check that offsets[count] is within the data
 * buffer. Offsets that point past the data (a buffer that is not the offsets' own) are the caller's error
 * and read out of bounds, as in any Arrow consumer: pass the column's own two buffers, as an Arrow library
 * hands them out (the Python binding has pyarrow check the last offset against the data buffer first).
 * Row i's line is written with index first_index + i and source (source_length UTF-8 bytes, may be NULL
 * when 0) as given, with `flags` (AP_LINE_MASK_PAN, AP_LINE_VERIFIED_AT_SIGNING_TIME, AP_BATCH_UNJUDGED).
 * `reference` counts seconds or milliseconds as ap_config_set_reference_unit set it. Without AP_BATCH_UNJUDGED, replays within the call are judged as
 * ap_decrypt_batch judges them. Decrypts on `lanes` threads (0: one per processor). Returns AP_OK with
 * *result set (free it with ap_batch_result_free; read it with ap_batch_result_columns), or an ABI misuse
 * code with *result NULL: AP_INVALID_HANDLE, AP_INVALID_ARGUMENT (NULL buffers, a width other than 4 or
 * 8, count 0 or over AP_MAX_BATCH_COUNT, unknown flags, bad lanes, first_index + count over INT64_MAX). */
ap_code ap_decrypt_batch_arrow(ap_decryptor *decryptor, const void *offsets, uint32_t offset_width,
                               const uint8_t *data, size_t count, uint64_t first_index, const char *source,
                               size_t source_length, int64_t reference, uint32_t lanes, uint32_t flags,
                               ap_batch_result **result);

/* Fills *columns with the result's buffers. AP_INVALID_HANDLE / AP_INVALID_ARGUMENT (NULL columns). */
ap_code ap_batch_result_columns(const ap_batch_result *result, ap_batch_columns *columns);

/* Wipes the lines, frees the result and every buffer it returned. A second call: AP_INVALID_HANDLE. */
ap_code ap_batch_result_free(ap_batch_result *result);

/* Row i's wallet (ap_wallet, one byte a row; AP_WALLET_NONE for a row whose code is AP_INVALID_ARGUMENT):
 * `count` bytes that belong to the ap_batch_result, as its columns do; NULL for a handle that is not live. */
const uint8_t *ap_batch_result_wallets(const ap_batch_result *result);

/* The line `applepay-decrypt batch` writes for item `index`, a verified token judged a replay of item
 * claimed_by (< index): AP_REPLAYED_TRANSACTION's line, no payment, by the engine's writer. source as in
 * ap_result_line; source_line >= 0 writes it as "SOURCE:SOURCE_LINE", -1 writes source alone;
 * transaction_id (NUL-terminated, may be NULL for none). flags: AP_LINE_VERIFIED_AT_SIGNING_TIME (and
 * AP_LINE_MASK_PAN, which changes nothing: the line has no card data), and AP_LINE_WALLET(w), the replayed
 * token's wallet (ap_result_wallet, ap_batch_result_wallets), whose field the line names (no wallet given:
 * Apple Pay's "header.transactionId", as AP_WALLET_APPLE_PAY; AP_WALLET_GOOGLE_PAY: "messageId";
 * AP_WALLET_SAMSUNG_PAY: "cryptogram"; another value: AP_INVALID_ARGUMENT). Buffer rules as ap_result_line:
 * AP_OK, AP_BUFFER_TOO_SMALL (with *length the size needed), AP_INVALID_ARGUMENT. */
ap_code ap_replay_line(uint64_t index, const char *source, size_t source_length, int64_t source_line,
                       const char *transaction_id, uint64_t claimed_by, uint32_t flags, uint8_t *buffer,
                       size_t capacity, size_t *length);

/* --- Results ------------------------------------------------------------------------------- */

/* The result's code (AP_OK or 1-12); AP_INVALID_HANDLE for a NULL or freed result. */
ap_code ap_result_code(const ap_result *result);

/* Human-readable reason ("" for AP_OK); NULL only for an invalid handle. Never holds card data. */
const char *ap_result_message(const ap_result *result);

/* JSON path of the offending token field (e.g. "header.publicKeyHash"), or for
 * AP_PAYMENT_REQUEST_MISMATCH the payment request member (e.g. "total.amount"); or NULL. */
const char *ap_result_field(const ap_result *result);

/* The token's header.transactionId (hex), a Google Pay token's messageId, or NULL. ap_decrypt sets it for AP_OK results;
 * ap_decrypt_batch also for rejected tokens that could be read that far. */
const char *ap_result_transaction_id(const ap_result *result);

/* The wallet a result's token was read as (by its shape), whose field a replay names. */
typedef enum {
    AP_WALLET_NONE = 0,       /* a result that is ABI misuse (no token was read) */
    AP_WALLET_APPLE_PAY = 1,  /* an Apple Pay token or envelope (also anything no wallet reads) */
    AP_WALLET_GOOGLE_PAY = 2, /* a Google Pay token */
    AP_WALLET_SAMSUNG_PAY = 3, /* a Samsung Pay token (its replay names "cryptogram") */
} ap_wallet;

/* The result's ap_wallet, or AP_INVALID_HANDLE for a handle that is not live. */
int32_t ap_result_wallet(const ap_result *result);

/* The decrypted payment data as compact JSON (every member as Apple wrote it, card number in clear),
 * NUL-terminated; *length (when length is not NULL) receives its length without the NUL.
 * NULL (and *length = 0) unless the code is AP_OK. The bytes are owned by the result: copy only what
 * you need, into memory you wipe. ap_result_free wipes them. */
const uint8_t *ap_result_payment_json(const ap_result *result, size_t *length);

/* The token's replay identity, as the batch engine's replay ledger uses it: transaction_key (16 bytes
 * of SHA-256 over the normalised transactionId) and content_key (the first 16 bytes of the signed
 * message digest). A token is a replay when either key was already claimed by an earlier token that
 * verified, decrypted and was not itself a replay. AP_OK with both filled when the result's token
 * verified and decrypted, including a result ap_decrypt_batch judged AP_REPLAYED_TRANSACTION (it has
 * keys, it just does not claim them); AP_NO_REPLAY_KEYS for every other result (a token that failed,
 * or failed its payment request: those claim nothing), with both buffers untouched.
 * AP_INVALID_HANDLE / AP_INVALID_ARGUMENT (a NULL buffer) as usual. */
ap_code ap_result_replay_keys(const ap_result *result, uint8_t transaction_key[16], uint8_t content_key[16]);

/* Flags of ap_result_line: exactly the line effects of `applepay-decrypt batch`'s options. */
#define AP_LINE_MASK_PAN 1u                  /* --mask-pan: at most the first 6 and last 4 digits stay */
#define AP_LINE_VERIFIED_AT_SIGNING_TIME 2u  /* --at-signing-time: "verifiedAt":"signingTime" on every line */
#define AP_LINE_WALLET(w) ((uint32_t)(w) << 8) /* ap_replay_line: the replayed token's ap_wallet */

/* The result as `applepay-decrypt batch` writes it, byte for byte, newline included:
 *   {"index":INDEX,"source":SOURCE,"transactionId":...,"payment":{...}}  or  {...,"error":...,"message":...[,"field":...]}
 * written by the engine's own line writer. index is the item's 0-based position in the whole input;
 * source (source_length UTF-8 bytes, not NUL-terminated; may be NULL when source_length is 0) is its
 * label, the CLI's "PATH:LINE". replay_of: -1 writes the result's own verdict; replay_of >= 0 (and
 * < index) writes the line of a verified token judged a replay of item replay_of: AP_REPLAYED_TRANSACTION's
 * line ("this token's transactionId or signed contents were already claimed by item N", field
 * "header.transactionId"), without the payment. A result without replay keys cannot be a replay
 * (AP_INVALID_ARGUMENT). Results of ABI misuse (code 100+) have no line (AP_INVALID_ARGUMENT).
 * For the lines of a whole archive, decrypt with ap_decrypt_batch (a partition at a time is fine: judge
 * replays across partitions from ap_result_replay_keys and pass replay_of for every verified token judged
 * a replay): ap_decrypt gives rejected tokens no transactionId and does not read envelopes.
 * The line is copied to buffer[0..*length). When capacity is too small, AP_BUFFER_TOO_SMALL with
 * *length set to the size needed and nothing written (buffer may then be NULL with capacity 0).
 * The buffer receives card data (the full PAN unless AP_LINE_MASK_PAN): the caller wipes it after use.
 * Returns AP_OK, AP_BUFFER_TOO_SMALL, AP_INVALID_HANDLE, or AP_INVALID_ARGUMENT (NULL length, unknown
 * flags, replay_of < -1). */
ap_code ap_result_line(const ap_result *result, uint64_t index, const char *source, size_t source_length,
                       uint32_t flags, int64_t replay_of, uint8_t *buffer, size_t capacity, size_t *length);

/* The result as `applepay-decrypt decrypt` prints it, byte for byte, without its newline, by the engine's own
 * writer: the payment JSON for AP_OK (as ap_result_payment_json), else the error object
 *   {"error":CODE,"message":...,"field":PATH or null[,"reason":...]}
 * with OpenSSL's reason where it gave one (which ap_result_line leaves out). flags: 0 or AP_LINE_MASK_PAN (the
 * card number masked as --mask-pan masks it). Buffer rules as ap_result_line: AP_OK, AP_BUFFER_TOO_SMALL (with
 * *length the size needed, nothing written; buffer may be NULL with capacity 0), AP_INVALID_HANDLE,
 * AP_INVALID_ARGUMENT (NULL length, unknown flags, a result of ABI misuse). The buffer receives card data unless
 * masked: the caller wipes it after use. */
ap_code ap_result_json(const ap_result *result, uint32_t flags, uint8_t *buffer, size_t capacity, size_t *length);

/* A result for a JSONL line longer than max_item_bytes (newline excluded; 1 to 2^30), as
 * `applepay-decrypt batch --max-item-bytes MAX_ITEM_BYTES` reports one (1048576 by default):
 * AP_MALFORMED_TOKEN, field "$", message "the item could not be read: the line is longer than the limit
 * of MAX_ITEM_BYTES bytes; raise it with --max-item-bytes". Lets a caller that reads archives itself
 * write the CLI's line for an item it did not pass to the library. Returns AP_MALFORMED_TOKEN with
 * *result set (free it with ap_result_free), or AP_INVALID_ARGUMENT with *result NULL. */
ap_code ap_result_new_oversized_line(uint64_t max_item_bytes, ap_result **result);

/* Wipes the payment JSON, frees the result and every string it returned. A second call with the
 * same handle returns AP_INVALID_HANDLE. */
ap_code ap_result_free(ap_result *result);

/* ap_result_free on results[0..count): NULL entries are skipped and every entry is set to NULL.
 * Returns AP_INVALID_HANDLE if any non-NULL entry was not a live result (the others are still freed). */
ap_code ap_results_free(ap_result **results, size_t count);

#ifdef __cplusplus
}
#endif

#endif /* APPLEPAY_H */
