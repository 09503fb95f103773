// The wallet a token was read as (ap_result_wallet), by its shape.
package io.github.applepaydecryption;

/** Which wallet a result's token was read as ({@link Result#wallet()}), and the field its replays name. */
public enum Wallet {
    /** No token was read (misuse: an empty token, one over 1 MiB, a null batch item). */
    NONE(0, null),
    /** An Apple Pay token or envelope (also anything no wallet reads); replays name header.transactionId. */
    APPLE_PAY(1, "header.transactionId"),
    /** A Google Pay token; replays name messageId. */
    GOOGLE_PAY(2, "messageId"),
    /** A Samsung Pay token (a compact JWE, bare or in an envelope); replays name cryptogram. */
    SAMSUNG_PAY(3, "cryptogram");

    private final int value;
    private final String replayField;

    Wallet(int value, String replayField) {
        this.value = value;
        this.replayField = replayField;
    }

    /** The field a replay of this wallet's token names (null for NONE). */
    public String replayField() {
        return replayField;
    }

    /** AP_WALLET_*: the C ABI's number. */
    public int value() {
        return value;
    }

    static Wallet of(int value) {
        for (Wallet w : values()) {
            if (w.value == value) return w;
        }
        return NONE;
    }
}
