// One token's outcome as an immutable value: copied out of the library's result, which is freed at once.
package io.github.applepaydecryption;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Optional;

/**
 * The outcome of one token: {@link #code()} ("ok" or the stable error code), {@link #json()} (exactly what
 * {@code applepay-decrypt decrypt} prints for the token: the payment object, or the error object with its
 * message, field and OpenSSL's reason) and, for "ok", the typed {@link #payment()}. Immutable and safe to share
 * between threads; {@link #toString()} masks the card number.
 */
public final class Result {
    private final int numericCode;
    private final String message;
    private final String field;
    private final String transactionId;
    private final String json;
    private final byte[] replayKeys;
    private final Wallet wallet;
    private volatile Payment payment;

    private Result(int numericCode, String message, String field, String transactionId, String json,
                   byte[] replayKeys, Wallet wallet) {
        this.numericCode = numericCode;
        this.message = message;
        this.field = field;
        this.transactionId = transactionId;
        this.json = json;
        this.replayKeys = replayKeys;
        this.wallet = wallet;
    }

    /**
     * Reads the JNI shim's blob: code, then message, field, transactionId, JSON and replay keys, each a length and
     * bytes, then the wallet.
     */
    static Result fromBlob(byte[] blob) {
        ByteBuffer in = ByteBuffer.wrap(blob).order(ByteOrder.LITTLE_ENDIAN);
        int code = in.getInt();
        String message = text(in), field = text(in), transactionId = text(in);
        String json = text(in);
        byte[] keys = piece(in);
        Wallet wallet = Wallet.of(in.getInt());
        if (json == null) {
            // No engine result behind it (a batch item that was null, empty or over 1 MiB): the same error shape.
            StringBuilder out = new StringBuilder("{\"error\":");
            Json.writeString(Codes.name(code), out);
            out.append(",\"message\":");
            Json.writeString(message == null ? "" : message, out);
            out.append(",\"field\":null}");
            json = out.toString();
        }
        return new Result(code, message == null ? "" : message, field, transactionId, json, keys, wallet);
    }

    private static byte[] piece(ByteBuffer in) {
        int length = in.getInt();
        if (length < 0) return null;
        byte[] bytes = new byte[length];
        in.get(bytes);
        return bytes;
    }

    private static String text(ByteBuffer in) {
        int length = in.getInt();
        if (length < 0) return null;
        String value = new String(in.array(), in.position(), length, StandardCharsets.UTF_8);
        in.position(in.position() + length);
        return value;
    }

    /** "ok" or the stable error code, e.g. "replayedTransaction" (see {@link Codes}). */
    public String code() {
        return Codes.name(numericCode);
    }

    /** The C ABI's number for {@link #code()}: 0 for ok, 1-12 for the token codes. */
    public int numericCode() {
        return numericCode;
    }

    /** Whether the token verified and decrypted. */
    public boolean isOk() {
        return numericCode == Codes.OK;
    }

    /** Why it was rejected, for people and logs ("" for ok); never card data. */
    public String message() {
        return message;
    }

    /** The JSON path of the offending token field, or the payment request member; null when none. */
    public String field() {
        return field;
    }

    /** The token's transactionId (hex; a Google Pay messageId) where known, else null. */
    public String transactionId() {
        return transactionId;
    }

    /**
     * Exactly the JSON {@code applepay-decrypt decrypt} prints for this token (without the newline): the payment
     * object, card number in clear, or {@code {"error":CODE,"message":...,"field":...[,"reason":...]}}.
     */
    public String json() {
        return json;
    }

    /**
     * The wallet the token was read as, by its shape, whether it verified or not (its replay names that wallet's
     * field); {@link Wallet#NONE} for misuse, where no token was read.
     */
    public Wallet wallet() {
        return wallet;
    }

    /** The typed payment of an ok result (Apple Pay, Google Pay or Samsung Pay); empty otherwise. */
    public Optional<Payment> payment() {
        if (!isOk()) return Optional.empty();
        Payment p = payment;
        if (p == null) payment = p = Payment.of(json);
        return Optional.of(p);
    }

    /**
     * The token's replay identity (transaction key then content key, 16 bytes each) when it verified and decrypted,
     * a batch replay included; empty otherwise. A caller deduplicating across calls claims both keys per token.
     */
    public Optional<byte[]> replayKeys() {
        return replayKeys == null ? Optional.empty() : Optional.of(replayKeys.clone());
    }

    @Override
    public String toString() {
        StringBuilder out = new StringBuilder("Result[code=").append(code());
        if (transactionId != null) out.append(", transactionId=").append(transactionId);
        if (isOk()) {
            out.append(", payment=").append(payment().map(Payment::toString).orElse("?"));
        } else {
            out.append(", message=").append(message);
            if (field != null) out.append(", field=").append(field);
        }
        return out.append(']').toString();
    }

    @Override
    public boolean equals(Object other) {
        if (!(other instanceof Result)) return false;
        Result that = (Result) other;
        return numericCode == that.numericCode && json.equals(that.json)
            && java.util.Objects.equals(transactionId, that.transactionId)
            && Arrays.equals(replayKeys, that.replayKeys);
    }

    @Override
    public int hashCode() {
        return 31 * numericCode + json.hashCode();
    }
}
