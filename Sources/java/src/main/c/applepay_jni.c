/* applepay_jni.c: the JNI shim between io.github.applepaydecryption.Native and libapplepay's C ABI.
 *
 * libapplepay is opened by path with dlopen (Native.bind), its ap_version checked against the
 * AP_ABI_VERSION this shim was compiled with before any other symbol is looked up, so a library of
 * another ABI version is refused with both numbers instead of failing inside a call. Inputs are copied
 * out of Java arrays (GetByteArrayRegion: no array stays pinned while the engine works, so the
 * garbage collector never waits on a batch); each result is copied into one Java byte array (a
 * "blob", read by Result.fromBlob) and freed before the call returns, so Java never holds an
 * ap_result. Misuse (a closed decryptor, an empty token) is thrown as ApplePayException. */
#include <dlfcn.h>
#include <jni.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "applepay.h"

#define API(name) static __typeof__(name) *p_##name;
#define APIS(X)                                                                                             \
    X(ap_version) X(ap_config_new) X(ap_config_free) X(ap_config_add_merchant_spec)                          \
    X(ap_config_add_merchant_certificate) X(ap_config_add_merchant_identifier) X(ap_config_add_merchant_pkcs12) \
    X(ap_config_add_merchant_pkcs11) X(ap_config_set_signing_time_window) X(ap_config_set_multibuffer)        \
    X(ap_config_set_reference_unit) X(ap_config_set_insecure_test_root_pem) X(ap_config_set_google_root_keys)  \
    X(ap_config_add_google_recipient_id) X(ap_config_add_google_merchant_key)                                 \
    X(ap_config_add_google_merchant_key_spec) X(ap_config_add_google_merchant_pkcs11)                         \
    X(ap_config_add_google_protocol_version) X(ap_config_add_samsung_key_spec) X(ap_decryptor_new)          \
    X(ap_decryptor_free) X(ap_decrypt) X(ap_decrypt_expecting) X(ap_decrypt_batch) X(ap_result_code)            \
    X(ap_result_message) X(ap_result_field) X(ap_result_transaction_id) X(ap_result_json)                    \
    X(ap_result_replay_keys) X(ap_result_wallet) X(ap_result_free) X(ap_results_free)
APIS(API)

static pthread_mutex_t bind_lock = PTHREAD_MUTEX_INITIALIZER;
static void *library;  /* the bound libapplepay, never closed once bound */

static jclass exception_class;
static jmethodID exception_from_native;
static jclass link_error_class;

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM *vm, void *reserved) {
    (void)reserved;
    JNIEnv *env;
    if ((*vm)->GetEnv(vm, (void **)&env, JNI_VERSION_1_8) != JNI_OK) return JNI_ERR;
    jclass local = (*env)->FindClass(env, "io/github/applepaydecryption/ApplePayException");
    if (local == NULL) return JNI_ERR;
    exception_class = (*env)->NewGlobalRef(env, local);
    exception_from_native = (*env)->GetStaticMethodID(env, exception_class, "fromNative",
                                                      "(I[B)Lio/github/applepaydecryption/ApplePayException;");
    local = (*env)->FindClass(env, "java/lang/UnsatisfiedLinkError");
    if (local == NULL || exception_from_native == NULL) return JNI_ERR;
    link_error_class = (*env)->NewGlobalRef(env, local);
    return JNI_VERSION_1_8;
}

static jbyteArray bytes_of(JNIEnv *env, const void *data, size_t length) {
    jbyteArray array = (*env)->NewByteArray(env, (jsize)length);
    if (array != NULL && length > 0) (*env)->SetByteArrayRegion(env, array, 0, (jsize)length, (const jbyte *)data);
    return array;
}

/* Throws ApplePayException(code, message); message may be NULL. */
static void throw_code(JNIEnv *env, ap_code code, const char *message) {
    if ((*env)->ExceptionCheck(env)) return;
    jbyteArray text = message ? bytes_of(env, message, strnlen(message, 256)) : NULL;
    if ((*env)->ExceptionCheck(env)) return;
    jobject exception = (*env)->CallStaticObjectMethod(env, exception_class, exception_from_native, (jint)code, text);
    if (exception != NULL && !(*env)->ExceptionCheck(env)) (*env)->Throw(env, (jthrowable)exception);
}

static int unbound(JNIEnv *env) {
    if (library != NULL) return 0;
    (*env)->ThrowNew(env, link_error_class, "libapplepay is not loaded (Native.bind was not called)");
    return 1;
}

/* A Java byte array copied into malloc'd memory (plus a NUL, for strings); *length gets its length.
 * NULL for a null array (and for an allocation failure, with an exception pending). */
static uint8_t *copy_in(JNIEnv *env, jbyteArray array, size_t *length) {
    *length = 0;
    if (array == NULL) return NULL;
    jsize n = (*env)->GetArrayLength(env, array);
    uint8_t *copy = malloc((size_t)n + 1);
    if (copy == NULL) {
        throw_code(env, AP_INTERNAL_ERROR, "out of memory");
        return NULL;
    }
    (*env)->GetByteArrayRegion(env, array, 0, n, (jbyte *)copy);
    copy[n] = 0;
    *length = (size_t)n;
    return copy;
}

/* Wipes memory that held a key, a password or card data. */
static void wipe(void *bytes, size_t length) {
    if (bytes != NULL) explicit_bzero(bytes, length);
}

/* Wipes and frees a copy that may hold a key or a password. */
static void wipe_free(uint8_t *copy, size_t length) {
    wipe(copy, length);
    free(copy);
}

JNIEXPORT jint JNICALL Java_io_github_applepaydecryption_Native_compiledAbiVersion(JNIEnv *env, jclass cls) {
    (void)env, (void)cls;
    return AP_ABI_VERSION;
}

/* Opens the library at `path` (NUL-terminated UTF-8) and returns its ap_version. Only a library of this
 * shim's AP_ABI_VERSION is bound (its symbols looked up and kept); another is left loaded, unused. */
JNIEXPORT jint JNICALL Java_io_github_applepaydecryption_Native_bind(JNIEnv *env, jclass cls, jbyteArray path) {
    (void)cls;
    size_t length;
    uint8_t *name = copy_in(env, path, &length);
    if (name == NULL) return -1;
    void *handle = dlopen((const char *)name, RTLD_NOW | RTLD_LOCAL);
    free(name);
    if (handle == NULL) {
        (*env)->ThrowNew(env, link_error_class, dlerror());
        return -1;
    }
    __typeof__(ap_version) *version_of = (__typeof__(ap_version) *)dlsym(handle, "ap_version");
    /* A refused library stays loaded: unloading one with a language runtime inside is not safe (the Swift
     * runtime registers itself process-wide), and the process loads the right one anyway or none. */
    if (version_of == NULL) {
        (*env)->ThrowNew(env, link_error_class, "the library has no ap_version: it is not libapplepay");
        return -1;
    }
    jint version = (jint)version_of();
    if (version != AP_ABI_VERSION) return version;
    pthread_mutex_lock(&bind_lock);
    if (library != NULL) {  /* bound already: keep the first library's symbols */
        pthread_mutex_unlock(&bind_lock);
        return version;
    }
    const char *missing = NULL;
#define LOOKUP(name) if (!missing && !(p_##name = (__typeof__(name) *)dlsym(handle, #name))) missing = #name;
    APIS(LOOKUP)
#undef LOOKUP
    if (missing == NULL) library = handle;
    pthread_mutex_unlock(&bind_lock);
    if (missing != NULL) {
        char message[160];
        snprintf(message, sizeof message, "the library says ABI %d but lacks %s", (int)version, missing);
        (*env)->ThrowNew(env, link_error_class, message);
        return -1;
    }
    return version;
}

/* --- Configuration ------------------------------------------------------------------------- */

static jlong handle_value(void *handle) { return (jlong)(uintptr_t)handle; }
static void *handle_pointer(jlong value) { return (void *)(uintptr_t)value; }

static void check_config(JNIEnv *env, ap_code code, const ap_error *error) {
    if (code != AP_OK) throw_code(env, code, error->message);
}

JNIEXPORT jlong JNICALL Java_io_github_applepaydecryption_Native_configNew(JNIEnv *env, jclass cls) {
    (void)cls;
    if (unbound(env)) return 0;
    ap_config *config = NULL;
    ap_code code = p_ap_config_new(&config);
    if (code != AP_OK) throw_code(env, code, "ap_config_new");
    return handle_value(config);
}

JNIEXPORT jint JNICALL Java_io_github_applepaydecryption_Native_configFree(JNIEnv *env, jclass cls, jlong config) {
    (void)cls;
    if (unbound(env)) return AP_INTERNAL_ERROR;
    return p_ap_config_free(handle_pointer(config));
}

/* Spec, string and byte settings share one entry: `what` picks the call. Text arguments arrive as
 * NUL-terminated UTF-8 byte arrays (Java's own strings are not UTF-8), and every copy is wiped. */
enum {
    SET_MERCHANT_SPEC = 1, SET_GOOGLE_KEY_SPEC, SET_GOOGLE_RECIPIENT, SET_GOOGLE_ROOT_KEYS, SET_TEST_ROOT,
    SET_MERCHANT_CERTIFICATE, SET_MERCHANT_IDENTIFIER, SET_MERCHANT_PKCS12, SET_MERCHANT_PKCS11,
    SET_GOOGLE_KEY, SET_GOOGLE_PKCS11, SET_WINDOW, SET_MULTIBUFFER, SET_REFERENCE_UNIT, SET_SAMSUNG_KEY_SPEC,
    SET_GOOGLE_PROTOCOL_VERSION
};

JNIEXPORT void JNICALL Java_io_github_applepaydecryption_Native_configSet(JNIEnv *env, jclass cls, jlong handle,
                                                                          jint what, jbyteArray a, jbyteArray b,
                                                                          jbyteArray c, jbyteArray d, jlong number) {
    (void)cls;
    if (unbound(env)) return;
    ap_config *config = handle_pointer(handle);
    size_t na, nb, nc, nd;
    uint8_t *ca = copy_in(env, a, &na), *cb = copy_in(env, b, &nb), *cc = copy_in(env, c, &nc),
            *cd = copy_in(env, d, &nd);
    if (!(*env)->ExceptionCheck(env)) {
        ap_error error = {0};
        ap_code code = AP_INVALID_ARGUMENT;
        const char *sa = (const char *)ca, *sc = (const char *)cc, *sd = (const char *)cd;
        switch (what) {
        case SET_MERCHANT_SPEC: code = p_ap_config_add_merchant_spec(config, sa, &error); break;
        case SET_GOOGLE_KEY_SPEC: code = p_ap_config_add_google_merchant_key_spec(config, sa, &error); break;
        case SET_GOOGLE_RECIPIENT: code = p_ap_config_add_google_recipient_id(config, sa, &error); break;
        case SET_GOOGLE_ROOT_KEYS: code = p_ap_config_set_google_root_keys(config, ca, na, &error); break;
        case SET_TEST_ROOT: code = p_ap_config_set_insecure_test_root_pem(config, ca, na, &error); break;
        case SET_MERCHANT_CERTIFICATE:
            code = p_ap_config_add_merchant_certificate(config, ca, na, cb, nb, sc, sd, &error);
            break;
        case SET_MERCHANT_IDENTIFIER: code = p_ap_config_add_merchant_identifier(config, sc, ca, na, sd, &error); break;
        case SET_MERCHANT_PKCS12: code = p_ap_config_add_merchant_pkcs12(config, ca, na, sc, sd, &error); break;
        case SET_MERCHANT_PKCS11: code = p_ap_config_add_merchant_pkcs11(config, ca, na, sc, sd, &error); break;
        case SET_GOOGLE_KEY: code = p_ap_config_add_google_merchant_key(config, ca, na, sc, &error); break;
        case SET_GOOGLE_PKCS11: code = p_ap_config_add_google_merchant_pkcs11(config, ca, na, sc, &error); break;
        case SET_WINDOW: code = p_ap_config_set_signing_time_window(config, (int64_t)number, &error); break;
        case SET_MULTIBUFFER: code = p_ap_config_set_multibuffer(config, (uint32_t)number, &error); break;
        case SET_REFERENCE_UNIT: code = p_ap_config_set_reference_unit(config, (uint32_t)number, &error); break;
        case SET_SAMSUNG_KEY_SPEC: code = p_ap_config_add_samsung_key_spec(config, sa, &error); break;
        case SET_GOOGLE_PROTOCOL_VERSION: code = p_ap_config_add_google_protocol_version(config, sa, &error); break;
        default: snprintf(error.message, sizeof error.message, "unknown setting %d", (int)what);
        }
        check_config(env, code, &error);
    }
    wipe_free(ca, na), wipe_free(cb, nb), wipe_free(cc, nc), wipe_free(cd, nd);
}

JNIEXPORT jlong JNICALL Java_io_github_applepaydecryption_Native_decryptorNew(JNIEnv *env, jclass cls, jlong config) {
    (void)cls;
    if (unbound(env)) return 0;
    ap_decryptor *decryptor = NULL;
    ap_error error = {0};
    check_config(env, p_ap_decryptor_new(handle_pointer(config), &decryptor, &error), &error);
    return handle_value(decryptor);
}

JNIEXPORT jint JNICALL Java_io_github_applepaydecryption_Native_decryptorFree(JNIEnv *env, jclass cls,
                                                                              jlong decryptor) {
    (void)cls;
    if (unbound(env)) return AP_INTERNAL_ERROR;
    return p_ap_decryptor_free(handle_pointer(decryptor));
}

/* --- Results ------------------------------------------------------------------------------- */

/* A piece of a blob: a little-endian int32 length (-1: absent) and the bytes. */
static size_t put_piece(uint8_t *at, const void *bytes, size_t length, int present) {
    int32_t n = present ? (int32_t)length : -1;
    for (int i = 0; i < 4; i++) at[i] = (uint8_t)((uint32_t)n >> (8 * i));
    if (present && length) memcpy(at + 4, bytes, length);
    return 4 + (present ? length : 0);
}

/* The result as one Java byte array: code, message, field, transactionId, the CLI's JSON, replay keys, then
 * the wallet (ap_result_wallet, a little-endian int32) (Result.fromBlob reads it). The JSON holds the card number: the native copies are wiped. Small results
 * (nearly all) are assembled on the stack: one ap_result_json call and one copy into Java. */
enum { STACK_JSON = 8192, STACK_BLOB = 12288 };

static jbyteArray blob_of(JNIEnv *env, const ap_result *result) {
    ap_code code = p_ap_result_code(result);
    int32_t wallet = p_ap_result_wallet(result);
    const char *message = p_ap_result_message(result), *field = p_ap_result_field(result),
               *transaction_id = p_ap_result_transaction_id(result);
    size_t message_length = message ? strlen(message) : 0, field_length = field ? strlen(field) : 0,
           transaction_id_length = transaction_id ? strlen(transaction_id) : 0;
    uint8_t keys[32];
    int has_keys = p_ap_result_replay_keys(result, keys, keys + 16) == AP_OK;
    uint8_t json_stack[STACK_JSON], *json = json_stack;
    size_t json_length = 0;
    ap_code json_code = p_ap_result_json(result, 0, json, sizeof json_stack, &json_length);
    if (json_code == AP_BUFFER_TOO_SMALL) {
        size_t needed = json_length;
        json = malloc(needed);
        json_code = json ? p_ap_result_json(result, 0, json, needed, &json_length) : AP_INTERNAL_ERROR;
    }
    int has_json = json_code == AP_OK;
    if (!has_json) json_length = 0;
    size_t total = 4 + 5 * 4 + message_length + field_length + transaction_id_length + json_length + 32 + 4;
    uint8_t blob_stack[STACK_BLOB], *blob = total <= sizeof blob_stack ? blob_stack : malloc(total);
    jbyteArray array = NULL;
    if (blob == NULL) {
        throw_code(env, AP_INTERNAL_ERROR, "out of memory");
    } else {
        size_t at = 0;
        for (int i = 0; i < 4; i++) blob[at++] = (uint8_t)((uint32_t)code >> (8 * i));
        at += put_piece(blob + at, message, message_length, message != NULL);
        at += put_piece(blob + at, field, field_length, field != NULL);
        at += put_piece(blob + at, transaction_id, transaction_id_length, transaction_id != NULL);
        at += put_piece(blob + at, json, json_length, has_json);
        at += put_piece(blob + at, keys, 32, has_keys);
        for (int i = 0; i < 4; i++) blob[at++] = (uint8_t)((uint32_t)wallet >> (8 * i));
        array = bytes_of(env, blob, at);
        wipe(blob, at);
        if (blob != blob_stack) free(blob);
    }
    wipe(json, json_length);
    if (json != json_stack) free(json);
    return array;
}

JNIEXPORT jbyteArray JNICALL Java_io_github_applepaydecryption_Native_decrypt(JNIEnv *env, jclass cls,
                                                                              jlong decryptor, jbyteArray token,
                                                                              jbyteArray request, jlong reference) {
    (void)cls;
    if (unbound(env)) return NULL;
    /* A token of up to 16 KiB (nearly all) is copied to the stack, a larger one to the heap. */
    uint8_t token_stack[16384], *token_bytes = token_stack;
    size_t token_length = token ? (size_t)(*env)->GetArrayLength(env, token) : 0;
    if (token_length > sizeof token_stack) token_bytes = malloc(token_length);
    size_t request_length;
    uint8_t *request_bytes = copy_in(env, request, &request_length);
    if (token_bytes == NULL || (*env)->ExceptionCheck(env)) {
        if (token_bytes != token_stack) free(token_bytes);
        free(request_bytes);
        if (!(*env)->ExceptionCheck(env)) throw_code(env, AP_INTERNAL_ERROR, "out of memory");
        return NULL;
    }
    if (token_length) (*env)->GetByteArrayRegion(env, token, 0, (jsize)token_length, (jbyte *)token_bytes);
    ap_result *result = NULL;
    ap_error error = {0};
    ap_code code;
    if (request != NULL) {
        code = p_ap_decrypt_expecting(handle_pointer(decryptor), token_bytes, token_length, request_bytes,
                                      request_length, (int64_t)reference, &result, &error);
    } else {
        code = p_ap_decrypt(handle_pointer(decryptor), token_bytes, token_length, (int64_t)reference, &result);
    }
    if (token_bytes != token_stack) free(token_bytes);
    free(request_bytes);
    if (result == NULL) {
        throw_code(env, code, code == AP_INVALID_PAYMENT_REQUEST ? error.message : NULL);
        return NULL;
    }
    jbyteArray blob = blob_of(env, result);
    p_ap_result_free(result);
    return blob;
}

JNIEXPORT jobjectArray JNICALL Java_io_github_applepaydecryption_Native_decryptBatch(JNIEnv *env, jclass cls,
                                                                                     jlong decryptor,
                                                                                     jobjectArray tokens,
                                                                                     jlong reference, jint lanes) {
    (void)cls;
    if (unbound(env)) return NULL;
    jsize count = tokens ? (*env)->GetArrayLength(env, tokens) : 0;
    if (count == 0) {
        throw_code(env, AP_INVALID_ARGUMENT, "an empty batch");
        return NULL;
    }
    /* One block for every token: the engine reads them on its lanes' threads while this thread waits. */
    size_t total = 0;
    for (jsize i = 0; i < count; i++) {
        jbyteArray token = (*env)->GetObjectArrayElement(env, tokens, i);
        if (token != NULL) total += (size_t)(*env)->GetArrayLength(env, token);
        (*env)->DeleteLocalRef(env, token);
    }
    uint8_t *block = malloc(total + 1);
    const uint8_t **pointers = calloc((size_t)count, sizeof *pointers);
    size_t *lengths = calloc((size_t)count, sizeof *lengths);
    ap_result **results = calloc((size_t)count, sizeof *results);
    jobjectArray blobs = NULL;
    if (block == NULL || pointers == NULL || lengths == NULL || results == NULL) {
        throw_code(env, AP_INTERNAL_ERROR, "out of memory");
        goto done;
    }
    size_t offset = 0;
    for (jsize i = 0; i < count; i++) {
        jbyteArray token = (*env)->GetObjectArrayElement(env, tokens, i);
        if (token != NULL) {
            jsize n = (*env)->GetArrayLength(env, token);
            if ((size_t)n > total - offset) {  /* another thread put a longer array in since the first pass */
                (*env)->DeleteLocalRef(env, token);
                throw_code(env, AP_INVALID_ARGUMENT, "the tokens array changed during the call");
                goto done;
            }
            (*env)->GetByteArrayRegion(env, token, 0, n, (jbyte *)(block + offset));
            pointers[i] = block + offset;
            lengths[i] = (size_t)n;
            offset += (size_t)n;
        }
        (*env)->DeleteLocalRef(env, token);
    }
    ap_code code = p_ap_decrypt_batch(handle_pointer(decryptor), pointers, lengths, (size_t)count,
                                      (int64_t)reference, (uint32_t)lanes, results);
    if (code != AP_OK) {
        throw_code(env, code, NULL);
        goto done;
    }
    jclass byte_array_class = (*env)->FindClass(env, "[B");
    if (byte_array_class == NULL) goto done;
    blobs = (*env)->NewObjectArray(env, count, byte_array_class, NULL);
    for (jsize i = 0; blobs != NULL && i < count; i++) {
        jbyteArray blob = blob_of(env, results[i]);
        if (blob == NULL) {
            blobs = NULL;
            break;
        }
        (*env)->SetObjectArrayElement(env, blobs, i, blob);
        (*env)->DeleteLocalRef(env, blob);
    }
done:
    if (results != NULL) p_ap_results_free(results, (size_t)count);
    free(block), free(pointers), free(lengths), free(results);
    return blobs;
}
