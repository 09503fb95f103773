// The JNI shim's entry points (src/main/c/applepay_jni.c): thin calls into libapplepay's C ABI.
package io.github.applepaydecryption;

/** Native methods; every caller goes through {@link NativeLoader#ensureLoaded()} first. */
final class Native {
    private Native() {}

    /** The AP_ABI_VERSION these classes were built for: the shim and libapplepay must both say this. */
    static final int ABI_VERSION = 6;

    // ap_config settings, the `what` of configSet (the same numbers as the shim's enum).
    static final int SET_MERCHANT_SPEC = 1;
    static final int SET_GOOGLE_KEY_SPEC = 2;
    static final int SET_GOOGLE_RECIPIENT = 3;
    static final int SET_GOOGLE_ROOT_KEYS = 4;
    static final int SET_TEST_ROOT = 5;
    static final int SET_MERCHANT_CERTIFICATE = 6;
    static final int SET_MERCHANT_IDENTIFIER = 7;
    static final int SET_MERCHANT_PKCS12 = 8;
    static final int SET_MERCHANT_PKCS11 = 9;
    static final int SET_GOOGLE_KEY = 10;
    static final int SET_GOOGLE_PKCS11 = 11;
    static final int SET_WINDOW = 12;
    static final int SET_MULTIBUFFER = 13;
    static final int SET_REFERENCE_UNIT = 14;
    static final int SET_SAMSUNG_KEY_SPEC = 15;
    static final int SET_GOOGLE_PROTOCOL_VERSION = 16;

    /** AP_REFERENCE_NOW and AP_REFERENCE_SIGNING_TIME. */
    static final long REFERENCE_NOW = Long.MIN_VALUE;
    static final long REFERENCE_SIGNING_TIME = Long.MIN_VALUE + 1;
    static final int REFERENCE_MILLISECONDS = 1;

    /** The AP_ABI_VERSION of the header the shim was compiled against. */
    static native int compiledAbiVersion();

    /** dlopens the library at path (NUL-terminated UTF-8); returns its ap_version, binding it only when it is ours. */
    static native int bind(byte[] path);

    static native long configNew();

    static native int configFree(long config);

    /** One ap_config_* call (see the SET_ constants); a refusal throws ApplePayException. */
    static native void configSet(long config, int what, byte[] a, byte[] b, byte[] c, byte[] d, long number);

    static native long decryptorNew(long config);

    static native int decryptorFree(long decryptor);

    /** ap_decrypt (request null) or ap_decrypt_expecting: the result's blob (Result.fromBlob). */
    static native byte[] decrypt(long decryptor, byte[] token, byte[] request, long reference);

    /** ap_decrypt_batch: one blob per token, in input order. */
    static native byte[][] decryptBatch(long decryptor, byte[][] tokens, long reference, int lanes);
}
