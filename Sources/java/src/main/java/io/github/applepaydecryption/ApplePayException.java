// The one exception of the binding: a stable code (the C ABI's names) and, where there is one, the field.
package io.github.applepaydecryption;

import java.nio.charset.StandardCharsets;

/**
 * What the binding throws: a configuration the engine refuses ({@code invalidConfiguration}), misuse of
 * the API ({@code invalidArgument}, {@code invalidHandle} for a closed {@link Decryptor}), a payment
 * request that breaks the schema ({@code invalidPaymentRequest}, the member in {@link #field()}), or a
 * native library that cannot be loaded ({@code libraryUnavailable}). A rejected token never throws: its
 * {@link Result} carries the code.
 */
public final class ApplePayException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final String code;
    private final int numericCode;
    private final String field;

    /** An exception with the C ABI's code (e.g. 102) and name, a message and the field or member at fault. */
    public ApplePayException(int numericCode, String message, String field) {
        super(Codes.name(numericCode) + (message == null || message.isEmpty() ? "" : ": " + message));
        this.numericCode = numericCode;
        this.code = Codes.name(numericCode);
        this.field = field;
    }

    /** The stable code, e.g. {@code "invalidConfiguration"} or {@code "invalidHandle"}. */
    public String code() {
        return code;
    }

    /** The C ABI's number for {@link #code()} (100 and above for misuse; see {@code applepay.h}). */
    public int numericCode() {
        return numericCode;
    }

    /** The payment request member ({@code "total.amount"}) or field at fault, or null. */
    public String field() {
        return field;
    }

    /** Made by the JNI shim: the message arrives as UTF-8 bytes (a payment request error is "member: reason"). */
    static ApplePayException fromNative(int code, byte[] message) {
        String text = message == null ? null : new String(message, StandardCharsets.UTF_8);
        String field = null;
        if (code == Codes.INVALID_PAYMENT_REQUEST && text != null && text.indexOf(": ") > 0) {
            field = text.substring(0, text.indexOf(": "));
        }
        return new ApplePayException(code, text, field);
    }
}
