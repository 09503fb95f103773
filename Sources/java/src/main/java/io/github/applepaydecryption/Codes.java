// The C ABI's codes (applepay.h) and their stable names: the token codes 1-12 and the misuse codes 100+.
package io.github.applepaydecryption;

/** The stable codes: {@link Result#code()} and {@link ApplePayException#code()} give their names. */
public final class Codes {
    private Codes() {}

    public static final int OK = 0;
    public static final int MALFORMED_TOKEN = 1;
    public static final int UNSUPPORTED_VERSION = 2;
    public static final int INVALID_SIGNATURE = 3;
    public static final int UNTRUSTED_CERTIFICATE_CHAIN = 4;
    public static final int SIGNING_TIME_OUT_OF_RANGE = 5;
    public static final int UNKNOWN_MERCHANT_KEY = 6;
    public static final int DECRYPTION_FAILED = 7;
    public static final int INVALID_PAYLOAD = 8;
    public static final int REPLAYED_TRANSACTION = 9;
    public static final int PAYMENT_REQUEST_MISMATCH = 10;
    public static final int INTERMEDIATE_KEY_EXPIRED = 11;
    public static final int MESSAGE_EXPIRED = 12;
    public static final int INVALID_ARGUMENT = 100;
    public static final int INVALID_HANDLE = 101;
    public static final int INVALID_CONFIGURATION = 102;
    public static final int INTERNAL_ERROR = 103;
    public static final int INVALID_PAYMENT_REQUEST = 104;
    /** Not a C ABI code: the native library could not be found, loaded or was of another ABI version. */
    public static final int LIBRARY_UNAVAILABLE = 199;

    private static final String[] TOKEN_NAMES = {
        "ok", "malformedToken", "unsupportedVersion", "invalidSignature", "untrustedCertificateChain",
        "signingTimeOutOfRange", "unknownMerchantKey", "decryptionFailed", "invalidPayload", "replayedTransaction",
        "paymentRequestMismatch", "intermediateKeyExpired", "messageExpired"
    };
    private static final String[] MISUSE_NAMES = {
        "invalidArgument", "invalidHandle", "invalidConfiguration", "internalError", "invalidPaymentRequest",
        "bufferTooSmall", "noReplayKeys"
    };

    /** The name of a code, as the C ABI's ap_code_name gives it ("unknown" for none). */
    public static String name(int code) {
        if (code >= 0 && code < TOKEN_NAMES.length) return TOKEN_NAMES[code];
        if (code >= 100 && code < 100 + MISUSE_NAMES.length) return MISUSE_NAMES[code - 100];
        if (code == LIBRARY_UNAVAILABLE) return "libraryUnavailable";
        return "unknown";
    }

    /** Every token code's name, 0 to 12, in order. */
    public static String[] tokenCodeNames() {
        return TOKEN_NAMES.clone();
    }
}
